#include "nvml/probe.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "nvml/fake_nvml_test_util.h"

namespace gw::nvml {
namespace {

// A gate a fake call waits at until the test opens it: a wedged driver that
// the test can un-wedge once it has checked the probe did not wait for it.
struct Gate {
  std::mutex mu;
  std::condition_variable cv;
  bool open = false;

  void Wait() {
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] { return open; });
  }
  void Open() {
    std::lock_guard<std::mutex> lock(mu);
    open = true;
    cv.notify_all();
  }
};

NvmlOpener OpenerFor(std::shared_ptr<FakeNvml> fake) {
  return [fake](const std::string&) -> Result<std::shared_ptr<NvmlApi>> {
    return std::shared_ptr<NvmlApi>(fake);
  };
}

class ProbeTest : public ::testing::Test {
 protected:
  void SetUp() override { unsetenv("GPUWARDEN_SIM_SCENARIO"); }
  void TearDown() override {
    // No worker may outlive its test: the next test's counters would move.
    EXPECT_TRUE(WaitForProbeWorkers(30000));
  }
  // The one worker still waits for a GPU's call gated by `gate`: let it
  // return, and see the worker end and shut NVML down once.
  static void ReleaseTheStuckWorker(Gate& gate, const FakeNvml& fake) {
    EXPECT_EQ(ProbeWorkersRunning(), 1);
    gate.Open();
    ASSERT_TRUE(WaitForProbeWorkers(30000));
    EXPECT_EQ(fake.shutdown_calls, 1);
  }
  FakeClock clock_;
};

TEST_F(ProbeTest, CompleteProbe) {
  auto fake = std::make_shared<FakeNvml>();
  fake->gpus.resize(2);
  ProbeOptions options;
  options.library_path = "/some/libnvidia-ml.so.1";
  options.deadline_ms = 30000;
  ProbeResult result = ProbeNvml(options, clock_, OpenerFor(fake));
  const Snapshot& s = result.snapshot;
  EXPECT_FALSE(s.timed_out);
  EXPECT_TRUE(s.errors.empty());
  ASSERT_EQ(s.gpus.size(), 2u);
  EXPECT_EQ(s.gpus[1].name, "Fake GPU 1");
  EXPECT_EQ(s.source, SnapshotSource::kNvml);
  EXPECT_EQ(s.source_detail, "/some/libnvidia-ml.so.1");
  EXPECT_EQ(s.time_unix_ms, clock_.NowUnixMs());
  EXPECT_GE(s.probe_duration_ms, 0.0);
  ASSERT_TRUE(WaitForProbeWorkers(30000));
  EXPECT_EQ(fake->init_calls, 1);
  EXPECT_EQ(fake->shutdown_calls, 1);
  EXPECT_EQ(ProbeWorkersRunning(), 0);
}

TEST_F(ProbeTest, SimulatorScenarioMarksTheSource) {
  setenv("GPUWARDEN_SIM_SCENARIO", "/tmp/scenario.json", 1);
  auto fake = std::make_shared<FakeNvml>();
  ProbeResult result = ProbeNvml({}, clock_, OpenerFor(fake));
  unsetenv("GPUWARDEN_SIM_SCENARIO");
  EXPECT_EQ(result.snapshot.source, SnapshotSource::kSimulated);
  EXPECT_EQ(result.snapshot.source_detail, "/tmp/scenario.json");
}

