// `status` and `why` on a Slurm node: whether to ask Slurm which jobs hold
// this host's GPUs, as which node, and putting the answer in the snapshot
// (Snapshot::slurm; slurm/node_jobs.h reads and maps it).
#ifndef GPUWARDEN_CLI_SLURM_NODE_H_
#define GPUWARDEN_CLI_SLURM_NODE_H_

#include <functional>
#include <optional>
#include <string>

#include <CLI/CLI.hpp>

#include "cli/global_options.h"
#include "core/result.h"
#include "core/snapshot.h"
#include "os/run_command.h"

namespace gw::cli {

struct SlurmNodeArgs {
  std::string node;        // --slurm-node NAME: ask, as this node
  bool off = false;        // --no-slurm: never ask
  double timeout_s = 3.0;  // --slurm-timeout: per Slurm command
};

// --slurm-node, --no-slurm and --slurm-timeout on `cmd`.
void AddSlurmNodeOptions(CLI::App* cmd, SlurmNodeArgs& args);

// The node this host is to Slurm: `explicit_name` when given, else
// $SLURMD_NODENAME (slurmd sets it for its health check and jobs; several
// slurmd can share one host), else the host name up to its first dot. ""
// when none can be found.
std::string SlurmNodeName(const std::string& explicit_name);

// Whether this host is set up as a Slurm host, so that `status` and `why`
// ask Slurm without being told: $SLURM_CONF names a file, or one of
// /etc/slurm/slurm.conf, /etc/slurm-llnl/slurm.conf and /run/slurm/conf/
// slurm.conf (slurmd's cache in a configless cluster) exists. `exists` is
// the file test (a seam for the tests).
bool LooksLikeSlurmHost(const std::function<bool(const std::string&)>& exists);

// Asks Slurm about this host's node and puts the answer in snapshot.slurm,
// mapped onto its GPUs, when asked to (--slurm-node) or when the live host
// looks like a Slurm host (not with --no-slurm, an offline dump or the
// simulated server unless --slurm-node names the node).
//  - Asked by name: a failure leaves snapshot.slurm->unread set and is
//    returned ("slurm"; the message names the node and the command), for
//    exit code 20.
//  - Unasked: a host that is no node of the cluster (or has no Slurm client)
//    gets no Slurm section; any other failure sets unread (the renderers show
//    it) and is not an error.
Status AttachSlurmNode(const SlurmNodeArgs& args, bool offline_or_simulated, Snapshot& snapshot,
                       os::CommandRunner& runner);

}  // namespace gw::cli

#endif  // GPUWARDEN_CLI_SLURM_NODE_H_
