#include "fleet/history.h"

#include <gtest/gtest.h>
#include <sqlite3.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "core/text.h"
#include "core/units.h"
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
  AddProcess(s, Proc{.pid = 10, .gpu = 1, .bytes = 4 * kGiB, .user = "bob"});
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
  EXPECT_EQ(p.gpus[1].mem_total_bytes, 80.0 * kGiB);
  ASSERT_TRUE(p.gpus[1].state.has_value());
  ASSERT_EQ(p.users.size(), 1u);
  EXPECT_EQ(p.users[0].user, "bob");
  EXPECT_EQ(p.users[0].gpus, 1);
  EXPECT_EQ(p.users[0].vram_bytes, 4.0 * kGiB);
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
  Result<std::vector<HistoryPoint>> hour = h.Since(end - 3600, end);
  ASSERT_TRUE(hour.ok());
  EXPECT_EQ(hour->size(), 3601u);
  EXPECT_EQ(hour->front().time_s, end - 3600);
  EXPECT_EQ(hour->back().time_s, end);
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

// Every field, unknowns and an unset state included, bit for bit.
void ExpectSamePoint(const HistoryPoint& a, const HistoryPoint& b) {
  EXPECT_EQ(a.time_s, b.time_s);
  EXPECT_EQ(a.step_s, b.step_s);
  auto same = [](double x, double y) { return (std::isnan(x) && std::isnan(y)) || x == y; };
  EXPECT_TRUE(same(a.queued, b.queued));
  EXPECT_TRUE(same(a.running, b.running));
  ASSERT_EQ(a.gpus.size(), b.gpus.size());
  for (size_t i = 0; i < a.gpus.size(); ++i) {
    EXPECT_EQ(a.gpus[i].index, b.gpus[i].index);
    EXPECT_TRUE(same(a.gpus[i].util_pct, b.gpus[i].util_pct));
    EXPECT_TRUE(same(a.gpus[i].mem_used_bytes, b.gpus[i].mem_used_bytes));
    EXPECT_TRUE(same(a.gpus[i].mem_total_bytes, b.gpus[i].mem_total_bytes));
    EXPECT_TRUE(same(a.gpus[i].power_w, b.gpus[i].power_w));
    EXPECT_TRUE(same(a.gpus[i].temp_c, b.gpus[i].temp_c));
    EXPECT_EQ(a.gpus[i].state, b.gpus[i].state);
  }
  ASSERT_EQ(a.users.size(), b.users.size());
  for (size_t i = 0; i < a.users.size(); ++i) {
    EXPECT_EQ(a.users[i].user, b.users[i].user);
    EXPECT_EQ(a.users[i].gpus, b.users[i].gpus);
    EXPECT_EQ(a.users[i].idle_gpus, b.users[i].idle_gpus);
    EXPECT_EQ(a.users[i].vram_bytes, b.users[i].vram_bytes);
    EXPECT_EQ(a.users[i].idle_vram_bytes, b.users[i].idle_vram_bytes);
  }
}

// A point with what is awkward to write: unknowns, an unset state, a mean
// that is no short decimal, names that JSON must escape.
HistoryPoint Awkward() {
  HistoryPoint p = Second(kT0 + 7, 37.5, 2, true);
  p.step_s = 60;
  p.gpus[0].power_w = kUnknown;
  p.gpus[0].temp_c = 1.0 / 3;
  p.gpus[0].mem_used_bytes = 85521661952.0;
  GpuPoint g;
  g.index = 7;
  g.util_pct = 1e-7;
  g.mem_total_bytes = 1e300;
  p.gpus.push_back(g);  // Unknowns and no state.
  p.users.push_back({"b\"o\\b\n\x01", 0.25, 0, 3.0e9 / 7, 0});
  p.users.push_back({"zo\xc3\xab", 1, 1, 2e9, 2e9});
  p.queued = kUnknown;
  return p;
}

