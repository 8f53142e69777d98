// Compute mode, MIG, persistence, CUDA_VISIBLE_DEVICES and CUDA_DEVICE_ORDER.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "diagnose/rules.h"
#include "diagnose/test_util.h"

namespace gw::diagnose {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using namespace fixtures;  // NOLINT

TEST(ComputeModeTest, ExclusiveAndTaken) {
  Snapshot s = HealthyServer(3);
  GpuAt(s, 0)->compute_mode = ComputeMode::kExclusiveProcess;
  AddProcess(s, {.pid = 300, .gpu = 0, .bytes = 2 * kGiB, .user = "dave"});
  GpuAt(s, 1)->compute_mode = ComputeMode::kExclusiveProcess;  // Free: nothing to say.
  auto findings = RunOne(s);
  ASSERT_EQ(Count(findings, "COMPUTE_MODE_EXCLUSIVE"), 1u);
  const Finding& f = *Find(findings, "COMPUTE_MODE_EXCLUSIVE");
  EXPECT_THAT(f.gpus, ElementsAre(0));
  EXPECT_THAT(f.pids, ElementsAre(300));
  EXPECT_THAT(f.message, HasSubstr("all CUDA-capable devices are busy or unavailable"));
  EXPECT_THAT(f.next_steps, ::testing::Contains("Wait for PID 300 to finish, or ask its owner"));
  EXPECT_THAT(f.next_steps,
              ::testing::Contains("admin: allow sharing: sudo nvidia-smi -i 0 -c DEFAULT"));
}

TEST(ComputeModeTest, Prohibited) {
  Snapshot s = HealthyServer(2);
  GpuAt(s, 1)->compute_mode = ComputeMode::kProhibited;
  auto findings = RunOne(s);
  ASSERT_EQ(Count(findings, "COMPUTE_MODE_PROHIBITED"), 1u);
  EXPECT_THAT(Find(findings, "COMPUTE_MODE_PROHIBITED")->gpus, ElementsAre(1));
  GpuAt(s, 1)->compute_mode.reset();
  EXPECT_EQ(Count(RunOne(s), "COMPUTE_MODE_PROHIBITED"), 0u);
}

TEST(MigTest, Enabled) {
  Snapshot s = HealthyServer(2);
  GpuAt(s, 1)->mig_mode_current = true;
  auto findings = RunOne(s);
  ASSERT_EQ(Count(findings, "MIG_ENABLED"), 1u);
  EXPECT_EQ(Find(findings, "MIG_ENABLED")->severity, Severity::kInfo);
  GpuAt(s, 1)->mig_mode_current.reset();
  EXPECT_EQ(Count(RunOne(s), "MIG_ENABLED"), 0u);
}

TEST(PersistenceTest, OffOnSomeGpus) {
  Snapshot s = HealthyServer(4);
  GpuAt(s, 1)->persistence_mode = false;
  GpuAt(s, 3)->persistence_mode = false;
  GpuAt(s, 2)->persistence_mode.reset();  // Unknown: not "off".
  auto findings = RunOne(s);
  ASSERT_EQ(Count(findings, "PERSISTENCE_OFF"), 1u);
  const Finding& f = *Find(findings, "PERSISTENCE_OFF");
  EXPECT_THAT(f.gpus, ElementsAre(1, 3));
  EXPECT_EQ(f.actor, Actor::kAdmin);
  EXPECT_THAT(f.next_steps,
              ::testing::Contains("admin: sudo systemctl enable --now nvidia-persistenced"));
}

DiagnoseOptions Cvd(std::string value, Opt<std::string> order = std::nullopt) {
  DiagnoseOptions o;
  o.cuda_visible_devices = std::move(value);
  o.cuda_device_order = std::move(order);
  return o;
}

TEST(CudaVisibleDevicesTest, UnsetOrFineSaysNothing) {
  Snapshot s = HealthyServer(4);
  for (const auto& findings : {RunOne(s), RunOne(s, Cvd("0,1")), RunOne(s, Cvd("GPU-000abc02")),
                               RunOne(s, Cvd("3,2,1,0"))}) {
    for (const Finding& f : findings) {
      EXPECT_EQ(f.code.rfind("CUDA_VISIBLE_DEVICES", 0), std::string::npos) << f.message;
    }
  }
}

TEST(CudaVisibleDevicesTest, None) {
  Snapshot s = HealthyServer(4);
  for (const char* value : {"", "-1", "7", "GPU-ffff", "NoDevFiles"}) {
    auto findings = RunOne(s, Cvd(value));
    ASSERT_EQ(Count(findings, "CUDA_VISIBLE_DEVICES_NONE"), 1u) << value;
    EXPECT_THAT(Find(findings, "CUDA_VISIBLE_DEVICES_NONE")->message,
                HasSubstr(std::string("CUDA_VISIBLE_DEVICES=\"") + value + "\" selects no GPU"));
  }
  // A UUID prefix that matches every GPU is ambiguous: CUDA rejects it.
  EXPECT_EQ(Count(RunOne(s, Cvd("GPU-000abc")), "CUDA_VISIBLE_DEVICES_NONE"), 1u);
}

TEST(CudaVisibleDevicesTest, InvalidEntryDropsTheRest) {
  Snapshot s = HealthyServer(4);
  auto findings = RunOne(s, Cvd("0,9,1"));
  ASSERT_EQ(Count(findings, "CUDA_VISIBLE_DEVICES_INVALID"), 1u);
  EXPECT_THAT(Find(findings, "CUDA_VISIBLE_DEVICES_INVALID")->message,
              HasSubstr("\"9\" is not a GPU of this server, so CUDA ignores it and everything "
                        "after it (9,1)"));
  EXPECT_EQ(Count(findings, "CUDA_VISIBLE_DEVICES_NONE"), 0u);
}

TEST(CudaVisibleDevicesTest, OnlyBusyGpusSelected) {
  Snapshot s = HealthyServer(4);
  for (unsigned g : {0u, 1u}) {
    AddProcess(s, {.pid = static_cast<pid_t>(100 + g), .gpu = g, .bytes = 79 * kGiB});
  }
  auto findings = RunOne(s, Cvd("0,1"));
  ASSERT_EQ(Count(findings, "CUDA_VISIBLE_DEVICES_BUSY"), 1u);
  const Finding& f = *Find(findings, "CUDA_VISIBLE_DEVICES_BUSY");
  EXPECT_THAT(f.gpus, ElementsAre(0, 1));
  EXPECT_THAT(f.message, HasSubstr("selects only busy GPU 0,1, while GPU 2,3 are free"));
  EXPECT_THAT(f.next_steps,
              ::testing::Contains("export CUDA_DEVICE_ORDER=PCI_BUS_ID CUDA_VISIBLE_DEVICES=2,3"));
  // One selected GPU is free: fine.
  EXPECT_EQ(Count(RunOne(s, Cvd("0,2")), "CUDA_VISIBLE_DEVICES_BUSY"), 0u);
  // By UUID too.
  EXPECT_EQ(Count(RunOne(s, Cvd("GPU-000abc01")), "CUDA_VISIBLE_DEVICES_BUSY"), 1u);
  // MIG instances cannot be judged from the parent GPU.
  EXPECT_EQ(Count(RunOne(s, Cvd("MIG-1234")), "CUDA_VISIBLE_DEVICES_BUSY"), 0u);
  // An offline dump is not the caller's server.
  s.source = SnapshotSource::kXmlDump;
  EXPECT_EQ(Count(RunOne(s, Cvd("")), "CUDA_VISIBLE_DEVICES_NONE"), 0u);
  EXPECT_EQ(Count(RunOne(s, Cvd("0,1")), "CUDA_VISIBLE_DEVICES_BUSY"), 0u);
}

TEST(CudaVisibleDevicesTest, OrderOnMixedModels) {
  Snapshot s = HealthyServer(3);
  GpuAt(s, 2)->name = "NVIDIA RTX A6000";
  auto findings = RunOne(s, Cvd("1"));
  ASSERT_EQ(Count(findings, "CUDA_VISIBLE_DEVICES_ORDER"), 1u);
  EXPECT_THAT(Find(findings, "CUDA_VISIBLE_DEVICES_ORDER")->next_steps,
              ElementsAre("export CUDA_DEVICE_ORDER=PCI_BUS_ID"));
  EXPECT_EQ(Count(RunOne(s, Cvd("1", "PCI_BUS_ID")), "CUDA_VISIBLE_DEVICES_ORDER"), 0u);
  EXPECT_EQ(Count(RunOne(s, Cvd("GPU-000abc01")), "CUDA_VISIBLE_DEVICES_ORDER"), 0u);
  GpuAt(s, 2)->name = "NVIDIA H100 80GB HBM3";
  EXPECT_EQ(Count(RunOne(s, Cvd("1")), "CUDA_VISIBLE_DEVICES_ORDER"), 0u);
}

}  // namespace
}  // namespace gw::diagnose
