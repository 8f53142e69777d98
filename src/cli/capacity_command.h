// `gpuwarden capacity`: how saturated the GPUs were over a window, how long
// jobs waited, what sat idle, the peak hours and what to do about it
// (docs/capacity.md), from gpuwardend's history and queue or, with --slurm,
// from Slurm's accounting (sacct) and sinfo.
#ifndef GPUWARDEN_CLI_CAPACITY_COMMAND_H_
#define GPUWARDEN_CLI_CAPACITY_COMMAND_H_

#include <string>

#include "os/run_command.h"

namespace gw::cli {

struct CapacityArgs {
  std::string socket;
  std::string since = "30d";
  bool slurm = false;
  bool json = false;
  double slurm_timeout_s = 60;  // per Slurm command; sacct over months is slow
};

// 0 with the report; kExitUsage for a bad --since; kExitNoDaemon when
// gpuwardend cannot be reached; kExitSlurmUnavailable when Slurm could not
// be asked (one line on stderr naming the command and the problem).
int RunCapacity(const CapacityArgs& args, os::CommandRunner& runner);

}  // namespace gw::cli

#endif  // GPUWARDEN_CLI_CAPACITY_COMMAND_H_