TEST_F(ProbeTest, DeadlineReturnsWhatWasReadAndNamesTheStuckCall) {
  auto gate = std::make_shared<Gate>();
  auto fake = std::make_shared<FakeNvml>();
  fake->gpus.resize(4);
  fake->gpus[2].before_memory = [gate] { gate->Wait(); };
  ProbeOptions options;
  options.deadline_ms = 1000;
  ProbeResult result = ProbeNvml(options, clock_, OpenerFor(fake));
  const Snapshot& s = result.snapshot;

  EXPECT_TRUE(s.timed_out);
  ASSERT_EQ(s.errors.size(), 1u);
  EXPECT_EQ(s.errors[0].source, "nvml");
  EXPECT_EQ(s.errors[0].code, "timeout");
  EXPECT_EQ(s.errors[0].message,
            "driver not responding: nvmlDeviceGetMemoryInfo_v2 on GPU 2 did not return within "
            "1.0 s");
  EXPECT_EQ(s.errors[0].gpu_index, 2u);
  EXPECT_EQ(s.system.driver_version, "550.90.07");
  ASSERT_EQ(s.gpus.size(), 4u);
  for (unsigned i : {0u, 1u}) {
    EXPECT_EQ(s.gpus[i].name, "Fake GPU " + std::to_string(i));
    EXPECT_TRUE(s.gpus[i].memory.total_bytes.has_value());
    EXPECT_FALSE(s.gpus[i].unreachable.has_value()) << i;
  }
  // GPU 2: what was read before the stuck call is kept.
  EXPECT_EQ(s.gpus[2].name, "Fake GPU 2");
  EXPECT_FALSE(s.gpus[2].memory.total_bytes.has_value());
  ASSERT_TRUE(s.gpus[2].unreachable.has_value());
  EXPECT_EQ(s.gpus[2].unreachable->code, "timeout");
  EXPECT_EQ(s.gpus[2].unreachable->message, s.errors[0].message);
  // GPU 3 comes after the hung GPU and is read all the same: its calls run
  // on a thread of their own.
  EXPECT_EQ(s.gpus[3].index, 3u);
  EXPECT_EQ(s.gpus[3].name, "Fake GPU 3");
  EXPECT_TRUE(s.gpus[3].memory.total_bytes.has_value());
  EXPECT_EQ(s.gpus[3].temperature_c, 45);
  EXPECT_TRUE(s.gpus[3].processes_known);
  EXPECT_FALSE(s.gpus[3].unreachable.has_value());
  // Topology between the GPUs read (0-1, 0-3, 1-3), none with the hung one.
  ASSERT_EQ(s.topology.size(), 3u);
  for (const TopologyLink& link : s.topology) {
    EXPECT_NE(link.gpu_a, 2u);
    EXPECT_NE(link.gpu_b, 2u);
  }

  // The worker is still waiting for the GPU's thread inside the "driver";
  // once it returns it stops at its next call and NVML is shut down.
  ReleaseTheStuckWorker(*gate, *fake);
}

// The case: a wedge on GPU 0 of 8 no longer makes all eight unknown.
TEST_F(ProbeTest, AHungFirstGpuOfEightCostsThatGpuOnly) {
  auto gate = std::make_shared<Gate>();
  auto fake = std::make_shared<FakeNvml>();
  fake->gpus.resize(8);
  fake->gpus[0].before_memory = [gate] { gate->Wait(); };
  for (unsigned i = 0; i < 8; ++i) fake->gpus[i].compute = {{1000 + i, 1ULL << 30}};
  ProbeOptions options;
  options.deadline_ms = 1000;
  ProbeResult result = ProbeNvml(options, clock_, OpenerFor(fake));
  const Snapshot& s = result.snapshot;

  EXPECT_TRUE(s.timed_out);
  ASSERT_EQ(s.errors.size(), 1u);
  EXPECT_EQ(s.errors[0].code, "timeout");
  EXPECT_EQ(s.errors[0].message,
            "driver not responding: nvmlDeviceGetMemoryInfo_v2 on GPU 0 did not return within "
            "1.0 s");
  EXPECT_EQ(s.errors[0].gpu_index, 0u);
  ASSERT_EQ(s.gpus.size(), 8u);
  ASSERT_TRUE(s.gpus[0].unreachable.has_value());
  EXPECT_EQ(s.gpus[0].unreachable->code, "timeout");
  EXPECT_EQ(s.gpus[0].unreachable->message, s.errors[0].message);
  EXPECT_EQ(s.gpus[0].name, "Fake GPU 0");  // Read before the call that hung.
  EXPECT_FALSE(s.gpus[0].memory.total_bytes.has_value());
  for (unsigned i = 1; i < 8; ++i) {
    const Gpu& gpu = s.gpus[i];
    EXPECT_EQ(gpu.index, i);
    EXPECT_FALSE(gpu.unreachable.has_value()) << i;
    EXPECT_EQ(gpu.name, "Fake GPU " + std::to_string(i));
    EXPECT_EQ(gpu.memory.total_bytes, 80ULL << 30) << i;
    EXPECT_EQ(gpu.temperature_c, 45) << i;
    EXPECT_TRUE(gpu.processes_known) << i;
    ASSERT_EQ(gpu.processes.size(), 1u) << i;
    EXPECT_EQ(gpu.processes[0].pid, static_cast<pid_t>(1000 + i));
  }
  // Every pair of the seven read, in pair order.
  ASSERT_EQ(s.topology.size(), 21u);
  EXPECT_EQ(s.topology.front().gpu_a, 1u);
  EXPECT_EQ(s.topology.front().gpu_b, 2u);
  EXPECT_EQ(s.topology.back().gpu_a, 6u);
  EXPECT_EQ(s.topology.back().gpu_b, 7u);

  ReleaseTheStuckWorker(*gate, *fake);
}

