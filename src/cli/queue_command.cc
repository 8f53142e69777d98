#include "cli/queue_command.h"

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <optional>
#include <thread>

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "cli/exit_codes.h"
#include "cli/interrupt.h"
#include "cli/terminal.h"
#include "core/json_out.h"
#include "core/text.h"
#include "core/units.h"
#include "queue/client.h"
#include "queue/policy.h"
#include "queue/protocol.h"
#include "queue/runner.h"

extern char** environ;

namespace gw::cli {
namespace {

using nlohmann::json;

int ErrorExit(const Error& e) {
  std::fprintf(stderr, "gpuwarden: %s\n", SanitizeForTerminal(e.message).c_str());
  return ExitCodeForError(e);
}

Result<queue::Client> Connect(const std::string& flag) {
  return queue::Client::Connect(queue::ResolveSocketPath(flag));
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

// An integer member, or nullopt (the reply is checked, not trusted).
std::optional<int64_t> IntOf(const json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_number_integer()) return std::nullopt;
  return it->get<int64_t>();
}

// A string member as sent ("" when absent or not a string).
std::string RawStringOf(const json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : "";
}

// The same, sanitised for the terminal.
std::string StringOf(const json& j, const char* key) {
  return SanitizeForTerminal(RawStringOf(j, key));
}

// "0,1" from a job's gpu_indices; "" when none.
std::string GpuIds(const json& j) {
  std::string out;
  auto it = j.find("gpu_indices");
  if (it == j.end() || !it->is_array()) return out;
  for (const json& g : *it) {
    if (g.is_number_unsigned()) out += (out.empty() ? "" : ",") + std::to_string(g.get<unsigned>());
  }
  return out;
}

// What a job asks of each GPU, for a person: an undeclared --vram is not
// "any memory" but a whole GPU (the policy's rule, policy.h).
std::string VramNeedText(const json& j) {
  if (IntOf(j, "gpus").value_or(0) == 0) return "no GPU";
  const int64_t vram = IntOf(j, "vram_bytes").value_or(0);
  if (vram > 0) return FormatBytes(static_cast<uint64_t>(vram)) + " each";
  return fmt::format("a whole GPU each (no other queue job on it, at least {} % free)",
                     queue::kWholeGpuFreePct);
}

// The queue's warnings: the daemon's "degraded" entries, one line each.
void PrintDegraded(const json& reply, int64_t now_ms) {
  auto it = reply.find("degraded");
  if (it == reply.end() || !it->is_array()) return;
  for (const json& d : *it) {
    if (!d.is_object()) continue;
    std::string since;
    if (auto ms = IntOf(d, "since_unix_ms"); ms && now_ms > 0) {
      since = " for " + FormatDuration(static_cast<double>(now_ms - *ms) / 1000.0);
    }
    std::printf("warning: the queue is degraded%s: %s: %s\n", since.c_str(),
                StringOf(d, "what").c_str(), StringOf(d, "detail").c_str());
  }
}

// Where a command would be found, as the supervisor looks for it
// (ExecCandidates: the job's PATH, relative to its working directory, which
// is ours); the reason when nowhere. Only the submitter can look: the job
// runs as this user, in this directory.
std::optional<std::string> MissingCommand(const std::string& argv0,
                                          const std::vector<std::string>& env) {
  bool denied = false;
  for (const std::string& path : queue::ExecCandidates(argv0, env)) {
    struct stat st;
    if (stat(path.c_str(), &st) != 0 || S_ISDIR(st.st_mode)) continue;
    if (access(path.c_str(), X_OK) == 0) return std::nullopt;
    denied = true;
  }
  const std::string name = SanitizeForTerminal(argv0);
  if (denied) return "-- " + name + ": not executable (permission denied); the job could never run";
  if (argv0.find('/') != std::string::npos) {
    return "-- " + name + ": no such file; the job could never run";
  }
  std::string path = "/usr/local/bin:/usr/bin:/bin";
  for (const std::string& e : env) {
    if (e.rfind("PATH=", 0) == 0) {
      path = e.substr(5);
      break;
    }
  }
  return "-- " + name + ": no such command in PATH (" + SanitizeForTerminal(path) +
         "); the job could never run";
}

}  // namespace

WaitEnd DescribeJobEnd(const json& j, int interrupted_by) {
  const long long id = static_cast<long long>(IntOf(j, "id").value_or(0));
  const std::string state = StringOf(j, "state");
  const std::string reason = StringOf(j, "end_reason");
  const std::string detail = StringOf(j, "end_detail");
  const auto code = IntOf(j, "exit_code");
  const auto signal = IntOf(j, "exit_signal");
  auto with_detail = [&](std::string text) { return detail.empty() ? text : text + ": " + detail; };
  WaitEnd end{1, ""};
  if (state == "succeeded") {
    end = {0, fmt::format("job {} succeeded", id)};
  } else if (reason == "exit" && code) {
    end = {static_cast<int>(*code & 0xff),
           fmt::format("job {} exited with status {}", id, *code & 0xff)};
  } else if (reason == "signal" && signal) {
    const char* abbrev = sigabbrev_np(static_cast<int>(*signal));
    end = {128 + static_cast<int>(*signal & 0x7f),
           fmt::format("job {} was killed by signal {}{}", id, *signal,
                       abbrev != nullptr ? std::string(" (SIG") + abbrev + ")" : "")};
  } else if (reason == "time_limit") {
    const auto limit = IntOf(j, "time_limit_s");
    end.line = limit ? fmt::format("job {} stopped at its time limit ({})", id,
                                   FormatDuration(static_cast<double>(*limit)))
                     : fmt::format("job {} stopped at its time limit", id);
  } else if (reason == "vram_limit") {
    end.line = detail.empty()
                   ? fmt::format("job {} stopped: it used more GPU memory than its --vram", id)
                   : fmt::format("job {} {}", id, detail);
  } else if (reason == "cancelled" || state == "cancelled") {
    end.line = with_detail(fmt::format("job {} was cancelled", id));
  } else if (reason == "start_failed") {
    end.line = with_detail(fmt::format("job {} failed to start", id));
  } else if (reason == "dependency") {
    end.line = with_detail(fmt::format("job {} did not run", id));
  } else if (reason == "lost" || state == "lost") {
    end.line = with_detail(fmt::format("job {} was lost", id));
  } else {
    end.line = with_detail(fmt::format("job {} ended ({})", id, state.empty() ? "?" : state));
  }
  // Interrupted: the caller asked to stop; the shell's convention for it.
  if (interrupted_by > 0) end.exit_code = 128 + interrupted_by;
  return end;
}

int ExitCodeForError(const Error& e) {
  if (queue::IsUnreachable(e)) return kExitNoDaemon;
  if (e.code == "bad_request") return kExitUsage;
  // "store": gpuwardend before the storage-fault work named it so.
  if (e.code == "storage" || e.code == "store") return kExitStorageRefused;
  if (e.code == "unsatisfiable") return kExitUnsatisfiable;
  return kExitRefusedByDaemon;
}

std::optional<int> SpecFromRunArgs(const RunArgs& args, queue::JobSpec& spec) {
  if (args.command.empty()) return Fail(kExitUsage, "run: give the command after --");
  if (args.wait && args.detach) return Fail(kExitUsage, "--wait and --detach exclude each other");
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
    auto w = queue::ParseTimeWindow(args.window);
    if (!w.ok()) return Fail(kExitUsage, "--window: " + w.error().message);
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
  // A command that cannot be found would wait for its GPUs only to fail.
  if (auto missing = MissingCommand(spec.argv[0], spec.env)) {
    return Fail(kExitUnsatisfiable, *missing);
  }
  return std::nullopt;
}

int RunSubmit(const RunArgs& args) {
  queue::JobSpec spec;
  if (std::optional<int> refused = SpecFromRunArgs(args, spec)) return *refused;

  // Built before connecting: the daemon then reads it as it accepts.
  nlohmann::json request = {{"op", "submit"}, {"spec", queue::SpecToJson(spec)}};
  auto conn = Connect(args.socket);
  if (!conn.ok()) return ErrorExit(conn.error());
  auto reply = conn->Call(std::move(request));
  if (!reply.ok()) return ErrorExit(reply.error());
  const auto submitted = IntOf(*reply, "job");
  if (!submitted) return Fail(kExitNoDaemon, "gpuwardend's submit reply has no job id");
  const int64_t id = *submitted;
  const bool wait = args.wait || (!args.detach && isatty(STDOUT_FILENO) && isatty(STDIN_FILENO));
  if (!wait) {
    std::printf("%lld\n", static_cast<long long>(id));
    return kExitOk;
  }
  std::fprintf(stderr, "gpuwarden: job %lld submitted\n", static_cast<long long>(id));
  CatchInterrupts();
  uint64_t offsets[2] = {0, 0};
  std::string last_reason;
  std::string last_state;
  int interrupted_by = 0;  // The first signal that asked us to stop.
  for (;;) {
    if (const int sig = TakeInterrupt(); sig != 0) {
      if (interrupted_by != 0) {
        // A second Ctrl-C: stop waiting for a job that takes its grace.
        std::fprintf(stderr, "gpuwarden: job %lld is still stopping; no longer waiting for it\n",
                     static_cast<long long>(id));
        return 128 + interrupted_by;
      }
      interrupted_by = sig;
      std::fprintf(stderr, "\ngpuwarden: cancelling job %lld (again to stop waiting)\n",
                   static_cast<long long>(id));
      auto cancelled = conn->Call({{"op", "cancel"}, {"job", id}});
      // Already ended: the next look says how.
      if (!cancelled.ok() && cancelled.error().code != "state") return ErrorExit(cancelled.error());
    }
    auto job = conn->Call({{"op", "job"}, {"job", id}});
    if (!job.ok()) return ErrorExit(job.error());
    const json& j = (*job)["job"];
    const std::string state = StringOf(j, "state");
    if (j.contains("wait_reason") && j["wait_reason"].is_object()) {
      const std::string reason = StringOf(j["wait_reason"], "message");
      if (reason != last_reason) {
        std::fprintf(stderr, "gpuwarden: job %lld waits: %s\n", static_cast<long long>(id),
                     reason.c_str());
        last_reason = reason;
      }
    }
    if (state != last_state && state == "running") {
      const std::string gpus = GpuIds(j);
      std::fprintf(
          stderr, "gpuwarden: job %lld runs %s\n", static_cast<long long>(id),
          gpus.empty()
              ? "without a GPU"
              : ((gpus.find(',') == std::string::npos ? "on GPU " : "on GPUs ") + gpus).c_str());
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
      auto data = queue::Base64Decode(RawStringOf(*chunk, "data"));
      if (data && !data->empty()) {
        std::fwrite(data->data(), 1, data->size(), s == 0 ? stdout : stderr);
        std::fflush(s == 0 ? stdout : stderr);
        offsets[s] = static_cast<uint64_t>(IntOf(*chunk, "offset").value_or(0));
        more = true;
      }
    }
    if (!more && queue::ParseJobState(state) && queue::IsTerminal(*queue::ParseJobState(state))) {
      const WaitEnd end = DescribeJobEnd(j, interrupted_by);
      std::fprintf(stderr, "gpuwarden: %s\n", end.line.c_str());
      return end.exit_code;
    }
    if (!more) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

int RunQueue(const QueueArgs& args) {
  auto conn = Connect(args.socket);
  if (!conn.ok()) return ErrorExit(conn.error());
  auto reply = conn->Call({{"op", "queue"}});
  if (!reply.ok()) return ErrorExit(reply.error());
  if (args.json) {
    std::puts(DumpJsonForTerminal(*reply, true, "gpuwarden.queue").c_str());
    return kExitOk;
  }
  const int64_t now = IntOf(*reply, "now_unix_ms").value_or(0);
  PrintDegraded(*reply, now);
  const json jobs = reply->value("jobs", json::array());
  if (jobs.empty()) {
    std::puts("The queue is empty.");
    return kExitOk;
  }
  // GPUS is a count, here and in `jobs`; WAITED is submit to start (or now).
  std::printf("%-6s %-4s %-10s %-9s %-5s %-9s %-10s %-10s %s\n", "JOB", "POS", "USER", "STATE",
              "GPUS", "VRAM", "WAITED", "START", "NAME");
  for (const json& j : jobs) {
    if (!j.is_object()) continue;
    const std::string state = StringOf(j, "state");
    const int64_t submitted = IntOf(j, "submit_unix_ms").value_or(now);
    const int64_t waited_until = IntOf(j, "start_unix_ms").value_or(now);
    const int64_t gpus = IntOf(j, "gpus").value_or(0);
    const int64_t vram = IntOf(j, "vram_bytes").value_or(0);
    const std::string vram_text = gpus == 0  ? "-"
                                  : vram > 0 ? FormatBytes(static_cast<uint64_t>(vram))
                                             : "whole GPU";
    const bool running = state == "running" || state == "starting";
    std::printf("%-6lld %-4s %-10s %-9s %-5lld %-9s %-10s %-10s %s\n",
                static_cast<long long>(IntOf(j, "id").value_or(0)),
                IntOf(j, "position") ? std::to_string(*IntOf(j, "position")).c_str() : "-",
                TruncateToWidth(StringOf(j, "user"), 10).c_str(), state.c_str(),
                static_cast<long long>(gpus), vram_text.c_str(),
                FormatDuration(static_cast<double>(waited_until - submitted) / 1000.0).c_str(),
                running ? state.c_str()
                        : WhenText(j.value("estimated_start_unix_ms", json(nullptr)), now).c_str(),
                TruncateToWidth(Text(j.value("name", json(""))), 30).c_str());
    if (j.contains("wait_reason") && j["wait_reason"].is_object()) {
      std::printf("       %s\n", StringOf(j["wait_reason"], "message").c_str());
    }
  }
  return kExitOk;
}

namespace {

// `gpuwarden jobs JOB...`: each job in full (its environment and directory
// too, for its owner and root).
int ShowJobs(queue::Client& conn, const QueueArgs& args) {
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
    if (!j.is_object()) continue;
    std::vector<std::string> argv;
    for (const json& a : j.value("argv", json::array())) {
      auto b = queue::BytesFromJson(a, "argv");
      argv.push_back(b.ok() ? *b : "?");
    }
    const std::string gpus = GpuIds(j);
    const int64_t count = IntOf(j, "gpus").value_or(0);
    std::printf("job %lld  %s  %s  %s\n", static_cast<long long>(IntOf(j, "id").value_or(0)),
                TruncateToWidth(Text(j.value("name", json(""))), 40).c_str(),
                StringOf(j, "user").c_str(), StringOf(j, "state").c_str());
    std::printf("  command    %s\n", SanitizeForTerminal(JoinCommandLine(argv)).c_str());
    if (count == 0) {
      std::printf("  asks       no GPU\n");
    } else {
      std::printf("  asks       %lld GPU%s, %s\n", static_cast<long long>(count),
                  count == 1 ? "" : "s", VramNeedText(j).c_str());
    }
    if (!gpus.empty()) std::printf("  on GPUs    %s\n", gpus.c_str());
    std::printf("  submitted  %s\n", when(j["submit_unix_ms"]).c_str());
    if (auto start = IntOf(j, "start_unix_ms")) {
      std::printf(
          "  started    %s (waited %s)\n", when(j["start_unix_ms"]).c_str(),
          FormatDuration(static_cast<double>(*start - IntOf(j, "submit_unix_ms").value_or(*start)) /
                         1000.0)
              .c_str());
    }
    if (j["end_unix_ms"].is_number_integer()) {
      std::string how = StringOf(j, "end_reason");
      const std::string detail = StringOf(j, "end_detail");
      if (!detail.empty()) how += ": " + detail;
      std::printf("  ended      %s (%s)\n", when(j["end_unix_ms"]).c_str(), how.c_str());
    }
    if (j.contains("wait_reason") && j["wait_reason"].is_object()) {
      std::printf("  waits      %s\n", StringOf(j["wait_reason"], "message").c_str());
    }
    if (j["peak_vram_bytes"].is_number_unsigned())
      std::printf("  peak VRAM  %s\n", FormatBytes(j["peak_vram_bytes"].get<uint64_t>()).c_str());
    if (j.contains("cwd")) std::printf("  directory  %s\n", Text(j["cwd"]).c_str());
    if (j.contains("env") && j["env"].is_array())
      std::printf("  environment %zu variables\n", j["env"].size());
  }
  return code;
}

}  // namespace

int RunJobs(const QueueArgs& args) {
  auto conn = Connect(args.socket);
  if (!conn.ok()) return ErrorExit(conn.error());
  if (!args.ids.empty()) return ShowJobs(*conn, args);
  json req = {{"op", "jobs"}, {"mine", args.mine}};
  if (!args.all) req["limit"] = args.limit;
  auto reply = conn->Call(req);
  if (!reply.ok()) return ErrorExit(reply.error());
  const json jobs = reply->value("jobs", json::array());
  if (args.json) {
    json doc = {{"schema", "gpuwarden.jobs"}, {"schema_version", 1}, {"jobs", jobs}};
    std::puts(DumpJsonForTerminal(doc, true, "gpuwarden.jobs").c_str());
    return kExitOk;
  }
  // GPUS is a count (as in `queue`); GPU IDS the indices it ran on.
  std::printf("%-6s %-10s %-10s %-6s %-5s %-9s %s\n", "JOB", "USER", "STATE", "EXIT", "GPUS",
              "GPU IDS", "NAME");
  for (const json& j : jobs) {
    if (!j.is_object()) continue;
    std::string exit = "-";
    if (auto c = IntOf(j, "exit_code")) exit = std::to_string(*c);
    if (auto s = IntOf(j, "exit_signal")) exit = "sig" + std::to_string(*s);
    const std::string gpus = GpuIds(j);
    std::printf("%-6lld %-10s %-10s %-6s %-5lld %-9s %s\n",
                static_cast<long long>(IntOf(j, "id").value_or(0)),
                TruncateToWidth(StringOf(j, "user"), 10).c_str(), StringOf(j, "state").c_str(),
                exit.c_str(), static_cast<long long>(IntOf(j, "gpus").value_or(0)),
                gpus.empty() ? "-" : gpus.c_str(),
                TruncateToWidth(Text(j.value("name", json(""))), 40).c_str());
  }
  return kExitOk;
}

int RunControl(const QueueArgs& args, const std::string& op) {
  auto conn = Connect(args.socket);
  if (!conn.ok()) return ErrorExit(conn.error());
  int code = kExitOk;
  for (int64_t id : args.ids) {
    auto reply = conn->Call({{"op", op}, {"job", id}});
    if (!reply.ok()) {
      code = ErrorExit(reply.error());
      continue;
    }
    std::printf("job %lld: %s\n", static_cast<long long>(id),
                ControlResultText(op, *reply).c_str());
  }
  return code;
}

std::string ControlResultText(const std::string& op, const json& reply) {
  const std::string state = StringOf(reply, "state");
  if (op == "cancel" && (state == "running" || state == "starting")) {
    // Stopping takes the daemon's grace; the reply says how long when it can.
    const auto grace = reply.find("grace_s");
    return grace != reply.end() && grace->is_number()
               ? fmt::format("stopping (SIGTERM, then SIGKILL after {})",
                             FormatDuration(grace->get<double>()))
               : "stopping (SIGTERM, then SIGKILL after the daemon's --grace)";
  }
  if (op == "release" && state == "queued") return "released (queued)";
  return state.empty() ? "done" : state;
}

int RunLogs(const QueueArgs& args) {
  if (args.ids.size() != 1) return Fail(kExitUsage, "logs: name one job");
  auto conn = Connect(args.socket);
  if (!conn.ok()) return ErrorExit(conn.error());
  uint64_t offset = 0;
  for (;;) {
    auto chunk = conn->Call({{"op", "logs"},
                             {"job", args.ids[0]},
                             {"stream", args.stderr_stream ? "stderr" : "stdout"},
                             {"offset", offset}});
    if (!chunk.ok()) return ErrorExit(chunk.error());
    auto data = queue::Base64Decode(RawStringOf(*chunk, "data"));
    if (data && !data->empty()) {
      std::fwrite(data->data(), 1, data->size(), stdout);
      std::fflush(stdout);
      offset = static_cast<uint64_t>(IntOf(*chunk, "offset").value_or(0));
      continue;
    }
    const auto state = queue::ParseJobState(StringOf(*chunk, "state"));
    const bool ended = state && queue::IsTerminal(*state);
    if (!args.follow || ended) return kExitOk;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
}

}  // namespace gw::cli
