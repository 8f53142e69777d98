// Health from NVML: reachability, the driver, memory, PCIe, NVLink, thermal,
// clock events. A healthy idle server must give none of these.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "diagnose/rules.h"
#include "diagnose/test_util.h"

namespace gw::diagnose {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using namespace fixtures;  // NOLINT

ProbeError NvmlError(std::string code, std::string message, Opt<unsigned> gpu = std::nullopt,
                     Opt<int> ret = std::nullopt) {
  return ProbeError{"nvml", std::move(code), std::move(message), gpu, ret};
}

TEST(HealthyServerTest, NoFindingsAtAll) {
  // Idle GPUs at Gen1 (links downshift at idle), P8, 30 C, 0 %: all normal.
  EXPECT_THAT(Codes(RunOne(HealthyServer())), ElementsAre());
  EXPECT_THAT(Codes(RunRules(Window(HealthyServer(), 3), {})), ElementsAre());
  EXPECT_THAT(Codes(RunRules(Window(HealthyServer(), 60, 1000), {})), ElementsAre());
}

TEST(ProbeErrorsTest, GpuLostIsOneFault) {
  Snapshot s = HealthyServer(4);
  ProbeError lost =
      NvmlError("gpu_lost", "nvmlDeviceGetHandleByIndex_v2 on GPU 3: GPU is lost", 3u, 15);
  GpuAt(s, 3)->unreachable = lost;
  s.errors.push_back(lost);
  auto findings = RunOne(s);
  ASSERT_EQ(Count(findings, "GPU_LOST"), 1u);
  EXPECT_EQ(Count(findings, "GPU_UNREACHABLE"), 0u);
  const Finding& f = *Find(findings, "GPU_LOST");
  EXPECT_THAT(f.gpus, ElementsAre(3));
  EXPECT_EQ(f.implies, Verdict::kFault);
  EXPECT_THAT(f.message, HasSubstr("GPU 3 (PCI 0000:48:00) is lost: it fell off the bus"));
  EXPECT_EQ(*EvidenceNumber(f, "nvml_return"), 15);
}

TEST(ProbeErrorsTest, EachErrorItsCode) {
  struct Case {
    ProbeError error;
    bool unreachable;
    const char* code;
  } cases[] = {
      {NvmlError("nvml_error", "Unknown Error", 1u, 999), true, "GPU_UNREACHABLE"},
      {NvmlError("no_permission", "Insufficient Permissions", 1u, 4), true, "NO_PERMISSION"},
      {NvmlError("insufficient_power", "Insufficient External Power", 1u, 8), true,
       "GPU_INSUFFICIENT_POWER"},
      {NvmlError("reset_required", "GPU requires reset", 1u, 16), true, "GPU_RESET_REQUIRED"},
      {NvmlError("timeout", "nvmlDeviceGetMemoryInfo did not return within 2.0 s", 1u), false,
       "DRIVER_TIMEOUT"},
      {NvmlError("driver_not_loaded", "Failed to initialize NVML: Driver Not Loaded"), false,
       "DRIVER_NOT_LOADED"},
      {NvmlError("version_mismatch", "Failed to initialize NVML: Driver/library version mismatch"),
       false, "DRIVER_VERSION_MISMATCH"},
      {NvmlError("library_not_found", "libnvidia-ml.so.1: cannot open shared object file"), false,
       "NVML_NOT_FOUND"},
      {NvmlError("no_permission", "Failed to initialize NVML: Insufficient Permissions"), false,
       "NO_PERMISSION"},
      {NvmlError("corrupted_inforom", "Corrupted infoROM", 1u, 14), false, "INFOROM_CORRUPTED"},
      {ProbeError{"proc", "timeout", "device-file holder scan did not finish", std::nullopt,
                  std::nullopt},
       false, "PROC_SCAN_TIMEOUT"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.code);
    Snapshot s = HealthyServer(2);
    if (c.unreachable) GpuAt(s, 1)->unreachable = c.error;
    s.errors.push_back(c.error);
    auto findings = RunOne(s);
    ASSERT_EQ(findings.size(), 1u) << ::testing::PrintToString(Codes(findings));
    EXPECT_EQ(findings[0].code, c.code);
    EXPECT_EQ(findings[0].gpus.empty(), !c.error.gpu_index.has_value());
  }
}

TEST(ProbeErrorsTest, SingleUnsupportedFieldIsNotAFinding) {
  Snapshot s = HealthyServer(1);
  s.errors.push_back(NvmlError("unsupported", "nvmlDeviceGetFanSpeed: Not Supported", 0u, 3));
  s.errors.push_back(
      NvmlError("nvml_error", "nvmlDeviceGetEncoderUtilization: Unknown Error", 0u, 999));
  EXPECT_THAT(Codes(RunOne(s)), ElementsAre());
}

TEST(ProbeErrorsTest, TimeoutEarlierInTheWindowCounts) {
  auto window = Window(HealthyServer(2), 5);
  window[1].errors.push_back(NvmlError("timeout", "probe did not finish within 2.0 s", 0u));
  window[1].timed_out = true;
  auto findings = RunRules(window, {});
  ASSERT_EQ(Count(findings, "DRIVER_TIMEOUT"), 1u);
  EXPECT_THAT(Find(findings, "DRIVER_TIMEOUT")->evidence.back().value,
              "timed out in 1 of 5 samples");
}

TEST(NoGpuTest, DriverCountsNone) {
  Snapshot s = HealthyServer(0);
  auto findings = RunOne(s);
  ASSERT_EQ(Count(findings, "NO_GPU_VISIBLE"), 1u);
  // Count unknown (NVML did not load): the load error says it, not this rule.
  s.system.gpu_count.reset();
  EXPECT_EQ(Count(RunOne(s), "NO_GPU_VISIBLE"), 0u);
}

TEST(EccTest, VolatileDoubleBit) {
  Snapshot s = HealthyServer(3);
  GpuAt(s, 2)->ecc.volatile_uncorrected = 2;
  GpuAt(s, 1)->ecc.volatile_uncorrected.reset();
  GpuAt(s, 0)->ecc.volatile_corrected = 1000;  // Corrected errors are not a fault.
  auto findings = RunOne(s);
  ASSERT_EQ(Count(findings, "ECC_DBE_VOLATILE"), 1u);
  EXPECT_THAT(Find(findings, "ECC_DBE_VOLATILE")->gpus, ElementsAre(2));
  EXPECT_THAT(Find(findings, "ECC_DBE_VOLATILE")->message, HasSubstr("2 uncorrectable ECC errors"));
  EXPECT_EQ(Find(findings, "ECC_DBE_VOLATILE")->implies, Verdict::kFault);
}

TEST(RetiredPagesTest, PendingLimitAndDbe) {
  Snapshot s = HealthyServer(4);
  GpuAt(s, 0)->retired_pages = {.single_bit = 2, .double_bit = 1, .pending = true};
  GpuAt(s, 1)->retired_pages = {.single_bit = 50, .double_bit = 13, .pending = false};
  GpuAt(s, 2)->retired_pages = {.single_bit = 1, .double_bit = 16, .pending = false};
  GpuAt(s, 3)->retired_pages = {.single_bit = 49, .double_bit = 13, .pending = false};  // 62.
  auto findings = RunOne(s);
  ASSERT_EQ(Count(findings, "RETIRED_PAGES_PENDING"), 1u);
  EXPECT_THAT(Find(findings, "RETIRED_PAGES_PENDING")->gpus, ElementsAre(0));
  ASSERT_EQ(Count(findings, "RETIRED_PAGES_LIMIT"), 1u);
  EXPECT_THAT(Find(findings, "RETIRED_PAGES_LIMIT")->gpus, ElementsAre(1));
  ASSERT_EQ(Count(findings, "RETIRED_PAGES_DBE"), 1u);
  EXPECT_THAT(Find(findings, "RETIRED_PAGES_DBE")->gpus, ElementsAre(2));
}

TEST(RowRemapTest, PendingFailedLimit) {
  Snapshot s = HealthyServer(4);
  GpuAt(s, 0)->remapped_rows.pending = true;
  GpuAt(s, 1)->remapped_rows.failure = true;
  GpuAt(s, 1)->remapped_rows.pending = true;  // Failed wins: the GPU needs an RMA anyway.
  GpuAt(s, 2)->remapped_rows.uncorrectable = 512;
  GpuAt(s, 3)->remapped_rows.uncorrectable = 511;
  auto findings = RunOne(s);
  ASSERT_EQ(Count(findings, "ROW_REMAP_PENDING"), 1u);
  EXPECT_THAT(Find(findings, "ROW_REMAP_PENDING")->gpus, ElementsAre(0));
  EXPECT_EQ(Find(findings, "ROW_REMAP_PENDING")->implies, Verdict::kDegraded);
  ASSERT_EQ(Count(findings, "ROW_REMAP_FAILED"), 1u);
  EXPECT_THAT(Find(findings, "ROW_REMAP_FAILED")->gpus, ElementsAre(1));
  EXPECT_EQ(Find(findings, "ROW_REMAP_FAILED")->actor, Actor::kVendor);
  ASSERT_EQ(Count(findings, "ROW_REMAP_LIMIT"), 1u);
  EXPECT_THAT(Find(findings, "ROW_REMAP_LIMIT")->gpus, ElementsAre(2));
}

TEST(PcieLinkTest, OnlyUnderLoad) {
  Snapshot s = HealthyServer(3);
  // GPU 0: idle at Gen1 (healthy). GPU 1: loaded at Gen3 of Gen5. GPU 2: loaded at x8 of x16.
  SetLoad(s, 1, 95);
  GpuAt(s, 1)->pcie.link_gen_current = 3;
  SetLoad(s, 2, 95);
  GpuAt(s, 2)->pcie.link_gen_current = 5;
  GpuAt(s, 2)->pcie.link_width_current = 8;
  auto findings = RunOne(s);
  ASSERT_EQ(Count(findings, "PCIE_LINK_DEGRADED"), 2u);
  EXPECT_THAT(Find(findings, "PCIE_LINK_DEGRADED")->message,
              HasSubstr("GPU 1's PCIe link runs at Gen3 x16 under load (95 %), below its maximum "
                        "Gen5 x16"));
  // At full speed in one loaded sample: the link is fine.
  auto window = Window(s, 3);
  window[0].gpus[1].pcie.link_gen_current = 5;
  window[0].gpus[2].pcie.link_width_current = 16;
  EXPECT_EQ(Count(RunRules(window, {}), "PCIE_LINK_DEGRADED"), 0u);
  // Unknown link: no judgement.
  GpuAt(s, 1)->pcie = PcieInfo{};
  GpuAt(s, 2)->pcie = PcieInfo{};
  EXPECT_EQ(Count(RunOne(s), "PCIE_LINK_DEGRADED"), 0u);
}

TEST(PcieReplayTest, RateAboveDcgm) {
  Snapshot s = HealthyServer(1);
  SetLoad(s, 0, 90);
  GpuAt(s, 0)->pcie.link_gen_current = 5;
  auto window = Window(s, 2, 60'000);
  window[1].gpus[0].pcie.replay_counter = 100;  // Gen5 x16 for 1 min allows 30.7.
  auto findings = RunRules(window, {});
  ASSERT_EQ(Count(findings, "PCIE_REPLAY_RATE"), 1u);
  EXPECT_THAT(Find(findings, "PCIE_REPLAY_RATE")->message,
              HasSubstr("rose by 100 in 1m, above the 30.7 expected for Gen5 x16"));
  window[1].gpus[0].pcie.replay_counter = 25;
  EXPECT_EQ(Count(RunRules(window, {}), "PCIE_REPLAY_RATE"), 0u);
}

TEST(PcieReplayTest, NeedsTwoSamplesAndARealRise) {
  Snapshot s = HealthyServer(1);
  GpuAt(s, 0)->pcie.replay_counter = 100000;
  EXPECT_EQ(Count(RunOne(s), "PCIE_REPLAY_RATE"), 0u);  // One sample: no rate.
  auto window = Window(s, 2, 1000);
  window[1].gpus[0].pcie.replay_counter = 3;  // Counter reset.
  EXPECT_EQ(Count(RunRules(window, {}), "PCIE_REPLAY_RATE"), 0u);
  window[1].gpus[0].pcie.replay_counter = 100004;  // Four replays: below the minimum count.
  EXPECT_EQ(Count(RunRules(window, {}), "PCIE_REPLAY_RATE"), 0u);
  window[1].gpus[0].pcie.replay_counter = 100006;  // Six in 1 s at Gen1 x16: over the rate.
  EXPECT_EQ(Count(RunRules(window, {}), "PCIE_REPLAY_RATE"), 1u);
}

TEST(NvlinkTest, LinkWentDown) {
  auto window = Window(HealthyServer(2), 3);
  window[2].gpus[1].nvlinks[4].active = false;
  auto findings = RunRules(window, {});
  ASSERT_EQ(Count(findings, "NVLINK_DOWN"), 1u);
  EXPECT_THAT(Find(findings, "NVLINK_DOWN")->message,
              HasSubstr("GPU 1: NVLink 4 went down during the window"));
}

TEST(NvlinkTest, FewerThanItsPeers) {
  Snapshot s = HealthyServer(4);
  GpuAt(s, 2)->nvlinks[0].active = false;
  GpuAt(s, 2)->nvlinks[1].active = false;
  auto findings = RunOne(s);
  ASSERT_EQ(Count(findings, "NVLINK_DOWN"), 1u);
  EXPECT_THAT(Find(findings, "NVLINK_DOWN")->message,
              HasSubstr("GPU 2 has 16 active NVLinks; the other GPUs of its model have 18"));
}

TEST(NvlinkTest, NoBridgeOrUnknownIsNotDown) {
  Snapshot s = HealthyServer(3);
  for (NvLinkState& l : GpuAt(s, 2)->nvlinks) l.active = false;  // A card without a bridge.
  GpuAt(s, 1)->nvlinks[3].active.reset();
  EXPECT_EQ(Count(RunOne(s), "NVLINK_DOWN"), 0u);
  for (Gpu& g : s.gpus) g.nvlinks.clear();
  EXPECT_EQ(Count(RunOne(s), "NVLINK_DOWN"), 0u);
}

TEST(IdleThermalTest, HotAndFansWhileIdle) {
  Snapshot s = HealthyServer(2);
  GpuAt(s, 1)->temperature_c = 86;
  GpuAt(s, 1)->fan_speed_pct = 95;
  auto findings = RunRules(Window(s, 3), {});
  ASSERT_EQ(Count(findings, "HOT_WHILE_IDLE"), 1u);
  EXPECT_THAT(Find(findings, "HOT_WHILE_IDLE")->message,
              HasSubstr("GPU 1 is at 86 C while idle (0 % utilisation)"));
  ASSERT_EQ(Count(findings, "FAN_HIGH_WHILE_IDLE"), 1u);
  EXPECT_EQ(Find(findings, "HOT_WHILE_IDLE")->implies, Verdict::kDegraded);
}

TEST(IdleThermalTest, NotWhenBusyCoolingOrUnknown) {
  Snapshot s = HealthyServer(1);
  GpuAt(s, 0)->temperature_c = 86;
  GpuAt(s, 0)->fan_speed_pct = 95;
  SetLoad(s, 0, 97);
  EXPECT_EQ(Count(RunOne(s), "HOT_WHILE_IDLE") + Count(RunOne(s), "FAN_HIGH_WHILE_IDLE"), 0u);
  SetLoad(s, 0, 0);
  AddProcess(s, {.pid = 1, .gpu = 0, .sm = 30});  // A process computes: not idle.
  EXPECT_EQ(Count(RunOne(s), "HOT_WHILE_IDLE"), 0u);
  Snapshot cooling = HealthyServer(1);
  auto window = Window(cooling, 3);
  window[0].gpus[0].temperature_c = 88;  // Just finished a job, cooling down.
  window[1].gpus[0].temperature_c = 84;
  window[2].gpus[0].temperature_c = 81;
  EXPECT_EQ(Count(RunRules(window, {}), "HOT_WHILE_IDLE"), 0u);
  Snapshot unknown = HealthyServer(1);
  GpuAt(unknown, 0)->temperature_c = 86;
  GpuAt(unknown, 0)->utilization_gpu_pct.reset();
  EXPECT_EQ(Count(RunOne(unknown), "HOT_WHILE_IDLE"), 0u);
}

TEST(ClockEventsTest, Sustained) {
  Snapshot s = HealthyServer(5);
  SetLoad(s, 0, 95);
  GpuAt(s, 0)->clock_event_reasons = clock_event::kHwSlowdown;
  GpuAt(s, 0)->clocks.sm_mhz = 705;
  GpuAt(s, 1)->clock_event_reasons = clock_event::kHwSlowdown | clock_event::kHwThermalSlowdown;
  GpuAt(s, 2)->clock_event_reasons = clock_event::kHwSlowdown | clock_event::kHwPowerBrakeSlowdown;
  GpuAt(s, 3)->clock_event_reasons = clock_event::kSwThermalSlowdown;
  GpuAt(s, 4)->clock_event_reasons = clock_event::kSwPowerCap;
  auto findings = RunRules(Window(s, 3), {});
  ASSERT_EQ(Count(findings, "HW_SLOWDOWN"), 1u);
  EXPECT_THAT(Find(findings, "HW_SLOWDOWN")->gpus, ElementsAre(0));
  EXPECT_THAT(Find(findings, "HW_SLOWDOWN")->message,
              HasSubstr("hardware slowdown engaged in all 3 samples (clocks 705 of 1980 MHz)"));
  ASSERT_EQ(Count(findings, "HW_THERMAL_SLOWDOWN"), 1u);
  EXPECT_THAT(Find(findings, "HW_THERMAL_SLOWDOWN")->gpus, ElementsAre(1));
  ASSERT_EQ(Count(findings, "HW_POWER_BRAKE"), 1u);
  EXPECT_THAT(Find(findings, "HW_POWER_BRAKE")->gpus, ElementsAre(2));
  ASSERT_EQ(Count(findings, "SW_THERMAL_SLOWDOWN"), 1u);
  // At its own limit under load the GPU works as designed (issue class "normal
  // operation reported as a finding"): the default limit is unknown here...
  EXPECT_EQ(Count(findings, "POWER_CAPPED"), 0u);
  // ... or equal to the enforced one.
  GpuAt(s, 4)->power_default_limit_w = 700;
  EXPECT_EQ(Count(RunRules(Window(s, 3), {}), "POWER_CAPPED"), 0u);
  // A limit lowered below the default is worth saying.
  GpuAt(s, 4)->power_limit_w = 400;
  findings = RunRules(Window(s, 3), {});
  ASSERT_EQ(Count(findings, "POWER_CAPPED"), 1u);
  EXPECT_EQ(Find(findings, "POWER_CAPPED")->severity, Severity::kInfo);
  EXPECT_EQ(Find(findings, "POWER_CAPPED")->implies, Verdict::kOk);
  EXPECT_THAT(Find(findings, "POWER_CAPPED")->message,
              HasSubstr("400 W, lowered from the default 700 W"));
}

TEST(ClockEventsTest, TransientOrUnknownIsNothing) {
  Snapshot s = HealthyServer(1);
  auto window = Window(s, 3);
  window[2].gpus[0].clock_event_reasons = clock_event::kHwSlowdown;  // During a P-state change.
  EXPECT_EQ(Count(RunRules(window, {}), "HW_SLOWDOWN"), 0u);
  GpuAt(s, 0)->clock_event_reasons.reset();
  EXPECT_THAT(Codes(RunOne(s)), ElementsAre());
}

}  // namespace
}  // namespace gw::diagnose