// A GPU whose reader finishes while the worker is inside a topology call
// (the look's lock let go) is seen at once: its signal came while no one
// waited, so the worker must look again before waiting.
TEST_F(ProbeTest, AGpuReadDuringATopologyCallIsNotMissed) {
  auto gate = std::make_shared<Gate>();
  auto fake = std::make_shared<FakeNvml>();
  fake->gpus.resize(3);
  // GPU 0 is read last: it waits until GPUs 1 and 2 are read and their pair
  // is being asked, then finishes during that call.
  fake->gpus[0].before_memory = [gate] { gate->Wait(); };
  auto opened = std::make_shared<std::atomic<bool>>(false);
  fake->in_topology = [gate, opened] {
    if (!opened->exchange(true)) {
      gate->Open();
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
    }
  };
  ProbeOptions options;
  options.deadline_ms = 5000;
  const auto started = std::chrono::steady_clock::now();
  ProbeResult result = ProbeNvml(options, clock_, OpenerFor(fake));
  const auto took = std::chrono::steady_clock::now() - started;
  EXPECT_FALSE(result.snapshot.timed_out);
  EXPECT_LT(took, std::chrono::milliseconds(3000));
  ASSERT_EQ(result.snapshot.gpus.size(), 3u);
  EXPECT_EQ(result.snapshot.topology.size(), 3u);
  ASSERT_TRUE(WaitForProbeWorkers(30000));
}

// Several GPUs hung at once: each carries its own call.
TEST_F(ProbeTest, EachHungGpuNamesItsOwnCall) {
  auto gate = std::make_shared<Gate>();
  auto fake = std::make_shared<FakeNvml>();
  fake->gpus.resize(3);
  fake->gpus[0].before_memory = [gate] { gate->Wait(); };
  fake->gpus[2].before_memory = [gate] { gate->Wait(); };
  ProbeOptions options;
  options.deadline_ms = 500;
  const Snapshot s = ProbeNvml(options, clock_, OpenerFor(fake)).snapshot;
  ASSERT_EQ(s.errors.size(), 2u);
  EXPECT_EQ(s.errors[0].gpu_index, 0u);
  EXPECT_NE(s.errors[0].message.find("on GPU 0 did not return"), std::string::npos);
  EXPECT_EQ(s.errors[1].gpu_index, 2u);
  EXPECT_NE(s.errors[1].message.find("on GPU 2 did not return"), std::string::npos);
  ASSERT_EQ(s.gpus.size(), 3u);
  EXPECT_EQ(s.gpus[0].unreachable->message, s.errors[0].message);
  EXPECT_FALSE(s.gpus[1].unreachable.has_value());
  EXPECT_TRUE(s.gpus[1].memory.total_bytes.has_value());
  EXPECT_EQ(s.gpus[2].unreachable->message, s.errors[1].message);
  gate->Open();
  ASSERT_TRUE(WaitForProbeWorkers(30000));
  EXPECT_EQ(fake->shutdown_calls, 1);
}

