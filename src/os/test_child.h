// TestChild: a real child process for the tests of code that opens, signals
// and waits for processes (os/pidfd, act/process_control). The child is
// forked here and does nothing but wait for a signal (Sleeper) or exit at once
// (Exiting); whatever a test leaves running or unreaped is killed and reaped
// when the TestChild goes, so a failed assertion leaks no process.
#ifndef GPUWARDEN_OS_TEST_CHILD_H_
#define GPUWARDEN_OS_TEST_CHILD_H_

#include <signal.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <optional>
#include <utility>

namespace gw::os::testing {

class TestChild {
 public:
  // A child that waits in pause() until a signal ends it.
  static TestChild Sleeper() {
    const pid_t pid = fork();
    if (pid == 0) {
      for (;;) pause();
    }
    return TestChild(pid);
  }

  // A child that exits at once with `code`.
  static TestChild Exiting(int code = 0) {
    const pid_t pid = fork();
    if (pid == 0) _exit(code);
    return TestChild(pid);
  }

  TestChild(TestChild&& other) noexcept
      : pid_(std::exchange(other.pid_, -1)), reaped_pid_(other.reaped_pid_) {}
  TestChild& operator=(TestChild&&) = delete;
  TestChild(const TestChild&) = delete;
  TestChild& operator=(const TestChild&) = delete;

  ~TestChild() {
    if (pid_ <= 0) return;
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }

  // The child's PID; <= 0 when fork failed (assert on it: ASSERT_GT(pid(), 0)).
  // Still the child's number after Reap, for tests of what a reaped PID gives.
  pid_t pid() const { return pid_ > 0 ? pid_ : reaped_pid_; }

  // Waits until the child has exited and leaves it a zombie (waitid with
  // WNOWAIT): how it ended, or nullopt when waitid failed.
  std::optional<siginfo_t> WaitExitedNotReaped() const {
    siginfo_t info{};
    if (pid_ <= 0 || waitid(P_PID, static_cast<id_t>(pid_), &info, WEXITED | WNOWAIT) != 0) {
      return std::nullopt;
    }
    return info;
  }

  // Waits for the child and reaps it: its wait status (WIFSIGNALED, ...), or
  // nullopt when waitpid did not return this child.
  std::optional<int> Reap() {
    if (pid_ <= 0) return std::nullopt;
    int status = 0;
    const pid_t got = waitpid(pid_, &status, 0);
    if (got != pid_) return std::nullopt;
    reaped_pid_ = std::exchange(pid_, -1);
    return status;
  }

 private:
  explicit TestChild(pid_t pid) : pid_(pid) {}

  pid_t pid_;              // Running or a zombie: the destructor kills and reaps it.
  pid_t reaped_pid_ = -1;  // Set by Reap.
};

}  // namespace gw::os::testing

#endif  // GPUWARDEN_OS_TEST_CHILD_H_
