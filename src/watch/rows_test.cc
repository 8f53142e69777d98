#include "watch/rows.h"

#include <gtest/gtest.h>

#include "core/units.h"
#include "watch/test_fixtures.h"

namespace gw::watch {
namespace {

std::vector<pid_t> Pids(const std::vector<ProcessRow>& rows) {
  std::vector<pid_t> out;
  for (const ProcessRow& r : rows) out.push_back(r.pid);
  return out;
}

TEST(Rows, OneRowPerGpuProcessSortedByVramLargestFirst) {
  UiState ui;
  auto rows = BuildRows(testing::TwoGpus(), ui);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].pid, 4242);
  EXPECT_EQ(rows[0].gpu, "0");
  EXPECT_EQ(rows[0].user, "alice");
  EXPECT_EQ(rows[0].vram_bytes, 60 * kGiB);
  EXPECT_EQ(rows[0].sm_pct, 97u);
  EXPECT_EQ(rows[0].command, "python train.py --epochs 90");
  EXPECT_EQ(rows[1].pid, 5151);
}

TEST(Rows, SortKeysAndDirection) {
  UiState ui;
  ui.sort = SortKey::kAge;
  EXPECT_EQ(Pids(BuildRows(testing::TwoGpus(), ui)), (std::vector<pid_t>{5151, 4242}));
  ui.sort_descending = false;
  EXPECT_EQ(Pids(BuildRows(testing::TwoGpus(), ui)), (std::vector<pid_t>{4242, 5151}));
  ui.sort = SortKey::kCpu;
  ui.sort_descending = true;
  EXPECT_EQ(Pids(BuildRows(testing::TwoGpus(), ui)), (std::vector<pid_t>{4242, 5151}));
}

TEST(Rows, UnknownValuesSortLastEitherWay) {
  Snapshot s = testing::TwoGpus();
  s.gpus[0].processes[0].used_memory_bytes.reset();
  UiState ui;
  EXPECT_EQ(Pids(BuildRows(s, ui)), (std::vector<pid_t>{5151, 4242}));
  ui.sort_descending = false;
  EXPECT_EQ(Pids(BuildRows(s, ui)), (std::vector<pid_t>{5151, 4242}));
}

TEST(Rows, FiltersByUserNameOrUidAndByGpu) {
  UiState ui;
  ui.user_filter = "bob";
  EXPECT_EQ(Pids(BuildRows(testing::TwoGpus(), ui)), (std::vector<pid_t>{5151}));
  ui.user_filter = "1001";
  EXPECT_EQ(Pids(BuildRows(testing::TwoGpus(), ui)), (std::vector<pid_t>{4242}));
  ui.user_filter.clear();
  ui.gpu_filter = {1};
  EXPECT_TRUE(BuildRows(testing::TwoGpus(), ui).empty());
}

TEST(Rows, ProcessesOutsideThisProcAndUnlistedHoldersAreShownAsSuch) {
  Snapshot s = testing::TwoGpus();
  s.gpus[1].processes.push_back(testing::Proc(777, kGiB, 5));  // No /proc entry.
  HostProcess holder = testing::Host(888, 1002, "bob", {"leaky"}, 60);
  holder.listed_by_driver = false;
  holder.device_files = {"/dev/nvidia1", "/dev/nvidiactl"};
  s.processes[888] = holder;
  UiState ui;
  ui.sort = SortKey::kPid;
  ui.sort_descending = false;
  auto rows = BuildRows(s, ui);
  ASSERT_EQ(rows.size(), 4u);
  EXPECT_EQ(rows[0].pid, 777);
  EXPECT_FALSE(rows[0].in_proc);
  EXPECT_EQ(rows[0].user, "?");
  EXPECT_NE(rows[0].command.find("not in this /proc"), std::string::npos);
  EXPECT_EQ(rows[1].pid, 888);
  EXPECT_FALSE(rows[1].listed);
  EXPECT_EQ(rows[1].gpu, "1");
  EXPECT_FALSE(rows[1].vram_bytes);
}

TEST(Rows, TextFromOtherProcessesIsSanitised) {
  Snapshot s = testing::TwoGpus();
  s.processes[4242].cmdline = {"evil\x1b]0;owned\x07", "\x9b"};
  auto rows = BuildRows(s, UiState{});
  EXPECT_EQ(rows[0].command.find('\x1b'), std::string::npos);
  EXPECT_NE(rows[0].command.find("\\x1b"), std::string::npos);
  EXPECT_NE(rows[0].command.find("\\x9b"), std::string::npos);
}

TEST(Rows, TreeGroupsWorkersUnderTheirRunsParent) {
  Snapshot s = testing::EightGpus(3);  // Workers of torchrun 9000 + gpu.
  UiState ui;
  ui.tree = true;
  ui.gpu_filter = {0, 1};
  auto rows = BuildRows(s, ui);
  ASSERT_EQ(rows.size(), 8u);  // Two groups of three workers.
  EXPECT_TRUE(rows[0].group);
  EXPECT_TRUE(rows[0].stop_tree);
  EXPECT_EQ(rows[0].depth, 0);
  EXPECT_EQ(rows[0].vram_bytes, 6 * kGiB);  // Its workers' sum.
  EXPECT_NE(rows[0].command.find("torchrun"), std::string::npos);
  for (int i = 1; i <= 3; ++i) EXPECT_EQ(rows[static_cast<size_t>(i)].depth, 1);
  EXPECT_TRUE(rows[4].group);
}

TEST(Rows, TreePutsAWorkerUnderItsParentRow) {
  Snapshot s = testing::TwoGpus();
  s.processes[5151].ppid = 4242;  // The notebook is the trainer's child.
  UiState ui;
  ui.tree = true;
  auto rows = BuildRows(s, ui);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].pid, 4242);
  EXPECT_EQ(rows[0].depth, 0);
  EXPECT_EQ(rows[1].pid, 5151);
  EXPECT_EQ(rows[1].depth, 1);
}

}  // namespace
}  // namespace gw::watch
