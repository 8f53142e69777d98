#include "diagnose/placement.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "diagnose/test_util.h"

namespace gw::diagnose {
namespace {

using ::testing::ElementsAre;
using namespace fixtures;  // NOLINT

// Rooms of `frees` (GiB), all 80 GiB and usable.
std::vector<GpuRoom> Rooms(std::vector<uint64_t> frees_gib) {
  std::vector<GpuRoom> rooms;
  for (unsigned i = 0; i < frees_gib.size(); ++i) {
    rooms.push_back({i, 80 * kGiB, frees_gib[i] * kGiB, true, 0});
  }
  return rooms;
}

std::vector<TopologyLink> Pairs(std::vector<std::pair<unsigned, unsigned>> joined, unsigned n) {
  std::vector<TopologyLink> links;
  for (unsigned a = 0; a < n; ++a) {
    for (unsigned b = a + 1; b < n; ++b) {
      bool nv = std::find(joined.begin(), joined.end(), std::make_pair(a, b)) != joined.end();
      links.push_back({a, b, TopologyLevel::kNode, nv ? 4u : 0u});
    }
  }
  return links;
}

TEST(PlaceNeedTest, FitsPrefersLeastLoaded) {
  auto rooms = Rooms({10, 50, 60, 70});
  rooms[3].load_pct = 80;
  Placement p = PlaceNeed({.gpus = 2, .bytes_per_gpu = 40 * kGiB, .nvlink = false}, rooms, {});
  EXPECT_EQ(p.outcome, PlacementOutcome::kFits);
  EXPECT_THAT(p.gpus, ElementsAre(2, 1));  // Idle ones first, most free first.
  EXPECT_EQ(p.gpus_with_room, 3u);
}

TEST(PlaceNeedTest, Fragmented) {
  Placement p =
      PlaceNeed({.gpus = 1, .bytes_per_gpu = 40 * kGiB, .nvlink = false}, Rooms({30, 30, 5}), {});
  EXPECT_EQ(p.outcome, PlacementOutcome::kFragmented);
  EXPECT_EQ(p.free_total, 65 * kGiB);
  EXPECT_EQ(p.gpus_with_room, 0u);
}

TEST(PlaceNeedTest, Unsatisfiable) {
  Placement p =
      PlaceNeed({.gpus = 2, .bytes_per_gpu = 40 * kGiB, .nvlink = false}, Rooms({30, 20}), {});
  EXPECT_EQ(p.outcome, PlacementOutcome::kUnsatisfiable);
}

TEST(PlaceNeedTest, NeverFits) {
  EXPECT_EQ(
      PlaceNeed({.gpus = 1, .bytes_per_gpu = 100 * kGiB, .nvlink = false}, Rooms({80}), {}).outcome,
      PlacementOutcome::kNeverFits);
  EXPECT_EQ(PlaceNeed({.gpus = 3, .bytes_per_gpu = 1 * kGiB, .nvlink = false}, Rooms({80, 80}), {})
                .outcome,
            PlacementOutcome::kNeverFits);
  // NVLink asked, the topology is known and has no NVLink at all.
  EXPECT_EQ(PlaceNeed({.gpus = 2, .bytes_per_gpu = 1 * kGiB, .nvlink = true}, Rooms({80, 80}),
                      Pairs({}, 2))
                .outcome,
            PlacementOutcome::kNeverFits);
}

TEST(PlaceNeedTest, NvlinkClique) {
  // 0-1 and 2-3 joined; 1 is full. Two joined GPUs with room: 2 and 3.
  auto rooms = Rooms({70, 5, 70, 70});
  auto topo = Pairs({{0, 1}, {2, 3}}, 4);
  Placement p = PlaceNeed({.gpus = 2, .bytes_per_gpu = 40 * kGiB, .nvlink = true}, rooms, topo);
  EXPECT_EQ(p.outcome, PlacementOutcome::kFits);
  EXPECT_THAT(p.gpus, ElementsAre(2, 3));
  // Make 3 full too: 0 and 2 have room but are not joined.
  rooms[3].free_bytes = 5 * kGiB;
  p = PlaceNeed({.gpus = 2, .bytes_per_gpu = 40 * kGiB, .nvlink = true}, rooms, topo);
  EXPECT_EQ(p.outcome, PlacementOutcome::kFragmented);
  EXPECT_EQ(p.gpus_with_room, 2u);
}

TEST(PlaceNeedTest, NvlinkUnknownIsNotChecked) {
  Placement p =
      PlaceNeed({.gpus = 2, .bytes_per_gpu = 40 * kGiB, .nvlink = true}, Rooms({70, 70}), {});
  EXPECT_EQ(p.outcome, PlacementOutcome::kFits);
  EXPECT_TRUE(p.nvlink_unchecked);
}

TEST(PlaceNeedTest, UnusableRoomsDoNotCount) {
  auto rooms = Rooms({70, 70});
  rooms[0].usable = false;
  Placement p = PlaceNeed({.gpus = 2, .bytes_per_gpu = 40 * kGiB, .nvlink = false}, rooms, {});
  EXPECT_EQ(p.outcome, PlacementOutcome::kUnsatisfiable);
  EXPECT_EQ(p.free_total, 70 * kGiB);
}

TEST(CollectRoomsTest, Usability) {
  Snapshot s = HealthyServer(7);
  GpuAt(s, 0)->unreachable = ProbeError{"nvml", "gpu_lost", "lost", 0u, 15};
  GpuAt(s, 1)->mig_mode_current = true;
  GpuAt(s, 2)->compute_mode = ComputeMode::kProhibited;
  GpuAt(s, 3)->compute_mode = ComputeMode::kExclusiveProcess;
  AddProcess(s, {.pid = 100, .gpu = 3, .bytes = 2 * kGiB});
  GpuAt(s, 4)->ecc.volatile_uncorrected = 1;
  GpuAt(s, 5)->memory.free_bytes.reset();
  GpuAt(s, 5)->memory.used_bytes.reset();
  std::vector<GpuRoom> rooms = CollectRooms(s);
  ASSERT_EQ(rooms.size(), 7u);
  for (unsigned i = 0; i < 6; ++i) EXPECT_FALSE(rooms[i].usable) << i;
  EXPECT_TRUE(rooms[6].usable);
  EXPECT_EQ(rooms[6].free_bytes, 80 * kGiB - 512 * kMiB - kMiB);

  // What reclaiming would give back: the exclusive GPU's holder and extra bytes.
  rooms = CollectRooms(s, {{6, 100 * kGiB}}, {3});
  EXPECT_TRUE(rooms[3].usable);
  EXPECT_EQ(rooms[6].free_bytes, 80 * kGiB);  // Capped at the total.
}

TEST(CollectRoomsTest, FreeFromUsedWhenFreeUnknown) {
  Snapshot s = HealthyServer(1);
  GpuAt(s, 0)->memory.free_bytes.reset();
  GpuAt(s, 0)->memory.used_bytes = 30 * kGiB;
  std::vector<GpuRoom> rooms = CollectRooms(s);
  ASSERT_EQ(rooms.size(), 1u);
  EXPECT_TRUE(rooms[0].usable);
  EXPECT_EQ(rooms[0].free_bytes, 50 * kGiB - 512 * kMiB);
}

}  // namespace
}  // namespace gw::diagnose
