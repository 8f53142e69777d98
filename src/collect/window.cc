#include "collect/window.h"

#include <algorithm>

namespace gw::collect {

bool WorthProbingAgain(const Snapshot& latest) {
  if (latest.timed_out) return false;
  if (latest.gpus.empty()) {
    for (const ProbeError& e : latest.errors) {
      if (e.source == "nvml") return false;  // No library, no driver: nothing will change.
    }
  }
  return true;
}

std::vector<Snapshot> CollectWindow(const CollectOptions& options, const WindowOptions& window,
                                    const Clock& clock, const SleepFn& sleep_ms) {
  std::vector<Snapshot> samples;
  const int64_t start = clock.MonotonicMs();
  const int64_t window_ms = static_cast<int64_t>(std::max(0.0, window.window_s) * 1000.0);
  const int64_t interval_ms = std::max<int64_t>(50, static_cast<int64_t>(window.interval_s * 1000));
  CollectOptions probe = options;
  auto report = [&] {
    if (!window.progress) return;
    WindowProgress p;
    p.samples = static_cast<unsigned>(samples.size());
    p.gpus = samples.empty() ? 0 : samples.back().gpus.size();
    p.elapsed_ms = clock.MonotonicMs() - start;
    p.window_ms = window_ms;
    window.progress(p);
  };
  report();
  for (int64_t next = start;; next += interval_ms) {
    samples.push_back(Collect(probe, clock));
    const Snapshot& latest = samples.back();
    if (!WorthProbingAgain(latest)) break;
    if (next + interval_ms > start + window_ms) break;
    report();
    probe.process_samples_since_us = static_cast<uint64_t>(latest.time_unix_ms) * 1000;
    const int64_t wait = next + interval_ms - clock.MonotonicMs();
    if (wait > 0) sleep_ms(wait);
  }
  return samples;
}

}  // namespace gw::collect
