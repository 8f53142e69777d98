// CollectWindow: several looks at the server over a short window, so that
// "saturated" or "idle" means sustained, not one lucky sample.
#ifndef GPUWARDEN_COLLECT_WINDOW_H_
#define GPUWARDEN_COLLECT_WINDOW_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

#include "collect/collector.h"
#include "core/clock.h"
#include "core/snapshot.h"

namespace gw::collect {

// Where a window stands, for a caller that says so while it waits.
struct WindowProgress {
  unsigned samples = 0;    // Taken so far (0: before the first).
  size_t gpus = 0;         // GPUs in the latest sample (0 before the first).
  int64_t elapsed_ms = 0;  // Since the window started, by the window's clock.
  int64_t window_ms = 0;   // The whole window.
};

struct WindowOptions {
  double window_s = 3.0;    // 0 = a single snapshot (`why --now`).
  double interval_s = 0.5;  // Time between the starts of two probes.
  // Called before the first probe and after each probe that another will
  // follow (never after the last one); may be empty.
  std::function<void(const WindowProgress&)> progress;
};

using SleepFn = std::function<void(int64_t ms)>;

// Takes snapshots from now until window_s has passed, oldest first; at least
// one. Each probe asks NVML only for process-utilisation samples newer than
// the previous snapshot. Stops early when a probe timed out (a wedged driver
// is not asked again and again) or found no NVML at all.
std::vector<Snapshot> CollectWindow(const CollectOptions& options, const WindowOptions& window,
                                    const Clock& clock, const SleepFn& sleep_ms);

// Whether another probe could add anything after `latest`. Pure.
bool WorthProbingAgain(const Snapshot& latest);

}  // namespace gw::collect

#endif  // GPUWARDEN_COLLECT_WINDOW_H_