TEST(HistoryPoint, BinaryRoundTripBitForBit) {
  const HistoryPoint p = Awkward();
  std::string bytes;
  AppendPointBinary(bytes, p);
  EXPECT_LT(bytes.size(), PointToJson(p).dump().size() / 2);
  Result<HistoryPoint> back = PointFromBinary(bytes);
  ASSERT_TRUE(back.ok()) << back.error().message;
  ExpectSamePoint(*back, p);

  // Damaged records are refused, never read past their end.
  for (size_t n = 0; n < bytes.size(); ++n) {
    EXPECT_FALSE(PointFromBinary(std::string_view(bytes).substr(0, n)).ok()) << n;
  }
  EXPECT_FALSE(PointFromBinary(bytes + "x").ok());
  std::string other = bytes;
  other[0] = 2;  // A version this one does not know.
  EXPECT_FALSE(PointFromBinary(other).ok());
  HistoryPoint bad_state = p;
  bad_state.gpus[0].state = 99;
  std::string b;
  AppendPointBinary(b, bad_state);
  Result<HistoryPoint> r = PointFromBinary(b);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("state"), std::string::npos) << r.error().message;
}

TEST(HistoryPoint, JsonWrittenDirectlyIsTheDocumentsJson) {
  HistoryPoint bad_utf8 = Second(kT0, 5);
  bad_utf8.users[0].user =
      "al\xff"
      "ice";
  for (const HistoryPoint& p : {Second(kT0, 5), Awkward(), bad_utf8, HistoryPoint{}}) {
    std::string text;
    AppendPointJson(text, p);
    const nlohmann::json parsed = nlohmann::json::parse(text, nullptr, false);
    ASSERT_FALSE(parsed.is_discarded()) << text;
    // The same values (doubles exactly), the same keys in the same order;
    // names as valid UTF-8.
    HistoryPoint valid = p;
    for (UserPoint& u : valid.users) u.user = ToValidUtf8(u.user);
    EXPECT_EQ(parsed, PointToJson(valid)) << text;
    EXPECT_EQ(parsed.dump(), PointToJson(valid).dump());
  }
  std::string text;
  AppendPointJson(text, bad_utf8);
  EXPECT_NE(text.find("al\xef\xbf\xbd"
                      "ice"),
            std::string::npos)
      << text;  // U+FFFD.
}

TEST(History, KeepsOnlyTheOpenMinuteInMemoryAndReadsTheHourFromTheStore) {
  MemoryHistoryStore store;
  History h(store);
  ASSERT_TRUE(h.Load(kT0).ok());
  const int64_t end = kT0 + 3600 + 30;  // Half a minute into the next hour.
  for (int64_t t = kT0; t <= end; ++t) ASSERT_TRUE(h.Add(Second(t, 10)).ok());
  Result<std::vector<HistoryPoint>> hour = h.Since(end - 3600, end);
  ASSERT_TRUE(hour.ok());
  EXPECT_EQ(hour->size(), 3601u);
  // The 1-s points are read from the store: drop them there and the hour is
  // only what is not written yet (fewer than kWriteEvery points).
  ASSERT_TRUE(store.Prune(0, INT64_MAX).ok());
  hour = h.Since(end - 3600, end);
  ASSERT_TRUE(hour.ok());
  EXPECT_LT(hour->size(), History::kWriteEvery);
  ASSERT_FALSE(hour->empty());
  EXPECT_EQ(hour->back().time_s, end);
  // The open minute and hour are still whole: the minute tier ends with the
  // open minute, made of all its seconds.
  Result<std::vector<HistoryPoint>> minutes = h.Since(end - 7200, end);
  ASSERT_TRUE(minutes.ok());
  ASSERT_FALSE(minutes->empty());
  EXPECT_EQ(minutes->back().time_s, kT0 + 3600);
  EXPECT_DOUBLE_EQ(minutes->back().users[0].gpus, 31.0 / 60);
}

