#include "fleet/history.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "diagnose/test_util.h"
#include "fleet/history_store.h"

namespace gw::fleet {
namespace {

constexpr int64_t kT0 = 1'800'000'000 / 3600 * 3600;  // The start of an hour.

// A 1-s point: alice holds `gpus` GPUs (one of them idle when idle), 10 GiB each.
HistoryPoint Second(int64_t t, double util, int alice_gpus = 1, bool idle = false) {
  HistoryPoint p;
  p.time_s = t;
  p.step_s = 1;
  GpuPoint g;
  g.index = 0;
  g.util_pct = util;
  g.mem_used_bytes = 1e9;
  g.mem_total_bytes = 8e10;
  g.state = static_cast<int>(diagnose::GpuState::kInUse);
  p.gpus.push_back(g);
  if (alice_gpus > 0) {
    p.users.push_back({"alice", static_cast<double>(alice_gpus), idle ? 1.0 : 0.0,
                       alice_gpus * 10.0 * (1 << 30), idle ? 10.0 * (1 << 30) : 0.0});
  }
  p.queued = 2;
  p.running = 1;
  return p;
}

TEST(HistoryPoint, FromADiagnosedLook) {
  using namespace diagnose::fixtures;
  Snapshot s = HealthyServer(2);
  AddProcess(s, Proc{.pid = 10, .gpu = 1, .bytes = 4 * diagnose::kGiB, .user = "bob"});
  s.gpus[0].power_draw_w.reset();
  const diagnose::Diagnosis d = diagnose::Diagnose(std::span<const Snapshot>(&s, 1), {});
  QueueStats q;
  q.queued = 3;
  q.held = 1;
  q.running = 2;
  const HistoryPoint p = PointOf(s, d, q);
  EXPECT_EQ(p.time_s, s.time_unix_ms / 1000);
  ASSERT_EQ(p.gpus.size(), 2u);
  EXPECT_TRUE(std::isnan(p.gpus[0].power_w));  // Unknown stays unknown.
  EXPECT_EQ(p.gpus[1].mem_total_bytes, 80.0 * diagnose::kGiB);
  ASSERT_TRUE(p.gpus[1].state.has_value());
  ASSERT_EQ(p.users.size(), 1u);
  EXPECT_EQ(p.users[0].user, "bob");
  EXPECT_EQ(p.users[0].gpus, 1);
  EXPECT_EQ(p.users[0].vram_bytes, 4.0 * diagnose::kGiB);
  EXPECT_EQ(p.queued, 4);
  EXPECT_EQ(p.running, 2);
}

TEST(HistoryPoint, JsonRoundTrip) {
  HistoryPoint p = Second(kT0, 37.5, 2, true);
  p.gpus[0].power_w = kUnknown;
  Result<HistoryPoint> back = PointFromJson(PointToJson(p));
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(back->time_s, p.time_s);
  EXPECT_EQ(back->gpus[0].util_pct, 37.5);
  EXPECT_TRUE(std::isnan(back->gpus[0].power_w));
  EXPECT_EQ(back->gpus[0].state, p.gpus[0].state);
  EXPECT_EQ(back->users[0].idle_gpus, 1);
  EXPECT_FALSE(PointFromJson(nlohmann::json::parse(R"({"time_unix_s": 1})")).ok());
  EXPECT_FALSE(PointFromJson(nlohmann::json::parse(
                                 R"({"time_unix_s": 1, "step_s": 1, "gpus": [{"index": 0,
                                 "util_pct": "high"}]})"))
                   .ok());
}

TEST(History, DownsamplingKeepsSumsOverTime) {
  std::vector<HistoryPoint> secs;
  for (int i = 0; i < 30; ++i) secs.push_back(Second(kT0 + i, i < 15 ? 0 : 100, 2, i < 10));
  const HistoryPoint m = Downsample(secs, kT0, 60);
  EXPECT_EQ(m.step_s, 60);
  EXPECT_EQ(m.gpus[0].util_pct, 50);  // Mean of what was seen.
  // 30 s of 2 GPUs over a 60-s point: 1 GPU on average, the same 60 GPU-seconds.
  EXPECT_EQ(m.users[0].gpus, 1);
  EXPECT_DOUBLE_EQ(UsageOf({m}).at("alice").gpu_seconds, UsageOf(secs).at("alice").gpu_seconds);
  EXPECT_DOUBLE_EQ(UsageOf({m}).at("alice").idle_gpu_seconds, 10);
}

