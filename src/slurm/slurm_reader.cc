#include "slurm/slurm_reader.h"

#include <vector>

#include "slurm/pending_reasons.h"

namespace gw::slurm {

Result<std::string> OutputOf(os::CommandRunner& runner, const std::vector<std::string>& argv,
                             const std::string& label, const ReaderOptions& options) {
  os::CommandOptions o;
  o.timeout_ms = options.timeout_ms;
  o.env = options.env;
  Result<os::CommandOutput> r = runner.Run(argv, o);
  if (!r.ok()) {
    if (r.error().code == "not_found") {
      return MakeError("not_found", argv[0] +
                                        ": not found (gpuwarden reads the cluster through "
                                        "Slurm's own clients: install slurm-client)");
    }
    return r.error();
  }
  if (!r->succeeded()) return MakeError("slurm", label + " " + r->Describe());
  return std::move(r->out);
}

namespace {

Result<std::string> JsonOf(os::CommandRunner& runner, const std::string& program,
                           const ReaderOptions& options) {
  return OutputOf(runner, {program, "--json"}, program + " --json", options);
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

WaitDetails ReadWaitDetails(os::CommandRunner& runner, const std::vector<Job>& jobs,
                            const ReaderOptions& options) {
  bool priority = false;
  bool limit = false;
  for (const Job& j : jobs) {
    if (j.state != "PENDING" || !j.reason) continue;
    if (*j.reason == "Priority") priority = true;
    const PendingReason* r = FindPendingReason(*j.reason);
    if (r != nullptr && r->limit) limit = true;
  }
  // Runs a client and parses its output into *value, or says why not in
  // *unread.
  auto read = [&](const std::vector<std::string>& argv, const std::string& label, auto parse,
                  auto* value, std::string* unread) {
    Result<std::string> out = OutputOf(runner, argv, label, options);
    if (!out.ok()) {
      *unread = out.error().message;
      return;
    }
    auto parsed = parse(*out);
    if (!parsed.ok()) {
      *unread = parsed.error().message;
      return;
    }
    *value = std::move(*parsed);
  };
  WaitDetails details;
  if (priority) {
    read({options.sprio, "-h", "-o", std::string(kSprioFormat)}, options.sprio, ParseSprio,
         &details.priorities, &details.priorities_unread);
  }
  if (limit) {
    read({options.scontrol, "-o", "show", "assoc_mgr", "flags=assoc,qos"},
         options.scontrol + " show assoc_mgr", ParseAssocMgr, &details.limits,
         &details.limits_unread);
  }
  return details;
}

}  // namespace gw::slurm
