// Placing a stated need (--need N x SIZE [+nvlink]) on the GPUs of a Snapshot:
// which GPUs can take it now, or why not. Shared by the rules (FRAGMENTED,
// NEED_*) and the verdict (would it fit once reclaimable memory is freed?).
//
// A thin adapter over the placement core (placement/placement.h), which the
// queue's policy decides with too: same eligibility, same room (free capped
// at total less the listed processes' bytes, less the safety margin), same
// order (unknown utilisation counts as busiest), same GPU sets, same outcome.
// Health is diagnose/health.h's one rule (UnhealthyGpus, ResetPendingGpus)
// under the caller's PlacementHealth: a pending row remap alone leaves a GPU
// usable by default, placed on last. Every GPU the answer leaves out is named
// with its reason and the step that brings it back (DescribeLeftOut).
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
  // Usable, but a repair waits for a GPU reset (ResetPendingGpus): "CODE:
  // message" of its finding; empty otherwise. Placed on last.
  std::string reset_pending;
};

// The rooms of every GPU of the snapshot, judged by placement::Assess(); the
// GPUs in UnhealthyGpus(findings, health) (diagnose/health.h) are
// unhealthy, those in ResetPendingGpus(findings, health) usable with a
// reset pending. `extra_free` adds bytes to a GPU's free memory (what
// reclaiming would free), capped at its total; a GPU in `exclusive_freed` is
// not blocked by its EXCLUSIVE holder.
std::vector<GpuRoom> CollectRooms(const Snapshot& snapshot,
                                  const std::map<unsigned, uint64_t>& extra_free = {},
                                  const std::set<unsigned>& exclusive_freed = {},
                                  std::span<const Finding> findings = {},
                                  const PlacementHealth& health = {});

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
  // Every GPU that could not take the need now (the core's left_out).
  std::vector<placement::LeftOut> left_out;
};

// Places `need` on `rooms` with the core (margin placement::kDefaultMarginBytes,
// as gpuwardend's default). NVLink joins and PCIe distances come from `topology`;
// an empty topology is unknown (NVLink then cannot be checked: kCannotCheck).
Placement PlaceNeed(const NeedRequest& need, std::span<const GpuRoom> rooms,
                    std::span<const TopologyLink> topology);

// One GPU a placement answer leaves out, or uses with a caveat.
struct Exclusion {
  unsigned gpu = 0;
  // Short, for a line that names several: "row remap pending", "39.2 GiB free".
  std::string brief;
  // "GPU 3: 12 GiB free of the 40 GiB asked; 30 GiB held by idle holders:
  // gpuwarden clean --gpu 3", "GPU 5: fell off the bus (Xid 79) [XID_FATAL]:
  // reboot ...", "GPU 2: could not be read (...)": the reason and the step
  // that brings it back.
  std::string text;
};

// Each GPU of `p.left_out`, in index order, with its reason and step. Health
// reasons come from `findings` (the blocking finding of each GPU, its
// message and first administrator step), idle holders' memory from the
// reclaimable holder findings, processes from `snapshot`.
std::vector<Exclusion> DescribeLeftOut(const NeedRequest& need, const Placement& p,
                                       std::span<const GpuRoom> rooms, const Snapshot& snapshot,
                                       std::span<const Finding> findings,
                                       const PlacementHealth& health);

// The GPUs of `p.gpus` (kFits) that are usable with a reset pending, with
// what to do: "GPU 1: row remap pending (usable; reset it when idle to
// activate the remap: see gpuwarden reset --plan 1)".
std::vector<Exclusion> DescribeResetPending(const Placement& p, std::span<const GpuRoom> rooms);

}  // namespace gw::diagnose

#endif  // GPUWARDEN_DIAGNOSE_PLACEMENT_H_
