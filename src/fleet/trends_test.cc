#include "fleet/trends.h"

#include <gtest/gtest.h>

#include <vector>

#include "core/units.h"
#include "fleet/history.h"
#include "fleet/history_store.h"

namespace gw::fleet {
namespace {

constexpr int64_t kHour0 = 1'800'000'000 / 3600 * 3600;  // The start of an hour.

// GPU 0 as the point shows it: utilisation and memory used of 80 GiB.
HistoryPoint At(int64_t t, int step, double util, double used_gib, double queued = kUnknown) {
  HistoryPoint p;
  p.time_s = t;
  p.step_s = step;
  GpuPoint g;
  g.index = 0;
  g.util_pct = util;
  g.mem_used_bytes = used_gib * kGiB;
  g.mem_total_bytes = 80 * kGiB;
  p.gpus.push_back(g);
  p.queued = queued;
  return p;
}

// `minutes` 1-min points from `from`, then 1-s points up to `to` (inclusive).
std::vector<HistoryPoint> Trail(int64_t from, int minutes, int64_t to, double util,
                                double used_gib) {
  std::vector<HistoryPoint> points;
  for (int m = 0; m < minutes; ++m) points.push_back(At(from + 60 * m, 60, util, used_gib));
  for (int64_t t = from + 60 * minutes; t <= to; ++t) points.push_back(At(t, 1, util, used_gib));
  return points;
}

TEST(Trends, HeldAndIdleSinceTheRunBeganAcrossTiers) {
  // Busy for 10 minutes, then held (20 GiB) at 0 % for 3 h, minute points
  // then the last hour's seconds.
  std::vector<HistoryPoint> points;
  for (int m = 0; m < 10; ++m) points.push_back(At(kHour0 + 60 * m, 60, 80, 20));
  const std::vector<HistoryPoint> idle = Trail(kHour0 + 600, 120, kHour0 + 600 + 3 * 3600, 0, 20);
  points.insert(points.end(), idle.begin(), idle.end());
  const diagnose::Trends t = TrendsOf(points, diagnose::DiagnoseOptions{});
  EXPECT_EQ(t.as_of_unix_s, kHour0 + 600 + 3 * 3600);
  EXPECT_EQ(t.covered_from_unix_s, kHour0);
  EXPECT_EQ(t.memory_total_bytes.at(0), 80 * kGiB);
  ASSERT_EQ(t.gpus.size(), 1u);
  ASSERT_TRUE(t.gpus[0].idle_held);
  EXPECT_EQ(t.gpus[0].idle_held->since_unix_s, kHour0 + 600);
  EXPECT_FALSE(t.gpus[0].idle_held->open_start);
  EXPECT_FALSE(t.gpus[0].memory_full);  // 20 of 80 GiB.
}

TEST(Trends, ARunThatReachesTheOldestPointOrAGapIsOpen) {
  std::vector<HistoryPoint> points = Trail(kHour0, 30, kHour0 + 1800 + 600, 0, 79);
  diagnose::Trends t = TrendsOf(points, diagnose::DiagnoseOptions{});
  ASSERT_EQ(t.gpus.size(), 1u);
  ASSERT_TRUE(t.gpus[0].memory_full);
  EXPECT_EQ(t.gpus[0].memory_full->since_unix_s, kHour0);
  EXPECT_TRUE(t.gpus[0].memory_full->open_start);
  ASSERT_TRUE(t.gpus[0].idle_held);  // 79 GiB held at 0 %.

  // The daemon was down for 20 minutes: the run starts after the gap, open.
  points = Trail(kHour0, 0, kHour0 + 600, 0, 79);
  const std::vector<HistoryPoint> after = Trail(kHour0 + 1800, 0, kHour0 + 2400, 0, 79);
  points.insert(points.end(), after.begin(), after.end());
  t = TrendsOf(points, diagnose::DiagnoseOptions{});
  ASSERT_EQ(t.gpus.size(), 1u);
  ASSERT_TRUE(t.gpus[0].memory_full);
  EXPECT_EQ(t.gpus[0].memory_full->since_unix_s, kHour0 + 1800);
  EXPECT_TRUE(t.gpus[0].memory_full->open_start);
  // A second missed here and there (a slow look) is no gap.
  points = Trail(kHour0, 0, kHour0 + 600, 0, 79);
  points.erase(points.begin() + 300);
  points.insert(points.begin(), At(kHour0 - 60, 60, 90, 10));
  t = TrendsOf(points, diagnose::DiagnoseOptions{});
  ASSERT_TRUE(t.gpus.at(0).memory_full);
  EXPECT_EQ(t.gpus[0].memory_full->since_unix_s, kHour0);
  EXPECT_FALSE(t.gpus[0].memory_full->open_start);
}

TEST(Trends, UnknownReadingsShortRunsAndFreeGpusAreNoTrend) {
  // Unknown utilisation breaks the run: idle is not assumed.
  std::vector<HistoryPoint> points = Trail(kHour0, 0, kHour0 + 600, 0, 30);
  for (int64_t i = 0; i < 590; ++i) points[i].gpus[0].util_pct = kUnknown;
  diagnose::Trends t = TrendsOf(points, diagnose::DiagnoseOptions{});
  EXPECT_TRUE(t.gpus.empty());  // 10 s of idle is not a trend.
  // A free GPU (1 GiB of 80 is under the free mark) at 0 % is not "held".
  t = TrendsOf(Trail(kHour0, 0, kHour0 + 600, 0, 1), diagnose::DiagnoseOptions{});
  EXPECT_TRUE(t.gpus.empty());
  // Working: neither.
  t = TrendsOf(Trail(kHour0, 0, kHour0 + 600, 60, 40), diagnose::DiagnoseOptions{});
  EXPECT_TRUE(t.gpus.empty());
  // Nothing at all.
  t = TrendsOf({}, diagnose::DiagnoseOptions{});
  EXPECT_EQ(t.as_of_unix_s, 0);
  EXPECT_FALSE(t.queue);
}

TEST(Trends, TheQueueOverTheLastHour) {
  std::vector<HistoryPoint> points;
  points.push_back(At(kHour0 - 7200, 60, 0, 1, 50));  // Older than the hour: not read.
  for (int64_t s = 0; s <= 3600 + 60; ++s) {
    const double waiting = s <= 60 ? 40 : s < 1800 ? 3 : s < 3000 ? 21 : 19;
    points.push_back(At(kHour0 + s, 1, 0, 1, waiting));
  }
  diagnose::Trends t = TrendsOf(points, diagnose::DiagnoseOptions{});
  ASSERT_TRUE(t.queue);
  EXPECT_EQ(t.queue->then_unix_s, kHour0 + 60);  // An hour before the newest point.
  EXPECT_EQ(t.queue->waiting_then, 40);
  EXPECT_EQ(t.queue->waiting_now, 19);
  EXPECT_EQ(t.queue->peak, 40);
  // Without a queue the points say nothing: no trend, not 0.
  for (HistoryPoint& p : points) p.queued = kUnknown;
  EXPECT_FALSE(TrendsOf(points, diagnose::DiagnoseOptions{}).queue);
}

TEST(Trends, JsonRoundTripAndMalformedInput) {
  diagnose::Trends t;
  t.as_of_unix_s = kHour0 + 100;
  t.covered_from_unix_s = kHour0 - 86400;
  t.gpus.push_back({3, diagnose::TrendRun{kHour0 - 3600, false}, std::nullopt});
  t.gpus.push_back({5, std::nullopt, diagnose::TrendRun{kHour0 - 86400, true}});
  t.queue = diagnose::QueueTrend{19, 3, kHour0 - 3500, 21};
  t.memory_total_bytes = {{3, 80 * kGiB}, {5, kUnknown}};
  const nlohmann::json j = TrendsToJson(t);
  EXPECT_TRUE(j["gpu_memory_total_bytes"][1]["bytes"].is_null());  // Unknown, not 0.
  EXPECT_EQ(j["gpus"][0]["idle_held"]["for_s"], 3700);
  EXPECT_TRUE(j["gpus"][0]["memory_full"].is_null());
  Result<diagnose::Trends> back = TrendsFromJson(j);
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(TrendsToJson(*back), j);

  nlohmann::json bad = j;
  bad["gpus"][1]["memory_full"]["open_start"] = "yes";
  Result<diagnose::Trends> r = TrendsFromJson(bad);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("memory_full.open_start"), std::string::npos);
  bad = j;
  bad["queue"]["peak"] = nullptr;
  r = TrendsFromJson(bad);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("peak"), std::string::npos);
  EXPECT_FALSE(TrendsFromJson(nlohmann::json::array()).ok());
}

