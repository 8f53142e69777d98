#include "diagnose/placement.h"

#include <algorithm>
#include <numeric>

#include "diagnose/rule_context.h"

namespace gw::diagnose {
namespace {

// NVLink adjacency between GPU indices.
class LinkGraph {
 public:
  explicit LinkGraph(std::span<const TopologyLink> topology) {
    for (const TopologyLink& link : topology) {
      if (link.nvlinks == 0) continue;
      edges_.insert({std::min(link.gpu_a, link.gpu_b), std::max(link.gpu_a, link.gpu_b)});
    }
  }
  bool Joined(unsigned a, unsigned b) const {
    return edges_.count({std::min(a, b), std::max(a, b)}) > 0;
  }

  // A set of `size` GPUs from `candidates` (in preference order) that are all
  // pairwise joined; the first such set in lexicographic preference order.
  // Servers have at most a few dozen GPUs; the step budget only guards
  // against a pathological topology (the search is exponential in theory).
  std::vector<unsigned> FindClique(const std::vector<unsigned>& candidates, unsigned size) const {
    std::vector<unsigned> chosen;
    long budget = 1'000'000;
    if (Search(candidates, 0, size, chosen, budget)) return chosen;
    return {};
  }

 private:
  bool Search(const std::vector<unsigned>& candidates, size_t from, unsigned size,
              std::vector<unsigned>& chosen, long& budget) const {
    if (chosen.size() == size) return true;
    for (size_t i = from; i < candidates.size(); ++i) {
      if (--budget < 0) return false;
      if (candidates.size() - i < size - chosen.size()) return false;
      unsigned c = candidates[i];
      bool joined = std::all_of(chosen.begin(), chosen.end(),
                                [&](unsigned other) { return Joined(c, other); });
      if (!joined) continue;
      chosen.push_back(c);
      if (Search(candidates, i + 1, size, chosen, budget)) return true;
      chosen.pop_back();
    }
    return false;
  }

  std::set<std::pair<unsigned, unsigned>> edges_;
};

}  // namespace

std::vector<GpuRoom> CollectRooms(const Snapshot& snapshot,
                                  const std::map<unsigned, uint64_t>& extra_free,
                                  const std::set<unsigned>& exclusive_freed) {
  std::vector<GpuRoom> rooms;
  for (const Gpu& gpu : snapshot.gpus) {
    if (!gpu.memory.total_bytes) continue;
    GpuRoom room;
    room.index = gpu.index;
    room.total_bytes = *gpu.memory.total_bytes;
    room.load_pct = gpu.utilization_gpu_pct.value_or(0);
    const Opt<uint64_t> free = internal::FreeBytes(gpu);
    if (free) {
      auto extra = extra_free.find(gpu.index);
      uint64_t add = extra == extra_free.end() ? 0 : extra->second;
      room.free_bytes = std::min(room.total_bytes, *free + add);
    }
    const bool exclusive_taken = internal::ExclusiveMode(gpu) && internal::HasComputeProcess(gpu) &&
                                 !exclusive_freed.count(gpu.index);
    room.usable = !gpu.unreachable && free.has_value() && !gpu.mig_mode_current.value_or(false) &&
                  gpu.compute_mode != ComputeMode::kProhibited && !exclusive_taken &&
                  gpu.ecc.volatile_uncorrected.value_or(0) == 0 &&
                  !gpu.remapped_rows.failure.value_or(false);
    rooms.push_back(room);
  }
  return rooms;
}

Placement PlaceNeed(const NeedRequest& need, std::span<const GpuRoom> rooms,
                    std::span<const TopologyLink> topology) {
  Placement placement;
  if (need.gpus == 0) {
    placement.outcome = PlacementOutcome::kFits;
    return placement;
  }
  const bool check_nvlink = need.nvlink && need.gpus > 1 && !topology.empty();
  placement.nvlink_unchecked = need.nvlink && need.gpus > 1 && topology.empty();
  LinkGraph graph(topology);

  // Could it ever fit, with every GPU empty?
  std::vector<unsigned> big_enough;
  for (const GpuRoom& room : rooms) {
    if (room.total_bytes >= need.bytes_per_gpu) big_enough.push_back(room.index);
  }
  bool ever = big_enough.size() >= need.gpus;
  if (ever && check_nvlink) ever = !graph.FindClique(big_enough, need.gpus).empty();

  // Usable GPUs with room now, least loaded first, then most free.
  std::vector<const GpuRoom*> fitting;
  for (const GpuRoom& room : rooms) {
    if (!room.usable) continue;
    placement.free_total += room.free_bytes;
    if (room.free_bytes >= need.bytes_per_gpu) fitting.push_back(&room);
  }
  std::sort(fitting.begin(), fitting.end(), [](const GpuRoom* a, const GpuRoom* b) {
    if (a->load_pct != b->load_pct) return a->load_pct < b->load_pct;
    if (a->free_bytes != b->free_bytes) return a->free_bytes > b->free_bytes;
    return a->index < b->index;
  });
  placement.gpus_with_room = static_cast<unsigned>(fitting.size());
  std::vector<unsigned> order;
  for (const GpuRoom* room : fitting) order.push_back(room->index);

  if (!ever) {
    placement.outcome = PlacementOutcome::kNeverFits;
    return placement;
  }
  if (order.size() >= need.gpus) {
    if (!check_nvlink) {
      placement.outcome = PlacementOutcome::kFits;
      placement.gpus.assign(order.begin(), order.begin() + need.gpus);
      return placement;
    }
    std::vector<unsigned> clique = graph.FindClique(order, need.gpus);
    if (!clique.empty()) {
      placement.outcome = PlacementOutcome::kFits;
      placement.gpus = std::move(clique);
      return placement;
    }
  }
  const long double wanted =
      static_cast<long double>(need.bytes_per_gpu) * static_cast<long double>(need.gpus);
  placement.outcome = static_cast<long double>(placement.free_total) >= wanted
                          ? PlacementOutcome::kFragmented
                          : PlacementOutcome::kUnsatisfiable;
  return placement;
}

}  // namespace gw::diagnose
