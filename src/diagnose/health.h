// Health: the judgement behind `gpuwarden health` and the queue daemon's
// "do not place work here" — which findings are about the health of the
// hardware and the driver, the health of each GPU, and of the server. Pure.
//
// A health finding is one whose category is about the driver or the hardware
// (driver, memory, bus, thermal, power, nvlink, hardware, application), or
// one that says gpuwarden could not read something (it implies UNKNOWN:
// NO_PERMISSION, NO_GPU_VISIBLE, ...). Capacity, holders and settings
// (shortage, contention, holder, configuration) are not: a busy GPU is a
// healthy one.
//
// UNKNOWN is never healthy. A GPU is unread when the probe could not read it
// (Gpu::unreachable: no handle, lost, no permission, its call did not return)
// or read nothing about it (no memory, utilisation or temperature: not reached
// before the probe's deadline, or NVML had nothing to say). An unread GPU is
// unknown unless a finding about it is worse (a lost GPU is failed).
#ifndef GPUWARDEN_DIAGNOSE_HEALTH_H_
#define GPUWARDEN_DIAGNOSE_HEALTH_H_

#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/snapshot.h"
#include "diagnose/finding.h"
#include "diagnose/rules.h"

namespace gw::diagnose {

// From good to bad: healthy < unknown < degraded < failed.
enum class Health { kHealthy, kUnknown, kDegraded, kFailed };

// "healthy", "unknown", "degraded", "failed".
std::string_view HealthName(Health health);

// FAULT -> failed, DEGRADED -> degraded, UNKNOWN -> unknown; OK, BUSY and
// RECLAIMABLE -> healthy.
Health HealthOfVerdict(Verdict verdict);

// The verdict word of a health: failed -> FAULT, degraded -> DEGRADED,
// unknown -> UNKNOWN, healthy -> OK.
Verdict VerdictOfHealth(Health health);

// Driver, memory, bus, thermal, power, nvlink, hardware, application.
bool IsHealthCategory(Category category);

// A health category, or a finding that implies UNKNOWN (could not read).
bool IsHealthFinding(const Finding& finding);

struct GpuHealth {
  unsigned index = 0;
  Opt<std::string> pci_bus_id;
  Health health = Health::kHealthy;
  // Could not be read (see above); `unread_reason` says why, for a person:
  // the probe's error, or "no data".
  bool unread = false;
  std::string unread_reason;
  // Health findings about this GPU, in the given (ranked) order.
  std::vector<const Finding*> findings;
};

struct HealthReport {
  // The worst of the GPUs and of the server-level health findings (a
  // server-level finding that implies UNKNOWN makes it at least unknown);
  // unknown when there is no GPU to judge.
  Health overall = Health::kUnknown;
  std::vector<GpuHealth> gpus;         // One per GPU of the snapshot, in its order.
  std::vector<const Finding*> server;  // Health findings about no GPU, in order.
  std::vector<unsigned> unread;        // Indices of the unread GPUs, ascending.
};

// The health of `latest` from the (ranked) findings of its diagnosis. The
// report points into `findings`, which must outlive it.
HealthReport AssessHealth(std::span<const Finding> findings, const Snapshot& latest);

// Placement and health: the one rule, for `why --need` and the queue alike.
//
// A health finding that marks its GPU DEGRADED or FAULT keeps new work off
// it, except where `placement` allows the finding: ROW_REMAP_PENDING alone
// (use_remap_pending, the default). NVIDIA's guidance: a pending remap leaves
// the GPU usable; the next GPU reset activates it. Every other degraded
// finding keeps the GPU out, the contained uncorrectable error
// (ECC_DBE_CONTAINED, whose remap also waits for a reset) included: NVIDIA
// says the other applications keep running, not that new work should start
// before the reset (docs/diagnosis.md "Placement").

// True when `finding` is a health finding of DEGRADED or worse that keeps new
// work off its GPUs under `placement`.
bool BlocksPlacement(const Finding& finding, const PlacementHealth& placement);

// True when `finding` is a DEGRADED health finding that `placement` lets new
// work start beside (ROW_REMAP_PENDING with use_remap_pending): usable, with
// a reset to run when the GPU is idle.
bool AllowedByPlacement(const Finding& finding, const PlacementHealth& placement);

// The GPUs on which no new work should start for their health: those a
// finding that BlocksPlacement() is about, each with "CODE: message" of the
// worst such finding. (Unread GPUs are left to placement, which never uses a
// GPU it could not read.)
std::map<unsigned, std::string> UnhealthyGpus(std::span<const Finding> findings,
                                              const PlacementHealth& placement = {});

// The GPUs that take new work although a health finding is about them (every
// such finding AllowedByPlacement()): GPU -> "CODE: message" of the first.
// Placement uses them last and says why (a reset waits for them).
std::map<unsigned, std::string> ResetPendingGpus(std::span<const Finding> findings,
                                                 const PlacementHealth& placement = {});

}  // namespace gw::diagnose

#endif  // GPUWARDEN_DIAGNOSE_HEALTH_H_
