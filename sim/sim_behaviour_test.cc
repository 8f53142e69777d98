// Behaviour of the simulated libnvidia-ml.so.1, loaded in-process with dlopen
// as an NVML client would: library state, timeline, process liveness, blocking,
// events, sizing protocols, argument checks, threads and the legacy variant.
//
// The library keeps its state across tests in one process (as NVML does), so
// every test starts by shutting it down completely.
#include <dlfcn.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "nvml/nvml_abi.h"
#include "sim_test_util.h"
#include "test_paths.h"

extern char** environ;

namespace gw::sim::test {
namespace {

void* Open(const char* path) {
  // Never unloaded: the library's state lives for the whole test process.
  void* h = dlopen(path, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
  if (h == nullptr) ADD_FAILURE() << dlerror();
  return h;
}

void* FullLib() {
  static void* h = Open(SimLibrary().c_str());
  return h;
}

void* LegacyLib() {
  static void* h = Open(LegacySimLibrary().c_str());
  return h;
}

// A typed entry point of the full library.
template <typename F>
F* Fn(const char* name) {
  void* p = dlsym(FullLib(), name);
  if (p == nullptr) ADD_FAILURE() << "missing " << name;
  return reinterpret_cast<F*>(p);
}

using VoidFn = nvmlReturn_t();
using UintFn = nvmlReturn_t(unsigned int*);
using ByIndexFn = nvmlReturn_t(unsigned int, nvmlDevice_t*);
using ByStrFn = nvmlReturn_t(const char*, nvmlDevice_t*);
using DevUintFn = nvmlReturn_t(nvmlDevice_t, unsigned int*);
using DevStrFn = nvmlReturn_t(nvmlDevice_t, char*, unsigned int);
using DevIntUintFn = nvmlReturn_t(nvmlDevice_t, int, unsigned int*);
using ProcsFn = nvmlReturn_t(nvmlDevice_t, unsigned int*, nvmlProcessInfo_t*);
using ProcsV1Fn = nvmlReturn_t(nvmlDevice_t, unsigned int*, nvmlProcessInfo_v1_t*);
using MemFn = nvmlReturn_t(nvmlDevice_t, nvmlMemory_t*);
using MemV2Fn = nvmlReturn_t(nvmlDevice_t, nvmlMemory_v2_t*);
using ProcUtilFn = nvmlReturn_t(nvmlDevice_t, nvmlProcessUtilizationSample_t*, unsigned int*,
                                unsigned long long);
using LinkFn = nvmlReturn_t(nvmlDevice_t, unsigned int, nvmlEnableState_t*);
using TopoFn = nvmlReturn_t(nvmlDevice_t, nvmlDevice_t, nvmlGpuTopologyLevel_t*);
using SetCreateFn = nvmlReturn_t(nvmlEventSet_t*);
using RegisterFn = nvmlReturn_t(nvmlDevice_t, unsigned long long, nvmlEventSet_t);
using WaitFn = nvmlReturn_t(nvmlEventSet_t, nvmlEventData_t*, unsigned int);
using WaitV1Fn = nvmlReturn_t(nvmlEventSet_t, void*, unsigned int);
using SetFreeFn = nvmlReturn_t(nvmlEventSet_t);

class SimTest : public ::testing::Test {
 protected:
  void SetUp() override {
    init_ = Fn<VoidFn>("nvmlInit_v2");
    shutdown_ = Fn<VoidFn>("nvmlShutdown");
    count_ = Fn<UintFn>("nvmlDeviceGetCount_v2");
    by_index_ = Fn<ByIndexFn>("nvmlDeviceGetHandleByIndex_v2");
    temperature_ = Fn<DevIntUintFn>("nvmlDeviceGetTemperature");
    while (shutdown_() == NVML_SUCCESS) {
    }
    unsetenv("GPUWARDEN_SIM_START");
    unsetenv("GPUWARDEN_SIM_BLOCK_SCALE");
  }
  void TearDown() override {
    while (shutdown_() == NVML_SUCCESS) {
    }
  }

  void UseText(const std::string& text) {
    static int n = 0;
    std::string path = WriteTempFile("s" + std::to_string(n++) + ".json", text);
    setenv("GPUWARDEN_SIM_SCENARIO", path.c_str(), 1);
  }
  void UseShipped(const std::string& name) {
    std::string path = gw::test::SourceDir() + "/scenarios/" + name + ".json";
    setenv("GPUWARDEN_SIM_SCENARIO", path.c_str(), 1);
  }
  void StartAt(double unix_s) { setenv("GPUWARDEN_SIM_START", std::to_string(unix_s).c_str(), 1); }
  nvmlDevice_t Handle(unsigned i) {
    nvmlDevice_t d = nullptr;
    EXPECT_EQ(by_index_(i, &d), NVML_SUCCESS) << "GPU " << i;
    return d;
  }
  unsigned Temperature(nvmlDevice_t d) {
    unsigned t = 0;
    EXPECT_EQ(temperature_(d, NVML_TEMPERATURE_GPU, &t), NVML_SUCCESS);
    return t;
  }
  std::vector<unsigned> ComputePids(nvmlDevice_t d) {
    auto f = Fn<ProcsFn>("nvmlDeviceGetComputeRunningProcesses_v3");
    nvmlProcessInfo_t infos[64];
    unsigned n = 64;
    EXPECT_EQ(f(d, &n, infos), NVML_SUCCESS);
    std::vector<unsigned> out;
    for (unsigned i = 0; i < n; ++i) out.push_back(infos[i].pid);
    return out;
  }
  uint64_t UsedBytes(nvmlDevice_t d) {
    nvmlMemory_v2_t m{};
    m.version = nvmlMemory_v2;
    EXPECT_EQ(Fn<MemV2Fn>("nvmlDeviceGetMemoryInfo_v2")(d, &m), NVML_SUCCESS);
    return m.used;
  }

  VoidFn* init_ = nullptr;
  VoidFn* shutdown_ = nullptr;
  UintFn* count_ = nullptr;
  ByIndexFn* by_index_ = nullptr;
  DevIntUintFn* temperature_ = nullptr;
};

double Seconds(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
}

pid_t SpawnSleep() {
  pid_t pid = -1;
  char arg0[] = "sleep";
  char arg1[] = "60";
  char* argv[] = {arg0, arg1, nullptr};
  EXPECT_EQ(posix_spawn(&pid, "/bin/sleep", nullptr, nullptr, argv, environ), 0);
  return pid;
}

// Waits until /proc says `pid` is a zombie.
void AwaitZombie(pid_t pid) {
  for (int i = 0; i < 500; ++i) {
    siginfo_t info{};
    if (waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT) == 0 &&
        info.si_pid == pid) {
      return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ADD_FAILURE() << "child did not exit";
}

TEST_F(SimTest, ExportsOnlyNvmlAndLegacyLacksNewerSymbols) {
  // Internal symbols are hidden.
  EXPECT_EQ(dlsym(FullLib(), "_ZN2gw3sim9Simulator3GetEv"), nullptr);
  const char* newer[] = {"nvmlDeviceGetComputeRunningProcesses_v3",
                         "nvmlDeviceGetGraphicsRunningProcesses_v3",
                         "nvmlDeviceGetMemoryInfo_v2",
                         "nvmlDeviceGetCurrentClocksEventReasons",
                         "nvmlDeviceGetSupportedClocksEventReasons",
                         "nvmlDeviceGetGpuMaxPcieLinkGeneration",
                         "nvmlDeviceGetRemappedRows",
                         "nvmlDeviceGetTemperatureV",
                         "nvmlDeviceGetMPSComputeRunningProcesses_v3"};
  for (const char* s : newer) {
    EXPECT_NE(dlsym(FullLib(), s), nullptr) << s;
    EXPECT_EQ(dlsym(LegacyLib(), s), nullptr) << s;
  }
  const char* older[] = {"nvmlInit_v2", "nvmlInit", "nvmlDeviceGetCount",
                         "nvmlDeviceGetHandleByIndex", "nvmlDeviceGetComputeRunningProcesses",
                         "nvmlDeviceGetComputeRunningProcesses_v2", "nvmlDeviceGetMemoryInfo",
                         "nvmlDeviceGetCurrentClocksThrottleReasons", "nvmlDeviceGetPciInfo_v3",
                         "nvmlEventSetWait_v2", "nvmlErrorString",
                         // What nvtop needs before it monitors anything.
                         "nvmlDeviceGetPcieThroughput", "nvmlDeviceGetEncoderUtilization",
                         "nvmlDeviceGetDecoderUtilization"};
  for (const char* s : older) {
    EXPECT_NE(dlsym(FullLib(), s), nullptr) << s;
    EXPECT_NE(dlsym(LegacyLib(), s), nullptr) << s;
  }
}

TEST_F(SimTest, LegacyVariantServesV1Calls) {
  UseShipped("legacy-r470");
  auto init = reinterpret_cast<VoidFn*>(dlsym(LegacyLib(), "nvmlInit_v2"));
  auto shutdown = reinterpret_cast<VoidFn*>(dlsym(LegacyLib(), "nvmlShutdown"));
  auto by_index = reinterpret_cast<ByIndexFn*>(dlsym(LegacyLib(), "nvmlDeviceGetHandleByIndex"));
  auto procs =
      reinterpret_cast<ProcsV1Fn*>(dlsym(LegacyLib(), "nvmlDeviceGetComputeRunningProcesses"));
  ASSERT_TRUE(init && shutdown && by_index && procs);
  ASSERT_EQ(init(), NVML_SUCCESS);
  nvmlDevice_t d = nullptr;
  ASSERT_EQ(by_index(0, &d), NVML_SUCCESS);
  nvmlProcessInfo_v1_t infos[2];
  unsigned n = 2;
  ASSERT_EQ(procs(d, &n, infos), NVML_SUCCESS);
  ASSERT_EQ(n, 1u);
  EXPECT_EQ(infos[0].pid, 310771u);
  EXPECT_EQ(infos[0].usedGpuMemory, 16384ull << 20);
  EXPECT_EQ(shutdown(), NVML_SUCCESS);
}

TEST_F(SimTest, UninitializedUntilInitAndRefCounted) {
  UseShipped("healthy-idle");
  unsigned n = 0;
  EXPECT_EQ(count_(&n), NVML_ERROR_UNINITIALIZED);
  EXPECT_EQ(shutdown_(), NVML_ERROR_UNINITIALIZED);
  ASSERT_EQ(init_(), NVML_SUCCESS);
  ASSERT_EQ(Fn<VoidFn>("nvmlInit")(), NVML_SUCCESS);
  ASSERT_EQ(Fn<nvmlReturn_t(unsigned)>("nvmlInitWithFlags")(0), NVML_SUCCESS);
  EXPECT_EQ(shutdown_(), NVML_SUCCESS);
  EXPECT_EQ(shutdown_(), NVML_SUCCESS);
  EXPECT_EQ(count_(&n), NVML_SUCCESS);  // One reference left.
  EXPECT_EQ(n, 4u);
  EXPECT_EQ(shutdown_(), NVML_SUCCESS);
  EXPECT_EQ(count_(&n), NVML_ERROR_UNINITIALIZED);
  EXPECT_STREQ(Fn<const char*(nvmlReturn_t)>("nvmlErrorString")(NVML_ERROR_GPU_IS_LOST),
               "GPU is lost");
}

TEST_F(SimTest, HandlesStayValidAcrossReinit) {
  UseShipped("healthy-idle");
  ASSERT_EQ(init_(), NVML_SUCCESS);
  nvmlDevice_t d = Handle(2);
  EXPECT_EQ(shutdown_(), NVML_SUCCESS);
  unsigned t = 0;
  EXPECT_EQ(temperature_(d, NVML_TEMPERATURE_GPU, &t), NVML_ERROR_UNINITIALIZED);
  ASSERT_EQ(init_(), NVML_SUCCESS);
  EXPECT_EQ(Temperature(d), 34u);
}

TEST_F(SimTest, DriverFailuresAtInit) {
  unsigned n = 0;
  UseShipped("driver-not-loaded");
  EXPECT_EQ(init_(), NVML_ERROR_DRIVER_NOT_LOADED);
  EXPECT_EQ(count_(&n), NVML_ERROR_UNINITIALIZED);
  UseShipped("version-mismatch");
  EXPECT_EQ(init_(), NVML_ERROR_LIB_RM_VERSION_MISMATCH);
  EXPECT_EQ(count_(&n), NVML_ERROR_UNINITIALIZED);
  UseShipped("no-gpus");
  ASSERT_EQ(init_(), NVML_SUCCESS);
  EXPECT_EQ(count_(&n), NVML_SUCCESS);
  EXPECT_EQ(n, 0u);
  nvmlDevice_t d = nullptr;
  EXPECT_EQ(by_index_(0, &d), NVML_ERROR_INVALID_ARGUMENT);
  UseText("{\"gpus\": 3}");  // Read only at the next first init.
  EXPECT_EQ(shutdown_(), NVML_SUCCESS);
  EXPECT_EQ(init_(), NVML_ERROR_UNKNOWN);
  EXPECT_EQ(count_(&n), NVML_ERROR_UNINITIALIZED);
}

TEST_F(SimTest, TimelineFollowsTheWallClock) {
  UseText(R"({"gpus": [{"temperature_c": 30}],
              "timeline": [{"at_s": 1000, "gpu": 0, "set": {"temperature_c": 80}}]})");
  StartAt(UnixNow() - 998);  // t = 998 s: the change is 2 s away.
  ASSERT_EQ(init_(), NVML_SUCCESS);
  nvmlDevice_t d = Handle(0);
  EXPECT_EQ(Temperature(d), 30u);
  std::this_thread::sleep_for(std::chrono::milliseconds(2500));
  EXPECT_EQ(Temperature(d), 80u);
}

TEST_F(SimTest, TimelineStartInThePast) {
  UseShipped("timeline-demo");
  StartAt(UnixNow() - 5.5);
  ASSERT_EQ(init_(), NVML_SUCCESS);
  nvmlDevice_t d = Handle(0);
  EXPECT_EQ(Temperature(d), 71u);  // The 5 s entry.
  EXPECT_EQ(ComputePids(d), std::vector<unsigned>{730001});
  EXPECT_EQ(UsedBytes(d), 61440ull << 20);
  EXPECT_EQ(shutdown_(), NVML_SUCCESS);

  StartAt(UnixNow() - 100);  // After the 8 s entry: the job is over.
  ASSERT_EQ(init_(), NVML_SUCCESS);
  d = Handle(0);
  EXPECT_EQ(Temperature(d), 44u);
  EXPECT_TRUE(ComputePids(d).empty());
  EXPECT_EQ(UsedBytes(d), 0u);
}

TEST_F(SimTest, WhileAliveProcessVanishesAndFreesItsMemory) {
  pid_t a = SpawnSleep();
  pid_t b = SpawnSleep();
  setenv("GW_TEST_PID_A", std::to_string(a).c_str(), 1);
  setenv("GW_TEST_PID_B", std::to_string(b).c_str(), 1);
  UseText(R"({"gpus": [
    {"memory": {"total_mib": 80000, "used_mib": 30000, "reserved_mib": 0},
     "processes": [{"pid": "env:GW_TEST_PID_A", "used_mib": 10000, "while_alive": true,
                    "sm_pct": 5, "mem_pct": 1},
                   {"pid": "env:GW_TEST_PID_B", "used_mib": 5000, "while_alive": true},
                   {"pid": 77, "used_mib": 1000}]},
    {"memory": {"total_mib": 80000, "used_mib": 4000, "reserved_mib": 0},
     "keeps_memory_after_exit": true,
     "processes": [{"pid": "env:GW_TEST_PID_A", "used_mib": 4000, "while_alive": true}]}]})");
  ASSERT_EQ(init_(), NVML_SUCCESS);
  nvmlDevice_t d0 = Handle(0);
  nvmlDevice_t d1 = Handle(1);
  EXPECT_EQ(ComputePids(d0),
            (std::vector<unsigned>{static_cast<unsigned>(a), static_cast<unsigned>(b), 77}));
  EXPECT_EQ(UsedBytes(d0), 30000ull << 20);

