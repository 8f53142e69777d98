#include "diagnose/placement.h"

#include <fmt/format.h>

#include <algorithm>

#include "core/slurm_lookup.h"
#include "core/units.h"
#include "diagnose/health.h"

namespace gw::diagnose {

std::vector<GpuRoom> CollectRooms(const Snapshot& snapshot,
                                  const std::map<unsigned, uint64_t>& extra_free,
                                  const std::set<unsigned>& exclusive_freed,
                                  std::span<const Finding> findings,
                                  const PlacementHealth& health) {
  const std::map<unsigned, std::string> unhealthy = UnhealthyGpus(findings, health);
  const std::map<unsigned, std::string> reset_pending = ResetPendingGpus(findings, health);
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
    if (auto r = reset_pending.find(gpu.index); r != reset_pending.end()) {
      room.reset_pending = r->second;
    }
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
    c.reset_pending = !room.reset_pending.empty();
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
  out.left_out = p.left_out;
  return out;
}

namespace {

const GpuRoom* RoomOfGpu(std::span<const GpuRoom> rooms, unsigned gpu) {
  for (const GpuRoom& r : rooms) {
    if (r.index == gpu) return &r;
  }
  return nullptr;
}

// The finding that keeps new work off `gpu` (the worst, the first of equals).
const Finding* BlockingFindingOf(std::span<const Finding> findings, unsigned gpu,
                                 const PlacementHealth& health) {
  const Finding* worst = nullptr;
  for (const Finding& f : findings) {
    if (!BlocksPlacement(f, health)) continue;
    if (std::find(f.gpus.begin(), f.gpus.end(), gpu) == f.gpus.end()) continue;
    if (worst == nullptr || VerdictRank(f.implies) > VerdictRank(worst->implies)) worst = &f;
  }
  return worst;
}

// What brings a GPU back from a health finding: the administrator's step that
// resets or reboots, else the first administrator step, else the first step.
std::string RecoveryStepOf(const Finding& f) {
  const std::string* admin = nullptr;
  for (const std::string& step : f.next_steps) {
    if (step.rfind("admin:", 0) != 0) continue;
    if (step.find("reset") != std::string::npos || step.find("reboot") != std::string::npos) {
      return step;
    }
    if (admin == nullptr) admin = &step;
  }
  if (admin != nullptr) return *admin;
  return f.next_steps.empty() ? std::string() : f.next_steps.front();
}

std::string RemapPendingStep(unsigned gpu) {
  return fmt::format("reset it when idle to activate the remap: see gpuwarden reset --plan {}",
                     gpu);
}

// Bytes held on `gpu` by holders that do no work (IDLE, ORPHAN, ZOMBIE,
// INVISIBLE holders about that GPU alone), as the verdict counts them.
uint64_t IdleHeldOn(std::span<const Finding> findings, unsigned gpu) {
  uint64_t held = 0;
  for (const Finding& f : findings) {
    if (f.category != Category::kHolder || f.implies != Verdict::kReclaimable) continue;
    if (f.gpus.size() != 1 || f.gpus.front() != gpu) continue;
    const Opt<double> bytes = EvidenceNumber(f, kHeldEvidence);
    if (bytes && *bytes > 0) held += static_cast<uint64_t>(*bytes);
  }
  return held;
}

Exclusion HealthExclusion(unsigned gpu, const Finding& f) {
  Exclusion e;
  e.gpu = gpu;
  if (f.code == "ROW_REMAP_PENDING") {
    // Only left out when [placement] use_remap_pending = false.
    e.brief = "row remap pending";
    e.text = fmt::format(
        "GPU {}: row remap pending (usable by NVIDIA's guidance, left out by [placement] "
        "use_remap_pending = false; {})",
        gpu, RemapPendingStep(gpu));
    return e;
  }
  e.brief = MessageWithoutSubject(f.message, gpu);
  e.text = fmt::format("GPU {}: {} [{}]", gpu, e.brief, f.code);
  const std::string step = RecoveryStepOf(f);
  if (!step.empty()) e.text += ": " + step;
  return e;
}

}  // namespace

std::vector<Exclusion> DescribeLeftOut(const NeedRequest& need, const Placement& p,
                                       std::span<const GpuRoom> rooms, const Snapshot& snapshot,
                                       std::span<const Finding> findings,
                                       const PlacementHealth& health) {
  using placement::Block;
  std::vector<Exclusion> out;
  for (const placement::LeftOut& left : p.left_out) {
    const unsigned g = left.index;
    const GpuRoom* room = RoomOfGpu(rooms, g);
    const Finding* sick = BlockingFindingOf(findings, g, health);
    const Gpu* gpu = nullptr;
    for (const Gpu& candidate : snapshot.gpus) {
      if (candidate.index == g) gpu = &candidate;
    }
    Exclusion e;
    e.gpu = g;
    switch (left.block) {
      case Block::kUnhealthy:
      case Block::kUnreachable:
      case Block::kMemoryUnknown:
        if (sick != nullptr) {
          e = HealthExclusion(g, *sick);
          break;
        }
        e.brief = "could not be read";
        e.text = fmt::format("GPU {}: could not be read", g);
        if (gpu != nullptr && gpu->unreachable && !gpu->unreachable->message.empty()) {
          e.text += " (" + gpu->unreachable->message + ")";
        } else if (left.block == Block::kMemoryUnknown) {
          e.text += " (its memory is unknown)";
        }
        break;
      case Block::kMig:
        e.brief = "in MIG mode";
        e.text = fmt::format(
            "GPU {}: in MIG mode (placement takes whole GPUs): admin: turn MIG off when it is "
            "idle (sudo nvidia-smi -i {} -mig 0)",
            g, g);
        break;
      case Block::kProhibited:
        e.brief = "compute mode PROHIBITED";
        e.text = fmt::format(
            "GPU {}: compute mode PROHIBITED: admin: allow work (sudo nvidia-smi -i {} -c DEFAULT)",
            g, g);
        break;
      case Block::kExclusiveTaken:
        e.brief = "exclusive and taken";
        e.text = fmt::format(
            "GPU {}: compute mode EXCLUSIVE and a process runs on it: free once it ends", g);
        break;
      case Block::kBusy:
        e.brief = "busy";
        e.text = fmt::format("GPU {}: busy (compute saturated): wait for its work to end", g);
        break;
      case Block::kAllocated:
        e.brief = "allocated to a Slurm job";
        e.text = fmt::format("GPU {}: allocated to a Slurm job: free once the job ends", g);
        break;
      case Block::kNone: {
        const Opt<uint64_t> total = room != nullptr ? room->total_bytes : std::nullopt;
        if (left.too_small) {
          const uint64_t capacity =
              total ? *total - std::min(*total, room->reserved_bytes) : uint64_t{0};
          e.brief = fmt::format("{} in all", FormatBytes(capacity));
          e.text = fmt::format(
              "GPU {}: can give {} in all, less than the {} asked and the {} kept free: never "
              "fits on it",
              g, FormatBytes(capacity), FormatBytes(need.bytes_per_gpu),
              FormatBytes(p.margin_bytes));
          break;
        }
        const uint64_t free = room != nullptr ? room->free_bytes.value_or(0) : 0;
        e.brief = fmt::format("{} free", FormatBytes(free));
        e.text =
            fmt::format("GPU {}: {} free of the {} asked (+{} kept free)", g, FormatBytes(free),
                        FormatBytes(need.bytes_per_gpu), FormatBytes(p.margin_bytes));
        if (const uint64_t held = IdleHeldOn(findings, g); held > 0) {
          e.text += fmt::format("; {} held by idle holders: gpuwarden clean --gpu {}",
                                FormatBytes(held), g);
        } else if (gpu != nullptr && !gpu->processes.empty()) {
          std::vector<std::string> pids;
          for (const GpuProcess& proc : gpu->processes) {
            if (pids.size() < 3) pids.push_back(std::to_string(proc.pid));
          }
          e.text += fmt::format("; in use by PID {}{}: free once that work ends",
                                fmt::join(pids, ", "), gpu->processes.size() > 3 ? ", ..." : "");
        }
        break;
      }
    }
    out.push_back(std::move(e));
  }
  return out;
}

std::vector<Exclusion> DescribeResetPending(const Placement& p, std::span<const GpuRoom> rooms) {
  std::vector<Exclusion> out;
  std::vector<unsigned> chosen = p.gpus;
  std::sort(chosen.begin(), chosen.end());
  for (unsigned g : chosen) {
    const GpuRoom* room = RoomOfGpu(rooms, g);
    if (room == nullptr || room->reset_pending.empty()) continue;
    Exclusion e;
    e.gpu = g;
    if (room->reset_pending.rfind("ROW_REMAP_PENDING:", 0) == 0) {
      e.brief = "row remap pending";
      e.text = fmt::format("GPU {}: row remap pending (usable; {})", g, RemapPendingStep(g));
    } else {
      e.brief = room->reset_pending;
      e.text = fmt::format("GPU {}: {} (usable; reset it when idle: see gpuwarden reset --plan {})",
                           g, room->reset_pending, g);
    }
    out.push_back(std::move(e));
  }
  return out;
}

}  // namespace gw::diagnose
