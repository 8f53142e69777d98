// The placement core: which GPUs can take new work of N x SIZE [+nvlink], in
// which order they are preferred, and, when the work cannot start now, why.
// One core for `gpuwarden why --need` (diagnose/placement.h adapts it) and the
// queue's policy (queue/policy.h calls it for every placement decision), so a
// user who asks `why --need 2x40G` and then runs `gpuwarden run --gpus 2
// --vram 40G` gets one answer. Pure: no I/O, no clock.
//
// Eligibility (Block): a GPU takes new work only when it is reachable, its
// free and total memory are known, MIG is off, its compute mode is not
// PROHIBITED, it is not EXCLUSIVE_PROCESS / EXCLUSIVE_THREAD with a compute
// process listed, and the diagnosis finds it healthy. Unreachable, memory
// unknown, MIG, PROHIBITED and unhealthy are "hard" blocks: the GPU stays
// unusable until someone acts. An EXCLUSIVE GPU that is taken (and a GPU a
// caller marks busy) is "soft": usable once the work on it ends.
//
// Room. A GPU's free memory is NVML's free memory (or total - used - reserved
// when only those were read), capped at total less the bytes of the processes
// listed on it: free and the process list are two separate reads, and an
// allocation between them must not count as free. A request of SIZE per GPU
// fits on a GPU when free - reservations - margin >= SIZE; the margin (512 MiB
// by default, gpuwardend --margin) is kept for the CUDA context and
// allocator slack. Reservations are the caller's (the queue's promises to
// jobs that have not allocated yet); `why --need` has none.
//
// Order. Among GPUs that fit: those with a repair waiting for a reset (a
// pending row remap the diagnosis lets placement use) last, so that they may
// be idle for it; then least busy first (unknown utilisation counts as
// busiest, never as idle), then the most room, then the lowest index.
//
// Several GPUs. With +nvlink every pair must be NVLink-joined (the first such
// set in preference order); otherwise the set with the smallest PCIe distance
// (the closest TopologyLevel cluster holding enough GPUs, then the set whose
// members rank best), or the first N in preference order when the topology is
// unknown. The topology is known when it lists at least one pair of the GPUs;
// pairs it does not list are as far apart as GPUs can be and not joined,
// except that for "never" a GPU it does not mention at all (its links were
// not read) may be joined to any other: a need that would rely on such a
// GPU's links is "topology unknown" (or "unusable" when that GPU is).
//
// Outcomes (Place): fits on these GPUs; fragmented (enough room in total on
// the eligible GPUs, not on enough of them, or not on enough NVLink-joined
// ones); not enough free; unusable (it would fit only if GPUs that are hard
// blocked could be used); topology unknown (NVLink asked for several GPUs and
// the topology is unknown: cannot be checked, never "fits"); never fits (too
// few GPUs, none big enough for SIZE + margin, or no NVLink-joined set that
// large, even with every GPU empty and healthy). A GPU whose total memory is
// unknown counts as big enough for "never" (never must be certain) and as
// unusable otherwise. At most kMaxGpus GPUs (the lowest indices) are used.
//
// Left out. Every answer lists the GPUs that could not take the request now
// and why (blocked, too small even empty, or too little room), so that a
// caller can name each with the step that brings it back; the totals and
// counts it quotes (room_total, gpus_with_room) are of eligible GPUs only.
#ifndef GPUWARDEN_PLACEMENT_PLACEMENT_H_
#define GPUWARDEN_PLACEMENT_PLACEMENT_H_

#include <array>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "core/snapshot.h"

