// End-to-end tests of the NVML binding against gpuwarden's simulated
// libnvidia-ml.so.1 (sim/, docs/scenarios.md): the real dlopen loader, the
// collector and the probe, with scenarios written by the tests (exact values)
// or shipped in scenarios/.
//
// The simulator reads GPUWARDEN_SIM_SCENARIO when NVML's reference count goes
// from 0 to 1, and a probe shuts NVML down when it ends. Every probe here
// therefore waits for its worker (WaitForProbeWorkers) before the next one, so
// each test's scenario is the one read, even when all tests share a process.

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <string>

#include <gtest/gtest.h>

#include "core/units.h"
#include "nvml/entry_points.h"
#include "nvml/nvml_library.h"
#include "nvml/probe.h"
#include "os/os_test_util.h"
#include "test_paths.h"

namespace gw::nvml {
namespace {

const std::string kSimLib = gw::test::BinaryDir() + "/sim/libnvidia-ml.so.1";
const std::string kLegacyLib = gw::test::BinaryDir() + "/sim/legacy/libnvidia-ml.so.1";
class SimTest : public ::testing::Test {
 protected:
  void SetUp() override {
    unsetenv("GPUWARDEN_SIM_BLOCK_SCALE");
    unsetenv("GPUWARDEN_SIM_START");
  }
  void TearDown() override { unsetenv("GPUWARDEN_SIM_SCENARIO"); }

  // Writes `json` to a scenario file in this test's own directory, which
  // goes when the test ends, and returns its path.
  std::string WriteScenario(const std::string& json) {
    std::string path = dir_.Path("scenario_" + std::to_string(++files_) + ".json");
    std::ofstream(path) << json;
    return path;
  }

  Snapshot Probe(const std::string& scenario, const std::string& library = kSimLib,
                 int64_t deadline_ms = 30000) {
    setenv("GPUWARDEN_SIM_SCENARIO", scenario.c_str(), 1);
    ProbeOptions options;
    options.library_path = library;
    options.deadline_ms = deadline_ms;
    Snapshot snapshot = ProbeNvml(options, clock_).snapshot;
    EXPECT_TRUE(WaitForProbeWorkers(60000)) << "a probe worker is still running";
    return snapshot;
  }

  static std::string Shipped(const char* name) {
    return gw::test::SourceDir() + "/scenarios/" + name;
  }

  RealClock clock_;
  os::testing::TempDir dir_;
  int files_ = 0;
};

// One GPU with every field the scenario format has, each a distinct value.
constexpr char kFullGpu[] = R"({
  "name": "full",
  "driver": {"version": "550.90.07", "nvml_version": "12.550.90.07", "cuda_version": 12040},
  "gpus": [{
    "name": "NVIDIA H100 80GB HBM3",
    "uuid": "GPU-11111111-2222-3333-4444-555555555555",
    "serial": "1650123456789",
    "pci_bus_id": "00000000:19:00.0",
    "pci_device_id": "0x233010DE",
    "pci_subsystem_id": "0x16C110DE",
    "minor_number": 3,
    "memory": {"total_mib": 81559, "used_mib": 1000, "reserved_mib": 551},
    "utilization": {"gpu": 97, "memory": 41},
    "temperature_c": 71, "temperature_slowdown_c": 87, "temperature_shutdown_c": 92,
    "fan_pct": 55,
    "power_w": 512.5, "power_limit_w": 700,
    "clocks_mhz": {"graphics": 1980, "sm": 1975, "memory": 2619, "video": 1545},
    "max_clocks_mhz": {"graphics": 1985, "sm": 1986, "memory": 2620, "video": 1546},
    "pstate": 2,
    "persistence_mode": true,
    "compute_mode": "exclusive_process",
    "mig": {"current": false, "pending": true},
    "ecc": {"current": true, "pending": false,
            "volatile": {"corrected": 5, "uncorrected": 1},
            "aggregate": {"corrected": 50, "uncorrected": 2}},
    "retired_pages": {"single_bit": 3, "double_bit": 1, "pending": true},
    "remapped_rows": {"correctable": 4, "uncorrectable": 6, "pending": true, "failure": false},
    "clock_event_reasons": ["sw_power_cap", "hw_thermal_slowdown"],
    "clock_event_reasons_supported": "0x1FF",
    "pcie": {"gen_current": 4, "gen_max": 5, "gen_gpu_max": 5,
             "width_current": 8, "width_max": 16, "replay_counter": 12},
    "nvlinks": [true, false, true],
    "processes": [
      {"pid": 4242, "used_mib": 70000, "sm_pct": 88, "mem_pct": 33},
      {"pid": 4243, "used_mib": null, "type": "compute+graphics"},
      {"pid": 4244, "used_mib": 10, "type": "graphics", "sm_pct": 5, "mem_pct": 1}
    ]
  }]
})";

