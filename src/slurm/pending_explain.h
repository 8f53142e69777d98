// `gpuwarden why --slurm`: why one pending Slurm job waits, in plain words,
// with the evidence from the cluster view (slurm/cluster_view.h) and the
// catalog's meaning and next step (slurm/pending_reasons.h). Pure.
#ifndef GPUWARDEN_SLURM_PENDING_EXPLAIN_H_
#define GPUWARDEN_SLURM_PENDING_EXPLAIN_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "slurm/assoc_mgr.h"
#include "slurm/cluster_view.h"
#include "slurm/pending_reasons.h"
#include "slurm/slurm_json.h"
#include "slurm/sprio.h"

namespace gw::slurm {

// A limit reason's limit as slurmctld counts it (slurm/assoc_mgr.h).
struct LimitEvidence {
  std::string holder;  // "QOS gpu2 for user root", "account lab"
  std::string key;     // the association manager's: "MaxTRESPU", "GrpJobs"
  std::string tres;    // "gres/gpu"; "" for a count of jobs or wall time
  std::optional<double> limit;
  std::optional<double> used;
  std::optional<double> asks;         // what this job would add, when known
  std::vector<int64_t> running_jobs;  // the running jobs counted against it
};

// What `why --slurm` reads besides sinfo and squeue, when a waiting job needs
// it: sprio for Priority, the association manager for QOS and association
// limits. nullptr when not read; then *_unread says why when it was tried.
struct WaitContext {
  const std::vector<PriorityFactors>* priorities = nullptr;
  const AssocMgrState* limits = nullptr;
  std::string priorities_unread;
  std::string limits_unread;
};

struct PendingExplanation {
  int64_t job_id = 0;
  std::optional<std::string> user;
  std::optional<std::string> job_name;
  std::string state;  // "PENDING", or the state of a job that does not wait
  // Slurm's code verbatim; "" when it gave none.
  std::string code;
  // The catalog's entry; nullptr for a code of a later Slurm (shown verbatim).
  const PendingReason* reason = nullptr;
  std::string wants;  // DescribeGpuRequest, plus the node count when it matters
  // Facts that back the reason: per-node free GPUs of the type asked for and
  // whether the free ones are spread (fragmentation), the unavailable nodes
  // with their reasons, jobs ahead in priority, the requeue count.
  std::vector<std::string> evidence;
  // Running jobs that must end (or free GPUs) for it to start, one line per
  // node that could take it: "n1: job 5 root \"hold-one\" 1×a100 for 3m".
  std::vector<std::string> must_end;
  // When Slurm expects it to start; nullopt when Slurm has no estimate (then
  // no_estimate_why says why, when known).
  std::optional<int64_t> expected_start_unix_s;
  std::string no_estimate_why;
  // Priority: its own factors (sprio), when read.
  std::optional<PriorityFactors> priority_factors;
  // A QOS or association limit: the limit, its usage and who uses it.
  std::optional<LimitEvidence> limit;
};

// Explains the pending jobs of one look at the cluster. Built once per look
// (it sorts the waiting jobs of each partition by priority), then asked per
// job: 10,000 jobs on 1,000 nodes take well under a second
// (bench/slurm_explain_bench.cc). `view` and `all_jobs` (the whole squeue
// document) must outlive it.
class PendingExplainer {
 public:
  PendingExplainer(const ClusterView& view, const std::vector<Job>& all_jobs,
                   WaitContext context = {});
  // `now_unix_s` dates ages and tells a real estimate from Slurm's "a year
  // from now" placeholder.
  PendingExplanation Explain(const Job& job, int64_t now_unix_s) const;

 private:
  const ClusterView& view_;
  WaitContext context_;
  // The waiting jobs that compete for resources, by partition, in Slurm's
  // order (the higher priority, then the earlier job, first).
  std::map<std::string, std::vector<const Job*>> competing_by_partition_;
  std::vector<const Job*> running_;
  // sprio's rows by job id (a job of several partitions has several).
  std::unordered_map<int64_t, std::vector<const PriorityFactors*>> factors_by_job_;
};

// One job: PendingExplainer(view, all_jobs, context).Explain(job, now_unix_s).
PendingExplanation ExplainPendingJob(const Job& job, const ClusterView& view,
                                     const std::vector<Job>& all_jobs, int64_t now_unix_s,
                                     WaitContext context = {});

}  // namespace gw::slurm

#endif  // GPUWARDEN_SLURM_PENDING_EXPLAIN_H_
