#include "capacity/capacity.h"

#include <gtest/gtest.h>

#include "capacity/capacity_sources.h"

namespace gw::capacity {
namespace {

constexpr int64_t kH = 3600;

const Recommendation* Find(const CapacityReport& r, const std::string& code) {
  for (const Recommendation& rec : r.recommendations) {
    if (rec.code == code) return &rec;
  }
  return nullptr;
}

// One hourly point of a 4-GPU server: `users` (name, GPUs, idle GPUs), and
// GPUs 0..bound-1 with memory 95 % full at 30 % busy (memory-bound), the
// others 10 % full at 0 %.
fleet::HistoryPoint Hour(int64_t hour, std::vector<fleet::UserPoint> users, int bound = 0) {
  fleet::HistoryPoint p;
  p.time_s = hour * kH;
  p.step_s = 3600;
  for (unsigned i = 0; i < 4; ++i) {
    fleet::GpuPoint g;
    g.index = i;
    g.mem_total_bytes = 100;
    g.mem_used_bytes = static_cast<int>(i) < bound ? 95 : 10;
    g.util_pct = static_cast<int>(i) < bound ? 30 : 0;
    p.gpus.push_back(g);
  }
  p.users = std::move(users);
  return p;
}

JobRecord Job(const std::string& id, int64_t eligible, std::optional<int64_t> start, double gpus,
              std::optional<double> peak = std::nullopt) {
  JobRecord j;
  j.id = id;
  j.user = "u";
  j.eligible_s = eligible;
  j.start_s = start;
  if (start) j.end_s = *start + 60;
  j.gpus = gpus;
  j.peak_vram_fraction = peak;
  return j;
}

// A day of a 4-GPU server, by hand:
//   00-08: alice holds 1 GPU, idle                    -> held 1
//   08-18: alice 1 (idle) + bob 3 (busy)              -> held 4, saturated 10 h
//   18-24: bob 2, on memory-bound GPUs                -> held 2, memory-bound 2
// Capacity 96 GPU-h; held 8 + 40 + 12 = 60; unheld 36; idle-held 8 + 10 = 18
// (alice); memory-bound 6 x 2 = 12.
// Waits (eligible -> start): j1 09:00 -> 11:00 (7200 s, 2 GPUs),
// j2 10:00 -> 10:10 (600 s), j3 12:00 -> 12:01 (60 s), j4 20:00 -> 20:00:30
// (30 s); j5 waits from 23:00 to the end (3600 s); j6 asked for a window;
// j7 gave up (05:00 - 06:00, never started).
//   sorted 30, 60, 600, 7200: p50 (rank 2) 60, p90 (rank 4) 7200, mean 1972.5.
// Saturated with a job waiting: 09-11 (j1) and 12:00-12:01 (j3): 7260 s;
// GPUs waited for then: 2 x 7200 + 1 x 600 + 1 x 60 = 15060 GPU-s, a mean of
// 15060 / 7260 = 2.07 -> add 3 GPUs.
// Hours 08-17 held 100 % (peak); 00-07 at 25 %, 18-23 at 50 % (off-peak):
// the off-peak run goes 18:00-08:00 (14 h, (6 x 0.5 + 8 x 0.25) / 14 = 0.357).
CapacityInput ADay() {
  std::vector<fleet::HistoryPoint> points;
  for (int h = 0; h < 24; ++h) {
    if (h < 8) {
      points.push_back(Hour(h, {{"alice", 1, 1, 0, 0}}));
    } else if (h < 18) {
      points.push_back(Hour(h, {{"alice", 1, 1, 0, 0}, {"bob", 3, 0, 0, 0}}));
    } else {
      points.push_back(Hour(h, {{"bob", 2, 0, 0, 0}}, /*bound=*/2));
    }
  }
  std::vector<JobRecord> jobs = {
      Job("j1", 9 * kH, 11 * kH, 2, 0.9), Job("j2", 10 * kH, 10 * kH + 600, 1, 0.2),
      Job("j3", 12 * kH, 12 * kH + 60, 1, 0.3), Job("j4", 20 * kH, 20 * kH + 30, 1, 0.4),
      Job("j5", 23 * kH, std::nullopt, 1)};
  JobRecord windowed = Job("j6", 1 * kH, 3 * kH, 1);
  windowed.chose_to_wait = true;
  jobs.push_back(windowed);
  JobRecord gave_up = Job("j7", 5 * kH, std::nullopt, 1);
  gave_up.end_s = 6 * kH;
  jobs.push_back(gave_up);
  return InputFromHistory(points, jobs, 0, 24 * kH, 0);
}

TEST(CapacityTest, ADayOfHistoryGivesTheFiguresComputedByHand) {
  const CapacityReport r = AnalyzeCapacity(ADay());
  EXPECT_EQ(r.source, "history");
  EXPECT_DOUBLE_EQ(r.observed_hours, 24);
  EXPECT_DOUBLE_EQ(r.capacity_gpus, 4);
  EXPECT_DOUBLE_EQ(r.capacity_gpu_hours, 96);
  EXPECT_DOUBLE_EQ(r.held_gpu_hours, 60);
  EXPECT_DOUBLE_EQ(r.unheld_gpu_hours, 36);
  ASSERT_TRUE(r.idle_held_gpu_hours);
  EXPECT_DOUBLE_EQ(*r.idle_held_gpu_hours, 18);
  ASSERT_TRUE(r.memory_bound_gpu_hours);
  EXPECT_DOUBLE_EQ(*r.memory_bound_gpu_hours, 12);
  EXPECT_DOUBLE_EQ(r.saturated_hours, 10);
  EXPECT_DOUBLE_EQ(r.saturated_waiting_hours, 7260.0 / 3600);

  EXPECT_EQ(r.waits->started, 4u);
  EXPECT_EQ(r.waits->p50_s, 60);
  EXPECT_EQ(r.waits->p90_s, 7200);
  EXPECT_EQ(r.waits->p99_s, 7200);
  EXPECT_EQ(r.waits->max_s, 7200);
  EXPECT_EQ(r.waits->mean_s, 1972.5);
  EXPECT_EQ(r.waits->still_waiting, 1u);
  EXPECT_EQ(r.waits->longest_waiting_s, 3600);
  EXPECT_EQ(r.waits->chose_to_wait, 1u);
  EXPECT_EQ(r.waits->gave_up, 1u);

  EXPECT_EQ(r.peak_hours, (std::vector<int>{8, 9, 10, 11, 12, 13, 14, 15, 16, 17}));
  ASSERT_TRUE(r.off_peak);
  EXPECT_EQ(FormatHourWindow(*r.off_peak), "18:00-08:00");
  EXPECT_DOUBLE_EQ(*r.hours[3].held_fraction, 0.25);
  EXPECT_DOUBLE_EQ(*r.hours[20].held_fraction, 0.5);
  EXPECT_DOUBLE_EQ(r.hours[9].mean_waiting_jobs, 1);
  EXPECT_DOUBLE_EQ(r.hours[10].mean_waiting_jobs, (3600.0 + 600) / 3600);
  EXPECT_DOUBLE_EQ(r.hours[12].saturated_s, 3600);

  ASSERT_EQ(r.idle_holders.size(), 1u);
  EXPECT_EQ(r.idle_holders[0].user, "alice");
  EXPECT_DOUBLE_EQ(r.idle_holders[0].idle_gpu_hours, 18);
  EXPECT_DOUBLE_EQ(r.idle_holders[0].gpu_hours, 18);
  EXPECT_FALSE(r.power.applies);  // One server: no Slurm power saving.

  const Recommendation* add = Find(r, "add_gpus");
  ASSERT_NE(add, nullptr);
  EXPECT_EQ(add->figures.at("gpus"), 3);
  EXPECT_DOUBLE_EQ(add->figures.at("mean_waiting_gpus"), 15060.0 / 7260);
  EXPECT_DOUBLE_EQ(add->figures.at("saturated_waiting_share"), 7260.0 / 3600 / 24);
  EXPECT_EQ(add->figures.at("p90_wait_s"), 7200);
  const Recommendation* reclaim = Find(r, "reclaim_idle");
  ASSERT_NE(reclaim, nullptr);
  EXPECT_DOUBLE_EQ(reclaim->figures.at("idle_share"), 18.0 / 60);
  EXPECT_EQ(reclaim->details.at("users"), "alice");
  const Recommendation* off = Find(r, "off_peak");
  ASSERT_NE(off, nullptr);
  EXPECT_EQ(off->details.at("window"), "18:00-08:00");
  EXPECT_DOUBLE_EQ(off->figures.at("off_peak_held_share"), 5.0 / 14);
  EXPECT_DOUBLE_EQ(off->figures.at("peak_held_share"), 1);
  EXPECT_NE(off->text.find("gpuwarden run --window 18:00-08:00"), std::string::npos) << off->text;
  const Recommendation* small = Find(r, "share_small_jobs");
  ASSERT_NE(small, nullptr);
  EXPECT_EQ(small->figures.at("small_jobs"), 3);
  EXPECT_EQ(small->figures.at("jobs_with_known_peak"), 4);
  const Recommendation* quantize = Find(r, "quantize_inference");
  ASSERT_NE(quantize, nullptr);
  EXPECT_DOUBLE_EQ(quantize->figures.at("memory_bound_share"), 12.0 / 60);
}

TEST(CapacityTest, AQuietDayRecommendsNothing) {
  std::vector<fleet::HistoryPoint> points;
  for (int h = 0; h < 24; ++h) points.push_back(Hour(h, {{"bob", 1, 0, 0, 0}}));
  const CapacityReport r =
      AnalyzeCapacity(InputFromHistory(points, {Job("j1", 0, 10, 1)}, 0, 24 * kH, 0));
  EXPECT_DOUBLE_EQ(r.held_gpu_hours, 24);
  EXPECT_DOUBLE_EQ(r.saturated_hours, 0);
  EXPECT_TRUE(r.peak_hours.empty());
  EXPECT_FALSE(r.off_peak) << "every hour is off-peak: no window to move work into";
  EXPECT_TRUE(r.recommendations.empty());
  EXPECT_EQ(r.waits->p50_s, 10);
}

TEST(CapacityTest, HoursOfDayAreLocalAndGapsAreNotCountedAsIdle) {
  // One GPU held 14:00-15:00 UTC only, the server at UTC+2; the history has
  // a gap 03:00-05:00 (the daemon was down).
  std::vector<fleet::HistoryPoint> points;
  for (int h = 0; h < 24; ++h) {
    if (h == 3 || h == 4) continue;
    points.push_back(Hour(h, h == 14 ? std::vector<fleet::UserPoint>{{"a", 4, 0, 0, 0}}
                                     : std::vector<fleet::UserPoint>{}));
  }
  const CapacityReport r =
      AnalyzeCapacity(InputFromHistory(points, {}, 0, 24 * kH, /*utc_offset_s=*/2 * kH));
  EXPECT_DOUBLE_EQ(r.observed_hours, 22);
  EXPECT_EQ(r.peak_hours, std::vector<int>{16});
  EXPECT_EQ(r.hours[5].observed_s, 0) << "03:00 UTC is 05:00 local: no data";
  EXPECT_FALSE(r.hours[5].held_fraction);
  EXPECT_DOUBLE_EQ(r.saturated_hours, 1);
  EXPECT_DOUBLE_EQ(r.capacity_gpu_hours, 88);
}

TEST(CapacityTest, NearestRankPercentiles) {
  EXPECT_FALSE(NearestRankPercentile({}, 50));
  EXPECT_EQ(NearestRankPercentile({5}, 99), 5);
  EXPECT_EQ(NearestRankPercentile({4, 1, 3, 2}, 50), 2);
  EXPECT_EQ(NearestRankPercentile({4, 1, 3, 2}, 75), 3);
  EXPECT_EQ(NearestRankPercentile({4, 1, 3, 2}, 76), 4);
  std::vector<double> hundred;
  for (int i = 1; i <= 100; ++i) hundred.push_back(i);
  EXPECT_EQ(NearestRankPercentile(hundred, 90), 90);
  EXPECT_EQ(NearestRankPercentile(hundred, 99), 99);
}

// gpuwardend answers with its newest point taken at the reply's to_unix_s:
// that point still counts its whole second, as usage counts it, so the
// GPU-hours held are the users' GPU-hours.
TEST(CapacityTest, EveryPointOfTheHistoryCountsItsWholeStepAsUsageDoes) {
  std::vector<fleet::HistoryPoint> points;
  for (int64_t t = 100; t <= 120; ++t) {
    fleet::HistoryPoint p;
    p.time_s = t;
    p.step_s = 1;
    p.gpus.resize(4);
    p.users = {{"ann", 3, 1, 0, 0}};
    points.push_back(p);
  }
  const CapacityInput in = InputFromHistory(points, {}, 100, 120, 0);
  EXPECT_EQ(in.to_s, 121);
  const CapacityReport r = AnalyzeCapacity(in);
  // fleet::UsageOf's sum: GPUs held x step, every point.
  double usage_gpu_s = 0;
  for (const fleet::HistoryPoint& p : points) usage_gpu_s += p.users[0].gpus * p.step_s;
  EXPECT_DOUBLE_EQ(usage_gpu_s, 21 * 3);
  EXPECT_DOUBLE_EQ(r.held_gpu_hours * 3600, usage_gpu_s);
  EXPECT_DOUBLE_EQ(*r.idle_held_gpu_hours * 3600, 21.0);
}

}  // namespace
}  // namespace gw::capacity
