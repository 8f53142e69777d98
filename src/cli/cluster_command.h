// `gpuwarden cluster`: a Slurm cluster's GPUs per node (total, allocated,
// free, unavailable), who holds them, and the jobs that wait, read from
// Slurm's own clients (docs/slurm.md).
#ifndef GPUWARDEN_CLI_CLUSTER_COMMAND_H_
#define GPUWARDEN_CLI_CLUSTER_COMMAND_H_

#include <string>

#include "cli/global_options.h"
#include "os/run_command.h"

namespace gw::cli {

struct ClusterArgs {
  bool json = false;
  double slurm_timeout_s = 20;  // per Slurm command
};

// 0 when the cluster was read; kExitSlurmUnavailable when Slurm could not be
// asked (its clients missing, the controller not answering, output not
// understood), with one line on stderr naming the command and the problem.
int RunCluster(const GlobalOptions& global, const ClusterArgs& args, os::CommandRunner& runner);

struct SlurmWhyArgs {
  std::string job;  // "" = every pending job of the caller
  bool json = false;
  double slurm_timeout_s = 20;
};

// `gpuwarden why --slurm [JOBID]`: why the job (or each of the caller's
// pending jobs) waits. 0 when explained (also when the job does not wait,
// which is said); kExitUsage for a job id that is not a number or not in
// squeue; kExitSlurmUnavailable as for RunCluster.
int RunSlurmWhy(const SlurmWhyArgs& args, os::CommandRunner& runner);

}  // namespace gw::cli

#endif  // GPUWARDEN_CLI_CLUSTER_COMMAND_H_
