#include "cli/queue_command.h"

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <thread>

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "cli/exit_codes.h"
#include "cli/terminal.h"
#include "core/json_out.h"
#include "core/text.h"
#include "core/units.h"
#include "queue/protocol.h"

extern char** environ;

namespace gw::cli {
namespace {

using nlohmann::json;

std::atomic<bool> g_interrupted{false};

void OnInterrupt(int) { g_interrupted = true; }

int Fail(int code, const std::string& message) {
  std::fprintf(stderr, "gpuwarden: %s\n", message.c_str());
  return code;
}

// One connection, one request at a time.
class Connection {
 public:
  static Result<Connection> Open(const std::string& flag) {
    auto fd = queue::ConnectToDaemon(queue::ResolveSocketPath(flag));
    if (!fd.ok()) return fd.error();
    return Connection(*fd);
  }
  Connection(Connection&& other) noexcept : fd_(other.fd_), buffer_(std::move(other.buffer_)) {
    other.fd_ = -1;
  }
  ~Connection() {
    if (fd_ >= 0) close(fd_);
  }
  // Sends `request` (v and op filled in) and returns the reply; an error
  // reply becomes an Error with the daemon's code and message.
  Result<json> Call(json request) {
    request["v"] = queue::kProtocolVersion;
    Status sent =
        queue::WriteLine(fd_, request.dump(-1, ' ', false, json::error_handler_t::replace));
    // A daemon that refuses the connection (`busy`) writes why and closes:
    // the reply may be waiting even when the request could not be sent.
    auto line = queue::ReadLine(fd_, buffer_);
    if (!line.ok()) {
      const std::string why = sent.ok() ? line.error().message : sent.error().message;
      return MakeError("no_daemon", "lost the connection to gpuwardend: " + why);
    }
    json reply;
    try {
      reply = json::parse(*line);
    } catch (const std::exception&) {
      return MakeError("protocol", "gpuwardend sent something that is not JSON");
    }
    if (!reply.is_object() || !reply.contains("ok")) {
      return MakeError("protocol", "gpuwardend sent a reply without \"ok\"");
    }
    if (reply["ok"] != true) {
      const json& e = reply.value("error", json::object());
      return MakeError(e.value("code", "error"), e.value("message", "refused"));
    }
    return reply;
  }

 private:
  explicit Connection(int fd) : fd_(fd) {}
  int fd_ = -1;
  std::string buffer_;
};

int ErrorExit(const Error& e) {
  std::fprintf(stderr, "gpuwarden: %s\n", SanitizeForTerminal(e.message).c_str());
  if (e.code == "no_daemon" || e.code == "protocol") return kExitNoDaemon;
  if (e.code == "bad_request") return kExitUsage;
  return kExitRefusedByDaemon;
}

std::string Text(const json& v) {
  auto b = queue::BytesFromJson(v, "text");
  return SanitizeForTerminal(b.ok() ? *b : std::string("?"));
}

std::string WhenText(const json& ms, int64_t now_ms) {
  if (!ms.is_number_integer()) return "-";
  const double s = static_cast<double>(ms.get<int64_t>() - now_ms) / 1000.0;
  return s <= 0 ? "now" : "in " + FormatDuration(s);
}

}  // namespace

int RunSubmit(const RunArgs& args) {
  if (args.command.empty()) return Fail(kExitUsage, "run: give the command after --");
  if (args.wait && args.detach) return Fail(kExitUsage, "--wait and --detach exclude each other");
  queue::JobSpec spec;
  spec.argv = args.command;
  spec.name = args.name;
  char cwd[4096];
  if (getcwd(cwd, sizeof cwd) == nullptr)
    return Fail(kExitUsage, "cannot read the working directory");
  spec.cwd = cwd;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) spec.env.emplace_back(*e);
  const mode_t mask = umask(0);
  umask(mask);
  spec.umask = mask;
  spec.gpus = args.gpus;
  if (!args.vram.empty()) {
    auto bytes = ParseSize(args.vram);
    if (!bytes.ok()) return Fail(kExitUsage, "--vram: " + bytes.error().message);
    spec.vram_bytes = *bytes;
  }
  if (args.max_util >= 0) {
    if (args.max_util > 100) return Fail(kExitUsage, "--max-util: a percentage, 0 to 100");
    spec.max_util_pct = static_cast<unsigned>(args.max_util);
  }
  spec.priority = args.priority;
  if (!args.window.empty()) {
    std::string err;
    auto w = queue::ParseTimeWindow(args.window, &err);
    if (!w) return Fail(kExitUsage, "--window: " + err);
    spec.window = *w;
  }
  for (size_t start = 0; start < args.after.size();) {
    size_t end = args.after.find(',', start);
    if (end == std::string::npos) end = args.after.size();
    const std::string id = args.after.substr(start, end - start);
    if (id.empty() || id.size() > 18 || id.find_first_not_of("0123456789") != std::string::npos ||
        std::stoll(id) <= 0) {
      return Fail(kExitUsage, "--after: \"" + SanitizeForTerminal(id) + "\" is not a job id");
    }
    spec.after.push_back(std::stoll(id));
    start = end + 1;
  }
  spec.nvlink = args.nvlink;
  if (!args.time_limit.empty()) {
    auto s = ParseDuration(args.time_limit);
    if (!s.ok() || *s < 1) {
      return Fail(kExitUsage,
                  "--time-limit: " + (s.ok() ? std::string("at least 1s") : s.error().message));
    }
    spec.time_limit_s = static_cast<int64_t>(*s);
  }
  spec.preemptible = args.preemptible;

