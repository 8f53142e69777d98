#include "slurm/cluster_view.h"

#include <algorithm>
#include <cctype>
#include <map>

#include "slurm/hostlist.h"

namespace gw::slurm {
namespace {

std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

bool IsGpu(const std::string& gres_name) { return gres_name == "gpu"; }

std::string TypeOf(const std::optional<std::string>& type) { return type.value_or(""); }

// Index of `type` in counts, added at the end when new.
GpuCounts& CountsFor(std::vector<GpuCounts>& counts, const std::string& type) {
  for (GpuCounts& c : counts) {
    if (c.type == type) return c;
  }
  counts.push_back(GpuCounts{type});
  return counts.back();
}

std::vector<GpuCounts> CountNodeGpus(const Node& node, NodeAvailability availability) {
  std::vector<GpuCounts> counts;
  for (const Gres& g : *node.gres) {
    if (IsGpu(g.name)) CountsFor(counts, TypeOf(g.type)).total += g.count;
  }
  if (node.gres_used) {
    for (const Gres& g : *node.gres_used) {
      if (!IsGpu(g.name) || g.count <= 0) continue;
      int64_t left = g.count;
      const std::string type = TypeOf(g.type);
      // A typed use goes to its type; an untyped one (a job that asked for
      // any GPU, as some versions print it) fills the types in order.
      for (GpuCounts& c : counts) {
        if (left == 0) break;
        if (!type.empty() && c.type != type) continue;
        const int64_t take = std::min(left, std::max<int64_t>(0, c.total - c.allocated));
        c.allocated += take;
        left -= take;
      }
      // More in use than configured (a node being reconfigured): shown as is.
      if (left > 0) CountsFor(counts, type).allocated += left;
    }
  }
  const bool takes_work = availability == NodeAvailability::kTakesWork;
  for (GpuCounts& c : counts) {
    const int64_t idle = std::max<int64_t>(0, c.total - c.allocated);
    (takes_work ? c.free : c.unavailable) = idle;
  }
  return counts;
}

void AddHolders(const Job& job, std::map<std::string, std::vector<GpuHolder>>& by_node,
                std::vector<std::string>& warnings) {
  if (!job.nodes) return;
  Result<std::vector<std::string>> names = ExpandHostlist(*job.nodes);
  if (!names.ok()) {
    warnings.push_back("job " + std::to_string(job.id) + ": " + names.error().message);
    return;
  }
  auto holder = [&job](std::string type, int64_t count, std::optional<std::string> idx) {
    GpuHolder h;
    h.job_id = job.id;
    h.user = job.user;
    h.job_name = job.name;
    h.type = std::move(type);
    h.count = count;
    h.indexes = std::move(idx);
    h.since_unix_s = job.start_time;
    return h;
  };
  for (size_t i = 0; i < names->size(); ++i) {
    std::vector<GpuHolder>& on_node = by_node[(*names)[i]];
    if (i < job.gres_detail.size()) {
      for (const Gres& g : job.gres_detail[i]) {
        if (IsGpu(g.name) && g.count > 0)
          on_node.push_back(holder(TypeOf(g.type), g.count, g.indexes));
      }
      continue;
    }
    // No per-node detail (a version or a state that does not print it): the
    // per-node request is what it holds on each node, indexes unknown.
    for (const GresRequest& r : job.gres_per_node) {
      if (IsGpu(r.name) && r.count > 0) on_node.push_back(holder(TypeOf(r.type), r.count, {}));
    }
  }
}

std::string RequestText(const GresRequest& r) {
  return std::to_string(r.count) + " " + r.name + (r.type ? ":" + *r.type : "");
}

}  // namespace

const char* AvailabilityName(NodeAvailability a) {
  switch (a) {
    case NodeAvailability::kTakesWork:
      return "takes work";
    case NodeAvailability::kDraining:
      return "draining";
    case NodeAvailability::kDrained:
      return "drained";
    case NodeAvailability::kDown:
      return "down";
    case NodeAvailability::kPoweredDown:
      return "powered down";
    case NodeAvailability::kUnknown:
      break;
  }
  return "unknown";
}

NodeAvailability AvailabilityOf(const Node& node) {
  if (!node.state) return NodeAvailability::kUnknown;
  const std::string& base = *node.state;
  if (base == "DOWN" || base == "ERROR" || node.HasFlag("FAIL") || node.HasFlag("NOT_RESPONDING") ||
      node.HasFlag("INVALID_REG")) {
    return NodeAvailability::kDown;
  }
  if (node.HasFlag("POWERED_DOWN") || node.HasFlag("POWERING_DOWN") || node.HasFlag("POWER_DOWN")) {
    return NodeAvailability::kPoweredDown;
  }
  const bool busy = base == "ALLOCATED" || base == "MIXED" || node.HasFlag("COMPLETING");
  if (node.HasFlag("DRAIN")) return busy ? NodeAvailability::kDraining : NodeAvailability::kDrained;
  if (busy || base == "IDLE" || base == "COMPLETING") return NodeAvailability::kTakesWork;
  return NodeAvailability::kUnknown;
}

std::string DescribeGpuRequest(const Job& job) {
  std::vector<std::string> parts;
  for (const GresRequest& r : job.gres_per_node) {
    if (IsGpu(r.name)) parts.push_back(RequestText(r) + " per node");
  }
  for (const GresRequest& r : job.gres_per_job) {
    if (IsGpu(r.name)) parts.push_back(RequestText(r) + " in all");
  }
  if (parts.empty()) return "no GPU";
  std::string out = parts[0];
  for (size_t i = 1; i < parts.size(); ++i) out += " and " + parts[i];
  return out;
}

ClusterView BuildClusterView(const SinfoDocument& sinfo, const SqueueDocument& squeue) {
  ClusterView view;
  view.meta = sinfo.meta;
  std::map<std::string, std::vector<GpuHolder>> holders;
  for (const Job& job : squeue.jobs) {
    const std::string state = job.state.value_or("");
    if (state == "RUNNING" || state == "SUSPENDED" || state == "COMPLETING") {
      AddHolders(job, holders, view.warnings);
    } else if (state == "PENDING") {
      PendingJobView p;
      p.job_id = job.id;
      p.user = job.user;
      p.job_name = job.name;
      p.partition = job.partition;
      p.reason = job.reason;
      p.description = job.state_description;
      p.wants = DescribeGpuRequest(job);
      p.submit_unix_s = job.submit_time;
      p.expected_start_unix_s = job.start_time;
      p.priority = job.priority;
      view.pending.push_back(std::move(p));
    }
  }
  std::stable_sort(view.pending.begin(), view.pending.end(),
                   [](const PendingJobView& a, const PendingJobView& b) {
                     const int64_t pa = a.priority.value_or(0), pb = b.priority.value_or(0);
                     return pa != pb ? pa > pb : a.job_id < b.job_id;
                   });

  // sinfo may list a node once per partition: one view per node, its
  // partitions merged.
  std::map<std::string, size_t> index;
  for (const Node& node : sinfo.nodes) {
    if (auto it = index.find(node.name); it != index.end()) {
      for (const std::string& p : node.partitions) {
        std::vector<std::string>& parts = view.nodes[it->second].partitions;
        if (std::find(parts.begin(), parts.end(), p) == parts.end()) parts.push_back(p);
      }
      continue;
    }
    index[node.name] = view.nodes.size();
    NodeView v;
    v.name = node.name;
    v.availability = AvailabilityOf(node);
    std::string state = Lower(node.state.value_or("unknown"));
    for (const std::string& f : node.state_flags) state += "+" + Lower(f);
    v.state = std::move(state);
    v.reason = node.reason;
    if (node.gres) v.gpus = CountNodeGpus(node, v.availability);
    if (auto it = holders.find(node.name); it != holders.end()) {
      v.holders = std::move(it->second);
      std::sort(v.holders.begin(), v.holders.end(),
                [](const GpuHolder& a, const GpuHolder& b) { return a.job_id < b.job_id; });
    }
    v.partitions = node.partitions;
    view.nodes.push_back(std::move(v));
  }
  for (const NodeView& n : view.nodes) {
    if (!n.gpus) continue;
    for (const GpuCounts& c : *n.gpus) {
      GpuCounts& t = CountsFor(view.gpu_totals, c.type);
      t.total += c.total;
      t.allocated += c.allocated;
      t.free += c.free;
      t.unavailable += c.unavailable;
    }
  }
  return view;
}

}  // namespace gw::slurm
