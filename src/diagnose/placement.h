// Placing a stated need (--need N x SIZE [+nvlink]) on the GPUs of a Snapshot:
// which GPUs can take it now, or why not. Shared by the rules (FRAGMENTED,
// NEED_*) and the verdict (would it fit once reclaimable memory is freed?).
#ifndef GPUWARDEN_DIAGNOSE_PLACEMENT_H_
#define GPUWARDEN_DIAGNOSE_PLACEMENT_H_

#include <cstdint>
#include <map>
#include <set>
#include <span>
#include <vector>

#include "core/snapshot.h"
#include "diagnose/rules.h"

namespace gw::diagnose {

// A GPU's room for new work.
struct GpuRoom {
  unsigned index = 0;
  uint64_t total_bytes = 0;
  uint64_t free_bytes = 0;
  bool usable = false;  // Reachable, healthy enough, and new contexts allowed.
  double load_pct = 0;  // Utilisation, for preferring idle GPUs (unknown = 0).
};

// The rooms of every GPU whose total memory is known. Not usable: unreachable,
// free memory unknown, MIG enabled, compute mode PROHIBITED, EXCLUSIVE with a
// process (unless the GPU is in `exclusive_freed`), volatile double-bit ECC
// errors, or a failed row remap. `extra_free` adds bytes to a GPU's free
// memory (what reclaiming would free), capped at its total.
std::vector<GpuRoom> CollectRooms(const Snapshot& snapshot,
                                  const std::map<unsigned, uint64_t>& extra_free = {},
                                  const std::set<unsigned>& exclusive_freed = {});

enum class PlacementOutcome {
  kFits,           // `gpus` can take it now.
  kFragmented,     // Enough free memory in total, not on enough (NVLink-joined) GPUs.
  kUnsatisfiable,  // Not enough free memory in total.
  kNeverFits,      // Too few GPUs (or NVLink-joined GPUs) big enough, even when empty.
};

struct Placement {
  PlacementOutcome outcome = PlacementOutcome::kUnsatisfiable;
  std::vector<unsigned> gpus;     // kFits: the GPUs chosen, least loaded first.
  uint64_t free_total = 0;        // Free memory of the usable GPUs together.
  unsigned gpus_with_room = 0;    // Usable GPUs with bytes_per_gpu free.
  bool nvlink_unchecked = false;  // NVLink asked, but the topology is unknown.
};

// Places `need` on `rooms`. NVLink joins come from `topology` (nvlinks > 0);
// an empty topology means unknown: the NVLink requirement is then not checked
// (nvlink_unchecked).
Placement PlaceNeed(const NeedRequest& need, std::span<const GpuRoom> rooms,
                    std::span<const TopologyLink> topology);

}  // namespace gw::diagnose

#endif  // GPUWARDEN_DIAGNOSE_PLACEMENT_H_
