#include "slurm/pending_explain.h"

#include <algorithm>
#include <map>
#include <string_view>

#include "core/units.h"
#include "slurm/hostlist.h"

namespace gw::slurm {
namespace {

// Slurm sets a pending job's start to about a year from now when it cannot
// plan (running jobs without a time limit): not an estimate.
constexpr int64_t kNoEstimateAfterS = 300LL * 24 * 3600;

// Nodes named in one list before the rest is counted.
constexpr size_t kListed = 8;

std::string TypeLabel(const std::optional<std::string>& type) {
  return type ? *type : std::string("GPU");
}

std::string Plural(int64_t n, const std::string& what) {
  return std::to_string(n) + " " + what + (n == 1 || what.empty() ? "" : "s");
}

// "1 a100 GPU", "2 GPUs".
std::string Gpus(int64_t n, const std::string& label) {
  return label == "GPU" ? Plural(n, "GPU")
                        : std::to_string(n) + " " + label + (n == 1 ? " GPU" : " GPUs");
}

// "on one node", "on each of 3 nodes".
std::string OnNodes(int64_t n) {
  return n == 1 ? "on one node" : "on each of " + Plural(n, "node");
}

// The GPUs of `type` (any type when nullopt) a node has, allocated and free.
struct TypeOnNode {
  int64_t total = 0;
  int64_t free = 0;
};
TypeOnNode CountType(const NodeView& node, const std::optional<std::string>& type) {
  TypeOnNode out;
  if (!node.gpus) return out;
  for (const GpuCounts& c : *node.gpus) {
    if (type && c.type != *type) continue;
    out.total += c.total;
    out.free += c.free;
  }
  return out;
}

std::string HolderLine(const GpuHolder& h, int64_t now_unix_s) {
  std::string s = "job " + std::to_string(h.job_id) + " " + h.user.value_or("?");
  if (h.job_name) s += " \"" + *h.job_name + "\"";
  s += " " + std::to_string(h.count) + "×" + (h.type.empty() ? "gpu" : h.type);
  if (h.since_unix_s)
    s += " for " + FormatDuration(static_cast<double>(now_unix_s - *h.since_unix_s));
  return s;
}

// Resources: where the GPUs the job asks for per node are, and what must end.
void ExplainGpuResources(const Job& job, const ClusterView& view, int64_t now_unix_s,
                         PendingExplanation* out) {
  const GresRequest* per_node = nullptr;
  for (const GresRequest& r : job.gres_per_node) {
    if (r.name == "gpu" && r.count > 0) per_node = &r;
  }
  const GresRequest* per_job = nullptr;
  for (const GresRequest& r : job.gres_per_job) {
    if (r.name == "gpu" && r.count > 0) per_job = &r;
  }
  if (per_node == nullptr && per_job == nullptr) {
    out->evidence.push_back("It asks for no GPU: the CPUs, memory or nodes it needs are taken.");
    return;
  }
  const std::optional<std::string>& type = per_node ? per_node->type : per_job->type;
  const std::string label = TypeLabel(type);
  const int64_t nodes_needed = per_node ? std::max<int64_t>(1, job.node_count.value_or(1)) : 1;
  const int64_t need_each = per_node ? per_node->count : per_job->count;
  struct Candidate {
    const NodeView* node;
    TypeOnNode gpus;
  };
  std::vector<Candidate> in_service;
  std::vector<std::string> unavailable;
  size_t unavailable_count = 0;
  int64_t free_all = 0;
  int64_t most_on_one = 0;
  int64_t nodes_with_enough = 0;
  for (const NodeView& n : view.nodes) {
    const TypeOnNode t = CountType(n, type);
    if (t.total == 0) continue;
    if (n.availability != NodeAvailability::kTakesWork) {
      if (++unavailable_count <= kListed) {
        unavailable.push_back(n.name + " (" + AvailabilityName(n.availability) +
                              (n.reason ? ": " + *n.reason : std::string()) + ", " +
                              Gpus(t.total, label) + ")");
      }
      continue;
    }
    free_all += t.free;
    most_on_one = std::max(most_on_one, t.free);
    if (t.free >= need_each) ++nodes_with_enough;
    in_service.push_back({&n, t});
  }
  // The nodes with the most free first (the ones closest to taking it), a
  // few named: a cluster of a thousand nodes is summed up, not listed.
  std::stable_sort(
      in_service.begin(), in_service.end(),
      [](const Candidate& a, const Candidate& b) { return a.gpus.free > b.gpus.free; });
  std::string where;
  for (size_t i = 0; i < in_service.size() && i < kListed; ++i) {
    where += (i ? ", " : "") + in_service[i].node->name + " " +
             std::to_string(in_service[i].gpus.free) + " of " +
             std::to_string(in_service[i].gpus.total);
  }
  if (in_service.size() > kListed) {
    where += ", and " + Plural(static_cast<int64_t>(in_service.size() - kListed), "node") +
             " with fewer";
  }
  const int64_t need_all = need_each * nodes_needed;
  if (in_service.empty()) {
    out->evidence.push_back("No node that takes work has any " + label + ".");
  } else if (per_node && free_all >= need_all && nodes_with_enough < nodes_needed) {
    out->evidence.push_back("Fragmentation: it needs " + Gpus(need_each, label) + " " +
                            OnNodes(nodes_needed) + "; " + Gpus(free_all, label) + " " +
                            (free_all == 1 ? "is" : "are") + " free in all, but at most " +
                            std::to_string(most_on_one) + " on any one node (" + where + " free).");
  } else {
    out->evidence.push_back("It needs " +
                            (per_node ? Gpus(need_each, label) + " " + OnNodes(nodes_needed)
                                      : Gpus(need_each, label) + " in all") +
                            "; " + Gpus(free_all, label) + " " + (free_all == 1 ? "is" : "are") +
                            " free (" + where + " free).");
  }
  for (const std::string& u : unavailable) {
    out->evidence.push_back("Not counted, the node does not take work: " + u + ".");
  }
  if (unavailable_count > kListed) {
    out->evidence.push_back("Not counted either: " +
                            Plural(static_cast<int64_t>(unavailable_count - kListed), "more node") +
                            " that do not take work (`sinfo -R`).");
  }
  // Which running jobs must end: on the nodes that could hold the request,
  // those closest to it first (the fewest GPUs to free), a few named.
  size_t could = 0;
  for (const Candidate& c : in_service) {
    const int64_t per_node_need = per_node ? need_each : std::min(need_each, c.gpus.total);
    if (c.gpus.total < per_node_need || c.gpus.free >= per_node_need) continue;
    if (++could > kListed) continue;
    std::string line = c.node->name + ": " + Gpus(per_node_need - c.gpus.free, label) +
                       " more must be freed; held by ";
    bool first = true;
    for (const GpuHolder& h : c.node->holders) {
      if (type && h.type != *type) continue;
      line += (first ? "" : ", ") + HolderLine(h, now_unix_s);
      first = false;
    }
    if (first) line += "no job Slurm lists (a node being set up or cleaned)";
    out->must_end.push_back(line);
  }
  if (could > kListed) {
    out->must_end.push_back("… and " + Plural(static_cast<int64_t>(could - kListed), "more node") +
                            " where more must be freed");
  }
}

void ExplainNodes(const Job& job, const ClusterView& view, PendingExplanation* out) {
  std::vector<std::string> required;
  if (job.required_nodes) {
    if (auto names = ExpandHostlist(*job.required_nodes); names.ok()) required = *names;
  }
  for (const NodeView& n : view.nodes) {
    if (n.availability == NodeAvailability::kTakesWork) continue;
    if (!required.empty() && std::find(required.begin(), required.end(), n.name) == required.end())
      continue;
    std::string line = n.name + " is " + AvailabilityName(n.availability);
    if (n.reason) {
      line += ": " + *n.reason;
      if (n.reason->rfind("gpuwarden", 0) == 0) line += " (drained by gpuwarden's health check)";
    }
    out->evidence.push_back(line + ".");
  }
  if (!required.empty()) {
    std::string names;
    for (size_t i = 0; i < required.size(); ++i) names += (i ? "," : "") + required[i];
    out->evidence.push_back("It asks for these nodes by name (--nodelist): " + names + ".");
  }
}

// `ahead`: the waiting jobs of its partition, highest priority first.
void ExplainPriority(const Job& job, const std::vector<const Job*>& partition_pending,
                     PendingExplanation* out) {
  const int64_t mine = job.priority.value_or(0);
  const auto end =
      std::partition_point(partition_pending.begin(), partition_pending.end(),
                           [mine](const Job* j) { return j->priority.value_or(0) > mine; });
  const size_t ahead = static_cast<size_t>(end - partition_pending.begin());
  if (ahead == 0) {
    out->evidence.push_back("No waiting job of its partition has a higher priority now.");
    return;
  }
  std::string line = Plural(static_cast<int64_t>(ahead), "job") +
                     (ahead == 1 ? " of its partition waits" : " of its partition wait") +
                     " ahead of it with a higher priority: ";
  for (size_t i = 0; i < ahead && i < 5; ++i) {
    const Job& j = *partition_pending[i];
    line += (i ? ", " : "") + std::string("job ") + std::to_string(j.id) + " " +
            j.user.value_or("?") + " (priority " + std::to_string(j.priority.value_or(0)) + ", " +
            DescribeGpuRequest(j) + ")";
  }
  if (ahead > 5) line += ", …";
  out->evidence.push_back(line + "; `sprio -l` shows the factors of each.");
}

}  // namespace

PendingExplainer::PendingExplainer(const ClusterView& view, const std::vector<Job>& all_jobs)
    : view_(view) {
  for (const Job& j : all_jobs) {
    if (j.state == "PENDING") pending_by_partition_[j.partition.value_or("")].push_back(&j);
  }
  for (auto& [partition, jobs] : pending_by_partition_) {
    std::stable_sort(jobs.begin(), jobs.end(), [](const Job* a, const Job* b) {
      return a->priority.value_or(0) > b->priority.value_or(0);
    });
  }
}

PendingExplanation ExplainPendingJob(const Job& job, const ClusterView& view,
                                     const std::vector<Job>& all_jobs, int64_t now_unix_s) {
  return PendingExplainer(view, all_jobs).Explain(job, now_unix_s);
}

PendingExplanation PendingExplainer::Explain(const Job& job, int64_t now_unix_s) const {
  const ClusterView& view = view_;
  PendingExplanation out;
  out.job_id = job.id;
  out.user = job.user;
  out.job_name = job.name;
  out.state = job.state.value_or("?");
  out.code = job.reason.value_or("");
  out.reason = FindPendingReason(out.code);
  out.wants = DescribeGpuRequest(job);
  if (job.node_count && *job.node_count > 1) out.wants += " on " + Plural(*job.node_count, "node");
  if (out.state != "PENDING") return out;

  if (job.start_time && *job.start_time > now_unix_s) {
    if (*job.start_time - now_unix_s < kNoEstimateAfterS) {
      out.expected_start_unix_s = job.start_time;
    } else {
      out.no_estimate_why =
          "Slurm cannot plan it: the jobs it waits for have no time limit, so backfill cannot "
          "tell when they end";
    }
  }
  const WaitKind kind = out.reason ? out.reason->kind : WaitKind::kNotYetLooked;
  if (out.code == "Resources") {
    ExplainGpuResources(job, view, now_unix_s, &out);
  } else if (kind == WaitKind::kNodes || out.code == "PartitionConfig") {
    ExplainNodes(job, view, &out);
  } else if (out.code == "Priority") {
    static const std::vector<const Job*> kNone;
    const auto it = pending_by_partition_.find(job.partition.value_or(""));
    ExplainPriority(job, it == pending_by_partition_.end() ? kNone : it->second, &out);
    ExplainGpuResources(job, view, now_unix_s, &out);
  } else if (out.code == "BeginTime") {
    if (job.restarts && *job.restarts > 0) {
      out.evidence.push_back("It was requeued " + Plural(*job.restarts, "time") +
                             " (preempted by a higher-priority job, or its launch failed); "
                             "Slurm holds a requeued job back before it may start again.");
    }
    if (job.eligible_time && *job.eligible_time > now_unix_s) {
      out.evidence.push_back("It may start in " +
                             FormatDuration(static_cast<double>(*job.eligible_time - now_unix_s)) +
                             ".");
    }
  }
  if (job.state_description) out.evidence.push_back("Slurm says: " + *job.state_description + ".");
  return out;
}

}  // namespace gw::slurm
