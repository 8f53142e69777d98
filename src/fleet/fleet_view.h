// FleetView: what the daemon publishes once a second for its HTTP listener —
// the latest full look, its diagnosis, the Xids of the kernel log and the
// queue's figures — as one immutable value. Plain data; the metrics renderer
// (metrics.h) and the web API read it and nothing else.
#ifndef GPUWARDEN_FLEET_FLEET_VIEW_H_
#define GPUWARDEN_FLEET_FLEET_VIEW_H_

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>

#include "core/snapshot.h"
#include "diagnose/verdict.h"
#include "kmsg/kernel_event.h"

namespace gw::fleet {

// Upper bounds (seconds) of the queue-wait histogram's buckets; +Inf is implied.
inline constexpr std::array<double, 10> kWaitBucketsS = {1,    10,    60,    300,   900,
                                                         3600, 14400, 43200, 86400, 604800};

// How long started jobs waited, since the daemon started.
struct WaitHistogram {
  std::array<uint64_t, kWaitBucketsS.size()> buckets{};  // Not cumulative: (le_{i-1}, le_i].
  uint64_t count = 0;
  double sum_s = 0;
  void Add(double seconds);
};

struct QueueStats {
  unsigned queued = 0;
  unsigned held = 0;
  unsigned starting = 0;
  unsigned running = 0;
  std::optional<double> oldest_wait_s;  // The longest a queued job has waited; none queued: unset.
  uint64_t starts_total = 0;            // Jobs started since the daemon started.
  std::map<std::string, uint64_t> ended_total;  // By end state ("succeeded", "failed", ...).
  WaitHistogram waits;
  bool degraded = false;  // The store refuses writes (docs/queue.md "degraded").
};

// Xids of one GPU in the running boot.
struct XidTally {
  std::optional<unsigned> last;  // The newest one.
  std::map<unsigned, uint64_t> counts;
};

// Per GPU index, from the events of boot `boot_id` whose bus id names a GPU
// of `latest` (the kernel names it without the PCI function). Pure.
std::map<unsigned, XidTally> TallyXids(const Snapshot& latest,
                                       std::span<const kmsg::KernelEvent> events,
                                       const std::string& boot_id);

struct FleetView {
  std::shared_ptr<const Snapshot> latest;  // Null until the first full look.
  std::shared_ptr<const diagnose::Diagnosis> diagnosis;
  // Set when a kernel log was read (else the Xid fields are unknown, not 0).
  std::optional<std::map<unsigned, XidTally>> xids;
  std::optional<QueueStats> queue;  // Unset when the daemon runs without its queue.
};

}  // namespace gw::fleet

#endif  // GPUWARDEN_FLEET_FLEET_VIEW_H_
