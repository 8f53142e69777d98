#include "watch/history.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace gw::watch {
namespace {

constexpr float kUnknown = std::numeric_limits<float>::quiet_NaN();

}  // namespace

float MetricValue(const Gpu& gpu, Metric metric) {
  if (gpu.unreachable) return kUnknown;
  switch (metric) {
    case Metric::kVram:
      if (gpu.memory.used_bytes && gpu.memory.total_bytes && *gpu.memory.total_bytes > 0) {
        return static_cast<float>(100.0 * static_cast<double>(*gpu.memory.used_bytes) /
                                  static_cast<double>(*gpu.memory.total_bytes));
      }
      return kUnknown;
    case Metric::kUtil:
      return gpu.utilization_gpu_pct ? static_cast<float>(*gpu.utilization_gpu_pct) : kUnknown;
    case Metric::kTemp:
      return gpu.temperature_c ? static_cast<float>(*gpu.temperature_c) : kUnknown;
    case Metric::kPower:
      return gpu.power_draw_w ? static_cast<float>(*gpu.power_draw_w) : kUnknown;
  }
  return kUnknown;
}

History::History(size_t capacity) : capacity_(std::max<size_t>(1, capacity)) {}

void History::EnsureGpu(unsigned index) {
  // Indices come from the driver (0..63); a new GPU is rare, so this is the
  // only place that allocates.
  while (series_.size() <= index) {
    Series s;
    for (auto& v : s) v.assign(capacity_, kUnknown);
    series_.push_back(std::move(s));
  }
}

void History::Push(const Snapshot& snapshot) {
  for (const Gpu& gpu : snapshot.gpus) EnsureGpu(gpu.index);
  const size_t slot = static_cast<size_t>(total_ % capacity_);
  for (Series& s : series_) {
    for (auto& v : s) v[slot] = kUnknown;
  }
  for (const Gpu& gpu : snapshot.gpus) {
    Series& s = series_[gpu.index];
    for (size_t m = 0; m < kMetricCount; ++m) s[m][slot] = MetricValue(gpu, static_cast<Metric>(m));
  }
  ++total_;
}

void History::PushGap() {
  const size_t slot = static_cast<size_t>(total_ % capacity_);
  for (Series& s : series_) {
    for (auto& v : s) v[slot] = kUnknown;
  }
  ++total_;
}

float History::At(unsigned gpu, Metric metric, uint64_t n) const {
  if (gpu >= series_.size() || n >= total_ || total_ - n > size()) return kUnknown;
  return series_[gpu][static_cast<size_t>(metric)][static_cast<size_t>(n % capacity_)];
}

float History::MaxOver(unsigned gpu, Metric metric, uint64_t first, uint64_t last) const {
  const uint64_t oldest = total_ - size();
  first = std::max(first, oldest);
  last = std::min(last, total_);
  float best = kUnknown;
  for (uint64_t n = first; n < last; ++n) {
    const float v = At(gpu, metric, n);
    if (!std::isnan(v) && (std::isnan(best) || v > best)) best = v;
  }
  return best;
}

}  // namespace gw::watch
