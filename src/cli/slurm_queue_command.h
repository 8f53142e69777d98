// The queue's client commands on a Slurm cluster: `run --slurm` submits with
// sbatch (slurm/sbatch.h) and, like the local `run`, waits for the job on a
// terminal, streaming its output and exiting with its status; `queue
// --slurm` lists the cluster's running and waiting jobs with the wait reason
// in words, `jobs --slurm` the caller's, `cancel --slurm` runs scancel.
// Slurm decides who may do what; every Slurm command runs through `runner`
// with a deadline.
#ifndef GPUWARDEN_CLI_SLURM_QUEUE_COMMAND_H_
#define GPUWARDEN_CLI_SLURM_QUEUE_COMMAND_H_

#include "cli/cli_options.h"
#include "cli/queue_command.h"
#include "os/run_command.h"

namespace gw::cli {

// Exit codes: as the local commands (docs/queue.md): run --wait the job's own
// status (1 when it ended without one: cancelled, time limit, node failure);
// kExitUsage for a local-queue option Slurm has no use for (--window,
// --priority, --max-util, --nvlink, --preemptible); kExitUnsatisfiable when
// no node of the cluster can ever hold the request (Slurm's "Requested node
// configuration is not available" too); kExitRefusedByDaemon when Slurm
// refuses (a limit, an account, not your job); kExitSlurmUnavailable when
// Slurm cannot be asked.
int RunSlurmSubmit(const RunArgs& args, os::CommandRunner& runner);
int RunSlurmQueue(const QueueArgs& args, os::CommandRunner& runner);
int RunSlurmJobs(const QueueArgs& args, os::CommandRunner& runner);
int RunSlurmCancel(const QueueArgs& args, os::CommandRunner& runner);

// The one of the above the command line asked for (WantsSlurm(q) is true).
int RunParsedSlurmSubcommand(const QueueCommands& q, os::CommandRunner& runner);

}  // namespace gw::cli

#endif  // GPUWARDEN_CLI_SLURM_QUEUE_COMMAND_H_
