// ObserveLook and HolderIdleTime: idle time measured look by look.
#include "diagnose/idle_time.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "diagnose/rules.h"
#include "diagnose/test_util.h"

namespace gw::diagnose {
namespace {

using ::testing::HasSubstr;
using namespace fixtures;  // NOLINT

// GPU 0 holds PID 500 (20 GiB) at `sm` % of its own, the GPU at `util` %.
Snapshot Look(int64_t t_ms, Opt<unsigned> sm, Opt<unsigned> util) {
  Snapshot s = HealthyServer(1);
  s.time_unix_ms = t_ms;
  AddProcess(s, {.pid = 500, .gpu = 0, .bytes = 20 * kGiB, .sm = sm});
  s.processes[500].start_ticks = 4242;
  Gpu& g = *GpuAt(s, 0);
  g.utilization_gpu_pct = util;
  return s;
}

const HolderActivity& Only(const ActivityLog& log) { return log.holders.begin()->second; }

TEST(ObserveLookTest, WorkThenIdleStartsTheRunAtTheFirstIdleLook) {
  ActivityLog log;
  const DiagnoseOptions o;
  ObserveLook(log, Look(1'000, 60, 70), o);
  ObserveLook(log, Look(2'000, 0, 0), o);
  ObserveLook(log, Look(3'000, 0, 0), o);
  const HolderActivity& a = Only(log);
  EXPECT_EQ(a.first_seen_ms, 1'000);
  EXPECT_EQ(a.last_seen_ms, 3'000);
  EXPECT_EQ(*a.last_work_ms, 1'000);
  EXPECT_EQ(*a.idle_since_ms, 2'000);
  EXPECT_TRUE(a.idle_per_process);
  EXPECT_EQ(*a.start_ticks, 4242u);
}

TEST(ObserveLookTest, CannotTellAndGapsBreakTheRun) {
  const DiagnoseOptions o;
  ActivityLog log;
  ObserveLook(log, Look(1'000, 0, 0), o);
  ObserveLook(log, Look(2'000, std::nullopt, std::nullopt), o);  // Nothing read.
  EXPECT_FALSE(Only(log).idle_since_ms.has_value());
  EXPECT_FALSE(Only(log).last_work_ms.has_value());  // Not work either.
  ObserveLook(log, Look(3'000, 0, 0), o);
  EXPECT_EQ(*Only(log).idle_since_ms, 3'000);
  ObserveLook(log, Look(3'000 + kIdleMaxGapMs + 1, 0, 0), o);  // Unseen in between.
  EXPECT_EQ(*Only(log).idle_since_ms, 3'000 + kIdleMaxGapMs + 1);
}

TEST(ObserveLookTest, TheGpusUtilisationStandsInForAMissingProcessFigure) {
  const DiagnoseOptions o;
  ActivityLog log;
  ObserveLook(log, Look(1'000, std::nullopt, 3), o);  // At rest (<= 5 %).
  EXPECT_EQ(*Only(log).idle_since_ms, 1'000);
  EXPECT_FALSE(Only(log).idle_per_process);
  ObserveLook(log, Look(2'000, std::nullopt, 40), o);
  EXPECT_EQ(*Only(log).last_work_ms, 2'000);
  // Every process at 0 % on a busy GPU: the samples missed the work.
  ObserveLook(log, Look(3'000, 0, 90), o);
  EXPECT_EQ(*Only(log).last_work_ms, 3'000);
  EXPECT_FALSE(Only(log).idle_since_ms.has_value());
}

TEST(ObserveLookTest, APidOfAnotherProcessStartsAfreshAndGoneHoldersAreForgotten) {
  const DiagnoseOptions o;
  ActivityLog log;
  ObserveLook(log, Look(1'000, 0, 0), o);
  Snapshot reused = Look(2'000, 0, 0);
  reused.processes[500].start_ticks = 9999;
  ObserveLook(log, reused, o);
  EXPECT_EQ(Only(log).first_seen_ms, 2'000);
  Snapshot gone = Look(3'000, 0, 0);
  GpuAt(gone, 0)->processes.clear();
  ObserveLook(log, gone, o);
  EXPECT_TRUE(log.holders.empty());
  // A GPU whose list was not read keeps what was known.
  ObserveLook(log, Look(4'000, 0, 0), o);
  Snapshot unread = Look(5'000, 0, 0);
  GpuAt(unread, 0)->processes_known = false;
  ObserveLook(log, unread, o);
  EXPECT_EQ(Only(log).last_seen_ms, 4'000);
  // Older looks are ignored.
  ObserveLook(log, Look(500, 90, 90), o);
  EXPECT_FALSE(Only(log).last_work_ms.has_value());
}

TEST(HolderIdleTimeTest, TheWindowAloneSaysAtLeastItsLength) {
  const DiagnoseOptions o;
  ActivityLog window;
  for (int64_t t = 0; t <= 3'000; t += 500) ObserveLook(window, Look(100'000 + t, 0, 0), o);
  const Opt<IdleTime> idle = HolderIdleTime(window, nullptr, 0, 500, 4242, 3600.0);
  ASSERT_TRUE(idle.has_value());
  EXPECT_TRUE(idle->idle_now);
  EXPECT_DOUBLE_EQ(idle->idle_s, 3.0);
  EXPECT_TRUE(idle->at_least);
  EXPECT_EQ(idle->source, IdleSource::kWindow);
  EXPECT_EQ(IdleTimeText(*idle), "idle for at least 3s (this look's samples)");
  EXPECT_FALSE(HolderIdleTime(window, nullptr, 0, 501, std::nullopt, std::nullopt).has_value());
}

TEST(HolderIdleTimeTest, WorkInTheWindowEndsIt) {
  const DiagnoseOptions o;
  ActivityLog window;
  ObserveLook(window, Look(1'000, 0, 0), o);
  ObserveLook(window, Look(2'000, 30, 30), o);
  const Opt<IdleTime> idle = HolderIdleTime(window, nullptr, 0, 500, 4242, 3600.0);
  EXPECT_FALSE(idle->idle_now);
  EXPECT_EQ(idle->idle_s, 0);
  EXPECT_THAT(IdleTimeText(*idle), HasSubstr("did GPU work 0s ago"));
}

}  // namespace
}  // namespace gw::diagnose