  // A exits and is reaped: its /proc entry is gone.
  kill(a, SIGKILL);
  waitpid(a, nullptr, 0);
  EXPECT_EQ(ComputePids(d0), (std::vector<unsigned>{static_cast<unsigned>(b), 77}));
  EXPECT_EQ(UsedBytes(d0), 20000ull << 20);
  EXPECT_TRUE(ComputePids(d1).empty());
  EXPECT_EQ(UsedBytes(d1), 4000ull << 20);  // keeps_memory_after_exit.
  unsigned n = 0;
  EXPECT_EQ(Fn<ProcUtilFn>("nvmlDeviceGetProcessUtilization")(d0, nullptr, &n, 0),
            NVML_ERROR_NOT_FOUND);

  // B exits but is not reaped: a zombie counts as gone too.
  kill(b, SIGKILL);
  AwaitZombie(b);
  EXPECT_EQ(ComputePids(d0), std::vector<unsigned>{77});
  EXPECT_EQ(UsedBytes(d0), 15000ull << 20);
  waitpid(b, nullptr, 0);
}

TEST_F(SimTest, RegisteredProcessesFollowTheirPids) {
  char dir_template[] = "/tmp/gw-sim-registry-XXXXXX";
  ASSERT_NE(mkdtemp(dir_template), nullptr);
  const std::string dir = dir_template;
  setenv("GPUWARDEN_SIM_PROCESS_DIR", dir.c_str(), 1);
  pid_t a = SpawnSleep();
  UseText(R"({"gpus": [
    {"uuid": "GPU-aaaa", "memory": {"total_mib": 80000, "used_mib": 1000, "reserved_mib": 0},
     "processes": []},
    {"uuid": "GPU-bbbb", "memory": {"total_mib": 80000, "used_mib": 0, "reserved_mib": 0,
                                    "used_from_processes": true},
     "processes": []}]})");
  ASSERT_EQ(init_(), NVML_SUCCESS);
  nvmlDevice_t d0 = Handle(0);
  nvmlDevice_t d1 = Handle(1);
  EXPECT_TRUE(ComputePids(d0).empty());
  EXPECT_EQ(UsedBytes(d0), 1000ull << 20);
  {
    std::ofstream f(dir + "/" + std::to_string(a));
    f << "GPU-aaaa 20000 50\nGPU-bbbb 3000\nGPU-other 7\nmalformed\n";
  }
  EXPECT_EQ(ComputePids(d0), std::vector<unsigned>{static_cast<unsigned>(a)});
  EXPECT_EQ(UsedBytes(d0), 21000ull << 20);  // On top of used_mib.
  EXPECT_EQ(ComputePids(d1), std::vector<unsigned>{static_cast<unsigned>(a)});
  EXPECT_EQ(UsedBytes(d1), 3000ull << 20);
  // The process ends: gone from the lists and its memory freed.
  kill(a, SIGKILL);
  waitpid(a, nullptr, 0);
  EXPECT_TRUE(ComputePids(d0).empty());
  EXPECT_EQ(UsedBytes(d0), 1000ull << 20);
  EXPECT_EQ(UsedBytes(d1), 0u);
  unsetenv("GPUWARDEN_SIM_PROCESS_DIR");
  std::filesystem::remove_all(dir);
}