TEST_F(SimTest, ValuesAreReadExactly) {
  Snapshot s = Probe(WriteScenario(kFullGpu));
  EXPECT_TRUE(s.errors.empty()) << s.errors[0].message;
  EXPECT_FALSE(s.timed_out);
  EXPECT_EQ(s.source, SnapshotSource::kSimulated);
  EXPECT_EQ(s.system.driver_version, "550.90.07");
  EXPECT_EQ(s.system.nvml_version, "12.550.90.07");
  EXPECT_EQ(s.system.cuda_driver_version, 12040);
  EXPECT_EQ(s.system.gpu_count, 1u);
  ASSERT_EQ(s.gpus.size(), 1u);
  const Gpu& g = s.gpus[0];
  EXPECT_FALSE(g.unreachable.has_value());
  EXPECT_EQ(g.name, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(g.uuid, "GPU-11111111-2222-3333-4444-555555555555");
  EXPECT_EQ(g.serial, "1650123456789");
  EXPECT_EQ(g.pci_bus_id, "00000000:19:00.0");
  EXPECT_EQ(g.pci_device_id, 0x233010DEu);
  EXPECT_EQ(g.minor_number, 3u);
  EXPECT_EQ(g.memory.total_bytes, 81559 * kMiB);
  EXPECT_EQ(g.memory.used_bytes, 1000 * kMiB);
  EXPECT_EQ(g.memory.reserved_bytes, 551 * kMiB);
  EXPECT_EQ(g.memory.free_bytes, (81559 - 1000 - 551) * kMiB);
  EXPECT_EQ(g.utilization_gpu_pct, 97u);
  EXPECT_EQ(g.utilization_memory_pct, 41u);
  EXPECT_EQ(g.temperature_c, 71);
  EXPECT_EQ(g.temperature_slowdown_c, 87);
  EXPECT_EQ(g.temperature_shutdown_c, 92);
  EXPECT_EQ(g.fan_speed_pct, 55u);
  EXPECT_DOUBLE_EQ(g.power_draw_w.value_or(-1), 512.5);
  EXPECT_DOUBLE_EQ(g.power_limit_w.value_or(-1), 700.0);
  EXPECT_EQ(g.clocks.graphics_mhz, 1980u);
  EXPECT_EQ(g.clocks.sm_mhz, 1975u);
  EXPECT_EQ(g.clocks.memory_mhz, 2619u);
  EXPECT_EQ(g.clocks.video_mhz, 1545u);
  EXPECT_EQ(g.clocks.max_graphics_mhz, 1985u);
  EXPECT_EQ(g.clocks.max_sm_mhz, 1986u);
  EXPECT_EQ(g.clocks.max_memory_mhz, 2620u);
  EXPECT_EQ(g.pstate, 2u);
  EXPECT_EQ(g.persistence_mode, true);
  EXPECT_EQ(g.compute_mode, ComputeMode::kExclusiveProcess);
  EXPECT_EQ(g.mig_mode_current, false);
  EXPECT_EQ(g.mig_mode_pending, true);
  EXPECT_EQ(g.ecc.mode_current, true);
  EXPECT_EQ(g.ecc.mode_pending, false);
  EXPECT_EQ(g.ecc.volatile_corrected, 5u);
  EXPECT_EQ(g.ecc.volatile_uncorrected, 1u);
  EXPECT_EQ(g.ecc.aggregate_corrected, 50u);
  EXPECT_EQ(g.ecc.aggregate_uncorrected, 2u);
  EXPECT_EQ(g.retired_pages.single_bit, 3u);
  EXPECT_EQ(g.retired_pages.double_bit, 1u);
  EXPECT_EQ(g.retired_pages.pending, true);
  EXPECT_EQ(g.remapped_rows.correctable, 4u);
  EXPECT_EQ(g.remapped_rows.uncorrectable, 6u);
  EXPECT_EQ(g.remapped_rows.pending, true);
  EXPECT_EQ(g.remapped_rows.failure, false);
  EXPECT_EQ(g.clock_event_reasons, clock_event::kSwPowerCap | clock_event::kHwThermalSlowdown);
  EXPECT_EQ(g.clock_event_reasons_supported, 0x1FFu);
  EXPECT_EQ(g.pcie.link_gen_current, 4u);
  EXPECT_EQ(g.pcie.link_gen_max, 5u);
  EXPECT_EQ(g.pcie.link_gen_gpu_max, 5u);
  EXPECT_EQ(g.pcie.link_width_current, 8u);
  EXPECT_EQ(g.pcie.link_width_max, 16u);
  EXPECT_EQ(g.pcie.replay_counter, 12u);
  ASSERT_EQ(g.nvlinks.size(), 3u);
  EXPECT_EQ(g.nvlinks[0].active, true);
  EXPECT_EQ(g.nvlinks[1].active, false);
  EXPECT_EQ(g.nvlinks[2].link, 2u);
  EXPECT_EQ(g.nvlinks[2].active, true);

  EXPECT_TRUE(g.processes_known);
  ASSERT_EQ(g.processes.size(), 3u);
  const GpuProcess& a = g.processes[0];
  EXPECT_EQ(a.pid, 4242);
  EXPECT_EQ(a.type, GpuProcessType::kCompute);
  EXPECT_EQ(a.used_memory_bytes, 70000 * kMiB);
  EXPECT_EQ(a.sm_util_pct, 88u);
  EXPECT_EQ(a.mem_util_pct, 33u);
  EXPECT_FALSE(a.gpu_instance_id.has_value());
  const GpuProcess& b = g.processes[1];
  EXPECT_EQ(b.pid, 4243);
  EXPECT_EQ(b.type, GpuProcessType::kComputeAndGraphics);
  EXPECT_FALSE(b.used_memory_bytes.has_value());  // NVML_VALUE_NOT_AVAILABLE.
  EXPECT_EQ(b.sm_util_pct, 0u);                   // Samples exist, none for it.
  const GpuProcess& c = g.processes[2];
  EXPECT_EQ(c.pid, 4244);
  EXPECT_EQ(c.type, GpuProcessType::kGraphics);
  EXPECT_EQ(c.used_memory_bytes, 10 * kMiB);
  EXPECT_EQ(c.sm_util_pct, 5u);
}

TEST_F(SimTest, AbsentFieldsAreUnknownNotZero) {
  Snapshot s = Probe(WriteScenario(R"({
    "name": "bare",
    "driver": {"version": "550.90.07"},
    "gpus": [{"name": "Bare GPU"}]
  })"));
  EXPECT_TRUE(s.errors.empty()) << s.errors[0].message;
  EXPECT_FALSE(s.system.nvml_version.has_value());
  EXPECT_FALSE(s.system.cuda_driver_version.has_value());
  ASSERT_EQ(s.gpus.size(), 1u);
  const Gpu& g = s.gpus[0];
  EXPECT_EQ(g.name, "Bare GPU");
  EXPECT_FALSE(g.uuid.has_value());
  EXPECT_FALSE(g.pci_bus_id.has_value());
  EXPECT_FALSE(g.memory.total_bytes.has_value());
  EXPECT_FALSE(g.memory.used_bytes.has_value());
  EXPECT_FALSE(g.utilization_gpu_pct.has_value());
  EXPECT_FALSE(g.temperature_c.has_value());
  EXPECT_FALSE(g.fan_speed_pct.has_value());
  EXPECT_FALSE(g.power_draw_w.has_value());
  EXPECT_FALSE(g.power_limit_w.has_value());
  EXPECT_FALSE(g.clocks.graphics_mhz.has_value());
  EXPECT_FALSE(g.pstate.has_value());
  EXPECT_FALSE(g.persistence_mode.has_value());
  EXPECT_FALSE(g.compute_mode.has_value());
  EXPECT_FALSE(g.mig_mode_current.has_value());
  EXPECT_FALSE(g.ecc.mode_current.has_value());
  EXPECT_FALSE(g.ecc.volatile_uncorrected.has_value());
  EXPECT_FALSE(g.retired_pages.single_bit.has_value());
  EXPECT_FALSE(g.retired_pages.pending.has_value());
  EXPECT_FALSE(g.remapped_rows.correctable.has_value());
  EXPECT_FALSE(g.clock_event_reasons.has_value());
  EXPECT_FALSE(g.pcie.link_gen_current.has_value());
  EXPECT_FALSE(g.pcie.replay_counter.has_value());
  EXPECT_TRUE(g.nvlinks.empty());
  EXPECT_FALSE(g.processes_known);
  EXPECT_TRUE(g.processes.empty());
  EXPECT_FALSE(g.unreachable.has_value());
}

TEST_F(SimTest, LostAndUnreachableGpusDoNotStopTheOthers) {
  Snapshot s = Probe(WriteScenario(R"({
    "name": "handles",
    "driver": {"version": "550.90.07"},
    "defaults": {"temperature_c": 40, "processes": []},
    "gpus": [
      {"name": "GPU zero"},
      {"name": "GPU one", "lost": true},
      {"name": "GPU two", "handle_error": "no_permission"},
      {"name": "GPU three", "handle_error": "unknown"},
      {"name": "GPU four"}
    ]
  })"));
  ASSERT_EQ(s.gpus.size(), 5u);
  EXPECT_EQ(s.system.gpu_count, 5u);
  for (unsigned i : {0u, 4u}) {
    EXPECT_FALSE(s.gpus[i].unreachable.has_value()) << i;
    EXPECT_EQ(s.gpus[i].temperature_c, 40) << i;
    EXPECT_TRUE(s.gpus[i].processes_known) << i;
  }
  EXPECT_EQ(s.gpus[4].name, "GPU four");
  ASSERT_TRUE(s.gpus[1].unreachable.has_value());
  EXPECT_EQ(s.gpus[1].unreachable->code, "gpu_lost");
  EXPECT_EQ(s.gpus[1].unreachable->gpu_index, 1u);
  EXPECT_NE(s.gpus[1].unreachable->message.find("GPU 1"), std::string::npos);
  EXPECT_NE(s.gpus[1].unreachable->message.find("GPU is lost"), std::string::npos);
  EXPECT_FALSE(s.gpus[1].name.has_value());
  ASSERT_TRUE(s.gpus[2].unreachable.has_value());
  EXPECT_EQ(s.gpus[2].unreachable->code, "no_permission");
  ASSERT_TRUE(s.gpus[3].unreachable.has_value());
  EXPECT_EQ(s.gpus[3].unreachable->code, "nvml_error");
  EXPECT_EQ(s.gpus[3].unreachable->nvml_return, NVML_ERROR_UNKNOWN);
  EXPECT_EQ(s.errors.size(), 3u);
}

TEST_F(SimTest, LegacyLibraryUsesFallbacksAndLosesOnlyMissingFields) {
  // The R470-era export set: no memory v2, no _v3 process lists, only the
  // "Throttle" reason names, no GPU max PCIe generation, no remapped rows.
  auto legacy = NvmlLibrary::Open(kLegacyLib);
  ASSERT_TRUE(legacy.ok()) << legacy.error().message;
  NvmlLibrary& lib = **legacy;
  EXPECT_EQ(lib.BoundSymbol(EntryPoint::kDeviceGetMemoryInfoV2), nullptr);
  EXPECT_STREQ(lib.BoundSymbol(EntryPoint::kDeviceGetMemoryInfo), "nvmlDeviceGetMemoryInfo");
  EXPECT_STREQ(lib.BoundSymbol(EntryPoint::kDeviceGetComputeRunningProcesses),
               "nvmlDeviceGetComputeRunningProcesses_v2");
  EXPECT_STREQ(lib.BoundSymbol(EntryPoint::kDeviceGetCurrentClocksEventReasons),
               "nvmlDeviceGetCurrentClocksThrottleReasons");
  EXPECT_EQ(lib.BoundSymbol(EntryPoint::kDeviceGetRemappedRows), nullptr);
  // The full simulator binds the newest names.
  auto full = NvmlLibrary::Open(kSimLib);
  ASSERT_TRUE(full.ok()) << full.error().message;
  EXPECT_STREQ((*full)->BoundSymbol(EntryPoint::kDeviceGetComputeRunningProcesses),
               "nvmlDeviceGetComputeRunningProcesses_v3");

  const std::string scenario = WriteScenario(kFullGpu);
  Snapshot s = Probe(scenario, kLegacyLib);
  EXPECT_TRUE(s.errors.empty()) << s.errors[0].message;
  ASSERT_EQ(s.gpus.size(), 1u);
  const Gpu& g = s.gpus[0];
  // Memory through v1: no `reserved`, and v1's `used` includes it.
  EXPECT_EQ(g.memory.total_bytes, 81559 * kMiB);
  EXPECT_EQ(g.memory.used_bytes, (1000 + 551) * kMiB);
  EXPECT_FALSE(g.memory.reserved_bytes.has_value());
  // Processes through _v2, reasons through the Throttle name.
  ASSERT_EQ(g.processes.size(), 3u);
  EXPECT_EQ(g.processes[0].pid, 4242);
  EXPECT_EQ(g.processes[0].used_memory_bytes, 70000 * kMiB);
  EXPECT_EQ(g.clock_event_reasons, clock_event::kSwPowerCap | clock_event::kHwThermalSlowdown);
  // Missing symbols: only those fields are unknown.
  EXPECT_FALSE(g.remapped_rows.correctable.has_value());
  EXPECT_FALSE(g.pcie.link_gen_gpu_max.has_value());
  EXPECT_EQ(g.pcie.link_gen_max, 5u);
  EXPECT_EQ(g.retired_pages.double_bit, 1u);
  EXPECT_EQ(g.temperature_c, 71);
}

TEST_F(SimTest, Stride32ProcessEntriesDecodeCorrectly) {
  Snapshot s = Probe(WriteScenario(R"({
    "name": "stride",
    "driver": {"version": "535.54.03", "process_info_stride": 32},
    "gpus": [{"processes": [
      {"pid": 880100, "used_mib": 8192},
      {"pid": 880101, "used_mib": 16384, "type": "compute+graphics"},
      {"pid": 880102, "used_mib": 24576},
      {"pid": 880103, "used_mib": 32768, "type": "graphics"}
    ]}]
  })"));
  EXPECT_TRUE(s.errors.empty()) << s.errors[0].message;
  ASSERT_EQ(s.gpus.size(), 1u);
  const Gpu& g = s.gpus[0];
  ASSERT_EQ(g.processes.size(), 4u);
  EXPECT_EQ(g.processes[0].pid, 880100);
  EXPECT_EQ(g.processes[0].used_memory_bytes, 8192 * kMiB);
  EXPECT_EQ(g.processes[1].pid, 880101);
  EXPECT_EQ(g.processes[1].type, GpuProcessType::kComputeAndGraphics);
  EXPECT_EQ(g.processes[1].used_memory_bytes, 16384 * kMiB);
  EXPECT_EQ(g.processes[2].pid, 880102);
  EXPECT_EQ(g.processes[2].used_memory_bytes, 24576 * kMiB);
  EXPECT_EQ(g.processes[3].pid, 880103);
  EXPECT_EQ(g.processes[3].type, GpuProcessType::kGraphics);
  EXPECT_FALSE(g.processes[0].gpu_instance_id.has_value());
}

TEST_F(SimTest, ShippedStride32Scenario) {
  Snapshot s = Probe(Shipped("process-stride-32.json"));
  EXPECT_TRUE(s.errors.empty()) << s.errors[0].message;
  ASSERT_EQ(s.gpus.size(), 2u);
  ASSERT_EQ(s.gpus[1].processes.size(), 3u);
  EXPECT_EQ(s.gpus[1].processes[2].pid, 880112);
  EXPECT_EQ(s.gpus[1].processes[2].used_memory_bytes, 24576 * kMiB);
}

TEST_F(SimTest, WedgedGpuTimesOutWithPartialData) {
  const std::string scenario = WriteScenario(R"({
    "name": "wedged",
    "driver": {"version": "535.183.01"},
    "defaults": {"temperature_c": 40},
    "gpus": [{"name": "A"}, {"name": "B"}, {"name": "C", "block_s": 8}, {"name": "D"}]
  })");
  const auto started = std::chrono::steady_clock::now();
  setenv("GPUWARDEN_SIM_SCENARIO", scenario.c_str(), 1);
  ProbeOptions options;
  options.library_path = kSimLib;
  // Long enough for dlopen and the scenario parse on a loaded sanitizer build.
  options.deadline_ms = 2000;
  Snapshot s = ProbeNvml(options, clock_).snapshot;
  const auto elapsed = std::chrono::duration_cast<std::chrono::milliseconds>(
                           std::chrono::steady_clock::now() - started)
                           .count();
  // Back well before the 8 s the driver is stuck for (generous slack for
  // loaded and sanitizer builds).
  EXPECT_LT(elapsed, 6000);
  EXPECT_TRUE(s.timed_out);
  EXPECT_GE(s.probe_duration_ms, 2000.0);
  ASSERT_EQ(s.errors.size(), 1u);
  EXPECT_EQ(s.errors[0].code, "timeout");
  EXPECT_EQ(s.errors[0].message,
            "driver not responding: nvmlDeviceGetHandleByIndex_v2 on GPU 2 did not return "
            "within 2.0 s");
  ASSERT_EQ(s.gpus.size(), 4u);
  EXPECT_EQ(s.gpus[0].name, "A");
  EXPECT_EQ(s.gpus[0].temperature_c, 40);
  EXPECT_EQ(s.gpus[1].name, "B");
  EXPECT_FALSE(s.gpus[1].unreachable.has_value());
  ASSERT_TRUE(s.gpus[2].unreachable.has_value());
  EXPECT_EQ(s.gpus[2].unreachable->code, "timeout");
  // GPU 3, after the wedged one, is read all the same (its own thread), and
  // not blamed for GPU 2's hang.
  EXPECT_FALSE(s.gpus[3].unreachable.has_value());
  EXPECT_EQ(s.gpus[3].index, 3u);
  EXPECT_EQ(s.gpus[3].name, "D");
  EXPECT_EQ(s.gpus[3].temperature_c, 40);
  // Let the stuck worker finish (it shuts NVML down) before the next test.
  EXPECT_TRUE(WaitForProbeWorkers(60000));
}