TEST(History, WritesTheSecondsAFewAtATime) {
  MemoryHistoryStore store;
  {
    History h(store);
    ASSERT_TRUE(h.Load(kT0).ok());
    for (size_t i = 0; i + 1 < History::kWriteEvery; ++i) {
      ASSERT_TRUE(h.Add(Second(kT0 + static_cast<int64_t>(i), 10)).ok());
    }
    Result<std::vector<HistoryPoint>> stored = store.Read(0, 0, INT64_MAX);
    ASSERT_TRUE(stored.ok());
    EXPECT_TRUE(stored->empty());
    // Not written yet, yet asked for they are there.
    Result<std::vector<HistoryPoint>> secs = h.Since(kT0, kT0 + 100);
    ASSERT_TRUE(secs.ok());
    EXPECT_EQ(secs->size(), History::kWriteEvery - 1);
    ASSERT_TRUE(h.Add(Second(kT0 + History::kWriteEvery - 1, 10)).ok());
    stored = store.Read(0, 0, INT64_MAX);
    ASSERT_TRUE(stored.ok());
    EXPECT_EQ(stored->size(), History::kWriteEvery);
    EXPECT_EQ(store.append_all_calls(), 1);  // One write for all of them.
    // Each point once, oldest first, whether written or not.
    ASSERT_TRUE(h.Add(Second(kT0 + History::kWriteEvery, 10)).ok());
    secs = h.Since(kT0, kT0 + 100);
    ASSERT_TRUE(secs.ok());
    ASSERT_EQ(secs->size(), History::kWriteEvery + 1);
    for (size_t i = 0; i < secs->size(); ++i) EXPECT_EQ((*secs)[i].time_s, kT0 + int64_t(i));
    // A minute that closes writes its last seconds.
    for (int64_t t = kT0 + History::kWriteEvery + 1; t <= kT0 + 65; ++t) {
      ASSERT_TRUE(h.Add(Second(t, 10)).ok());
    }
    stored = store.Read(0, kT0, kT0 + 60);
    ASSERT_TRUE(stored.ok());
    EXPECT_EQ(stored->size(), 60u);
    ASSERT_TRUE(h.Add(Second(kT0 + 66, 10)).ok());
  }  // Stopped: the rest is written.
  Result<std::vector<HistoryPoint>> stored = store.Read(0, 0, INT64_MAX);
  ASSERT_TRUE(stored.ok());
  EXPECT_EQ(stored->size(), 67u);

  // A restart in the same minute picks its seconds up and goes on.
  History h(store);
  ASSERT_TRUE(h.Load(kT0 + 70).ok());
  ASSERT_TRUE(h.Add(Second(kT0 + 66, 99)).ok());  // Seen already: ignored.
  for (int64_t t = kT0 + 71; t <= kT0 + 120; ++t) ASSERT_TRUE(h.Add(Second(t, 10, 2)).ok());
  Result<std::vector<HistoryPoint>> minute = store.Read(1, kT0 + 60, kT0 + 61);
  ASSERT_TRUE(minute.ok());
  ASSERT_EQ(minute->size(), 1u);
  EXPECT_EQ(minute->front().gpus[0].util_pct, 10);
  // 7 s of 1 GPU before the restart, 49 s of 2 after it.
  EXPECT_DOUBLE_EQ(minute->front().users[0].gpus, (7.0 + 49 * 2) / 60);
}

TEST(History, TrailReadsTheSecondsFromTheStore) {
  MemoryHistoryStore store;
  History h(store);
  ASSERT_TRUE(h.Load(kT0).ok());
  const int64_t end = kT0 + 2 * 3600 + 5;
  for (int64_t t = kT0; t <= end; ++t) ASSERT_TRUE(h.Add(Second(t, 10)).ok());
  Result<std::vector<HistoryPoint>> trail = h.Trail(kT0, end);
  ASSERT_TRUE(trail.ok());
  size_t seconds = 0;
  for (const HistoryPoint& p : *trail) seconds += p.step_s == 1 ? 1 : 0;
  EXPECT_EQ(seconds, 3601u);  // The last hour, a point a second.
  EXPECT_EQ(trail->front().time_s, kT0);
  EXPECT_EQ(trail->front().step_s, 60);
  EXPECT_EQ(trail->back().time_s, end);
  for (size_t i = 1; i < trail->size(); ++i) {
    const HistoryPoint& a = (*trail)[i - 1];
    EXPECT_LE(a.time_s + a.step_s, (*trail)[i].time_s) << "overlap at " << i;
  }
}

