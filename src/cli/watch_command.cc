#include "cli/watch_command.h"

#include <fcntl.h>
#include <unistd.h>

#include <fmt/format.h>

#include <clocale>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <memory>

#include "act/audit_log.h"
#include "act/execute.h"
#include "act/plan.h"
#include "act/process_control.h"
#include "act/protected.h"
#include "cli/cli_options.h"
#include "cli/exit_codes.h"
#include "cli/judge.h"
#include "cli/stop_path.h"
#include "cli/terminal.h"
#include "collect/cached_collector.h"
#include "collect/collector.h"
#include "collect/kernel_log.h"
#include "core/clock.h"
#include "core/text.h"
#include "core/units.h"
#include "nvml/probe.h"
#include "queue/protocol.h"
#include "render/clean.h"
#include "render/status_json.h"
#include "watch/app.h"
#include "watch/curses_backend.h"
#include "watch/prober.h"
#include "watch/queue_view.h"
#include "watch/signals.h"
#include "watch/watch_probe.h"

namespace gw::cli {
namespace {

// The queue is asked every round; a daemon that does not answer within this
// is shown as not answering rather than holding up the round.
constexpr int64_t kQueueTimeoutMs = 300;
// A full look (the device-file holder scan of every process) this often;
// light looks between (collect/cached_collector.h).
constexpr int64_t kFullLookEveryMs = 60'000;

std::string ItemCommand(const act::PlanItem& item) {
  if (!item.cmdline.empty()) return JoinCommandLine(item.cmdline);
  if (item.comm) return "[" + SanitizeForTerminal(*item.comm) + "]";
  return "?";
}

std::string ItemLine(const act::PlanItem& item) {
  std::string gpus;
  for (unsigned g : item.gpus) gpus += (gpus.empty() ? "" : ",") + std::to_string(g);
  return fmt::format("PID {}  user {}  GPU {}  VRAM {}  SM {}  age {}{}", item.pid,
                     SanitizeForTerminal(item.user), gpus.empty() ? "-" : gpus,
                     item.vram_bytes ? FormatBytes(*item.vram_bytes) : "-",
                     item.sm_pct ? std::to_string(*item.sm_pct) + "%" : "-",
                     item.age_s ? FormatDuration(*item.age_s) : "-",
                     item.state ? "  " + std::string(render::ProcessStateName(*item.state)) : "");
}

// The stop action: the plan, the signals and the release check of
// `gpuwarden kill`, through the same functions (act::MakePlan, act::Execute,
// WaitForRelease) and the same settings (config file, protected names,
// audit log).
class KillActions final : public watch::StopActions {
 public:
  KillActions(collect::CollectOptions options, StopSettings settings, std::string proc_root,
              int64_t deadline_ms)
      : options_(std::move(options)),
        settings_(std::move(settings)),
        proc_root_(std::move(proc_root)),
        deadline_ms_(deadline_ms),
        caller_(CurrentCaller()) {}

  watch::ActionView Plan(pid_t pid, bool tree, std::shared_ptr<const Snapshot> latest) override {
    watch::ActionView view;
    plan_.reset();
    before_ = latest;
    if (!latest) {
      view.title = "Cannot stop PID " + std::to_string(pid);
      view.lines = {"No look at the GPUs yet."};
      return view;
    }
    auto table = ReadProcessTable(proc_root_, deadline_ms_);
    if (!table) {
      view.title = "Cannot stop PID " + std::to_string(pid);
      view.lines = {"Reading the process table did not finish within the deadline (--timeout);",
                    "a process may be stuck in the kernel. Nothing was signalled."};
      return view;
    }
    act::PlanRequest request;
    request.mode = act::PlanMode::kKill;
    request.pids = {pid};
    request.tree = tree;
    const act::ProtectedList protect(settings_.protect);
    act::Plan plan = act::MakePlan(act::PlanInput{*latest, *table, {}, protect, caller_}, request);

    if (plan.act.empty()) {
      view.kind = watch::ActionView::Kind::kRefused;
      view.title = "Will not stop PID " + std::to_string(pid);
      for (const act::PlanItem& item : plan.skip) {
        view.lines.push_back(fmt::format("PID {}: {} ({})", item.pid,
                                         SanitizeForTerminal(item.detail),
                                         act::ReasonCode(item.reason)));
      }
      for (const std::string& note : plan.notes) view.lines.push_back(SanitizeForTerminal(note));
      view.lines.push_back("Nothing was signalled.");
      return view;
    }
    view.kind = watch::ActionView::Kind::kConfirm;
    view.title = plan.act.size() == 1 ? "Stop PID " + std::to_string(plan.act.front().pid) + "?"
                                      : fmt::format("Stop {} processes?", plan.act.size());
    for (const act::PlanItem& item : plan.act) {
      view.lines.push_back(ItemLine(item));
      view.lines.push_back("  " + ItemCommand(item));
    }
    for (const act::PlanItem& item : plan.skip) {
      view.lines.push_back(
          fmt::format("not touched: PID {}: {}", item.pid, SanitizeForTerminal(item.detail)));
    }
    for (const std::string& note : plan.notes) view.lines.push_back(SanitizeForTerminal(note));
    view.lines.push_back(fmt::format("{}, then SIGKILL after {}; memory checked for up to {}.",
                                     act::SignalName(settings_.first_signal),
                                     FormatDuration(settings_.grace_s),
                                     FormatDuration(settings_.settle_s)));
    plan_ = std::move(plan);
    return view;
  }

