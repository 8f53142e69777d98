// One round of the probe thread: look at the server (under the probe
// deadline), judge it with the diagnosis engine over the last few looks, and
// ask gpuwardend for its queue. The OS and driver touchpoints come in as
// functions, so rounds are tested with fakes.
//
// A wedged driver: when a round's probe hits its deadline, its NVML worker
// stays stuck inside the driver. Asking again every second would pile up
// one stuck thread per second, so while a call of an earlier round is still
// in flight the next rounds do not ask the driver at all: they report
// "driver not responding" (since when, and which call), keep the last
// values (the UI marks them stale) and still refresh the queue.
#ifndef GPUWARDEN_WATCH_WATCH_PROBE_H_
#define GPUWARDEN_WATCH_WATCH_PROBE_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/snapshot.h"
#include "diagnose/rules.h"
#include "kmsg/kernel_event.h"
#include "watch/model.h"

namespace gw::watch {

struct ProbeSources {
  // One look at the server, never longer than the deadline. The argument is
  // the time of the previous look (Unix µs; 0 at first), so per-process
  // utilisation covers the interval between the two.
  std::function<Snapshot(uint64_t samples_since_us)> collect;
  // The queue panel; empty: not shown (kNotAsked).
  std::function<QueueView()> queue;
  // Driver calls still in flight (nvml::ProbeWorkersRunning).
  std::function<int()> driver_calls_in_flight;
  // Kernel-log events for the diagnosis (Xids); empty: none. Called at the
  // first round and then every `kernel_log_every_ms`.
  std::function<std::vector<kmsg::KernelEvent>()> kernel_events;
  // Wall clock, Unix ms.
  std::function<int64_t()> now_unix_ms;
};

struct ProbeSettings {
  diagnose::DiagnoseOptions diagnose;
  // Looks judged together, so "saturated" and "idle" mean sustained.
  size_t window = 3;
  int64_t kernel_log_every_ms = 60'000;
};

class WatchProbe {
 public:
  WatchProbe(ProbeSources sources, ProbeSettings settings);
  Frame Round();

 private:
  ProbeSources src_;
  ProbeSettings settings_;
  std::vector<Snapshot> window_;  // Oldest first, at most settings_.window.
  std::vector<kmsg::KernelEvent> events_;
  int64_t events_read_ms_ = -1;
  // The last look hit its deadline in a call of its own (not asked again
  // until the driver calls return), or in one GPU's call (asked on: the
  // session reports that GPU at once and reads the others).
  bool stuck_ = false;
  bool gpu_stuck_ = false;
  int64_t stuck_since_ms_ = 0;
  std::string stuck_call_;  // What did not return.
};

// Replaces the CPU % of each process of `next` that `prev` also saw (same
// PID and start time, CPU time known in both) by its CPU use between the two
// looks, in % of one core; others keep /proc's lifetime average. Pure.
void UseWindowedCpu(const Snapshot& prev, Snapshot& next);

}  // namespace gw::watch

#endif  // GPUWARDEN_WATCH_WATCH_PROBE_H_
