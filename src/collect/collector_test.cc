#include "collect/collector.h"

#include <unistd.h>

#include <condition_variable>
#include <memory>
#include <mutex>

#include <gtest/gtest.h>

#include "nvml/fake_nvml_test_util.h"
#include "nvml/probe.h"

namespace gw::collect {
namespace {

GpuProcess Listed(pid_t pid) {
  GpuProcess p;
  p.pid = pid;
  return p;
}

Snapshot TwoGpuSnapshot() {
  Snapshot s;
  Gpu g0;
  g0.index = 0;
  g0.processes.push_back(Listed(100));
  Gpu g1;
  g1.index = 1;
  g1.processes.push_back(Listed(200));
  g1.processes.push_back(Listed(300));  // Listed, but gone from /proc.
  s.gpus = {g0, g1};
  return s;
}

HostProcess Proc(pid_t pid, std::string user) {
  HostProcess p;
  p.pid = pid;
  p.user = std::move(user);
  return p;
}

// A warning names what it is about: the processes whose files were not read.
TEST(PartialScanMessage, NamesTheProcessesByPid) {
  proc::HolderScanStats one;
  one.fd_denied = 1;
  one.denied_pids = {4242};
  EXPECT_EQ(PartialScanMessage(one),
            "could not read the open files of 1 process (permission denied; PID 4242): "
            "device-file holders among them are not shown");
  proc::HolderScanStats many;
  for (pid_t pid = 100; pid < 112; ++pid) many.denied_pids.push_back(pid);
  many.fd_denied = 12;
  const std::string m = PartialScanMessage(many);
  EXPECT_NE(m.find("of 12 processes (permission denied; PIDs 100, 101, 102, 103, 104, 105, 106, "
                   "107, 108, 109 and 2 more, all listed by status --verbose)"),
            std::string::npos)
      << m;
}

TEST(AttachHostProcesses, MarksDriverListedProcessesAndDeviceFiles) {
  Snapshot s = TwoGpuSnapshot();
  std::map<pid_t, HostProcess> host = {
      {100, Proc(100, "alice")}, {200, Proc(200, "bob")}, {400, Proc(400, "carol")}};
  std::map<pid_t, std::vector<std::string>> holders = {{100, {"/dev/nvidia0", "/dev/nvidiactl"}},
                                                       {400, {"/dev/nvidia1"}}};
  AttachHostProcesses(s, host, holders);

  ASSERT_EQ(s.processes.size(), 3u);
  EXPECT_TRUE(s.processes.at(100).listed_by_driver);
  EXPECT_EQ(s.processes.at(100).device_files,
            (std::vector<std::string>{"/dev/nvidia0", "/dev/nvidiactl"}));
  EXPECT_TRUE(s.processes.at(200).listed_by_driver);
  EXPECT_TRUE(s.processes.at(200).device_files.empty());
  // A device-file holder that the driver does not list is kept and marked.
  EXPECT_FALSE(s.processes.at(400).listed_by_driver);
  EXPECT_EQ(s.processes.at(400).user, "carol");
  // A listed PID with no /proc entry is not invented.
  EXPECT_EQ(s.processes.count(300), 0u);
}

TEST(AttachHostProcesses, IgnoresHostProcessesThatNeitherHoldNorAreListed) {
  Snapshot s = TwoGpuSnapshot();
  std::map<pid_t, HostProcess> host = {{999, Proc(999, "dave")}};
  AttachHostProcesses(s, host, {});
  EXPECT_TRUE(s.processes.empty());
}

// Issue 12, class 9: a GPU whose driver call hangs uses up the probe's
// deadline; the /proc reads that follow did not time out and must not be
// reported as PROC_SCAN_TIMEOUT.
TEST(Collect, AHungGpuIsNotAProcScanTimeout) {
  struct Gate {
    std::mutex mu;
    std::condition_variable cv;
    bool open = false;
  };
  auto gate = std::make_shared<Gate>();
  auto fake = std::make_shared<nvml::FakeNvml>();
  fake->gpus.resize(3);
  fake->gpus[0].compute = {{static_cast<uint32_t>(getpid()), 1ULL << 30}};
  fake->gpus[1].before_memory = [gate] {
    std::unique_lock<std::mutex> lock(gate->mu);
    gate->cv.wait(lock, [&] { return gate->open; });
  };
  CollectOptions options;
  options.deadline_ms = 300;
  options.scan_device_files = false;
  {
    nvml::ProbeSession session(
        NvmlProbeOptions(options),
        [fake](const std::string&) -> Result<std::shared_ptr<nvml::NvmlApi>> {
          return std::shared_ptr<nvml::NvmlApi>(fake);
        });
    options.nvml_session = &session;
    RealClock clock;
    const Snapshot s = Collect(options, clock);
    EXPECT_TRUE(s.timed_out);
    bool driver_timeout = false;
    for (const ProbeError& e : s.errors) {
      EXPECT_FALSE(e.source == "proc" && e.code == "timeout") << e.message;
      if (e.source == "nvml" && e.code == "timeout") driver_timeout = true;
    }
    EXPECT_TRUE(driver_timeout);
    // The process GPU 0 lists was read from /proc all the same.
    EXPECT_EQ(s.processes.count(getpid()), 1u);
    {
      std::lock_guard<std::mutex> lock(gate->mu);
      gate->open = true;
    }
    gate->cv.notify_all();
  }
  EXPECT_TRUE(nvml::WaitForProbeWorkers(30000));
}

}  // namespace
}  // namespace gw::collect
