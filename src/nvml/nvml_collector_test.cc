// Collector tests against a small in-test fake NvmlApi: the cases that are
// about the collector's rules (error classes, lost GPUs, the stride guard on
// the real call path, utilisation samples, NVLink pairing, stopping) rather
// than about a library. The simulator-backed tests are in nvml_sim_test.cc.
#include "nvml/nvml_collector.h"

#include <map>
#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "nvml/fake_nvml_test_util.h"

namespace gw::nvml {
namespace {

Snapshot CollectFrom(FakeNvml& fake, CollectorOptions options = {}) {
  Snapshot snapshot;
  NvmlCollector collector(fake, options);
  EXPECT_TRUE(collector.Initialize(&snapshot));
  collector.Collect(&snapshot);
  collector.Shutdown();
  return snapshot;
}

const GpuProcess* FindProcess(const Gpu& gpu, pid_t pid) {
  for (const GpuProcess& p : gpu.processes) {
    if (p.pid == pid) return &p;
  }
  return nullptr;
}

TEST(NvmlCollector, UnsupportedFieldsStayUnknownWithoutErrors) {
  FakeNvml fake;
  fake.gpus.resize(1);
  Snapshot s = CollectFrom(fake);
  ASSERT_EQ(s.gpus.size(), 1u);
  const Gpu& gpu = s.gpus[0];
  EXPECT_EQ(gpu.name, "Fake GPU 0");
  EXPECT_EQ(gpu.temperature_c, 45);
  // Not implemented by the fake: FUNCTION_NOT_FOUND → unknown, never 0.
  EXPECT_FALSE(gpu.fan_speed_pct.has_value());
  EXPECT_FALSE(gpu.power_draw_w.has_value());
  EXPECT_FALSE(gpu.power_limit_w.has_value());
  EXPECT_FALSE(gpu.utilization_gpu_pct.has_value());
  EXPECT_FALSE(gpu.clocks.sm_mhz.has_value());
  EXPECT_FALSE(gpu.pstate.has_value());
  EXPECT_FALSE(gpu.ecc.volatile_uncorrected.has_value());
  EXPECT_FALSE(gpu.retired_pages.double_bit.has_value());
  EXPECT_FALSE(gpu.remapped_rows.pending.has_value());
  EXPECT_FALSE(gpu.pcie.replay_counter.has_value());
  EXPECT_FALSE(gpu.serial.has_value());
  EXPECT_FALSE(gpu.unreachable.has_value());
  EXPECT_TRUE(gpu.nvlinks.empty());
  EXPECT_FALSE(s.system.cuda_driver_version.has_value());
  EXPECT_EQ(s.system.driver_version, "550.90.07");
  EXPECT_TRUE(s.errors.empty()) << s.errors[0].message;
  EXPECT_EQ(fake.init_calls, 1);
  EXPECT_EQ(fake.shutdown_calls, 1);
}

TEST(NvmlCollector, RealFailureBecomesErrorNamingCallAndGpu) {
  FakeNvml fake;
  fake.gpus.resize(2);
  fake.gpus[1].temperature_result = NVML_ERROR_UNKNOWN;
  Snapshot s = CollectFrom(fake);
  EXPECT_EQ(s.gpus[0].temperature_c, 45);
  EXPECT_FALSE(s.gpus[1].temperature_c.has_value());
  EXPECT_FALSE(s.gpus[1].unreachable.has_value());
  ASSERT_EQ(s.errors.size(), 1u);
  EXPECT_EQ(s.errors[0].source, "nvml");
  EXPECT_EQ(s.errors[0].code, "nvml_error");
  EXPECT_EQ(s.errors[0].message, "nvmlDeviceGetTemperature on GPU 1: Unknown Error");
  EXPECT_EQ(s.errors[0].gpu_index, 1u);
  EXPECT_EQ(s.errors[0].nvml_return, NVML_ERROR_UNKNOWN);
}

TEST(NvmlCollector, HandleFailuresMarkOnlyThatGpuUnreachable) {
  FakeNvml fake;
  fake.gpus.resize(3);
  fake.gpus[0].handle_result = NVML_ERROR_NO_PERMISSION;
  fake.gpus[1].handle_result = NVML_ERROR_GPU_IS_LOST;
  Snapshot s = CollectFrom(fake);
  ASSERT_EQ(s.gpus.size(), 3u);
  ASSERT_TRUE(s.gpus[0].unreachable.has_value());
  EXPECT_EQ(s.gpus[0].unreachable->code, "no_permission");
  ASSERT_TRUE(s.gpus[1].unreachable.has_value());
  EXPECT_EQ(s.gpus[1].unreachable->code, "gpu_lost");
  EXPECT_EQ(s.gpus[1].unreachable->message, "nvmlDeviceGetHandleByIndex_v2 on GPU 1: GPU is lost");
  EXPECT_EQ(s.gpus[1].index, 1u);
  EXPECT_FALSE(s.gpus[1].name.has_value());
  EXPECT_FALSE(s.gpus[2].unreachable.has_value());
  EXPECT_EQ(s.gpus[2].name, "Fake GPU 2");
  EXPECT_EQ(s.system.gpu_count, 3u);
  // Topology only between GPUs that answer: none here.
  EXPECT_TRUE(s.topology.empty());
}

// Issue 12, class 9: indexes never shift. An older NVML's enumeration leaves
// out the GPU this user may not open; the n-th handle is then not GPU n.
TEST(NvmlCollector, GpusAreNamedByTheirOwnIndexWhenTheEnumerationSkipsOne) {
  FakeNvml fake;
  fake.gpus.resize(4);
  fake.gpus[1].hidden = true;
  fake.gpus[1].handle_result = NVML_ERROR_NO_PERMISSION;
  fake.gpus[3].temperature_result = NVML_ERROR_UNKNOWN;
  Snapshot s = CollectFrom(fake);
  ASSERT_EQ(s.gpus.size(), 4u);
  for (unsigned i = 0; i < 4; ++i) EXPECT_EQ(s.gpus[i].index, i);
  EXPECT_EQ(s.gpus[0].name, "Fake GPU 0");
  EXPECT_EQ(s.gpus[2].name, "Fake GPU 2");
  EXPECT_EQ(s.gpus[3].name, "Fake GPU 3");
  ASSERT_TRUE(s.gpus[1].unreachable.has_value());
  EXPECT_EQ(s.gpus[1].unreachable->code, "no_permission");
  EXPECT_EQ(s.gpus[1].unreachable->gpu_index, 1u);
  EXPECT_FALSE(s.gpus[1].name.has_value());
  // Errors name the GPU by its index, not by its place in the enumeration.
  bool named = false;
  for (const ProbeError& e : s.errors) {
    if (e.code == "nvml_error") {
      EXPECT_EQ(e.gpu_index, 3u);
      EXPECT_NE(e.message.find("on GPU 3"), std::string::npos) << e.message;
      named = true;
    }
  }
  EXPECT_TRUE(named);
  // Topology pairs are GPU indices too.
  for (const TopologyLink& l : s.topology) {
    EXPECT_NE(l.gpu_a, 1u);
    EXPECT_NE(l.gpu_b, 1u);
  }
  EXPECT_FALSE(s.topology.empty());
}

TEST(NvmlCollector, AFailedHandleInAShiftedEnumerationKeepsItsErrorAndPlace) {
  FakeNvml fake;
  fake.gpus.resize(4);
  fake.gpus[0].hidden = true;
  fake.gpus[0].handle_result = NVML_ERROR_NO_PERMISSION;
  fake.gpus[2].handle_result = NVML_ERROR_INSUFFICIENT_POWER;
  Snapshot s = CollectFrom(fake);
  ASSERT_EQ(s.gpus.size(), 4u);
  for (unsigned i = 0; i < 4; ++i) EXPECT_EQ(s.gpus[i].index, i);
  EXPECT_EQ(s.gpus[1].name, "Fake GPU 1");
  EXPECT_EQ(s.gpus[3].name, "Fake GPU 3");
  // Places 0 and 2 of the list are GPUs 1 and 3; the failed place 1 is GPU 2,
  // the one left out is GPU 0.
  ASSERT_TRUE(s.gpus[2].unreachable.has_value());
  EXPECT_EQ(s.gpus[2].unreachable->code, "insufficient_power");
  EXPECT_EQ(s.gpus[2].unreachable->gpu_index, 2u);
  EXPECT_NE(s.gpus[2].unreachable->message.find("place 1 of NVML's list"), std::string::npos);
  ASSERT_TRUE(s.gpus[0].unreachable.has_value());
  EXPECT_EQ(s.gpus[0].unreachable->code, "no_permission");
  for (const ProbeError& e : s.errors) {
    if (e.code == "insufficient_power") {
      EXPECT_EQ(e.gpu_index, 2u);
    }
    if (e.code == "no_permission") {
      EXPECT_EQ(e.gpu_index, 0u);
    }
  }
}

TEST(NvmlCollector, GpuLostMidReadStopsAskingItKeepsWhatWasRead) {
  FakeNvml fake;
  fake.gpus.resize(2);
  fake.gpus[0].lost_after_memory = true;
  Snapshot s = CollectFrom(fake);
  const Gpu& lost = s.gpus[0];
  EXPECT_EQ(lost.name, "Fake GPU 0");
  EXPECT_EQ(lost.memory.total_bytes, 80ULL << 30);
  ASSERT_TRUE(lost.unreachable.has_value());
  EXPECT_EQ(lost.unreachable->code, "gpu_lost");
  EXPECT_FALSE(lost.temperature_c.has_value());
  // One call answered GPU_IS_LOST; none after it.
  EXPECT_EQ(fake.gpus[0].calls_after_lost, 1);
  EXPECT_EQ(s.gpus[1].temperature_c, 45);
  EXPECT_FALSE(s.gpus[1].unreachable.has_value());
  ASSERT_EQ(s.errors.size(), 1u);
  EXPECT_EQ(s.errors[0].code, "gpu_lost");
}

// Counts the calls the collector makes, by entry point.
class CountingObserver : public CallObserver {
 public:
  bool BeforeCall(EntryPoint ep, std::optional<unsigned>, std::optional<unsigned>) override {
    ++calls[ep];
    return true;
  }
  void AfterCall() override {}
  std::map<EntryPoint, int> calls;
};

// With a session's StaticFacts, what cannot change is asked once (identity,
// versions, topology), what moves at every look; a query that failed is
// asked again, and its answer is kept once it succeeds.
TEST(NvmlCollector, StaticFactsAreAskedOnceASessionAndFailuresAgain) {
  FakeNvml fake;
  fake.gpus.resize(2);
  fake.gpus[1].name_result = NVML_ERROR_UNKNOWN;
  StaticFacts statics;
  CountingObserver observer;
  auto look = [&] {
    Snapshot snapshot;
    NvmlCollector collector(fake, {}, &observer, &statics);
    EXPECT_TRUE(collector.Initialize(&snapshot));
    collector.Collect(&snapshot);
    collector.Shutdown();
    return snapshot;
  };
  Snapshot first = look();
  EXPECT_EQ(first.gpus[0].name, "Fake GPU 0");
  EXPECT_FALSE(first.gpus[1].name.has_value());
  fake.gpus[1].name_result = NVML_SUCCESS;
  Snapshot second = look();
  Snapshot third = look();
  EXPECT_EQ(third.gpus[0].name, "Fake GPU 0");
  EXPECT_EQ(third.gpus[1].name, "Fake GPU 1");
  EXPECT_EQ(third.gpus[1].pci_bus_id, first.gpus[1].pci_bus_id);
  EXPECT_EQ(third.system.driver_version, first.system.driver_version);
  EXPECT_EQ(third.topology.size(), first.topology.size());
  // GPU 0's name once, GPU 1's twice (failed, then kept); the PCI info and
  // the topology of the one pair once; the driver's version once.
  EXPECT_EQ(observer.calls[EntryPoint::kDeviceGetName], 3);
  EXPECT_EQ(observer.calls[EntryPoint::kDeviceGetPciInfo], 2);
  EXPECT_EQ(observer.calls[EntryPoint::kDeviceGetTopologyCommonAncestor], 1);
  EXPECT_EQ(observer.calls[EntryPoint::kSystemGetDriverVersion], 1);
  // What moves is asked at every look.
  EXPECT_EQ(observer.calls[EntryPoint::kDeviceGetMemoryInfoV2], 6);
  EXPECT_EQ(observer.calls[EntryPoint::kDeviceGetTemperature], 6);
  EXPECT_EQ(observer.calls[EntryPoint::kDeviceGetCount], 3);

  // Without StaticFacts (a one-off probe) everything is asked every time.
  CountingObserver plain;
  for (int i = 0; i < 2; ++i) {
    Snapshot snapshot;
    NvmlCollector collector(fake, {}, &plain);
    EXPECT_TRUE(collector.Initialize(&snapshot));
    collector.Collect(&snapshot);
    collector.Shutdown();
  }
  EXPECT_EQ(plain.calls[EntryPoint::kDeviceGetName], 4);
  EXPECT_EQ(plain.calls[EntryPoint::kDeviceGetTopologyCommonAncestor], 2);
}

TEST(NvmlCollector, MemoryV2WithReservedAndV1Fallbacks) {
  FakeNvml fake;
  fake.gpus.resize(3);
  fake.gpus[1].memory_v2_result = NVML_ERROR_FUNCTION_NOT_FOUND;
  fake.gpus[2].memory_v2_result = NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
  Snapshot s = CollectFrom(fake);
  EXPECT_EQ(s.gpus[0].memory.reserved_bytes, 1ULL << 30);
  EXPECT_EQ(s.gpus[0].memory.used_bytes, 10ULL << 30);
  EXPECT_EQ(s.gpus[0].memory.free_bytes, 69ULL << 30);
  for (unsigned i : {1u, 2u}) {
    EXPECT_EQ(s.gpus[i].memory.used_bytes, 11ULL << 30) << i;
    EXPECT_EQ(s.gpus[i].memory.total_bytes, 80ULL << 30) << i;
    EXPECT_FALSE(s.gpus[i].memory.reserved_bytes.has_value()) << i;
  }
  EXPECT_TRUE(s.errors.empty());
}

TEST(NvmlCollector, ProcessesMergedAcrossListsWithUnknownMemory) {
  FakeNvml fake;
  fake.gpus.resize(1);
  fake.gpus[0].compute = {{100, 4ULL << 30}, {200, ~0ULL}};
  fake.gpus[0].graphics = {{200, ~0ULL}, {300, 1ULL << 20}};
  Snapshot s = CollectFrom(fake);
  const Gpu& gpu = s.gpus[0];
  EXPECT_TRUE(gpu.processes_known);
  ASSERT_EQ(gpu.processes.size(), 3u);
  const GpuProcess* p100 = FindProcess(gpu, 100);
  const GpuProcess* p200 = FindProcess(gpu, 200);
  const GpuProcess* p300 = FindProcess(gpu, 300);
  ASSERT_TRUE(p100 && p200 && p300);
  EXPECT_EQ(p100->type, GpuProcessType::kCompute);
  EXPECT_EQ(p100->used_memory_bytes, 4ULL << 30);
  EXPECT_EQ(p200->type, GpuProcessType::kComputeAndGraphics);
  EXPECT_FALSE(p200->used_memory_bytes.has_value());
  EXPECT_EQ(p300->type, GpuProcessType::kGraphics);
  EXPECT_FALSE(p100->gpu_instance_id.has_value());
}

// In the driver's order, compute first; a PID listed again (in either list)
// folds into its first listing, with the most memory any listing gives.
TEST(NvmlCollector, ProcessesKeepTheirFirstListingsPlace) {
  FakeNvml fake;
  fake.gpus.resize(1);
  fake.gpus[0].compute = {{300, 1ULL << 20}, {100, ~0ULL}, {300, 3ULL << 20}};
  fake.gpus[0].graphics = {{50, 1ULL << 20}, {100, 2ULL << 20}, {300, 2ULL << 20}};
  Snapshot s = CollectFrom(fake);
  const Gpu& gpu = s.gpus[0];
  ASSERT_EQ(gpu.processes.size(), 3u);
  EXPECT_EQ(gpu.processes[0].pid, 300);
  EXPECT_EQ(gpu.processes[0].type, GpuProcessType::kComputeAndGraphics);
  EXPECT_EQ(gpu.processes[0].used_memory_bytes, 3ULL << 20);
  EXPECT_EQ(gpu.processes[1].pid, 100);
  EXPECT_EQ(gpu.processes[1].type, GpuProcessType::kComputeAndGraphics);
  EXPECT_EQ(gpu.processes[1].used_memory_bytes, 2ULL << 20);
  EXPECT_EQ(gpu.processes[2].pid, 50);
  EXPECT_EQ(gpu.processes[2].type, GpuProcessType::kGraphics);
}

TEST(NvmlCollector, StrideGuardOnTheCallPath) {
  FakeNvml fake;
  fake.gpus.resize(1);
  fake.gpus[0].stride = 32;
  fake.gpus[0].compute = {{4242, 70000ULL << 20}, {4243, 1ULL << 30}, {4244, 2ULL << 30}};
  Snapshot s = CollectFrom(fake);
  const Gpu& gpu = s.gpus[0];
  ASSERT_EQ(gpu.processes.size(), 3u);
  EXPECT_EQ(gpu.processes[0].pid, 4242);
  EXPECT_EQ(gpu.processes[0].used_memory_bytes, 70000ULL << 20);
  EXPECT_EQ(gpu.processes[1].pid, 4243);
  EXPECT_EQ(gpu.processes[2].pid, 4244);
  EXPECT_EQ(gpu.processes[2].used_memory_bytes, 2ULL << 30);
}

TEST(NvmlCollector, ProcessListsFallBackToV1) {
  // A library without the _v2/_v3 process lists: the 16-byte v1 entries.
  struct V1Only : FakeNvml {
    nvmlReturn_t DeviceGetComputeRunningProcesses(nvmlDevice_t, unsigned int*,
                                                  nvmlProcessInfo_t*) override {
      return NVML_ERROR_FUNCTION_NOT_FOUND;
    }
    nvmlReturn_t DeviceGetGraphicsRunningProcesses(nvmlDevice_t, unsigned int*,
                                                   nvmlProcessInfo_t*) override {
      return NVML_ERROR_FUNCTION_NOT_FOUND;
    }
    nvmlReturn_t DeviceGetComputeRunningProcessesV1(nvmlDevice_t, unsigned int* count,
                                                    nvmlProcessInfo_v1_t* infos) override {
      if (*count < 2) {
        *count = 2;
        return NVML_ERROR_INSUFFICIENT_SIZE;
      }
      infos[0] = {501, 3ULL << 30};
      infos[1] = {502, ~0ULL};
      *count = 2;
      return NVML_SUCCESS;
    }
    nvmlReturn_t DeviceGetGraphicsRunningProcessesV1(nvmlDevice_t, unsigned int* count,
                                                     nvmlProcessInfo_v1_t*) override {
      *count = 0;
      return NVML_SUCCESS;
    }
  } fake;
  fake.gpus.resize(1);
  Snapshot s = CollectFrom(fake);
  const Gpu& gpu = s.gpus[0];
  EXPECT_TRUE(gpu.processes_known);
  ASSERT_EQ(gpu.processes.size(), 2u);
  EXPECT_EQ(gpu.processes[0].pid, 501);
  EXPECT_EQ(gpu.processes[0].used_memory_bytes, 3ULL << 30);
  EXPECT_EQ(gpu.processes[1].pid, 502);
  EXPECT_FALSE(gpu.processes[1].used_memory_bytes.has_value());
  EXPECT_FALSE(gpu.processes[1].gpu_instance_id.has_value());
  EXPECT_TRUE(s.errors.empty());
}

TEST(NvmlCollector, ProcessListFailureMeansProcessesUnknown) {
  struct Failing : FakeNvml {
    nvmlReturn_t DeviceGetComputeRunningProcesses(nvmlDevice_t, unsigned int*,
                                                  nvmlProcessInfo_t*) override {
      return NVML_ERROR_UNKNOWN;
    }
  } fake;
  fake.gpus.resize(1);
  Snapshot s = CollectFrom(fake);
  EXPECT_FALSE(s.gpus[0].processes_known);
  ASSERT_EQ(s.errors.size(), 1u);
  EXPECT_EQ(s.errors[0].message, "nvmlDeviceGetComputeRunningProcesses_v3 on GPU 0: Unknown Error");
}

TEST(NvmlCollector, ProcessUtilizationAbsentPidIsZeroWhenSamplesExist) {
  FakeNvml fake;
  fake.gpus.resize(1);
  fake.gpus[0].compute = {{100, 1}, {200, 1}};
  nvmlProcessUtilizationSample_t old_sample{100, 10, 5, 6, 0, 0};
  nvmlProcessUtilizationSample_t new_sample{100, 20, 87, 40, 0, 0};
  fake.gpus[0].samples = {new_sample, old_sample};
  Snapshot s = CollectFrom(fake);
  const Gpu& gpu = s.gpus[0];
  EXPECT_EQ(FindProcess(gpu, 100)->sm_util_pct, 87u);  // The newest sample.
  EXPECT_EQ(FindProcess(gpu, 100)->mem_util_pct, 40u);
  EXPECT_EQ(FindProcess(gpu, 200)->sm_util_pct, 0u);
  EXPECT_EQ(FindProcess(gpu, 200)->mem_util_pct, 0u);
}

TEST(NvmlCollector, ProcessUtilizationNoSamplesInWindowIsZero) {
  FakeNvml fake;
  fake.gpus.resize(1);
  fake.gpus[0].compute = {{100, 1}};
  fake.gpus[0].samples_result = NVML_ERROR_NOT_FOUND;
  Snapshot s = CollectFrom(fake);
  EXPECT_EQ(s.gpus[0].processes[0].sm_util_pct, 0u);
  EXPECT_TRUE(s.errors.empty());
}

TEST(NvmlCollector, ProcessUtilizationUnsupportedIsUnknown) {
  FakeNvml fake;
  fake.gpus.resize(1);
  fake.gpus[0].compute = {{100, 1}};
  fake.gpus[0].samples_result = NVML_ERROR_NOT_SUPPORTED;
  Snapshot s = CollectFrom(fake);
  EXPECT_FALSE(s.gpus[0].processes[0].sm_util_pct.has_value());
  EXPECT_FALSE(s.gpus[0].processes[0].mem_util_pct.has_value());
  EXPECT_TRUE(s.errors.empty());
}

TEST(NvmlCollector, NvLinksEndAtInvalidArgumentAndPairUp) {
  FakeNvml fake;
  fake.gpus.resize(3);
  for (unsigned i = 0; i < 3; ++i) fake.gpus[i].bus = 0x10 + i;
  // GPU 0: links 0,1 to GPU 1, link 2 down, link 3 to a switch.
  fake.gpus[0].nvlinks = {true, true, false, true};
  fake.gpus[0].nvlink_remote_gpu = {1, 1, -1, -1};
  fake.gpus[1].nvlinks = {true, true};
  fake.gpus[1].nvlink_remote_gpu = {0, 0};
  Snapshot s = CollectFrom(fake);
  ASSERT_EQ(s.gpus[0].nvlinks.size(), 4u);
  EXPECT_EQ(s.gpus[0].nvlinks[2].link, 2u);
  EXPECT_EQ(s.gpus[0].nvlinks[2].active, false);
  EXPECT_EQ(s.gpus[0].nvlinks[3].active, true);
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
  EXPECT_TRUE(s.errors.empty());
}

class StopAfter : public CallObserver {
 public:
  explicit StopAfter(int calls) : left_(calls) {}
  bool BeforeCall(EntryPoint ep, std::optional<unsigned> gpu, std::optional<unsigned>) override {
    last_ = ep;
    last_gpu_ = gpu;
    return left_-- > 0;
  }
  void AfterCall() override { ++after_; }
  void GpuDone(unsigned index) override { done_.push_back(index); }

