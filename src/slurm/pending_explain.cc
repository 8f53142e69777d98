#include "slurm/pending_explain.h"

#include <algorithm>
#include <cstdio>
#include <functional>
#include <map>
#include <string_view>
#include <unordered_map>

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

using FactorsByJob = std::unordered_map<int64_t, std::vector<const PriorityFactors*>>;

// The job's row in its partition, or any of its rows; nullptr when sprio has
// none (or was not read: an empty index).
const PriorityFactors* FactorsOf(const Job& j, const FactorsByJob& index) {
  const auto it = index.find(j.id);
  if (it == index.end() || it->second.empty()) return nullptr;
  for (const PriorityFactors* f : it->second) {
    if (f->partition == j.partition.value_or("")) return f;
  }
  return it->second.front();
}

// "11000 = QOS 10000 + partition 1000" when sprio was read, else the figure.
std::string PriorityWords(const Job& j, const FactorsByJob& index) {
  std::string s = "priority " + std::to_string(j.priority.value_or(0));
  if (const PriorityFactors* f = FactorsOf(j, index)) s += " = " + DescribeFactors(*f);
  return s;
}

// Slurm's order of waiting jobs: the higher priority first, then the earlier
// job.
bool AheadOf(const Job* a, const Job* b) {
  const int64_t pa = a->priority.value_or(0);
  const int64_t pb = b->priority.value_or(0);
  return pa != pb ? pa > pb : a->id < b->id;
}

// `partition_pending`: the waiting jobs of its partition that compete for
// resources, in AheadOf order.
void ExplainPriority(const Job& job, const std::vector<const Job*>& partition_pending,
                     const WaitContext& context, const FactorsByJob& priorities,
                     PendingExplanation* out) {
  if (const PriorityFactors* f = FactorsOf(job, priorities)) out->priority_factors = *f;
  out->evidence.push_back("Its " + PriorityWords(job, priorities) + ".");
  // Ahead: a higher priority, or the same one and submitted earlier; the
  // list is in that order (AheadOf), and the job itself is not ahead of itself.
  const auto end =
      std::lower_bound(partition_pending.begin(), partition_pending.end(), &job, AheadOf);
  const size_t ahead = static_cast<size_t>(end - partition_pending.begin());
  if (ahead == 0) {
    out->evidence.push_back("No waiting job of its partition has a higher priority now.");
  } else {
    std::string line = Plural(static_cast<int64_t>(ahead), "job") +
                       (ahead == 1 ? " of its partition waits" : " of its partition wait") +
                       " ahead of it for resources (a higher priority, or the same and submitted "
                       "earlier): ";
    for (size_t i = 0; i < ahead && i < 5; ++i) {
      const Job& j = *partition_pending[i];
      line += (i ? "; " : "") + std::string("job ") + std::to_string(j.id) + " " +
              j.user.value_or("?") + " (" + PriorityWords(j, priorities) + ", " +
              DescribeGpuRequest(j) + ")";
    }
    if (ahead > 5) line += "; …";
    out->evidence.push_back(line + ".");
  }
  if (context.priorities == nullptr) {
    out->evidence.push_back(
        "The factors behind each priority could not be read" +
        (context.priorities_unread.empty() ? std::string() : ": " + context.priorities_unread) +
        " (`sprio -l`).");
  }
}

// What the limited figure counts: "GPUs", "1 job", "CPU-minutes"; singular
// for a count of one.
std::string LimitUnit(const LimitSpec& spec, const std::string& tres, double n) {
  const bool one = n == 1;
  std::string unit;
  switch (spec.resource) {
    case LimitSpec::kJobs:
    case LimitSpec::kSubmitJobs:
      return one ? "job" : "jobs";
    case LimitSpec::kWall:
      return "minutes of wall time";
    case LimitSpec::kGres:
      unit = tres == "gres/gpu" ? "GPU" : tres;
      break;
    case LimitSpec::kCpu:
      unit = "CPU";
      break;
    case LimitSpec::kNode:
      unit = "node";
      break;
    case LimitSpec::kMemory:
      unit = "MiB of memory";
      break;
    default:
      unit = tres.empty() ? "units" : tres;
      break;
  }
  if (spec.measure != LimitSpec::kAmount) return unit + "-minutes";
  if (!one && (unit == "GPU" || unit == "CPU" || unit == "node")) return unit + "s";
  return unit;
}

// The GPUs (or other GRES of that name) a job asks for in all.
std::optional<int64_t> GresAsked(const Job& job, std::string_view name) {
  int64_t total = 0;
  bool any = false;
  for (const GresRequest& r : job.gres_per_node) {
    if (r.name != name) continue;
    total += r.count * std::max<int64_t>(1, job.node_count.value_or(1));
    any = true;
  }
  for (const GresRequest& r : job.gres_per_job) {
    if (r.name != name) continue;
    total += r.count;
    any = true;
  }
  if (!any) return std::nullopt;
  return total;
}

