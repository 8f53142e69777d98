// `gpuwarden clean` (reclaim what the diagnosis found reclaimable) and
// `gpuwarden kill PID...` (stop named processes) — one safe path: plan, show,
// confirm, pin, signal, escalate, verify, audit. See docs/cleanup.md.
#ifndef GPUWARDEN_CLI_CLEAN_COMMAND_H_
#define GPUWARDEN_CLI_CLEAN_COMMAND_H_

#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

#include "cli/global_options.h"
#include "cli/judge.h"
#include "cli/stop_path.h"

namespace gw::cli {

struct CleanArgs {
  bool kill = false;               // `kill`: act on `pids` as named.
  std::vector<pid_t> pids;         // kill: PID...; clean: --pid.
  std::vector<unsigned> gpus;      // clean: --gpu.
  std::string idle_for;            // clean: --idle-for DURATION (idle time).
  std::string min_age;             // clean: --min-age DURATION (run time).
  std::string min_vram;            // clean: --min-vram SIZE.
  std::vector<std::string> users;  // --user NAME|UID (root only).
  bool all_users = false;
  bool tree = false;     // --tree
  bool no_tree = false;  // --no-tree
  StopFlags stop;        // --signal, --grace, --settle, --protect, --audit-log.
  bool dry_run = false;
  bool yes = false;
  bool json = false;
  JudgeArgs judge;  // clean: --window / --now.
};

int RunClean(const GlobalOptions& global, const CleanArgs& args);

}  // namespace gw::cli

#endif  // GPUWARDEN_CLI_CLEAN_COMMAND_H_