namespace gw::placement {

inline constexpr uint64_t kDefaultMarginBytes = uint64_t{512} << 20;
inline constexpr size_t kMaxGpus = 64;

// One bit per GPU position (positions: GPUs sorted by index).
using Mask = uint64_t;
constexpr Mask Bit(unsigned pos) { return Mask{1} << pos; }
unsigned Count(Mask m);

// Why a GPU cannot take new work now.
enum class Block : uint8_t {
  kNone,
  kUnreachable,     // Hard: the probe did not reach it.
  kMemoryUnknown,   // Hard: its free or total memory is unknown.
  kMig,             // Hard: MIG mode is on (whole-GPU placement does not apply).
  kProhibited,      // Hard: compute mode PROHIBITED.
  kUnhealthy,       // Hard: a health finding (FAULT or DEGRADED hardware).
  kExclusiveTaken,  // Soft: EXCLUSIVE compute mode and a compute process runs.
  kBusy,            // Soft: the caller's judgement (e.g. compute saturated).
  kAllocated,       // Soft: a scheduler (Slurm) gave it to a running job.
};
bool IsHard(Block block);
// "unreachable", "memory unknown", "in MIG mode", "compute mode PROHIBITED",
// "unhealthy", "exclusive and taken", "busy", "allocated to a Slurm job"; ""
// for kNone.
std::string_view BlockText(Block block);

// What placement reads about one GPU.
struct GpuFacts {
  unsigned index = 0;
  Opt<uint64_t> total_bytes;
  uint64_t reserved_bytes = 0;  // The driver's reservation (never freed); 0 when not read.
  Opt<uint64_t> free_bytes;     // NVML free (or total - used - reserved).
  Opt<unsigned> util_pct;
  uint64_t listed_bytes = 0;  // Known bytes of the processes listed on it.
  bool unreachable = false;
  bool mig = false;
  Opt<ComputeMode> compute_mode;
  bool compute_process = false;  // A compute (not graphics-only) process is listed.
  bool healthy = true;           // The diagnosis' judgement; see diagnose::UnhealthyGpus().
  // Healthy enough to take work, but a repair waits for a GPU reset (a
  // pending row remap: diagnose::ResetPendingGpus()): placed on last.
  bool reset_pending = false;
};

// The facts of a Snapshot GPU; `healthy` is left true (health comes from the
// diagnosis' findings).
GpuFacts FactsOf(const Gpu& gpu);

// A GPU as placement sees it.
struct Candidate {
  unsigned index = 0;
  Opt<uint64_t> total_bytes;
  uint64_t reserved_bytes = 0;  // Never free: "never" counts total - reserved.
  Opt<uint64_t> free_bytes;     // The room before margin and reservations (capped, see above).
  Opt<unsigned> util_pct;
  bool exclusive = false;      // EXCLUSIVE compute mode: one process at a time.
  bool reset_pending = false;  // Usable; a repair waits for a reset: preferred last.
  Block block = Block::kNone;
};

// Eligibility and room of one GPU (the first block that applies, in enum order).
Candidate Assess(const GpuFacts& facts);

struct Request {
  unsigned gpus = 1;
  uint64_t bytes_per_gpu = 0;  // 0: a whole GPU (the queue decides what fits; Place: any room).
  bool nvlink = false;         // Only meaningful for gpus > 1.
};

// Could a request ever be placed, as the server stands?
enum class Ever : uint8_t {
  kPossible,         // On GPUs that are eligible, or will be once their work ends.
  kUnusable,         // Only if hard-blocked GPUs could be used.
  kTopologyUnknown,  // NVLink asked for several GPUs; the topology does not say.
  kNever,            // Not even with every GPU empty and healthy.
};

// Why kNever, for messages.
struct NeverWhy {
  enum class Kind : uint8_t { kNone, kTooFewGpus, kTooSmall, kNoNvlinkSet };
  Kind kind = Kind::kNone;
  unsigned server_gpus = 0;         // GPUs placement knows of.
  unsigned big_enough = 0;          // GPUs with capacity >= SIZE + margin (or total unknown).
  Opt<uint64_t> largest_capacity;   // Largest known capacity: total less the driver's reservation.
  unsigned largest_nvlink_set = 0;  // kNoNvlinkSet: the largest joined set of big-enough GPUs.
};

enum class Outcome : uint8_t {
  kFits,
  kFragmented,
  kNotEnoughFree,
  kUnusable,
  kTopologyUnknown,
  kNeverFits,
};
std::string_view OutcomeName(Outcome outcome);  // "fits", "fragmented", ...

// A GPU that could not take the request now, and why.
struct LeftOut {
  unsigned index = 0;
  Block block = Block::kNone;  // kNone: eligible, but see too_small / room.
  bool too_small = false;      // Its capacity cannot hold SIZE + margin even empty.
  int64_t room = 0;            // Its room for the request (free - reservations - margin).
};

struct Placement {
  Outcome outcome = Outcome::kNotEnoughFree;
  std::vector<unsigned> gpus;      // kFits: GPU indices, most preferred first.
  Mask chosen = 0;                 // kFits: the same, as positions.
  uint64_t room_total = 0;         // Room (after margin and reservations) of the eligible GPUs.
  unsigned gpus_with_room = 0;     // Eligible GPUs with SIZE of room.
  std::vector<unsigned> unusable;  // kUnusable: big-enough GPUs that are hard-blocked.
  NeverWhy never;                  // kNeverFits.
  // Every GPU not in `gpus` that could not take SIZE now, in index order
  // (GPUs that could, but were not needed, are not listed).
  std::vector<LeftOut> left_out;
};

// The GPUs of one server and their topology; the placement decisions.
class Server {
 public:
  // `gpus` are stable-sorted by index; duplicates after the first and GPUs
  // beyond kMaxGpus are dropped. Positions index that order.
  Server(std::span<const Candidate> gpus, std::span<const TopologyLink> topology,
         uint64_t margin_bytes = kDefaultMarginBytes);

