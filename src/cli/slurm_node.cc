#include "cli/slurm_node.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>

#include "cli/cli_options.h"
#include "slurm/node_jobs.h"

namespace gw::cli {

void AddSlurmNodeOptions(CLI::App* cmd, SlurmNodeArgs& args) {
  cmd->add_option("--slurm-node", args.node,
                  "Name the Slurm jobs that hold this node's GPUs, as node NAME (default on a "
                  "Slurm host: $SLURMD_NODENAME, else the host name)")
      ->type_name("NAME")
      ->check(NonEmpty());
  cmd->add_flag("--no-slurm", args.off, "Do not ask Slurm, even on a Slurm host")
      ->excludes("--slurm-node");
  cmd->add_option("--slurm-timeout", args.timeout_s, "Deadline for each Slurm command")
      ->type_name("DURATION")
      ->transform(Seconds(0.1, 600.0))
      ->capture_default_str();
}

std::string SlurmNodeName(const std::string& explicit_name) {
  if (!explicit_name.empty()) return explicit_name;
  if (const char* n = std::getenv("SLURMD_NODENAME"); n != nullptr && *n != '\0') return n;
  char host[256] = {};
  if (gethostname(host, sizeof host - 1) != 0) return "";
  std::string name = host;
  return name.substr(0, name.find('.'));
}

bool LooksLikeSlurmHost(const std::function<bool(const std::string&)>& exists) {
  if (const char* conf = std::getenv("SLURM_CONF"); conf != nullptr && *conf != '\0') {
    return exists(conf);
  }
  for (const char* path :
       {"/etc/slurm/slurm.conf", "/etc/slurm-llnl/slurm.conf", "/run/slurm/conf/slurm.conf"}) {
    if (exists(path)) return true;
  }
  return false;
}

Status AttachSlurmNode(const SlurmNodeArgs& args, bool offline_or_simulated, Snapshot& snapshot,
                       os::CommandRunner& runner) {
  const bool asked = !args.node.empty();
  if (args.off) return Status::Ok();
  if (!asked) {
    if (offline_or_simulated) return Status::Ok();
    const bool host = LooksLikeSlurmHost([](const std::string& path) {
      struct stat st;
      return stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
    });
    if (!host) return Status::Ok();
  }
  const std::string node = SlurmNodeName(args.node);
  if (node.empty()) return Status::Ok();
  slurm::NodeReadOptions options;
  options.reader.timeout_ms = static_cast<int>(args.timeout_s * 1000);
  Result<slurm::NodeJobsLook> look = slurm::ReadNodeJobs(runner, node, options);
  if (look.ok()) {
    snapshot.slurm = slurm::MapNodeJobs(*look, snapshot);
    return Status::Ok();
  }
  const Error& e = look.error();
  if (!asked && (e.code == "not_a_node" || e.code == "not_found")) return Status::Ok();
  SlurmNode unread;
  unread.name = node;
  unread.unread = e.message;
  snapshot.slurm = std::move(unread);
  if (!asked) return Status::Ok();
  return MakeError("slurm", "--slurm-node " + node + ": " + e.message);
}

}  // namespace gw::cli
