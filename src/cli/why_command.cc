#include "cli/why_command.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <set>

#include "cli/exit_codes.h"
#include "cli/terminal.h"
#include "collect/collector.h"
#include "collect/kernel_log.h"
#include "core/clock.h"
#include "core/gpu_pci.h"
#include "core/text.h"
#include "core/units.h"
#include "kmsg/escalation.h"
#include "kmsg/event_age.h"
#include "kmsg/sources.h"
#include "render/events_json.h"
#include "render/events_text.h"
#include "render/explain.h"
#include "render/why_json.h"
#include "render/why_text.h"

namespace gw::cli {
namespace {

std::vector<std::string> SourcesRead(const Judged& judged) {
  if (!judged.kernel_log) return {};
  return judged.kernel_log->used;
}

}  // namespace

int RunWhy(const GlobalOptions& global, const WhyArgs& args) {
  const bool color = ShouldUseColor(global.color);
  if (!args.explain.empty()) {
    auto text = render::RenderExplain(args.explain, color);
    if (!text.ok()) {
      std::fprintf(stderr, "gpuwarden: %s\n", text.error().message.c_str());
      return kExitUsage;
    }
    Print(*text);
    return kExitOk;
  }
  auto judged = Judge(global, args.judge);
  if (!judged.ok()) return JudgeErrorExit(judged.error());
  const Snapshot& latest = judged->history.back();
  if (args.json) {
    render::WhyJsonContext context;
    context.samples = static_cast<unsigned>(judged->history.size());
    context.window_s = judged->window_s;
    context.kernel_log_sources = SourcesRead(*judged);
    if (judged->options.need) context.need = diagnose::FormatNeed(*judged->options.need);
    context.trends = judged->trends ? &*judged->trends : nullptr;
    context.trends_note = judged->trends_note;
    Print(render::RenderWhyJson(judged->diagnosis, latest, context, /*pretty=*/true));
  } else {
    render::WhyTextOptions text;
    text.color = color;
    text.width = OutputWidth();
    text.verbose = args.verbose;
    text.samples = static_cast<unsigned>(judged->history.size());
    text.window_s = judged->window_s;
    text.kernel_log_sources = SourcesRead(*judged);
    text.kernel_log_note = judged->kernel_log_note;
    text.trends = judged->trends ? &*judged->trends : nullptr;
    text.trends_note = judged->trends_note;
    Print(render::RenderWhyText(judged->diagnosis, latest, text));
  }
  if (!judged->slurm_error.empty()) {
    std::fprintf(stderr, "gpuwarden: %s\n", SanitizeForTerminal(judged->slurm_error).c_str());
    return kExitSlurmUnavailable;
  }
  return VerdictExitCode(judged->diagnosis.server);
}

int RunEvents(const GlobalOptions& global, const EventsArgs& args) {
  std::optional<int64_t> since;
  RealClock clock;
  if (!args.since.empty()) {
    auto seconds = ParseDuration(args.since);
    if (!seconds.ok()) {
      std::fprintf(stderr, "gpuwarden: --since: %s\n", seconds.error().message.c_str());
      return kExitUsage;
    }
    since = clock.NowUnixMs() - static_cast<int64_t>(*seconds * 1000);
  }
  auto log = collect::ReadKernelLog(args.kernel_log, since);
  if (!log.ok()) {
    std::fprintf(stderr, "gpuwarden: %s%s\n", args.kernel_log.empty() ? "" : "--kernel-log ",
                 log.error().message.c_str());
    return args.kernel_log.empty() ? kExitNvmlUnavailable : kExitBadInput;
  }

  render::EventsContext context;
  context.sources_used = log->used;
  // Kernel times become wall times only for the running boot: this machine's
  // own logs' boot, or a file's boot the running kernel's log confirms.
  context.running_boot_start_unix_ms = kmsg::RunningBootStartUnixMs(clock);
  if (log->own_logs) {
    context.running_boot_ids.insert(log->running_boot_id);
  } else if (std::any_of(log->events.begin(), log->events.end(), [](const kmsg::KernelEvent& e) {
               return e.monotonic_s && !e.time_unix_ms;
             })) {
    if (auto running = collect::ReadRunningKernelLog(); running.ok()) {
      context.running_boot_ids = kmsg::BootsOfRunningKernel(log->events, *running);
    }
  }
  for (const auto& s : log->sources) {
    if (s.status != "used") context.sources_unavailable.push_back(s.name + ": " + s.reason);
  }
  context.escalations = kmsg::Escalate(log->events);
  // Name GPUs by index when this machine's driver (or --sim) can say which
  // bus id is which; a log from elsewhere keeps its bus ids.
  if (args.kernel_log.empty() || !global.sim_scenario.empty()) {
    auto options = ResolveCollectOptions(global);
    if (options.ok()) {
      options->scan_processes = false;
      const std::vector<Snapshot> snapshot = {collect::Collect(*options, clock)};
      // As `why` places them: the addresses of the boot the snapshot
      // describes may place a GPU NVML lists without one (core/gpu_pci.h).
      const std::vector<kmsg::AgedEvent> ages =
          kmsg::AgeEvents(log->events, collect::EventAgeFor(*log, snapshot.back(), std::nullopt),
                          snapshot.back().time_unix_ms);
      std::vector<std::string> named;
      for (size_t i = 0; i < log->events.size(); ++i) {
        if ((ages[i].age == kmsg::EventAge::kCurrent || ages[i].running_boot) &&
            log->events[i].pci_bus_id) {
          named.push_back(*log->events[i].pci_bus_id);
        }
      }
      context.gpus = MapGpusToPci(snapshot, named);
    }
  }
  if (args.json) {
    render::WriteEventsJson(log->events, context, /*pretty=*/true, [](std::string_view piece) {
      std::fwrite(piece.data(), 1, piece.size(), stdout);
    });
    std::fputc('\n', stdout);
  } else {
    Print(render::RenderEventsText(log->events, context, ShouldUseColor(global.color),
                                   OutputWidth()));
  }
  return kExitOk;
}

}  // namespace gw::cli
