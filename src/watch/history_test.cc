#include "watch/history.h"

#include <gtest/gtest.h>

#include <cmath>

#include "core/units.h"
#include "watch/test_fixtures.h"

namespace gw::watch {
namespace {

Snapshot WithUtil(unsigned util) {
  Snapshot s = testing::TwoGpus();
  s.gpus[0].utilization_gpu_pct = util;
  return s;
}

TEST(History, MetricValuesAreInTheirUnitsAndUnknownIsNaN) {
  Snapshot s = testing::TwoGpus();
  const Gpu& g = s.gpus[0];
  EXPECT_NEAR(MetricValue(g, Metric::kVram), 100.0 * 70 * kGiB / (81559.0 * (1 << 20)), 0.01);
  EXPECT_EQ(MetricValue(g, Metric::kUtil), 97);
  EXPECT_EQ(MetricValue(g, Metric::kTemp), 71);
  EXPECT_EQ(MetricValue(g, Metric::kPower), 650);
  Gpu unknown = g;
  unknown.utilization_gpu_pct.reset();
  EXPECT_TRUE(std::isnan(MetricValue(unknown, Metric::kUtil)));
  Gpu lost = g;
  lost.unreachable = ProbeError{"nvml", "gpu_lost", "GPU is lost", 0u, std::nullopt};
  EXPECT_TRUE(std::isnan(MetricValue(lost, Metric::kTemp)));
}

TEST(History, KeepsTheLastCapacitySamplesInOrder) {
  History h(3);
  for (unsigned u = 10; u <= 50; u += 10) h.Push(WithUtil(u));
  EXPECT_EQ(h.total(), 5u);
  EXPECT_EQ(h.size(), 3u);
  EXPECT_TRUE(std::isnan(h.At(0, Metric::kUtil, 1)));  // Dropped.
  EXPECT_EQ(h.At(0, Metric::kUtil, 2), 30);
  EXPECT_EQ(h.At(0, Metric::kUtil, 4), 50);
  EXPECT_TRUE(std::isnan(h.At(0, Metric::kUtil, 5)));  // Not yet.
  EXPECT_EQ(h.MaxOver(0, Metric::kUtil, 0, 5), 50);
  EXPECT_EQ(h.MaxOver(0, Metric::kUtil, 2, 4), 40);
}

TEST(History, AGapIsUnknownNotZero) {
  History h(10);
  h.Push(WithUtil(80));
  h.PushGap();
  h.Push(WithUtil(0));
  EXPECT_EQ(h.At(0, Metric::kUtil, 0), 80);
  EXPECT_TRUE(std::isnan(h.At(0, Metric::kUtil, 1)));
  EXPECT_EQ(h.At(0, Metric::kUtil, 2), 0);
  EXPECT_TRUE(std::isnan(h.MaxOver(0, Metric::kUtil, 1, 2)));
}

TEST(History, AGpuSeenLaterHasNoInventedPast) {
  History h(10);
  Snapshot one = testing::TwoGpus();
  one.gpus.pop_back();
  h.Push(one);
  EXPECT_EQ(h.gpu_slots(), 1u);
  h.Push(testing::TwoGpus());
  EXPECT_EQ(h.gpu_slots(), 2u);
  EXPECT_TRUE(std::isnan(h.At(1, Metric::kUtil, 0)));
  EXPECT_EQ(h.At(1, Metric::kUtil, 1), 0);
  // A GPU that disappears gets unknown, not its old value.
  h.Push(one);
  EXPECT_TRUE(std::isnan(h.At(1, Metric::kUtil, 2)));
  EXPECT_TRUE(std::isnan(h.At(7, Metric::kUtil, 0)));  // Never seen.
}

}  // namespace
}  // namespace gw::watch