TEST_F(SimTest, BlockedGpuDoesNotBlockOtherGpusOrThreads) {
  UseText(R"({"gpus": [{"temperature_c": 50, "block_s": 1}, {"temperature_c": 40}]})");
  ASSERT_EQ(init_(), NVML_SUCCESS);
  nvmlDevice_t d1 = Handle(1);
  auto start = std::chrono::steady_clock::now();
  nvmlDevice_t d0 = Handle(0);  // The lookup blocks too.
  EXPECT_GE(Seconds(start), 0.99);

  std::atomic<int> done{0};
  std::vector<nvmlReturn_t> results(2, NVML_ERROR_UNKNOWN);
  std::vector<unsigned> temps(2, 0);
  start = std::chrono::steady_clock::now();
  std::vector<std::thread> threads;
  for (int i = 0; i < 2; ++i) {
    threads.emplace_back([&, i] {
      results[i] = temperature_(d0, NVML_TEMPERATURE_GPU, &temps[i]);
      ++done;
    });
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_EQ(Temperature(d1), 40u);  // Answers while GPU 0's calls sleep.
  unsigned n = 0;
  EXPECT_EQ(count_(&n), NVML_SUCCESS);
  EXPECT_EQ(done.load(), 0);
  for (auto& t : threads) t.join();
  double both = Seconds(start);
  EXPECT_GE(both, 0.99);
  EXPECT_LT(both, 1.9);  // The two sleeps overlapped: no lock held while blocking.
  for (int i = 0; i < 2; ++i) {
    EXPECT_EQ(results[i], NVML_SUCCESS);
    EXPECT_EQ(temps[i], 50u);
  }

  // The test knob turns blocking off.
  EXPECT_EQ(shutdown_(), NVML_SUCCESS);
  setenv("GPUWARDEN_SIM_BLOCK_SCALE", "0", 1);
  ASSERT_EQ(init_(), NVML_SUCCESS);
  start = std::chrono::steady_clock::now();
  EXPECT_EQ(Temperature(Handle(0)), 50u);
  EXPECT_LT(Seconds(start), 0.9);
}

TEST_F(SimTest, InitBlocksWithoutBlockingOtherCalls) {
  UseText(R"({"driver": {"init_block_s": 1}, "gpus": [{}]})");
  std::atomic<bool> finished{false};
  nvmlReturn_t r = NVML_ERROR_UNKNOWN;
  auto start = std::chrono::steady_clock::now();
  std::thread t([&] {
    r = init_();
    finished = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  unsigned n = 0;
  EXPECT_EQ(count_(&n), NVML_ERROR_UNINITIALIZED);
  EXPECT_FALSE(finished.load());
  t.join();
  EXPECT_EQ(r, NVML_SUCCESS);
  EXPECT_GE(Seconds(start), 0.99);
  EXPECT_EQ(count_(&n), NVML_SUCCESS);
}

TEST_F(SimTest, LostGpuFailsEveryCallButStaysCounted) {
  UseShipped("xid79-fallen-off-bus");
  ASSERT_EQ(init_(), NVML_SUCCESS);
  unsigned n = 0;
  EXPECT_EQ(count_(&n), NVML_SUCCESS);
  EXPECT_EQ(n, 8u);
  nvmlDevice_t d = nullptr;
  EXPECT_EQ(by_index_(5, &d), NVML_ERROR_GPU_IS_LOST);
  EXPECT_EQ(Fn<ByStrFn>("nvmlDeviceGetHandleByPciBusId_v2")("00000000:BB:00.0", &d),
            NVML_ERROR_GPU_IS_LOST);
  EXPECT_EQ(Temperature(Handle(4)), 61u);
  EXPECT_EQ(shutdown_(), NVML_SUCCESS);

  // A handle taken before the GPU falls off starts failing when it does.
  UseShipped("xid79-live");
  StartAt(UnixNow() - 1.5);
  ASSERT_EQ(init_(), NVML_SUCCESS);
  nvmlDevice_t d1 = Handle(1);
  EXPECT_EQ(Temperature(d1), 61u);
  std::this_thread::sleep_for(std::chrono::milliseconds(700));
  unsigned t = 0;
  EXPECT_EQ(temperature_(d1, NVML_TEMPERATURE_GPU, &t), NVML_ERROR_GPU_IS_LOST);
  EXPECT_EQ(by_index_(1, &d), NVML_ERROR_GPU_IS_LOST);
}

TEST_F(SimTest, EventsReachSetsRegisteredBeforeThem) {
  UseText(R"({"gpus": [
    {"supported_events": ["xid", "double_bit_ecc"],
     "events": [{"at_s": 0, "xid": 13}, {"at_s": 0.4, "xid": 79},
                {"at_s": 0.5, "type": "double_bit_ecc"}]},
    {}]})");
  StartAt(UnixNow());
  ASSERT_EQ(init_(), NVML_SUCCESS);
  nvmlDevice_t d0 = Handle(0);
  nvmlDevice_t d1 = Handle(1);
  auto create = Fn<SetCreateFn>("nvmlEventSetCreate");
  auto reg = Fn<RegisterFn>("nvmlDeviceRegisterEvents");
  auto wait = Fn<WaitFn>("nvmlEventSetWait_v2");
  auto wait_v1 = Fn<WaitV1Fn>("nvmlEventSetWait");
  auto release = Fn<SetFreeFn>("nvmlEventSetFree");
  nvmlEventSet_t set = nullptr;
  nvmlEventSet_t set_v1 = nullptr;
  ASSERT_EQ(create(&set), NVML_SUCCESS);
  ASSERT_EQ(create(&set_v1), NVML_SUCCESS);
  const unsigned long long xid_dbe = nvmlEventTypeXidCriticalError | nvmlEventTypeDoubleBitEccError;
  EXPECT_EQ(reg(d1, nvmlEventTypeXidCriticalError, set), NVML_ERROR_NOT_SUPPORTED);
  EXPECT_EQ(reg(d0, nvmlEventTypePState, set), NVML_ERROR_NOT_SUPPORTED);
  ASSERT_EQ(reg(d0, xid_dbe, set), NVML_SUCCESS);
  ASSERT_EQ(reg(d0, xid_dbe, set_v1), NVML_SUCCESS);

  // The Xid 13 at t = 0 came before registration: lost, as with NVML.
  nvmlEventData_t e{};
  ASSERT_EQ(wait(set, &e, 5000), NVML_SUCCESS);
  EXPECT_EQ(e.device, d0);
  EXPECT_EQ(e.eventType, nvmlEventTypeXidCriticalError);
  EXPECT_EQ(e.eventData, 79u);
  EXPECT_EQ(e.gpuInstanceId, 0xFFFFFFFFu);
  EXPECT_EQ(e.computeInstanceId, 0xFFFFFFFFu);
  ASSERT_EQ(wait(set, &e, 5000), NVML_SUCCESS);
  EXPECT_EQ(e.eventType, nvmlEventTypeDoubleBitEccError);
  EXPECT_EQ(e.eventData, 0u);
  EXPECT_EQ(wait(set, &e, 100), NVML_ERROR_TIMEOUT);

  // v1 writes its 24-byte record and nothing past it; each set gets its own copy.
  unsigned char v1[32];
  std::memset(v1, 0xEE, sizeof v1);
  ASSERT_EQ(wait_v1(set_v1, v1, 1000), NVML_SUCCESS);
  unsigned long long data = 0;
  std::memcpy(&data, v1 + 16, sizeof data);
  EXPECT_EQ(data, 79u);
  for (int i = 24; i < 32; ++i) EXPECT_EQ(v1[i], 0xEE) << i;

  EXPECT_EQ(release(set), NVML_SUCCESS);
  EXPECT_EQ(release(set), NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(wait(set, &e, 10), NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(release(set_v1), NVML_SUCCESS);
}

TEST_F(SimTest, ProcessListSizingProtocolAndStride) {
  UseText(R"({"driver": {"process_info_stride": 32}, "gpus": [
    {"processes": [{"pid": 11, "used_mib": 1}, {"pid": 12}, {"pid": 13, "type": "graphics"},
                   {"pid": 14, "type": "compute+graphics", "gpu_instance_id": 1,
                    "compute_instance_id": 0}, {"pid": 15}]},
    {"processes": []}, {}]})");
  ASSERT_EQ(init_(), NVML_SUCCESS);
  auto v3 = Fn<ProcsFn>("nvmlDeviceGetComputeRunningProcesses_v3");
  auto v2 = Fn<ProcsFn>("nvmlDeviceGetComputeRunningProcesses_v2");
  auto g2 = Fn<ProcsFn>("nvmlDeviceGetGraphicsRunningProcesses_v2");
  nvmlDevice_t d = Handle(0);
  unsigned n = 0;
  EXPECT_EQ(v2(d, &n, nullptr), NVML_ERROR_INSUFFICIENT_SIZE);
  EXPECT_EQ(n, 4u);
  nvmlProcessInfo_t infos[4];
  n = 2;
  EXPECT_EQ(v2(d, &n, infos), NVML_ERROR_INSUFFICIENT_SIZE);
  EXPECT_EQ(n, 4u);
  EXPECT_EQ(v2(d, nullptr, infos), NVML_ERROR_INVALID_ARGUMENT);
  ASSERT_EQ(v2(d, &n, infos), NVML_SUCCESS);
  ASSERT_EQ(n, 4u);
  EXPECT_EQ(infos[0].pid, 11u);
  EXPECT_EQ(infos[0].usedGpuMemory, 1ull << 20);
  EXPECT_EQ(infos[1].usedGpuMemory, NVML_VALUE_NOT_AVAILABLE_ULL);
  EXPECT_EQ(infos[1].gpuInstanceId, 0xFFFFFFFFu);
  EXPECT_EQ(infos[2].pid, 14u);
  EXPECT_EQ(infos[2].gpuInstanceId, 1u);
  EXPECT_EQ(infos[2].computeInstanceId, 0u);
  n = 4;
  ASSERT_EQ(g2(d, &n, infos), NVML_SUCCESS);
  EXPECT_EQ(n, 2u);
  EXPECT_EQ(infos[0].pid, 13u);
  EXPECT_EQ(infos[1].pid, 14u);

  // _v3 with stride 32: entries 32 bytes apart, the extra 8 bytes zero.
  unsigned char raw[4 * 32 + 16];
  std::memset(raw, 0xA5, sizeof raw);
  n = 4;
  ASSERT_EQ(v3(d, &n, reinterpret_cast<nvmlProcessInfo_t*>(raw)), NVML_SUCCESS);
  for (unsigned i = 0; i < 4; ++i) {
    unsigned pid = 0;
    std::memcpy(&pid, raw + 32 * i, sizeof pid);
    EXPECT_EQ(pid, (std::vector<unsigned>{11, 12, 14, 15})[i]);
    for (int j = 24; j < 32; ++j) EXPECT_EQ(raw[32 * i + j], 0) << i << "/" << j;
  }
  EXPECT_EQ(raw[4 * 32], 0xA5);  // Nothing past the last entry.

  n = 0;
  EXPECT_EQ(v3(Handle(1), &n, nullptr), NVML_SUCCESS);  // No processes: SUCCESS, 0.
  EXPECT_EQ(n, 0u);
  EXPECT_EQ(v3(Handle(2), &n, nullptr), NVML_ERROR_NOT_SUPPORTED);  // No list at all.
}

TEST_F(SimTest, ProcessUtilizationSamplesNewerThanLastSeen) {
  UseText(R"({"gpus": [{"processes": [{"pid": 21, "sm_pct": 40, "mem_pct": 10, "enc_pct": 3},
                                      {"pid": 22}, {"pid": 23, "sm_pct": 0, "mem_pct": 0}]},
                       {"processes": [{"pid": 31}]}]})");
  ASSERT_EQ(init_(), NVML_SUCCESS);
  auto f = Fn<ProcUtilFn>("nvmlDeviceGetProcessUtilization");
  nvmlDevice_t d = Handle(0);
  unsigned n = 0;
  ASSERT_EQ(f(d, nullptr, &n, 0), NVML_ERROR_INSUFFICIENT_SIZE);
  EXPECT_EQ(n, 2u);
  nvmlProcessUtilizationSample_t s[2];
  n = 1;
  EXPECT_EQ(f(d, s, &n, 0), NVML_ERROR_INSUFFICIENT_SIZE);
  EXPECT_EQ(n, 2u);
  auto now_us = static_cast<unsigned long long>(UnixNow() * 1e6);
  ASSERT_EQ(f(d, s, &n, 0), NVML_SUCCESS);
  ASSERT_EQ(n, 2u);
  EXPECT_EQ(s[0].pid, 21u);
  EXPECT_EQ(s[0].smUtil, 40u);
  EXPECT_EQ(s[0].memUtil, 10u);
  EXPECT_EQ(s[0].encUtil, 3u);
  EXPECT_EQ(s[1].pid, 23u);
  EXPECT_LE(s[0].timeStamp, now_us + 1'000'000);
  EXPECT_GT(s[0].timeStamp + 1'000'000, now_us);
  // Asking again from that timestamp gives only newer samples (or none).
  unsigned long long last = s[0].timeStamp;
  n = 2;
  nvmlReturn_t again = f(d, s, &n, last);
  if (again == NVML_SUCCESS) {
    EXPECT_GT(s[0].timeStamp, last);
  } else {
    EXPECT_EQ(again, NVML_ERROR_NOT_FOUND);
  }
  EXPECT_EQ(f(d, nullptr, &n, now_us + 10'000'000), NVML_ERROR_NOT_FOUND);
  EXPECT_EQ(f(Handle(1), nullptr, &n, 0), NVML_ERROR_NOT_FOUND);  // No samples at all.
}

