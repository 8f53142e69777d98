#include "import/nvsmi_xml.h"
#include "core/units.h"
#include "test_paths.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <thread>

namespace gw::import {
namespace {
std::string TestdataPath(const std::string& name) {
  return gw::test::SourceDir() + "/src/import/testdata/" + name;
}

std::string SamplesDir() { return gw::test::SourceDir() + "/../shared/research/samples/"; }

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

// The dump's <timestamp> is read as local time; every test here runs in UTC.
class UtcEnvironment : public ::testing::Environment {
 public:
  void SetUp() override {
    setenv("TZ", "UTC0", 1);
    tzset();
  }
};
::testing::Environment* const kUtc = ::testing::AddGlobalTestEnvironment(new UtcEnvironment);

const ProbeError* FindError(const Snapshot& s, const std::string& code, Opt<unsigned> gpu) {
  for (const ProbeError& e : s.errors) {
    if (e.code == code && e.gpu_index == gpu) return &e;
  }
  return nullptr;
}

bool Contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// ---------------------------------------------------------------------------
// (a) Real captures, read from ../shared/research/samples/ (never copied here).

class RealSampleTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!std::filesystem::is_directory(SamplesDir())) {
      GTEST_SKIP() << "real nvidia-smi captures live in ../shared/research/samples/ (outside "
                      "this repository) and were not found at "
                   << SamplesDir();
    }
  }
  static Snapshot Load(const std::string& file) {
    auto result = ReadNvidiaSmiXmlFile(SamplesDir() + file);
    EXPECT_TRUE(result.ok()) << (result.ok() ? "" : result.error().message);
    if (!result.ok()) return Snapshot{};
    return std::move(result).value();
  }
};

constexpr char kA100[] = "01_nvidia-smi-q-x_A100-SXM4-80GB_535.54.03_dtd-v12.xml";
constexpr char kAda[] = "02_nvidia-smi-q-x_RTX-4000-SFF-Ada_595.84_dtd-v13.xml";
constexpr char kT4[] = "03_nvidia-smi-q-x_Tesla-T4_515.105.01_dtd-v11.xml";

TEST_F(RealSampleTest, A100V12WithMig) {
  Snapshot s = Load(kA100);
  EXPECT_EQ(s.source, SnapshotSource::kXmlDump);
  EXPECT_EQ(s.source_detail, SamplesDir() + kA100);
  EXPECT_FALSE(s.processes_scanned);
  EXPECT_EQ(s.time_unix_ms, int64_t{1691149470} * 1000);  // Fri Aug  4 11:44:30 2023 UTC.
  EXPECT_EQ(s.system.driver_version, "535.54.03");
  EXPECT_EQ(s.system.cuda_driver_version, 12020);
  EXPECT_EQ(s.system.gpu_count, 4u);
  EXPECT_FALSE(s.system.nvml_version);

  // The capture lists one of its four attached GPUs: reported, not invented.
  ASSERT_EQ(s.gpus.size(), 1u);
  ASSERT_EQ(s.errors.size(), 1u);
  EXPECT_EQ(s.errors[0].code, "gpu_count_mismatch");
  EXPECT_EQ(s.errors[0].source, "xml");

  const Gpu& g = s.gpus[0];
  EXPECT_EQ(g.index, 0u);
  EXPECT_EQ(g.name, "NVIDIA A100-SXM4-80GB");
  EXPECT_EQ(g.uuid, "GPU-513536b6-7d19-9063-b049-1e69664bb298");
  EXPECT_EQ(g.serial, "1650522003820");
  EXPECT_EQ(g.pci_bus_id, "00000000:01:00.0");
  EXPECT_EQ(g.pci_device_id, 0x20B210DEu);
  EXPECT_EQ(g.minor_number, 1u);

  EXPECT_EQ(g.memory.total_bytes, 81920 * kMiB);
  EXPECT_EQ(g.memory.reserved_bytes, 869 * kMiB);
  EXPECT_EQ(g.memory.used_bytes, 50 * kMiB);
  EXPECT_EQ(g.memory.free_bytes, 80999 * kMiB);

  // MIG enabled: utilization and remapped rows are N/A.
  EXPECT_EQ(g.mig_mode_current, true);
  EXPECT_EQ(g.mig_mode_pending, true);
  EXPECT_FALSE(g.utilization_gpu_pct);
  EXPECT_FALSE(g.utilization_memory_pct);
  EXPECT_FALSE(g.remapped_rows.correctable);
  EXPECT_FALSE(g.remapped_rows.uncorrectable);
  EXPECT_FALSE(g.remapped_rows.pending);
  EXPECT_FALSE(g.remapped_rows.failure);
  EXPECT_FALSE(g.retired_pages.single_bit);
  EXPECT_FALSE(g.retired_pages.double_bit);
  EXPECT_FALSE(g.retired_pages.pending);
  EXPECT_FALSE(g.fan_speed_pct);

  EXPECT_EQ(g.temperature_c, 27);
  EXPECT_EQ(g.temperature_slowdown_c, 89);
  EXPECT_EQ(g.temperature_shutdown_c, 92);
  EXPECT_DOUBLE_EQ(*g.power_draw_w, 67.03);
  EXPECT_DOUBLE_EQ(*g.power_limit_w, 500.0);
  EXPECT_EQ(g.clocks.graphics_mhz, 1275u);
  EXPECT_EQ(g.clocks.sm_mhz, 1275u);
  EXPECT_EQ(g.clocks.memory_mhz, 1593u);
  EXPECT_EQ(g.clocks.video_mhz, 1275u);
  EXPECT_EQ(g.clocks.max_graphics_mhz, 1410u);
  EXPECT_EQ(g.clocks.max_sm_mhz, 1410u);
  EXPECT_EQ(g.clocks.max_memory_mhz, 1593u);
  EXPECT_EQ(g.pstate, 0u);
  EXPECT_EQ(g.persistence_mode, false);
  EXPECT_EQ(g.compute_mode, ComputeMode::kDefault);
  EXPECT_EQ(g.ecc.mode_current, true);
  EXPECT_EQ(g.ecc.mode_pending, true);
  EXPECT_EQ(g.ecc.volatile_corrected, 0u);
  EXPECT_EQ(g.ecc.volatile_uncorrected, 0u);
  EXPECT_EQ(g.ecc.aggregate_corrected, 0u);
  EXPECT_EQ(g.ecc.aggregate_uncorrected, 0u);
  EXPECT_EQ(g.clock_event_reasons, 0u);  // clocks_event_reasons, all "Not Active".
  EXPECT_FALSE(g.clock_event_reasons_supported);
  EXPECT_EQ(g.pcie.link_gen_current, 4u);
  EXPECT_EQ(g.pcie.link_gen_max, 4u);
  EXPECT_EQ(g.pcie.link_gen_gpu_max, 4u);
  EXPECT_EQ(g.pcie.link_width_current, 16u);
  EXPECT_EQ(g.pcie.link_width_max, 16u);
  EXPECT_EQ(g.pcie.replay_counter, 0u);

  EXPECT_TRUE(g.processes_known);  // <processes /> is an empty list, not an unknown one.
  EXPECT_TRUE(g.processes.empty());
  EXPECT_FALSE(g.unreachable);
}