TEST(SqliteHistoryStore, StreamsBatchesAndReadsRowsOfTheJsonForm) {
  const std::string dir = ::testing::TempDir() + "/gw-history-stream-" + std::to_string(getpid());
  std::filesystem::create_directories(dir);
  const std::string path = dir + "/history.db";
  {
    // A file written by a version before the binary form: JSON text rows.
    auto store = SqliteHistoryStore::Open(path);
    ASSERT_TRUE(store.ok()) << store.error().message;
    (*store)->WriteJsonForTests();
    ASSERT_TRUE((*store)->Append(1, Awkward()).ok());
    for (int64_t t = kT0; t < kT0 + 3; ++t) ASSERT_TRUE((*store)->Append(0, Second(t, 5)).ok());
  }
  auto store = SqliteHistoryStore::Open(path);
  ASSERT_TRUE(store.ok()) << store.error().message;
  std::vector<HistoryPoint> batch;
  for (int64_t t = kT0 + 3; t < kT0 + 10; ++t) batch.push_back(Second(t, 6));
  ASSERT_TRUE((*store)->AppendAll(0, batch).ok());
  ASSERT_TRUE((*store)->AppendAll(0, {}).ok());
  Result<std::vector<HistoryPoint>> secs = (*store)->Read(0, 0, INT64_MAX);
  ASSERT_TRUE(secs.ok()) << secs.error().message;
  ASSERT_EQ(secs->size(), 10u);  // Text rows and binary rows, by time.
  for (size_t i = 0; i < secs->size(); ++i) {
    ExpectSamePoint((*secs)[i], Second(kT0 + static_cast<int64_t>(i), i < 3 ? 5 : 6));
  }
  Result<std::vector<HistoryPoint>> mins = (*store)->Read(1, 0, INT64_MAX);
  ASSERT_TRUE(mins.ok());
  ASSERT_EQ(mins->size(), 1u);
  HistoryPoint want = Awkward();
  ExpectSamePoint(mins->front(), want);
  // Replaced in place, now in the binary form.
  ASSERT_TRUE((*store)->Append(1, want).ok());
  mins = (*store)->Read(1, 0, INT64_MAX);
  ASSERT_TRUE(mins.ok());
  ASSERT_EQ(mins->size(), 1u);
  ExpectSamePoint(mins->front(), want);

  // One point at a time; a visitor's error stops the read and comes back.
  int seen = 0;
  Status s = (*store)->ForEach(0, kT0 + 2, kT0 + 8, [&seen](HistoryPoint&& p) {
    ++seen;
    if (p.time_s == kT0 + 4) return Status(MakeError("stop", "enough"));
    return Status::Ok();
  });
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().code, "stop");
  EXPECT_EQ(seen, 3);
  // The statement is free again, and a read inside a read works.
  seen = 0;
  s = (*store)->ForEach(0, kT0, kT0 + 2, [&](HistoryPoint&&) {
    Result<std::vector<HistoryPoint>> inner = (*store)->Read(1, 0, INT64_MAX);
    if (!inner.ok()) return Status(inner.error());
    seen += static_cast<int>(inner->size());
    return Status::Ok();
  });
  ASSERT_TRUE(s.ok()) << s.error().message;
  EXPECT_EQ(seen, 2);

  Result<std::optional<int64_t>> last = (*store)->LastTime(0, INT64_MAX);
  ASSERT_TRUE(last.ok());
  EXPECT_EQ(*last, kT0 + 9);
  last = (*store)->LastTime(0, kT0 + 5);
  ASSERT_TRUE(last.ok());
  EXPECT_EQ(*last, kT0 + 4);
  last = (*store)->LastTime(2, INT64_MAX);
  ASSERT_TRUE(last.ok());
  EXPECT_FALSE(last->has_value());
  std::filesystem::remove_all(dir);
}

