#include "diagnose/trends.h"

#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "core/units.h"
#include "diagnose/rule_context.h"

namespace gw::diagnose {
namespace {

// "09:40" on the day of `as_of`, else "2026-12-05 09:40" (local time).
std::string ShortLocalTime(int64_t unix_s, int64_t as_of_unix_s) {
  const std::string at = FormatLocalTime(unix_s * 1000);
  const std::string ref = FormatLocalTime(as_of_unix_s * 1000);
  if (at.size() < 16) return at;  // "time N/A"
  const std::string hm = at.substr(11, 5);
  return ref.size() >= 10 && at.compare(0, 10, ref, 0, 10) == 0 ? hm : at.substr(0, 10) + " " + hm;
}

// IDLE_HOLDER and HOLDER_IDLE_SHORT carry their holder's own idle time
// (idle_time.h), of which the GPU's run is one source.
bool IsHolderFinding(const Finding& f) {
  return f.code == "ORPHAN_HOLDER" || f.code == "ZOMBIE_HOLDER";
}

}  // namespace

bool HeldIdleReading(Opt<double> util_pct, Opt<double> used_bytes, Opt<double> total_bytes,
                     const DiagnoseOptions& options) {
  if (!util_pct || !used_bytes || !total_bytes || *total_bytes <= 0) return false;
  const double free_mark = std::max(*total_bytes * options.free_used_pct / 100.0,
                                    static_cast<double>(options.free_used_min_bytes));
  return *util_pct <= options.idle_util_max_pct && *used_bytes > free_mark;
}

bool MemoryFullReading(Opt<double> used_bytes, Opt<double> total_bytes,
                       const DiagnoseOptions& options) {
  if (!used_bytes || !total_bytes || *total_bytes <= 0 || *used_bytes > *total_bytes) {
    return false;
  }
  const auto total = static_cast<uint64_t>(*total_bytes);
  return *total_bytes - *used_bytes <
         static_cast<double>(internal::FullMarkFreeBytes(total, options));
}

bool TrendsDescribe(const Trends& trends, const Snapshot& latest) {
  if (trends.memory_total_bytes.size() != latest.gpus.size()) return false;
  for (const Gpu& g : latest.gpus) {
    auto it = trends.memory_total_bytes.find(g.index);
    if (it == trends.memory_total_bytes.end()) return false;
    if (g.memory.total_bytes && static_cast<double>(*g.memory.total_bytes) != it->second) {
      return false;
    }
  }
  return true;
}

std::shared_ptr<const ActivityHistory> ActivityHistoryOf(const Trends& trends) {
  auto h = std::make_shared<ActivityHistory>();
  h->as_of_ms = std::max(trends.as_of_unix_s * 1000, trends.holders_as_of_ms);
  h->holders = trends.holders;
  for (const auto& [index, total] : trends.memory_total_bytes) h->gpus.push_back(index);
  for (const GpuTrend& g : trends.gpus) {
    if (g.idle_held) {
      h->gpu_idle[g.index] = GpuIdleRun{g.idle_held->since_unix_s * 1000, g.idle_held->open_start};
    }
  }
  return h;
}

std::string RunText(const TrendRun& run, int64_t as_of_unix_s) {
  const double lasted = static_cast<double>(as_of_unix_s - run.since_unix_s);
  const std::string since = ShortLocalTime(run.since_unix_s, as_of_unix_s);
  return run.open_start ? fmt::format("for at least {} (since {}, as far as the history goes)",
                                      FormatDuration(lasted), since)
                        : fmt::format("for {} (since {})", FormatDuration(lasted), since);
}

void AddTrendEvidence(Diagnosis& diagnosis, const Trends& trends) {
  std::map<unsigned, const GpuTrend*> by_gpu;
  for (const GpuTrend& t : trends.gpus) by_gpu[t.index] = &t;
  // The run that holds on every GPU of the finding: the latest to begin.
  auto common_run = [&](const std::vector<unsigned>& gpus,
                        Opt<TrendRun> GpuTrend::*which) -> Opt<TrendRun> {
    Opt<TrendRun> common;
    for (unsigned gpu : gpus) {
      auto it = by_gpu.find(gpu);
      if (it == by_gpu.end() || !(it->second->*which)) return std::nullopt;
      const TrendRun& run = *(it->second->*which);
      if (!common || run.since_unix_s > common->since_unix_s) common = run;
    }
    return common;
  };
  for (Finding& f : diagnosis.findings) {
    if (f.gpus.empty()) continue;
    const std::string gpus =
        fmt::format("GPU{} {}", f.gpus.size() > 1 ? "s" : "", internal::GpuList(f.gpus));
    std::string name, what;
    Opt<TrendRun> run;
    if (IsHolderFinding(f)) {
      name = "idle_for";
      run = common_run(f.gpus, &GpuTrend::idle_held);
      what = gpus + " held and idle";
    } else if (f.code == "VRAM_EXHAUSTED") {
      name = "full_for";
      run = common_run(f.gpus, &GpuTrend::memory_full);
      what = gpus + " memory full";
    }
    if (!run) continue;
    const double lasted = static_cast<double>(trends.as_of_unix_s - run->since_unix_s);
    f.evidence.push_back(internal::NumberEvidence(
        std::move(name), lasted, "s",
        what + " " + RunText(*run, trends.as_of_unix_s) + " (gpuwardend's history)"));
  }
}

}  // namespace gw::diagnose