TEST_F(RealSampleTest, RtxAdaV13WithProcesses) {
  Snapshot s = Load(kAda);
  EXPECT_EQ(s.time_unix_ms, int64_t{1785978220} * 1000);  // Thu Aug  6 01:03:40 2026 UTC.
  EXPECT_EQ(s.system.driver_version, "595.84");
  EXPECT_EQ(s.system.cuda_driver_version, 13020);
  EXPECT_EQ(s.system.gpu_count, 1u);
  EXPECT_TRUE(s.errors.empty()) << s.errors[0].message;

  ASSERT_EQ(s.gpus.size(), 1u);
  const Gpu& g = s.gpus[0];
  EXPECT_EQ(g.name, "NVIDIA RTX 4000 SFF Ada Generation");
  EXPECT_EQ(g.uuid, "GPU-37037c3f-65c8-ec4d-24a9-420204ad8026");
  EXPECT_EQ(g.serial, "REDACTED");
  EXPECT_EQ(g.pci_bus_id, "00000000:06:00.0");
  EXPECT_EQ(g.pci_device_id, 0x27B010DEu);
  EXPECT_EQ(g.minor_number, 0u);

  EXPECT_EQ(g.memory.total_bytes, 20475 * kMiB);
  EXPECT_EQ(g.memory.reserved_bytes, 460 * kMiB);
  EXPECT_EQ(g.memory.used_bytes, 3534 * kMiB);
  EXPECT_EQ(g.memory.free_bytes, 16482 * kMiB);

  EXPECT_EQ(g.utilization_gpu_pct, 0u);
  EXPECT_EQ(g.utilization_memory_pct, 37u);
  EXPECT_EQ(g.temperature_c, 38);
  // v13 prints only T.Limit-relative thresholds ("-2 C"): not absolute, not used.
  EXPECT_FALSE(g.temperature_slowdown_c);
  EXPECT_FALSE(g.temperature_shutdown_c);
  EXPECT_EQ(g.fan_speed_pct, 30u);
  EXPECT_DOUBLE_EQ(*g.power_draw_w, 8.81);  // average_power_draw; no power_draw in v13.
  EXPECT_DOUBLE_EQ(*g.power_limit_w, 70.0);
  EXPECT_EQ(g.clocks.graphics_mhz, 210u);
  EXPECT_EQ(g.clocks.sm_mhz, 210u);
  EXPECT_EQ(g.clocks.memory_mhz, 405u);
  EXPECT_EQ(g.clocks.video_mhz, 765u);
  EXPECT_EQ(g.clocks.max_graphics_mhz, 3105u);
  EXPECT_EQ(g.clocks.max_sm_mhz, 3105u);
  EXPECT_EQ(g.clocks.max_memory_mhz, 7001u);
  EXPECT_EQ(g.pstate, 8u);
  EXPECT_EQ(g.persistence_mode, true);
  EXPECT_EQ(g.compute_mode, ComputeMode::kDefault);
  EXPECT_FALSE(g.mig_mode_current);
  EXPECT_FALSE(g.mig_mode_pending);
  EXPECT_EQ(g.ecc.mode_current, false);
  EXPECT_EQ(g.ecc.mode_pending, false);
  EXPECT_FALSE(g.ecc.volatile_corrected);  // All N/A with ECC off: unknown, not 0.
  EXPECT_FALSE(g.ecc.volatile_uncorrected);
  EXPECT_FALSE(g.ecc.aggregate_corrected);
  EXPECT_FALSE(g.ecc.aggregate_uncorrected);
  EXPECT_FALSE(g.retired_pages.single_bit);
  EXPECT_FALSE(g.retired_pages.pending);

  // v13 remapped_rows children (plus *_inactive and the histogram, not kept).
  EXPECT_EQ(g.remapped_rows.correctable, 0u);
  EXPECT_EQ(g.remapped_rows.uncorrectable, 0u);
  EXPECT_EQ(g.remapped_rows.pending, false);
  EXPECT_EQ(g.remapped_rows.failure, false);

  EXPECT_EQ(g.clock_event_reasons, clock_event::kGpuIdle);
  EXPECT_EQ(g.pcie.link_gen_current, 1u);
  EXPECT_EQ(g.pcie.link_gen_max, 4u);
  EXPECT_EQ(g.pcie.link_gen_gpu_max, 4u);
  EXPECT_EQ(g.pcie.link_width_current, 16u);
  EXPECT_EQ(g.pcie.link_width_max, 16u);
  EXPECT_EQ(g.pcie.replay_counter, 0u);

  ASSERT_TRUE(g.processes_known);
  ASSERT_EQ(g.processes.size(), 4u);
  const struct {
    pid_t pid;
    GpuProcessType type;
    const char* name;
    uint64_t mib;
  } kWant[] = {
      {1842, GpuProcessType::kGraphics, "cosmic-comp", 410},
      {3190, GpuProcessType::kGraphics, "/usr/bin/code", 451},
      {4937, GpuProcessType::kCompute, "python", 160},
      {34626, GpuProcessType::kComputeAndGraphics, "/usr/lib/chromium/chromium", 183},
  };
  for (size_t i = 0; i < 4; ++i) {
    SCOPED_TRACE(i);
    const GpuProcess& p = g.processes[i];
    EXPECT_EQ(p.pid, kWant[i].pid);
    EXPECT_EQ(p.type, kWant[i].type);
    EXPECT_EQ(p.name, kWant[i].name);
    EXPECT_EQ(p.used_memory_bytes, kWant[i].mib * kMiB);
    EXPECT_FALSE(p.gpu_instance_id);
    EXPECT_FALSE(p.compute_instance_id);
    EXPECT_FALSE(p.sm_util_pct);
  }
}

