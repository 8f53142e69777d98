#include "placement/placement.h"

#include <algorithm>
#include <bit>
#include <limits>
#include <numeric>

namespace gw::placement {
namespace {

// Larger sizes are clamped so that byte arithmetic stays in int64_t; no GPU
// has 2^62 bytes, so a clamped request still never fits.
constexpr int64_t kBigBytes = int64_t{1} << 62;

int64_t Signed(uint64_t bytes) {
  return static_cast<int64_t>(std::min<uint64_t>(bytes, kBigBytes));
}

// What a GPU's total must hold for `bytes` per GPU: bytes + margin, saturating.
int64_t Want(uint64_t bytes, int64_t margin) {
  if (bytes == 0) return 0;
  const int64_t b = Signed(bytes);
  return b >= kBigBytes - margin ? kBigBytes : b + margin;
}

unsigned Low(Mask m) { return static_cast<unsigned>(std::countr_zero(m)); }

// The most a GPU can ever give one job: its total less the driver's
// reservation, which no ending job frees. Unknown total: unknown.
Opt<uint64_t> Capacity(const Candidate& c) {
  if (!c.total_bytes) return std::nullopt;
  return *c.total_bytes - std::min(*c.total_bytes, c.reserved_bytes);
}

// The clique searches are exponential in theory; servers have a few dozen
// GPUs at most, and the budget only guards against a pathological topology.
constexpr long kCliqueBudget = 100'000;

}  // namespace

unsigned Count(Mask m) { return static_cast<unsigned>(std::popcount(m)); }

bool IsHard(Block block) {
  switch (block) {
    case Block::kUnreachable:
    case Block::kMemoryUnknown:
    case Block::kMig:
    case Block::kProhibited:
    case Block::kUnhealthy:
      return true;
    case Block::kNone:
    case Block::kExclusiveTaken:
    case Block::kBusy:
    case Block::kAllocated:
      return false;
  }
  return true;
}

std::string_view BlockText(Block block) {
  switch (block) {
    case Block::kNone:
      return "";
    case Block::kUnreachable:
      return "unreachable";
    case Block::kMemoryUnknown:
      return "memory unknown";
    case Block::kMig:
      return "in MIG mode";
    case Block::kProhibited:
      return "compute mode PROHIBITED";
    case Block::kUnhealthy:
      return "unhealthy";
    case Block::kExclusiveTaken:
      return "exclusive and taken";
    case Block::kBusy:
      return "busy";
    case Block::kAllocated:
      return "allocated to a Slurm job";
  }
  return "";
}

std::string_view OutcomeName(Outcome outcome) {
  switch (outcome) {
    case Outcome::kFits:
      return "fits";
    case Outcome::kFragmented:
      return "fragmented";
    case Outcome::kNotEnoughFree:
      return "not_enough_free";
    case Outcome::kUnusable:
      return "unusable";
    case Outcome::kTopologyUnknown:
      return "topology_unknown";
    case Outcome::kNeverFits:
      return "never_fits";
  }
  return "";
}

GpuFacts FactsOf(const Gpu& gpu) {
  GpuFacts f;
  f.index = gpu.index;
  f.total_bytes = gpu.memory.total_bytes;
  f.reserved_bytes = gpu.memory.reserved_bytes.value_or(0);
  f.free_bytes = gpu.memory.free_bytes;
  const MemoryInfo& m = gpu.memory;
  if (!f.free_bytes && m.total_bytes && m.used_bytes &&
      *m.used_bytes + m.reserved_bytes.value_or(0) <= *m.total_bytes) {
    f.free_bytes = *m.total_bytes - *m.used_bytes - m.reserved_bytes.value_or(0);
  }
  f.util_pct = gpu.utilization_gpu_pct;
  for (const GpuProcess& p : gpu.processes) {
    f.listed_bytes += p.used_memory_bytes.value_or(0);
    if (p.type != GpuProcessType::kGraphics) f.compute_process = true;
  }
  f.unreachable = gpu.unreachable.has_value();
  f.mig = gpu.mig_mode_current.value_or(false);
  f.compute_mode = gpu.compute_mode;
  return f;
}

Candidate Assess(const GpuFacts& facts) {
  Candidate c;
  c.index = facts.index;
  c.total_bytes = facts.total_bytes;
  c.reserved_bytes = facts.reserved_bytes;
  c.util_pct = facts.util_pct;
  c.reset_pending = facts.reset_pending;
  c.exclusive = facts.compute_mode && (*facts.compute_mode == ComputeMode::kExclusiveProcess ||
                                       *facts.compute_mode == ComputeMode::kExclusiveThread);
  if (facts.free_bytes && facts.total_bytes) {
    const uint64_t total = *facts.total_bytes;
    const uint64_t cap = facts.listed_bytes >= total ? 0 : total - facts.listed_bytes;
    c.free_bytes = std::min(*facts.free_bytes, cap);
  }
  if (facts.unreachable) {
    c.block = Block::kUnreachable;
  } else if (!c.free_bytes) {
    c.block = Block::kMemoryUnknown;
  } else if (facts.mig) {
    c.block = Block::kMig;
  } else if (facts.compute_mode == ComputeMode::kProhibited) {
    c.block = Block::kProhibited;
  } else if (!facts.healthy) {
    c.block = Block::kUnhealthy;
  } else if (c.exclusive && facts.compute_process) {
    c.block = Block::kExclusiveTaken;
  }
  return c;
}

Server::Server(std::span<const Candidate> gpus, std::span<const TopologyLink> topology,
               uint64_t margin_bytes)
    : gpus_(gpus.begin(), gpus.end()), margin_(Signed(margin_bytes)) {
  std::stable_sort(gpus_.begin(), gpus_.end(),
                   [](const Candidate& a, const Candidate& b) { return a.index < b.index; });
  gpus_.erase(
      std::unique(gpus_.begin(), gpus_.end(),
                  [](const Candidate& a, const Candidate& b) { return a.index == b.index; }),
      gpus_.end());
  if (gpus_.size() > kMaxGpus) gpus_.resize(kMaxGpus);
  free_.resize(gpus_.size());
  for (unsigned p = 0; p < gpus_.size(); ++p) {
    const Candidate& c = gpus_[p];
    all_ |= Bit(p);
    free_[p] = c.free_bytes ? Signed(*c.free_bytes) : 0;
    // An eligible GPU has its memory known, whatever the caller set.
    const bool known = c.free_bytes && c.total_bytes;
    if (c.block == Block::kNone && known) eligible_ |= Bit(p);
    if (!IsHard(c.block) && known) later_ |= Bit(p);
  }
  LoadTopology(topology);
}

int Server::Pos(unsigned index) const {
  auto it = std::lower_bound(gpus_.begin(), gpus_.end(), index,
                             [](const Candidate& c, unsigned i) { return c.index < i; });
  if (it == gpus_.end() || it->index != index) return -1;
  return static_cast<int>(it - gpus_.begin());
}

void Server::LoadTopology(std::span<const TopologyLink> topology) {
  const unsigned n = size();
  // Pairs the topology does not list are as far apart as GPUs can be.
  std::vector<int> level(static_cast<size_t>(n) * n, static_cast<int>(TopologyLevel::kSystem));
  Mask listed = 0;
  for (const TopologyLink& link : topology) {
    const int a = Pos(link.gpu_a);
    const int b = Pos(link.gpu_b);
    if (a < 0 || b < 0 || a == b) continue;
    topology_known_ = true;
    listed |= Bit(static_cast<unsigned>(a)) | Bit(static_cast<unsigned>(b));
    level[a * n + b] = level[b * n + a] = static_cast<int>(link.level);
    if (link.nvlinks > 0) {
      nvlink_[a] |= Bit(static_cast<unsigned>(b));
      nvlink_[b] |= Bit(static_cast<unsigned>(a));
    }
  }
  // For "never": a GPU the topology does not mention at all may be joined to
  // any other (its links were not read, e.g. it is unreachable).
  for (unsigned p = 0; p < n; ++p) {
    maybe_[p] = nvlink_[p] | ((listed & Bit(p)) ? all_ & ~listed : all_);
    maybe_[p] &= ~Bit(p);
  }
  constexpr std::array<TopologyLevel, 6> kLevels = {
      TopologyLevel::kInternal,   TopologyLevel::kSingle, TopologyLevel::kMultiple,
      TopologyLevel::kHostBridge, TopologyLevel::kNode,   TopologyLevel::kSystem};
  for (size_t l = 0; l < kLevels.size(); ++l) {
    // Connected components of "at most this far apart"; PCIe levels form a
    // tree, so these are the disjoint clusters at that level.
    std::vector<unsigned> parent(n);
    std::iota(parent.begin(), parent.end(), 0u);
    auto find = [&](unsigned x) {
      while (parent[x] != x) x = parent[x] = parent[parent[x]];
      return x;
    };
    for (unsigned a = 0; a < n; ++a) {
      for (unsigned b = a + 1; b < n; ++b) {
        if (level[a * n + b] <= static_cast<int>(kLevels[l])) parent[find(a)] = find(b);
      }
    }
    std::vector<Mask> by_root(n, 0);
    for (unsigned p = 0; p < n; ++p) by_root[find(p)] |= Bit(p);
    for (Mask m : by_root) {
      if (m != 0) clusters_[l].push_back(m);
    }
  }
}

Mask Server::BigEnough(uint64_t bytes) const {
  if (bytes == 0) return all_;
  const int64_t want = Want(bytes, margin_);
  Mask m = 0;
  for (unsigned p = 0; p < size(); ++p) {
    const Opt<uint64_t> capacity = Capacity(gpus_[p]);
    if (!capacity || Signed(*capacity) >= want) m |= Bit(p);
  }
  return m;
}

bool Server::Clique(const unsigned* order, unsigned n, unsigned from, unsigned want, Mask chosen,
                    unsigned have, bool optimistic, Mask* out, long* budget) const {
  if (have == want) {
    *out = chosen;
    return true;
  }
  const std::array<Mask, kMaxGpus>& joins = optimistic ? maybe_ : nvlink_;
  for (unsigned i = from; i < n; ++i) {
    if (--*budget < 0 || n - i < want - have) return false;
    const unsigned c = order[i];
    if ((joins[c] & chosen) != chosen) continue;
    if (Clique(order, n, i + 1, want, chosen | Bit(c), have + 1, optimistic, out, budget)) {
      return true;
    }
  }
  return false;
}

bool Server::HasSet(Mask m, unsigned want, bool optimistic) const {
  if (Count(m) < want) return false;
  if (want <= 1) return true;
  std::array<unsigned, kMaxGpus> order{};
  unsigned n = 0;
  for (Mask rest = m; rest != 0; rest &= rest - 1) order[n++] = Low(rest);
  Mask out = 0;
  long budget = kCliqueBudget;
  return Clique(order.data(), n, 0, want, 0, 0, optimistic, &out, &budget);
}

unsigned Server::LargestNvlinkSet(Mask m) const {
  for (unsigned want = Count(m); want > 1; --want) {
    if (HasSet(m, want, false)) return want;
  }
  return Count(m) > 0 ? 1 : 0;
}

Ever Server::CanEver(const Request& request) const {
  if (request.gpus == 0) return Ever::kPossible;
  if (request.gpus > size()) return Ever::kNever;
  const Mask big = BigEnough(request.bytes_per_gpu);
  if (Count(big) < request.gpus) return Ever::kNever;
  const bool nvlink = request.nvlink && request.gpus > 1;
  if (nvlink && !topology_known_) return Ever::kTopologyUnknown;
  if (nvlink && !HasSet(big, request.gpus, true)) return Ever::kNever;
  const Mask later = big & later_;
  if (Count(later) < request.gpus) return Ever::kUnusable;
  if (nvlink && !HasSet(later, request.gpus, false)) {
    // Joined only through GPUs whose links were not read, or through
    // hard-blocked ones.
    return HasSet(later, request.gpus, true) ? Ever::kTopologyUnknown : Ever::kUnusable;
  }
  return Ever::kPossible;
}

NeverWhy Server::WhyNever(const Request& request) const {
  NeverWhy why;
  why.server_gpus = size();
  const Mask big = BigEnough(request.bytes_per_gpu);
  why.big_enough = Count(big);
  for (const Candidate& c : gpus_) {
    if (const Opt<uint64_t> capacity = Capacity(c)) {
      why.largest_capacity = std::max(why.largest_capacity.value_or(0), *capacity);
    }
  }
  if (CanEver(request) != Ever::kNever) return why;
  if (request.gpus > size()) {
    why.kind = NeverWhy::Kind::kTooFewGpus;
  } else if (why.big_enough < request.gpus) {
    why.kind = NeverWhy::Kind::kTooSmall;
  } else {
    why.kind = NeverWhy::Kind::kNoNvlinkSet;
    why.largest_nvlink_set = LargestNvlinkSet(big);
  }
  return why;
}

bool Server::Better(unsigned a, unsigned b, std::span<const int64_t> room) const {
  // A GPU waiting for a reset last: it should be idle for it.
  if (gpus_[a].reset_pending != gpus_[b].reset_pending) return gpus_[b].reset_pending;
  // Unknown utilisation ranks after 100 %: never taken for idle.
  const unsigned ua = gpus_[a].util_pct.value_or(101);
  const unsigned ub = gpus_[b].util_pct.value_or(101);
  if (ua != ub) return ua < ub;
  if (room[a] != room[b]) return room[a] > room[b];
  return a < b;
}

Mask Server::Choose(const Request& request, Mask cand, std::span<const int64_t> room) const {
  cand &= eligible_;
  if (request.gpus == 0 || Count(cand) < request.gpus) return 0;
  const bool nvlink = request.nvlink && request.gpus > 1;
  if (nvlink && !topology_known_) return 0;
  auto better = [&](unsigned a, unsigned b) { return Better(a, b, room); };
  std::array<unsigned, kMaxGpus> order{};
  unsigned n = 0;
  for (Mask rest = cand; rest != 0; rest &= rest - 1) order[n++] = Low(rest);
  if (request.gpus == 1) return Bit(*std::min_element(order.begin(), order.begin() + n, better));
  std::sort(order.begin(), order.begin() + n, better);
  if (nvlink) {
    Mask out = 0;
    long budget = kCliqueBudget;
    Clique(order.data(), n, 0, request.gpus, 0, 0, false, &out, &budget);
    return out;
  }
  // The first `gpus` of `within` in preference order; `worst` is the rank of
  // the last taken and `sum` the sum of the ranks.
  auto first_n = [&](Mask within, unsigned* worst, unsigned* sum) {
    Mask chosen = 0;
    unsigned taken = 0;
    *sum = 0;
    for (unsigned i = 0; i < n && taken < request.gpus; ++i) {
      if ((within & Bit(order[i])) == 0) continue;
      chosen |= Bit(order[i]);
      ++taken;
      *worst = i;
      *sum += i;
    }
    return chosen;
  };
  unsigned worst = 0, sum = 0;
  if (!topology_known_) return first_n(cand, &worst, &sum);
  // The closest cluster first; within a level, the one whose chosen GPUs rank best.
  for (const std::vector<Mask>& clusters : clusters_) {
    Mask best = 0;
    unsigned best_worst = 0, best_sum = 0;
    for (Mask cluster : clusters) {
      if (Count(cand & cluster) < request.gpus) continue;
      const Mask chosen = first_n(cand & cluster, &worst, &sum);
      if (best == 0 || worst < best_worst || (worst == best_worst && sum < best_sum)) {
        best = chosen;
        best_worst = worst;
        best_sum = sum;
      }
    }
    if (best != 0) return best;
  }
  return first_n(cand, &worst, &sum);
}

Placement Server::Place(const Request& request, std::span<const int64_t> room) const {
  Placement out;
  if (request.gpus == 0) {
    out.outcome = Outcome::kFits;
    return out;
  }
  Mask fit = 0;
  for (Mask rest = eligible_; rest != 0; rest &= rest - 1) {
    const unsigned p = Low(rest);
    out.room_total += static_cast<uint64_t>(std::max<int64_t>(0, room[p]));
    if (room[p] >= Signed(request.bytes_per_gpu)) fit |= Bit(p);
  }
  out.gpus_with_room = Count(fit);
  const Mask big = BigEnough(request.bytes_per_gpu);
  for (unsigned p = 0; p < size(); ++p) {
    if ((fit & Bit(p)) != 0) continue;
    // Eligible and big enough, but the room is short; or not eligible at all.
    out.left_out.push_back({.index = gpus_[p].index,
                            .block = (eligible_ & Bit(p)) != 0 || gpus_[p].block != Block::kNone
                                         ? gpus_[p].block
                                         : Block::kMemoryUnknown,
                            .too_small = (big & Bit(p)) == 0,
                            .room = room[p]});
  }
  switch (CanEver(request)) {
    case Ever::kNever:
      out.outcome = Outcome::kNeverFits;
      out.never = WhyNever(request);
      return out;
    case Ever::kTopologyUnknown:
      out.outcome = Outcome::kTopologyUnknown;
      return out;
    case Ever::kUnusable:
      out.outcome = Outcome::kUnusable;
      for (Mask rest = BigEnough(request.bytes_per_gpu) & ~later_; rest != 0; rest &= rest - 1) {
        out.unusable.push_back(gpus_[Low(rest)].index);
      }
      return out;
    case Ever::kPossible:
      break;
  }
  out.chosen = Choose(request, fit, room);
  if (out.chosen != 0) {
    out.outcome = Outcome::kFits;
    std::vector<unsigned> pos;
    for (Mask rest = out.chosen; rest != 0; rest &= rest - 1) pos.push_back(Low(rest));
    std::sort(pos.begin(), pos.end(), [&](unsigned a, unsigned b) { return Better(a, b, room); });
    for (unsigned p : pos) out.gpus.push_back(gpus_[p].index);
    return out;
  }
  const long double wanted = static_cast<long double>(request.bytes_per_gpu) * request.gpus;
  out.outcome = static_cast<long double>(out.room_total) >= wanted ? Outcome::kFragmented
                                                                   : Outcome::kNotEnoughFree;
  return out;
}

Placement Server::Place(const Request& request) const {
  std::vector<int64_t> room(size());
  for (unsigned p = 0; p < size(); ++p) room[p] = Room(p);
  return Place(request, room);
}

EverCache::EverCache(const Server& server) : server_(server) {
  for (unsigned p = 0; p < server.size(); ++p) {
    if (server.at(p).total_bytes) sizes_.push_back(Signed(*server.at(p).total_bytes));
  }
  std::sort(sizes_.begin(), sizes_.end());
  sizes_.erase(std::unique(sizes_.begin(), sizes_.end()), sizes_.end());
  memo_.assign((sizes_.size() + 1) * (kMaxGpus + 1) * 2, 0);
}

Ever EverCache::CanEver(const Request& request) const {
  if (request.gpus == 0 || request.gpus > server_.size()) return server_.CanEver(request);
  // Whether a GPU is big enough depends only on the smallest known total
  // that holds the request: its size class.
  const int64_t want = Want(request.bytes_per_gpu, server_.margin());
  const auto k =
      static_cast<size_t>(std::lower_bound(sizes_.begin(), sizes_.end(), want) - sizes_.begin());
  const bool nvlink = request.nvlink && request.gpus > 1;
  uint8_t& slot = memo_[(k * (kMaxGpus + 1) + request.gpus) * 2 + (nvlink ? 1 : 0)];
  if (slot == 0) slot = static_cast<uint8_t>(static_cast<uint8_t>(server_.CanEver(request)) + 1);
  return static_cast<Ever>(slot - 1);
}

}  // namespace gw::placement
