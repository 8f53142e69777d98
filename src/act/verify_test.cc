#include "act/verify.h"
#include "core/units.h"

#include <gtest/gtest.h>

namespace gw::act {
namespace {
Gpu MakeGpu(unsigned index, uint64_t used, std::vector<std::pair<pid_t, uint64_t>> procs) {
  Gpu g;
  g.index = index;
  g.memory.total_bytes = 80 * kGiB;
  g.memory.used_bytes = used;
  for (auto [pid, bytes] : procs) {
    GpuProcess p;
    p.pid = pid;
    p.used_memory_bytes = bytes;
    g.processes.push_back(p);
  }
  return g;
}

TargetResult Ended(pid_t pid, Outcome outcome = Outcome::kExited) {
  TargetResult r;
  r.item.pid = pid;
  r.outcome = outcome;
  return r;
}

TEST(Verify, FreedMemoryIsReportedPerGpu) {
  Snapshot before, after;
  before.gpus = {MakeGpu(0, 30 * kGiB, {{10, 20 * kGiB}, {11, 10 * kGiB}}),
                 MakeGpu(1, 5 * kGiB, {{12, 5 * kGiB}})};
  after.gpus = {MakeGpu(0, 10 * kGiB, {{11, 10 * kGiB}}), MakeGpu(1, 5 * kGiB, {{12, 5 * kGiB}})};
  std::vector<TargetResult> results = {Ended(10)};
  ReleaseReport r = CompareRelease(before, after, results);
  ASSERT_EQ(r.gpus.size(), 1u);  // GPU 1 was not touched.
  EXPECT_EQ(r.gpus[0].index, 0u);
  EXPECT_EQ(r.gpus[0].expected_bytes, 20 * kGiB);
  EXPECT_EQ(r.gpus[0].freed_bytes, 20 * kGiB);
  EXPECT_EQ(r.gpus[0].still_held_bytes, 0u);
  EXPECT_TRUE(r.gpus[0].released);
  EXPECT_TRUE(r.all_released());
}

TEST(Verify, MemoryKeptByTheDriverIsStillHeld) {
  Snapshot before, after;
  before.gpus = {MakeGpu(0, 20 * kGiB, {{10, 20 * kGiB}})};
  after.gpus = {MakeGpu(0, 20 * kGiB, {})};  // Process gone, memory not.
  std::vector<TargetResult> results = {Ended(10, Outcome::kKilled)};
  ReleaseReport r = CompareRelease(before, after, results);
  ASSERT_EQ(r.gpus.size(), 1u);
  EXPECT_EQ(r.gpus[0].freed_bytes, 0u);
  EXPECT_EQ(r.gpus[0].still_held_bytes, 20 * kGiB);
  EXPECT_FALSE(r.gpus[0].released);
  EXPECT_FALSE(r.all_released());
}

TEST(Verify, StillListedByTheDriverIsStillHeld) {
  Snapshot before, after;
  before.gpus = {MakeGpu(0, 20 * kGiB, {{10, 20 * kGiB}})};
  after.gpus = {MakeGpu(0, 20 * kGiB, {{10, 20 * kGiB}})};
  std::vector<TargetResult> results = {Ended(10)};
  ReleaseReport r = CompareRelease(before, after, results);
  EXPECT_EQ(r.gpus[0].still_listed, (std::vector<pid_t>{10}));
  EXPECT_EQ(r.gpus[0].still_held_bytes, 20 * kGiB);
  EXPECT_FALSE(r.gpus[0].released);
}

TEST(Verify, OthersAllocatingMeanwhileIsNotALeak) {
  Snapshot before, after;
  before.gpus = {MakeGpu(0, 30 * kGiB, {{10, 20 * kGiB}, {11, 10 * kGiB}})};
  // 10 ended and freed 20 GiB; 11 grew by 15 GiB and newcomer 13 took 4 GiB.
  after.gpus = {MakeGpu(0, 29 * kGiB, {{11, 25 * kGiB}, {13, 4 * kGiB}})};
  std::vector<TargetResult> results = {Ended(10)};
  ReleaseReport r = CompareRelease(before, after, results);
  EXPECT_EQ(r.gpus[0].freed_bytes, 1 * kGiB);  // Net, as NVML shows it.
  EXPECT_EQ(r.gpus[0].still_held_bytes, 0u);
  EXPECT_TRUE(r.gpus[0].released);
}

TEST(Verify, SmallRemaindersAreSlack) {
  Snapshot before, after;
  before.gpus = {MakeGpu(0, 20 * kGiB, {{10, 20 * kGiB}})};
  after.gpus = {MakeGpu(0, 300 * kMiB, {})};  // Under 2 % of 20 GiB (410 MiB).
  std::vector<TargetResult> results = {Ended(10)};
  EXPECT_TRUE(CompareRelease(before, after, results).gpus[0].released);
}

TEST(Verify, TargetsThatDidNotEndAreNotExpectedToFree) {
  Snapshot before, after;
  before.gpus = {MakeGpu(0, 20 * kGiB, {{10, 20 * kGiB}})};
  after.gpus = before.gpus;
  std::vector<TargetResult> results = {Ended(10, Outcome::kSurvived)};
  EXPECT_TRUE(CompareRelease(before, after, results).gpus.empty());
}

TEST(Verify, AZombiesMemoryIsExpectedBackWithItsParent) {
  Snapshot before, after;
  before.gpus = {MakeGpu(0, 20 * kGiB, {{11, 20 * kGiB}})};  // 11 is the zombie.
  after.gpus = {MakeGpu(0, 20 * kGiB, {{11, 20 * kGiB}})};
  TargetResult parent = Ended(10);
  parent.item.role = Role::kZombieParent;
  parent.item.because_of = 11;
  std::vector<TargetResult> results = {parent};
  ReleaseReport r = CompareRelease(before, after, results);
  ASSERT_EQ(r.gpus.size(), 1u);
  EXPECT_EQ(r.gpus[0].expected_bytes, 20 * kGiB);
  EXPECT_EQ(r.gpus[0].still_listed, (std::vector<pid_t>{11}));
  EXPECT_FALSE(r.gpus[0].released);
}

TEST(Verify, UnknownUsageIsNotZero) {
  Snapshot before, after;
  before.gpus = {MakeGpu(0, 20 * kGiB, {{10, 20 * kGiB}})};
  after.gpus = {MakeGpu(0, 0, {})};
  after.gpus[0].memory.used_bytes.reset();
  std::vector<TargetResult> results = {Ended(10)};
  ReleaseReport r = CompareRelease(before, after, results);
  EXPECT_FALSE(r.gpus[0].freed_bytes);
  EXPECT_FALSE(r.gpus[0].used_after_bytes);
  EXPECT_TRUE(r.gpus[0].released);  // Nothing says otherwise.
}

}  // namespace
}  // namespace gw::act