  auto conn = Connection::Open(args.socket);
  if (!conn.ok()) return ErrorExit(conn.error());
  auto reply = conn->Call({{"op", "submit"}, {"spec", queue::SpecToJson(spec)}});
  if (!reply.ok()) return ErrorExit(reply.error());
  const int64_t id = (*reply)["job"].get<int64_t>();
  const bool wait = args.wait || (!args.detach && isatty(STDOUT_FILENO) && isatty(STDIN_FILENO));
  if (!wait) {
    std::printf("%lld\n", static_cast<long long>(id));
    return kExitOk;
  }
  std::fprintf(stderr, "gpuwarden: job %lld submitted\n", static_cast<long long>(id));
  struct sigaction sa {};
  sa.sa_handler = OnInterrupt;
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  uint64_t offsets[2] = {0, 0};
  std::string last_reason;
  std::string last_state;
  bool cancel_sent = false;
  for (;;) {
    if (g_interrupted && !cancel_sent) {
      cancel_sent = true;
      std::fprintf(stderr, "\ngpuwarden: cancelling job %lld\n", static_cast<long long>(id));
      (void)conn->Call({{"op", "cancel"}, {"job", id}});
    }
    auto job = conn->Call({{"op", "job"}, {"job", id}});
    if (!job.ok()) return ErrorExit(job.error());
    const json& j = (*job)["job"];
    const std::string state = j.value("state", "?");
    if (j.contains("wait_reason")) {
      const std::string reason = j["wait_reason"].value("message", "");
      if (reason != last_reason) {
        std::fprintf(stderr, "gpuwarden: job %lld waits: %s\n", static_cast<long long>(id),
                     SanitizeForTerminal(reason).c_str());
        last_reason = reason;
      }
    }
    if (state != last_state && state == "running") {
      std::fprintf(stderr, "gpuwarden: job %lld runs on GPU %s\n", static_cast<long long>(id),
                   j["gpu_indices"].dump().c_str());
    }
    last_state = state;
    bool more = false;
    for (int s = 0; s < 2; ++s) {
      if (state == "queued" || state == "held") break;
      auto chunk = conn->Call({{"op", "logs"},
                               {"job", id},
                               {"stream", s == 0 ? "stdout" : "stderr"},
                               {"offset", offsets[s]}});
      if (!chunk.ok()) break;
      auto data = queue::Base64Decode((*chunk)["data"].get<std::string>());
      if (data && !data->empty()) {
        std::fwrite(data->data(), 1, data->size(), s == 0 ? stdout : stderr);
        std::fflush(s == 0 ? stdout : stderr);
        offsets[s] = (*chunk)["offset"].get<uint64_t>();
        more = true;
      }
    }
    if (!more &&
        (state == "succeeded" || state == "failed" || state == "cancelled" || state == "lost")) {
      if (state == "succeeded") return 0;
      if (j["exit_code"].is_number_integer()) {
        const int code = j["exit_code"].get<int>();
        if (code != 0) return code;
      }
      if (j["exit_signal"].is_number_integer()) return 128 + j["exit_signal"].get<int>();
      std::fprintf(stderr, "gpuwarden: job %lld %s (%s)\n", static_cast<long long>(id),
                   state.c_str(), SanitizeForTerminal(j.value("end_detail", "")).c_str());
      return 1;
    }
    if (!more) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

int RunQueue(const QueueArgs& args) {
  auto conn = Connection::Open(args.socket);
  if (!conn.ok()) return ErrorExit(conn.error());
  auto reply = conn->Call({{"op", "queue"}});
  if (!reply.ok()) return ErrorExit(reply.error());
  if (args.json) {
    std::puts(DumpJsonForTerminal(*reply, true, "gpuwarden.queue").c_str());
    return kExitOk;
  }
  const json& jobs = (*reply)["jobs"];
  const int64_t now = (*reply).value("now_unix_ms", int64_t{0});
  if (jobs.empty()) {
    std::puts("The queue is empty.");
    return kExitOk;
  }
  std::printf("%-6s %-4s %-10s %-9s %-5s %-9s %-10s %-10s %s\n", "JOB", "POS", "USER", "STATE",
              "GPUS", "VRAM", "WAITED", "START", "NAME");
  for (const json& j : jobs) {
    const std::string state = j.value("state", "?");
    const int64_t since = state == "running" && j["start_unix_ms"].is_number_integer()
                              ? j["start_unix_ms"].get<int64_t>()
                              : j.value("submit_unix_ms", now);
    const uint64_t vram = j.value("vram_bytes", uint64_t{0});
    std::printf("%-6lld %-4s %-10s %-9s %-5u %-9s %-10s %-10s %s\n",
                static_cast<long long>(j.value("id", int64_t{0})),
                j.contains("position") ? std::to_string(j["position"].get<int>()).c_str() : "-",
                TruncateToWidth(SanitizeForTerminal(j.value("user", "?")), 10).c_str(),
                state.c_str(), j.value("gpus", 0u), vram ? FormatBytes(vram).c_str() : "-",
                FormatDuration(static_cast<double>(now - since) / 1000.0).c_str(),
                state == "running"
                    ? "running"
                    : WhenText(j.value("estimated_start_unix_ms", json(nullptr)), now).c_str(),
                TruncateToWidth(Text(j["name"]), 30).c_str());
    if (j.contains("wait_reason")) {
      std::printf("       %s\n",
                  SanitizeForTerminal(j["wait_reason"].value("message", "")).c_str());
    }
  }
  return kExitOk;
}

namespace {

// `gpuwarden jobs JOB...`: each job in full (its environment and directory
// too, for its owner and root).
int ShowJobs(Connection& conn, const QueueArgs& args) {
  json shown = json::array();
  int code = kExitOk;
  for (int64_t id : args.ids) {
    auto reply = conn.Call({{"op", "job"}, {"job", id}});
    if (!reply.ok()) {
      code = ErrorExit(reply.error());
      continue;
    }
    shown.push_back((*reply)["job"]);
  }
  if (args.json) {
    json doc = {{"schema", "gpuwarden.jobs"}, {"schema_version", 1}, {"jobs", shown}};
    std::puts(DumpJsonForTerminal(doc, true, "gpuwarden.jobs").c_str());
    return code;
  }
  const int64_t now = static_cast<int64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                               std::chrono::system_clock::now().time_since_epoch())
                                               .count());
  auto when = [&](const json& ms) -> std::string {
    if (!ms.is_number_integer()) return "-";
    return FormatDuration(static_cast<double>(now - ms.get<int64_t>()) / 1000.0) + " ago";
  };
  for (const json& j : shown) {
    std::vector<std::string> argv;
    for (const json& a : j["argv"]) {
      auto b = queue::BytesFromJson(a, "argv");
      argv.push_back(b.ok() ? *b : "?");
    }
    std::string gpus;
    for (const json& g : j["gpu_indices"]) gpus += (gpus.empty() ? "" : ",") + g.dump();
    const uint64_t vram = j.value("vram_bytes", uint64_t{0});
    std::printf("job %lld  %s  %s  %s\n", static_cast<long long>(j.value("id", int64_t{0})),
                TruncateToWidth(Text(j["name"]), 40).c_str(),
                SanitizeForTerminal(j.value("user", "?")).c_str(),
                SanitizeForTerminal(j.value("state", "?")).c_str());
    std::printf("  command    %s\n", SanitizeForTerminal(JoinCommandLine(argv)).c_str());
    std::printf("  asks       %u GPU%s, %s each\n", j.value("gpus", 0u),
                j.value("gpus", 0u) == 1 ? "" : "s",
                vram ? FormatBytes(vram).c_str() : "any memory");
    if (!gpus.empty()) std::printf("  on GPUs    %s\n", gpus.c_str());
    std::printf("  submitted  %s\n", when(j["submit_unix_ms"]).c_str());
    if (j["start_unix_ms"].is_number_integer())
      std::printf("  started    %s\n", when(j["start_unix_ms"]).c_str());
    if (j["end_unix_ms"].is_number_integer()) {
      std::string how = SanitizeForTerminal(j.value("end_reason", ""));
      const std::string detail = SanitizeForTerminal(j.value("end_detail", ""));
      if (!detail.empty()) how += ": " + detail;
      std::printf("  ended      %s (%s)\n", when(j["end_unix_ms"]).c_str(), how.c_str());
    }
    if (j.contains("wait_reason")) {
      std::printf("  waits      %s\n",
                  SanitizeForTerminal(j["wait_reason"].value("message", "")).c_str());
    }
    if (j["peak_vram_bytes"].is_number_unsigned())
      std::printf("  peak VRAM  %s\n", FormatBytes(j["peak_vram_bytes"].get<uint64_t>()).c_str());
    if (j.contains("cwd")) std::printf("  directory  %s\n", Text(j["cwd"]).c_str());
    if (j.contains("env")) std::printf("  environment %zu variables\n", j["env"].size());
  }
  return code;
}

}  // namespace

