// `gpuwarden run --slurm`: the local queue's request turned into an sbatch
// command line, and what Slurm says about the job afterwards (scontrol's
// record, how the job ended). Pure; the CLI runs the commands.
//
// The command runs as argv, never through a shell string: sbatch is given a
// two-line wrapper script (kExecScript, `exec "$@"`) and the command and its
// arguments as the script's arguments, which Slurm passes on unchanged.
#ifndef GPUWARDEN_SLURM_SBATCH_H_
#define GPUWARDEN_SLURM_SBATCH_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"
#include "slurm/cluster_view.h"

namespace gw::slurm {

// The batch script: runs its arguments as they are.
inline constexpr std::string_view kExecScript =
    "#!/bin/sh\n# gpuwarden run --slurm: runs its arguments, unparsed.\nexec \"$@\"\n";

struct SlurmSubmit {
  std::vector<std::string> command;     // argv, at least one element
  std::string name;                     // "" = the command's base name
  unsigned gpus = 1;                    // on one node, as the local queue places them
  std::optional<uint64_t> vram_bytes;   // per GPU
  std::optional<int64_t> time_limit_s;  // rounded up to whole minutes
  std::vector<int64_t> after;           // Slurm job ids that must succeed first
  std::string cwd;
  std::string script_path;  // where kExecScript was written
};

struct SbatchPlan {
  std::vector<std::string> argv;  // "sbatch", "--parsable", ..., script, command...
  // What the request became, for the user (stderr): "--vram 45G: asking for
  // l40s GPUs (48 GiB)".
  std::vector<std::string> notes;
};

// The sbatch command line. `view`: the cluster as sinfo/squeue show it, to
// turn --vram into a gres type and to refuse what no node can ever hold;
// nullptr when there is no GPU to place. Errors ("unsatisfiable"), naming the
// request and what the cluster has:
//   --vram bigger than every GPU type of the cluster (with each type's memory),
//   --vram on a cluster whose gres types gpuwarden does not know the memory of,
//   more GPUs of the fitting types than any one node has.
Result<SbatchPlan> PlanSbatch(const SlurmSubmit& submit, const ClusterView* view);

// sbatch --parsable's answer: "123" or "123;cluster". Error "malformed".
Result<int64_t> ParseSbatchJobId(std::string_view out);

// One record of `scontrol -o show job` (Key=Value pairs on one line; a value
// runs to the next " Key="). Keys as Slurm spells them.
std::map<std::string, std::string> ParseScontrolRecord(std::string_view line);

// How a job that ended ended, for `run --slurm --wait`: the exit code (as the
// local queue's run: the job's own status, 128 + its signal, 1 when it ended
// without one: cancelled, time limit, node failure, out of memory...) and one
// line saying so. nullopt while the job has not ended (PENDING, RUNNING,
// COMPLETING, REQUEUED, SUSPENDED, ...). `exit_code`: scontrol's "N:S".
struct SlurmJobEnd {
  int exit_code = 1;
  std::string line;
};
std::optional<SlurmJobEnd> DescribeSlurmJobEnd(int64_t job_id, std::string_view state,
                                               std::string_view exit_code);

}  // namespace gw::slurm

#endif  // GPUWARDEN_SLURM_SBATCH_H_
