#include "cli/status_command.h"

#include <fmt/format.h>

#include <cstdio>

#include "cli/exit_codes.h"
#include "cli/terminal.h"
#include "collect/collector.h"
#include "core/clock.h"
#include "core/text.h"
#include "import/nvsmi_xml.h"
#include "render/filter.h"
#include "render/status_json.h"
#include "render/status_text.h"

namespace gw::cli {

int StatusExitCode(const Snapshot& snapshot) {
  if (snapshot.timed_out) return kExitDriverTimeout;
  if (snapshot.gpus.empty()) {
    for (const ProbeError& e : snapshot.errors) {
      if (e.source == "nvml") return kExitNvmlUnavailable;
    }
  }
  for (const Gpu& gpu : snapshot.gpus) {
    if (gpu.unreachable) return kExitGpuUnreachable;
  }
  return kExitOk;
}

int RunStatus(const GlobalOptions& global, const StatusArgs& args, os::CommandRunner& runner) {
  Snapshot snapshot;
  if (!args.from.empty()) {
    auto imported = import::ReadNvidiaSmiXmlFile(args.from);
    if (!imported.ok()) {
      std::fprintf(stderr, "gpuwarden: %s\n", imported.error().message.c_str());
      return kExitBadInput;
    }
    snapshot = std::move(imported).value();
  } else {
    auto options = ResolveCollectOptions(global);
    if (!options.ok()) {
      std::fprintf(stderr, "gpuwarden: %s\n", options.error().message.c_str());
      return options.error().code == "bad_input" ? kExitBadInput : kExitNvmlUnavailable;
    }
    RealClock clock;
    snapshot = collect::Collect(*options, clock);
  }
  const Status slurm = AttachSlurmNode(
      args.slurm, !args.from.empty() || !global.sim_scenario.empty(), snapshot, runner);
  if (!slurm.ok()) {
    std::fprintf(stderr, "gpuwarden: %s\n", SanitizeForTerminal(slurm.error().message).c_str());
  }

  render::SnapshotFilter filter{args.gpus, args.users};
  auto filtered = render::FilterSnapshot(snapshot, filter);
  if (!filtered.ok()) {
    std::fprintf(stderr, "gpuwarden: %s\n", filtered.error().message.c_str());
    return kExitUsage;
  }

  if (args.json) {
    std::string out = render::RenderStatusJson(*filtered, /*pretty=*/true);
    std::fwrite(out.data(), 1, out.size(), stdout);
    std::fputc('\n', stdout);
  } else {
    render::TextOptions text;
    text.color = ShouldUseColor(global.color);
    text.width = OutputWidth();
    text.verbose = args.verbose;
    std::string out = render::RenderStatusText(*filtered, text);
    std::fwrite(out.data(), 1, out.size(), stdout);
  }

  int code = StatusExitCode(snapshot);
  if (code == kExitOk && !slurm.ok()) return kExitSlurmUnavailable;
  // A simulator that rejected its scenario fails nvmlInit with UNKNOWN after
  // printing why; that is bad input, not a missing driver.
  if (code == kExitNvmlUnavailable && snapshot.source == SnapshotSource::kSimulated) {
    for (const ProbeError& e : snapshot.errors) {
      if (e.source == "nvml" && e.nvml_return == 999) return kExitBadInput;
    }
  }
  return code;
}

}  // namespace gw::cli