TEST_F(RealSampleTest, TeslaT4V11WithThrottleReasons) {
  Snapshot s = Load(kT4);
  EXPECT_EQ(s.time_unix_ms, int64_t{1682353359} * 1000);  // Mon Apr 24 16:22:39 2023 UTC.
  EXPECT_EQ(s.system.driver_version, "515.105.01");
  EXPECT_EQ(s.system.cuda_driver_version, 11070);
  EXPECT_EQ(s.system.gpu_count, 1u);
  EXPECT_TRUE(s.errors.empty()) << s.errors[0].message;

  ASSERT_EQ(s.gpus.size(), 1u);
  const Gpu& g = s.gpus[0];
  EXPECT_EQ(g.name, "Tesla T4");
  EXPECT_EQ(g.uuid, "GPU-d37e67a5-91dd-3774-a5cb-99096249601a");
  EXPECT_EQ(g.serial, "0000000000000");
  EXPECT_EQ(g.pci_bus_id, "00000000:00:1E.0");
  EXPECT_EQ(g.pci_device_id, 0x1EB810DEu);
  EXPECT_EQ(g.minor_number, 0u);

  EXPECT_EQ(g.memory.total_bytes, 15360 * kMiB);
  EXPECT_EQ(g.memory.reserved_bytes, 388 * kMiB);
  EXPECT_EQ(g.memory.used_bytes, 1032 * kMiB);
  EXPECT_EQ(g.memory.free_bytes, 13939 * kMiB);

  EXPECT_EQ(g.utilization_gpu_pct, 0u);
  EXPECT_EQ(g.utilization_memory_pct, 0u);
  EXPECT_EQ(g.temperature_c, 40);
  EXPECT_EQ(g.temperature_slowdown_c, 93);
  EXPECT_EQ(g.temperature_shutdown_c, 96);
  EXPECT_FALSE(g.fan_speed_pct);
  // v11: power_readings with enforced_power_limit.
  EXPECT_DOUBLE_EQ(*g.power_draw_w, 26.78);
  EXPECT_DOUBLE_EQ(*g.power_limit_w, 70.0);
  EXPECT_EQ(g.clocks.graphics_mhz, 585u);
  EXPECT_EQ(g.clocks.sm_mhz, 585u);
  EXPECT_EQ(g.clocks.memory_mhz, 5000u);
  EXPECT_EQ(g.clocks.video_mhz, 810u);
  EXPECT_EQ(g.clocks.max_graphics_mhz, 1590u);
  EXPECT_EQ(g.clocks.max_sm_mhz, 1590u);
  EXPECT_EQ(g.clocks.max_memory_mhz, 5001u);
  EXPECT_EQ(g.pstate, 0u);
  EXPECT_EQ(g.persistence_mode, false);
  EXPECT_EQ(g.compute_mode, ComputeMode::kDefault);
  EXPECT_FALSE(g.mig_mode_current);

  EXPECT_EQ(g.ecc.mode_current, true);
  EXPECT_EQ(g.ecc.volatile_corrected, 0u);
  EXPECT_EQ(g.ecc.volatile_uncorrected, 0u);
  EXPECT_EQ(g.ecc.aggregate_corrected, 0u);
  EXPECT_EQ(g.ecc.aggregate_uncorrected, 0u);
  EXPECT_EQ(g.retired_pages.single_bit, 0u);
  EXPECT_EQ(g.retired_pages.double_bit, 0u);
  EXPECT_EQ(g.retired_pages.pending, false);
  EXPECT_FALSE(g.remapped_rows.correctable);  // <remapped_rows>N/A</remapped_rows> on Turing.

  // v11 clocks_throttle_reasons, all "Not Active": a known empty mask.
  ASSERT_TRUE(g.clock_event_reasons);
  EXPECT_EQ(*g.clock_event_reasons, 0u);

  EXPECT_EQ(g.pcie.link_gen_current, 3u);
  EXPECT_EQ(g.pcie.link_gen_max, 3u);
  EXPECT_FALSE(g.pcie.link_gen_gpu_max);  // No max_device_link_gen before v12.
  EXPECT_EQ(g.pcie.link_width_current, 8u);
  EXPECT_EQ(g.pcie.link_width_max, 16u);

  ASSERT_TRUE(g.processes_known);
  ASSERT_EQ(g.processes.size(), 2u);
  EXPECT_EQ(g.processes[0].pid, 675);
  EXPECT_EQ(g.processes[0].type, GpuProcessType::kGraphics);
  EXPECT_EQ(g.processes[0].name, "/usr/lib/xorg/Xorg");
  EXPECT_EQ(g.processes[0].used_memory_bytes, 22 * kMiB);
  EXPECT_EQ(g.processes[1].pid, 5762);
  EXPECT_EQ(g.processes[1].type, GpuProcessType::kCompute);
  EXPECT_EQ(g.processes[1].name, "python");
  EXPECT_EQ(g.processes[1].used_memory_bytes, 1005 * kMiB);
}

// ---------------------------------------------------------------------------
// (b) Hand-written fixtures.

Snapshot LoadFixture(const std::string& name) {
  auto result = ReadNvidiaSmiXmlFile(TestdataPath(name));
  EXPECT_TRUE(result.ok()) << (result.ok() ? "" : result.error().message);
  if (!result.ok()) return Snapshot{};
  return std::move(result).value();
}

