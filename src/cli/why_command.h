// `gpuwarden why`, `gpuwarden health` and `gpuwarden events`: the verdict on
// why the server is busy, the hardware health alone, and the kernel's NVRM
// events explained.
#ifndef GPUWARDEN_CLI_WHY_COMMAND_H_
#define GPUWARDEN_CLI_WHY_COMMAND_H_

#include <string>

#include "cli/global_options.h"
#include "cli/judge.h"
#include "diagnose/health.h"
#include "os/run_command.h"

namespace gw::cli {

struct WhyArgs {
  JudgeArgs judge;
  bool json = false;
  bool verbose = false;
  std::string explain;  // --explain CODE
  bool slurm = false;   // --slurm [JOBID]: a Slurm job's wait instead of this server
  std::string slurm_job;
};
int RunWhy(const GlobalOptions& global, const WhyArgs& args);

struct HealthArgs {
  JudgeArgs judge;
  bool json = false;
  bool verbose = false;
  // --slurm-drain: drain this Slurm node on FAULT (DEGRADED: per
  // on_degraded), resume it once healthy if gpuwarden drained it
  // (slurm/node_drain.h; docs/slurm.md).
  bool slurm_drain = false;
  std::string slurm_node;              // --slurm-node; else $SLURMD_NODENAME; else the host name
  std::string on_degraded = "ignore";  // --on-degraded ignore|drain
  double slurm_timeout_s = 10;
};
// In health_command.cc. With --slurm-drain the Slurm commands run through
// `runner`; kExitSlurmUnavailable when the node could not be read or changed.
int RunHealth(const GlobalOptions& global, const HealthArgs& args, os::CommandRunner& runner);
// 0 healthy, 12 degraded, 13 failed, 14 unknown.
int HealthExitCode(diagnose::Health health);

struct EventsArgs {
  std::string kernel_log;  // --kernel-log FILE
  std::string since;       // --since 2h
  bool json = false;
};
int RunEvents(const GlobalOptions& global, const EventsArgs& args);

}  // namespace gw::cli

#endif  // GPUWARDEN_CLI_WHY_COMMAND_H_
