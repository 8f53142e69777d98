// The history ops as the socket serves them: the points and the usage of
// the daemon's history, its trends, and requests they refuse.
#include "queue/history_ops.h"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "fleet/history.h"
#include "fleet/history_store.h"
#include "queue/socket_server.h"

namespace gw::queue {
namespace {

using nlohmann::json;

constexpr int64_t kT0 = 1'800'000'000;

fleet::HistoryPoint Point(int64_t t, double util, double used_gib, double queued) {
  fleet::HistoryPoint p;
  p.time_s = t;
  fleet::GpuPoint g;
  g.index = 0;
  g.util_pct = util;
  g.mem_used_bytes = used_gib * (1 << 30);
  g.mem_total_bytes = 80.0 * (1 << 30);
  p.gpus.push_back(g);
  p.queued = queued;
  return p;
}

TEST(TrendsReply, HowLongAGpuHasSatHeldAndIdle) {
  fleet::MemoryHistoryStore store;
  fleet::History history(store);
  ASSERT_TRUE(history.Load(kT0).ok());
  // Working for 5 minutes, then 20 GiB held at 0 % for 15 minutes.
  for (int64_t t = kT0; t < kT0 + 300; ++t) ASSERT_TRUE(history.Add(Point(t, 70, 20, 2)).ok());
  for (int64_t t = kT0 + 300; t <= kT0 + 1200; ++t) {
    ASSERT_TRUE(history.Add(Point(t, 0, 20, 5)).ok());
  }
  const json r = TrendsReply(history, kT0 + 1200, {{"op", "trends"}});
  ASSERT_TRUE(r.value("ok", false)) << r.dump();
  const json& t = r["trends"];
  EXPECT_EQ(t["as_of_unix_s"], kT0 + 1200);
  ASSERT_EQ(t["gpus"].size(), 1u) << t.dump();
  EXPECT_EQ(t["gpus"][0]["idle_held"]["since_unix_s"], kT0 + 300);
  EXPECT_EQ(t["gpus"][0]["idle_held"]["for_s"], 900);
  EXPECT_TRUE(t["gpus"][0]["memory_full"].is_null());
  EXPECT_EQ(t["queue"]["waiting_then"], 2);
  EXPECT_EQ(t["queue"]["waiting_now"], 5);
}

TEST(TrendsReply, RefusesALookbackOutOfRange) {
  fleet::MemoryHistoryStore store;
  fleet::History history(store);
  for (const json& lookback : {json(0), json(-5), json("1d"), json(8 * 86400)}) {
    const json r = TrendsReply(history, kT0, {{"op", "trends"}, {"lookback_s", lookback}});
    EXPECT_FALSE(r.value("ok", true)) << lookback;
    EXPECT_NE(r.dump().find("lookback_s"), std::string::npos) << r.dump();
  }
  // An empty history answers with no trend at all.
  const json r = TrendsReply(history, kT0, {{"op", "trends"}, {"lookback_s", 3600}});
  ASSERT_TRUE(r.value("ok", false)) << r.dump();
  EXPECT_TRUE(r["trends"]["gpus"].empty());
  EXPECT_TRUE(r["trends"]["queue"].is_null());
}

// The reply as a client reads it off the socket.
json Text(const json& reply) {
  std::string text;
  AppendReplyText(text, reply);
  return json::parse(text, nullptr, /*allow_exceptions=*/false);
}

fleet::HistoryPoint WithUsers(int64_t t, double util) {
  fleet::HistoryPoint p = Point(t, util, 20, 1);
  p.users.push_back({"alice", 1, util == 0 ? 1.0 : 0.0, 20.0 * (1 << 30), 0});
  p.users.push_back({"bob\"s", 2, 0, 40.0 * (1 << 30), 0});
  return p;
}

TEST(HistoryReply, ThePointsOfTheTierThatReachesBack) {
  fleet::MemoryHistoryStore store;
  fleet::History history(store);
  ASSERT_TRUE(history.Load(kT0).ok());
  const int64_t end = kT0 + 2 * 3600 + 30;
  for (int64_t t = kT0; t <= end; ++t) ASSERT_TRUE(history.Add(WithUsers(t, t % 7 ? 50 : 0)).ok());
  for (const int64_t since : {int64_t{90}, int64_t{3600}, int64_t{2 * 3600}, int64_t{86400}}) {
    const json raw = HistoryReply(history, end, {{"op", "history"}, {"since_s", since}});
    const json r = Text(raw);
    ASSERT_FALSE(r.is_discarded());
    ASSERT_TRUE(r.value("ok", false)) << r.dump();
    EXPECT_EQ(r["from_unix_s"], end - since);
    EXPECT_EQ(r["to_unix_s"], end);
    // The same points as the history has, point for point.
    Result<std::vector<fleet::HistoryPoint>> want = history.Since(end - since, end);
    ASSERT_TRUE(want.ok());
    ASSERT_EQ(r["points"].size(), want->size()) << since;
    ASSERT_FALSE(want->empty());
    for (size_t i = 0; i < want->size(); ++i) {
      EXPECT_EQ(r["points"][i], fleet::PointToJson((*want)[i])) << since << " #" << i;
    }
    EXPECT_EQ(r["points"].front()["step_s"], since <= 3600 ? 1 : 60) << since;
  }
  // Nothing yet: an empty list.
  fleet::MemoryHistoryStore empty_store;
  fleet::History empty(empty_store);
  const json r = Text(HistoryReply(empty, kT0, {{"op", "history"}, {"since_s", 60}}));
  ASSERT_TRUE(r.value("ok", false)) << r.dump();
  EXPECT_TRUE(r["points"].is_array());
  EXPECT_TRUE(r["points"].empty());
  for (const json& since : {json(0), json("1h"), json(400.0 * 86400)}) {
    const json bad = Text(HistoryReply(history, end, {{"op", "history"}, {"since_s", since}}));
    EXPECT_FALSE(bad.value("ok", true)) << since;
    EXPECT_EQ(bad["error"]["code"], "bad_request");
  }
}

TEST(UsageReply, SumsPointByPointAsOverTheWholeList) {
  fleet::MemoryHistoryStore store;
  fleet::History history(store);
  ASSERT_TRUE(history.Load(kT0).ok());
  const int64_t end = kT0 + 3 * 3600;
  for (int64_t t = kT0; t <= end; ++t) ASSERT_TRUE(history.Add(WithUsers(t, t % 5 ? 50 : 0)).ok());
  for (const int64_t since : {int64_t{1800}, int64_t{86400}, int64_t{30 * 86400}}) {
    const json r = Text(UsageReply(history, nullptr, end, {{"op", "usage"}, {"since_s", since}}));
    ASSERT_TRUE(r.value("ok", false)) << r.dump();
    Result<std::vector<fleet::HistoryPoint>> points = history.Since(end - since, end);
    ASSERT_TRUE(points.ok());
    const std::map<std::string, fleet::UserUsage> want = fleet::UsageOf(*points);
    double covered = 0;
    for (const fleet::HistoryPoint& p : *points) covered += p.step_s;
    EXPECT_DOUBLE_EQ(r["covered_s"].get<double>(), covered);
    ASSERT_EQ(r["users"].size(), 2u);
    for (const json& u : r["users"]) {
      const fleet::UserUsage& w = want.at(u["user"].get<std::string>());
      EXPECT_DOUBLE_EQ(u["gpu_hours"].get<double>(), w.gpu_seconds / 3600);
      EXPECT_DOUBLE_EQ(u["idle_gpu_hours"].get<double>(), w.idle_gpu_seconds / 3600);
      EXPECT_DOUBLE_EQ(u["vram_gib_hours"].get<double>(), w.vram_byte_seconds / 3600 / (1 << 30));
      EXPECT_TRUE(u["jobs_started"].is_null());  // No queue.
    }
  }
}

TEST(AppendReplyText, PiecesOfARawReplyOrTheDocumentDumped) {
  const json plain = {{"ok", true},
                      {"name",
                       "a\xff"
                       "b"},
                      {"n", 1.5}};
  std::string text;
  AppendReplyText(text, plain);
  EXPECT_EQ(text, plain.dump(-1, ' ', false, json::error_handler_t::replace));
  text = "prefix ";
  AppendReplyText(text, RawReply({R"({"ok":true,"points":[{"a":1},)", R"({"b":[2,3]}]})"}));
  EXPECT_EQ(text, R"(prefix {"ok":true,"points":[{"a":1},{"b":[2,3]}]})");
}

TEST(HistoryReply, AWeekOfMinutesInPiecesOfAboutAMebibyte) {
  fleet::MemoryHistoryStore store;
  fleet::History history(store);
  ASSERT_TRUE(history.Load(kT0).ok());
  const int64_t end = kT0 + 7 * 86400;
  // A week of minutes written straight to the store, as a daemon leaves them.
  for (int64_t m = kT0; m < end; m += 60) {
    fleet::HistoryPoint p = WithUsers(m, 50);
    p.step_s = 60;
    ASSERT_TRUE(store.Append(1, p).ok());
  }
  const json raw = HistoryReply(history, end, {{"op", "history"}, {"since_s", 7 * 86400}});
  ASSERT_EQ(raw.size(), 1u);
  const json& pieces = raw.begin().value();
  ASSERT_TRUE(pieces.is_array());
  EXPECT_GT(pieces.size(), 2u);
  for (size_t i = 0; i + 1 < pieces.size(); ++i) {
    EXPECT_GE(pieces[i].get_ref<const std::string&>().size(), size_t{1} << 20);
    EXPECT_LT(pieces[i].get_ref<const std::string&>().size(), (size_t{1} << 20) + 16384);
  }
  const json r = Text(raw);
  ASSERT_TRUE(r.value("ok", false));
  ASSERT_EQ(r["points"].size(), 7u * 1440);
  EXPECT_EQ(r["points"].back()["time_unix_s"], end - 60);
}

}  // namespace
}  // namespace gw::queue