std::string GresNameOf(const Job& job) {
  for (const GresRequest& r : job.gres_per_node) return r.name;
  for (const GresRequest& r : job.gres_per_job) return r.name;
  return "gpu";
}

bool AccountUnder(const AssocMgrState& state, const std::string& account,
                  const std::string& ancestor) {
  for (const AssocRecord* r : state.Chain(account, "")) {
    if (r->account == ancestor) return true;
  }
  return false;
}

// A QOS or association limit: which one, its value, its usage now and the
// running jobs that use it, from slurmctld's association manager.
void ExplainLimit(const Job& job, const LimitSpec& spec, const std::vector<const Job*>& running,
                  const WaitContext& context, PendingExplanation* out) {
  const LimitLocation at = LocateLimit(spec);
  const std::string tres = at.tres ? TresName(spec.resource, GresNameOf(job)) : "";
  const std::string user = job.user.value_or("");
  const std::string account = job.account.value_or("");
  const std::string qos_name = job.qos.value_or("");
  if (context.limits == nullptr) {
    out->evidence.push_back(
        "The limit and its usage could not be read" +
        (context.limits_unread.empty() ? std::string() : ": " + context.limits_unread) +
        " (`scontrol show assoc_mgr`).");
    return;
  }
  const AssocMgrState& state = *context.limits;
  LimitEvidence ev;
  ev.key = at.key;
  ev.tres = tres;
  const LimitValue* value = nullptr;
  auto pick = [&](const LimitSet& set) -> const LimitValue* {
    if (!at.tres) return set.Scalar(at.key);
    if (!tres.empty()) return set.Tres(at.key, tres);
    // A license or burst buffer: the first entry with a limit set.
    auto it = set.tres.find(at.key);
    if (it == set.tres.end()) return nullptr;
    for (const auto& [name, v] : it->second) {
      if (v.limit) {
        ev.tres = name;
        return &v;
      }
    }
    return nullptr;
  };
  // Which running jobs count against it.
  std::function<bool(const Job&)> counts;
  if (spec.scope == LimitSpec::kAssociation) {
    const AssocRecord* record = nullptr;
    for (const AssocRecord* r : state.Chain(account, user)) {
      const LimitValue* v = pick(r->limits);
      if (v != nullptr && v->limit) {
        record = r;
        value = v;
        break;
      }
    }
    if (record == nullptr) {
      out->evidence.push_back("slurmctld shows no " + at.key + (tres.empty() ? "" : " " + tres) +
                              " limit on account " + account + " or above it for user " + user +
                              " now: it may have been raised since the job was last looked at.");
      return;
    }
    ev.holder = record->user ? "account " + record->account + " for user " + *record->user
                             : "account " + record->account;
    counts = [&state, record](const Job& j) {
      if (record->user) return j.account == record->account && j.user == record->user;
      return j.account && AccountUnder(state, *j.account, record->account);
    };
  } else {
    const QosRecord* qos = state.FindQos(qos_name);
    if (qos == nullptr) {
      out->evidence.push_back("slurmctld lists no QOS \"" + qos_name + "\".");
      return;
    }
    if (at.block == LimitLocation::kPerUser) {
      std::optional<int64_t> uid;
      auto chain = state.Chain(account, user);
      if (!chain.empty() && chain.front()->user) uid = chain.front()->uid;
      ev.holder = "QOS " + qos_name + " for user " + user;
      if (uid) {
        if (auto it = qos->users.find(*uid); it != qos->users.end()) value = pick(it->second);
      }
      counts = [qos_name, user](const Job& j) { return j.qos == qos_name && j.user == user; };
    } else if (at.block == LimitLocation::kPerAccount) {
      ev.holder = "QOS " + qos_name + " for account " + account;
      if (auto it = qos->accounts.find(account); it != qos->accounts.end()) {
        value = pick(it->second);
      }
      counts = [qos_name, account](const Job& j) {
        return j.qos == qos_name && j.account == account;
      };
    } else {
      ev.holder = "QOS " + qos_name;
      value = pick(qos->limits);
      counts = [qos_name](const Job& j) { return j.qos == qos_name; };
    }
  }
  if (value != nullptr) {
    ev.limit = value->limit;
    ev.used = value->used;
  }
  if (spec.resource == LimitSpec::kJobs || spec.resource == LimitSpec::kSubmitJobs) {
    ev.asks = 1;
  } else if (spec.resource == LimitSpec::kGres && spec.measure == LimitSpec::kAmount) {
    if (auto n = GresAsked(job, GresNameOf(job))) ev.asks = static_cast<double>(*n);
  }
  std::string jobs_line;
  for (const Job* running_job : running) {
    const Job& j = *running_job;
    if (j.id == job.id || !counts(j)) continue;
    ev.running_jobs.push_back(j.id);
    if (ev.running_jobs.size() <= 5) {
      jobs_line += (ev.running_jobs.size() > 1 ? "; " : "") + std::string("job ") +
                   std::to_string(j.id) + " " + j.user.value_or("?") + " (" +
                   DescribeGpuRequest(j) + ")";
    }
  }
  if (ev.running_jobs.size() > 5) jobs_line += "; …";

  auto amount = [&](double n) { return FormatFigure(n) + " " + LimitUnit(spec, ev.tres, n); };
  const std::string named = at.key + (ev.tres.empty() ? "" : " " + ev.tres);
  if (!ev.limit) {
    // A per-user or per-account block appears once the user or account has
    // run under the QOS; with no usage the limit is not shown either.
    if (spec.kind == LimitSpec::kMax && at.block != LimitLocation::kRecord && !ev.used) {
      out->evidence.push_back(ev.holder + ": slurmctld counts no usage yet (" + named +
                              "), so this job alone asks for more than the limit allows: it "
                              "cannot start as submitted.");
    } else {
      out->evidence.push_back("slurmctld shows no " + named + " limit on " + ev.holder +
                              " now: it may have been raised since the job was last looked at.");
    }
    out->limit = std::move(ev);
    return;
  }
  std::string line = ev.holder + " allows " + amount(*ev.limit) + " (" + named + "=" +
                     FormatFigure(*ev.limit) + ")";
  if (ev.used) line += "; " + FormatFigure(*ev.used) + " in use now";
  if (!ev.running_jobs.empty()) {
    line += " by " + Plural(static_cast<int64_t>(ev.running_jobs.size()), "running job") + ": " +
            jobs_line;
  }
  if (ev.asks) line += "; this job asks for " + FormatFigure(*ev.asks) + " more";
  out->evidence.push_back(line + ".");
  if (ev.asks && *ev.asks > *ev.limit) {
    out->evidence.push_back(
        "This job alone asks for more than the limit: it cannot start as "
        "submitted.");
  } else if (ev.asks && ev.used && *ev.used + *ev.asks <= *ev.limit) {
    out->evidence.push_back(
        "The usage is under the limit again: Slurm starts it at its next "
        "scheduling pass if nothing else stops it.");
  } else if (ev.asks && ev.used) {
    const double over = *ev.used + *ev.asks - *ev.limit;
    out->evidence.push_back("It can start once " + amount(over) + " of these " +
                            (over == 1 ? "is" : "are") + " released.");
  }
  out->limit = std::move(ev);
}

}  // namespace

