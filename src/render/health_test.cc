#include "render/health_text.h"

#include <string>

#include <gtest/gtest.h>

#include "diagnose/health.h"
#include "render/health_json.h"
#include "render/test_diagnoses.h"

namespace gw::render {
namespace {

using nlohmann::json;
using testing::BusyBox;
using testing::BusyDiagnosis;
using testing::HealthyDiagnosis;
using testing::MakeFinding;

TEST(HealthText, QuietWhenHealthy) {
  EXPECT_EQ(RenderHealthText(HealthyDiagnosis(), BusyBox(), false, false), "");
  EXPECT_EQ(RenderHealthText(HealthyDiagnosis(), BusyBox(), true, false), "healthy: 4 GPUs\n");
}

TEST(HealthText, ShortageIsNotAHealthProblem) {
  diagnose::Diagnosis d = HealthyDiagnosis();
  d.server = diagnose::Verdict::kReclaimable;
  d.findings = {MakeFinding("VRAM_EXHAUSTED", {0}, "GPU 0 memory is full"),
                MakeFinding("IDLE_HOLDER", {0}, "PID 1 idle"),
                MakeFinding("XID_APPLICATION", {1}, "GPU 1 application fault (Xid 13)")};
  d.gpus[0].verdict = diagnose::Verdict::kReclaimable;
  d.gpus[0].findings = {0, 1};
  d.gpus[1].findings = {2};
  EXPECT_EQ(RenderHealthText(d, BusyBox(), false, false), "");
  EXPECT_EQ(HealthJson(d, BusyBox())["health"], "healthy");
  // The application Xid is reported with its GPU, even though it is healthy.
  EXPECT_EQ(HealthJson(d, BusyBox())["gpus"][1]["findings"][0]["code"], "XID_APPLICATION");
  EXPECT_TRUE(HealthJson(d, BusyBox())["gpus"][0]["findings"].empty());
}

TEST(HealthText, OneLinePerUnhealthyGpu) {
  const std::string out = RenderHealthText(BusyDiagnosis(), BusyBox(), false, false);
  EXPECT_EQ(out,
            "GPU 3 00000000:5D:00.0 FAULT: fell off the bus (Xid 79) — admin: reboot the node; "
            "vendor: hardware inspection if it recurs [XID_FATAL, GPU_LOST]\n");
  EXPECT_EQ(out.find('\x1b'), std::string::npos);
  const std::string verbose = RenderHealthText(BusyDiagnosis(), BusyBox(), true, false);
  EXPECT_NE(verbose.find("healthy: 3 of 4 GPUs\n"), std::string::npos) << verbose;
  const std::string coloured = RenderHealthText(BusyDiagnosis(), BusyBox(), false, true);
  EXPECT_NE(coloured.find("\x1b[1;31mFAULT:"), std::string::npos);
}

TEST(HealthText, DegradedAndServerLevel) {
  diagnose::Diagnosis d = HealthyDiagnosis();
  diagnose::Finding slow = MakeFinding("HW_SLOWDOWN", {2}, "GPU 2 clocks slowed by hardware");
  diagnose::Finding driver = MakeFinding("DRIVER_NOT_LOADED", {}, "the NVIDIA driver \x1b[31m");
  driver.next_steps = {"admin: modprobe nvidia"};
  d.findings = {driver, slow};
  d.gpus[2].verdict = diagnose::Verdict::kDegraded;
  d.gpus[2].findings = {1};
  const std::string out = RenderHealthText(d, BusyBox(), false, false);
  EXPECT_NE(out.find("GPU 2 00000000:4C:00.0 DEGRADED: clocks slowed by hardware [HW_SLOWDOWN]\n"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("node FAULT: the NVIDIA driver \\x1b[31m — admin: modprobe nvidia "
                     "[DRIVER_NOT_LOADED]\n"),
            std::string::npos)
      << out;
  const json j = HealthJson(d, BusyBox());
  EXPECT_EQ(j["health"], "failed");
  EXPECT_EQ(j["gpus"][2]["health"], "degraded");
  EXPECT_EQ(j["gpus"][0]["health"], "healthy");
  EXPECT_EQ(j["findings"][0]["code"], "DRIVER_NOT_LOADED");
}

TEST(HealthText, UnknownWhenNothingCouldBeLookedAt) {
  diagnose::Diagnosis d;
  d.server = diagnose::Verdict::kUnknown;
  d.summary = "UNKNOWN — no permission";
  Snapshot empty;
  const std::string out = RenderHealthText(d, empty, false, false);
  EXPECT_EQ(out, "node UNKNOWN: UNKNOWN — no permission\n");
  EXPECT_EQ(HealthJson(d, empty)["health"], "unknown");
  EXPECT_EQ(diagnose::AssessHealth(d.findings, empty).overall, diagnose::Health::kUnknown);
}

// Issue 12, class 9: a GPU whose handle answered NO_PERMISSION is not healthy.
TEST(HealthText, AGpuThatCouldNotBeReadIsUnknownAndSaysWhy) {
  Snapshot s = BusyBox();
  Gpu denied;
  denied.index = 1;
  denied.unreachable =
      ProbeError{"nvml", "no_permission",
                 "nvmlDeviceGetHandleByIndex_v2 on GPU 1: Insufficient Permissions", 1u, 4};
  s.gpus[1] = denied;
  const diagnose::Diagnosis d = HealthyDiagnosis();
  const std::string out = RenderHealthText(d, s, false, false);
  EXPECT_EQ(out,
            "GPU 1 N/A UNKNOWN: not read: nvmlDeviceGetHandleByIndex_v2 on GPU 1: Insufficient "
            "Permissions\n");
  const json j = HealthJson(d, s);
  EXPECT_EQ(j["health"], "unknown");
  EXPECT_EQ(j["gpus"][1]["health"], "unknown");
  EXPECT_EQ(j["gpus"][1]["unread"], true);
  EXPECT_EQ(j["gpus"][0]["unread"], false);
  EXPECT_TRUE(j["gpus"][0]["unread_reason"].is_null());
  EXPECT_EQ(j["unread_gpus"], json::array({1}));
  // With the finding the diagnosis makes of it, its message explains the line.
  diagnose::Diagnosis with = d;
  with.findings = {MakeFinding("NO_PERMISSION", {1}, "GPU 1: no permission to read it")};
  EXPECT_EQ(RenderHealthText(with, s, false, false),
            "GPU 1 N/A UNKNOWN: no permission to read it [NO_PERMISSION]\n");
}

TEST(HealthJson, Shape) {
  const json j = HealthJson(BusyDiagnosis(), BusyBox());
  EXPECT_EQ(j["schema"], "gpuwarden.health");
  EXPECT_EQ(j["schema_version"], 1);
  EXPECT_EQ(j["health"], "failed");
  ASSERT_EQ(j["gpus"].size(), 4u);
  EXPECT_EQ(j["gpus"][3]["index"], 3);
  EXPECT_EQ(j["gpus"][3]["pci_bus_id"], "00000000:5D:00.0");
  EXPECT_EQ(j["gpus"][3]["health"], "failed");
  ASSERT_EQ(j["gpus"][3]["findings"].size(), 2u);
  EXPECT_EQ(j["gpus"][3]["findings"][0]["code"], "XID_FATAL");
  // GPU 0 is busy, not unhealthy: its shortage findings are not health findings.
  EXPECT_EQ(j["gpus"][0]["health"], "healthy");
  EXPECT_TRUE(j["gpus"][0]["findings"].empty());
  EXPECT_TRUE(j["findings"].empty());  // PERSISTENCE_OFF is configuration.
  EXPECT_TRUE(j["errors"].is_array());
  const std::string text = RenderHealthJson(BusyDiagnosis(), BusyBox(), false);
  EXPECT_EQ(json::parse(text), j);
}

}  // namespace
}  // namespace gw::render
