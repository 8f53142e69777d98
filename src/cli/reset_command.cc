#include "cli/reset_command.h"

#include <cstdio>

#include "act/reset_plan.h"
#include "cli/exit_codes.h"
#include "cli/terminal.h"
#include "core/text.h"
#include "proc/proc_reader.h"
#include "render/filter.h"
#include "render/reset_plan.h"

namespace gw::cli {

int RunReset(const GlobalOptions& global, const ResetArgs& args) {
  auto judged = Judge(global, args.judge);
  if (!judged.ok()) return JudgeErrorExit(judged.error());
  const Snapshot& latest = judged->history.back();
  // The GPU as status --gpu names it (index, UUID or PCI bus id).
  render::SnapshotFilter filter;
  filter.gpus = {args.gpu};
  auto one = render::FilterSnapshot(latest, filter);
  if (!one.ok() || one->gpus.empty()) {
    std::fprintf(stderr, "gpuwarden: --plan %s: %s\n", SanitizeForTerminal(args.gpu).c_str(),
                 one.ok() ? "no such GPU" : one.error().message.c_str());
    return kExitUsage;
  }
  size_t pos = 0;
  while (pos < latest.gpus.size() && latest.gpus[pos].index != one->gpus.front().index) ++pos;

  // Live, the loaded modules say whether nvidia_drm is in the way; a dump cannot.
  std::optional<std::vector<proc::LoadedModule>> modules;
  if (args.judge.from.empty()) {
    auto read = proc::ProcReader(global.proc_root).ReadModules();
    if (read.ok()) modules = std::move(*read);
  }
  const act::ResetPlan plan = act::PlanReset(latest, pos, judged->diagnosis.findings, modules,
                                             judged->options.proc_shows_every_process);
  Print(args.json ? render::RenderResetPlanJson(plan) : render::RenderResetPlanText(plan));
  return kExitOk;
}

}  // namespace gw::cli