// Issue 12, class 9: an unreachable GPU before the hung one shifts nothing:
// the hang is GPU 2's, GPU 1 keeps its own error, GPU 3 is not blamed.
TEST_F(ProbeTest, AnUnreachableGpuBeforeTheHungOneKeepsIndexes) {
  auto gate = std::make_shared<Gate>();
  auto fake = std::make_shared<FakeNvml>();
  fake->gpus.resize(4);
  fake->gpus[1].handle_result = NVML_ERROR_NO_PERMISSION;
  fake->gpus[2].before_memory = [gate] { gate->Wait(); };
  ProbeOptions options;
  options.deadline_ms = 500;
  ProbeResult result = ProbeNvml(options, clock_, OpenerFor(fake));
  const Snapshot& s = result.snapshot;
  EXPECT_TRUE(s.timed_out);
  ASSERT_EQ(s.gpus.size(), 4u);
  for (unsigned i = 0; i < 4; ++i) EXPECT_EQ(s.gpus[i].index, i);
  ASSERT_TRUE(s.gpus[1].unreachable.has_value());
  EXPECT_EQ(s.gpus[1].unreachable->code, "no_permission");
  EXPECT_EQ(s.gpus[1].unreachable->gpu_index, 1u);
  ASSERT_TRUE(s.gpus[2].unreachable.has_value());
  EXPECT_EQ(s.gpus[2].unreachable->code, "timeout");
  EXPECT_EQ(s.gpus[2].name, "Fake GPU 2");
  EXPECT_FALSE(s.gpus[3].unreachable.has_value());
  EXPECT_FALSE(s.gpus[0].unreachable.has_value());
  unsigned timeouts = 0;
  for (const ProbeError& e : s.errors) {
    if (e.code != "timeout") continue;
    ++timeouts;
    EXPECT_EQ(e.gpu_index, 2u);
    EXPECT_NE(e.message.find("on GPU 2 "), std::string::npos) << e.message;
  }
  EXPECT_EQ(timeouts, 1u);
  gate->Open();
  ASSERT_TRUE(WaitForProbeWorkers(30000));
}

TEST_F(ProbeTest, StuckInitIsNamed) {
  auto gate = std::make_shared<Gate>();
  auto fake = std::make_shared<FakeNvml>();
  fake->gpus.resize(1);
  fake->before_init = [gate] { gate->Wait(); };
  ProbeOptions options;
  options.deadline_ms = 500;
  ProbeResult result = ProbeNvml(options, clock_, OpenerFor(fake));
  EXPECT_TRUE(result.snapshot.timed_out);
  ASSERT_EQ(result.snapshot.errors.size(), 1u);
  EXPECT_EQ(result.snapshot.errors[0].message,
            "driver not responding: nvmlInit_v2 did not return within 0.5 s");
  EXPECT_FALSE(result.snapshot.errors[0].gpu_index.has_value());
  EXPECT_TRUE(result.snapshot.gpus.empty());
  gate->Open();
  ASSERT_TRUE(WaitForProbeWorkers(30000));
  // Init did return in the end, so NVML was shut down again.
  EXPECT_EQ(fake->shutdown_calls, 1);
}

TEST_F(ProbeTest, StuckLoadIsNamed) {
  auto gate = std::make_shared<Gate>();
  ProbeOptions options;
  options.library_path = "/x/libnvidia-ml.so.1";
  options.deadline_ms = 200;
  ProbeResult result =
      ProbeNvml(options, clock_, [gate](const std::string&) -> Result<std::shared_ptr<NvmlApi>> {
        gate->Wait();
        return MakeError("library_not_found", "gone");
      });
  EXPECT_TRUE(result.snapshot.timed_out);
  ASSERT_EQ(result.snapshot.errors.size(), 1u);
  EXPECT_EQ(result.snapshot.errors[0].message,
            "driver not responding: loading /x/libnvidia-ml.so.1 did not finish within 0.2 s");
  gate->Open();
}

TEST_F(ProbeTest, MissingLibraryIsAnErrorNotACrash) {
  ProbeOptions options;
  options.library_path = "/nonexistent/libnvidia-ml.so.1";
  ProbeResult result = ProbeNvml(options, clock_);
  const Snapshot& s = result.snapshot;
  EXPECT_FALSE(s.timed_out);
  ASSERT_EQ(s.errors.size(), 1u);
  EXPECT_EQ(s.errors[0].source, "nvml");
  EXPECT_EQ(s.errors[0].code, "library_not_found");
  EXPECT_NE(s.errors[0].message.find("/nonexistent/libnvidia-ml.so.1"), std::string::npos);
  EXPECT_TRUE(s.gpus.empty());
}

