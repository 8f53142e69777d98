#include "render/cluster_text.h"

#include <algorithm>
#include <string_view>
#include <vector>

#include "core/json_out.h"
#include "core/text.h"
#include "core/units.h"
#include "render/text_table.h"

namespace gw::render {
namespace {

using nlohmann::json;
using slurm::ClusterView;
using slurm::GpuCounts;
using slurm::GpuHolder;
using slurm::NodeAvailability;

std::string Clean(const std::optional<std::string>& s, std::string_view fallback = "?") {
  return s ? SanitizeForTerminal(*s) : std::string(fallback);
}

std::string TypeLabel(const std::string& type) { return type.empty() ? "gpu" : Clean(type); }

std::string HolderText(const GpuHolder& h, int64_t now_unix_s) {
  std::string s = "job " + std::to_string(h.job_id) + " " + Clean(h.user);
  if (h.job_name) s += " \"" + SanitizeForTerminal(*h.job_name) + "\"";
  s += " " + std::to_string(h.count) + "×" + TypeLabel(h.type);
  if (h.indexes) s += " [" + SanitizeForTerminal(*h.indexes) + "]";
  if (h.since_unix_s)
    s += " for " + FormatDuration(static_cast<double>(now_unix_s - *h.since_unix_s));
  return s;
}

std::string Plural(int64_t n, std::string_view one, std::string_view many) {
  return std::to_string(n) + " " + std::string(n == 1 ? one : many);
}

// "4 in all, 2 allocated, 1 free, 1 unavailable"
std::string CountsText(const GpuCounts& c) {
  std::string s = std::to_string(c.total) + " in all, " + std::to_string(c.allocated) +
                  " allocated, " + std::to_string(c.free) + " free";
  if (c.unavailable > 0) s += ", " + std::to_string(c.unavailable) + " unavailable";
  return s;
}

json CountsJson(const GpuCounts& c) {
  return {{"type", c.type.empty() ? json(nullptr) : JsonText(c.type)},
          {"total", c.total},
          {"allocated", c.allocated},
          {"free", c.free},
          {"unavailable", c.unavailable}};
}

}  // namespace

std::string RenderClusterText(const ClusterView& view, int64_t now_unix_s) {
  std::string out = "Slurm " + Clean(view.meta.release, "(version not given)") + " — " +
                    Plural(static_cast<int64_t>(view.nodes.size()), "node", "nodes");
  GpuCounts all;
  for (const GpuCounts& c : view.gpu_totals) {
    all.total += c.total;
    all.allocated += c.allocated;
    all.free += c.free;
    all.unavailable += c.unavailable;
  }
  out += "; GPUs: " + (view.gpu_totals.empty() ? std::string("none") : CountsText(all)) + "\n";
  if (view.gpu_totals.size() > 1 ||
      (view.gpu_totals.size() == 1 && !view.gpu_totals[0].type.empty())) {
    for (const GpuCounts& c : view.gpu_totals)
      out += "  " + TypeLabel(c.type) + ": " + CountsText(c) + "\n";
  }

  std::vector<std::vector<std::string>> rows = {
      {"NODE", "STATE", "TYPE", "TOTAL", "ALLOC", "FREE", "HELD BY"}};
  std::vector<std::string> notes;
  for (const slurm::NodeView& n : view.nodes) {
    const std::string name = SanitizeForTerminal(n.name);
    const std::string state = SanitizeForTerminal(n.state);
    const bool takes_work = n.availability == NodeAvailability::kTakesWork;
    std::vector<std::vector<std::string>> node_rows;
    if (!n.gpus) {
      node_rows.push_back({name, state, "?", "?", "?", "?"});
    } else if (n.gpus->empty()) {
      node_rows.push_back({name, state, "-", "0", "0", "0"});
    } else {
      for (const GpuCounts& c : *n.gpus) {
        node_rows.push_back(
            {"", "", TypeLabel(c.type), std::to_string(c.total), std::to_string(c.allocated),
             takes_work ? std::to_string(c.free)
                        : "— (" + std::string(slurm::AvailabilityName(n.availability)) + ")"});
      }
      node_rows[0][0] = name;
      node_rows[0][1] = state;
    }
    // Holders go beside the rows, one per row, more rows when needed.
    for (size_t i = 0; i < n.holders.size(); ++i) {
      if (i >= node_rows.size()) node_rows.push_back({"", "", "", "", "", ""});
      node_rows[i].push_back(HolderText(n.holders[i], now_unix_s));
    }
    for (auto& r : node_rows) rows.push_back(std::move(r));
    if (!takes_work || n.reason) {
      std::string note = name + " " + slurm::AvailabilityName(n.availability);
      if (n.reason) note += ": " + SanitizeForTerminal(*n.reason);
      notes.push_back(note);
    }
  }
  out += "\n" + TextTable(rows);
  for (const std::string& note : notes) out += "  " + note + "\n";

  if (view.pending.empty()) {
    out += "\nNo job waits.\n";
  } else {
    out +=
        "\n" + Plural(static_cast<int64_t>(view.pending.size()), "job waits:", "jobs wait:") + "\n";
    std::vector<std::vector<std::string>> jobs = {{"JOB", "USER", "NAME", "WANTS", "REASON"}};
    for (const slurm::PendingJobView& p : view.pending) {
      std::string reason = Clean(p.reason, "(none given)");
      if (p.description) reason += ": " + SanitizeForTerminal(*p.description);
      if (p.expected_start_unix_s && *p.expected_start_unix_s > now_unix_s) {
        reason += " (Slurm expects it to start in " +
                  FormatDuration(static_cast<double>(*p.expected_start_unix_s - now_unix_s)) + ")";
      }
      jobs.push_back({std::to_string(p.job_id), Clean(p.user), Clean(p.job_name, ""),
                      SanitizeForTerminal(p.wants), reason});
    }
    out += TextTable(jobs);
  }
  for (const std::string& w : view.warnings) out += "warning: " + SanitizeForTerminal(w) + "\n";
  return out;
}

json ClusterJson(const ClusterView& view) {
  json gpus = json::array();
  for (const GpuCounts& c : view.gpu_totals) gpus.push_back(CountsJson(c));
  json nodes = json::array();
  for (const slurm::NodeView& n : view.nodes) {
    json node_gpus = nullptr;
    if (n.gpus) {
      node_gpus = json::array();
      for (const GpuCounts& c : *n.gpus) node_gpus.push_back(CountsJson(c));
    }
    json holders = json::array();
    for (const GpuHolder& h : n.holders) {
      holders.push_back({{"job_id", h.job_id},
                         {"user", JsonOrNull(h.user)},
                         {"job_name", JsonOrNull(h.job_name)},
                         {"type", h.type.empty() ? json(nullptr) : JsonText(h.type)},
                         {"count", h.count},
                         {"indexes", JsonOrNull(h.indexes)},
                         {"since_unix_s", JsonOrNull(h.since_unix_s)}});
    }
    nodes.push_back({{"name", JsonText(n.name)},
                     {"state", JsonText(n.state)},
                     {"availability", slurm::AvailabilityName(n.availability)},
                     {"reason", JsonOrNull(n.reason)},
                     {"partitions", JsonTextList(n.partitions)},
                     {"gpus", std::move(node_gpus)},
                     {"holders", std::move(holders)}});
  }
  json pending = json::array();
  for (const slurm::PendingJobView& p : view.pending) {
    pending.push_back({{"job_id", p.job_id},
                       {"user", JsonOrNull(p.user)},
                       {"job_name", JsonOrNull(p.job_name)},
                       {"partition", JsonOrNull(p.partition)},
                       {"reason", JsonOrNull(p.reason)},
                       {"description", JsonOrNull(p.description)},
                       {"wants", JsonText(p.wants)},
                       {"submit_unix_s", JsonOrNull(p.submit_unix_s)},
                       {"expected_start_unix_s", JsonOrNull(p.expected_start_unix_s)},
                       {"priority", JsonOrNull(p.priority)}});
  }
  return {{"schema", kClusterSchemaName},
          {"schema_version", kClusterSchemaVersion},
          {"slurm",
           {{"release", JsonOrNull(view.meta.release)},
            {"data_parser", JsonOrNull(view.meta.data_parser)},
            {"layout", std::string(slurm::LayoutName(view.meta.layout))}}},
          {"gpus", std::move(gpus)},
          {"nodes", std::move(nodes)},
          {"pending", std::move(pending)},
          {"warnings", JsonTextList(view.warnings)}};
}

}  // namespace gw::render
