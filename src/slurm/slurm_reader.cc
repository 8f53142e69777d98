#include "slurm/slurm_reader.h"

#include <vector>

namespace gw::slurm {
namespace {

Result<std::string> JsonOf(os::CommandRunner& runner, const std::string& program,
                           const ReaderOptions& options) {
  os::CommandOptions o;
  o.timeout_ms = options.timeout_ms;
  const std::vector<std::string> argv = {program, "--json"};
  Result<os::CommandOutput> r = runner.Run(argv, o);
  if (!r.ok()) {
    if (r.error().code == "not_found") {
      return MakeError("not_found", program +
                                        ": not found (gpuwarden reads the cluster through "
                                        "Slurm's own clients: install slurm-client)");
    }
    return r.error();
  }
  if (!r->succeeded()) {
    return MakeError("slurm", program + " --json " + r->Describe());
  }
  return std::move(r->out);
}

}  // namespace

Result<SinfoDocument> ReadSinfo(os::CommandRunner& runner, const ReaderOptions& options) {
  Result<std::string> sinfo = JsonOf(runner, options.sinfo, options);
  if (!sinfo.ok()) return sinfo.error();
  Result<SinfoDocument> nodes = ParseSinfoJson(*sinfo);
  if (!nodes.ok()) {
    return MakeError("malformed", options.sinfo + " --json: " + nodes.error().message);
  }
  return nodes;
}

Result<SlurmLook> ReadSlurm(os::CommandRunner& runner, const ReaderOptions& options) {
  SlurmLook look;
  Result<SinfoDocument> nodes = ReadSinfo(runner, options);
  if (!nodes.ok()) return nodes.error();
  look.sinfo = std::move(*nodes);
  Result<std::string> squeue = JsonOf(runner, options.squeue, options);
  if (!squeue.ok()) return squeue.error();
  Result<SqueueDocument> jobs = ParseSqueueJson(*squeue);
  if (!jobs.ok()) {
    return MakeError("malformed", options.squeue + " --json: " + jobs.error().message);
  }
  look.squeue = std::move(*jobs);
  return look;
}

}  // namespace gw::slurm