TEST_F(ProbeTest, LibraryThatIsNotNvml) {
  ProbeOptions options;
  options.library_path = "libm.so.6";
  ProbeResult result = ProbeNvml(options, clock_);
  ASSERT_EQ(result.snapshot.errors.size(), 1u);
  EXPECT_EQ(result.snapshot.errors[0].code, "library_not_found");
  EXPECT_EQ(result.snapshot.errors[0].message,
            "libm.so.6: exports neither nvmlInit_v2 nor nvmlInit: not an NVML library");
  EXPECT_FALSE(result.snapshot.system.gpu_count.has_value());
}

// --- ProbeSession --------------------------------------------------------------

TEST_F(ProbeTest, SessionInitialisesOnceAndShutsDownAtTheEnd) {
  auto fake = std::make_shared<FakeNvml>();
  fake->gpus.resize(2);
  fake->gpus[1].compute = {{4242, 1ULL << 30}};
  ProbeOptions options;
  options.deadline_ms = 30000;
  {
    ProbeSession session(options, OpenerFor(fake));
    for (int look = 0; look < 3; ++look) {
      // What the driver says changes between looks, and each look sees it.
      fake->gpus[1].compute[0].used = (look + 1) * (1ULL << 30);
      const Snapshot s = session.Probe(clock_).snapshot;
      EXPECT_FALSE(s.timed_out) << look;
      EXPECT_TRUE(s.errors.empty()) << look;
      ASSERT_EQ(s.gpus.size(), 2u);
      ASSERT_EQ(s.gpus[1].processes.size(), 1u);
      EXPECT_EQ(s.gpus[1].processes[0].used_memory_bytes, (look + 1) * (1ULL << 30));
      EXPECT_EQ(fake->init_calls, 1) << look;
      EXPECT_EQ(fake->shutdown_calls, 0) << look;
    }
    // Between looks nothing is inside the driver.
    EXPECT_TRUE(WaitForProbeWorkers(30000));
    EXPECT_EQ(ProbeWorkersRunning(), 0);
  }
  EXPECT_EQ(fake->shutdown_calls, 1);
}

