// The real ProcessControl on real children: pin, check identity, signal, exit.
#include "act/process_control.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "proc/proc_reader.h"

namespace gw::act {
namespace {

pid_t StartSleeper() {
  const pid_t pid = fork();
  if (pid == 0) {
    for (;;) pause();
  }
  return pid;
}

TEST(RealProcessControl, PinsSignalsAndSeesARealChildExit) {
  const pid_t pid = StartSleeper();
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
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFSIGNALED(status));
  EXPECT_EQ(WTERMSIG(status), SIGTERM);
  EXPECT_TRUE(control->Exited(h));
  Status late = control->Signal(h, SIGKILL);
  ASSERT_FALSE(late.ok());
  EXPECT_EQ(late.error().code, "gone");

  Result<std::unique_ptr<ProcessHandle>> gone = control->Open(pid, stat->start_ticks);
  ASSERT_FALSE(gone.ok());
  EXPECT_EQ(gone.error().code, "gone");
}

TEST(RealProcessControl, AZombieIsNotPinned) {
  const pid_t pid = fork();
  if (pid == 0) _exit(0);
  ASSERT_GT(pid, 0);
  siginfo_t info{};
  ASSERT_EQ(waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOWAIT), 0);
  Result<proc::StatFields> stat = proc::ProcReader().ReadStat(pid);
  ASSERT_TRUE(stat.ok()) << stat.error().message;
  ASSERT_EQ(stat->state, 'Z');
  Result<std::unique_ptr<ProcessHandle>> handle =
      MakeRealProcessControl()->Open(pid, stat->start_ticks);
  ASSERT_FALSE(handle.ok());
  EXPECT_EQ(handle.error().code, "gone");
  ASSERT_EQ(waitpid(pid, nullptr, 0), pid);
}

TEST(RealProcessControl, AFakeProcRootIsWhereStartTimesAreRead) {
  // The child is real, but the proc root names no process: nothing is pinned.
  const pid_t pid = StartSleeper();
  ASSERT_GT(pid, 0);
  Result<std::unique_ptr<ProcessHandle>> handle =
      MakeRealProcessControl("/nonexistent-proc")->Open(pid, 0);
  kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
  ASSERT_FALSE(handle.ok());
  EXPECT_EQ(handle.error().code, "gone");
}

}  // namespace
}  // namespace gw::act