TEST(NvsmiXmlTest, MinimalTwoGpuDump) {
  Snapshot s = LoadFixture("minimal_v12_two_gpus.xml");
  EXPECT_EQ(s.time_unix_ms, int64_t{1709024701} * 1000);  // Tue Feb 27 09:05:01 2024 UTC.
  EXPECT_EQ(s.system.driver_version, "550.54.14");
  EXPECT_EQ(s.system.cuda_driver_version, 12040);
  EXPECT_EQ(s.system.gpu_count, 2u);
  EXPECT_TRUE(s.errors.empty()) << s.errors[0].message;
  ASSERT_EQ(s.gpus.size(), 2u);

  const Gpu& a = s.gpus[0];
  EXPECT_EQ(a.index, 0u);
  EXPECT_EQ(a.name, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(a.uuid, "GPU-11111111-2222-3333-4444-555555555555");
  EXPECT_EQ(a.serial, "1654922000001");
  EXPECT_EQ(a.pci_bus_id, "00000000:3B:00.0");
  EXPECT_EQ(a.pci_device_id, 0x233010DEu);
  EXPECT_EQ(a.minor_number, 3u);
  EXPECT_EQ(a.memory.total_bytes, 81559 * kMiB);
  EXPECT_EQ(a.memory.reserved_bytes, 579 * kMiB);
  EXPECT_EQ(a.memory.used_bytes, 40210 * kMiB);
  EXPECT_EQ(a.memory.free_bytes, 40770 * kMiB);
  EXPECT_EQ(a.utilization_gpu_pct, 97u);
  EXPECT_EQ(a.utilization_memory_pct, 41u);
  EXPECT_EQ(a.temperature_c, 71);
  EXPECT_EQ(a.temperature_slowdown_c, 87);
  EXPECT_EQ(a.temperature_shutdown_c, 90);
  EXPECT_FALSE(a.fan_speed_pct);
  EXPECT_DOUBLE_EQ(*a.power_draw_w, 512.25);
  EXPECT_DOUBLE_EQ(*a.power_limit_w, 700.0);
  EXPECT_EQ(a.clocks.graphics_mhz, 1980u);
  EXPECT_EQ(a.clocks.memory_mhz, 2619u);
  EXPECT_EQ(a.clocks.video_mhz, 1755u);
  EXPECT_EQ(a.clocks.max_memory_mhz, 2619u);
  EXPECT_EQ(a.pstate, 2u);
  EXPECT_EQ(a.persistence_mode, true);
  EXPECT_EQ(a.compute_mode, ComputeMode::kExclusiveProcess);
  EXPECT_EQ(a.mig_mode_current, false);
  EXPECT_EQ(a.mig_mode_pending, true);
  EXPECT_EQ(a.ecc.mode_current, true);
  EXPECT_EQ(a.ecc.volatile_corrected, 7u);    // sram 2 + dram 5.
  EXPECT_EQ(a.ecc.volatile_uncorrected, 1u);  // sram 1 + dram 0.
  EXPECT_EQ(a.ecc.aggregate_corrected, 10u);  // sram 10 + dram N/A.
  EXPECT_EQ(a.ecc.aggregate_uncorrected, 4u);
  EXPECT_EQ(a.retired_pages.single_bit, 2u);
  EXPECT_EQ(a.retired_pages.double_bit, 1u);
  EXPECT_EQ(a.retired_pages.pending, true);  // pending_retirement Yes.
  EXPECT_EQ(a.remapped_rows.correctable, 3u);
  EXPECT_EQ(a.remapped_rows.uncorrectable, 1u);
  EXPECT_EQ(a.remapped_rows.pending, true);
  EXPECT_EQ(a.remapped_rows.failure, false);
  EXPECT_EQ(a.clock_event_reasons,
            clock_event::kSwPowerCap | clock_event::kHwSlowdown | clock_event::kHwThermalSlowdown);
  EXPECT_EQ(a.pcie.link_gen_current, 4u);
  EXPECT_EQ(a.pcie.link_gen_max, 5u);
  EXPECT_EQ(a.pcie.link_gen_gpu_max, 5u);
  EXPECT_EQ(a.pcie.link_width_current, 8u);
  EXPECT_EQ(a.pcie.link_width_max, 16u);
  EXPECT_EQ(a.pcie.replay_counter, 17u);

  // PID 4242 is listed as C and as G: one entry, C+G, memory not doubled.
  ASSERT_TRUE(a.processes_known);
  ASSERT_EQ(a.processes.size(), 2u);
  EXPECT_EQ(a.processes[0].pid, 4242);
  EXPECT_EQ(a.processes[0].type, GpuProcessType::kComputeAndGraphics);
  EXPECT_EQ(a.processes[0].name, "python3 train.py --lr 3e-4 & more");
  EXPECT_EQ(a.processes[0].used_memory_bytes, 40000 * kMiB);
  EXPECT_EQ(a.processes[1].pid, 5151);
  EXPECT_EQ(a.processes[1].type, GpuProcessType::kGraphics);
  EXPECT_EQ(a.processes[1].used_memory_bytes, 4 * kMiB);

  const Gpu& b = s.gpus[1];
  EXPECT_EQ(b.index, 1u);
  EXPECT_EQ(b.name, "NVIDIA A100-SXM4-40GB");
  EXPECT_FALSE(b.serial);                       // "N/A".
  EXPECT_EQ(b.pci_bus_id, "00000000:86:00.0");  // From <gpu id=...>: no pci_bus_id.
  EXPECT_EQ(b.pci_device_id, 0x20B010DEu);
  EXPECT_EQ(b.minor_number, 7u);
  EXPECT_EQ(b.memory.total_bytes, 40960 * kMiB);
  EXPECT_EQ(b.memory.reserved_bytes, 571 * kMiB);
  EXPECT_EQ(b.memory.used_bytes, 10 * kMiB);
  EXPECT_EQ(b.memory.free_bytes, 40379 * kMiB);
  EXPECT_FALSE(b.utilization_gpu_pct);
  EXPECT_FALSE(b.clock_event_reasons);  // Every reason N/A: unknown, not "none active".
  EXPECT_FALSE(b.remapped_rows.correctable);
  EXPECT_FALSE(b.ecc.volatile_corrected);  // No ecc_errors section at all.
  EXPECT_EQ(b.ecc.mode_current, true);
  EXPECT_EQ(b.ecc.mode_pending, false);
  EXPECT_DOUBLE_EQ(*b.power_draw_w, 95.5);  // power_draw N/A: average_power_draw.
  EXPECT_DOUBLE_EQ(*b.power_limit_w, 400.0);
  EXPECT_EQ(b.compute_mode, ComputeMode::kProhibited);
  EXPECT_EQ(b.persistence_mode, false);
  EXPECT_EQ(b.mig_mode_current, true);
  EXPECT_FALSE(b.temperature_slowdown_c);
  EXPECT_FALSE(b.pcie.link_gen_gpu_max);

  // Same PID in two MIG instances: two entries, memory unknown (N/A on MIG).
  ASSERT_EQ(b.processes.size(), 2u);
  EXPECT_EQ(b.processes[0].pid, 777);
  EXPECT_EQ(b.processes[0].gpu_instance_id, 1u);
  EXPECT_EQ(b.processes[0].compute_instance_id, 0u);
  EXPECT_FALSE(b.processes[0].used_memory_bytes);
  EXPECT_EQ(b.processes[1].pid, 777);
  EXPECT_EQ(b.processes[1].gpu_instance_id, 2u);
  EXPECT_EQ(b.processes[1].name, "worker");
}

TEST(NvsmiXmlTest, R418EccLayout) {
  Snapshot s = LoadFixture("r418_ecc_layout.xml");
  EXPECT_TRUE(s.errors.empty()) << s.errors[0].message;
  EXPECT_EQ(s.system.cuda_driver_version, 10010);
  ASSERT_EQ(s.gpus.size(), 1u);
  const Gpu& g = s.gpus[0];
  EXPECT_EQ(g.name, "Tesla V100-SXM2-16GB");
  EXPECT_EQ(g.ecc.volatile_corrected, 5u);    // single_bit/total.
  EXPECT_EQ(g.ecc.volatile_uncorrected, 0u);  // double_bit/total.
  EXPECT_EQ(g.ecc.aggregate_corrected, 15u);  // No total: 12 + 0 + 0 + 3.
  EXPECT_EQ(g.ecc.aggregate_uncorrected, 2u);
  EXPECT_EQ(g.memory.total_bytes, 16130 * kMiB);
  EXPECT_FALSE(g.memory.reserved_bytes);  // Not printed before ~R510.
  EXPECT_EQ(g.memory.used_bytes, 0u);
  EXPECT_DOUBLE_EQ(*g.power_draw_w, 42.10);
  EXPECT_DOUBLE_EQ(*g.power_limit_w, 250.0);  // enforced_power_limit, not power_limit.
  EXPECT_EQ(g.clock_event_reasons, clock_event::kGpuIdle | clock_event::kHwSlowdown);
  EXPECT_EQ(g.retired_pages.single_bit, 0u);
  EXPECT_EQ(g.retired_pages.double_bit, 1u);
  EXPECT_EQ(g.retired_pages.pending, false);
  EXPECT_FALSE(g.remapped_rows.correctable);  // No such section before Ampere.
  EXPECT_TRUE(g.processes_known);
  EXPECT_TRUE(g.processes.empty());
}

TEST(NvsmiXmlTest, NvmlErrorStringsBecomeUnknownAndAreReportedOnce) {
  Snapshot s = LoadFixture("nvml_errors_and_lost_gpu.xml");
  ASSERT_EQ(s.gpus.size(), 2u);
  EXPECT_EQ(s.system.gpu_count, 3u);

  const Gpu& g = s.gpus[0];
  EXPECT_EQ(g.name, "Tesla P100-PCIE-16GB");
  EXPECT_EQ(g.memory.total_bytes, 16280 * kMiB);
  EXPECT_FALSE(g.memory.reserved_bytes);  // "[N/A]".
  EXPECT_FALSE(g.memory.used_bytes);      // "Unknown Error": never a fake 0.
  EXPECT_FALSE(g.memory.free_bytes);
  EXPECT_FALSE(g.utilization_gpu_pct);
  EXPECT_FALSE(g.utilization_memory_pct);
  EXPECT_FALSE(g.ecc.mode_current);
  EXPECT_EQ(g.ecc.mode_pending, true);
  EXPECT_FALSE(g.remapped_rows.correctable);
  EXPECT_FALSE(g.temperature_c);
  EXPECT_FALSE(g.fan_speed_pct);
  EXPECT_FALSE(g.unreachable);
  ASSERT_EQ(g.processes.size(), 1u);
  EXPECT_EQ(g.processes[0].pid, 99);
  EXPECT_FALSE(g.processes[0].used_memory_bytes);

  // used, free, current_ecc, 4 remapped-row fields, the process's used_memory.
  const ProbeError* unknown = FindError(s, "unknown_error", 0u);
  ASSERT_NE(unknown, nullptr);
  EXPECT_EQ(unknown->source, "xml");
  EXPECT_EQ(unknown->nvml_return, 999);
  EXPECT_TRUE(Contains(unknown->message, "\"Unknown Error\"")) << unknown->message;
  EXPECT_TRUE(Contains(unknown->message, "fb_memory_usage/used and 7 other fields"))
      << unknown->message;
  EXPECT_EQ(unknown->message.rfind("GPU 0 (00000000:01:00.0): ", 0), 0u) << unknown->message;

  const ProbeError* permission = FindError(s, "no_permission", 0u);
  ASSERT_NE(permission, nullptr);
  EXPECT_EQ(permission->nvml_return, 4);
  EXPECT_TRUE(Contains(permission->message, "utilization/gpu_util")) << permission->message;

  const ProbeError* odd = FindError(s, "unexpected_value", 0u);
  ASSERT_NE(odd, nullptr);
  EXPECT_TRUE(Contains(odd->message, "\"fast\" at fan_speed")) << odd->message;
  EXPECT_FALSE(odd->nvml_return);

  // The lost GPU: unknown everywhere, one error, marked unreachable.
  const Gpu& lost = s.gpus[1];
  EXPECT_EQ(lost.index, 1u);
  EXPECT_FALSE(lost.name);
  EXPECT_FALSE(lost.uuid);
  EXPECT_FALSE(lost.persistence_mode);
  EXPECT_FALSE(lost.memory.total_bytes);
  EXPECT_EQ(lost.pci_bus_id, "00000000:02:00.0");  // From the id attribute.
  EXPECT_FALSE(lost.processes_known);              // <processes>GPU is lost</processes>.
  ASSERT_TRUE(lost.unreachable);
  EXPECT_EQ(lost.unreachable->code, "gpu_lost");
  EXPECT_EQ(lost.unreachable->nvml_return, 15);
  EXPECT_EQ(lost.unreachable->gpu_index, 1u);
  int lost_errors = 0;
  for (const ProbeError& e : s.errors) lost_errors += e.gpu_index == 1u ? 1 : 0;
  EXPECT_EQ(lost_errors, 1);
  EXPECT_TRUE(Contains(lost.unreachable->message, "and 9 other fields"))
      << lost.unreachable->message;

  const ProbeError* mismatch = FindError(s, "gpu_count_mismatch", std::nullopt);
  ASSERT_NE(mismatch, nullptr);
  EXPECT_TRUE(Contains(mismatch->message, "attached_gpus is 3 but the dump describes 2"))
      << mismatch->message;
  EXPECT_EQ(s.errors.size(), 5u);
}

TEST(NvsmiXmlTest, ProcessNameWithEscapesIsKeptRaw) {
  Snapshot s = LoadFixture("escape_in_process_name.xml");
  ASSERT_EQ(s.gpus.size(), 1u);
  ASSERT_EQ(s.gpus[0].processes.size(), 1u);
  const GpuProcess& p = s.gpus[0].processes[0];
  EXPECT_EQ(p.pid, 31337);
  EXPECT_EQ(p.name, "\x1b[2J\x1b[31mevil\x1b]0;pwned\x07\nsecond line ");
  EXPECT_EQ(p.used_memory_bytes, 1 * kMiB);
  EXPECT_EQ(s.time_unix_ms, 0);  // No <timestamp>: unknown, and nothing invented.
  EXPECT_FALSE(s.system.driver_version);
}

TEST(NvsmiXmlTest, TruncatedFileNamesLineAndColumn) {
  const std::string path = TestdataPath("truncated.xml");
  auto result = ReadNvidiaSmiXmlFile(path);
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.error().code, "malformed");
  const std::string& message = result.error().message;
  EXPECT_EQ(message.rfind(path + ": ", 0), 0u) << message;
  // The file ends in "<used>402" on line 59: the parser stops at its end.
  EXPECT_TRUE(Contains(message, "line 59, column 12")) << message;
  EXPECT_TRUE(Contains(message, "truncated")) << message;
}