TEST_F(SimTest, ArgumentChecksLikeNvml) {
  UseShipped("healthy-idle");
  ASSERT_EQ(init_(), NVML_SUCCESS);
  nvmlDevice_t d = Handle(0);
  nvmlDevice_t other = Handle(1);
  unsigned v = 0;
  int not_a_handle = 0;
  EXPECT_EQ(temperature_(reinterpret_cast<nvmlDevice_t>(&not_a_handle), 0, &v),
            NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(temperature_(nullptr, 0, &v), NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(temperature_(d, 1, &v), NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(temperature_(d, 0, nullptr), NVML_ERROR_INVALID_ARGUMENT);
  nvmlDevice_t h = nullptr;
  EXPECT_EQ(by_index_(4, &h), NVML_ERROR_INVALID_ARGUMENT);
  auto threshold = Fn<DevIntUintFn>("nvmlDeviceGetTemperatureThreshold");
  EXPECT_EQ(threshold(d, NVML_TEMPERATURE_THRESHOLD_SLOWDOWN, &v), NVML_SUCCESS);
  EXPECT_EQ(v, 93u);
  EXPECT_EQ(threshold(d, 3, &v), NVML_ERROR_NOT_SUPPORTED);
  EXPECT_EQ(threshold(d, 99, &v), NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(Fn<DevIntUintFn>("nvmlDeviceGetClockInfo")(d, 7, &v), NVML_ERROR_INVALID_ARGUMENT);
  char name[96];
  auto get_name = Fn<DevStrFn>("nvmlDeviceGetName");
  EXPECT_EQ(get_name(d, name, 5), NVML_ERROR_INSUFFICIENT_SIZE);
  EXPECT_EQ(get_name(d, name, 17), NVML_SUCCESS);  // "NVIDIA RTX A6000" + NUL.
  EXPECT_STREQ(name, "NVIDIA RTX A6000");
  nvmlMemory_v2_t m{};
  m.version = 0x01000028;
  EXPECT_EQ(Fn<MemV2Fn>("nvmlDeviceGetMemoryInfo_v2")(d, &m), NVML_ERROR_ARGUMENT_VERSION_MISMATCH);
  nvmlEnableState_t active = NVML_FEATURE_DISABLED;
  auto link = Fn<LinkFn>("nvmlDeviceGetNvLinkState");
  EXPECT_EQ(link(d, 3, &active), NVML_SUCCESS);
  EXPECT_EQ(active, NVML_FEATURE_ENABLED);
  EXPECT_EQ(link(d, 4, &active), NVML_ERROR_INVALID_ARGUMENT);
  nvmlGpuTopologyLevel_t level = 0;
  auto topo = Fn<TopoFn>("nvmlDeviceGetTopologyCommonAncestor");
  EXPECT_EQ(topo(d, d, &level), NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(topo(d, other, &level), NVML_SUCCESS);
  EXPECT_EQ(level, NVML_TOPOLOGY_NODE);
  EXPECT_EQ(topo(other, Handle(2), &level), NVML_SUCCESS);
  EXPECT_EQ(level, NVML_TOPOLOGY_SYSTEM);
  auto by_bus = Fn<ByStrFn>("nvmlDeviceGetHandleByPciBusId_v2");
  EXPECT_EQ(by_bus("0000:3b:00.0", &h), NVML_SUCCESS);  // Short form, lower case.
  EXPECT_EQ(h, other);
  EXPECT_EQ(by_bus("3b:00", &h), NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(by_bus("00000000:3C:00.0", &h), NVML_ERROR_NOT_FOUND);
  EXPECT_EQ(Fn<ByStrFn>("nvmlDeviceGetHandleByUUID")("GPU-nope", &h), NVML_ERROR_NOT_FOUND);
}

TEST_F(SimTest, HandleErrorsAndV1Enumeration) {
  UseShipped("handle-errors");
  ASSERT_EQ(init_(), NVML_SUCCESS);
  unsigned n = 0;
  EXPECT_EQ(count_(&n), NVML_SUCCESS);
  EXPECT_EQ(n, 4u);
  EXPECT_EQ(Fn<UintFn>("nvmlDeviceGetCount")(&n), NVML_SUCCESS);
  EXPECT_EQ(n, 3u);  // v1 skips the GPU without permission.
  nvmlDevice_t d = nullptr;
  EXPECT_EQ(by_index_(1, &d), NVML_ERROR_NO_PERMISSION);
  EXPECT_EQ(by_index_(2, &d), NVML_ERROR_INSUFFICIENT_POWER);
  auto by_index_v1 = Fn<ByIndexFn>("nvmlDeviceGetHandleByIndex");
  EXPECT_EQ(by_index_v1(1, &d), NVML_ERROR_INSUFFICIENT_POWER);  // v1 index 1 = GPU 2.
  ASSERT_EQ(by_index_v1(2, &d), NVML_SUCCESS);
  unsigned index = 0;
  EXPECT_EQ(Fn<DevUintFn>("nvmlDeviceGetIndex")(d, &index), NVML_SUCCESS);
  EXPECT_EQ(index, 3u);
}

TEST_F(SimTest, ConcurrentCallsFromManyThreads) {
  UseShipped("bench-8gpu-64proc");
  ASSERT_EQ(init_(), NVML_SUCCESS);
  std::vector<nvmlDevice_t> handles;
  for (unsigned i = 0; i < 8; ++i) handles.push_back(Handle(i));
  auto v3 = Fn<ProcsFn>("nvmlDeviceGetComputeRunningProcesses_v3");
  auto mem = Fn<MemFn>("nvmlDeviceGetMemoryInfo");
  std::atomic<int> failures{0};
  std::atomic<bool> stop{false};
  // Nested init/shutdown churn alongside: the outer reference keeps the library up.
  std::thread churn([&] {
    while (!stop) {
      if (init_() != NVML_SUCCESS || shutdown_() != NVML_SUCCESS) ++failures;
    }
  });
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 300; ++i) {
        nvmlDevice_t d = handles[(t + i) % 8];
        nvmlProcessInfo_t infos[8];
        unsigned n = 8;
        nvmlMemory_t m;
        unsigned temp = 0;
        if (v3(d, &n, infos) != NVML_SUCCESS || n != 8) ++failures;
        if (mem(d, &m) != NVML_SUCCESS || m.used != (551ull + 8 * 9216) << 20) ++failures;
        if (temperature_(d, 0, &temp) != NVML_SUCCESS || temp != 60) ++failures;
      }
    });
  }
  for (auto& t : threads) t.join();
  stop = true;
  churn.join();
  EXPECT_EQ(failures.load(), 0);
}

// The calls that nvtop, gpustat, nvitop and dcgm-exporter make beyond
// gpuwarden's own, answered from the scenario; a GPU without the fields
// answers NOT_SUPPORTED to each.
constexpr char kPeerCallsScenario[] = R"({
  "gpus": [
    {"name": "NVIDIA H100 80GB HBM3",
     "utilization": {"gpu": 40, "memory": 10, "encoder": 7, "decoder": 12},
     "pcie": {"tx_kb_s": 1500, "rx_kb_s": 250000},
     "bar1": {"total_mib": 131072, "used_mib": 5},
     "cuda_compute_capability": "9.0",
     "total_energy_j": 123456.789,
     "display": {"mode": false, "active": false},
     "brand": "nvidia",
     "architecture": "hopper",
     "power_default_limit_w": 700, "power_min_limit_w": 200, "power_max_limit_w": 700,
     "temperature_c": 41,
     "memory_temperature_c": 48,
     "nvlinks": [{"active": true, "tx_kib": 1000, "rx_kib": 2000},
                 {"active": true, "tx_kib": 30, "rx_kib": 40}],
     "processes": [
       {"pid": 7001, "used_mib": 100, "type": "compute"},
       {"pid": 7002, "used_mib": 200, "type": "mps"},
       {"pid": 7003, "used_mib": 300, "type": "mps"}
     ]},
    {"name": "bare"}
  ]
})";

