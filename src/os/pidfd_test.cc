// pidfds on real children: open, signal, exit, reaping.
#include "os/pidfd.h"

#include <fcntl.h>
#include <grp.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <optional>
#include <string>

#include "os/test_child.h"

namespace gw::os {
namespace {

using testing::TestChild;

// Whether the pidfd turns readable (its process exited) within `ms`.
bool ExitsWithin(int pidfd, int ms) {
  pollfd p{pidfd, POLLIN, 0};
  return poll(&p, 1, ms) == 1 && PidfdExited(pidfd);
}

TEST(Pidfd, OpenSignalAndSeeARealChildExit) {
  TestChild child = TestChild::Sleeper();
  ASSERT_GT(child.pid(), 0);
  Result<UniqueFd> fd = PidfdOpen(child.pid());
  if (!fd.ok() && fd.error().code == "unsupported") GTEST_SKIP() << fd.error().message;
  ASSERT_TRUE(fd.ok()) << fd.error().message;
  ASSERT_TRUE(fd->valid());
  EXPECT_NE(fcntl(fd->get(), F_GETFD) & FD_CLOEXEC, 0);
  EXPECT_FALSE(PidfdExited(fd->get()));
  ASSERT_TRUE(PidfdSendSignal(fd->get(), 0).ok());  // Alive: signal 0 checks.
  EXPECT_FALSE(PidfdExited(fd->get()));

  ASSERT_TRUE(PidfdSendSignal(fd->get(), SIGTERM).ok());
  // A zombie counts as exited: it is not reaped yet.
  EXPECT_TRUE(ExitsWithin(fd->get(), 10000));
  const std::optional<siginfo_t> info = child.WaitExitedNotReaped();
  ASSERT_TRUE(info.has_value());
  EXPECT_EQ(info->si_status, SIGTERM);

  const std::optional<int> status = child.Reap();
  ASSERT_TRUE(status.has_value());
  ASSERT_TRUE(WIFSIGNALED(*status));
  EXPECT_EQ(WTERMSIG(*status), SIGTERM);
  // Reaped: the pidfd still names that process, not whoever gets the PID.
  EXPECT_TRUE(PidfdExited(fd->get()));
  Status late = PidfdSendSignal(fd->get(), SIGKILL);
  ASSERT_FALSE(late.ok());
  EXPECT_EQ(late.error().code, "gone");
}

TEST(Pidfd, AReapedPidIsGone) {
  TestChild child = TestChild::Exiting();
  ASSERT_GT(child.pid(), 0);
  ASSERT_TRUE(child.Reap().has_value());
  const pid_t pid = child.pid();
  Result<UniqueFd> fd = PidfdOpen(pid);
  if (!fd.ok() && fd.error().code == "unsupported") GTEST_SKIP() << fd.error().message;
  ASSERT_FALSE(fd.ok()) << "PID " << pid << " was reused at once";
  EXPECT_EQ(fd.error().code, "gone");
  EXPECT_NE(fd.error().message.find(std::to_string(pid)), std::string::npos);
}

TEST(Pidfd, AnInvalidPidIsAnErrorNotGone) {
  Result<UniqueFd> fd = PidfdOpen(-5);
  ASSERT_FALSE(fd.ok());
  if (fd.error().code == "unsupported") GTEST_SKIP() << fd.error().message;
  EXPECT_EQ(fd.error().code, "error");
  EXPECT_NE(fd.error().message.find("Invalid argument"), std::string::npos) << fd.error().message;
  Status bad = PidfdSendSignal(-1, 0);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().code, "error");
  EXPECT_FALSE(PidfdExited(-1));
}

TEST(Pidfd, SignallingAnotherUsersProcessIsDenied) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to start a child as another uid";
  // The child drops to nobody and tries to signal this (root) process.
  const pid_t parent = getpid();
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    if (setgroups(0, nullptr) != 0 || setresgid(65534, 65534, 65534) != 0 ||
        setresuid(65534, 65534, 65534) != 0) {
      _exit(3);
    }
    Result<UniqueFd> fd = PidfdOpen(parent);
    if (!fd.ok()) _exit(fd.error().code == "unsupported" ? 4 : 5);
    Status s = PidfdSendSignal(fd->get(), 0);
    _exit(!s.ok() && s.error().code == "denied" ? 0 : 6);
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  if (WEXITSTATUS(status) == 4) GTEST_SKIP() << "no pidfds";
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

}  // namespace
}  // namespace gw::os