TEST_F(SimTest, WedgedInitTimesOut) {
  const std::string scenario = WriteScenario(R"({
    "name": "init-wedged",
    "driver": {"version": "535.183.01", "init_block_s": 6},
    "gpus": [{"name": "A"}]
  })");
  Snapshot s = Probe(scenario, kSimLib, /*deadline_ms=*/1500);
  EXPECT_TRUE(s.timed_out);
  ASSERT_EQ(s.errors.size(), 1u);
  EXPECT_EQ(s.errors[0].code, "timeout");
  EXPECT_EQ(s.errors[0].message, "driver not responding: nvmlInit_v2 did not return within 1.5 s");
  EXPECT_TRUE(s.gpus.empty());
}

TEST_F(SimTest, DriverNotLoaded) {
  Snapshot s = Probe(WriteScenario(R"({
    "name": "no-driver", "driver": {"version": "550.90.07", "failure": "driver_not_loaded"},
    "gpus": [{"name": "A"}]
  })"));
  ASSERT_EQ(s.errors.size(), 1u);
  EXPECT_EQ(s.errors[0].code, "driver_not_loaded");
  EXPECT_EQ(s.errors[0].nvml_return, NVML_ERROR_DRIVER_NOT_LOADED);
  EXPECT_TRUE(s.gpus.empty());
  EXPECT_FALSE(s.timed_out);
}

