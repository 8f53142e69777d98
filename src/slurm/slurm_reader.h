// Asking Slurm: runs its own clients (`sinfo --json`, `squeue --json`) through
// an os::CommandRunner and parses what they print (slurm_json.h). The
// clients find the controller as they always do (SLURM_CONF, the default
// /etc/slurm/slurm.conf, DNS SRV records); nothing here knows where it is.
#ifndef GPUWARDEN_SLURM_SLURM_READER_H_
#define GPUWARDEN_SLURM_SLURM_READER_H_

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/result.h"
#include "os/run_command.h"
#include "slurm/assoc_mgr.h"
#include "slurm/slurm_json.h"
#include "slurm/sprio.h"

namespace gw::slurm {

struct SlurmLook {
  SinfoDocument sinfo;
  SqueueDocument squeue;
};

struct ReaderOptions {
  int timeout_ms = 20000;  // per command
  std::string sinfo = "sinfo";
  std::string squeue = "squeue";
  std::string sprio = "sprio";
  std::string scontrol = "scontrol";
  // Set in (or, nullopt, removed from) each client's environment:
  // SLURM_TIME_FORMAT for sacct's times.
  std::map<std::string, std::optional<std::string>> env;
};

// What explaining the waits needs besides the two documents. Each is read
// only when a pending job of `jobs` waits for it: sprio's factors for
// Priority, the association manager (`scontrol -o show assoc_mgr
// flags=assoc,qos`) for a QOS or association limit. A failure is not fatal:
// the value stays nullopt and *_unread says what went wrong ("sprio: not
// running priority/multifactor ...") for the evidence.
struct WaitDetails {
  std::optional<std::vector<PriorityFactors>> priorities;
  std::optional<AssocMgrState> limits;
  std::string priorities_unread;
  std::string limits_unread;
};
WaitDetails ReadWaitDetails(os::CommandRunner& runner, const std::vector<Job>& jobs,
                            const ReaderOptions& options = {});

// What a Slurm client printed on stdout, or one error naming it (`label`
// is the command as the message shows it, "squeue --json"):
//   "not_found"  "squeue: not found (... install slurm-client)"
//   "slurm"      "<label> exited with status 1: <its first line>"
//   "timeout"    it did not answer within options.timeout_ms
Result<std::string> OutputOf(os::CommandRunner& runner, const std::vector<std::string>& argv,
                             const std::string& label, const ReaderOptions& options);

// Both documents, or the first failure, naming the command:
//   "not_found"  "sinfo: not found (...)"
//   "slurm"      it ran and failed: "squeue --json exited with status 1: <its first line>"
//   "timeout"    it did not answer in time
//   "malformed"  its output is not what the parsers read (their message)
Result<SlurmLook> ReadSlurm(os::CommandRunner& runner, const ReaderOptions& options = {});

// `sinfo --json` alone, with the same errors.
Result<SinfoDocument> ReadSinfo(os::CommandRunner& runner, const ReaderOptions& options = {});

}  // namespace gw::slurm

#endif  // GPUWARDEN_SLURM_SLURM_READER_H_
