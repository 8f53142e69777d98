// What each GPU did over the last minutes: one fixed-size ring buffer per GPU
// and metric (VRAM use, utilisation, temperature, power), filled once per
// probe. Memory is allocated when a GPU index is first seen, never per
// sample, so a watch left open for days stays as light as at its start.
//
// Unknown stays unknown: a value the probe could not read, and a tick whose
// probe got no answer (a wedged driver), are stored as NaN and drawn as a
// gap, never as 0.
#ifndef GPUWARDEN_WATCH_HISTORY_H_
#define GPUWARDEN_WATCH_HISTORY_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/snapshot.h"

namespace gw::watch {

enum class Metric { kVram, kUtil, kTemp, kPower };
inline constexpr size_t kMetricCount = 4;

// The value a snapshot gives `metric` on `gpu`: VRAM used in % of total,
// utilisation in %, temperature in °C, power draw in W; NaN when unknown
// (or the GPU is unreachable).
float MetricValue(const Gpu& gpu, Metric metric);

class History {
 public:
  // Samples kept per GPU and metric (at least 1). At one sample a second,
  // the default keeps the last 10 minutes.
  explicit History(size_t capacity = 600);

  // Appends one sample: every GPU of `snapshot` by its index; GPUs seen
  // before but missing now get NaN.
  void Push(const Snapshot& snapshot);
  // Appends a sample in which nothing is known (a tick without an answer).
  void PushGap();

  size_t capacity() const { return capacity_; }
  // Samples held: min(pushed, capacity).
  size_t size() const { return total_ < capacity_ ? static_cast<size_t>(total_) : capacity_; }
  // Samples ever pushed; sample number n (0-based) is held while
  // total() - n <= size().
  uint64_t total() const { return total_; }
  // GPU indices with a buffer: 0 .. gpu_slots() - 1.
  unsigned gpu_slots() const { return static_cast<unsigned>(series_.size()); }

  // The value of sample number `n` (see total()); NaN when unknown, not
  // held any more, or for a GPU without a buffer.
  float At(unsigned gpu, Metric metric, uint64_t n) const;

  // The largest known value among samples n with first <= n < last (both
  // clamped to what is held); NaN when none is known.
  float MaxOver(unsigned gpu, Metric metric, uint64_t first, uint64_t last) const;

 private:
  using Series = std::array<std::vector<float>, kMetricCount>;
  void EnsureGpu(unsigned index);

  size_t capacity_;
  uint64_t total_ = 0;
  std::vector<Series> series_;  // By GPU index.
};

}  // namespace gw::watch

#endif  // GPUWARDEN_WATCH_HISTORY_H_
