#include "diagnose/placement.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "diagnose/health.h"
#include "diagnose/test_util.h"
#include "diagnose/verdict.h"

namespace gw::diagnose {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using namespace fixtures;  // NOLINT

constexpr uint64_t kMargin = placement::kDefaultMarginBytes;

// Rooms of `frees` (GiB), all 80 GiB, idle and usable.
std::vector<GpuRoom> Rooms(std::vector<uint64_t> frees_gib) {
  std::vector<GpuRoom> rooms;
  for (unsigned i = 0; i < frees_gib.size(); ++i) {
    GpuRoom r;
    r.index = i;
    r.total_bytes = 80 * kGiB;
    r.free_bytes = frees_gib[i] * kGiB;
    r.util_pct = 0;
    r.usable = true;
    rooms.push_back(r);
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
  rooms[3].util_pct = 80;
  Placement p = PlaceNeed({.gpus = 2, .bytes_per_gpu = 40 * kGiB, .nvlink = false}, rooms, {});
  EXPECT_EQ(p.outcome, PlacementOutcome::kFits);
  EXPECT_THAT(p.gpus, ElementsAre(2, 1));  // Idle ones first, most free first.
  EXPECT_EQ(p.gpus_with_room, 3u);
}

TEST(PlaceNeedTest, Fragmented) {
  Placement p =
      PlaceNeed({.gpus = 1, .bytes_per_gpu = 40 * kGiB, .nvlink = false}, Rooms({30, 30, 5}), {});
  EXPECT_EQ(p.outcome, PlacementOutcome::kFragmented);
  EXPECT_EQ(p.free_total, 65 * kGiB - 3 * kMargin);  // The margin is kept on each GPU.
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

TEST(PlaceNeedTest, NvlinkWithUnknownTopologyCannotBeChecked) {
  Placement p =
      PlaceNeed({.gpus = 2, .bytes_per_gpu = 40 * kGiB, .nvlink = true}, Rooms({70, 70}), {});
  EXPECT_EQ(p.outcome, PlacementOutcome::kCannotCheck);
  EXPECT_TRUE(p.gpus.empty());
  // One GPU: NVLink does not apply.
  p = PlaceNeed({.gpus = 1, .bytes_per_gpu = 40 * kGiB, .nvlink = true}, Rooms({70, 70}), {});
  EXPECT_EQ(p.outcome, PlacementOutcome::kFits);
  // Too many GPUs is certain, topology or not.
  p = PlaceNeed({.gpus = 3, .bytes_per_gpu = 40 * kGiB, .nvlink = true}, Rooms({70, 70}), {});
  EXPECT_EQ(p.outcome, PlacementOutcome::kNeverFits);
}

TEST(PlaceNeedTest, MarginIsKept) {
  // 40 GiB free exactly: the margin does not fit beside it.
  Placement p =
      PlaceNeed({.gpus = 1, .bytes_per_gpu = 40 * kGiB, .nvlink = false}, Rooms({40}), {});
  EXPECT_EQ(p.outcome, PlacementOutcome::kUnsatisfiable);
  p = PlaceNeed({.gpus = 1, .bytes_per_gpu = 40 * kGiB - kMargin, .nvlink = false}, Rooms({40}),
                {});
  EXPECT_EQ(p.outcome, PlacementOutcome::kFits);
  // A GPU of exactly the size asked can never hold it and the margin.
  p = PlaceNeed({.gpus = 1, .bytes_per_gpu = 80 * kGiB, .nvlink = false}, Rooms({80}), {});
  EXPECT_EQ(p.outcome, PlacementOutcome::kNeverFits);
  EXPECT_EQ(p.margin_bytes, kMargin);
}

TEST(PlaceNeedTest, UnknownUtilisationIsBusiest) {
  auto rooms = Rooms({70, 70, 70});
  rooms[0].util_pct.reset();
  rooms[1].util_pct = 100;
  rooms[2].util_pct = 99;
  Placement p = PlaceNeed({.gpus = 1, .bytes_per_gpu = 10 * kGiB, .nvlink = false}, rooms, {});
  EXPECT_THAT(p.gpus, ElementsAre(2));
  p = PlaceNeed({.gpus = 3, .bytes_per_gpu = 10 * kGiB, .nvlink = false}, rooms, {});
  EXPECT_THAT(p.gpus, ElementsAre(2, 1, 0));
}

TEST(PlaceNeedTest, BusyRoomsWaitUnusableOnesBlock) {
  auto rooms = Rooms({70, 70});
  rooms[0].usable = false;  // Busy for now (e.g. compute saturated): the need waits.
  Placement p = PlaceNeed({.gpus = 2, .bytes_per_gpu = 40 * kGiB, .nvlink = false}, rooms, {});
  EXPECT_EQ(p.outcome, PlacementOutcome::kUnsatisfiable);
  EXPECT_EQ(p.free_total, 70 * kGiB - kMargin);
  // Unhealthy: it fits only on a GPU that cannot take work.
  rooms[0].block = placement::Block::kUnhealthy;
  p = PlaceNeed({.gpus = 2, .bytes_per_gpu = 40 * kGiB, .nvlink = false}, rooms, {});
  EXPECT_EQ(p.outcome, PlacementOutcome::kUnusable);
  EXPECT_THAT(p.unusable, ElementsAre(0));
}

TEST(CollectRoomsTest, Usability) {
  Snapshot s = HealthyServer(8);
  GpuAt(s, 0)->unreachable = ProbeError{"nvml", "gpu_lost", "lost", 0u, 15};
  GpuAt(s, 1)->mig_mode_current = true;
  GpuAt(s, 2)->compute_mode = ComputeMode::kProhibited;
  GpuAt(s, 3)->compute_mode = ComputeMode::kExclusiveProcess;
  AddProcess(s, {.pid = 100, .gpu = 3, .bytes = 2 * kGiB});
  GpuAt(s, 4)->ecc.volatile_uncorrected = 1;
  GpuAt(s, 5)->memory.free_bytes.reset();
  GpuAt(s, 5)->memory.used_bytes.reset();
  GpuAt(s, 7)->memory.total_bytes.reset();
  // Health comes from the findings (the ECC rule's for GPU 4).
  const std::vector<Finding> findings = RunOne(s);
  std::vector<GpuRoom> rooms = CollectRooms(s, {}, {}, findings);
  ASSERT_EQ(rooms.size(), 8u);
  using placement::Block;
  const Block want[] = {Block::kUnreachable,    Block::kMig,          Block::kProhibited,
                        Block::kExclusiveTaken, Block::kUnhealthy,    Block::kMemoryUnknown,
                        Block::kNone,           Block::kMemoryUnknown};
  for (unsigned i = 0; i < 8; ++i) {
    EXPECT_EQ(rooms[i].block, want[i]) << i;
    EXPECT_EQ(rooms[i].usable, want[i] == Block::kNone) << i;
  }
  EXPECT_EQ(rooms[6].free_bytes, 80 * kGiB - 512 * kMiB - kMiB);
  EXPECT_FALSE(rooms[5].free_bytes.has_value());  // Unknown, not 0.
  EXPECT_FALSE(rooms[7].total_bytes.has_value());

  // Without findings GPU 4 is not judged unhealthy.
  EXPECT_TRUE(CollectRooms(s)[4].usable);

  // What reclaiming would give back: the exclusive GPU's holder and extra bytes.
  rooms = CollectRooms(s, {{6, 100 * kGiB}}, {3}, findings);
  EXPECT_TRUE(rooms[3].usable);
  EXPECT_EQ(rooms[6].free_bytes, 80 * kGiB);  // Capped at the total.
}

TEST(CollectRoomsTest, RoomTakesAsPlaceNeedJudgesOneGpu) {
  auto rooms = Rooms({40, 40});
  for (uint64_t bytes : {40 * kGiB - kMargin, 40 * kGiB - kMargin + 1}) {
    const bool fits =
        PlaceNeed({.gpus = 1, .bytes_per_gpu = bytes, .nvlink = false}, {&rooms[0], 1}, {})
            .outcome == PlacementOutcome::kFits;
    EXPECT_EQ(RoomTakes(rooms[0], bytes), fits) << bytes;
  }
  EXPECT_TRUE(RoomTakes(rooms[0], 40 * kGiB - kMargin));
  rooms[1].usable = false;
  EXPECT_FALSE(RoomTakes(rooms[1], kGiB));
  rooms[0].free_bytes = 100;  // Less than the margin.
  EXPECT_FALSE(RoomTakes(rooms[0], 1));
}

TEST(CollectRoomsTest, FreeCappedAtTotalLessListedProcesses) {
  Snapshot s = HealthyServer(1);
  // NVML's free and its process list are two reads: 10 GiB allocated in between.
  AddProcess(s, {.pid = 100, .gpu = 0, .bytes = 10 * kGiB, .add_memory = false});
  std::vector<GpuRoom> rooms = CollectRooms(s);
  EXPECT_EQ(rooms[0].free_bytes, 70 * kGiB);
}

TEST(UnhealthyGpusTest, HardwareFindingsOfDegradedOrWorse) {
  auto finding = [](std::string code, Category c, Verdict v, unsigned gpu) {
    Finding f;
    f.code = std::move(code);
    f.category = c;
    f.implies = v;
    f.gpus = {gpu};
    f.message = "m";
    return f;
  };
  const std::vector<Finding> findings = {
      finding("XID_FATAL", Category::kMemory, Verdict::kFault, 0),
      finding("NVLINK_DOWN", Category::kNvlink, Verdict::kDegraded, 1),
      finding("VRAM_EXHAUSTED", Category::kShortage, Verdict::kBusy, 2),
      finding("IDLE_HOLDER", Category::kHolder, Verdict::kReclaimable, 3),
      finding("MIG_ENABLED", Category::kConfiguration, Verdict::kDegraded, 4),
      finding("PCIE_REPLAY_RATE", Category::kBus, Verdict::kOk, 6),
  };
  const std::map<unsigned, std::string> unfit = UnhealthyGpus(findings);
  ASSERT_EQ(unfit.size(), 2u);
  EXPECT_EQ(unfit.at(0), "XID_FATAL: m");
  EXPECT_EQ(unfit.at(1), "NVLINK_DOWN: m");
}

// The server: four 80 GiB GPUs with 40+ GiB free, GPU 1 with a row
// remap pending (and nothing else wrong), GPU 3 busy with 12 GiB left.
Snapshot RemapPendingServer() {
  Snapshot s = HealthyServer(4);
  s.topology.clear();  // Unknown: the first GPUs in preference order.
  GpuAt(s, 1)->remapped_rows.pending = true;
  GpuAt(s, 1)->remapped_rows.correctable = 1;
  AddProcess(s, {.pid = 771004, .gpu = 3, .bytes = 67 * kGiB + 512 * kMiB - kMiB});
  SetLoad(s, 3, 84);
  return s;
}

std::vector<const Evidence*> AllEvidenceNamed(const Finding& f, std::string_view name) {
  std::vector<const Evidence*> out;
  for (const Evidence& e : f.evidence) {
    if (e.name == name) out.push_back(&e);
  }
  return out;
}

TEST(RemapPendingTest, NeedFitsOnAPendingRemapGpuAndSaysSo) {
  const Snapshot s = RemapPendingServer();
  DiagnoseOptions o;
  o.need = NeedRequest{.gpus = 3, .bytes_per_gpu = 40 * kGiB, .nvlink = false};
  const Diagnosis d = DiagnoseOne(s, o);
  EXPECT_EQ(Find(d.findings, "FRAGMENTED"), nullptr) << d.summary;
  const Finding* fits = Find(d.findings, "NEED_FITS");
  ASSERT_NE(fits, nullptr) << d.summary;
  std::vector<unsigned> gpus = fits->gpus;
  std::sort(gpus.begin(), gpus.end());
  EXPECT_THAT(gpus, ElementsAre(0, 1, 2));
  EXPECT_THAT(fits->message, HasSubstr("GPU 1 has a row remap pending; usable"));
  EXPECT_THAT(fits->message, HasSubstr("gpuwarden reset --plan 1"));
  const auto caveat = AllEvidenceNamed(*fits, "reset_pending");
  ASSERT_EQ(caveat.size(), 1u);
  EXPECT_EQ(caveat[0]->number, 1.0);
  EXPECT_THAT(caveat[0]->value, HasSubstr("GPU 1: row remap pending (usable; reset it when idle"));
  // GPU 3 could not take it: named with its room and its holder.
  const auto excluded = AllEvidenceNamed(*fits, "excluded");
  ASSERT_EQ(excluded.size(), 1u);
  EXPECT_EQ(excluded[0]->number, 3.0);
  EXPECT_THAT(excluded[0]->value, HasSubstr("GPU 3: 12 GiB free of the 40 GiB asked"));
  EXPECT_THAT(excluded[0]->value, HasSubstr("PID 771004"));
  // The answer is OK; the GPU itself stays DEGRADED, and line 1 does not add
  // the remap as a "but" it already spoke of.
  EXPECT_EQ(d.server, Verdict::kOk);
  EXPECT_THAT(d.summary, HasSubstr("GPU 1 has a row remap pending; usable"));
  EXPECT_THAT(d.summary, ::testing::Not(HasSubstr("; but")));
  EXPECT_EQ(d.gpus[1].verdict, Verdict::kDegraded);
  EXPECT_EQ(d.gpus[1].state, GpuState::kDegraded);

  // Two GPUs: the healthy ones first; the pending-remap GPU stays idle for its reset.
  o.need = NeedRequest{.gpus = 2, .bytes_per_gpu = 40 * kGiB, .nvlink = false};
  const Diagnosis two = DiagnoseOne(s, o);
  const Finding* fits2 = Find(two.findings, "NEED_FITS");
  ASSERT_NE(fits2, nullptr) << two.summary;
  EXPECT_THAT(fits2->gpus, ElementsAre(0, 2));
  EXPECT_TRUE(AllEvidenceNamed(*fits2, "reset_pending").empty());
  // Not placed on it: line 1 still says what is wrong with the server.
  EXPECT_THAT(two.summary, HasSubstr("; but GPU 1 has a row remap waiting for a GPU reset"));
}

TEST(RemapPendingTest, ConfigOffLeavesTheGpuOutNamedWithItsReset) {
  const Snapshot s = RemapPendingServer();
  DiagnoseOptions o;
  o.need = NeedRequest{.gpus = 3, .bytes_per_gpu = 40 * kGiB, .nvlink = false};
  o.placement.use_remap_pending = false;
  const Diagnosis d = DiagnoseOne(s, o);
  const Finding* frag = Find(d.findings, "FRAGMENTED");
  ASSERT_NE(frag, nullptr) << d.summary;
  EXPECT_THAT(frag->message, HasSubstr("only 2 GPUs have 40 GiB free"));
  EXPECT_THAT(frag->message, HasSubstr("left out: GPU 1 (row remap pending), GPU 3 (12 GiB free)"));
  const auto excluded = AllEvidenceNamed(*frag, "excluded");
  ASSERT_EQ(excluded.size(), 2u);
  EXPECT_EQ(excluded[0]->number, 1.0);
  EXPECT_THAT(excluded[0]->value, HasSubstr("GPU 1: row remap pending"));
  EXPECT_THAT(excluded[0]->value,
              HasSubstr("reset it when idle to activate the remap: see gpuwarden reset --plan 1"));
  EXPECT_EQ(excluded[1]->number, 3.0);
  // The total quoted counts only the GPUs placement could use: 0, 2 and 3,
  // each less the margin; never GPU 1's 79.5 GiB.
  const uint64_t room = 80 * kGiB - 512 * kMiB - kMiB - kMargin;
  const uint64_t want_total = 2 * room + (12 * kGiB - kMargin);
  EXPECT_EQ(EvidenceNumber(*frag, "free_total"), static_cast<double>(want_total));
  EXPECT_THAT(frag->message, HasSubstr("adds up to " + FormatBytes(want_total)));
  // Work holds the room it needs on the usable GPUs: BUSY, and line 1 names GPU 1.
  EXPECT_EQ(d.server, Verdict::kBusy) << d.summary;
  EXPECT_THAT(d.summary, HasSubstr("left out: GPU 1 (row remap pending)"));
}

TEST(RemapPendingTest, DescribeLeftOutNamesEachReasonAndStep) {
  Snapshot s = HealthyServer(6);
  s.topology.clear();
  AddProcess(s, {.pid = 4242, .gpu = 3, .bytes = 68 * kGiB});
  GpuAt(s, 2)->unreachable = ProbeError{"nvml", "no_permission", "Insufficient Permissions", 2u, 4};
  GpuAt(s, 2)->memory = MemoryInfo{};
  GpuAt(s, 4)->mig_mode_current = true;
  GpuAt(s, 5)->unreachable = ProbeError{"nvml", "gpu_lost", "GPU is lost", 5u, 15};
  GpuAt(s, 5)->memory = MemoryInfo{};
  std::vector<Finding> findings;
  Finding idle = CatalogFinding("IDLE_HOLDER", {3}, "PID 4242 holds 68 GiB on GPU 3");
  idle.evidence.push_back({std::string(kHeldEvidence), "30 GiB", 30.0 * kGiB, "bytes"});
  findings.push_back(idle);
  Finding lost = CatalogFinding("XID_FATAL", {5}, "GPU 5 fell off the bus (Xid 79)");
  lost.next_steps = {"sudo dmesg -T | grep -i xid",
                     "admin: drain the server and reboot; check power"};
  findings.push_back(lost);
  const std::vector<GpuRoom> rooms = CollectRooms(s, {}, {}, findings);
  const NeedRequest need{.gpus = 4, .bytes_per_gpu = 40 * kGiB, .nvlink = false};
  const Placement p = PlaceNeed(need, rooms, s.topology);
  const std::vector<Exclusion> left = DescribeLeftOut(need, p, rooms, s, findings, {});
  ASSERT_EQ(left.size(), 4u);
  EXPECT_EQ(left[0].text, "GPU 2: could not be read (Insufficient Permissions)");
  EXPECT_THAT(left[1].text, HasSubstr("GPU 3: 11.5 GiB free of the 40 GiB asked"));
  EXPECT_THAT(left[1].text, HasSubstr("30 GiB held by idle holders: gpuwarden clean --gpu 3"));
  EXPECT_THAT(left[2].text, HasSubstr("GPU 4: in MIG mode"));
  EXPECT_EQ(left[3].text,
            "GPU 5: fell off the bus (Xid 79) [XID_FATAL]: admin: drain the server and reboot; "
            "check power");
}

TEST(CollectRoomsTest, FreeFromUsedWhenFreeUnknown) {
  Snapshot s = HealthyServer(1);
  GpuAt(s, 0)->memory.free_bytes.reset();
  GpuAt(s, 0)->memory.used_bytes = 30 * kGiB;
  std::vector<GpuRoom> rooms = CollectRooms(s);
  ASSERT_EQ(rooms.size(), 1u);
  EXPECT_TRUE(rooms[0].usable);
  EXPECT_EQ(rooms[0].free_bytes, 50 * kGiB - 512 * kMiB);  // total - used - reserved.
}

TEST(NeedUncheckedTest, IsUnknownNeverOk) {
  Snapshot s = HealthyServer(2);
  s.topology.clear();
  DiagnoseOptions o;
  o.need = *ParseNeed("2x10G+nvlink");
  Diagnosis d = Diagnose(std::span<const Snapshot>(&s, 1), o);
  EXPECT_EQ(Count(d.findings, "NEED_UNCHECKED"), 1u);
  EXPECT_EQ(Count(d.findings, "NEED_FITS"), 0u);
  EXPECT_EQ(d.server, Verdict::kUnknown);
  // Without NVLink it fits.
  o.need = *ParseNeed("2x10G");
  d = Diagnose(std::span<const Snapshot>(&s, 1), o);
  EXPECT_EQ(Count(d.findings, "NEED_FITS"), 1u);
  EXPECT_EQ(d.server, Verdict::kOk);
}

TEST(NeedUncheckedTest, UnhealthyGpuIsNotOffered) {
  Snapshot s = HealthyServer(2);
  GpuAt(s, 0)->ecc.volatile_uncorrected = 1;  // ECC_DBE_VOLATILE: unfit for new work.
  DiagnoseOptions o;
  o.need = *ParseNeed("10G");
  const std::vector<Finding> findings = RunOne(s, o);
  ASSERT_EQ(Count(findings, "NEED_FITS"), 1u);
  EXPECT_THAT(Find(findings, "NEED_FITS")->gpus, ElementsAre(1));
  o.need = *ParseNeed("2x10G");
  const std::vector<Finding> two = RunOne(s, o);
  ASSERT_EQ(Count(two, "NEED_UNSATISFIABLE"), 1u);
  EXPECT_THAT(Find(two, "NEED_UNSATISFIABLE")->message, HasSubstr("GPU 0 (unhealthy)"));
}

// A GPU unreachable because it is lost is broken, not unread: a need that
// would take it waits on a fault (FAULT), not on a look (UNKNOWN).
TEST(NeedUncheckedTest, ALostGpuIsAFaultNotAnUnreadGpu) {
  Snapshot s = HealthyServer(2);
  GpuAt(s, 1)->unreachable = ProbeError{"nvml", "gpu_lost", "GPU is lost", 1u, 15};
  DiagnoseOptions o;
  o.need = *ParseNeed("2x10G");
  const Diagnosis d = Diagnose(std::span<const Snapshot>(&s, 1), o);
  EXPECT_EQ(d.server, Verdict::kFault) << d.summary;
  const std::vector<Finding> findings = RunOne(s, o);
  ASSERT_EQ(Count(findings, "NEED_UNSATISFIABLE"), 1u);
  EXPECT_EQ(Count(findings, "NEED_UNCHECKED"), 0u);
  // A GPU nobody could read stays "cannot be checked".
  Snapshot unread = HealthyServer(2);
  GpuAt(unread, 1)->unreachable = ProbeError{"nvml", "no_permission", "denied", 1u, 4};
  EXPECT_EQ(Count(RunOne(unread, o), "NEED_UNCHECKED"), 1u);
}

}  // namespace
}  // namespace gw::diagnose