  watch::ActionView Execute() override {
    watch::ActionView view;
    view.kind = watch::ActionView::Kind::kResult;
    if (!plan_ || !before_) {
      view.kind = watch::ActionView::Kind::kError;
      view.title = "Nothing to do";
      view.lines = {"No plan was confirmed."};
      return view;
    }
    RealClock clock;
    act::ExecuteOptions exec;
    exec.first_signal = settings_.first_signal;
    exec.grace_ms = static_cast<int64_t>(settings_.grace_s * 1000);
    auto control = act::MakeRealProcessControl(proc_root_);
    act::FileAuditLog audit = OpenAuditLog(settings_);
    act::ExecuteReport report = act::Execute(*plan_, exec, caller_, *control, clock,
                                             settings_.audit_path.empty() ? nullptr : &audit);
    const ReleaseCheck check =
        WaitForRelease(options_, *before_, report, settings_.settle_s, clock);
    const bool incomplete = StopIncomplete(report, check);
    view.title = incomplete ? "Stopped, but not all is well" : "Stopped";
    for (const act::TargetResult& r : report.results) {
      view.lines.push_back(render::RenderResultLine(r));
    }
    if (check.release) {
      const std::string text = render::RenderReleaseText(*check.release, check.settled_s);
      size_t start = 0;
      while (start < text.size()) {
        const size_t nl = text.find('\n', start);
        view.lines.push_back(text.substr(start, nl == std::string::npos ? nl : nl - start));
        if (nl == std::string::npos) break;
        start = nl + 1;
      }
    }
    if (settings_.audit_path.empty()) {
      view.lines.push_back("audit log: no location (no HOME, no XDG_STATE_HOME)");
    } else if (report.audit_errors.empty()) {
      view.lines.push_back("Logged to " + settings_.audit_path);
    }
    for (const std::string& e : report.audit_errors) view.lines.push_back(e);
    for (std::string& line : view.lines) line = SanitizeForTerminal(line);
    plan_.reset();
    return view;
  }

  void Cancel() override { plan_.reset(); }