TEST(NvsmiXmlTest, BinaryFileIsMalformed) {
  auto result = ReadNvidiaSmiXmlFile(TestdataPath("binary.bin"));
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.error().code, "malformed");
  EXPECT_TRUE(Contains(result.error().message, "binary")) << result.error().message;
  EXPECT_TRUE(Contains(result.error().message, "binary.bin")) << result.error().message;
}

TEST(NvsmiXmlTest, WrongRootIsNotNvidiaSmi) {
  auto result = ReadNvidiaSmiXmlFile(TestdataPath("wrong_root.xml"));
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.error().code, "not_nvidia_smi");
  EXPECT_TRUE(Contains(result.error().message, "<rocm_smi_log>")) << result.error().message;
  EXPECT_TRUE(Contains(result.error().message, "wrong_root.xml")) << result.error().message;
}

TEST(NvsmiXmlTest, MissingFileIsNotFound) {
  const std::string path = TestdataPath("no_such_dump.xml");
  auto result = ReadNvidiaSmiXmlFile(path);
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.error().code, "not_found");
  EXPECT_EQ(result.error().message.rfind(path + ": ", 0), 0u) << result.error().message;
}

TEST(NvsmiXmlTest, DirectoryIsUnreadable) {
  auto result = ReadNvidiaSmiXmlFile(TestdataPath(""));
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.error().code, "unreadable");
  EXPECT_TRUE(Contains(result.error().message, "directory")) << result.error().message;
}

class TempDirTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (std::filesystem::temp_directory_path() / "gw_import_XXXXXX").string();
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
  }
  void TearDown() override {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  std::string Write(const std::string& name, const std::string& content) {
    std::string path = dir_ + "/" + name;
    std::ofstream(path, std::ios::binary) << content;
    return path;
  }
  std::string dir_;
};

TEST_F(TempDirTest, EmptyFileIsMalformed) {
  auto result = ReadNvidiaSmiXmlFile(Write("empty.xml", ""));
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.error().code, "malformed");
  EXPECT_TRUE(Contains(result.error().message, "empty")) << result.error().message;
}

TEST_F(TempDirTest, UnreadableFile) {
  if (geteuid() == 0) GTEST_SKIP() << "root reads files whatever their mode";
  std::string path = Write("secret.xml", "<nvidia_smi_log/>");
  ASSERT_EQ(chmod(path.c_str(), 0), 0);
  auto result = ReadNvidiaSmiXmlFile(path);
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.error().code, "unreadable");
}

TEST(NvsmiXmlTest, ReadErrorIsUnreadable) {
  // Opening /proc/self/mem succeeds; reading its address 0 fails with EIO.
  auto result = ReadNvidiaSmiXmlFile("/proc/self/mem");
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.error().code, "unreadable");
  EXPECT_TRUE(Contains(result.error().message, "/proc/self/mem: cannot read: "))
      << result.error().message;
}

TEST_F(TempDirTest, HugeFileIsRefusedWithoutReading) {
  // A sparse file: its size says too large before any byte is read.
  std::string path = Write("huge.xml", "");
  ASSERT_EQ(truncate(path.c_str(), static_cast<off_t>(kMaxXmlBytes + 1)), 0);
  auto result = ReadNvidiaSmiXmlFile(path);
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.error().code, "too_large");
  EXPECT_TRUE(Contains(result.error().message, "256 MiB")) << result.error().message;
}

TEST(NvsmiXmlTest, StreamPastTheCapIsRefused) {
  // /dev/zero has no size: the cap must stop the read itself.
  auto result = internal::ReadNvidiaSmiXmlFile("/dev/zero", 1 << 20);
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.error().code, "too_large");
  EXPECT_TRUE(Contains(result.error().message, "more than 1 MiB")) << result.error().message;
}

TEST(NvsmiXmlTest, CapIsInclusive) {
  const std::string path = TestdataPath("minimal_v12_two_gpus.xml");
  const uint64_t size = std::filesystem::file_size(path);
  EXPECT_TRUE(internal::ReadNvidiaSmiXmlFile(path, size).ok());
  auto over = internal::ReadNvidiaSmiXmlFile(path, size - 1);
  ASSERT_FALSE(over.ok());
  EXPECT_EQ(over.error().code, "too_large");

  const std::string xml = ReadAll(path);
  EXPECT_TRUE(internal::ParseNvidiaSmiXml(xml, "x.xml", xml.size()).ok());
  auto in_memory = internal::ParseNvidiaSmiXml(xml, "x.xml", xml.size() - 1);
  ASSERT_FALSE(in_memory.ok());
  EXPECT_EQ(in_memory.error().code, "too_large");
  EXPECT_TRUE(Contains(in_memory.error().message, std::to_string(xml.size()) + " bytes"))
      << in_memory.error().message;
}

TEST_F(TempDirTest, ReadsFromAPipe) {
  // As with `gpuwarden status --from <(ssh host nvidia-smi -q -x)`.
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  std::string content = ReadAll(TestdataPath("minimal_v12_two_gpus.xml"));
  ASSERT_FALSE(content.empty());
  std::thread writer([&] {
    size_t done = 0;
    while (done < content.size()) {
      ssize_t n = write(fds[1], content.data() + done, content.size() - done);
      if (n <= 0) break;
      done += static_cast<size_t>(n);
    }
    close(fds[1]);
  });
  auto result = ReadNvidiaSmiXmlFile("/dev/fd/" + std::to_string(fds[0]));
  writer.join();
  close(fds[0]);
  ASSERT_TRUE(result.ok()) << result.error().message;
  EXPECT_EQ(result->gpus.size(), 2u);
}

