// Trends from gpuwardend's history as evidence of the findings they explain.
#include "diagnose/trends.h"

#include <gtest/gtest.h>

#include <cstdlib>

#include "diagnose/test_util.h"
#include "diagnose/verdict.h"

namespace gw::diagnose {
namespace {

using namespace fixtures;  // NOLINT

// GPU 1: a two-day-old idle holder of 70 GiB; GPU 2: full of working memory.
Diagnosis IdleAndFull() {
  Snapshot s = HealthyServer(4);
  AddProcess(s, {.pid = 4242,
                 .gpu = 1,
                 .bytes = 70 * kGiB,
                 .sm = 0,
                 .user = "alice",
                 .comm = "python3",
                 .age_s = 2 * 86400.0});
  AddProcess(s, {.pid = 5151,
                 .gpu = 2,
                 .bytes = 78 * kGiB,
                 .sm = 95,
                 .user = "bob",
                 .comm = "train",
                 .age_s = 3600.0});
  return Diagnose(Window(s, 3), IdleAtOnce());
}

class TrendsTest : public ::testing::Test {
 protected:
  // Local times in the text: pin the zone so "since 09:40" is the same everywhere.
  void SetUp() override {
    setenv("TZ", "UTC", 1);
    tzset();
  }
};

TEST_F(TrendsTest, HolderAndFullFindingsGetHowLongFromTheHistory) {
  Diagnosis d = IdleAndFull();
  ASSERT_NE(Find(d.findings, "IDLE_HOLDER"), nullptr);
  ASSERT_NE(Find(d.findings, "VRAM_EXHAUSTED"), nullptr);
  const int64_t now = 1'800'000'000;  // 2027-01-15T08:00:00Z
  Trends t;
  t.as_of_unix_s = now;
  t.covered_from_unix_s = now - 86400;
  t.gpus.push_back({1, TrendRun{now - (3 * 3600 + 12 * 60), false}, std::nullopt});
  t.gpus.push_back({2, std::nullopt, TrendRun{now - 86400, true}});
  AddTrendEvidence(d, t);

  // IDLE_HOLDER carries its holder's own idle time (idle_time.h, judged
  // with the history before the rules ran): the GPU's run is not added again.
  const Finding& holder = *Find(d.findings, "IDLE_HOLDER");
  EXPECT_EQ(std::count_if(holder.evidence.begin(), holder.evidence.end(),
                          [](const Evidence& e) { return e.name == "idle_for"; }),
            1);
  EXPECT_EQ(EvidenceNamed(holder, "idle_for")->value, "idle for at least 2s (this look's samples)");
  const Evidence* full = EvidenceNamed(*Find(d.findings, "VRAM_EXHAUSTED"), "full_for");
  ASSERT_NE(full, nullptr);
  EXPECT_EQ(full->number, 86400);
  EXPECT_EQ(full->value,
            "GPU 2 memory full for at least 1d (since 2027-01-14 08:00, as far as the history "
            "goes) (gpuwardend's history)");
}

TEST_F(TrendsTest, NoRunForTheFindingsGpuAddsNothing) {
  Diagnosis d = IdleAndFull();
  const Diagnosis before = d;
  Trends t;
  t.as_of_unix_s = 1'800'000'000;
  // Runs on other GPUs, or of the other kind, explain nothing here.
  t.gpus.push_back({1, std::nullopt, TrendRun{t.as_of_unix_s - 600, false}});
  t.gpus.push_back({2, TrendRun{t.as_of_unix_s - 600, false}, std::nullopt});
  t.gpus.push_back({7, TrendRun{t.as_of_unix_s - 600, false}, TrendRun{0, true}});
  AddTrendEvidence(d, t);
  ASSERT_EQ(d.findings.size(), before.findings.size());
  for (size_t i = 0; i < d.findings.size(); ++i) {
    EXPECT_EQ(d.findings[i].evidence.size(), before.findings[i].evidence.size())
        << d.findings[i].code;
  }
}

TEST_F(TrendsTest, TrendsOfAnotherServerAreNotUsed) {
  const Snapshot s = HealthyServer(2);
  Trends t;
  t.memory_total_bytes = {{0, 80.0 * kGiB}, {1, 80.0 * kGiB}};
  EXPECT_TRUE(TrendsDescribe(t, s));
  t.memory_total_bytes[1] = 40.0 * kGiB;  // Another card.
  EXPECT_FALSE(TrendsDescribe(t, s));
  t.memory_total_bytes = {{0, 80.0 * kGiB}};  // Fewer GPUs.
  EXPECT_FALSE(TrendsDescribe(t, s));
  t.memory_total_bytes = {{0, 80.0 * kGiB}, {2, 80.0 * kGiB}};  // Other indexes.
  EXPECT_FALSE(TrendsDescribe(t, s));
  EXPECT_FALSE(TrendsDescribe(Trends{}, s));  // No points: nothing to say.
}

TEST_F(TrendsTest, ReadingsMeanWhatTheRulesMean) {
  const DiagnoseOptions o;
  const double gib = static_cast<double>(kGiB);
  // Held: above the free mark (2 % of 80 GiB = 1.6 GiB); idle: at most 5 %.
  EXPECT_TRUE(HeldIdleReading(0.0, 2 * gib, 80 * gib, o));
  EXPECT_TRUE(HeldIdleReading(5.0, 2 * gib, 80 * gib, o));
  EXPECT_FALSE(HeldIdleReading(6.0, 2 * gib, 80 * gib, o));
  EXPECT_FALSE(HeldIdleReading(0.0, 1.5 * gib, 80 * gib, o));
  EXPECT_FALSE(HeldIdleReading(std::nullopt, 40 * gib, 80 * gib, o));
  // Full: less free than max(10 %, 1 GiB), as VRAM_EXHAUSTED.
  EXPECT_TRUE(MemoryFullReading(72.5 * gib, 80 * gib, o));
  EXPECT_FALSE(MemoryFullReading(71.5 * gib, 80 * gib, o));
  EXPECT_TRUE(MemoryFullReading(15.5 * gib, 16 * gib, o));
  EXPECT_FALSE(MemoryFullReading(std::nullopt, 80 * gib, o));
  EXPECT_FALSE(MemoryFullReading(81 * gib, 80 * gib, o));  // Nonsense is not "full".
}

}  // namespace
}  // namespace gw::diagnose