TEST(HistoryTrail, MinutesBeforeTheSecondsWithoutOverlap) {
  MemoryHistoryStore store;
  History history(store);
  ASSERT_TRUE(history.Load(kHour0).ok());
  // Two hours and a half of points a second, so the first 1.5 h are minutes only.
  const int64_t end = kHour0 + 9000;
  for (int64_t t = kHour0; t <= end; ++t) ASSERT_TRUE(history.Add(At(t, 1, 0, 30)).ok());
  Result<std::vector<HistoryPoint>> trail = history.Trail(kHour0, end);
  ASSERT_TRUE(trail.ok());
  ASSERT_FALSE(trail->empty());
  EXPECT_EQ(trail->front().step_s, 60);
  EXPECT_EQ(trail->front().time_s, kHour0);
  EXPECT_EQ(trail->back().time_s, end);
  for (size_t i = 1; i < trail->size(); ++i) {
    const HistoryPoint& a = (*trail)[i - 1];
    const HistoryPoint& b = (*trail)[i];
    EXPECT_LE(a.time_s + a.step_s, b.time_s) << "overlap at " << i;
    EXPECT_LE(b.time_s - (a.time_s + a.step_s), 60) << "hole at " << i;
  }
  const diagnose::Trends t = TrendsOf(*trail, diagnose::DiagnoseOptions{});
  ASSERT_EQ(t.gpus.size(), 1u);
  ASSERT_TRUE(t.gpus[0].idle_held);
  EXPECT_EQ(t.gpus[0].idle_held->since_unix_s, kHour0);
  EXPECT_TRUE(t.gpus[0].idle_held->open_start);  // As far as the trail goes.
}

}  // namespace
}  // namespace gw::fleet
