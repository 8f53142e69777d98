// What `gpuwarden cluster` shows: Slurm's nodes with their GPUs by type
// (total, allocated, free, unavailable), who holds each allocated GPU, and
// the jobs that wait with Slurm's reason. Judged from Slurm's own documents
// (slurm_json.h); pure.
//
// Words mean what they say: a GPU is "free" only on a node that can take
// work (not drained, draining, down, failing, powered down or not
// responding); the idle GPUs of such a node are "unavailable", never free.
#ifndef GPUWARDEN_SLURM_CLUSTER_VIEW_H_
#define GPUWARDEN_SLURM_CLUSTER_VIEW_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "slurm/slurm_json.h"

namespace gw::slurm {

// One GPU type on a node, or summed over the cluster.
struct GpuCounts {
  std::string type;  // "a100"; "" for untyped GPUs
  int64_t total = 0;
  int64_t allocated = 0;
  int64_t free = 0;         // idle on a node that takes work
  int64_t unavailable = 0;  // idle on a node that does not
};

// GPUs a running job holds on one node.
struct GpuHolder {
  int64_t job_id = 0;
  std::optional<std::string> user;
  std::optional<std::string> job_name;
  std::string type;  // "" untyped
  int64_t count = 0;
  std::optional<std::string> indexes;   // "0-1"
  std::optional<int64_t> since_unix_s;  // the job's start
};

// How a node stands for new work, from its state and flags.
enum class NodeAvailability {
  kTakesWork,    // idle, mixed, allocated, completing
  kDraining,     // DRAIN with jobs still on it: they run, nothing new starts
  kDrained,      // DRAIN and no job
  kDown,         // DOWN, FAIL, NOT_RESPONDING, INVALID_REG
  kPoweredDown,  // POWERED_DOWN / POWERING_DOWN / cloud node asleep
  kUnknown,      // no state given, or one not known here
};
const char* AvailabilityName(NodeAvailability a);  // "takes work", "draining", ...

struct NodeView {
  std::string name;
  std::string state;  // Slurm's words, lower case: "mixed", "idle+drain"
  NodeAvailability availability = NodeAvailability::kUnknown;
  std::optional<std::string> reason;  // why drained or down (Slurm's Reason=)
  // GPU counts by type, in the order of the node's gres; empty when the node
  // has no GPUs; nullopt when sinfo said nothing of its gres.
  std::optional<std::vector<GpuCounts>> gpus;
  std::vector<GpuHolder> holders;  // by job id
  std::vector<std::string> partitions;
};

struct PendingJobView {
  int64_t job_id = 0;
  std::optional<std::string> user;
  std::optional<std::string> job_name;
  std::optional<std::string> partition;
  std::optional<std::string> reason;       // Slurm's code, verbatim: "Resources"
  std::optional<std::string> description;  // Slurm's state_description, when set
  // "2 gpu:a100 per node", "4 gpu in all", "no GPU".
  std::string wants;
  std::optional<int64_t> submit_unix_s;
  std::optional<int64_t> expected_start_unix_s;
  std::optional<int64_t> priority;
};

struct ClusterView {
  SlurmMeta meta;
  std::vector<NodeView> nodes;          // by name, as sinfo lists them
  std::vector<GpuCounts> gpu_totals;    // by type, over every node
  std::vector<PendingJobView> pending;  // by priority (highest first), then id
  // What could not be read and was left out ("job 12: gres_detail ...").
  std::vector<std::string> warnings;
};

// Jobs whose state is RUNNING (or SUSPENDED: they keep their GPUs) give the
// holders; PENDING jobs the pending list.
ClusterView BuildClusterView(const SinfoDocument& sinfo, const SqueueDocument& squeue);

NodeAvailability AvailabilityOf(const Node& node);

// "2 gpu:a100 per node", "4 gpu in all", "1 gpu per node and 2 gpu:l40s in
// all", "no GPU".
std::string DescribeGpuRequest(const Job& job);

}  // namespace gw::slurm

#endif  // GPUWARDEN_SLURM_CLUSTER_VIEW_H_