  unsigned size() const { return static_cast<unsigned>(gpus_.size()); }
  const Candidate& at(unsigned pos) const { return gpus_[pos]; }
  int Pos(unsigned index) const;  // -1 when absent.
  Mask all() const { return all_; }
  Mask eligible() const { return eligible_; }  // Block kNone.
  Mask later() const { return later_; }        // Not hard-blocked.
  bool topology_known() const { return topology_known_; }
  int64_t margin() const { return margin_; }

  // The capped free memory of `pos`, 0 when unknown (such a GPU is not eligible).
  int64_t Free(unsigned pos) const { return free_[pos]; }
  // Free - margin: what a request may take with no reservations (may be negative).
  int64_t Room(unsigned pos) const { return free_[pos] - margin_; }

  // GPUs whose total memory holds `bytes` + margin, or is unknown; every GPU for 0.
  Mask BigEnough(uint64_t bytes) const;
  // The size of the largest pairwise NVLink-joined set within `m`.
  unsigned LargestNvlinkSet(Mask m) const;

  Ever CanEver(const Request& request) const;
  NeverWhy WhyNever(const Request& request) const;

  // True when `a` is preferred to `b` (both eligible), given each position's room.
  bool Better(unsigned a, unsigned b, std::span<const int64_t> room) const;
  // The GPUs to give `request` among `cand` (positions, each of which fits),
  // by the rules above; 0 when there is no such set.
  Mask Choose(const Request& request, Mask cand, std::span<const int64_t> room) const;

  // The whole decision, given each position's room (free - reservations -
  // margin; Room() when the caller reserves nothing).
  Placement Place(const Request& request, std::span<const int64_t> room) const;
  Placement Place(const Request& request) const;

 private:
  bool HasSet(Mask m, unsigned want, bool optimistic) const;
  bool Clique(const unsigned* order, unsigned n, unsigned from, unsigned want, Mask chosen,
              unsigned have, bool optimistic, Mask* out, long* budget) const;
  void LoadTopology(std::span<const TopologyLink> topology);

  std::vector<Candidate> gpus_;
  std::vector<int64_t> free_;
  int64_t margin_ = 0;
  Mask all_ = 0, eligible_ = 0, later_ = 0;
  bool topology_known_ = false;
  std::array<Mask, kMaxGpus> nvlink_{};  // Listed NVLink joins.
  std::array<Mask, kMaxGpus> maybe_{};   // Plus every pair with a GPU the topology does not list.
  std::array<std::vector<Mask>, 6> clusters_;  // Per TopologyLevel: GPUs at most that far apart.
};

// CanEver() for many requests on one Server (the queue asks it for every
// waiting job): the same answers, memoised per size class, GPU count and NVLink.
class EverCache {
 public:
  explicit EverCache(const Server& server);
  Ever CanEver(const Request& request) const;

 private:
  const Server& server_;
  std::vector<int64_t> sizes_;         // Distinct known totals, ascending.
  mutable std::vector<uint8_t> memo_;  // 0 = not yet asked; else Ever + 1.
};

}  // namespace gw::placement

#endif  // GPUWARDEN_PLACEMENT_PLACEMENT_H_