TEST(NvsmiXmlTest, TextThatIsNotXmlSaysWhatItIs) {
  auto failed = ParseNvidiaSmiXml(
      "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure "
      "that the latest NVIDIA driver is installed and running.\n",
      "capture.xml");
  ASSERT_FALSE(failed.ok());
  EXPECT_EQ(failed.error().code, "not_nvidia_smi");
  EXPECT_TRUE(Contains(failed.error().message, "error message")) << failed.error().message;

  auto text = ParseNvidiaSmiXml(
      "\n==============NVSMI LOG==============\n\nTimestamp : Fri Jun 21 02:03:08 2024\n",
      "capture.xml");
  ASSERT_FALSE(text.ok());
  EXPECT_EQ(text.error().code, "not_nvidia_smi");
  EXPECT_TRUE(Contains(text.error().message, "nvidia-smi -q -x")) << text.error().message;

  auto junk = ParseNvidiaSmiXml("hello \x1b[2J world", "capture.xml");
  ASSERT_FALSE(junk.ok());
  EXPECT_EQ(junk.error().code, "not_nvidia_smi");
  EXPECT_TRUE(Contains(junk.error().message, "\\x1b[2J")) << junk.error().message;
  EXPECT_FALSE(Contains(junk.error().message, "\x1b")) << "escape must not reach a terminal";
}

TEST(NvsmiXmlTest, OtherBadInputs) {
  auto spaces = ParseNvidiaSmiXml(" \n\t\n", "x.xml");
  ASSERT_FALSE(spaces.ok());
  EXPECT_EQ(spaces.error().code, "malformed");

  auto gzip = ParseNvidiaSmiXml(std::string_view("\x1f\x8b\x08\x00junk", 8), "x.xml.gz");
  ASSERT_FALSE(gzip.ok());
  EXPECT_EQ(gzip.error().code, "malformed");
  EXPECT_TRUE(Contains(gzip.error().message, "gzip")) << gzip.error().message;

  auto mismatch =
      ParseNvidiaSmiXml("<nvidia_smi_log>\n  <gpu>\n  </gpux>\n</nvidia_smi_log>\n", "x.xml");
  ASSERT_FALSE(mismatch.ok());
  EXPECT_EQ(mismatch.error().code, "malformed");
  EXPECT_TRUE(Contains(mismatch.error().message, "line 3")) << mismatch.error().message;
  EXPECT_FALSE(Contains(mismatch.error().message, "truncated")) << mismatch.error().message;
}

TEST(NvsmiXmlTest, EmptyRootIsAValidDumpOfNoGpus) {
  auto result = ParseNvidiaSmiXml("<nvidia_smi_log>\n</nvidia_smi_log>\n", "x.xml");
  ASSERT_TRUE(result.ok()) << result.error().message;
  EXPECT_TRUE(result->gpus.empty());
  EXPECT_FALSE(result->system.gpu_count);
  // nvidia-smi always writes its <timestamp>: without one the age of
  // kernel-log events cannot be judged, and the dump says so.
  ASSERT_EQ(result->errors.size(), 1u);
  EXPECT_EQ(result->errors[0].code, "no_timestamp");
  EXPECT_TRUE(Contains(result->errors[0].message, "x.xml: no <timestamp>"))
      << result->errors[0].message;
  EXPECT_EQ(result->source_detail, "x.xml");
}

// `nvidia-smi -q -x >> FILE` twice: judging the first dump would give a
// confident verdict of an old moment.
TEST(NvsmiXmlTest, AppendedDumpsAreNotOneDump) {
  const std::string one =
      "<nvidia_smi_log><timestamp>Tue Mar 10 14:00:00 2026</timestamp></nvidia_smi_log>\n";
  auto result = ParseNvidiaSmiXml("<?xml version=\"1.0\" ?>\n" + one + one, "x.xml");
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.error().code, "not_one_dump");
  EXPECT_TRUE(Contains(result.error().message, "x.xml: holds 2 XML documents"))
      << result.error().message;
}

// Readings no GPU can give are broken fields, never a confident verdict:
// more memory used than there is, 250 % utilisation, 9999 C.
TEST(NvsmiXmlTest, ImpossibleReadingsAreUnknownAndReported) {
  auto result = ParseNvidiaSmiXml(
      "<nvidia_smi_log><timestamp>Tue Mar 10 14:00:00 2026</timestamp><gpu id=\"00000000:07:00.0\">"
      "<fb_memory_usage><total>81920 MiB</total><reserved>512 MiB</reserved>"
      "<used>90000 MiB</used><free>0 MiB</free></fb_memory_usage>"
      "<utilization><gpu_util>250 %</gpu_util><memory_util>40 %</memory_util></utilization>"
      "<temperature><gpu_temp>9999 C</gpu_temp></temperature>"
      "</gpu></nvidia_smi_log>",
      "x.xml");
  ASSERT_TRUE(result.ok()) << result.error().message;
  ASSERT_EQ(result->gpus.size(), 1u);
  const Gpu& g = result->gpus[0];
  EXPECT_EQ(g.memory.total_bytes, uint64_t{81920} << 20);
  EXPECT_FALSE(g.memory.used_bytes);
  EXPECT_FALSE(g.memory.free_bytes);
  EXPECT_FALSE(g.utilization_gpu_pct);
  EXPECT_EQ(g.utilization_memory_pct, 40u);
  EXPECT_FALSE(g.temperature_c);
  std::string all;
  for (const ProbeError& e : result->errors) all += e.message + "\n";
  EXPECT_TRUE(Contains(all, "fb_memory_usage/used")) << all;
  EXPECT_TRUE(Contains(all, "in total")) << all;
  EXPECT_TRUE(Contains(all, "utilization/gpu_util")) << all;
  EXPECT_TRUE(Contains(all, "temperature/gpu_temp")) << all;
}

TEST(NvsmiXmlTest, UnreadableTimestampIsReportedNotInvented) {
  auto result = ParseNvidiaSmiXml(
      "<nvidia_smi_log><timestamp>2024/06/20 21:24:53</timestamp>"
      "<cuda_version>twelve</cuda_version></nvidia_smi_log>",
      "x.xml");
  ASSERT_TRUE(result.ok()) << result.error().message;
  EXPECT_EQ(result->time_unix_ms, 0);
  EXPECT_FALSE(result->system.cuda_driver_version);
  ASSERT_EQ(result->errors.size(), 2u);
  EXPECT_EQ(result->errors[0].code, "unexpected_value");
  EXPECT_FALSE(result->errors[0].gpu_index);
  EXPECT_TRUE(Contains(result->errors[0].message, "cuda_version")) << result->errors[0].message;
  EXPECT_TRUE(Contains(result->errors[1].message, "timestamp")) << result->errors[1].message;
}