TEST_F(SimTest, VersionMismatch) {
  Snapshot s = Probe(WriteScenario(R"({
    "name": "mismatch", "driver": {"version": "550.90.07", "failure": "version_mismatch"},
    "gpus": [{"name": "A"}]
  })"));
  ASSERT_EQ(s.errors.size(), 1u);
  EXPECT_EQ(s.errors[0].code, "version_mismatch");
  EXPECT_EQ(
      s.errors[0].message.rfind("Failed to initialize NVML: Driver/library version mismatch", 0),
      0u)
      << s.errors[0].message;
  EXPECT_NE(s.errors[0].message.find("reboot"), std::string::npos);
}

TEST_F(SimTest, ShippedFailureScenarios) {
  EXPECT_EQ(Probe(Shipped("driver-not-loaded.json")).errors.at(0).code, "driver_not_loaded");
  EXPECT_EQ(Probe(Shipped("version-mismatch.json")).errors.at(0).code, "version_mismatch");
  Snapshot none = Probe(Shipped("no-gpus.json"));
  EXPECT_TRUE(none.errors.empty());
  EXPECT_EQ(none.system.gpu_count, 0u);
  EXPECT_TRUE(none.gpus.empty());
}

TEST_F(SimTest, MalformedScenarioIsAnNvmlErrorWithTheRawCode) {
  // The simulator refuses it at init with UNKNOWN (and says why on stderr);
  // the CLI tells that apart from a missing driver by nvml_return 999.
  Snapshot s = Probe(WriteScenario("{ not json"));
  ASSERT_EQ(s.errors.size(), 1u);
  EXPECT_EQ(s.errors[0].code, "nvml_error");
  EXPECT_EQ(s.errors[0].nvml_return, NVML_ERROR_UNKNOWN);
}

