// GPU states (free / in_use / busy / reclaimable / degraded / fault / unknown),
// the server's line 1, and the answer to a stated need (--need).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "diagnose/rules.h"
#include "diagnose/test_util.h"
#include "diagnose/verdict.h"

namespace gw::diagnose {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using namespace fixtures;  // NOLINT

const GpuVerdict& At(const Diagnosis& d, unsigned index) {
  for (const GpuVerdict& g : d.gpus) {
    if (g.index == index) return g;
  }
  ADD_FAILURE() << "no GPU " << index;
  return d.gpus.front();
}

// The demo server of the issue: two GPUs saturated and full, one 87.5 % full
// but idle, two free, two in use with room, one holding memory with nothing
// listed.
Snapshot DemoLike() {
  Snapshot s = HealthyServer(8);
  AddProcess(s, {.pid = 100, .gpu = 0, .bytes = 77 * kGiB, .sm = 98});
  SetLoad(s, 0, 99);
  AddProcess(s, {.pid = 101, .gpu = 1, .bytes = 76 * kGiB, .sm = 97});
  SetLoad(s, 1, 98);
  AddProcess(s, {.pid = 102, .gpu = 2, .bytes = 70 * kGiB, .sm = 3});
  SetLoad(s, 2, 3);
  AddProcess(s, {.pid = 104, .gpu = 4, .bytes = 12 * kGiB, .sm = 30});
  AddProcess(s, {.pid = 105, .gpu = 4, .bytes = 9 * kGiB, .sm = 22, .user = "bob"});
  SetLoad(s, 4, 52);
  AddProcess(s, {.pid = 106, .gpu = 6, .bytes = 40 * kGiB, .sm = 61});
  SetLoad(s, 6, 61);
  return s;
}

// Issue class 1: "free" that is not free.
TEST(GpuStateTest, OnlyGpusWithoutWorkAreFree) {
  const Diagnosis d = DiagnoseOne(DemoLike());
  EXPECT_EQ(At(d, 0).state, GpuState::kBusy);
  EXPECT_EQ(At(d, 1).state, GpuState::kBusy);
  EXPECT_EQ(At(d, 2).state, GpuState::kInUse);  // 87.5 % full: room left, not free.
  EXPECT_EQ(At(d, 3).state, GpuState::kFree);
  EXPECT_EQ(At(d, 4).state, GpuState::kInUse);  // Two processes at 52 %.
  EXPECT_EQ(At(d, 5).state, GpuState::kFree);
  EXPECT_EQ(At(d, 6).state, GpuState::kInUse);  // 40 GiB at 61 %.
  EXPECT_EQ(At(d, 7).state, GpuState::kFree);
  EXPECT_THAT(d.summary, HasSubstr("3 of 8 GPUs free (GPU 3,5,7)"));
  EXPECT_THAT(d.summary, HasSubstr("room on GPU 2"));
  EXPECT_THAT(d.summary, HasSubstr("busy: GPU 0,1"));
  EXPECT_THAT(At(d, 4).line, HasSubstr("OK, in use"));
  EXPECT_THAT(At(d, 4).line, HasSubstr("48 % compute free"));
  EXPECT_THAT(At(d, 3).line, HasSubstr("OK, free"));
  ASSERT_TRUE(At(d, 6).room_free_bytes);
  ASSERT_TRUE(At(d, 6).room_compute_free_pct);
  EXPECT_DOUBLE_EQ(*At(d, 6).room_compute_free_pct, 39);
}

TEST(GpuStateTest, OneProcessAtFullComputeIsBusy) {
  Snapshot s = HealthyServer(4);
  AddProcess(s, {.pid = 100, .gpu = 0, .bytes = 10 * kGiB, .sm = 100});
  SetLoad(s, 0, 100);
  const Diagnosis d = DiagnoseOne(s);
  EXPECT_EQ(At(d, 0).state, GpuState::kBusy);
  EXPECT_EQ(At(d, 0).verdict, Verdict::kBusy);
  EXPECT_THAT(d.summary, HasSubstr("3 of 4 GPUs free"));
}

TEST(GpuStateTest, ANearlyFullGpuIsBusyWithoutACliffAtOneNumber) {
  Snapshot s = HealthyServer(2);
  AddProcess(s, {.pid = 100, .gpu = 0, .bytes = 75 * kGiB + 700 * kMiB, .sm = 40});  // 94.6 %.
  SetLoad(s, 0, 40);
  const Diagnosis d = DiagnoseOne(s);
  EXPECT_EQ(At(d, 0).state, GpuState::kBusy);
  EXPECT_EQ(At(d, 1).state, GpuState::kFree);
}

TEST(GpuStateTest, DisplayServerAloneLeavesAGpuFree) {
  Snapshot s = HealthyServer(1);
  AddProcess(s, {.pid = 900, .gpu = 0, .bytes = 40 * kMiB, .sm = 0, .comm = "Xorg"});
  GpuAt(s, 0)->processes.back().type = GpuProcessType::kGraphics;
  EXPECT_EQ(At(DiagnoseOne(s), 0).state, GpuState::kFree);
}

TEST(GpuStateTest, UnreadableIsUnknownNeverFree) {
  Snapshot s = HealthyServer(2);
  Gpu& g = *GpuAt(s, 1);
  g.memory = {};
  g.utilization_gpu_pct.reset();
  g.temperature_c.reset();
  const Diagnosis d = DiagnoseOne(s);
  EXPECT_EQ(At(d, 1).state, GpuState::kUnknown);
  EXPECT_EQ(At(d, 1).verdict, Verdict::kUnknown);
  EXPECT_THAT(d.summary, HasSubstr("1 of 2 GPUs free"));
  EXPECT_THAT(d.summary, HasSubstr("could not be read"));
}

// "Unknown Error" for memory and utilisation, while temperature and power
// read: neither free nor in use with room can be said (class 9 of the why
// issue: it was "OK, in use", with "room: unknown").
TEST(GpuStateTest, UsageUnreadIsUnknownWhateverElseReads) {
  Snapshot s = HealthyServer(2);
  Gpu& g = *GpuAt(s, 1);
  g.memory = {};
  g.utilization_gpu_pct.reset();
  ASSERT_TRUE(g.temperature_c.has_value());
  const Diagnosis d = DiagnoseOne(s);
  EXPECT_EQ(At(d, 1).state, GpuState::kUnknown);
  EXPECT_EQ(At(d, 1).verdict, Verdict::kUnknown);
  EXPECT_THAT(At(d, 1).line, HasSubstr("neither its memory nor its utilisation"));
  EXPECT_THAT(d.summary, Not(HasSubstr("room on GPU 1")));
  // Memory alone unread, with no work seen: unknown too, never "in use".
  Snapshot m = HealthyServer(2);
  GpuAt(m, 1)->memory = {};
  const Diagnosis dm = DiagnoseOne(m);
  EXPECT_EQ(At(dm, 1).state, GpuState::kUnknown);
  EXPECT_THAT(At(dm, 1).line, HasSubstr("did not give its memory"));
}

// Free means seen idle: an unread utilisation (a broken field) is not 0 %.
// Under MIG the whole GPU reports none by design; memory and processes decide.
TEST(GpuStateTest, FreeNeedsTheUtilisationSeenUnlessMig) {
  Snapshot s = HealthyServer(2);
  GpuAt(s, 0)->utilization_gpu_pct.reset();
  GpuAt(s, 1)->utilization_gpu_pct.reset();
  GpuAt(s, 1)->mig_mode_current = true;
  const Diagnosis d = DiagnoseOne(s);
  EXPECT_EQ(At(d, 0).state, GpuState::kUnknown);
  EXPECT_THAT(At(d, 0).line, HasSubstr("did not give its utilisation"));
  EXPECT_EQ(At(d, 1).state, GpuState::kFree);
}

TEST(GpuStateTest, IdleHolderMakesItReclaimableOnlyWhenItFillsTheGpu) {
  Snapshot s = HealthyServer(2);
  AddProcess(s, {.pid = 100, .gpu = 0, .bytes = 78 * kGiB, .sm = 0, .age_s = 86400});
  const Diagnosis d = Diagnose(Window(s, 3), IdleAtOnce());
  EXPECT_EQ(At(d, 0).state, GpuState::kReclaimable);
  EXPECT_EQ(At(d, 0).verdict, Verdict::kReclaimable);
}

// Issue class 8: --need is answered in line 1 and the exit code.
class NeedAnswerTest : public ::testing::Test {
 protected:
  Diagnosis WithNeed(const Snapshot& s, std::string_view need) {
    DiagnoseOptions o = IdleAtOnce();
    o.need = *ParseNeed(need);
    return DiagnoseOne(s, o);
  }
};

TEST_F(NeedAnswerTest, FitsNowIsOkAndSaysWhere) {
  const Diagnosis d = WithNeed(DemoLike(), "2x60G");
  EXPECT_EQ(d.server, Verdict::kOk);
  EXPECT_THAT(d.summary, HasSubstr("fits now on GPU"));
}

TEST_F(NeedAnswerTest, MoreGpusThanTheServerHasNeverFits) {
  const Diagnosis d = WithNeed(HealthyServer(8), "9x10G");
  EXPECT_EQ(d.server, Verdict::kNeverFits);
  EXPECT_THAT(d.summary, HasSubstr("NEVER_FITS"));
  EXPECT_THAT(d.summary, HasSubstr("can never fit"));
}

TEST_F(NeedAnswerTest, LargerThanAnyGpuNeverFits) {
  const Diagnosis d = WithNeed(DemoLike(), "2x24T");
  EXPECT_EQ(d.server, Verdict::kNeverFits);
  EXPECT_THAT(d.summary, Not(HasSubstr("OK")));
}

TEST_F(NeedAnswerTest, NotNowBecauseOfWorkIsBusyAndSaysWhatWouldFreeRoom) {
  const Diagnosis d = WithNeed(DemoLike(), "4x60G");
  EXPECT_EQ(d.server, Verdict::kBusy);
  EXPECT_THAT(d.summary, HasSubstr("does not fit now"));
  EXPECT_THAT(d.summary, HasSubstr("room would come from"));
}

TEST_F(NeedAnswerTest, FitsOnceIdleHoldersAreFreedIsReclaimable) {
  Snapshot s = HealthyServer(2);
  AddProcess(s, {.pid = 100, .gpu = 0, .bytes = 70 * kGiB, .sm = 0, .age_s = 86400});
  AddProcess(s, {.pid = 101, .gpu = 1, .bytes = 70 * kGiB, .sm = 0, .age_s = 86400});
  DiagnoseOptions o = IdleAtOnce();
  o.need = *ParseNeed("2x40G");
  const Diagnosis d = Diagnose(Window(s, 3), o);
  EXPECT_EQ(d.server, Verdict::kReclaimable) << d.summary;
  EXPECT_THAT(d.summary, HasSubstr("fits once idle holders free their memory"));
}

TEST_F(NeedAnswerTest, BrokenGpusItNeedsGiveTheirVerdictNotOk) {
  Snapshot s = HealthyServer(2);
  GpuAt(s, 1)->ecc.volatile_uncorrected = 3;  // Unusable: uncorrectable ECC errors.
  const Diagnosis d = WithNeed(s, "2x40G");
  EXPECT_EQ(d.server, Verdict::kFault) << d.summary;
  EXPECT_THAT(d.summary, HasSubstr("does not fit now"));
  // One GPU is enough: the need is answered first, the fault follows.
  const Diagnosis one = WithNeed(s, "40G");
  EXPECT_EQ(one.server, Verdict::kOk) << one.summary;
  EXPECT_THAT(one.summary, HasSubstr("; but "));
}

TEST_F(NeedAnswerTest, NvlinkWithAnUnknownTopologyCannotBeChecked) {
  Snapshot s = HealthyServer(4);
  s.topology.clear();
  const Diagnosis d = WithNeed(s, "2x40G+nvlink");
  EXPECT_EQ(d.server, Verdict::kUnknown) << d.summary;
  EXPECT_THAT(d.summary, HasSubstr("topology is unknown"));
}

TEST_F(NeedAnswerTest, NoMemoryKnownCannotBeChecked) {
  Snapshot s = HealthyServer(2);
  for (Gpu& g : s.gpus) g.memory = {};
  const Diagnosis d = WithNeed(s, "10G");
  EXPECT_EQ(d.server, Verdict::kUnknown) << d.summary;
}

}  // namespace
}  // namespace gw::diagnose
