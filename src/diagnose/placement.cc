#include "diagnose/placement.h"

#include "core/slurm_lookup.h"
#include "diagnose/health.h"

#include <algorithm>

namespace gw::diagnose {

std::vector<GpuRoom> CollectRooms(const Snapshot& snapshot,
                                  const std::map<unsigned, uint64_t>& extra_free,
                                  const std::set<unsigned>& exclusive_freed,
                                  std::span<const Finding> findings) {
  const std::map<unsigned, std::string> unhealthy = UnhealthyGpus(findings);
  std::vector<GpuRoom> rooms;
  rooms.reserve(snapshot.gpus.size());
  for (const Gpu& gpu : snapshot.gpus) {
    placement::GpuFacts facts = placement::FactsOf(gpu);
    facts.healthy = !unhealthy.count(gpu.index);
    const placement::Candidate c = placement::Assess(facts);
    GpuRoom room;
    room.index = c.index;
    room.total_bytes = c.total_bytes;
    room.reserved_bytes = c.reserved_bytes;
    room.free_bytes = c.free_bytes;
    room.util_pct = c.util_pct;
    room.block = c.block;
    if (room.block == placement::Block::kExclusiveTaken && exclusive_freed.count(gpu.index)) {
      room.block = placement::Block::kNone;
    }
    // Slurm's, however empty: no other work may start there while its job runs.
    if (room.block == placement::Block::kNone && !SlurmJobsOnGpu(snapshot, gpu.index).empty()) {
      room.block = placement::Block::kAllocated;
    }
    auto extra = extra_free.find(gpu.index);
    if (room.free_bytes && room.total_bytes && extra != extra_free.end()) {
      room.free_bytes = std::min(*room.total_bytes, *room.free_bytes + extra->second);
    }
    room.usable = room.block == placement::Block::kNone;
    rooms.push_back(room);
  }
  return rooms;
}

bool RoomTakes(const GpuRoom& room, uint64_t bytes_per_gpu) {
  if (!room.usable || !room.free_bytes || !room.total_bytes) return false;
  const uint64_t margin = placement::kDefaultMarginBytes;
  return *room.free_bytes >= margin && *room.free_bytes - margin >= bytes_per_gpu;
}

Placement PlaceNeed(const NeedRequest& need, std::span<const GpuRoom> rooms,
                    std::span<const TopologyLink> topology) {
  std::vector<placement::Candidate> cands;
  cands.reserve(rooms.size());
  for (const GpuRoom& room : rooms) {
    placement::Candidate c;
    c.index = room.index;
    c.total_bytes = room.total_bytes;
    c.reserved_bytes = room.reserved_bytes;
    c.free_bytes = room.free_bytes;
    c.util_pct = room.util_pct;
    // A room a caller made unusable without a reason is busy for now.
    c.block = room.usable                             ? placement::Block::kNone
              : room.block != placement::Block::kNone ? room.block
                                                      : placement::Block::kBusy;
    cands.push_back(c);
  }
  const placement::Server server(cands, topology, placement::kDefaultMarginBytes);
  const placement::Placement p =
      server.Place({.gpus = need.gpus, .bytes_per_gpu = need.bytes_per_gpu, .nvlink = need.nvlink});
  Placement out;
  switch (p.outcome) {
    case placement::Outcome::kFits:
      out.outcome = PlacementOutcome::kFits;
      break;
    case placement::Outcome::kFragmented:
      out.outcome = PlacementOutcome::kFragmented;
      break;
    case placement::Outcome::kNotEnoughFree:
      out.outcome = PlacementOutcome::kUnsatisfiable;
      break;
    case placement::Outcome::kUnusable:
      out.outcome = PlacementOutcome::kUnusable;
      break;
    case placement::Outcome::kTopologyUnknown:
      out.outcome = PlacementOutcome::kCannotCheck;
      break;
    case placement::Outcome::kNeverFits:
      out.outcome = PlacementOutcome::kNeverFits;
      break;
  }
  out.core = p.outcome;
  out.gpus = p.gpus;
  out.free_total = p.room_total;
  out.gpus_with_room = p.gpus_with_room;
  out.unusable = p.unusable;
  out.never = p.never;
  out.margin_bytes = static_cast<uint64_t>(server.margin());
  return out;
}

}  // namespace gw::diagnose
