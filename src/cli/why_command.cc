#include "cli/why_command.h"

#include <fmt/format.h>

#include <cstdio>
#include <map>
#include <set>

#include "cli/exit_codes.h"
#include "cli/terminal.h"
#include "collect/collector.h"
#include "collect/kernel_log.h"
#include "core/clock.h"
#include "core/text.h"
#include "core/units.h"
#include "kmsg/escalation.h"
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
      Snapshot snapshot = collect::Collect(*options, clock);
      for (const Gpu& gpu : snapshot.gpus) {
        if (gpu.pci_bus_id) context.gpu_index_by_bus_id[*gpu.pci_bus_id] = gpu.index;
      }
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