TEST_F(SimTest, MissingLibrary) {
  Snapshot s =
      Probe(WriteScenario(kFullGpu), gw::test::BinaryDir() + "/sim/nonexistent/libnvidia-ml.so.1");
  ASSERT_EQ(s.errors.size(), 1u);
  EXPECT_EQ(s.errors[0].code, "library_not_found");
  EXPECT_NE(s.errors[0].message.find("nonexistent/libnvidia-ml.so.1"), std::string::npos);
}

TEST_F(SimTest, NvLinkPairsAndTopology) {
  Snapshot s = Probe(WriteScenario(R"({
    "name": "nvlink",
    "driver": {"version": "550.90.07"},
    "defaults": {"pci_device_id": "0x232110DE", "pci_subsystem_id": "0x183910DE"},
    "gpus": [
      {"pci_bus_id": "00000000:1A:00.0", "nvlinks": [
        {"active": true, "remote_pci_bus_id": "00000000:1B:00.0"},
        {"active": true, "remote_pci_bus_id": "00000000:1B:00.0"},
        {"active": false},
        {"active": true, "remote_pci_bus_id": "00000000:AA:00.0"}]},
      {"pci_bus_id": "00000000:1B:00.0", "nvlinks": [
        {"active": true, "remote_pci_bus_id": "00000000:1A:00.0"},
        {"active": true, "remote_pci_bus_id": "00000000:1A:00.0"}]},
      {"pci_bus_id": "00000000:2A:00.0"}
    ],
    "topology": {"default": "system", "links": [{"gpus": [0, 1], "level": "single"}]}
  })"));
  EXPECT_TRUE(s.errors.empty()) << s.errors[0].message;
  ASSERT_EQ(s.gpus.size(), 3u);
  EXPECT_EQ(s.gpus[0].nvlinks.size(), 4u);
  EXPECT_EQ(s.gpus[1].nvlinks.size(), 2u);
  EXPECT_TRUE(s.gpus[2].nvlinks.empty());
  ASSERT_EQ(s.topology.size(), 3u);
  EXPECT_EQ(s.topology[0].gpu_a, 0u);
  EXPECT_EQ(s.topology[0].gpu_b, 1u);
  EXPECT_EQ(s.topology[0].level, TopologyLevel::kSingle);
  EXPECT_EQ(s.topology[0].nvlinks, 2u);
  EXPECT_EQ(s.topology[1].gpu_b, 2u);
  EXPECT_EQ(s.topology[1].level, TopologyLevel::kSystem);
  EXPECT_EQ(s.topology[1].nvlinks, 0u);
}

