// `gpuwarden cluster`: a Slurm cluster's GPUs per node (total, allocated,
// free, unavailable), who holds them, and the jobs that wait, read from
// Slurm's own clients (docs/slurm.md).
#ifndef GPUWARDEN_CLI_CLUSTER_COMMAND_H_
#define GPUWARDEN_CLI_CLUSTER_COMMAND_H_

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

}  // namespace gw::cli

#endif  // GPUWARDEN_CLI_CLUSTER_COMMAND_H_
