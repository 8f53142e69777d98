#include "render/summary.h"

#include <gtest/gtest.h>

#include "core/units.h"
#include "render/test_snapshots.h"

namespace gw::render {
namespace {

using testing::BusyBox;

TEST(UserLabel, NameThenUidThenQuestionMark) {
  Snapshot s = BusyBox();
  EXPECT_EQ(UserLabel(s, 1001), "alice");
  s.processes.at(1001).user.reset();
  EXPECT_EQ(UserLabel(s, 1001), "1000");
  s.processes.at(1001).uid.reset();
  EXPECT_EQ(UserLabel(s, 1001), "?");
  EXPECT_EQ(UserLabel(s, 3001), "?");  // Not in /proc at all.
}

TEST(GpuIndexForDeviceFile, MapsMinorNumbersNotIndices) {
  Snapshot s = BusyBox();
  EXPECT_EQ(GpuIndexForDeviceFile(s, "/dev/nvidia3"), 3u);
  EXPECT_EQ(GpuIndexForDeviceFile(s, "/dev/nvidiactl"), std::nullopt);
  EXPECT_EQ(GpuIndexForDeviceFile(s, "/dev/nvidia-uvm"), std::nullopt);
  EXPECT_EQ(GpuIndexForDeviceFile(s, "/dev/nvidia9"), std::nullopt);
  EXPECT_EQ(GpuIndexForDeviceFile(s, "/dev/nvidia"), std::nullopt);
  // Minor numbers need not follow the index order.
  s.gpus[0].minor_number = 3;
  s.gpus[3].minor_number = 0;
  EXPECT_EQ(GpuIndexForDeviceFile(s, "/dev/nvidia3"), 0u);
  EXPECT_EQ(GpuIndexForDeviceFile(s, "/dev/nvidia0"), 3u);
}

TEST(UnlistedDeviceHolders, OnlyHoldersNoGpuListsNorFlagMarks) {
  Snapshot s = BusyBox();
  auto holders = UnlistedDeviceHolders(s);
  ASSERT_EQ(holders.size(), 1u);
  EXPECT_EQ(holders[0]->pid, 4001);
  // Alice holds every /dev/nvidia* but is listed: never a holder. Even if
  // the flag was not set, the GPU lists say she is listed.
  s.processes.at(1001).listed_by_driver = false;
  EXPECT_EQ(UnlistedDeviceHolders(s).size(), 1u);
}

TEST(ComputeUserTotals, SumsOverAllGpusAndSortsByMemory) {
  const auto totals = ComputeUserTotals(BusyBox());
  ASSERT_EQ(totals.size(), 4u);
  EXPECT_EQ(totals[0].user, "alice");
  EXPECT_EQ(totals[0].uid, 1000u);
  EXPECT_EQ(totals[0].pids, std::vector<pid_t>({1001}));  // One process on two GPUs.
  EXPECT_EQ(totals[0].gpu_indices, std::vector<unsigned>({0, 1}));
  EXPECT_EQ(totals[0].used_memory_bytes, 80 * kGiB);
  EXPECT_EQ(totals[0].memory_known, 2u);
  EXPECT_EQ(totals[0].memory_unknown, 0u);
  EXPECT_EQ(totals[1].user, "carol");
  EXPECT_EQ(totals[1].used_memory_bytes, 30 * kGiB);
  EXPECT_EQ(totals[2].user, "bob");
  EXPECT_EQ(totals[2].used_memory_bytes, 10 * kGiB);
  EXPECT_EQ(totals[2].unlisted_holder_pids, std::vector<pid_t>({4001}));
  EXPECT_EQ(totals[3].user, "?");
  EXPECT_EQ(totals[3].uid, std::nullopt);
  EXPECT_EQ(totals[3].pids, std::vector<pid_t>({3001}));
}

TEST(ComputeUserTotals, CountsUnknownMemorySeparately) {
  Snapshot s = BusyBox();
  s.gpus[1].processes[0].used_memory_bytes.reset();
  const auto totals = ComputeUserTotals(s);
  ASSERT_EQ(totals[0].user, "alice");
  EXPECT_EQ(totals[0].used_memory_bytes, 60 * kGiB);
  EXPECT_EQ(totals[0].memory_known, 1u);
  EXPECT_EQ(totals[0].memory_unknown, 1u);
}

TEST(CudaVersionString, MajorDotMinor) {
  EXPECT_EQ(CudaVersionString(12040), "12.4");
  EXPECT_EQ(CudaVersionString(12020), "12.2");
  EXPECT_EQ(CudaVersionString(11080), "11.8");
  EXPECT_EQ(CudaVersionString(std::nullopt), std::nullopt);
}

}  // namespace
}  // namespace gw::render