int RunJobs(const QueueArgs& args) {
  auto conn = Connection::Open(args.socket);
  if (!conn.ok()) return ErrorExit(conn.error());
  if (!args.ids.empty()) return ShowJobs(*conn, args);
  json req = {{"op", "jobs"}, {"mine", args.mine}};
  if (!args.all) req["limit"] = args.limit;
  auto reply = conn->Call(req);
  if (!reply.ok()) return ErrorExit(reply.error());
  if (args.json) {
    json doc = {{"schema", "gpuwarden.jobs"}, {"schema_version", 1}, {"jobs", (*reply)["jobs"]}};
    std::puts(DumpJsonForTerminal(doc, true, "gpuwarden.jobs").c_str());
    return kExitOk;
  }
  std::printf("%-6s %-10s %-10s %-6s %-9s %s\n", "JOB", "USER", "STATE", "EXIT", "GPUS", "NAME");
  for (const json& j : (*reply)["jobs"]) {
    std::string exit = "-";
    if (j["exit_code"].is_number_integer()) exit = std::to_string(j["exit_code"].get<int>());
    if (j["exit_signal"].is_number_integer())
      exit = "sig" + std::to_string(j["exit_signal"].get<int>());
    std::string gpus;
    for (const json& g : j["gpu_indices"]) gpus += (gpus.empty() ? "" : ",") + g.dump();
    std::printf("%-6lld %-10s %-10s %-6s %-9s %s\n",
                static_cast<long long>(j.value("id", int64_t{0})),
                TruncateToWidth(SanitizeForTerminal(j.value("user", "?")), 10).c_str(),
                j.value("state", "?").c_str(), exit.c_str(), gpus.empty() ? "-" : gpus.c_str(),
                TruncateToWidth(Text(j["name"]), 40).c_str());
  }
  return kExitOk;
}

