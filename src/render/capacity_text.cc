#include "render/capacity_text.h"

#include <cmath>

#include <fmt/format.h>

#include "core/json_out.h"
#include "core/text.h"
#include "core/units.h"

namespace gw::render {
namespace {

using capacity::CapacityReport;
using nlohmann::json;

std::string Share(double part, double whole) {
  return whole > 0 ? fmt::format("{:.0f} %", 100 * part / whole) : "N/A";
}

std::string OrUnknown(const std::optional<double>& seconds) {
  return seconds ? FormatDuration(*seconds) : "N/A";
}

// "09-12, 14" for hours 9, 10, 11, 12 and 14.
std::string HourList(const std::vector<int>& hours) {
  std::string out;
  for (size_t i = 0; i < hours.size();) {
    size_t j = i;
    while (j + 1 < hours.size() && hours[j + 1] == hours[j] + 1) ++j;
    out += (out.empty() ? "" : ", ") + fmt::format("{:02}", hours[i]) +
           (j > i ? fmt::format("-{:02}", hours[j]) : "");
    i = j + 1;
  }
  return out;
}

std::string Bar(double fraction) {
  const int width = 20;
  const int n = static_cast<int>(std::lround(std::clamp(fraction, 0.0, 1.0) * width));
  std::string bar;
  for (int i = 0; i < n; ++i) bar += "#";
  for (int i = n; i < width; ++i) bar += ".";
  return bar;
}

json Optional(const std::optional<double>& v) { return JsonOrNull(v); }

}  // namespace

json CapacityJson(const CapacityReport& r) {
  json hours = json::array();
  for (int h = 0; h < 24; ++h) {
    const capacity::HourOfDay& d = r.hours[h];
    hours.push_back({{"hour", h},
                     {"observed_s", d.observed_s},
                     {"held_share", Optional(d.held_fraction)},
                     {"mean_waiting_jobs", d.mean_waiting_jobs},
                     {"saturated_s", d.saturated_s}});
  }
  json holders = json::array();
  for (const capacity::IdleHolder& h : r.idle_holders) {
    holders.push_back({{"user", JsonText(h.user)},
                       {"idle_gpu_hours", h.idle_gpu_hours},
                       {"gpu_hours", h.gpu_hours}});
  }
  json recs = json::array();
  for (const capacity::Recommendation& rec : r.recommendations) {
    json details = json::object();
    for (const auto& [k, v] : rec.details) details[k] = JsonText(v);
    recs.push_back({{"code", rec.code},
                    {"text", JsonText(rec.text)},
                    {"figures", rec.figures},
                    {"details", details}});
  }
  json power = nullptr;
  if (r.power.applies) {
    power = {{"suspend_time_s", JsonOrNull(r.power.suspend_time_s)},
             {"idle_gaps", r.power.idle_gaps},
             {"median_idle_gap_s", Optional(r.power.median_idle_gap_s)},
             {"base_load_gpus", r.power.base_load_gpus},
             {"suspend_exc_nodes", JsonTextList(r.power.exclude_nodes)},
             {"idle_nodes", JsonTextList(r.power.idle_nodes)},
             {"resume_program", kResumeProgramPath},
             {"suspend_program", kSuspendProgramPath}};
  }
  json waits = nullptr;
  if (r.waits) {
    const capacity::WaitStats& w = *r.waits;
    waits = {{"started", w.started},
             {"p50_s", Optional(w.p50_s)},
             {"p90_s", Optional(w.p90_s)},
             {"p99_s", Optional(w.p99_s)},
             {"max_s", Optional(w.max_s)},
             {"mean_s", Optional(w.mean_s)},
             {"still_waiting", w.still_waiting},
             {"longest_waiting_s", Optional(w.longest_waiting_s)},
             {"chose_to_wait", w.chose_to_wait},
             {"gave_up", w.gave_up}};
  }
  return {{"schema", kCapacitySchemaName},
          {"schema_version", 1},
          {"source", r.source},
          {"from_unix_s", r.from_s},
          {"to_unix_s", r.to_s},
          {"observed_hours", r.observed_hours},
          {"capacity_gpus", r.capacity_gpus},
          {"capacity_gpu_hours", r.capacity_gpu_hours},
          {"held_gpu_hours", r.held_gpu_hours},
          {"unheld_gpu_hours", r.unheld_gpu_hours},
          {"idle_held_gpu_hours", Optional(r.idle_held_gpu_hours)},
          {"memory_bound_gpu_hours", Optional(r.memory_bound_gpu_hours)},
          {"saturated_hours", r.saturated_hours},
          {"saturated_waiting_hours", r.saturated_waiting_hours},
          {"waits", waits},
          {"hours", hours},
          {"peak_hours", r.peak_hours},
          {"off_peak_window",
           r.off_peak ? json(capacity::FormatHourWindow(*r.off_peak)) : json(nullptr)},
          {"idle_holders", holders},
          {"recommendations", recs},
          {"power_saving", power}};
}

std::string RenderCapacityText(const CapacityReport& r) {
  std::string out = fmt::format(
      "Capacity of {}, {} to {}: {:.1f} h with data\n",
      r.source == "slurm" ? "the Slurm cluster (sacct)" : "this server (gpuwardend's history)",
      FormatLocalTime(r.from_s * 1000), FormatLocalTime(r.to_s * 1000), r.observed_hours);
  out += fmt::format("  GPUs          {:.0f}\n", r.capacity_gpus);
  out += fmt::format("  GPU-hours     {:.1f} there were, {:.1f} held ({}), {:.1f} nobody held\n",
                     r.capacity_gpu_hours, r.held_gpu_hours,
                     Share(r.held_gpu_hours, r.capacity_gpu_hours), r.unheld_gpu_hours);
  const char* unknown = r.source == "slurm"
                            ? "unknown (Slurm's accounting does not record GPU utilisation)"
                            : "unknown (readings missing)";
  // A part of the GPU-hours held, or why it is unknown.
  auto part_of_held = [&](const char* label, const std::optional<double>& gpu_hours) {
    out += label;
    out += gpu_hours ? fmt::format("{:.1f} GPU-hours ({} of those held)", *gpu_hours,
                                   Share(*gpu_hours, r.held_gpu_hours))
                     : std::string(unknown);
    out += "\n";
  };
  part_of_held("  held idle     ", r.idle_held_gpu_hours);
  part_of_held("  memory-bound  ", r.memory_bound_gpu_hours);
  out += fmt::format("  saturated     {:.1f} h every GPU held, {:.1f} h of it with jobs waiting\n",
                     r.saturated_hours, r.saturated_waiting_hours);

  if (!r.waits) {
    out += "\nQueue waits: unknown (gpuwardend runs without its queue)\n";
  }
  const capacity::WaitStats w = r.waits.value_or(capacity::WaitStats{});
  if (r.waits) {
    out += fmt::format("\nQueue waits ({} job{} started)\n", w.started, w.started == 1 ? "" : "s");
  }
  if (w.started > 0) {
    out += fmt::format("  p50 {}  p90 {}  p99 {}  max {}  mean {}\n", OrUnknown(w.p50_s),
                       OrUnknown(w.p90_s), OrUnknown(w.p99_s), OrUnknown(w.max_s),
                       OrUnknown(w.mean_s));
  }
  if (w.still_waiting > 0) {
    out += fmt::format("  still waiting: {}, the longest for {}\n", w.still_waiting,
                       OrUnknown(w.longest_waiting_s));
  }
  if (w.chose_to_wait + w.gave_up > 0) {
    out += fmt::format("  left out: {} that asked to wait, {} cancelled while waiting\n",
                       w.chose_to_wait, w.gave_up);
  }

  out += "\nHours of day (local time): GPUs held, jobs waiting\n";
  for (int h = 0; h < 24; ++h) {
    const capacity::HourOfDay& d = r.hours[h];
    if (!d.held_fraction) continue;
    out += fmt::format("  {:02}  {} {:>4.0f} %  {:.1f} waiting\n", h, Bar(*d.held_fraction),
                       100 * *d.held_fraction, d.mean_waiting_jobs);
  }
  out += "  peak hours: " + (r.peak_hours.empty() ? "none" : HourList(r.peak_hours)) +
         "; off-peak: " + (r.off_peak ? capacity::FormatHourWindow(*r.off_peak) : "none") + "\n";

  if (!r.idle_holders.empty()) {
    out += "\nHeld idle, by user\n";
    for (const capacity::IdleHolder& h : r.idle_holders) {
      out += fmt::format("  {}  {:.1f} GPU-hours idle of {:.1f} held\n",
                         SanitizeForTerminal(h.user), h.idle_gpu_hours, h.gpu_hours);
    }
  }

  out += "\nRecommendations\n";
  if (r.recommendations.empty()) out += "  none: no mark was crossed (docs/capacity.md)\n";
  for (const capacity::Recommendation& rec : r.recommendations) {
    out += "  - " + SanitizeForTerminal(rec.text) + "\n";
  }

  if (r.power.applies) {
    const capacity::PowerSaving& p = r.power;
    out += "\nPower saving (slurm.conf; docs/capacity.md)\n";
    if (p.suspend_time_s) {
      out += fmt::format(
          "  SuspendTime={}  # the median idle gap between two jobs on a node, {} "
          "({} gaps)\n",
          *p.suspend_time_s, OrUnknown(p.median_idle_gap_s), p.idle_gaps);
    } else {
      out += "  SuspendTime=1800  # no idle gap between two jobs on a node was seen: a start\n";
    }
    std::string nodes;
    for (const std::string& n : p.exclude_nodes) nodes += (nodes.empty() ? "" : ",") + n;
    if (!nodes.empty()) {
      out +=
          fmt::format("  SuspendExcNodes={}  # they carry the {:.0f} GPUs held 90 % of the time\n",
                      SanitizeForTerminal(nodes), p.base_load_gpus);
    }
    out += fmt::format("  SuspendProgram={}\n  ResumeProgram={}\n", kSuspendProgramPath,
                       kResumeProgramPath);
    out += "  SuspendTimeout=120 ResumeTimeout=600  # cloud nodes take minutes to boot\n";
    if (!p.idle_nodes.empty()) {
      std::string idle;
      for (const std::string& n : p.idle_nodes) idle += (idle.empty() ? "" : ",") + n;
      out += "  ran no job in the window: " + SanitizeForTerminal(idle) + "\n";
    }
  }
  return out;
}

}  // namespace gw::render
