#include "placement/placement.h"
#include "core/units.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

namespace gw::placement {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;
constexpr uint64_t kMargin = kDefaultMarginBytes;

// An idle, healthy, empty GPU of `total_gib`.
GpuFacts Facts(unsigned index, uint64_t total_gib = 80, Opt<unsigned> util = 0) {
  GpuFacts f;
  f.index = index;
  f.total_bytes = total_gib * kGiB;
  f.free_bytes = total_gib * kGiB;
  f.util_pct = util;
  f.compute_mode = ComputeMode::kDefault;
  return f;
}

std::vector<Candidate> Assessed(const std::vector<GpuFacts>& facts) {
  std::vector<Candidate> out;
  for (const GpuFacts& f : facts) out.push_back(Assess(f));
  return out;
}

// Every pair of `n` GPUs at `level`; `nvlinked` pairs joined.
std::vector<TopologyLink> Links(unsigned n, TopologyLevel level,
                                std::vector<std::pair<unsigned, unsigned>> nvlinked = {}) {
  std::vector<TopologyLink> out;
  for (unsigned a = 0; a < n; ++a) {
    for (unsigned b = a + 1; b < n; ++b) {
      const bool nv =
          std::find(nvlinked.begin(), nvlinked.end(), std::make_pair(a, b)) != nvlinked.end();
      out.push_back({a, b, level, nv ? 12u : 0u});
    }
  }
  return out;
}

Request Need(unsigned gpus, uint64_t gib, bool nvlink = false) {
  return {.gpus = gpus, .bytes_per_gpu = gib * kGiB, .nvlink = nvlink};
}

// --- Eligibility ------------------------------------------------------------

TEST(AssessTest, EligibilityTable) {
  struct Row {
    std::string name;
    GpuFacts facts;
    Block want;
  };
  std::vector<Row> rows;
  auto row = [&](std::string name, Block want, auto change) {
    GpuFacts f = Facts(0);
    change(f);
    rows.push_back({std::move(name), f, want});
  };
  row("healthy idle", Block::kNone, [](GpuFacts&) {});
  row("unknown utilisation", Block::kNone, [](GpuFacts& f) { f.util_pct.reset(); });
  row("unreachable", Block::kUnreachable, [](GpuFacts& f) { f.unreachable = true; });
  row("unreachable with memory read before", Block::kUnreachable, [](GpuFacts& f) {
    f.unreachable = true;
    f.mig = true;
  });
  row("free unknown", Block::kMemoryUnknown, [](GpuFacts& f) { f.free_bytes.reset(); });
  row("total unknown", Block::kMemoryUnknown, [](GpuFacts& f) { f.total_bytes.reset(); });
  row("MIG", Block::kMig, [](GpuFacts& f) { f.mig = true; });
  row("PROHIBITED", Block::kProhibited,
      [](GpuFacts& f) { f.compute_mode = ComputeMode::kProhibited; });
  row("unhealthy", Block::kUnhealthy, [](GpuFacts& f) { f.healthy = false; });
  row("EXCLUSIVE_PROCESS, compute process", Block::kExclusiveTaken, [](GpuFacts& f) {
    f.compute_mode = ComputeMode::kExclusiveProcess;
    f.compute_process = true;
  });
  row("EXCLUSIVE_THREAD, compute process", Block::kExclusiveTaken, [](GpuFacts& f) {
    f.compute_mode = ComputeMode::kExclusiveThread;
    f.compute_process = true;
  });
  row("EXCLUSIVE_PROCESS, no compute process", Block::kNone,
      [](GpuFacts& f) { f.compute_mode = ComputeMode::kExclusiveProcess; });
  row("DEFAULT with a compute process", Block::kNone,
      [](GpuFacts& f) { f.compute_process = true; });
  row("compute mode unknown", Block::kNone, [](GpuFacts& f) { f.compute_mode.reset(); });
  for (const Row& r : rows) {
    const Candidate c = Assess(r.facts);
    EXPECT_EQ(c.block, r.want) << r.name;
    EXPECT_EQ(IsHard(c.block), r.want != Block::kNone && r.want != Block::kExclusiveTaken)
        << r.name;
    const Server server(std::vector<Candidate>{c}, {});
    EXPECT_EQ(server.eligible() != 0, r.want == Block::kNone) << r.name;
    EXPECT_EQ(server.later() != 0, !IsHard(r.want)) << r.name;
  }
  EXPECT_TRUE(Assess(Facts(0)).exclusive == false);
  GpuFacts ex = Facts(0);
  ex.compute_mode = ComputeMode::kExclusiveProcess;
  EXPECT_TRUE(Assess(ex).exclusive);
}

TEST(AssessTest, FreeIsCappedAtTotalLessListedProcesses) {
  GpuFacts f = Facts(0);
  f.free_bytes = 70 * kGiB;
  f.listed_bytes = 20 * kGiB;  // Allocated between NVML's two reads.
  EXPECT_EQ(Assess(f).free_bytes, 60 * kGiB);
  f.listed_bytes = 5 * kGiB;
  EXPECT_EQ(Assess(f).free_bytes, 70 * kGiB);
  f.listed_bytes = 100 * kGiB;  // More than the total: nothing free, never negative.
  EXPECT_EQ(Assess(f).free_bytes, 0u);
  f.free_bytes.reset();
  EXPECT_FALSE(Assess(f).free_bytes.has_value());  // Unknown is not 0.
}

TEST(FactsOfTest, ReadsASnapshotGpu) {
  Gpu g;
  g.index = 3;
  g.memory.total_bytes = 80 * kGiB;
  g.memory.used_bytes = 30 * kGiB;
  g.memory.reserved_bytes = kGiB;
  g.utilization_gpu_pct = 40;
  g.compute_mode = ComputeMode::kExclusiveProcess;
  g.mig_mode_current = false;
  GpuProcess display;
  display.pid = 10;
  display.type = GpuProcessType::kGraphics;
  display.used_memory_bytes = kGiB;
  g.processes.push_back(display);
  GpuFacts f = FactsOf(g);
  EXPECT_EQ(f.index, 3u);
  EXPECT_EQ(f.free_bytes, 49 * kGiB);  // total - used - reserved when free is not read.
  EXPECT_EQ(f.listed_bytes, kGiB);
  EXPECT_FALSE(f.compute_process);  // A display server is not work.
  EXPECT_TRUE(f.healthy);
  EXPECT_EQ(Assess(f).block, Block::kNone);

  GpuProcess job;
  job.pid = 11;
  job.used_memory_bytes.reset();  // Unknown memory still lists a process.
  g.processes.push_back(job);
  g.unreachable = ProbeError{"nvml", "gpu_lost", "lost", 3u, 15};
  f = FactsOf(g);
  EXPECT_TRUE(f.compute_process);
  EXPECT_TRUE(f.unreachable);
  EXPECT_EQ(Assess(f).block, Block::kUnreachable);
}

// --- Order ------------------------------------------------------------------

TEST(ServerTest, LeastBusyFirstUnknownBusiestThenRoomThenIndex) {
  std::vector<GpuFacts> f = {Facts(0, 80, std::nullopt), Facts(1, 80, 100), Facts(2, 80, 10),
                             Facts(3, 80, 10), Facts(4, 80, 10)};
  f[3].free_bytes = 40 * kGiB;
  const Server server(Assessed(f), {});
  Placement p = server.Place(Need(1, 10));
  EXPECT_EQ(p.outcome, Outcome::kFits);
  EXPECT_THAT(p.gpus, ElementsAre(2));  // 2 and 4 tie on util and room: lower index.
  p = server.Place(Need(5, 10));
  EXPECT_THAT(p.gpus, ElementsAre(2, 4, 3, 1, 0));  // Unknown after 100 %.
}

TEST(ServerTest, PrefersTheClosestPcieGroup) {
  std::vector<TopologyLink> topo = Links(4, TopologyLevel::kSystem);
  for (TopologyLink& l : topo) {
    if ((l.gpu_a == 0 && l.gpu_b == 1) || (l.gpu_a == 2 && l.gpu_b == 3)) {
      l.level = TopologyLevel::kSingle;
    }
  }
  std::vector<GpuFacts> f = {Facts(0, 80, 0), Facts(1, 80, 50), Facts(2, 80, 10), Facts(3, 80, 20)};
  const Server server(Assessed(f), topo);
  // 0 is the least busy, but 2 and 3 share a switch and rank better as a pair.
  EXPECT_THAT(server.Place(Need(2, 10)).gpus, ElementsAre(2, 3));
  // Unknown topology: the two most preferred.
  EXPECT_THAT(Server(Assessed(f), {}).Place(Need(2, 10)).gpus, ElementsAre(0, 2));
}

// --- Margin and room --------------------------------------------------------

TEST(ServerTest, MarginOnEveryGpu) {
  std::vector<GpuFacts> f = {Facts(0)};
  f[0].free_bytes = 40 * kGiB;
  const Server server(Assessed(f), {});
  EXPECT_EQ(server.Room(0), static_cast<int64_t>(40 * kGiB - kMargin));
  EXPECT_EQ(server.Place(Need(1, 40)).outcome, Outcome::kNotEnoughFree);
  EXPECT_EQ(server.Place({.gpus = 1, .bytes_per_gpu = 40 * kGiB - kMargin}).outcome,
            Outcome::kFits);
  // A GPU exactly the size asked never holds it and the margin.
  EXPECT_EQ(server.CanEver(Need(1, 80)), Ever::kNever);
  EXPECT_EQ(server.CanEver({.gpus = 1, .bytes_per_gpu = 80 * kGiB - kMargin}), Ever::kPossible);
  // A configurable margin.
  const Server none(Assessed(f), {}, 0);
  EXPECT_EQ(none.Place(Need(1, 40)).outcome, Outcome::kFits);
}

TEST(ServerTest, CallerRoomCountsReservations) {
  const Server server(Assessed({Facts(0), Facts(1)}), {});
  // GPU 0 promised 60 GiB to a job that has not allocated yet.
  const std::vector<int64_t> room = {server.Room(0) - static_cast<int64_t>(60 * kGiB),
                                     server.Room(1)};
  Placement p = server.Place(Need(1, 30), room);
  EXPECT_THAT(p.gpus, ElementsAre(1));
  p = server.Place(Need(2, 30), room);
  EXPECT_EQ(p.outcome, Outcome::kFragmented);
  EXPECT_EQ(p.gpus_with_room, 1u);
}

// --- Outcomes ---------------------------------------------------------------

TEST(ServerTest, FragmentedAndNotEnoughFree) {
  std::vector<GpuFacts> f = {Facts(0), Facts(1), Facts(2)};
  for (GpuFacts& g : f) g.free_bytes = 30 * kGiB;
  const Server server(Assessed(f), {});
  Placement p = server.Place(Need(1, 40));
  EXPECT_EQ(p.outcome, Outcome::kFragmented);
  EXPECT_EQ(p.room_total, 90 * kGiB - 3 * kMargin);
  EXPECT_EQ(server.Place(Need(3, 40)).outcome, Outcome::kNotEnoughFree);
  EXPECT_THAT(server.Place(Need(3, 40)).gpus, IsEmpty());
}

// The driver's reservation is never freed: a need between what an empty GPU
// gives (total - reserved - margin) and its total can never fit, whatever
// ends (it was "not enough free now", so BUSY, for ever).
TEST(ServerTest, NeverCountsTheDriversReservation) {
  std::vector<GpuFacts> f = {Facts(0), Facts(1)};
  for (GpuFacts& g : f) {
    g.total_bytes = 81559 * kMiB;  // An H100 80GB as NVML reports it.
    g.reserved_bytes = 552 * kMiB;
    g.free_bytes = *g.total_bytes - g.reserved_bytes;
  }
  const Server server(Assessed(f), {});
  Placement p = server.Place(Need(1, 79));
  EXPECT_EQ(p.outcome, Outcome::kNeverFits);
  EXPECT_EQ(p.never.kind, NeverWhy::Kind::kTooSmall);
  EXPECT_EQ(p.never.largest_capacity, (81559 - 552) * kMiB);
  EXPECT_EQ(server.Place(Need(2, 78)).outcome, Outcome::kFits);
}

TEST(ServerTest, NeverFitsWithItsReason) {
  const Server server(Assessed({Facts(0, 80), Facts(1, 40)}), Links(2, TopologyLevel::kNode));
  Placement p = server.Place(Need(3, 1));
  EXPECT_EQ(p.outcome, Outcome::kNeverFits);
  EXPECT_EQ(p.never.kind, NeverWhy::Kind::kTooFewGpus);
  EXPECT_EQ(p.never.server_gpus, 2u);
  p = server.Place(Need(2, 50));
  EXPECT_EQ(p.never.kind, NeverWhy::Kind::kTooSmall);
  EXPECT_EQ(p.never.big_enough, 1u);
  EXPECT_EQ(p.never.largest_capacity, 80 * kGiB);
  p = server.Place(Need(2, 10, true));  // Topology known, no NVLink at all.
  EXPECT_EQ(p.never.kind, NeverWhy::Kind::kNoNvlinkSet);
  EXPECT_EQ(p.never.largest_nvlink_set, 1u);
}

TEST(ServerTest, NeverCountsEveryGpuAsEmptyAndHealthy) {
  std::vector<GpuFacts> f = {Facts(0), Facts(1)};
  f[0].free_bytes = 0;   // Full now: it waits.
  f[1].healthy = false;  // Unhealthy now: blocked, not "never".
  const Server server(Assessed(f), {});
  EXPECT_EQ(server.CanEver(Need(1, 40)), Ever::kPossible);
  EXPECT_EQ(server.Place(Need(1, 40)).outcome, Outcome::kNotEnoughFree);
  Placement p = server.Place(Need(2, 40));
  EXPECT_EQ(p.outcome, Outcome::kUnusable);
  EXPECT_THAT(p.unusable, ElementsAre(1));
}

TEST(ServerTest, UnknownTotalIsNeitherNeverNorFits) {
  std::vector<GpuFacts> f = {Facts(0), Facts(1)};
  f[1].total_bytes.reset();
  f[1].free_bytes.reset();
  const Server server(Assessed(f), {});
  // Two GPUs of which one could not be read: not "never" (it may be big enough).
  Placement p = server.Place(Need(2, 10));
  EXPECT_EQ(p.outcome, Outcome::kUnusable);
  EXPECT_THAT(p.unusable, ElementsAre(1));
  EXPECT_EQ(server.Place(Need(3, 10)).outcome, Outcome::kNeverFits);
  // 100 GiB: GPU 0 is too small, GPU 1 unknown.
  EXPECT_EQ(server.Place(Need(1, 100)).outcome, Outcome::kUnusable);
}

TEST(ServerTest, SoftBlocksWaitHardBlocksDoNot) {
  std::vector<GpuFacts> f = {Facts(0), Facts(1)};
  f[1].compute_mode = ComputeMode::kExclusiveProcess;
  f[1].compute_process = true;
  const Server server(Assessed(f), {});
  EXPECT_EQ(server.CanEver(Need(2, 10)), Ever::kPossible);  // Once that process ends.
  Placement p = server.Place(Need(2, 10));
  EXPECT_EQ(p.outcome, Outcome::kFragmented);  // Room on GPU 1, but it is taken.
  EXPECT_EQ(p.gpus_with_room, 1u);
  f[1].compute_process = false;
  f[1].mig = true;
  EXPECT_EQ(Server(Assessed(f), {}).Place(Need(2, 10)).outcome, Outcome::kUnusable);
}

// --- NVLink -----------------------------------------------------------------

TEST(ServerTest, NvlinkCliqueInPreferenceOrder) {
  std::vector<GpuFacts> f = {Facts(0, 80, 0), Facts(1, 80, 0), Facts(2, 80, 50), Facts(3, 80, 60)};
  f[1].free_bytes = 5 * kGiB;
  const Server server(Assessed(f), Links(4, TopologyLevel::kSystem, {{0, 1}, {2, 3}}));
  Placement p = server.Place(Need(2, 40, true));
  EXPECT_EQ(p.outcome, Outcome::kFits);
  EXPECT_THAT(p.gpus, ElementsAre(2, 3));
  f[3].free_bytes = 5 * kGiB;
  p = Server(Assessed(f), Links(4, TopologyLevel::kSystem, {{0, 1}, {2, 3}}))
          .Place(Need(2, 40, true));
  EXPECT_EQ(p.outcome, Outcome::kFragmented);
  EXPECT_EQ(p.gpus_with_room, 2u);
}

TEST(ServerTest, NvlinkWithUnknownTopologyCannotBeChecked) {
  const Server server(Assessed({Facts(0), Facts(1)}), {});
  EXPECT_FALSE(server.topology_known());
  EXPECT_EQ(server.CanEver(Need(2, 10, true)), Ever::kTopologyUnknown);
  Placement p = server.Place(Need(2, 10, true));
  EXPECT_EQ(p.outcome, Outcome::kTopologyUnknown);
  EXPECT_THAT(p.gpus, IsEmpty());
  EXPECT_EQ(server.Choose(Need(2, 10, true), server.eligible(),
                          std::vector<int64_t>{server.Room(0), server.Room(1)}),
            0u);
  // One GPU: NVLink does not apply. Too many GPUs: certain either way.
  EXPECT_EQ(server.Place(Need(1, 10, true)).outcome, Outcome::kFits);
  EXPECT_EQ(server.Place(Need(3, 10, true)).outcome, Outcome::kNeverFits);
  // A topology that lists only other GPUs is unknown for these.
  const std::vector<TopologyLink> elsewhere = {{7, 8, TopologyLevel::kSingle, 4}};
  EXPECT_FALSE(Server(Assessed({Facts(0), Facts(1)}), elsewhere).topology_known());
}

TEST(ServerTest, NvlinkThroughAGpuWhoseLinksWereNotRead) {
  // GPUs 0-2 all joined; GPU 3 unreachable and absent from the topology.
  std::vector<GpuFacts> f = {Facts(0), Facts(1), Facts(2), Facts(3)};
  f[3].unreachable = true;
  std::vector<TopologyLink> topo = Links(3, TopologyLevel::kNode, {{0, 1}, {0, 2}, {1, 2}});
  const Server server(Assessed(f), topo);
  // Four joined GPUs: possible only if GPU 3 is joined too, which is unknown, and
  // GPU 3 cannot be used now: blocked by it, not "never".
  EXPECT_EQ(server.CanEver(Need(4, 10, true)), Ever::kUnusable);
  EXPECT_EQ(server.CanEver(Need(3, 10, true)), Ever::kPossible);
  // Reachable but its links unread: cannot be checked.
  f[3].unreachable = false;
  EXPECT_EQ(Server(Assessed(f), topo).CanEver(Need(4, 10, true)), Ever::kTopologyUnknown);
}

// --- Positions and the cache ------------------------------------------------

TEST(ServerTest, PositionsAreSortedByIndexFirstDuplicateKept) {
  std::vector<GpuFacts> f = {Facts(5), Facts(2), Facts(5, 40)};
  const Server server(Assessed(f), {});
  ASSERT_EQ(server.size(), 2u);
  EXPECT_EQ(server.at(0).index, 2u);
  EXPECT_EQ(server.at(1).total_bytes, 80 * kGiB);
  EXPECT_EQ(server.Pos(5), 1);
  EXPECT_EQ(server.Pos(3), -1);
}

TEST(EverCacheTest, AnswersAsCanEver) {
  // A server with mixed sizes, blocks, unknown totals and a partial NVLink mesh.
  std::vector<GpuFacts> f;
  const uint64_t sizes[] = {16, 24, 40, 80, 80, 80, 24, 40};
  for (unsigned i = 0; i < 8; ++i) f.push_back(Facts(i, sizes[i]));
  f[1].healthy = false;
  f[4].mig = true;
  f[6].total_bytes.reset();
  f[7].compute_mode = ComputeMode::kExclusiveProcess;
  f[7].compute_process = true;
  const std::vector<TopologyLink> topo =
      Links(8, TopologyLevel::kNode, {{0, 1}, {2, 3}, {3, 4}, {2, 4}, {4, 5}, {3, 5}, {2, 5}});
  for (const auto& t : {topo, std::vector<TopologyLink>{}}) {
    const Server server(Assessed(f), t);
    const EverCache cache(server);
    for (unsigned gpus = 0; gpus <= 9; ++gpus) {
      for (uint64_t mib : {0ull, 1ull, 15ull * 1024, 16ull * 1024, 23ull * 1024 + 600, 39ull * 1024,
                           40ull * 1024, 79ull * 1024, 80ull * 1024, 1ull << 40}) {
        for (bool nvlink : {false, true}) {
          const Request r{.gpus = gpus, .bytes_per_gpu = mib << 20, .nvlink = nvlink};
          // Twice: the memoised answer too.
          EXPECT_EQ(cache.CanEver(r), server.CanEver(r)) << gpus << "x" << mib << "M " << nvlink;
          EXPECT_EQ(cache.CanEver(r), server.CanEver(r)) << gpus << "x" << mib << "M " << nvlink;
        }
      }
    }
  }
}

TEST(OutcomeNameTest, Words) {
  EXPECT_EQ(OutcomeName(Outcome::kFits), "fits");
  EXPECT_EQ(OutcomeName(Outcome::kTopologyUnknown), "topology_unknown");
  EXPECT_EQ(BlockText(Block::kMig), "in MIG mode");
  EXPECT_EQ(BlockText(Block::kNone), "");
}

// --- A repair waiting for a reset, and what is left out --------------------

TEST(ResetPendingTest, UsableButPlacedOnLast) {
  std::vector<GpuFacts> facts = {Facts(0, 80, 10), Facts(1), Facts(2)};
  facts[1].reset_pending = true;  // The idlest, but a row remap waits for its reset.
  const std::vector<Candidate> cands = Assessed(facts);
  EXPECT_EQ(cands[1].block, Block::kNone);
  EXPECT_TRUE(cands[1].reset_pending);
  const Server server(cands, {});
  EXPECT_THAT(server.Place(Need(1, 40)).gpus, ElementsAre(2));
  EXPECT_THAT(server.Place(Need(2, 40)).gpus, ElementsAre(2, 0));
  // Taken when it is needed, last in order.
  EXPECT_THAT(server.Place(Need(3, 40)).gpus, ElementsAre(2, 0, 1));
}

TEST(LeftOutTest, EveryGpuThatCouldNotTakeItWithWhy) {
  std::vector<GpuFacts> facts = {Facts(0), Facts(1), Facts(2, 24), Facts(3), Facts(4)};
  facts[1].healthy = false;
  facts[3].free_bytes = 12 * kGiB;
  facts[4].unreachable = true;
  const Server server(Assessed(facts), {});
  const Placement p = server.Place(Need(3, 40));
  EXPECT_EQ(p.outcome, Outcome::kUnusable);
  ASSERT_EQ(p.left_out.size(), 4u);
  EXPECT_EQ(p.left_out[0].index, 1u);
  EXPECT_EQ(p.left_out[0].block, Block::kUnhealthy);
  EXPECT_EQ(p.left_out[1].index, 2u);
  EXPECT_EQ(p.left_out[1].block, Block::kNone);
  EXPECT_TRUE(p.left_out[1].too_small);
  EXPECT_EQ(p.left_out[2].index, 3u);
  EXPECT_FALSE(p.left_out[2].too_small);
  EXPECT_EQ(p.left_out[2].room, static_cast<int64_t>(12 * kGiB - kMargin));
  EXPECT_EQ(p.left_out[3].block, Block::kUnreachable);
  // The totals are of the eligible GPUs only: 0, 2 and 3, never the unhealthy 1.
  EXPECT_EQ(p.room_total, 80 * kGiB - kMargin + 24 * kGiB - kMargin + 12 * kGiB - kMargin);
  EXPECT_EQ(p.gpus_with_room, 1u);
  // A fit lists only the GPUs that could not take it, not those not needed.
  const Placement one = server.Place(Need(1, 40));
  EXPECT_EQ(one.outcome, Outcome::kFits);
  EXPECT_EQ(one.left_out.size(), 4u);
  const Placement small = server.Place(Need(1, 10));
  ASSERT_EQ(small.left_out.size(), 2u);  // The unhealthy and the unreachable GPU.
}

}  // namespace
}  // namespace gw::placement
