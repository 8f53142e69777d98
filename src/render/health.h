// `gpuwarden health`: the health checks only — the driver, memory, bus,
// thermal, power, NVLink, hardware and application findings of a diagnosis —
// judged per GPU and for the node. Capacity, holders and configuration do not
// make a node unhealthy. Pure.
#ifndef GPUWARDEN_RENDER_HEALTH_H_
#define GPUWARDEN_RENDER_HEALTH_H_

#include <string_view>
#include <vector>

#include "core/snapshot.h"
#include "diagnose/verdict.h"

namespace gw::render {

// From good to bad: healthy < unknown < degraded < failed.
enum class Health { kHealthy, kUnknown, kDegraded, kFailed };

// "healthy", "unknown", "degraded", "failed".
std::string_view HealthName(Health health);

// FAULT -> failed, DEGRADED -> degraded, UNKNOWN -> unknown, else healthy.
Health HealthOfVerdict(diagnose::Verdict verdict);

// Driver, memory, bus, thermal, power, nvlink, hardware, application.
bool IsHealthCategory(diagnose::Category category);

struct GpuHealth {
  unsigned index = 0;
  Opt<std::string> pci_bus_id;  // From the snapshot, when it has the GPU.
  Health health = Health::kHealthy;
  // Health findings about this GPU, in the diagnosis's ranked order.
  std::vector<const diagnose::Finding*> findings;
};

struct HealthReport {
  Health overall = Health::kUnknown;
  std::vector<GpuHealth> gpus;                   // One per GpuVerdict, same order.
  std::vector<const diagnose::Finding*> server;  // Health findings about no GPU, ranked.
};

// A GPU is failed / degraded / unknown when one of its health findings
// implies FAULT / DEGRADED / UNKNOWN (the worst wins), unknown when its
// verdict is UNKNOWN (no data), else healthy. The node is the worst of its
// GPUs and of the server-level health findings; unknown when it would be
// healthy but the diagnosis could not look (server verdict UNKNOWN, no GPU).
// The report points into `diagnosis`, which must outlive it.
HealthReport AssessHealth(const diagnose::Diagnosis& diagnosis, const Snapshot& latest);

}  // namespace gw::render

#endif  // GPUWARDEN_RENDER_HEALTH_H_
