#include "fleet/dcgm_fields.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

#include "diagnose/test_util.h"

namespace gw::fleet {
namespace {

TEST(DcgmFields, NamesAreDcgmsAndUnique) {
  std::set<std::string_view> seen;
  for (const DcgmField& f : DcgmGpuFields()) {
    EXPECT_TRUE(IsMetricName(f.name)) << f.name;
    EXPECT_EQ(f.name.substr(0, 12), "DCGM_FI_DEV_") << f.name;
    EXPECT_TRUE(seen.insert(f.name).second) << "twice: " << f.name;
    EXPECT_FALSE(f.help.empty()) << f.name;
  }
}

// dcgm-exporter's default set, counter by counter: each one is either
// exported under its own name or listed with the reason it is not.
TEST(DcgmFields, EveryDefaultCounterIsExportedOrSaysWhyNot) {
  std::set<std::string_view> exported;
  for (const DcgmField& f : DcgmGpuFields()) exported.insert(f.name);
  exported.insert(kDcgmXidErrors);
  std::set<std::string_view> names;
  for (const DcgmDefaultCounter& c : DcgmDefaultCounters()) {
    EXPECT_TRUE(names.insert(c.name).second) << "twice: " << c.name;
    switch (c.coverage) {
      case DcgmCoverage::kExported:
        EXPECT_TRUE(exported.count(c.name)) << c.name << " is said to be exported but is not";
        EXPECT_TRUE(c.why.empty()) << c.name;
        break;
      case DcgmCoverage::kLabel:
        EXPECT_EQ(c.name, kDcgmDriverVersionLabel);
        break;
      default:
        EXPECT_FALSE(exported.count(c.name)) << c.name << " is exported: say so";
        EXPECT_FALSE(c.why.empty()) << c.name;
    }
  }
  // The counters of etc/default-counters.csv (docs/metrics.md), all 26.
  EXPECT_EQ(names.size(), 26u);
}

TEST(DcgmFields, UnitsAreDcgms) {
  Gpu g = diagnose::fixtures::HealthyGpu(0);
  g.memory.used_bytes = (uint64_t{1000} << 20) + 5;  // Whole MiB, as DCGM rounds.
  auto value = [&](std::string_view name) -> std::optional<double> {
    for (const DcgmField& f : DcgmGpuFields()) {
      if (f.name == name) return f.read(g);
    }
    ADD_FAILURE() << "no field " << name;
    return std::nullopt;
  };
  EXPECT_EQ(value("DCGM_FI_DEV_FB_USED"), 1000);
  EXPECT_EQ(value("DCGM_FI_DEV_FB_TOTAL"), 80 * 1024);
  EXPECT_EQ(value("DCGM_FI_DEV_POWER_USAGE"), 70);
  EXPECT_EQ(value("DCGM_FI_DEV_ROW_REMAP_FAILURE"), 0);
  g.temperature_c.reset();
  EXPECT_EQ(value("DCGM_FI_DEV_GPU_TEMP"), std::nullopt);  // Unknown is not 0.
}

}  // namespace
}  // namespace gw::fleet
