// CollectWindow: several looks at the server over a short window, so that
// "saturated" or "idle" means sustained, not one lucky sample.
#ifndef GPUWARDEN_COLLECT_WINDOW_H_
#define GPUWARDEN_COLLECT_WINDOW_H_

#include <cstdint>
#include <functional>
#include <vector>

#include "collect/collector.h"
#include "core/clock.h"
#include "core/snapshot.h"

namespace gw::collect {

struct WindowOptions {
  double window_s = 3.0;    // 0 = a single snapshot (`why --now`).
  double interval_s = 0.5;  // Time between the starts of two probes.
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