TEST(History, TiersAndPruning) {
  MemoryHistoryStore store;
  History h(store);
  ASSERT_TRUE(h.Load(kT0).ok());
  // Two hours and a minute, a point a second; alice holds 1 GPU throughout.
  const int64_t end = kT0 + 2 * 3600 + 60;
  for (int64_t t = kT0; t <= end; ++t) ASSERT_TRUE(h.Add(Second(t, 10)).ok());
  Result<std::vector<HistoryPoint>> secs = store.Read(0, 0, INT64_MAX);
  ASSERT_TRUE(secs.ok());
  EXPECT_LE(secs->size(), 3661u);  // An hour (and the minute being pruned).
  EXPECT_GE(secs->front().time_s, end - 3600 - 60);
  EXPECT_EQ(h.recent().size(), 3601u);
  Result<std::vector<HistoryPoint>> minutes = store.Read(1, 0, INT64_MAX);
  ASSERT_TRUE(minutes.ok());
  EXPECT_EQ(minutes->size(), 121u);  // Every closed minute.
  Result<std::vector<HistoryPoint>> hours = store.Read(2, 0, INT64_MAX);
  ASSERT_TRUE(hours.ok());
  ASSERT_EQ(hours->size(), 2u);
  EXPECT_EQ(hours->front().time_s, kT0);
  EXPECT_DOUBLE_EQ(hours->front().users[0].gpus, 1);
  EXPECT_DOUBLE_EQ(UsageOf(*hours).at("alice").gpu_seconds, 2 * 3600);

  // Each range from the finest tier that reaches back to it.
  Result<std::vector<HistoryPoint>> last10 = h.Since(end - 10, end);
  ASSERT_TRUE(last10.ok());
  EXPECT_EQ(last10->size(), 11u);
  EXPECT_EQ(last10->front().step_s, 1);
  Result<std::vector<HistoryPoint>> last2h = h.Since(end - 7200, end);
  ASSERT_TRUE(last2h.ok());
  EXPECT_EQ(last2h->front().step_s, 60);
  Result<std::vector<HistoryPoint>> last30d = h.Since(end - 30 * 86400, end);
  ASSERT_TRUE(last30d.ok());
  EXPECT_EQ(last30d->front().step_s, 3600);
  EXPECT_NEAR(UsageOf(*last30d).at("alice").gpu_seconds, 2 * 3600 + 60, 61);
}

TEST(History, ARestartClosesWhatTheLastRunLeftOpen) {
  MemoryHistoryStore store;
  {
    History h(store);
    ASSERT_TRUE(h.Load(kT0).ok());
    for (int64_t t = kT0 + 3000; t < kT0 + 3630; ++t) ASSERT_TRUE(h.Add(Second(t, 10)).ok());
  }  // Stopped in the middle of the first minute of the next hour.
  History h(store);
  const int64_t now = kT0 + 3 * 3600;
  ASSERT_TRUE(h.Load(now).ok());
  Result<std::vector<HistoryPoint>> minutes = store.Read(1, kT0 + 3600, kT0 + 3601);
  ASSERT_TRUE(minutes.ok());
  ASSERT_EQ(minutes->size(), 1u);  // The minute it stopped in.
  EXPECT_DOUBLE_EQ(minutes->front().users[0].gpus, 30.0 / 60);
  Result<std::vector<HistoryPoint>> hours = store.Read(2, 0, INT64_MAX);
  ASSERT_TRUE(hours.ok());
  ASSERT_EQ(hours->size(), 2u);  // Its first hour closed at the rollover, the second now.
  EXPECT_DOUBLE_EQ(UsageOf(*hours).at("alice").gpu_seconds, 630);
}

TEST(SqliteHistoryStore, RoundTripPruneAndForeignFiles) {
  const std::string dir = ::testing::TempDir() + "/gw-history-" + std::to_string(getpid());
  std::filesystem::create_directories(dir);
  const std::string path = dir + "/history.db";
  {
    auto store = SqliteHistoryStore::Open(path);
    ASSERT_TRUE(store.ok()) << store.error().message;
    for (int64_t t = kT0; t < kT0 + 10; ++t) ASSERT_TRUE((*store)->Append(0, Second(t, 5)).ok());
    ASSERT_TRUE((*store)->Append(1, Downsample(std::vector<HistoryPoint>{Second(kT0, 5)}, kT0, 60)).ok());
    ASSERT_TRUE((*store)->Prune(0, kT0 + 5).ok());
  }
  EXPECT_EQ(std::filesystem::status(path).permissions() & std::filesystem::perms::all,
            std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
  auto store = SqliteHistoryStore::Open(path);
  ASSERT_TRUE(store.ok());
  Result<std::vector<HistoryPoint>> secs = (*store)->Read(0, 0, INT64_MAX);
  ASSERT_TRUE(secs.ok());
  ASSERT_EQ(secs->size(), 5u);
  EXPECT_EQ(secs->front().time_s, kT0 + 5);
  EXPECT_EQ(secs->front().users[0].user, "alice");
  Result<std::vector<HistoryPoint>> mins = (*store)->Read(1, 0, INT64_MAX);
  ASSERT_TRUE(mins.ok());
  EXPECT_EQ(mins->size(), 1u);

  // The queue's database is not a history file.
  const std::string other = dir + "/other.db";
  {
    std::ofstream(other) << "";
    auto s = SqliteHistoryStore::Open(other);
    ASSERT_TRUE(s.ok());
  }
  const std::string text = dir + "/notes.txt";
  std::ofstream(text) << "not a database at all, just some text that is long enough\n";
  auto bad = SqliteHistoryStore::Open(text);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find(text), std::string::npos) << bad.error().message;
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace gw::fleet
