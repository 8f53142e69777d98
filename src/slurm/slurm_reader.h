// Asking Slurm: runs its own clients (`sinfo --json`, `squeue --json`) through
// an os::CommandRunner and parses what they print (slurm_json.h). The
// clients find the controller as they always do (SLURM_CONF, the default
// /etc/slurm/slurm.conf, DNS SRV records); nothing here knows where it is.
#ifndef GPUWARDEN_SLURM_SLURM_READER_H_
#define GPUWARDEN_SLURM_SLURM_READER_H_

#include <string>

#include "core/result.h"
#include "os/run_command.h"
#include "slurm/slurm_json.h"

namespace gw::slurm {

struct SlurmLook {
  SinfoDocument sinfo;
  SqueueDocument squeue;
};

struct ReaderOptions {
  int timeout_ms = 20000;  // per command
  std::string sinfo = "sinfo";
  std::string squeue = "squeue";
};

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