// Waits until exactly `n` probe workers run (a reader that finished a look
// leaves the count a moment after the look has its answer).
bool WorkersSettleAt(int n) {
  for (int i = 0; i < 3000; ++i) {
    if (ProbeWorkersRunning() == n) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

TEST_F(ProbeTest, SessionReportsAGpuStillInTheDriverAndRecovers) {
  auto gate = std::make_shared<Gate>();
  auto fake = std::make_shared<FakeNvml>();
  fake->gpus.resize(2);
  fake->gpus[1].before_memory = [gate] { gate->Wait(); };
  ProbeOptions options;
  options.deadline_ms = 300;
  ProbeSession session(options, OpenerFor(fake));
  Snapshot s = session.Probe(clock_).snapshot;
  EXPECT_TRUE(s.timed_out);
  ASSERT_FALSE(s.errors.empty());
  EXPECT_EQ(s.errors.back().code, "timeout");
  EXPECT_EQ(s.errors.back().message,
            "driver not responding: nvmlDeviceGetMemoryInfo_v2 on GPU 1 did not return within "
            "0.3 s");
  EXPECT_EQ(s.gpus.size(), 2u);  // What was read first is kept.

  // The next look finds GPU 1's reader still stuck and says which call holds
  // it; GPU 0 is read as usual.
  s = session.Probe(clock_).snapshot;
  EXPECT_TRUE(s.timed_out);
  ASSERT_EQ(s.errors.size(), 1u);
  EXPECT_EQ(s.errors[0].code, "timeout");
  EXPECT_EQ(s.errors[0].gpu_index, 1u);
  EXPECT_NE(s.errors[0].message.find("nvmlDeviceGetMemoryInfo_v2 on GPU 1"), std::string::npos)
      << s.errors[0].message;
  EXPECT_NE(s.errors[0].message.find("still in the driver"), std::string::npos);
  ASSERT_EQ(s.gpus.size(), 2u);
  EXPECT_TRUE(s.gpus[0].memory.total_bytes.has_value());
  ASSERT_TRUE(s.gpus[1].unreachable.has_value());
  EXPECT_EQ(s.gpus[1].unreachable->message, s.errors[0].message);
  EXPECT_TRUE(WorkersSettleAt(1));

  // The driver comes back: the next look is whole, with NVML initialised once.
  gate->Open();  // The gate stays open: later looks pass it at once.
  ASSERT_TRUE(WaitForProbeWorkers(30000));
  s = session.Probe(clock_).snapshot;
  EXPECT_FALSE(s.timed_out);
  EXPECT_TRUE(s.errors.empty());
  ASSERT_EQ(s.gpus.size(), 2u);
  EXPECT_TRUE(s.gpus[1].memory.total_bytes.has_value());
  EXPECT_EQ(fake->init_calls, 1);
}

// The case in a session (gpuwardend, watch): GPU 0 of 8 stuck. The
// next look does not wait for it, reads the seven others, and starts no
// second thread for GPU 0.
TEST_F(ProbeTest, SessionLookAfterAStuckGpuReadsTheOthersAtOnce) {
  auto gate = std::make_shared<Gate>();
  auto entered = std::make_shared<std::atomic<int>>(0);
  auto fake = std::make_shared<FakeNvml>();
  fake->gpus.resize(8);
  fake->gpus[0].before_memory = [gate, entered] {
    ++*entered;
    gate->Wait();
  };
  ProbeOptions options;
  options.deadline_ms = 3000;
  ProbeSession session(options, OpenerFor(fake));
  Snapshot s = session.Probe(clock_).snapshot;
  EXPECT_TRUE(s.timed_out);
  ASSERT_EQ(s.gpus.size(), 8u);
  ASSERT_TRUE(s.gpus[0].unreachable.has_value());
  for (unsigned i = 1; i < 8; ++i) EXPECT_TRUE(s.gpus[i].memory.total_bytes.has_value()) << i;

  for (int look = 0; look < 3; ++look) {
    s = session.Probe(clock_).snapshot;
    // Done well before its deadline: it did not wait for GPU 0.
    EXPECT_LT(s.probe_duration_ms, 2500.0) << look;
    EXPECT_TRUE(s.timed_out);
    ASSERT_EQ(s.errors.size(), 1u) << look;
    EXPECT_EQ(s.errors[0].message,
              "driver not responding: nvmlDeviceGetMemoryInfo_v2 on GPU 0 did not return within "
              "3.0 s (and is still in the driver)");
    ASSERT_EQ(s.gpus.size(), 8u);
    ASSERT_TRUE(s.gpus[0].unreachable.has_value());
    EXPECT_EQ(s.gpus[0].unreachable->message, s.errors[0].message);
    for (unsigned i = 1; i < 8; ++i) {
      EXPECT_FALSE(s.gpus[i].unreachable.has_value()) << i;
      EXPECT_EQ(s.gpus[i].name, "Fake GPU " + std::to_string(i));
      EXPECT_EQ(s.gpus[i].memory.total_bytes, 80ULL << 30) << i;
    }
    EXPECT_EQ(s.topology.size(), 21u);
    // One thread stuck in GPU 0's call, however many looks asked.
    EXPECT_EQ(entered->load(), 1);
    EXPECT_TRUE(WorkersSettleAt(1)) << ProbeWorkersRunning();
  }

  gate->Open();
  ASSERT_TRUE(WaitForProbeWorkers(30000));
  s = session.Probe(clock_).snapshot;
  EXPECT_FALSE(s.timed_out);
  EXPECT_TRUE(s.errors.empty());
  EXPECT_TRUE(s.gpus[0].memory.total_bytes.has_value());
  EXPECT_EQ(entered->load(), 2);  // Asked again once its reader was back.
  EXPECT_EQ(fake->init_calls, 1);
}

// The look's own call hangs (nvmlInit, initialising again after the driver
// changed): the GPUs an earlier look listed are listed as not tried, nothing
// read and no error of their own, and the timeout names the call.
TEST_F(ProbeTest, SessionListsTheGpusItCouldNotTryWhenInitHangs) {
  auto gate = std::make_shared<Gate>();
  auto fake = std::make_shared<FakeNvml>();
  fake->gpus.resize(2);
  ProbeOptions options;
  options.deadline_ms = 500;
  ProbeSession session(options, OpenerFor(fake));
  EXPECT_TRUE(session.Probe(clock_).snapshot.errors.empty());
  fake->gpus[0].handle_result = NVML_ERROR_UNINITIALIZED;  // The driver was reloaded.
  EXPECT_FALSE(session.Probe(clock_).snapshot.errors.empty());
  ASSERT_TRUE(WaitForProbeWorkers(30000));
  fake->gpus[0].handle_result = NVML_SUCCESS;
  fake->before_init = [gate] { gate->Wait(); };
  for (int look = 0; look < 2; ++look) {
    const Snapshot s = session.Probe(clock_).snapshot;
    EXPECT_TRUE(s.timed_out);
    ASSERT_EQ(s.errors.size(), 1u);
    EXPECT_NE(s.errors[0].message.find("nvmlInit_v2 did not return"), std::string::npos)
        << s.errors[0].message;
    EXPECT_FALSE(s.errors[0].gpu_index.has_value());
    EXPECT_FALSE(s.system.gpu_count.has_value());
    ASSERT_EQ(s.gpus.size(), 2u) << look;
    for (unsigned i = 0; i < 2; ++i) {
      EXPECT_EQ(s.gpus[i].index, i);
      EXPECT_FALSE(s.gpus[i].unreachable.has_value());
      EXPECT_FALSE(s.gpus[i].name.has_value());
    }
  }
  gate->Open();
  ASSERT_TRUE(WaitForProbeWorkers(30000));
  fake->before_init = nullptr;
}

TEST_F(ProbeTest, SessionEndsAtOnceWhileALookIsStuckAndTheWorkerCleansUpLater) {
  auto gate = std::make_shared<Gate>();
  auto fake = std::make_shared<FakeNvml>();
  fake->gpus.resize(1);
  fake->gpus[0].before_memory = [gate] { gate->Wait(); };
  ProbeOptions options;
  options.deadline_ms = 2000;
  auto session = std::make_unique<ProbeSession>(options, OpenerFor(fake));
  EXPECT_TRUE(session->Probe(clock_).snapshot.timed_out);
  const auto start = std::chrono::steady_clock::now();
  session.reset();  // Does not wait out another deadline for the stuck worker.
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(1000));
  EXPECT_EQ(fake->shutdown_calls, 0);
  // The driver comes back: the worker finishes its look and shuts NVML down.
  gate->Open();
  ASSERT_TRUE(WaitForProbeWorkers(30000));
  for (int i = 0; i < 3000 && fake->shutdown_calls == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(fake->shutdown_calls, 1);
}

TEST_F(ProbeTest, SessionInitialisesAgainWhenTheDriverChanged) {
  auto fake = std::make_shared<FakeNvml>();
  fake->gpus.resize(1);
  ProbeOptions options;
  options.deadline_ms = 30000;
  ProbeSession session(options, OpenerFor(fake));
  EXPECT_TRUE(session.Probe(clock_).snapshot.errors.empty());
  // The driver was reloaded: the session's NVML answers "uninitialised".
  fake->gpus[0].handle_result = NVML_ERROR_UNINITIALIZED;
  Snapshot s = session.Probe(clock_).snapshot;
  ASSERT_FALSE(s.errors.empty());
  EXPECT_EQ(s.errors[0].nvml_return, NVML_ERROR_UNINITIALIZED);
  fake->gpus[0].handle_result = NVML_SUCCESS;
  ASSERT_TRUE(WaitForProbeWorkers(30000));
  EXPECT_EQ(fake->shutdown_calls, 1);
  s = session.Probe(clock_).snapshot;
  EXPECT_TRUE(s.errors.empty());
  EXPECT_EQ(fake->init_calls, 2);
}

}  // namespace
}  // namespace gw::nvml
