// The history ops as the socket serves them: the trends of the daemon's
// history, and requests they refuse.
#include "queue/history_ops.h"

#include <gtest/gtest.h>

#include "fleet/history.h"
#include "fleet/history_store.h"

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

}  // namespace
}  // namespace gw::queue
