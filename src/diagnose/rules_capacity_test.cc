// VRAM_EXHAUSTED, COMPUTE_SATURATED and the --need findings.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "diagnose/rules.h"
#include "diagnose/test_util.h"

namespace gw::diagnose {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using namespace fixtures;  // NOLINT

// GPU `gpu` filled to `gib` by one running process.
void Fill(Snapshot& s, unsigned gpu, uint64_t gib, pid_t pid, unsigned sm = 60) {
  AddProcess(s, {.pid = pid, .gpu = gpu, .bytes = gib * kGiB, .sm = sm});
  SetLoad(s, gpu, sm);
}

TEST(VramExhaustedTest, FullGpuWithTopHolders) {
  Snapshot s = HealthyServer(2);
  AddProcess(
      s, {.pid = 101, .gpu = 0, .bytes = 50 * kGiB, .sm = 0, .user = "alice", .age_s = 2 * 86400});
  AddProcess(s, {.pid = 202, .gpu = 0, .bytes = 28 * kGiB, .sm = 80, .user = "bob"});
  AddProcess(s, {.pid = 303, .gpu = 0, .bytes = 1 * kGiB, .sm = 5, .user = "carol"});
  AddProcess(s, {.pid = 404, .gpu = 0, .bytes = kGiB / 2, .sm = 5, .user = "dave"});
  auto findings = RunOne(s);
  ASSERT_EQ(Count(findings, "VRAM_EXHAUSTED"), 1u);
  const Finding& f = *Find(findings, "VRAM_EXHAUSTED");
  EXPECT_THAT(f.gpus, ElementsAre(0));
  EXPECT_THAT(f.message, HasSubstr("GPU 0 memory is 99.4 % full"));
  EXPECT_EQ(f.severity, Severity::kWarning);
  EXPECT_EQ(f.implies, Verdict::kBusy);
  // The three largest holders, largest first, with owner and age.
  std::vector<std::string> holders;
  for (const Evidence& e : f.evidence) {
    if (e.name == "holder") holders.push_back(e.value);
  }
  ASSERT_EQ(holders.size(), 3u);
  EXPECT_EQ(holders[0], "PID 101 python (alice): 50 GiB, SM 0 %, up 2d");
  EXPECT_THAT(holders[1], HasSubstr("PID 202 python (bob): 28 GiB, SM 80 %"));
  EXPECT_THAT(f.pids, ElementsAre(101, 202, 303));
  ASSERT_TRUE(EvidenceNumber(f, "used_pct"));
  EXPECT_NEAR(*EvidenceNumber(f, "used_pct"), 99.38, 0.01);
  EXPECT_THAT(f.next_steps.front(), "gpuwarden status --gpu 0");
}

TEST(VramExhaustedTest, TheFullMarkIsRelativeToTheGpusSize) {
  // 80 GiB GPU: full below 8 GiB free (10 %). 94.6 % full is full; 87.5 % is not.
  Snapshot s = HealthyServer(2);
  Fill(s, 0, 75, 100);  // 93.8 %: 5 GiB free.
  Fill(s, 1, 70, 101);  // 87.5 %: 10 GiB free.
  auto findings = RunOne(s);
  ASSERT_EQ(Count(findings, "VRAM_EXHAUSTED"), 1u);
  EXPECT_THAT(Find(findings, "VRAM_EXHAUSTED")->gpus, ElementsAre(0));
  EXPECT_THAT(Find(findings, "VRAM_EXHAUSTED")->message, HasSubstr("(full below 8 GiB)"));
  // A 16 GiB GPU with 1.5 GiB free is full (below 1.6 GiB); the mark never falls under 1 GiB.
  Snapshot small = HealthyServer(1);
  GpuAt(small, 0)->memory.total_bytes = 16 * kGiB;
  GpuAt(small, 0)->memory.used_bytes = 0;
  GpuAt(small, 0)->memory.free_bytes = 16 * kGiB;
  GpuAt(small, 0)->memory.reserved_bytes.reset();
  AddProcess(small, {.pid = 7, .gpu = 0, .bytes = 14 * kGiB + kGiB / 2, .sm = 50});
  EXPECT_EQ(Count(RunOne(small), "VRAM_EXHAUSTED"), 1u);
  DiagnoseOptions o;
  o.vram_full_free_pct = 5;  // 4 GiB on 80 GiB: GPU 0 (5 GiB free) is no longer full.
  EXPECT_EQ(Count(RunOne(s, o), "VRAM_EXHAUSTED"), 0u);
}

TEST(VramExhaustedTest, ShortOfTheNeed) {
  Snapshot s = HealthyServer(2);
  Fill(s, 0, 70, 100);  // ~9.5 GiB free: short of 20G, not full.
  DiagnoseOptions o;
  o.need = *ParseNeed("20G");
  auto findings = RunOne(s, o);
  ASSERT_EQ(Count(findings, "VRAM_EXHAUSTED"), 1u);
  EXPECT_THAT(Find(findings, "VRAM_EXHAUSTED")->message,
              HasSubstr("less than the 20 GiB per GPU you need"));
  EXPECT_EQ(Count(RunOne(s), "VRAM_EXHAUSTED"), 0u);
}

TEST(VramExhaustedTest, NoDataNoFinding) {
  Snapshot s = HealthyServer(3);
  Fill(s, 0, 79, 100);
  Fill(s, 1, 79, 101);
  Fill(s, 2, 79, 102);
  GpuAt(s, 0)->memory.used_bytes.reset();
  GpuAt(s, 1)->memory.total_bytes.reset();
  GpuAt(s, 2)->unreachable = ProbeError{"nvml", "gpu_lost", "lost", 2u, 15};
  EXPECT_EQ(Count(RunOne(s), "VRAM_EXHAUSTED"), 0u);
}

TEST(VramExhaustedTest, UnknownHoldersAreSaid) {
  Snapshot s = HealthyServer(1);
  GpuAt(s, 0)->memory.used_bytes = 79 * kGiB;
  GpuAt(s, 0)->memory.free_bytes = kGiB / 2;
  GpuAt(s, 0)->processes_known = false;
  auto findings = RunOne(s);
  ASSERT_EQ(Count(findings, "VRAM_EXHAUSTED"), 1u);
  const Finding& f = *Find(findings, "VRAM_EXHAUSTED");
  EXPECT_TRUE(f.pids.empty());
  bool said = false;
  for (const Evidence& e : f.evidence) said = said || e.value.find("not read") != std::string::npos;
  EXPECT_TRUE(said);
}

TEST(ComputeSaturatedTest, SustainedAndShared) {
  Snapshot s = HealthyServer(2);
  AddProcess(s, {.pid = 100, .gpu = 0, .bytes = 10 * kGiB, .sm = 60, .user = "alice"});
  AddProcess(s, {.pid = 200, .gpu = 0, .bytes = 10 * kGiB, .sm = 38, .user = "bob"});
  SetLoad(s, 0, 98);
  auto window = Window(s, 3);
  window[0].gpus[0].utilization_gpu_pct = 95;
  auto findings = RunRules(window, {});
  ASSERT_EQ(Count(findings, "COMPUTE_SATURATED"), 1u);
  const Finding& f = *Find(findings, "COMPUTE_SATURATED");
  EXPECT_THAT(f.gpus, ElementsAre(0));
  EXPECT_THAT(f.pids, ElementsAre(100, 200));
  EXPECT_THAT(f.message, HasSubstr("in all 3 samples"));
  EXPECT_THAT(f.message, HasSubstr("shared by 2 processes of 2 users"));
  EXPECT_EQ(*EvidenceNumber(f, "utilization_min"), 95);
  EXPECT_EQ(Count(findings, "VRAM_EXHAUSTED"), 0u);  // Memory is fine: compute is the shortage.
}

TEST(ComputeSaturatedTest, OneDipIsNotSustained) {
  Snapshot s = HealthyServer(1);
  AddProcess(s, {.pid = 100, .gpu = 0, .sm = 60});
  AddProcess(s, {.pid = 200, .gpu = 0, .sm = 38});
  SetLoad(s, 0, 98);
  auto window = Window(s, 3);
  window[1].gpus[0].utilization_gpu_pct = 40;
  EXPECT_EQ(Count(RunRules(window, {}), "COMPUTE_SATURATED"), 0u);
}

// Issue class "free that is not free": even with memory left, one job that
// loads a GPU fully makes new work wait there.
TEST(ComputeSaturatedTest, OneJobSaturatingItsGpuIsEnough) {
  Snapshot s = HealthyServer(2);
  Fill(s, 0, 40, 100, 99);
  SetLoad(s, 0, 100);
  auto findings = RunOne(s);
  ASSERT_EQ(Count(findings, "COMPUTE_SATURATED"), 1u);
  EXPECT_THAT(Find(findings, "COMPUTE_SATURATED")->message, HasSubstr("by one process of"));
  EXPECT_THAT(Find(findings, "COMPUTE_SATURATED")->pids, ElementsAre(100));
  // The caller's need is told when no unsaturated GPU can take it.
  Fill(s, 1, 40, 101, 99);
  SetLoad(s, 1, 100);
  DiagnoseOptions o;
  o.need = *ParseNeed("10G");
  findings = RunOne(s, o);
  EXPECT_EQ(Count(findings, "COMPUTE_SATURATED"), 2u);
  EXPECT_THAT(Find(findings, "COMPUTE_SATURATED")->message, HasSubstr("your need 10G"));
  // Below the mark: nothing.
  SetLoad(s, 1, 80);
  EXPECT_EQ(Count(RunOne(s, o), "COMPUTE_SATURATED"), 1u);
}

TEST(ComputeSaturatedTest, UnknownUtilizationSkips) {
  Snapshot s = HealthyServer(1);
  AddProcess(s, {.pid = 100, .gpu = 0});
  AddProcess(s, {.pid = 200, .gpu = 0});
  GpuAt(s, 0)->utilization_gpu_pct.reset();
  EXPECT_EQ(Count(RunOne(s), "COMPUTE_SATURATED"), 0u);
  // Unknown in some samples: the known ones decide.
  SetLoad(s, 0, 97);
  auto window = Window(s, 3);
  window[0].gpus[0].utilization_gpu_pct.reset();
  EXPECT_EQ(Count(RunRules(window, {}), "COMPUTE_SATURATED"), 1u);
}

TEST(NeedTest, Fits) {
  Snapshot s = HealthyServer(4);
  Fill(s, 0, 70, 100);
  Fill(s, 2, 70, 102);
  DiagnoseOptions o;
  o.need = *ParseNeed("2x24G");
  auto findings = RunOne(s, o);
  ASSERT_EQ(Count(findings, "NEED_FITS"), 1u);
  const Finding& f = *Find(findings, "NEED_FITS");
  EXPECT_THAT(f.gpus, ElementsAre(1, 3));
  EXPECT_EQ(f.severity, Severity::kInfo);
  EXPECT_THAT(f.next_steps,
              ElementsAre("CUDA_DEVICE_ORDER=PCI_BUS_ID CUDA_VISIBLE_DEVICES=1,3 your-command"));
  EXPECT_EQ(Count(findings, "FRAGMENTED") + Count(findings, "NEED_UNSATISFIABLE"), 0u);
}

TEST(NeedTest, Fragmented) {
  Snapshot s = HealthyServer(4);
  for (unsigned g = 0; g < 4; ++g) Fill(s, g, 50, 100 + g);  // ~29.5 GiB free each.
  DiagnoseOptions o;
  o.need = *ParseNeed("40G");
  auto findings = RunOne(s, o);
  ASSERT_EQ(Count(findings, "FRAGMENTED"), 1u);
  const Finding& f = *Find(findings, "FRAGMENTED");
  EXPECT_TRUE(f.gpus.empty());
  EXPECT_THAT(f.message, HasSubstr("enough for 40G, but only 0 GPUs have 40 GiB free"));
  EXPECT_EQ(Count(findings, "NEED_FITS"), 0u);
}

TEST(NeedTest, FragmentedByNvlink) {
  Snapshot s = HealthyServer(4);
  s.topology.clear();
  for (unsigned a = 0; a < 4; ++a) {
    for (unsigned b = a + 1; b < 4; ++b) {
      const bool pair = (a == 0 && b == 1) || (a == 2 && b == 3);
      s.topology.push_back({a, b, TopologyLevel::kNode, pair ? 4u : 0u});
    }
  }
  Fill(s, 1, 70, 101);
  Fill(s, 3, 70, 103);
  DiagnoseOptions o;
  o.need = *ParseNeed("2x40G+nvlink");
  auto findings = RunOne(s, o);
  ASSERT_EQ(Count(findings, "FRAGMENTED"), 1u);
  EXPECT_THAT(Find(findings, "FRAGMENTED")->message, HasSubstr("joined by NVLink"));
  // Without NVLink the same need fits on 0 and 2.
  o.need->nvlink = false;
  findings = RunOne(s, o);
  ASSERT_EQ(Count(findings, "NEED_FITS"), 1u);
  EXPECT_THAT(Find(findings, "NEED_FITS")->gpus, ElementsAre(0, 2));
}

TEST(NeedTest, UnsatisfiableAndNever) {
  Snapshot s = HealthyServer(2);
  Fill(s, 0, 70, 100);
  Fill(s, 1, 70, 101);
  DiagnoseOptions o;
  o.need = *ParseNeed("2x40G");
  auto findings = RunOne(s, o);
  ASSERT_EQ(Count(findings, "NEED_UNSATISFIABLE"), 1u);
  EXPECT_THAT(Find(findings, "NEED_UNSATISFIABLE")->message, HasSubstr("wants 80 GiB free"));

  o.need = *ParseNeed("3x10G");
  findings = RunOne(s, o);
  ASSERT_EQ(Count(findings, "NEED_EXCEEDS_SERVER"), 1u);
  EXPECT_THAT(Find(findings, "NEED_EXCEEDS_SERVER")->message, HasSubstr("the server has 2 GPUs"));

  o.need = *ParseNeed("100G");
  findings = RunOne(s, o);
  ASSERT_EQ(Count(findings, "NEED_EXCEEDS_SERVER"), 1u);
  EXPECT_THAT(
      Find(findings, "NEED_EXCEEDS_SERVER")->message,
      HasSubstr("the largest GPU can give 79.5 GiB (its total less what the driver reserves"));
}

TEST(NeedTest, NoNeedNoFindingNoDataUnchecked) {
  Snapshot s = HealthyServer(2);
  auto findings = RunOne(s);
  for (const char* code :
       {"NEED_FITS", "FRAGMENTED", "NEED_UNSATISFIABLE", "NEED_EXCEEDS_SERVER"}) {
    EXPECT_EQ(Count(findings, code), 0u) << code;
  }
  // No memory data: the need cannot be checked (UNKNOWN), never "fits" nor "never".
  for (Gpu& g : s.gpus) g.memory = MemoryInfo{};
  DiagnoseOptions o;
  o.need = *ParseNeed("20G");
  findings = RunOne(s, o);
  for (const char* code :
       {"NEED_FITS", "FRAGMENTED", "NEED_UNSATISFIABLE", "NEED_EXCEEDS_SERVER"}) {
    EXPECT_EQ(Count(findings, code), 0u) << code;
  }
  EXPECT_EQ(Count(findings, "NEED_UNCHECKED"), 1u);
}

}  // namespace
}  // namespace gw::diagnose