int RunControl(const QueueArgs& args, const std::string& op) {
  auto conn = Connection::Open(args.socket);
  if (!conn.ok()) return ErrorExit(conn.error());
  int code = kExitOk;
  for (int64_t id : args.ids) {
    auto reply = conn->Call({{"op", op}, {"job", id}});
    if (!reply.ok()) {
      code = ErrorExit(reply.error());
      continue;
    }
    std::printf("job %lld: %s\n", static_cast<long long>(id), (*reply).value("state", "?").c_str());
  }
  return code;
}

int RunLogs(const QueueArgs& args) {
  if (args.ids.size() != 1) return Fail(kExitUsage, "logs: name one job");
  auto conn = Connection::Open(args.socket);
  if (!conn.ok()) return ErrorExit(conn.error());
  uint64_t offset = 0;
  for (;;) {
    auto chunk = conn->Call({{"op", "logs"},
                             {"job", args.ids[0]},
                             {"stream", args.stderr_stream ? "stderr" : "stdout"},
                             {"offset", offset}});
    if (!chunk.ok()) return ErrorExit(chunk.error());
    auto data = queue::Base64Decode((*chunk)["data"].get<std::string>());
    if (data && !data->empty()) {
      std::fwrite(data->data(), 1, data->size(), stdout);
      std::fflush(stdout);
      offset = (*chunk)["offset"].get<uint64_t>();
      continue;
    }
    const std::string state = (*chunk).value("state", "");
    const bool ended =
        state == "succeeded" || state == "failed" || state == "cancelled" || state == "lost";
    if (!args.follow || ended) return kExitOk;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
}

}  // namespace gw::cli
