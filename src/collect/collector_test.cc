#include "collect/collector.h"

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace gw::collect
