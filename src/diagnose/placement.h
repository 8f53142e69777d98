// Placing a stated need (--need N x SIZE [+nvlink]) on the GPUs of a Snapshot:
// which GPUs can take it now, or why not. Shared by the rules (FRAGMENTED,
// NEED_*) and the verdict (would it fit once reclaimable memory is freed?).
//
// A thin adapter over the placement core (placement/placement.h), which the
// queue's policy decides with too: same eligibility, same room (free capped
// at total less the listed processes' bytes, less the safety margin), same
// order (unknown utilisation counts as busiest), same GPU sets, same outcome.
#ifndef GPUWARDEN_DIAGNOSE_PLACEMENT_H_
#define GPUWARDEN_DIAGNOSE_PLACEMENT_H_

#include <cstdint>
#include <map>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "core/snapshot.h"
#include "diagnose/finding.h"
#include "diagnose/rules.h"
#include "placement/placement.h"

namespace gw::diagnose {

// A GPU's room for new work.
struct GpuRoom {
  unsigned index = 0;
  Opt<uint64_t> total_bytes;
  uint64_t reserved_bytes = 0;  // The driver's reservation, never free.
  Opt<uint64_t> free_bytes;     // Capped free memory (plus `extra_free`), before the margin.
  Opt<unsigned> util_pct;       // Unknown orders as busiest.
  bool usable = false;          // Eligible now; a caller may clear it (then: busy for now).
  placement::Block block = placement::Block::kNone;  // Why not usable, when it is not.
};

// The rooms of every GPU of the snapshot, judged by placement::Assess(); the
// GPUs in UnhealthyGpus(findings) (diagnose/health.h) are unhealthy. `extra_free` adds bytes to a
// GPU's free memory (what reclaiming would free), capped at its total; a GPU in
// `exclusive_freed` is not blocked by its EXCLUSIVE holder.
std::vector<GpuRoom> CollectRooms(const Snapshot& snapshot,
                                  const std::map<unsigned, uint64_t>& extra_free = {},
                                  const std::set<unsigned>& exclusive_freed = {},
                                  std::span<const Finding> findings = {});

// Whether `room` can take `bytes_per_gpu` of a need now, as PlaceNeed judges
// one GPU: usable, and free - margin >= bytes_per_gpu. For marking a GPU that
// cannot take the need "BUSY for you".
bool RoomTakes(const GpuRoom& room, uint64_t bytes_per_gpu);

enum class PlacementOutcome {
  kFits,           // `gpus` can take it now.
  kFragmented,     // Enough room in total, not on enough (NVLink-joined) GPUs.
  kUnsatisfiable,  // Not enough room in total.
  kNeverFits,      // Too few GPUs (or NVLink-joined GPUs) big enough, even when empty.
  kUnusable,       // It would fit only on GPUs that cannot take work (`unusable`).
  kCannotCheck,    // NVLink asked for several GPUs and the topology is unknown.
};

struct Placement {
  PlacementOutcome outcome = PlacementOutcome::kUnsatisfiable;
  placement::Outcome core = placement::Outcome::kNotEnoughFree;  // The same, as the core says it.
  std::vector<unsigned> gpus;      // kFits: the GPUs chosen, most preferred first.
  uint64_t free_total = 0;         // Room (after the margin) of the usable GPUs together.
  unsigned gpus_with_room = 0;     // Usable GPUs with bytes_per_gpu of room.
  std::vector<unsigned> unusable;  // kUnusable: the big-enough GPUs that cannot be used.
  placement::NeverWhy never;       // kNeverFits: why.
  uint64_t margin_bytes = 0;       // The margin kept on each GPU.
};

// Places `need` on `rooms` with the core (margin placement::kDefaultMarginBytes,
// as gpuwardend's default). NVLink joins and PCIe distances come from `topology`;
// an empty topology is unknown (NVLink then cannot be checked: kCannotCheck).
Placement PlaceNeed(const NeedRequest& need, std::span<const GpuRoom> rooms,
                    std::span<const TopologyLink> topology);

}  // namespace gw::diagnose

#endif  // GPUWARDEN_DIAGNOSE_PLACEMENT_H_