TEST(SqliteHistoryStore, AFileOfTheEarlierFormIsReadAndWritten) {
  const std::string dir = ::testing::TempDir() + "/gw-history-old-" + std::to_string(getpid());
  std::filesystem::create_directories(dir);
  const std::string path = dir + "/history.db";
  {
    // As versions before the binary form made it: WITHOUT ROWID, JSON text.
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
    const std::string row = PointToJson(Second(kT0, 5)).dump();
    const std::string sql =
        "PRAGMA journal_mode = WAL; PRAGMA application_id = 1196902473;"
        "CREATE TABLE points (tier INTEGER NOT NULL, t INTEGER NOT NULL, data TEXT NOT NULL,"
        "  PRIMARY KEY (tier, t)) WITHOUT ROWID;"
        "INSERT INTO points VALUES (0, " +
        std::to_string(kT0) + ", '" + row + "');";
    ASSERT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr), SQLITE_OK)
        << sqlite3_errmsg(db);
    sqlite3_close(db);
  }
  {
    auto store = SqliteHistoryStore::Open(path);
    ASSERT_TRUE(store.ok()) << store.error().message;
    History h(**store);
    ASSERT_TRUE(h.Load(kT0 + 1).ok());
    for (int64_t t = kT0 + 1; t < kT0 + 70; ++t) ASSERT_TRUE(h.Add(Second(t, 7)).ok());
  }
  auto store = SqliteHistoryStore::Open(path);
  ASSERT_TRUE(store.ok()) << store.error().message;
  Result<std::vector<HistoryPoint>> secs = (*store)->Read(0, 0, INT64_MAX);
  ASSERT_TRUE(secs.ok()) << secs.error().message;
  ASSERT_EQ(secs->size(), 70u);
  ExpectSamePoint(secs->front(), Second(kT0, 5));
  ExpectSamePoint(secs->back(), Second(kT0 + 69, 7));
  Result<std::vector<HistoryPoint>> mins = (*store)->Read(1, 0, INT64_MAX);
  ASSERT_TRUE(mins.ok());
  ASSERT_EQ(mins->size(), 1u);
  EXPECT_DOUBLE_EQ(mins->front().gpus[0].util_pct, (5 + 59 * 7) / 60.0);
  std::filesystem::remove_all(dir);
}

TEST(MemoryHistoryStore, LastTimeStaysInItsTier) {
  MemoryHistoryStore store;
  ASSERT_TRUE(store.Append(0, Second(kT0, 1)).ok());
  ASSERT_TRUE(store.Append(1, Second(kT0 + 60, 1)).ok());
  Result<std::optional<int64_t>> last = store.LastTime(1, kT0 + 60);
  ASSERT_TRUE(last.ok());
  EXPECT_FALSE(last->has_value());
  last = store.LastTime(0, INT64_MAX);
  ASSERT_TRUE(last.ok());
  EXPECT_EQ(*last, kT0);
  last = store.LastTime(2, INT64_MAX);
  ASSERT_TRUE(last.ok());
  EXPECT_FALSE(last->has_value());
}

TEST(SqliteHistoryStore, RoundTripPruneAndForeignFiles) {
  const std::string dir = ::testing::TempDir() + "/gw-history-" + std::to_string(getpid());
  std::filesystem::create_directories(dir);
  const std::string path = dir + "/history.db";
  {
    auto store = SqliteHistoryStore::Open(path);
    ASSERT_TRUE(store.ok()) << store.error().message;
    for (int64_t t = kT0; t < kT0 + 10; ++t) ASSERT_TRUE((*store)->Append(0, Second(t, 5)).ok());
    ASSERT_TRUE(
        (*store)->Append(1, Downsample(std::vector<HistoryPoint>{Second(kT0, 5)}, kT0, 60)).ok());
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
