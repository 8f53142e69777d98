#include "diagnose/health.h"

#include <vector>

#include <gtest/gtest.h>

#include "diagnose/catalog.h"
#include "diagnose/test_util.h"
#include "diagnose/verdict.h"

namespace gw::diagnose {
namespace {

using fixtures::HealthyServer;

Finding Make(const std::string& code, std::vector<unsigned> gpus, std::string message = "m") {
  EXPECT_NE(FindSpec(code), nullptr) << code;
  return fixtures::CatalogFinding(code, std::move(gpus), std::move(message));
}

Gpu* At(Snapshot& s, unsigned index) {
  for (Gpu& g : s.gpus) {
    if (g.index == index) return &g;
  }
  return nullptr;
}

// A GPU whose handle answers NO_PERMISSION, as the NVML collector leaves it.
void DenyHandle(Snapshot& s, unsigned index) {
  Gpu& g = *At(s, index);
  const unsigned i = g.index;
  g = Gpu{};
  g.index = i;
  g.unreachable =
      ProbeError{"nvml", "no_permission",
                 "nvmlDeviceGetHandleByIndex_v2 on GPU 1: Insufficient Permissions", i, 4};
}

TEST(Health, HealthyServerIsHealthy) {
  const Snapshot s = HealthyServer(4);
  const HealthReport r = AssessHealth({}, s);
  EXPECT_EQ(r.overall, Health::kHealthy);
  ASSERT_EQ(r.gpus.size(), 4u);
  for (const GpuHealth& g : r.gpus) {
    EXPECT_EQ(g.health, Health::kHealthy);
    EXPECT_FALSE(g.unread);
  }
  EXPECT_TRUE(r.unread.empty());
}

// Issue 12, class 9: a GPU that could not be opened is not healthy, with or
// without a finding about it.
TEST(Health, NoPermissionGpuIsUnknownNotHealthy) {
  Snapshot s = HealthyServer(4);
  DenyHandle(s, 1);
  for (const bool with_finding : {false, true}) {
    std::vector<Finding> findings;
    if (with_finding) findings.push_back(Make("NO_PERMISSION", {1}));
    const HealthReport r = AssessHealth(findings, s);
    EXPECT_EQ(r.overall, Health::kUnknown) << with_finding;
    EXPECT_EQ(r.gpus[1].health, Health::kUnknown);
    EXPECT_TRUE(r.gpus[1].unread);
    EXPECT_NE(r.gpus[1].unread_reason.find("Insufficient Permissions"), std::string::npos);
    EXPECT_EQ(r.gpus[0].health, Health::kHealthy);
    EXPECT_EQ(r.unread, std::vector<unsigned>{1});
    EXPECT_EQ(r.gpus[1].findings.size(), with_finding ? 1u : 0u);
  }
}

TEST(Health, NoPermissionIsAHealthFindingThoughItIsConfiguration) {
  const Finding denied = Make("NO_PERMISSION", {1});
  EXPECT_EQ(denied.category, Category::kConfiguration);
  EXPECT_TRUE(IsHealthFinding(denied));
  EXPECT_FALSE(IsHealthFinding(Make("VRAM_EXHAUSTED", {0})));
  EXPECT_FALSE(IsHealthFinding(Make("IDLE_HOLDER", {0})));
  EXPECT_FALSE(IsHealthFinding(Make("PERSISTENCE_OFF", {})));
  EXPECT_TRUE(IsHealthFinding(Make("GPU_LOST", {3})));
}

TEST(Health, WorseFindingsBeatUnknown) {
  Snapshot s = HealthyServer(4);
  DenyHandle(s, 1);
  At(s, 2)->unreachable = ProbeError{"nvml", "insufficient_power", "no power", 2u, 8};
  const std::vector<Finding> findings = {Make("GPU_INSUFFICIENT_POWER", {2}),
                                         Make("NO_PERMISSION", {1})};
  const HealthReport r = AssessHealth(findings, s);
  EXPECT_EQ(r.overall, Health::kFailed);
  EXPECT_EQ(r.gpus[2].health, Health::kFailed);
  EXPECT_EQ(r.gpus[1].health, Health::kUnknown);
  // Both are listed as unread, whatever else is wrong.
  EXPECT_EQ(r.unread, (std::vector<unsigned>{1, 2}));
}

TEST(Health, DegradedBeatsUnknownForTheServer) {
  Snapshot s = HealthyServer(4);
  DenyHandle(s, 0);
  const std::vector<Finding> findings = {Make("HW_SLOWDOWN", {3})};
  const HealthReport r = AssessHealth(findings, s);
  EXPECT_EQ(r.overall, Health::kDegraded);
  EXPECT_EQ(r.gpus[0].health, Health::kUnknown);
  EXPECT_EQ(r.gpus[3].health, Health::kDegraded);
}

TEST(Health, NoDataIsUnread) {
  Snapshot s = HealthyServer(2);
  Gpu& g = *At(s, 1);
  g.memory = {};
  g.utilization_gpu_pct.reset();
  g.temperature_c.reset();
  g.power_draw_w.reset();
  const HealthReport r = AssessHealth({}, s);
  EXPECT_EQ(r.gpus[1].health, Health::kUnknown);
  EXPECT_TRUE(r.gpus[1].unread);
  EXPECT_EQ(r.overall, Health::kUnknown);
  EXPECT_EQ(r.gpus[1].unread_reason, "NVML answered nothing about it");
  // Never tried, and why: the deadline came before its reading began...
  s.timed_out = true;
  EXPECT_EQ(AssessHealth({}, s).gpus[1].unread_reason,
            "not tried: the probe's deadline passed before its reading began");
  // ... the probe's own call (about no GPU) did not return first ...
  s.errors.push_back(ProbeError{"nvml", "timeout",
                                "driver not responding: nvmlInit_v2 did not return within 2.0 s",
                                std::nullopt, std::nullopt});
  EXPECT_EQ(AssessHealth({}, s).gpus[1].unread_reason,
            "not tried: nvmlInit_v2 did not return within 2.0 s");
  // ... or no thread could be started to read it.
  s.errors.push_back(ProbeError{"probe", "thread_failed", "GPU 1 was not read", 1u, std::nullopt});
  EXPECT_EQ(AssessHealth({}, s).gpus[1].unread_reason,
            "not tried: no thread could be started to read it");
}

// Memory and utilisation "Unknown Error" while the temperature and power
// still read: what the GPU does was not seen, so it is not healthy either.
TEST(Health, ATemperatureAloneIsNotALook) {
  Snapshot s = HealthyServer(2);
  Gpu& g = *At(s, 1);
  g.memory = {};
  g.utilization_gpu_pct.reset();
  ASSERT_TRUE(g.temperature_c && g.power_draw_w);
  const HealthReport r = AssessHealth({}, s);
  EXPECT_EQ(r.gpus[1].health, Health::kUnknown);
  EXPECT_EQ(r.gpus[1].unread_reason, "NVML gave neither its memory nor its utilisation");
  EXPECT_EQ(r.gpus[0].health, Health::kHealthy);
  EXPECT_EQ(r.overall, Health::kUnknown);
}

TEST(Health, CapacityIsNotHealth) {
  const Snapshot s = HealthyServer(2);
  const std::vector<Finding> findings = {Make("VRAM_EXHAUSTED", {0}), Make("IDLE_HOLDER", {0}),
                                         Make("PERSISTENCE_OFF", {})};
  const HealthReport r = AssessHealth(findings, s);
  EXPECT_EQ(r.overall, Health::kHealthy);
  EXPECT_TRUE(r.gpus[0].findings.empty());
  EXPECT_TRUE(r.server.empty());
}

TEST(Health, NoGpuIsUnknownAndServerFindingsCount) {
  Snapshot empty;
  EXPECT_EQ(AssessHealth({}, empty).overall, Health::kUnknown);
  const std::vector<Finding> driver = {Make("DRIVER_NOT_LOADED", {})};
  const HealthReport r = AssessHealth(driver, empty);
  EXPECT_EQ(r.overall, Health::kFailed);
  ASSERT_EQ(r.server.size(), 1u);
  const std::vector<Finding> missing_lib = {Make("NVML_NOT_FOUND", {})};
  EXPECT_EQ(AssessHealth(missing_lib, HealthyServer(2)).overall, Health::kUnknown);
}

TEST(Health, AFindingAboutAGpuTheSnapshotLacksCountsForTheServer) {
  const Snapshot s = HealthyServer(2);
  const std::vector<Finding> findings = {Make("GPU_LOST", {5})};
  const HealthReport r = AssessHealth(findings, s);
  EXPECT_EQ(r.overall, Health::kFailed);
  ASSERT_EQ(r.server.size(), 1u);
  EXPECT_EQ(r.server[0]->code, "GPU_LOST");
}

TEST(Health, VerdictWords) {
  EXPECT_EQ(HealthOfVerdict(Verdict::kBusy), Health::kHealthy);
  EXPECT_EQ(HealthOfVerdict(Verdict::kReclaimable), Health::kHealthy);
  EXPECT_EQ(HealthOfVerdict(Verdict::kUnknown), Health::kUnknown);
  EXPECT_EQ(VerdictOfHealth(Health::kUnknown), Verdict::kUnknown);
  EXPECT_EQ(VerdictOfHealth(Health::kFailed), Verdict::kFault);
  EXPECT_EQ(HealthName(Health::kDegraded), "degraded");
}

TEST(Health, UnhealthyGpusForTheQueue) {
  const std::vector<Finding> findings = {
      Make("HW_SLOWDOWN", {1}, "GPU 1 slowed"), Make("GPU_LOST", {1}, "GPU 1 is lost"),
      Make("VRAM_EXHAUSTED", {2}), Make("XID_APPLICATION", {3}), Make("NO_PERMISSION", {0})};
  const auto unhealthy = UnhealthyGpus(findings);
  ASSERT_EQ(unhealthy.size(), 1u);
  EXPECT_EQ(unhealthy.at(1), "GPU_LOST: GPU 1 is lost");
}

// The one placement rule: a pending row remap alone leaves a GPU usable (by
// default), with a reset pending; every other degraded finding keeps it out.
TEST(Health, PendingRowRemapAloneAllowsPlacement) {
  const std::vector<Finding> findings = {
      Make("ROW_REMAP_PENDING", {1}, "GPU 1 has a row remap waiting for a GPU reset"),
      Make("ROW_REMAP_PENDING", {2}, "GPU 2 has a row remap waiting for a GPU reset"),
      Make("NVLINK_DOWN", {2}, "GPU 2 has NVLinks down"),
      Make("ECC_DBE_CONTAINED", {3}, "GPU 3 contained an uncorrectable error"),
      Make("PCIE_LINK_DEGRADED", {4}, "GPU 4's PCIe link runs at x8"),
      Make("RETIRED_PAGES_PENDING", {5}, "GPU 5 has a page retirement waiting for a reset")};
  const PlacementHealth by_default;
  EXPECT_TRUE(by_default.use_remap_pending);
  EXPECT_TRUE(AllowedByPlacement(findings[0], by_default));
  EXPECT_FALSE(BlocksPlacement(findings[0], by_default));
  const auto unhealthy = UnhealthyGpus(findings, by_default);
  EXPECT_EQ(unhealthy.count(1), 0u);
  EXPECT_EQ(unhealthy.at(2), "NVLINK_DOWN: GPU 2 has NVLinks down");
  EXPECT_EQ(unhealthy.count(3), 1u);  // Contained, but kept out until the reset.
  EXPECT_EQ(unhealthy.count(4), 1u);
  EXPECT_EQ(unhealthy.count(5), 1u);
  const auto pending = ResetPendingGpus(findings, by_default);
  ASSERT_EQ(pending.size(), 1u);  // Not GPU 2: its NVLinks keep it out.
  EXPECT_EQ(pending.at(1), "ROW_REMAP_PENDING: GPU 1 has a row remap waiting for a GPU reset");

  const PlacementHealth strict{.use_remap_pending = false};
  EXPECT_TRUE(BlocksPlacement(findings[0], strict));
  EXPECT_EQ(UnhealthyGpus(findings, strict).at(1),
            "ROW_REMAP_PENDING: GPU 1 has a row remap waiting for a GPU reset");
  EXPECT_TRUE(ResetPendingGpus(findings, strict).empty());
}

// The whole engine: the diagnosis of a snapshot with a GPU that could not be
// opened makes the health unknown.
TEST(Health, FromTheDiagnosis) {
  Snapshot s = HealthyServer(4);
  DenyHandle(s, 1);
  const std::vector<Snapshot> history = {s};
  const Diagnosis d = Diagnose(history, DiagnoseOptions{});
  const HealthReport r = AssessHealth(d.findings, history.back());
  EXPECT_EQ(r.gpus[1].health, Health::kUnknown);
  EXPECT_EQ(r.overall, Health::kUnknown);
}

}  // namespace
}  // namespace gw::diagnose
