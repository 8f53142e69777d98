#include "queue/ops.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <optional>

#include <fmt/format.h>

#include "core/text.h"
#include "os/unique_fd.h"
#include "queue/protocol.h"

namespace gw::queue {
namespace {

using nlohmann::json;

constexpr size_t kLogChunk = 256 << 10;

json Refusal(const Error& e) { return ErrorReply(e.code, e.message); }

// The request's job id; nullopt when missing or not positive.
std::optional<JobId> JobIdOf(const json& req) {
  if (!req.contains("job") || !req["job"].is_number_integer() || req["job"].get<int64_t>() <= 0) {
    return std::nullopt;
  }
  return req["job"].get<int64_t>();
}

}  // namespace

json DegradedToJson(const std::vector<Degraded>& degraded) {
  json out = json::array();
  for (const Degraded& d : degraded) {
    out.push_back(
        {{"what", d.what}, {"detail", ToValidUtf8(d.detail)}, {"since_unix_ms", d.since_unix_ms}});
  }
  return out;
}

json RequestHandler::Handle(const Caller& caller, std::string_view line) {
  json req = json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (req.is_discarded()) return ErrorReply("bad_request", "not a JSON object");
  try {
    return Dispatch(caller, req);
  } catch (const std::exception& e) {
    // A request never takes the daemon down; the store is unchanged by a
    // failed op (each op writes last).
    return ErrorReply("bad_request", std::string("malformed request: ") + e.what());
  }
}

json RequestHandler::Dispatch(const Caller& c, const json& req) {
  if (!req.is_object() || !req.contains("op") || !req["op"].is_string()) {
    return ErrorReply("bad_request", "expected {\"v\": 1, \"op\": ...}");
  }
  if (req.contains("v") && req["v"] != kProtocolVersion) {
    return ErrorReply("version", fmt::format("protocol version {} is not supported "
                                             "(this daemon speaks {})",
                                             req["v"].dump(), kProtocolVersion));
  }
  const std::string op = req["op"].get<std::string>();
  if (op == "hello") {
    json r = OkReply();
    r["mode"] = o_.system_mode ? "system" : "personal";
    r["daemon_uid"] = o_.daemon_uid;
    r["caller_uid"] = c.uid;
    r["caller_user"] = c.user;
    return r;
  }
  if (auto extra = extra_.find(op); extra != extra_.end()) return extra->second(c, req);
  if (table_ == nullptr) {
    if (op == "submit" || op == "jobs" || op == "job" || op == "queue" || op == "cancel" ||
        op == "hold" || op == "release" || op == "logs") {
      return ErrorReply("no_queue", "this gpuwardend runs without its queue (--no-queue)");
    }
    return ErrorReply("bad_request", "unknown op \"" + SanitizeForTerminal(op) + "\"");
  }
  if (op == "submit") return Submit(c, req);
  if (op == "jobs" || op == "job" || op == "queue") {
    // Positions and reasons as of every request before this one.
    table_->RunPendingPass();
    if (op == "jobs") return Jobs(c, req);
    if (op == "job") return OneJob(c, req);
    return Queue();
  }
  if (op == "cancel" || op == "hold" || op == "release") return Control(c, req, op);
  if (op == "logs") return Logs(c, req);
  return ErrorReply("bad_request", "unknown op \"" + SanitizeForTerminal(op) + "\"");
}

json RequestHandler::Submit(const Caller& c, const json& req) {
  if (!req.contains("spec")) return ErrorReply("bad_request", "spec: missing");
  Result<JobSpec> spec = SpecFromJson(req["spec"]);
  if (!spec.ok()) return Refusal(spec.error());
  if (spec->priority > 0 && c.uid != 0) {
    return ErrorReply("forbidden", "only root may submit with a priority above 0");
  }
  Job job;
  job.owner = {c.uid, c.gid, c.user};
  job.spec = std::move(*spec);
  if (job.spec.name.empty()) {
    const std::string& a0 = job.spec.argv[0];
    job.spec.name = a0.substr(a0.rfind('/') == std::string::npos ? 0 : a0.rfind('/') + 1);
  }
  job.state = JobState::kQueued;
  job.submit_unix_ms = clock_.NowUnixMs();
  Result<JobId> id = table_->Submit(std::move(job));
  if (!id.ok()) return Refusal(id.error());
  json r = OkReply();
  r["job"] = *id;
  return r;
}

json RequestHandler::Jobs(const Caller& c, const json& req) {
  JobFilter filter;
  if (req.contains("limit") && req["limit"].is_number_unsigned()) {
    filter.limit = req["limit"].get<size_t>();
    filter.newest_first = true;
  }
  if (req.contains("mine") && req["mine"] == true) filter.uid = c.uid;
  Result<std::vector<Job>> jobs = table_->List(filter);
  if (!jobs.ok()) return ErrorReply("store", jobs.error().message);
  json list = json::array();
  for (const Job& j : *jobs) list.push_back(JobToJson(j, /*with_private=*/false));
  json r = OkReply();
  r["jobs"] = std::move(list);
  return r;
}

json RequestHandler::OneJob(const Caller& c, const json& req) {
  std::optional<JobId> id = JobIdOf(req);
  if (!id) return ErrorReply("bad_request", "job: expected a job id");
  Result<std::optional<Job>> job = table_->Find(*id);
  if (!job.ok()) return ErrorReply("store", job.error().message);
  if (!*job) return ErrorReply("not_found", fmt::format("no job {}", *id));
  json r = OkReply();
  r["job"] = JobToJson(**job, c.uid == 0 || c.uid == (*job)->owner.uid);
  AddWaitInfo(r["job"], *id);
  return r;
}

void RequestHandler::AddWaitInfo(json& j, JobId id) const {
  if (const WaitReason* w = FindWaiting(table_->last_decisions(), id)) {
    j["wait_reason"] = {{"code", w->code}, {"message", ToValidUtf8(w->message)}};
    j["estimated_start_unix_ms"] =
        w->estimated_start_unix_ms ? json(*w->estimated_start_unix_ms) : json(nullptr);
  }
  if (std::optional<size_t> pos = table_->Position(id)) j["position"] = *pos;
}

json RequestHandler::Queue() {
  std::vector<const Job*> shown;
  for (const auto& [id, job] : table_->active()) shown.push_back(&job);
  // Running first, then waiting in scheduling order.
  auto rank = [this](JobId id) { return table_->Position(id).value_or(SIZE_MAX); };
  std::sort(shown.begin(), shown.end(), [&](const Job* a, const Job* b) {
    const bool ra = a->state == JobState::kRunning || a->state == JobState::kStarting;
    const bool rb = b->state == JobState::kRunning || b->state == JobState::kStarting;
    if (ra != rb) return ra;
    const size_t ka = rank(a->id);
    const size_t kb = rank(b->id);
    return ka != kb ? ka < kb : a->id < b->id;
  });
  json list = json::array();
  for (const Job* job : shown) {
    json j = JobToJson(*job, /*with_private=*/false);
    AddWaitInfo(j, job->id);
    list.push_back(std::move(j));
  }
  json r = OkReply();
  r["jobs"] = std::move(list);
  r["now_unix_ms"] = clock_.NowUnixMs();
  r["degraded"] = DegradedToJson(table_->degraded());
  return r;
}

json RequestHandler::Control(const Caller& c, const json& req, const std::string& op) {
  std::optional<JobId> id = JobIdOf(req);
  if (!id) return ErrorReply("bad_request", "job: expected a job id");
  Result<JobState> after = table_->Control(*id, op, c.uid, c.user);
  if (!after.ok()) return Refusal(after.error());
  json r = OkReply();
  r["job"] = *id;
  r["state"] = JobStateName(*after);
  // A cancelled job that was running is being stopped: say how long it has.
  if (op == "cancel" && (*after == JobState::kRunning || *after == JobState::kStarting)) {
    r["grace_s"] = table_->options().grace_s;
  }
  return r;
}

json RequestHandler::Logs(const Caller& c, const json& req) {
  std::optional<JobId> id = JobIdOf(req);
  if (!id) return ErrorReply("bad_request", "job: expected a job id");
  Result<std::optional<Job>> found = table_->Find(*id);
  if (!found.ok()) return ErrorReply("store", found.error().message);
  if (!*found) return ErrorReply("not_found", fmt::format("no job {}", *id));
  const Job& job = **found;
  if (c.uid != 0 && c.uid != job.owner.uid) {
    return ErrorReply("forbidden", fmt::format("job {} belongs to {}; only its owner or root "
                                               "can do that",
                                               *id, job.owner.user));
  }
  const std::string stream = req.value("stream", "stdout");
  if (stream != "stdout" && stream != "stderr") {
    return ErrorReply("bad_request", "stream: stdout or stderr");
  }
  uint64_t offset = 0;
  if (req.contains("offset")) {
    if (!req["offset"].is_number_unsigned()) {
      return ErrorReply("bad_request", "offset: expected a non-negative integer");
    }
    offset = req["offset"].get<uint64_t>();
  }
  const std::string path = stream == "stdout" ? job.stdout_path : job.stderr_path;
  std::string data;
  if (!path.empty()) {
    os::UniqueFd fd(open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK));
    if (fd.valid()) {
      data.resize(kLogChunk);
      const ssize_t n = pread(fd.get(), data.data(), data.size(), static_cast<off_t>(offset));
      data.resize(n > 0 ? static_cast<size_t>(n) : 0);
    }
  }
  json r = OkReply();
  r["data"] = Base64Encode(data);
  r["offset"] = offset + data.size();
  r["state"] = JobStateName(job.state);
  r["exit_code"] = job.exit_code ? json(*job.exit_code) : json(nullptr);
  r["exit_signal"] = job.exit_signal ? json(*job.exit_signal) : json(nullptr);
  return r;
}

}  // namespace gw::queue
