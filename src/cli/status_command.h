// `gpuwarden status`: every GPU and every process that holds one, now.
#ifndef GPUWARDEN_CLI_STATUS_COMMAND_H_
#define GPUWARDEN_CLI_STATUS_COMMAND_H_

#include <string>
#include <vector>

#include "cli/global_options.h"
#include "cli/slurm_node.h"
#include "core/snapshot.h"
#include "os/run_command.h"

namespace gw::cli {

struct StatusArgs {
  bool json = false;
  bool verbose = false;            // -v: every PID a warning is about.
  std::vector<std::string> gpus;   // --gpu: indices, UUIDs or PCI bus ids.
  std::vector<std::string> users;  // --user: names or uids.
  std::string from;                // --from: an `nvidia-smi -q -x` dump.
  SlurmNodeArgs slurm;             // --slurm-node, --no-slurm, --slurm-timeout
};

// Runs the command, prints to stdout/stderr, returns the exit code. Slurm's
// clients run through `runner`.
int RunStatus(const GlobalOptions& global, const StatusArgs& args, os::CommandRunner& runner);

// The exit code a snapshot deserves (see exit_codes.h). Pure.
int StatusExitCode(const Snapshot& snapshot);

}  // namespace gw::cli

#endif  // GPUWARDEN_CLI_STATUS_COMMAND_H_
