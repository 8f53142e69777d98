// The running boot and the event-age context of a kernel log.
#include "collect/kernel_log.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

namespace gw::collect {
namespace {

std::string TempFile(const std::string& content) {
  const std::string path =
      (std::filesystem::temp_directory_path() / ("gw_boot_id_" + std::to_string(::getpid())))
          .string();
  std::ofstream(path) << content;
  return path;
}

TEST(KernelLogTest, RunningBootIdAsKmsgEventsCarryIt) {
  const std::string path = TempFile("0B3C1D2E-4f5a-6b7c-8d9e-0a1b2c3d4e5f\n");
  EXPECT_EQ(RunningBootId(path), "0b3c1d2e4f5a6b7c8d9e0a1b2c3d4e5f");
  std::ofstream(path) << "garbage\n";
  EXPECT_EQ(RunningBootId(path), "current");
  std::remove(path.c_str());
  EXPECT_EQ(RunningBootId(path), "current");
}

TEST(KernelLogTest, EventAgeForOwnLogsAndForAFile) {
  Snapshot live;
  live.source = SnapshotSource::kNvml;
  live.host.boot_time_unix_s = 1'700'000'000;
  KernelLog own;
  own.own_logs = true;
  own.running_boot_id = std::string(32, 'a');
  kmsg::EventAgeOptions o = EventAgeFor(own, live, 7200.0);
  EXPECT_EQ(o.running_boot_id, own.running_boot_id);
  EXPECT_EQ(o.running_boot_start_unix_ms, int64_t{1'700'000'000'000});
  EXPECT_EQ(o.since_s, 7200.0);
  // A named file is judged by its own last boot, even beside a live snapshot.
  KernelLog file;
  o = EventAgeFor(file, live, std::nullopt);
  EXPECT_TRUE(o.running_boot_id.empty());
  EXPECT_FALSE(o.running_boot_start_unix_ms);
  EXPECT_FALSE(o.since_s);
  // A dump's host boot time is not this machine's.
  Snapshot dump = live;
  dump.source = SnapshotSource::kXmlDump;
  EXPECT_FALSE(EventAgeFor(own, dump, std::nullopt).running_boot_start_unix_ms);
}

}  // namespace
}  // namespace gw::collect