TEST_F(SimTest, ShippedNvLinkScenario) {
  Snapshot s = Probe(Shipped("nvlink-8gpu.json"));
  EXPECT_TRUE(s.errors.empty()) << s.errors[0].message;
  ASSERT_EQ(s.gpus.size(), 8u);
  ASSERT_EQ(s.topology.size(), 28u);
  for (const TopologyLink& link : s.topology) {
    const bool partners = link.gpu_a / 2 == link.gpu_b / 2;
    EXPECT_EQ(link.nvlinks, partners ? 12u : 0u) << link.gpu_a << "-" << link.gpu_b;
  }
}

TEST_F(SimTest, BenchServerAllProcessesRead) {
  Snapshot s = Probe(Shipped("bench-8gpu-64proc.json"));
  EXPECT_TRUE(s.errors.empty()) << s.errors[0].message;
  ASSERT_EQ(s.gpus.size(), 8u);
  size_t processes = 0;
  for (const Gpu& g : s.gpus) {
    EXPECT_TRUE(g.processes_known);
    processes += g.processes.size();
    for (const GpuProcess& p : g.processes) {
      EXPECT_TRUE(p.used_memory_bytes.has_value());
      EXPECT_TRUE(p.sm_util_pct.has_value());
    }
  }
  EXPECT_EQ(processes, 64u);
}

TEST_F(SimTest, ConsecutiveProbesReadTheirOwnScenario) {
  Snapshot first = Probe(WriteScenario(R"({"name": "a", "gpus": [{"name": "first"}]})"));
  Snapshot second = Probe(WriteScenario(R"({"name": "b", "gpus": [{"name": "second"}, {}]})"));
  ASSERT_EQ(first.gpus.size(), 1u);
  EXPECT_EQ(first.gpus[0].name, "first");
  ASSERT_EQ(second.gpus.size(), 2u);
  EXPECT_EQ(second.gpus[0].name, "second");
}

}  // namespace
}  // namespace gw::nvml