  int left_;
  int after_ = 0;
  EntryPoint last_ = EntryPoint::kInit;
  std::optional<unsigned> last_gpu_;
  std::vector<unsigned> done_;
};

TEST(NvmlCollector, ObserverSeesEveryCallAndCanStop) {
  FakeNvml fake;
  fake.gpus.resize(2);
  StopAfter observer(1000);
  Snapshot s;
  NvmlCollector collector(fake, {}, &observer);
  ASSERT_TRUE(collector.Initialize(&s));
  collector.Collect(&s);
  EXPECT_FALSE(collector.stopped());
  EXPECT_EQ(observer.done_, (std::vector<unsigned>{0, 1}));
  EXPECT_EQ(observer.after_, 1000 - observer.left_);

  // Stop in the middle of GPU 0: nothing more is asked, GPU 1 untouched.
  StopAfter stopper(12);
  Snapshot t;
  NvmlCollector stopped(fake, {}, &stopper);
  ASSERT_TRUE(stopped.Initialize(&t));
  stopped.Collect(&t);
  EXPECT_TRUE(stopped.stopped());
  EXPECT_EQ(stopper.last_gpu_, 0u);
  EXPECT_EQ(stopper.after_, 12);
  EXPECT_TRUE(stopper.done_.empty());
  ASSERT_EQ(t.gpus.size(), 2u);
  EXPECT_EQ(t.gpus[0].name, "Fake GPU 0");
  EXPECT_FALSE(t.gpus[1].name.has_value());
  stopped.Shutdown();
  EXPECT_EQ(fake.shutdown_calls, 1);  // Shutdown goes through even when stopped.
}

TEST(InitFailure, MessagesLikeNvidiaSmiWithTheLikelyCause) {
  ProbeError mismatch =
      InitFailure(NVML_ERROR_LIB_RM_VERSION_MISMATCH, "RM mismatch", "nvmlInit_v2");
  EXPECT_EQ(mismatch.code, "version_mismatch");
  EXPECT_EQ(mismatch.source, "nvml");
  EXPECT_EQ(mismatch.nvml_return, NVML_ERROR_LIB_RM_VERSION_MISMATCH);
  EXPECT_EQ(mismatch.message.rfind("Failed to initialize NVML: Driver/library version mismatch", 0),
            0u);
  EXPECT_NE(mismatch.message.find("reboot"), std::string::npos);

  ProbeError not_loaded = InitFailure(NVML_ERROR_DRIVER_NOT_LOADED, "x", "nvmlInit_v2");
  EXPECT_EQ(not_loaded.code, "driver_not_loaded");
  EXPECT_EQ(not_loaded.message.rfind("Failed to initialize NVML: Driver Not Loaded", 0), 0u);

  ProbeError unknown = InitFailure(NVML_ERROR_UNKNOWN, "Unknown Error", "nvmlInit_v2");
  EXPECT_EQ(unknown.code, "nvml_error");
  EXPECT_EQ(unknown.nvml_return, 999);
  EXPECT_NE(unknown.message.find("Unknown Error"), std::string::npos);
}

TEST(NvmlCollector, InitFailureIsRecordedNotThrown) {
  struct FailingInit : UnsupportedNvmlApi {
    nvmlReturn_t Init() override { return NVML_ERROR_DRIVER_NOT_LOADED; }
  } api;
  Snapshot s;
  NvmlCollector collector(api, {});
  EXPECT_FALSE(collector.Initialize(&s));
  ASSERT_EQ(s.errors.size(), 1u);
  EXPECT_EQ(s.errors[0].code, "driver_not_loaded");
}

}  // namespace
}  // namespace gw::nvml
