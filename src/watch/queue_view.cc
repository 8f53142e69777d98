#include "watch/queue_view.h"

#include "core/text.h"
#include "queue/client.h"
#include "queue/protocol.h"

namespace gw::watch {
namespace {

using nlohmann::json;

std::string TextField(const json& j, const char* key) {
  if (!j.contains(key)) return "";
  auto bytes = queue::BytesFromJson(j[key], key);
  return bytes.ok() ? SanitizeForTerminal(*bytes) : std::string("?");
}

// A string member, sanitised; `fallback` when absent or not a string (the
// reply is checked, not trusted: json::value would throw on a wrong type).
std::string StringField(const json& j, const char* key, const char* fallback) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_string()) return fallback;
  return SanitizeForTerminal(it->get<std::string>());
}

std::optional<int64_t> IntField(const json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_number_integer()) return std::nullopt;
  return it->get<int64_t>();
}

}  // namespace

QueueView ParseQueueReply(const json& reply) {
  QueueView view;
  if (!reply.is_object()) {
    view.state = QueueView::State::kError;
    view.message = "gpuwardend sent something that is not a JSON object";
    return view;
  }
  if (auto ok = reply.find("ok"); ok == reply.end() || *ok != true) {
    view.state = QueueView::State::kError;
    auto e = reply.find("error");
    view.message =
        e != reply.end() && e->is_object() ? StringField(*e, "message", "refused") : "refused";
    return view;
  }
  view.state = QueueView::State::kOk;
  view.now_unix_ms = IntField(reply, "now_unix_ms").value_or(0);
  if (auto d = reply.find("degraded"); d != reply.end() && d->is_array()) {
    for (const json& e : *d) {
      if (!e.is_object()) continue;
      const std::string what = StringField(e, "what", "?");
      const std::string detail = StringField(e, "detail", "");
      view.degraded.push_back(detail.empty() ? what : what + ": " + detail);
    }
  }
  auto jobs = reply.find("jobs");
  if (jobs == reply.end() || !jobs->is_array()) return view;
  for (const json& j : *jobs) {
    if (!j.is_object()) continue;
    QueueJob job;
    job.id = IntField(j, "id").value_or(0);
    job.user = StringField(j, "user", "?");
    job.name = TextField(j, "name");
    job.state = StringField(j, "state", "?");
    job.gpus = static_cast<unsigned>(IntField(j, "gpus").value_or(0));
    job.vram_bytes =
        static_cast<uint64_t>(std::max<int64_t>(0, IntField(j, "vram_bytes").value_or(0)));
    if (auto p = IntField(j, "position")) job.position = static_cast<int>(*p);
    if (j.contains("gpu_indices") && j["gpu_indices"].is_array()) {
      for (const json& g : j["gpu_indices"]) {
        if (g.is_number_unsigned()) job.gpu_indices.push_back(g.get<unsigned>());
      }
    }
    if (j.contains("wait_reason") && j["wait_reason"].is_object()) {
      const json& w = j["wait_reason"];
      job.wait_code = StringField(w, "code", "");
      job.wait_message = StringField(w, "message", "");
    }
    job.since_unix_ms =
        job.state == "running" ? IntField(j, "start_unix_ms") : IntField(j, "submit_unix_ms");
    job.estimated_start_unix_ms = IntField(j, "estimated_start_unix_ms");
    view.jobs.push_back(std::move(job));
  }
  return view;
}

QueueView FetchQueue(const std::string& socket_path, int64_t timeout_ms) {
  QueueView view;
  auto client = queue::Client::Connect(socket_path, timeout_ms);
  if (!client.ok()) {
    view.state = QueueView::State::kNoDaemon;
    view.message = "no gpuwardend";
    return view;
  }
  auto reply = client->Call({{"op", "queue"}});
  if (!reply.ok()) {
    // Busy or stuck, or it refused: the panel says so.
    view.state = QueueView::State::kError;
    view.message = reply.error().code == queue::kClientNoReply
                       ? "gpuwardend did not answer in time"
                       : SanitizeForTerminal(reply.error().message);
    return view;
  }
  return ParseQueueReply(*reply);
}

}  // namespace gw::watch