TEST(NvsmiXmlTest, Utf16WithBomIsRead) {
  // PowerShell's `>` writes UTF-16LE with a BOM.
  std::string utf8 = ReadAll(TestdataPath("minimal_v12_two_gpus.xml"));
  ASSERT_FALSE(utf8.empty());
  std::string utf16 = "\xFF\xFE";
  for (char c : utf8) {  // The fixture is ASCII.
    utf16 += c;
    utf16 += '\0';
  }
  auto result = ParseNvidiaSmiXml(utf16, "windows.xml");
  ASSERT_TRUE(result.ok()) << result.error().message;
  ASSERT_EQ(result->gpus.size(), 2u);
  EXPECT_EQ(result->gpus[0].memory.used_bytes, 40210 * kMiB);

  auto with_utf8_bom = ParseNvidiaSmiXml("\xEF\xBB\xBF" + utf8, "bom.xml");
  ASSERT_TRUE(with_utf8_bom.ok()) << with_utf8_bom.error().message;
  EXPECT_EQ(with_utf8_bom->gpus.size(), 2u);
}

TEST(NvsmiXmlTest, AbsurdGpuCountIsRefused) {
  std::string xml = "<nvidia_smi_log>";
  for (int i = 0; i < 4097; ++i) xml += "<gpu/>";
  xml += "</nvidia_smi_log>";
  auto result = ParseNvidiaSmiXml(xml, "many.xml");
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.error().code, "malformed");
  EXPECT_TRUE(Contains(result.error().message, "more than 4096 GPUs")) << result.error().message;
}

TEST(NvsmiXmlTest, ManyProcessEntriesAreMergedByKey) {
  std::string xml = "<nvidia_smi_log><gpu><processes>";
  for (int i = 0; i < 20000; ++i) {
    xml += "<process_info><pid>" + std::to_string(1 + i % 10000) + "</pid><type>" +
           (i < 10000 ? "C" : "G") + "</type></process_info>";
  }
  xml += "</processes></gpu></nvidia_smi_log>";
  auto result = ParseNvidiaSmiXml(xml, "busy.xml");
  ASSERT_TRUE(result.ok()) << result.error().message;
  ASSERT_EQ(result->gpus.size(), 1u);
  ASSERT_EQ(result->gpus[0].processes.size(), 10000u);
  EXPECT_EQ(result->gpus[0].processes[9999].pid, 10000);
  EXPECT_EQ(result->gpus[0].processes[9999].type, GpuProcessType::kComputeAndGraphics);
}

TEST(NvsmiXmlTest, DeepNestingDoesNotExhaustTheStack) {
  std::string xml = "<nvidia_smi_log><gpu>";
  for (int i = 0; i < 200000; ++i) xml += "<a>";
  for (int i = 0; i < 200000; ++i) xml += "</a>";
  xml += "<uuid>GPU-x</uuid></gpu></nvidia_smi_log>";
  auto result = ParseNvidiaSmiXml(xml, "deep.xml");
  ASSERT_TRUE(result.ok()) << result.error().message;
  ASSERT_EQ(result->gpus.size(), 1u);
  EXPECT_EQ(result->gpus[0].uuid, "GPU-x");
}

// ---------------------------------------------------------------------------
// (c) Robustness: cut and damaged dumps give an error or a snapshot, never a crash.

void ExpectCleanOutcome(const Result<Snapshot>& result, const std::string& name) {
  static const std::set<std::string> kCodes = {"malformed", "not_nvidia_smi"};
  if (result.ok()) {
    EXPECT_EQ(result->source, SnapshotSource::kXmlDump);
    EXPECT_EQ(result->source_detail, name);
  } else {
    EXPECT_TRUE(kCodes.count(result.error().code)) << result.error().code;
    EXPECT_EQ(result.error().message.rfind(name + ": ", 0), 0u) << result.error().message;
  }
}

void TruncateAtManyOffsets(const std::string& xml, const std::string& name) {
  ASSERT_GT(xml.size(), 200u);
  const size_t root_end = xml.rfind("</nvidia_smi_log>");
  ASSERT_NE(root_end, std::string::npos);
  const size_t complete = root_end + std::string("</nvidia_smi_log>").size();
  std::mt19937 rng(20240229);
  std::uniform_int_distribution<size_t> any_offset(0, xml.size());
  for (int i = 0; i < 200; ++i) {
    // Half evenly spread, half random (fixed seed: reproducible).
    size_t cut = i % 2 == 0 ? xml.size() * static_cast<size_t>(i) / 200 : any_offset(rng);
    SCOPED_TRACE("cut at " + std::to_string(cut));
    auto result = ParseNvidiaSmiXml(std::string_view(xml).substr(0, cut), name);
    ExpectCleanOutcome(result, name);
    if (cut < complete) {
      EXPECT_FALSE(result.ok());
    }
    if (!result.ok() && result.error().code == "malformed" && cut > 0) {
      EXPECT_TRUE(Contains(result.error().message, "truncated")) << result.error().message;
    }
  }
  EXPECT_TRUE(ParseNvidiaSmiXml(xml, name).ok());
}

void MutateManyTimes(const std::string& xml, const std::string& name) {
  static constexpr char kBytes[] = "<>/&;\"'=!?[]-0123456789 .%\n\x1b\x80\xff aZ";
  std::mt19937 rng(7);
  std::uniform_int_distribution<size_t> position(0, xml.size() - 1);
  std::uniform_int_distribution<size_t> byte(0, sizeof(kBytes) - 2);
  for (int i = 0; i < 200; ++i) {
    std::string damaged = xml;
    for (int k = 0; k < 1 + i % 8; ++k) damaged[position(rng)] = kBytes[byte(rng)];
    ExpectCleanOutcome(ParseNvidiaSmiXml(damaged, name), name);
  }
}

TEST(NvsmiXmlRobustnessTest, TruncatedFixture) {
  TruncateAtManyOffsets(ReadAll(TestdataPath("minimal_v12_two_gpus.xml")), "fixture.xml");
}

TEST(NvsmiXmlRobustnessTest, DamagedFixture) {
  MutateManyTimes(ReadAll(TestdataPath("minimal_v12_two_gpus.xml")), "fixture.xml");
}

TEST_F(RealSampleTest, TruncatedSamples) {
  for (const char* file : {kA100, kAda, kT4}) {
    SCOPED_TRACE(file);
    TruncateAtManyOffsets(ReadAll(SamplesDir() + file), file);
  }
}

TEST_F(RealSampleTest, DamagedSamples) {
  for (const char* file : {kA100, kAda, kT4}) {
    SCOPED_TRACE(file);
    MutateManyTimes(ReadAll(SamplesDir() + file), file);
  }
}

}  // namespace
}  // namespace gw::import
