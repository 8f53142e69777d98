#include "cli/judge.h"

#include <fmt/format.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include "cli/exit_codes.h"
#include "cli/progress.h"
#include "collect/window.h"
#include "config/config.h"
#include "core/clock.h"
#include "core/units.h"
#include "fleet/trends.h"
#include "import/nvsmi_xml.h"
#include "proc/proc_reader.h"
#include "queue/client.h"
#include "queue/protocol.h"

namespace gw::cli {
namespace {

std::optional<std::string> Env(const char* name) {
  const char* v = std::getenv(name);
  if (v == nullptr) return std::nullopt;
  return std::string(v);
}

// A daemon that answers at all answers this at once (its history is in
// memory and a day of minutes in SQLite); `why` never waits longer for it.
constexpr int64_t kTrendsTimeoutMs = 1500;

// gpuwarden's history, when a daemon serves this machine: its trends, or the
// reason they are not used. No daemon at all is no note: most servers run
// `why` without one.
void AskTrends(const std::string& socket, const Snapshot& latest, Judged& judged) {
  Result<queue::Client> client =
      queue::Client::Connect(queue::ResolveSocketPath(socket), kTrendsTimeoutMs);
  if (!client.ok()) return;
  Result<nlohmann::json> reply = client->Call({{"op", "trends"}});
  if (!reply.ok()) {
    judged.trends_note = "gpuwardend's history not read: " + reply.error().message;
    return;
  }
  Result<diagnose::Trends> trends = fleet::TrendsFromJson(reply->value("trends", nlohmann::json()));
  if (!trends.ok()) {
    judged.trends_note = "gpuwardend's history not understood: " + trends.error().message;
  } else if (!diagnose::TrendsDescribe(*trends, latest)) {
    judged.trends_note = "gpuwardend's history not used: it is of other GPUs than these";
  } else {
    judged.trends = std::move(*trends);
  }
}

}  // namespace

Result<diagnose::PlacementHealth> LoadPlacementHealth() {
  auto config = config::LoadDefaultConfig();
  if (!config.ok()) return MakeError("bad_input", config.error().message);
  diagnose::PlacementHealth placement;
  if (config->placement.use_remap_pending) {
    placement.use_remap_pending = *config->placement.use_remap_pending;
  }
  return placement;
}

void FillCallerFacts(diagnose::DiagnoseOptions& options, const std::string& proc_root) {
  options.caller_uid = getuid();
  options.caller_is_root = geteuid() == 0;
  options.cuda_visible_devices = Env("CUDA_VISIBLE_DEVICES");
  options.cuda_device_order = Env("CUDA_DEVICE_ORDER");
  // In a container our own cgroup names it; then NVML's host PIDs are not ours
  // to see, which changes what "memory held by nothing" most likely means.
  proc::ProcReader reader(proc_root);
  auto self = reader.ReadProcess(getpid(), 0);
  options.in_container = self.ok() && self->owner.container_runtime.has_value();
  options.proc_shows_every_process = reader.ShowsEveryHostProcess(options.caller_is_root);
}

int JudgeErrorExit(const Error& e) {
  std::fprintf(stderr, "gpuwarden: %s\n", e.message.c_str());
  if (e.code == "usage") return kExitUsage;
  if (e.code == "bad_input") return kExitBadInput;
  return kExitNvmlUnavailable;
}

int VerdictExitCode(diagnose::Verdict verdict) {
  switch (verdict) {
    case diagnose::Verdict::kOk:
      return kExitOk;
    case diagnose::Verdict::kBusy:
      return kExitVerdictBusy;
    case diagnose::Verdict::kReclaimable:
      return kExitVerdictReclaimable;
    case diagnose::Verdict::kDegraded:
      return kExitVerdictDegraded;
    case diagnose::Verdict::kFault:
      return kExitVerdictFault;
    case diagnose::Verdict::kUnknown:
      return kExitVerdictUnknown;
    case diagnose::Verdict::kNeverFits:
      return kExitVerdictNeverFits;
  }
  return kExitVerdictUnknown;
}

Result<Judged> Judge(const GlobalOptions& global, const JudgeArgs& args) {
  Judged judged;
  diagnose::DiagnoseOptions& options = judged.options;
  FillCallerFacts(options, global.proc_root);
  if (args.idle_for_s) options.idle_holder_min_idle_s = *args.idle_for_s;
  if (args.min_age_s) options.idle_holder_min_age_s = *args.min_age_s;
  options.protect = args.protect;
  if (!args.need.empty()) {
    auto need = diagnose::ParseNeed(args.need);
    if (!need.ok()) return MakeError("usage", "--need: " + need.error().message);
    options.need = *need;
  }
  if (args.nvlink) {
    if (!options.need) return MakeError("usage", "--nvlink needs --need (e.g. --need 4x40G)");
    options.need->nvlink = true;
  }
  // Only a placement answer reads the [placement] settings: a settings file
  // is not a reason for `why` alone to fail.
  if (options.need) {
    auto placement = LoadPlacementHealth();
    if (!placement.ok()) return placement.error();
    options.placement = *placement;
  }

  std::optional<double> since_s;
  if (!args.since.empty()) {
    auto seconds = ParseDuration(args.since);
    if (!seconds.ok()) return MakeError("usage", "--since: " + seconds.error().message);
    since_s = *seconds;
  }

  if (!args.from.empty()) {
    auto imported = import::ReadNvidiaSmiXmlFile(args.from);
    if (!imported.ok()) return MakeError("bad_input", imported.error().message);
    judged.history.push_back(std::move(imported).value());
  } else {
    auto collect_options = ResolveCollectOptions(global);
    if (!collect_options.ok()) return collect_options.error();
    RealClock clock;
    collect::WindowOptions window;
    window.window_s = args.now ? 0 : args.window_s;
    StderrTerminal terminal;
    SamplingNotice notice(terminal, args.progress);
    window.progress = [&notice](const collect::WindowProgress& p) { notice.Update(p); };
    judged.history = collect::CollectWindow(*collect_options, window, clock, [](int64_t ms) {
      std::this_thread::sleep_for(std::chrono::milliseconds(ms));
    });
    notice.Clear();
    if (judged.history.size() > 1) {
      judged.window_s =
          (judged.history.back().time_unix_ms - judged.history.front().time_unix_ms) / 1000.0;
    }
  }

  if (args.slurm_runner != nullptr) {
    const Status slurm =
        AttachSlurmNode(args.slurm, !args.from.empty() || !global.sim_scenario.empty(),
                        judged.history.back(), *args.slurm_runner);
    if (!slurm.ok()) judged.slurm_error = slurm.error().message;
  }

  // The kernel log: a named file always; the system's own log only when
  // judging this machine live (a dump from elsewhere has no kernel log here).
  if (!args.kernel_log.empty()) {
    auto log = collect::ReadKernelLog(args.kernel_log, std::nullopt);
    if (!log.ok()) return MakeError("bad_input", "--kernel-log " + log.error().message);
    judged.kernel_log = std::move(log).value();
  } else if (args.no_kernel_log) {
    judged.kernel_log_note = "kernel log not read (--no-kernel-log)";
  } else if (!args.from.empty()) {
    judged.kernel_log_note = "kernel log not read (offline dump; add --kernel-log FILE)";
  } else if (!global.sim_scenario.empty()) {
    judged.kernel_log_note = "kernel log not read (simulated server)";
  } else {
    auto log = collect::ReadKernelLog("", std::nullopt);
    if (log.ok()) {
      judged.kernel_log = std::move(log).value();
    } else {
      judged.kernel_log_note = "kernel log not readable: " + log.error().message;
    }
  }
  std::span<const kmsg::KernelEvent> events;
  if (judged.kernel_log) {
    options.events = collect::EventAgeFor(*judged.kernel_log, judged.history.back(), since_s);
    events = judged.kernel_log->events;
  }

  // The daemon's history first: a holder's idle time is judged with it.
  if (args.history && args.from.empty()) {
    AskTrends(args.history_socket, judged.history.back(), judged);
    if (judged.trends) options.activity_history = diagnose::ActivityHistoryOf(*judged.trends);
  }
  judged.diagnosis = diagnose::Diagnose(judged.history, options, events);
  if (judged.trends) diagnose::AddTrendEvidence(judged.diagnosis, *judged.trends);
  return judged;
}

}  // namespace gw::cli