PendingExplainer::PendingExplainer(const ClusterView& view, const std::vector<Job>& all_jobs,
                                   WaitContext context)
    : view_(view), context_(std::move(context)) {
  for (const Job& j : all_jobs) {
    if (j.state == "RUNNING") running_.push_back(&j);
    if (j.state != "PENDING") continue;
    // Only jobs that compete for resources are ahead of a job waiting on
    // Priority: one held back by a limit, a hold, a dependency or a begin
    // time is skipped by the scheduler.
    const PendingReason* r = FindPendingReason(j.reason.value_or(""));
    const WaitKind kind = r ? r->kind : WaitKind::kNotYetLooked;
    if (kind == WaitKind::kResources || kind == WaitKind::kPriority ||
        kind == WaitKind::kNotYetLooked) {
      competing_by_partition_[j.partition.value_or("")].push_back(&j);
    }
  }
  for (auto& [partition, jobs] : competing_by_partition_) {
    std::sort(jobs.begin(), jobs.end(), AheadOf);
  }
  if (context_.priorities != nullptr) {
    for (const PriorityFactors& f : *context_.priorities) factors_by_job_[f.job_id].push_back(&f);
  }
}

PendingExplanation ExplainPendingJob(const Job& job, const ClusterView& view,
                                     const std::vector<Job>& all_jobs, int64_t now_unix_s,
                                     WaitContext context) {
  return PendingExplainer(view, all_jobs, std::move(context)).Explain(job, now_unix_s);
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
          "the jobs it waits for have no time limit, so backfill cannot "
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
    const auto it = competing_by_partition_.find(job.partition.value_or(""));
    ExplainPriority(job, it == competing_by_partition_.end() ? kNone : it->second, context_,
                    factors_by_job_, &out);
    ExplainGpuResources(job, view, now_unix_s, &out);
  } else if (out.reason && out.reason->limit) {
    ExplainLimit(job, *out.reason->limit, running_, context_, &out);
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
