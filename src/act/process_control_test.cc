// The real ProcessControl on real children: pin, check identity, signal, exit.
#include "act/process_control.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>

#include <optional>

#include "os/test_child.h"
#include "proc/proc_reader.h"

namespace gw::act {
namespace {

using os::testing::TestChild;

TEST(RealProcessControl, PinsSignalsAndSeesARealChildExit) {
  TestChild child = TestChild::Sleeper();
  const pid_t pid = child.pid();
  ASSERT_GT(pid, 0);
  Result<proc::StatFields> stat = proc::ProcReader().ReadStat(pid);
  ASSERT_TRUE(stat.ok()) << stat.error().message;
  auto control = MakeRealProcessControl();

  Result<std::unique_ptr<ProcessHandle>> reused = control->Open(pid, stat->start_ticks + 1);
  ASSERT_FALSE(reused.ok());
  EXPECT_EQ(reused.error().code, "reused");

  Result<std::unique_ptr<ProcessHandle>> handle = control->Open(pid, stat->start_ticks);
  ASSERT_TRUE(handle.ok()) << handle.error().message;
  ProcessHandle& h = **handle;
  EXPECT_EQ(h.pid(), pid);
  EXPECT_FALSE(control->Exited(h));
  EXPECT_TRUE(control->State(h).has_value());

  ASSERT_TRUE(control->Signal(h, SIGTERM).ok());
  for (int i = 0; i < 100 && !control->Exited(h); ++i) control->WaitAny({&h}, 100);
  EXPECT_TRUE(control->Exited(h));  // A zombie: not reaped yet.
  const std::optional<int> status = child.Reap();
  ASSERT_TRUE(status.has_value());
  ASSERT_TRUE(WIFSIGNALED(*status));
  EXPECT_EQ(WTERMSIG(*status), SIGTERM);
  EXPECT_TRUE(control->Exited(h));
  Status late = control->Signal(h, SIGKILL);
  ASSERT_FALSE(late.ok());
  EXPECT_EQ(late.error().code, "gone");

  Result<std::unique_ptr<ProcessHandle>> gone = control->Open(pid, stat->start_ticks);
  ASSERT_FALSE(gone.ok());
  EXPECT_EQ(gone.error().code, "gone");
}

TEST(RealProcessControl, AZombieIsNotPinned) {
  TestChild child = TestChild::Exiting();
  const pid_t pid = child.pid();
  ASSERT_GT(pid, 0);
  ASSERT_TRUE(child.WaitExitedNotReaped().has_value());
  Result<proc::StatFields> stat = proc::ProcReader().ReadStat(pid);
  ASSERT_TRUE(stat.ok()) << stat.error().message;
  ASSERT_EQ(stat->state, 'Z');
  Result<std::unique_ptr<ProcessHandle>> handle =
      MakeRealProcessControl()->Open(pid, stat->start_ticks);
  ASSERT_FALSE(handle.ok());
  EXPECT_EQ(handle.error().code, "gone");
  ASSERT_TRUE(child.Reap().has_value());
}

TEST(RealProcessControl, AFakeProcRootIsWhereStartTimesAreRead) {
  // The child is real, but the proc root names no process: nothing is pinned.
  TestChild child = TestChild::Sleeper();
  ASSERT_GT(child.pid(), 0);
  Result<std::unique_ptr<ProcessHandle>> handle =
      MakeRealProcessControl("/nonexistent-proc")->Open(child.pid(), 0);
  ASSERT_FALSE(handle.ok());
  EXPECT_EQ(handle.error().code, "gone");
}

}  // namespace
}  // namespace gw::act
