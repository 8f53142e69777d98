// Internal to the rules: the one judgement of a GPU's memory. Its ECC
// counters, the memory Xids of its current kernel log (48, 63, 64, 92, 94, 95,
// 140, 171, 172), its remapped rows and its retired pages are read together,
// because each changes what the others mean: a volatile uncorrectable count of
// 1 is a contained error the GPU serves on after (Xid 94, "RST: No") or an
// uncontained one that needs a reset (Xid 95), and only the log says which.
// The memory rules (rules_health.cc) and the Xid rule read this judgement;
// none of them judges one of these signals alone. Not a public API.
#ifndef GPUWARDEN_DIAGNOSE_MEMORY_HEALTH_H_
#define GPUWARDEN_DIAGNOSE_MEMORY_HEALTH_H_

#include <map>
#include <span>
#include <string>
#include <string_view>

#include "core/snapshot.h"
#include "diagnose/rules.h"
#include "diagnose/xid_incidents.h"

namespace gw::diagnose::internal {

// From good to bad; the judgement is the worst that applies.
enum class MemoryVerdict {
  kOk,            // No uncorrectable error, nothing waiting for a reset.
  kResetPending,  // A row remap or page retirement waits for a reset: usable until then.
  // Uncorrectable errors, every one shown contained: only SRAM in the split
  // counters (below NVIDIA's threshold), or an Xid 94 with no report of an
  // uncontained error. NVIDIA: restart the application that hit it; the GPU
  // serves the others; reset it at the next idle window.
  kContained,
  // An uncorrectable error not shown contained: Xid 95 or 140, an Xid 94 whose
  // text asks for a reset ("RST: Yes"), or a volatile count that neither the
  // counters nor the log shows contained. Drain and reset.
  kUncontained,
  // The memory can no longer repair itself: row remapping failed (or Xid 64),
  // the remap or retirement limits are reached, or the SRAM threshold is
  // exceeded. RMA.
  kReplace,
};

struct MemoryHealth {
  MemoryVerdict verdict = MemoryVerdict::kOk;
  // Uncorrectable errors since the driver loaded are all shown contained
  // (and none shown uncontained).
  bool contained = false;
  // Some uncorrectable error is shown not contained (Xid 95, 140, or 94 with "RST: Yes").
  bool uncontained = false;
  // Contained by the split counters alone (SRAM only, below the threshold).
  bool contained_by_counters = false;
  // The memory Xids of the current kernel log on this GPU: code -> events.
  std::map<unsigned, unsigned> xids;
  // The evidence in one line, e.g. "1 volatile uncorrectable ECC error;
  // contained (Xid 94 x1, RST: No); row remap pending"; empty when nothing
  // was seen.
  std::string summary;
};

// The memory Xids: the double-bit report and its DRAM / SRAM details (48,
// 171, 172), remap / retirement events and failures (63, 64), the single-bit
// storm (92), contained and uncontained errors (94, 95) and the unrecovered
// escape (140).
bool IsMemoryXid(unsigned xid);
// The Xids that report an uncorrectable error whose containment another
// signal tells: 48, 171, 172.
bool IsDoubleBitReport(unsigned xid);

// REQUIRES: every incident is current and on `gpu`.
MemoryHealth JudgeMemory(const Gpu& gpu, std::span<const XidIncident* const> incidents,
                         const DiagnoseOptions& options);

std::string_view MemoryVerdictName(MemoryVerdict v);

}  // namespace gw::diagnose::internal

#endif  // GPUWARDEN_DIAGNOSE_MEMORY_HEALTH_H_