using CodecFn = nvmlReturn_t(nvmlDevice_t, unsigned int*, unsigned int*);
using IntPairFn = nvmlReturn_t(nvmlDevice_t, int*, int*);
using UintPairFn = nvmlReturn_t(nvmlDevice_t, unsigned int*, unsigned int*);
using UllFn = nvmlReturn_t(nvmlDevice_t, unsigned long long*);
using IntFn = nvmlReturn_t(nvmlDevice_t, int*);

// nvmlBAR1Memory_t, nvmlFieldValue_t and nvmlTemperature_v1_t as nvml.h lays them out.
struct Bar1 {
  unsigned long long total, free, used;
};
struct Field {
  unsigned int fieldId;
  unsigned int scopeId;
  long long timestamp;
  long long latencyUsec;
  int valueType;
  int nvmlReturn;
  unsigned long long value;  // The union's widest member.
};
static_assert(sizeof(Field) == 40);
struct TempV1 {
  unsigned int version;
  int sensorType;
  int temperature;
};

TEST_F(SimTest, PeerToolCallsAnswerFromTheScenario) {
  UseText(kPeerCallsScenario);
  ASSERT_EQ(init_(), NVML_SUCCESS);
  nvmlDevice_t d = Handle(0);
  nvmlDevice_t bare = Handle(1);
  unsigned u = 0, period = 0;
  auto enc = Fn<CodecFn>("nvmlDeviceGetEncoderUtilization");
  auto dec = Fn<CodecFn>("nvmlDeviceGetDecoderUtilization");
  EXPECT_EQ(enc(d, &u, &period), NVML_SUCCESS);
  EXPECT_EQ(u, 7u);
  EXPECT_GT(period, 0u);
  EXPECT_EQ(dec(d, &u, &period), NVML_SUCCESS);
  EXPECT_EQ(u, 12u);
  EXPECT_EQ(enc(bare, &u, &period), NVML_ERROR_NOT_SUPPORTED);
  EXPECT_EQ(enc(d, &u, nullptr), NVML_ERROR_INVALID_ARGUMENT);

  auto pcie = Fn<DevIntUintFn>("nvmlDeviceGetPcieThroughput");
  EXPECT_EQ(pcie(d, 0, &u), NVML_SUCCESS);  // NVML_PCIE_UTIL_TX_BYTES.
  EXPECT_EQ(u, 1500u);
  EXPECT_EQ(pcie(d, 1, &u), NVML_SUCCESS);  // RX.
  EXPECT_EQ(u, 250000u);
  EXPECT_EQ(pcie(d, 2, &u), NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(pcie(bare, 0, &u), NVML_ERROR_NOT_SUPPORTED);

  Bar1 bar1{};
  auto get_bar1 = Fn<nvmlReturn_t(nvmlDevice_t, Bar1*)>("nvmlDeviceGetBAR1MemoryInfo");
  EXPECT_EQ(get_bar1(d, &bar1), NVML_SUCCESS);
  EXPECT_EQ(bar1.total, 131072ull << 20);
  EXPECT_EQ(bar1.used, 5ull << 20);
  EXPECT_EQ(bar1.free, (131072ull - 5) << 20);
  EXPECT_EQ(get_bar1(bare, &bar1), NVML_ERROR_NOT_SUPPORTED);

  int major = 0, minor = -1;
  auto cc = Fn<IntPairFn>("nvmlDeviceGetCudaComputeCapability");
  EXPECT_EQ(cc(d, &major, &minor), NVML_SUCCESS);
  EXPECT_EQ(major, 9);
  EXPECT_EQ(minor, 0);
  EXPECT_EQ(cc(bare, &major, &minor), NVML_ERROR_NOT_SUPPORTED);

  unsigned long long energy = 0;
  auto get_energy = Fn<UllFn>("nvmlDeviceGetTotalEnergyConsumption");
  EXPECT_EQ(get_energy(d, &energy), NVML_SUCCESS);
  EXPECT_EQ(energy, 123456789ull);  // mJ.
  EXPECT_EQ(get_energy(bare, &energy), NVML_ERROR_NOT_SUPPORTED);

  nvmlEnableState_t state = NVML_FEATURE_ENABLED;
  auto display_mode =
      Fn<nvmlReturn_t(nvmlDevice_t, nvmlEnableState_t*)>("nvmlDeviceGetDisplayMode");
  auto display_active =
      Fn<nvmlReturn_t(nvmlDevice_t, nvmlEnableState_t*)>("nvmlDeviceGetDisplayActive");
  EXPECT_EQ(display_mode(d, &state), NVML_SUCCESS);
  EXPECT_EQ(state, NVML_FEATURE_DISABLED);
  state = NVML_FEATURE_ENABLED;
  EXPECT_EQ(display_active(d, &state), NVML_SUCCESS);
  EXPECT_EQ(state, NVML_FEATURE_DISABLED);
  EXPECT_EQ(display_mode(bare, &state), NVML_ERROR_NOT_SUPPORTED);

  int brand = 0;
  EXPECT_EQ(Fn<IntFn>("nvmlDeviceGetBrand")(d, &brand), NVML_SUCCESS);
  EXPECT_EQ(brand, 14);  // NVML_BRAND_NVIDIA.
  EXPECT_EQ(Fn<IntFn>("nvmlDeviceGetBrand")(bare, &brand), NVML_ERROR_NOT_SUPPORTED);
  EXPECT_EQ(Fn<DevUintFn>("nvmlDeviceGetArchitecture")(d, &u), NVML_SUCCESS);
  EXPECT_EQ(u, 9u);  // NVML_DEVICE_ARCH_HOPPER.
  EXPECT_EQ(Fn<DevUintFn>("nvmlDeviceGetArchitecture")(bare, &u), NVML_ERROR_NOT_SUPPORTED);

  unsigned lo = 0, hi = 0;
  auto constraints = Fn<UintPairFn>("nvmlDeviceGetPowerManagementLimitConstraints");
  EXPECT_EQ(constraints(d, &lo, &hi), NVML_SUCCESS);
  EXPECT_EQ(lo, 200000u);
  EXPECT_EQ(hi, 700000u);
  EXPECT_EQ(constraints(bare, &lo, &hi), NVML_ERROR_NOT_SUPPORTED);
  EXPECT_EQ(Fn<DevUintFn>("nvmlDeviceGetPowerManagementDefaultLimit")(d, &u), NVML_SUCCESS);
  EXPECT_EQ(u, 700000u);
}

TEST_F(SimTest, MpsClientsAreListedOnlyByTheMpsCalls) {
  UseText(kPeerCallsScenario);
  ASSERT_EQ(init_(), NVML_SUCCESS);
  nvmlDevice_t d = Handle(0);
  EXPECT_EQ(ComputePids(d), (std::vector<unsigned>{7001}));
  for (const char* name : {"nvmlDeviceGetMPSComputeRunningProcesses_v3",
                           "nvmlDeviceGetMPSComputeRunningProcesses_v2"}) {
    nvmlProcessInfo_t infos[4];
    unsigned n = 4;
    ASSERT_EQ(Fn<ProcsFn>(name)(d, &n, infos), NVML_SUCCESS) << name;
    ASSERT_EQ(n, 2u) << name;
    EXPECT_EQ(infos[0].pid, 7002u);
    EXPECT_EQ(infos[0].usedGpuMemory, 200ull << 20);
    EXPECT_EQ(infos[1].pid, 7003u);
  }
  nvmlProcessInfo_v1_t v1[4];
  unsigned n = 4;
  ASSERT_EQ(Fn<ProcsV1Fn>("nvmlDeviceGetMPSComputeRunningProcesses")(d, &n, v1), NVML_SUCCESS);
  ASSERT_EQ(n, 2u);
  EXPECT_EQ(v1[1].pid, 7003u);
  EXPECT_EQ(v1[1].usedGpuMemory, 300ull << 20);
  n = 4;
  EXPECT_EQ(Fn<ProcsFn>("nvmlDeviceGetMPSComputeRunningProcesses_v3")(Handle(1), &n, nullptr),
            NVML_ERROR_NOT_SUPPORTED);
}

TEST_F(SimTest, FieldValuesAnswerEachFieldOnItsOwn) {
  UseText(kPeerCallsScenario);
  ASSERT_EQ(init_(), NVML_SUCCESS);
  auto get = Fn<nvmlReturn_t(nvmlDevice_t, int, Field*)>("nvmlDeviceGetFieldValues");
  Field f[8] = {};
  f[0].fieldId = 82;   // NVML_FI_DEV_MEMORY_TEMP.
  f[1].fieldId = 91;   // NVML_FI_DEV_NVLINK_LINK_COUNT.
  f[2].fieldId = 138;  // NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX, link 1.
  f[2].scopeId = 1;
  f[3].fieldId = 139;  // RX, every link.
  f[3].scopeId = 0xFFFFFFFF;
  f[4].fieldId = 138;  // A link past the last.
  f[4].scopeId = 2;
  f[5].fieldId = 83;      // NVML_FI_DEV_TOTAL_ENERGY_CONSUMPTION.
  f[6].fieldId = 100000;  // No such field.
  f[7].fieldId = 0xABCDEF;
  ASSERT_EQ(get(Handle(0), 8, f), NVML_SUCCESS);
  EXPECT_EQ(f[0].nvmlReturn, NVML_SUCCESS);
  EXPECT_EQ(f[0].valueType, 1);  // NVML_VALUE_TYPE_UNSIGNED_INT.
  EXPECT_EQ(static_cast<unsigned>(f[0].value), 48u);
  EXPECT_GT(f[0].timestamp, 0);
  EXPECT_EQ(f[1].nvmlReturn, NVML_SUCCESS);
  EXPECT_EQ(static_cast<unsigned>(f[1].value), 2u);
  EXPECT_EQ(f[2].nvmlReturn, NVML_SUCCESS);
  EXPECT_EQ(f[2].valueType, 3);  // NVML_VALUE_TYPE_UNSIGNED_LONG_LONG.
  EXPECT_EQ(f[2].value, 30u);
  EXPECT_EQ(f[3].nvmlReturn, NVML_SUCCESS);
  EXPECT_EQ(f[3].value, 2040u);
  EXPECT_EQ(f[4].nvmlReturn, NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(f[5].nvmlReturn, NVML_SUCCESS);
  EXPECT_EQ(f[5].value, 123456789u);
  EXPECT_EQ(f[6].nvmlReturn, NVML_ERROR_NOT_SUPPORTED);
  EXPECT_EQ(f[7].nvmlReturn, NVML_ERROR_NOT_SUPPORTED);

  Field bare[2] = {};
  bare[0].fieldId = 82;
  bare[1].fieldId = 91;
  ASSERT_EQ(get(Handle(1), 2, bare), NVML_SUCCESS);
  EXPECT_EQ(bare[0].nvmlReturn, NVML_ERROR_NOT_SUPPORTED);
  EXPECT_EQ(bare[1].nvmlReturn, NVML_ERROR_NOT_SUPPORTED);
  EXPECT_EQ(get(Handle(0), 1, nullptr), NVML_ERROR_INVALID_ARGUMENT);
}

// A versioned struct's version word is sizeof | (N << 24); the library takes
// exactly the words of the versions it knows.
TEST_F(SimTest, VersionedStructsTakeOnlyTheRealVersionWords) {
  UseText(R"({"gpus": [{"memory": {"total_mib": 1024, "used_mib": 100, "reserved_mib": 24},
                        "temperature_c": 55}]})");
  ASSERT_EQ(init_(), NVML_SUCCESS);
  nvmlDevice_t d = Handle(0);
  auto memory = Fn<MemV2Fn>("nvmlDeviceGetMemoryInfo_v2");
  struct Case {
    unsigned int word;
    nvmlReturn_t want;
  };
  const Case memory_cases[] = {
      {0x02000028, NVML_SUCCESS},                          // nvmlMemory_v2.
      {2, NVML_ERROR_ARGUMENT_VERSION_MISMATCH},           // What nvtop's master sends.
      {0x01000018, NVML_ERROR_ARGUMENT_VERSION_MISMATCH},  // The 24-byte v1 struct.
      {0x01000028, NVML_ERROR_ARGUMENT_VERSION_MISMATCH},
      {0x03000028, NVML_ERROR_ARGUMENT_VERSION_MISMATCH},
      {0x02000030, NVML_ERROR_ARGUMENT_VERSION_MISMATCH},
      {0, NVML_ERROR_ARGUMENT_VERSION_MISMATCH},
  };
  for (const Case& c : memory_cases) {
    nvmlMemory_v2_t m{};
    m.version = c.word;
    EXPECT_EQ(memory(d, &m), c.want) << std::hex << c.word;
    if (c.want == NVML_SUCCESS) {
      EXPECT_EQ(m.used, 100ull << 20);
      EXPECT_EQ(m.reserved, 24ull << 20);
    } else {
      EXPECT_EQ(m.total, 0u) << "nothing written on a mismatch";
    }
  }
  auto temperature = Fn<nvmlReturn_t(nvmlDevice_t, TempV1*)>("nvmlDeviceGetTemperatureV");
  TempV1 t{0x0100000C, NVML_TEMPERATURE_GPU, 0};  // nvmlTemperature_v1.
  EXPECT_EQ(temperature(d, &t), NVML_SUCCESS);
  EXPECT_EQ(t.temperature, 55);
  for (unsigned int word : {1u, 0x0200000Cu, 0x01000010u}) {
    TempV1 wrong{word, NVML_TEMPERATURE_GPU, -1};
    EXPECT_EQ(temperature(d, &wrong), NVML_ERROR_ARGUMENT_VERSION_MISMATCH) << word;
    EXPECT_EQ(wrong.temperature, -1);
  }
  TempV1 other_sensor{0x0100000C, 1, 0};
  EXPECT_EQ(temperature(d, &other_sensor), NVML_ERROR_INVALID_ARGUMENT);
}

}  // namespace
}  // namespace gw::sim::test
