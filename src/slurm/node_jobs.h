// This host as a Slurm node: the jobs running on it and which of its GPUs
// each was given, for `status` and `why` on a Slurm node.
//
// Read from Slurm's own programs:
//   scontrol -o show node NODE   that NODE is a node of the cluster at all
//   squeue --json -w NODE -t ... the jobs and, per node, what each holds there
//                                (gres_detail "gpu:a100:2(IDX:0-1)"); 22.05
//                                ignores the filters, so they are applied here
//   slurmd -G -N NODE            slurmd's own list of the node's generic
//                                resources: which device file each GRES index
//                                (IDX) is, from gres.conf or AutoDetect
// and then matched onto a Snapshot's GPUs, purely: GRES index -> device file
// -> minor number -> the GPU with that minor number.
#ifndef GPUWARDEN_SLURM_NODE_JOBS_H_
#define GPUWARDEN_SLURM_NODE_JOBS_H_

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"
#include "core/snapshot.h"
#include "os/run_command.h"
#include "slurm/slurm_json.h"
#include "slurm/slurm_reader.h"

namespace gw::slurm {

// One device of slurmd's GRES list.
struct GresDevice {
  std::string name;                 // "gpu"
  std::optional<std::string> type;  // "a100"; nullopt when untyped
  unsigned index = 0;               // Slurm's GRES index (IDX)
  std::string file;                 // "/dev/nvidia3"
};

// The text `slurmd -G` prints (on stderr, each line after a "slurmd: "
// prefix): one record per device or per range of devices,
//   Gres Name=gpu Type=a100 Count=2 Index=0 ID=7696487 File=/dev/nvidia[0-1] ...
// A range is expanded. A device's GRES index is its place among the devices
// of its name in printed order (Index= is only the file's own number). Lines that are not
// records are skipped; a record without a number where one belongs, or whose
// files cannot be expanded, is an error ("malformed") naming the line.
Result<std::vector<GresDevice>> ParseSlurmdGres(std::string_view text);

// A GRES index list as Slurm prints it after IDX: "0-1,3" -> {0, 1, 3}.
// Errors ("malformed") name the list.
Result<std::vector<unsigned>> ParseGresIndexes(std::string_view list);

// The states in which a job holds its resources on a node.
bool HoldsNodeResources(const Job& job);

// What Slurm says about one node.
struct NodeJobsLook {
  std::string node;
  std::vector<Job> jobs;  // those holding resources on `node`, as squeue gave them
  // slurmd's GRES list; nullopt when it could not be read (devices_unread
  // says why), or was not needed (no job holds a GPU index here).
  std::optional<std::vector<GresDevice>> devices;
  std::string devices_unread;
};

struct NodeReadOptions {
  ReaderOptions reader;
  std::string slurmd = "slurmd";  // Looked up in PATH, then /usr/sbin.
};

// Errors:
//   "not_a_node"  scontrol does not know NODE ("scontrol: node n9 not found")
//   "not_found", "slurm", "timeout", "malformed": as ReadSlurm's, naming the command
Result<NodeJobsLook> ReadNodeJobs(os::CommandRunner& runner, const std::string& node,
                                  const NodeReadOptions& options = {});

// The look onto `snapshot`'s GPUs: each job's GRES indexes on the node, and
// the GPU each is. With slurmd's list, an index is the GPU whose minor number
// is the one of its device file (/dev/nvidia<minor>); without it, index k is
// taken as the k-th of the snapshot's GPUs by minor number (the order slurmd
// gives devices it finds), and gpu_map says so. An index that matches no GPU
// here is left out of SlurmJob::gpus and named in notes.
SlurmNode MapNodeJobs(const NodeJobsLook& look, const Snapshot& snapshot);

}  // namespace gw::slurm

#endif  // GPUWARDEN_SLURM_NODE_JOBS_H_