 private:
  collect::CollectOptions options_;
  StopSettings settings_;
  std::string proc_root_;
  int64_t deadline_ms_;
  act::Caller caller_;
  std::optional<act::Plan> plan_;
  std::shared_ptr<const Snapshot> before_;
};

int64_t UtcOffsetSeconds() {
  const std::time_t now = std::time(nullptr);
  std::tm local{};
  if (localtime_r(&now, &local) == nullptr) return 0;
  return local.tm_gmtoff;
}

}  // namespace

CLI::App* AddWatchSubcommand(CLI::App& app, WatchArgs& args) {
  CLI::App* watch = app.add_subcommand(
      "watch",
      "A live view: GPUs now and over the last minutes, who holds them, the verdict, "
      "the queue; stop a process as `kill` does (docs/watch.md)");
  watch->add_option("-n,--interval", args.interval_s, "Time between two looks (e.g. 2s, 0.5)")
      ->type_name("DURATION")
      ->transform(Seconds(0.1, 3600.0))
      ->capture_default_str();
  watch->add_flag("--readonly", args.readonly, "Turn every action off");
  watch->add_option("--history", args.history, "How long the graphs remember, e.g. 30m")
      ->type_name("DURATION")
      ->check(Seconds(1, 7 * 86400.0))
      ->capture_default_str();
  AddStopFlags(*watch, args.stop);  // The stop action's, as for kill.
  return watch;
}

int RunWatch(const GlobalOptions& global, const WatchArgs& args) {
  // --- Arguments -----------------------------------------------------------
  if (!(args.interval_s >= 0.1 && args.interval_s <= 3600)) {
    return Fail(kExitUsage, "-n: give seconds between 0.1 and 3600");
  }
  auto history_s = ParseDuration(args.history);
  if (!history_s.ok() || *history_s < 1 || *history_s > 7 * 86400) {
    return Fail(kExitUsage, "--history: give a duration between 1s and 7d, e.g. 10m");
  }
  auto options = ResolveCollectOptions(global);
  if (!options.ok()) {
    return Fail(options.error().code == "bad_input" ? kExitBadInput : kExitNvmlUnavailable,
                options.error().message);
  }
  options->deadline_ms = static_cast<int64_t>(global.timeout_s * 1000);

  std::unique_ptr<KillActions> actions;
  if (!args.readonly) {
    auto settings = ResolveStopSettings(args.stop);
    if (!settings.ok()) {
      return Fail(settings.error().code == "usage" ? kExitUsage : kExitBadInput,
                  settings.error().message);
    }
    actions =
        std::make_unique<KillActions>(*options, *settings, global.proc_root, options->deadline_ms);
  }
  // After the flags: a bad flag is named even where there is no terminal.
  if (isatty(STDIN_FILENO) != 1 || isatty(STDOUT_FILENO) != 1) {
    return Fail(kExitUsage,
                "watch needs a terminal on standard input and output; for a one-shot view use "
                "`gpuwarden status` (or `status --json`)");
  }

  // --- The probe thread ----------------------------------------------------
  watch::ProbeSettings probe_settings;
  FillCallerFacts(probe_settings.diagnose, global.proc_root);
  watch::ProbeSources sources;
  auto collector = std::make_shared<collect::CachedCollector>(*options, kFullLookEveryMs);
  sources.collect = [collector](uint64_t since_us) { return collector->Look(since_us); };
  sources.queue = [socket = queue::ResolveSocketPath(args.socket)] {
    return watch::FetchQueue(socket, kQueueTimeoutMs);
  };
  sources.driver_calls_in_flight = [] { return nvml::ProbeWorkersRunning(); };
  sources.now_unix_ms = [] { return RealClock().NowUnixMs(); };
  if (global.sim_scenario.empty()) {
    // Xid events for the verdict; a simulated server has no kernel log.
    probe_settings.diagnose.events.running_boot_id = collect::RunningBootId();
    sources.kernel_events = [] {
      auto log = collect::ReadKernelLog("", std::nullopt);
      return log.ok() ? std::move(log->events) : std::vector<kmsg::KernelEvent>{};
    };
  }
  auto probe = std::make_shared<watch::WatchProbe>(std::move(sources), probe_settings);
  int wake[2];
  if (pipe2(wake, O_CLOEXEC | O_NONBLOCK) != 0) return Fail(kExitInternal, "pipe failed");
  const int64_t interval_ms = static_cast<int64_t>(std::lround(args.interval_s * 1000));
  watch::Prober prober([probe] { return probe->Round(); }, interval_ms, wake[1]);

  // --- The terminal --------------------------------------------------------
  std::setlocale(LC_ALL, "");
  const bool unicode = watch::LocaleIsUtf8();
  auto signal_fd = watch::InstallSignalHandlers();
  if (!signal_fd.ok()) return Fail(kExitInternal, signal_fd.error().message);
  auto terminal = watch::CursesTerminal::Open(ShouldUseColor(global.color), unicode);
  if (!terminal.ok()) {
    watch::RestoreSignalHandlers();
    return Fail(kExitUsage, "watch: " + terminal.error().message);
  }
  watch::SetCrashRestoreSequence((*terminal)->RestoreSequence());

  watch::ViewOptions view;
  view.interval_s = args.interval_s;
  view.readonly = args.readonly;
  view.unicode = unicode;
  view.utc_offset_s = UtcOffsetSeconds();
  const size_t samples =
      static_cast<size_t>(std::clamp(*history_s / args.interval_s, 10.0, 1'000'000.0));
  int code = 0;
  bool abandoned = false;
  {
    watch::App app(**terminal, prober, actions.get(), view,
                   watch::AppFds{wake[0], wake[1], *signal_fd}, samples);
    code = app.Run();
    // A round stuck in the driver must not hold up quitting: give it a
    // moment, then leave it behind.
    abandoned = !prober.Stop(200);
    (*terminal)->Close();
    watch::RestoreSignalHandlers();
    if (app.stop_in_progress()) {
      // Signals may have gone out: leaving now would skip the SIGKILL after
      // the grace period and the release check. Finish it on the plain
      // terminal; a second Ctrl-C (default action again) leaves it.
      std::fprintf(stderr,
                   "gpuwarden: a stop is in progress; finishing it (SIGKILL after the grace "
                   "period, then the memory check). Ctrl-C leaves it unfinished.\n");
      if (auto result = app.FinishStop()) {
        std::fprintf(stderr, "%s\n", result->title.c_str());
        for (const std::string& line : result->lines) std::fprintf(stderr, "  %s\n", line.c_str());
      }
    }
    abandoned = abandoned || app.action_running();
  }
  if (abandoned) {
    // A thread is still inside the driver or a stop: static destructors
    // must not run under it.
    std::fflush(nullptr);
    std::_Exit(code);
  }
  return code;
}

}  // namespace gw::cli
