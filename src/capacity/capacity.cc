#include "capacity/capacity.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <utility>

#include <fmt/format.h>

#include "core/units.h"

namespace gw::capacity {
namespace {

constexpr double kHour = 3600;
constexpr int64_t kDay = 86400;

int LocalHourOf(int64_t unix_s, int64_t utc_offset_s) {
  int64_t local = (unix_s + utc_offset_s) % kDay;
  if (local < 0) local += kDay;
  return static_cast<int>(local / 3600);
}

// A job's wait as the analysis counts it: [eligible, start) clipped to the
// window; jobs that chose to wait are not demand left unmet.
struct Waiting {
  int64_t from_s;
  int64_t to_s;
  double gpus;
  const std::string* type;
};

std::vector<Waiting> WaitingIntervals(const CapacityInput& in) {
  std::vector<Waiting> out;
  for (const JobRecord& j : in.jobs) {
    if (j.chose_to_wait) continue;
    const int64_t from = std::max(j.eligible_s, in.from_s);
    // A job that ended without starting (cancelled) stopped waiting then.
    const int64_t to = std::min(j.start_s.value_or(j.end_s.value_or(in.to_s)), in.to_s);
    if (to > from) out.push_back({from, to, j.gpus, &j.gpu_type});
  }
  return out;
}

WaitStats WaitsOf(const CapacityInput& in) {
  WaitStats w;
  std::vector<double> waits;
  for (const JobRecord& j : in.jobs) {
    const bool started = j.start_s && *j.start_s < in.to_s;
    if (started && *j.start_s < in.from_s) continue;            // Started before the window.
    if (!started && j.end_s && *j.end_s < in.from_s) continue;  // Gave up before it.
    if (j.chose_to_wait) {
      ++w.chose_to_wait;
      continue;
    }
    if (!started && j.end_s && *j.end_s < in.to_s) {
      ++w.gave_up;
    } else if (started) {
      waits.push_back(static_cast<double>(std::max<int64_t>(0, *j.start_s - j.eligible_s)));
    } else if (j.eligible_s < in.to_s) {
      ++w.still_waiting;
      const double waited = static_cast<double>(in.to_s - j.eligible_s);
      w.longest_waiting_s = std::max(w.longest_waiting_s.value_or(0), waited);
    }
  }
  w.started = waits.size();
  if (!waits.empty()) {
    w.p50_s = NearestRankPercentile(waits, 50);
    w.p90_s = NearestRankPercentile(waits, 90);
    w.p99_s = NearestRankPercentile(waits, 99);
    w.max_s = *std::max_element(waits.begin(), waits.end());
    double sum = 0;
    for (double v : waits) sum += v;
    w.mean_s = sum / static_cast<double>(waits.size());
  }
  return w;
}

// The time-weighted q-quantile (q in [0, 1]) of `samples` (value, seconds):
// the smallest value with at least q of the time at or below it.
double TimeWeightedQuantile(std::vector<std::pair<double, double>> samples, double q) {
  if (samples.empty()) return 0;
  std::sort(samples.begin(), samples.end());
  double total = 0;
  for (const auto& s : samples) total += s.second;
  double sum = 0;
  for (const auto& s : samples) {
    sum += s.second;
    if (sum >= q * total - 1e-9) return s.first;
  }
  return samples.back().first;
}

std::string Hours(double h) { return fmt::format("{:.1f} h", h); }
std::string Percent(double share) { return fmt::format("{:.0f} %", share * 100); }

void AddPowerSaving(const CapacityInput& in, const CapacityOptions& o,
                    const std::vector<std::pair<double, double>>& held_samples, CapacityReport& r) {
  PowerSaving& p = r.power;
  p.applies = in.source == "slurm" && !in.node_gpus.empty();
  if (!p.applies) return;
  // Each node's busy stretches, its share of each job's GPU-seconds.
  std::map<std::string, std::vector<std::pair<int64_t, int64_t>>> busy;
  std::map<std::string, double> gpu_s;
  for (const JobRecord& j : in.jobs) {
    if (!j.start_s) continue;
    const int64_t from = std::max(*j.start_s, in.from_s);
    const int64_t to = std::min(j.end_s.value_or(in.to_s), in.to_s);
    if (to <= from) continue;
    for (const std::string& n : j.nodes) {
      busy[n].push_back({from, to});
      gpu_s[n] += j.gpus / static_cast<double>(j.nodes.size()) * static_cast<double>(to - from);
    }
  }
  std::vector<double> gaps;
  for (auto& [node, stretches] : busy) {
    std::sort(stretches.begin(), stretches.end());
    int64_t end = stretches.front().second;
    for (size_t i = 1; i < stretches.size(); ++i) {
      if (stretches[i].first > end) gaps.push_back(static_cast<double>(stretches[i].first - end));
      end = std::max(end, stretches[i].second);
    }
  }
  p.idle_gaps = gaps.size();
  p.median_idle_gap_s = NearestRankPercentile(gaps, 50);
  if (p.median_idle_gap_s) {
    const auto minutes = static_cast<int64_t>(std::llround(*p.median_idle_gap_s / 60));
    p.suspend_time_s = std::clamp(minutes * 60, o.suspend_time_min_s, o.suspend_time_max_s);
  }
  p.base_load_gpus = TimeWeightedQuantile(held_samples, 1 - o.base_load_time_share);
  std::vector<std::pair<double, std::string>> by_use;
  for (const auto& [node, gpus] : in.node_gpus) {
    by_use.push_back({gpu_s.count(node) ? gpu_s.at(node) : 0.0, node});
    if (!busy.count(node)) p.idle_nodes.push_back(node);
  }
  std::sort(by_use.begin(), by_use.end(), [](const auto& a, const auto& b) {
    return a.first != b.first ? a.first > b.first : a.second < b.second;
  });
  double carried = 0;
  for (const auto& [used, node] : by_use) {
    if (carried >= p.base_load_gpus - 1e-9) break;
    p.exclude_nodes.push_back(node);
    carried += in.node_gpus.at(node);
  }
  std::sort(p.exclude_nodes.begin(), p.exclude_nodes.end());
}

void AddRecommendations(const CapacityInput& in, const CapacityOptions& o, double waiting_gpu_s,
                        const std::map<std::string, double>& waited_by_type, CapacityReport& r) {
  const double observed = r.observed_hours;
  const double sat_share = observed > 0 ? r.saturated_waiting_hours / observed : 0;
  const std::optional<double> p90 = r.waits ? r.waits->p90_s : std::nullopt;
  if (sat_share >= o.add_gpus_saturated_share && p90 && *p90 >= o.add_gpus_p90_wait_s) {
    const double mean_waiting = waiting_gpu_s / (r.saturated_waiting_hours * kHour);
    const double gpus = std::max(1.0, std::ceil(mean_waiting - 1e-9));
    std::string type;
    double best = 0;
    for (const auto& [t, s] : waited_by_type) {
      if (!t.empty() && s > best) {
        best = s;
        type = t;
      }
    }
    if (type.empty()) {
      int most = 0;
      for (const auto& [t, n] : in.gpu_types) {
        if (n > most) {
          most = n;
          type = t;
        }
      }
    }
    Recommendation rec;
    rec.code = "add_gpus";
    rec.text = fmt::format(
        "add {:.0f} GPU{}{}: every GPU was held with jobs waiting for {} of {} ({}); the 90th "
        "percentile wait was {}, and {:.1f} GPUs were waited for on average then",
        gpus, gpus == 1 ? "" : "s", type.empty() ? "" : " (" + type + ")",
        Hours(r.saturated_waiting_hours), Hours(observed), Percent(sat_share), FormatDuration(*p90),
        mean_waiting);
    rec.figures = {{"gpus", gpus},
                   {"saturated_waiting_hours", r.saturated_waiting_hours},
                   {"saturated_waiting_share", sat_share},
                   {"p90_wait_s", *p90},
                   {"mean_waiting_gpus", mean_waiting}};
    if (!type.empty()) rec.details["gpu_type"] = type;
    r.recommendations.push_back(std::move(rec));
  }

  if (r.idle_held_gpu_hours && r.held_gpu_hours > 0) {
    const double share = *r.idle_held_gpu_hours / r.held_gpu_hours;
    if (share >= o.reclaim_idle_share && *r.idle_held_gpu_hours >= o.reclaim_idle_min_gpu_h) {
      std::string who;
      for (const IdleHolder& h : r.idle_holders) {
        who += fmt::format("{}{} {}", who.empty() ? "" : ", ", h.user, Hours(h.idle_gpu_hours));
      }
      Recommendation rec;
      rec.code = "reclaim_idle";
      rec.text = fmt::format(
          "reclaim idle holders: {} GPU-hours of {} held ({}) sat idle{}; `gpuwarden clean` "
          "stops idle holders, a shorter idle limit keeps them from piling up",
          fmt::format("{:.1f}", *r.idle_held_gpu_hours), fmt::format("{:.1f}", r.held_gpu_hours),
          Percent(share), who.empty() ? "" : " (most: " + who + ")");
      rec.figures = {{"idle_held_gpu_hours", *r.idle_held_gpu_hours},
                     {"held_gpu_hours", r.held_gpu_hours},
                     {"idle_share", share}};
      std::string users;
      for (const IdleHolder& h : r.idle_holders) users += (users.empty() ? "" : ",") + h.user;
      rec.details["users"] = users;
      r.recommendations.push_back(std::move(rec));
    }
  }

  if (!r.peak_hours.empty() && r.off_peak) {
    double peak = 0;
    for (int h : r.peak_hours) peak += r.hours[h].held_fraction.value_or(0);
    peak /= static_cast<double>(r.peak_hours.size());
    double off = 0;
    int n = 0;
    for (int h = r.off_peak->first; h != r.off_peak->second; h = (h + 1) % 24, ++n) {
      off += r.hours[h].held_fraction.value_or(0);
    }
    off /= std::max(1, n);
    const std::string window = FormatHourWindow(*r.off_peak);
    Recommendation rec;
    rec.code = "off_peak";
    rec.text = fmt::format(
        "move work that can wait into {}: {} of the GPUs were held then, against {} in the peak "
        "hours ({}); {}",
        window, Percent(off), Percent(peak), r.peak_hours.size(),
        in.source == "slurm" ? "sbatch --begin, or a partition or QOS limited to those hours"
                             : "gpuwarden run --window " + window);
    rec.figures = {{"off_peak_held_share", off},
                   {"peak_held_share", peak},
                   {"peak_hours", static_cast<double>(r.peak_hours.size())},
                   {"off_peak_hours", static_cast<double>(n)}};
    rec.details["window"] = window;
    r.recommendations.push_back(std::move(rec));
  }

  size_t known = 0;
  size_t small = 0;
  for (const JobRecord& j : in.jobs) {
    if (!j.start_s || *j.start_s < in.from_s || *j.start_s >= in.to_s || !j.peak_vram_fraction) {
      continue;
    }
    ++known;
    if (j.gpus == 1 && *j.peak_vram_fraction <= o.small_job_vram_fraction) ++small;
  }
  if (known > 0 && small >= o.small_job_min_count &&
      static_cast<double>(small) >= o.small_job_share * static_cast<double>(known)) {
    const double share = static_cast<double>(small) / static_cast<double>(known);
    Recommendation rec;
    rec.code = "share_small_jobs";
    rec.text = fmt::format(
        "share GPUs between small jobs: {} of {} one-GPU jobs ({}) peaked at {} of a GPU's "
        "memory or less; MIG slices (A100, H100 and later) or MPS would run several on one GPU",
        small, known, Percent(share), Percent(o.small_job_vram_fraction));
    rec.figures = {{"small_jobs", static_cast<double>(small)},
                   {"jobs_with_known_peak", static_cast<double>(known)},
                   {"small_share", share}};
    r.recommendations.push_back(std::move(rec));
  }

  if (r.memory_bound_gpu_hours && r.held_gpu_hours > 0) {
    const double share = *r.memory_bound_gpu_hours / r.held_gpu_hours;
    if (share >= o.memory_bound_share) {
      Recommendation rec;
      rec.code = "quantize_inference";
      rec.text = fmt::format(
          "quantize inference: {} GPU-hours of {} held ({}) were on GPUs at least {} full but "
          "under {:.0f} % busy, the shape of model serving; 8-bit weights halve that memory, "
          "4-bit quarter it",
          fmt::format("{:.1f}", *r.memory_bound_gpu_hours), fmt::format("{:.1f}", r.held_gpu_hours),
          Percent(share), Percent(kMemoryBoundFraction), kMemoryBoundUtilPct);
      rec.figures = {{"memory_bound_gpu_hours", *r.memory_bound_gpu_hours},
                     {"held_gpu_hours", r.held_gpu_hours},
                     {"memory_bound_share", share}};
      r.recommendations.push_back(std::move(rec));
    }
  }
}

}  // namespace

std::optional<double> NearestRankPercentile(std::vector<double> values, double p) {
  if (values.empty()) return std::nullopt;
  std::sort(values.begin(), values.end());
  const auto rank = static_cast<size_t>(std::ceil(p / 100.0 * static_cast<double>(values.size())));
  return values[std::clamp<size_t>(rank, 1, values.size()) - 1];
}

std::string FormatHourWindow(const std::pair<int, int>& hours) {
  return fmt::format("{:02}:00-{:02}:00", hours.first, hours.second);
}

CapacityReport AnalyzeCapacity(const CapacityInput& in, const CapacityOptions& o) {
  CapacityReport r;
  r.source = in.source;
  r.from_s = in.from_s;
  r.to_s = in.to_s;
  if (in.jobs_known) r.waits = WaitsOf(in);

  const std::vector<Waiting> waiting = WaitingIntervals(in);
  // Every moment a figure changes: spans, waits, and local hours.
  std::set<int64_t> cuts = {in.from_s, in.to_s};
  for (const Span& s : in.spans) {
    cuts.insert(std::clamp(s.start_s, in.from_s, in.to_s));
    cuts.insert(std::clamp(s.end_s, in.from_s, in.to_s));
  }
  for (const Waiting& w : waiting) {
    cuts.insert(w.from_s);
    cuts.insert(w.to_s);
  }
  const int64_t first_hour = in.from_s - ((in.from_s + in.utc_offset_s) % 3600 + 3600) % 3600;
  for (int64_t t = first_hour + 3600; t < in.to_s; t += 3600) cuts.insert(t);

  // Waits as events, swept along the cuts.
  std::map<int64_t, std::vector<const Waiting*>> begins, ends;
  for (const Waiting& w : waiting) {
    begins[w.from_s].push_back(&w);
    ends[w.to_s].push_back(&w);
  }
  int waiting_jobs = 0;
  double waiting_gpus = 0;
  std::map<std::string, double> waiting_by_type;

  double waiting_gpu_s_saturated = 0;
  std::map<std::string, double> waited_by_type;
  double idle_gpu_s = 0;
  bool idle_known = true;
  double bound_gpu_s = 0;
  bool bound_known = true;
  bool any_span = false;
  std::array<double, 24> held_s{}, capacity_s{}, waiting_job_s{};
  std::vector<std::pair<double, double>> held_samples;

  size_t span = 0;
  for (auto it = cuts.begin(); it != cuts.end() && std::next(it) != cuts.end(); ++it) {
    const int64_t a = *it;
    const int64_t b = *std::next(it);
    if (auto e = ends.find(a); e != ends.end()) {
      for (const Waiting* w : e->second) {
        --waiting_jobs;
        waiting_gpus -= w->gpus;
        waiting_by_type[*w->type] -= w->gpus;
      }
    }
    if (auto s = begins.find(a); s != begins.end()) {
      for (const Waiting* w : s->second) {
        ++waiting_jobs;
        waiting_gpus += w->gpus;
        waiting_by_type[*w->type] += w->gpus;
      }
    }
    while (span < in.spans.size() && in.spans[span].end_s <= a) ++span;
    if (span >= in.spans.size() || in.spans[span].start_s > a) continue;  // No data.
    const Span& s = in.spans[span];
    any_span = true;
    const double len = static_cast<double>(b - a);
    const double held = std::min(s.held_gpus, s.capacity_gpus);
    const int hour = LocalHourOf(a, in.utc_offset_s);
    r.observed_hours += len / kHour;
    r.capacity_gpus = std::max(r.capacity_gpus, s.capacity_gpus);
    r.capacity_gpu_hours += s.capacity_gpus * len / kHour;
    r.held_gpu_hours += held * len / kHour;
    held_samples.push_back({held, len});
    if (s.idle_held_gpus) {
      idle_gpu_s += *s.idle_held_gpus * len;
    } else {
      idle_known = false;
    }
    if (s.memory_bound_gpus) {
      bound_gpu_s += *s.memory_bound_gpus * len;
    } else {
      bound_known = false;
    }
    HourOfDay& h = r.hours[hour];
    h.observed_s += len;
    held_s[hour] += held * len;
    capacity_s[hour] += s.capacity_gpus * len;
    waiting_job_s[hour] += waiting_jobs * len;
    const bool saturated = s.capacity_gpus > 0 && held >= s.capacity_gpus - 1e-9;
    if (saturated) {
      r.saturated_hours += len / kHour;
      h.saturated_s += len;
      if (waiting_jobs > 0) {
        r.saturated_waiting_hours += len / kHour;
        waiting_gpu_s_saturated += waiting_gpus * len;
        for (const auto& [type, gpus] : waiting_by_type) waited_by_type[type] += gpus * len;
      }
    }
  }
  r.unheld_gpu_hours = r.capacity_gpu_hours - r.held_gpu_hours;
  if (any_span && idle_known) r.idle_held_gpu_hours = idle_gpu_s / kHour;
  if (any_span && bound_known) r.memory_bound_gpu_hours = bound_gpu_s / kHour;

  std::array<bool, 24> off{};
  int off_count = 0;
  for (int hour = 0; hour < 24; ++hour) {
    HourOfDay& h = r.hours[hour];
    if (h.observed_s <= 0) continue;
    h.mean_waiting_jobs = waiting_job_s[hour] / h.observed_s;
    if (capacity_s[hour] > 0) h.held_fraction = held_s[hour] / capacity_s[hour];
    if (!h.held_fraction) continue;
    if (*h.held_fraction >= o.peak_held_fraction - 1e-9) r.peak_hours.push_back(hour);
    off[hour] = *h.held_fraction <= o.off_peak_held_fraction + 1e-9;
    off_count += off[hour] ? 1 : 0;
  }
  if (off_count > 0 && off_count < 24) {
    // The longest run of off-peak hours, around the clock.
    int best_start = 0;
    int best_len = 0;
    for (int start = 0; start < 24; ++start) {
      if (!off[start] || off[(start + 23) % 24]) continue;  // Runs begin after a busy hour.
      int len = 0;
      while (len < 24 && off[(start + len) % 24]) ++len;
      if (len > best_len) {
        best_len = len;
        best_start = start;
      }
    }
    r.off_peak = std::pair{best_start, (best_start + best_len) % 24};
  }

  if (in.idle_known) {
    for (const auto& [user, s] : in.idle_gpu_s_by_user) {
      if (s <= 0) continue;
      const auto all = in.gpu_s_by_user.find(user);
      r.idle_holders.push_back(
          {user, s / kHour, all == in.gpu_s_by_user.end() ? 0 : all->second / kHour});
    }
    std::sort(r.idle_holders.begin(), r.idle_holders.end(), [](const auto& a, const auto& b) {
      return a.idle_gpu_hours != b.idle_gpu_hours ? a.idle_gpu_hours > b.idle_gpu_hours
                                                  : a.user < b.user;
    });
    if (r.idle_holders.size() > o.top_holders) r.idle_holders.resize(o.top_holders);
  }

  AddPowerSaving(in, o, held_samples, r);
  AddRecommendations(in, o, waiting_gpu_s_saturated, waited_by_type, r);
  return r;
}

}  // namespace gw::capacity
