#include "fleet/prom_text.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>

namespace gw::fleet {
namespace {

TEST(PromText, AFamilyWithoutSamplesWritesNothing) {
  PromText t;
  t.Family("gw_empty", MetricType::kGauge, "Never sampled.");
  t.Family("gw_one", MetricType::kCounter, "Sampled once.");
  t.Sample({{"a", "x"}}, 3);
  EXPECT_EQ(t.Take(), "# HELP gw_one Sampled once.\n# TYPE gw_one counter\ngw_one{a=\"x\"} 3\n");
  EXPECT_EQ(t.Take(), "");
}

TEST(PromText, NumbersReadBackExactly) {
  PromText t;
  t.Family("gw_n", MetricType::kGauge, "n");
  t.Sample({}, 0.1);
  t.Sample({}, 81920);
  t.Sample({}, 1e21);
  t.Sample({}, std::numeric_limits<double>::quiet_NaN());
  t.Sample({}, std::numeric_limits<double>::infinity());
  t.Sample({}, -std::numeric_limits<double>::infinity());
  t.Sample({{"le", "+Inf"}}, 2, "_bucket");
  EXPECT_EQ(t.Take(),
            "# HELP gw_n n\n# TYPE gw_n gauge\ngw_n 0.1\ngw_n 81920\ngw_n 1e+21\ngw_n NaN\n"
            "gw_n +Inf\ngw_n -Inf\ngw_n_bucket{le=\"+Inf\"} 2\n");
}

TEST(PromText, LabelValuesAreSanitisedThenEscaped) {
  EXPECT_EQ(LabelValue("python"), "python");
  EXPECT_EQ(LabelValue("a\"b\\c"), "a\\\"b\\\\c");
  // A newline would end the sample line; an escape would reach a terminal
  // that shows the page: both become visible text.
  EXPECT_EQ(LabelValue("x\ny"), "x\\\\ny");
  EXPECT_EQ(LabelValue("\x1b[31mred"), "\\\\x1b[31mred");
  EXPECT_EQ(LabelValue("bad\xff"), "bad\\\\xff");
  EXPECT_EQ(LabelValue("\xe2\x80\xae"
                       "evil"),
            "\\\\u202eevil");  // Right-to-left override.
  EXPECT_EQ(LabelValue(std::string("nul\0x", 5)), "nul\\\\x00x");
  EXPECT_EQ(LabelValue("训练"), "训练");
}

TEST(PromText, LongLabelValuesAreCut) {
  const std::string cut = LabelValue(std::string(100'000, 'a'));
  EXPECT_EQ(cut, std::string(kMaxLabelColumns - 1, 'a') + "…");
}

TEST(PromText, NamesAreChecked) {
  EXPECT_TRUE(IsMetricName("DCGM_FI_DEV_GPU_UTIL"));
  EXPECT_TRUE(IsMetricName("job:gpu_util:avg"));
  EXPECT_FALSE(IsMetricName("1abc"));
  EXPECT_FALSE(IsMetricName("a-b"));
  EXPECT_FALSE(IsMetricName(""));
  EXPECT_TRUE(IsLabelName("pci_bus_id"));
  EXPECT_FALSE(IsLabelName("a:b"));
}

}  // namespace
}  // namespace gw::fleet
