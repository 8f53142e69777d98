#include "e2e/pty_process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>

namespace gw::test {
namespace {

using Clock = std::chrono::steady_clock;

Clock::time_point Deadline(double timeout_s) {
  return Clock::now() +
         std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(timeout_s));
}

int MillisLeft(Clock::time_point deadline) {
  auto left =
      std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
  return left < 0 ? 0 : static_cast<int>(left);
}

}  // namespace

PtyProcess::PtyProcess(const std::vector<std::string>& argv, const RunOptions& options,
                       unsigned short cols, unsigned short rows) {
  master_ = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
  if (master_ < 0 || grantpt(master_) != 0 || unlockpt(master_) != 0) {
    error_ = std::string("cannot open a pseudo-terminal: ") + std::strerror(errno);
    return;
  }
  char name[128];
  if (ptsname_r(master_, name, sizeof name) != 0) {
    error_ = std::string("ptsname_r: ") + std::strerror(errno);
    return;
  }
  winsize size{};
  size.ws_col = cols;
  size.ws_row = rows;
  ioctl(master_, TIOCSWINSZ, &size);

  // Everything the child needs is built before fork: only async-signal-safe
  // calls may follow it.
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  std::vector<std::string> env_strings = ChildEnvironment(options);
  std::vector<char*> envp;
  for (auto& e : env_strings) envp.push_back(e.data());
  envp.push_back(nullptr);

  pid_ = fork();
  if (pid_ < 0) {
    error_ = std::string("fork: ") + std::strerror(errno);
    return;
  }
  if (pid_ == 0) {
    // A new session whose controlling terminal is the pty: the first terminal
    // a session leader opens becomes its controlling one.
    if (setsid() < 0) _exit(127);
    int slave = open(name, O_RDWR);
    if (slave < 0) _exit(127);
    ioctl(slave, TIOCSCTTY, 0);
    if (dup2(slave, STDIN_FILENO) < 0 || dup2(slave, STDOUT_FILENO) < 0 ||
        dup2(slave, STDERR_FILENO) < 0) {
      _exit(127);
    }
    if (slave > STDERR_FILENO) close(slave);
    if (!AssumeIdentity(options)) _exit(127);
    execve(args[0], args.data(), envp.data());
    _exit(127);
  }
  fcntl(master_, F_SETFL, fcntl(master_, F_GETFL) | O_NONBLOCK);
}

PtyProcess::~PtyProcess() {
  if (pid_ > 0 && !exit_code_) {
    // The program leads its session and process group.
    kill(-pid_, SIGKILL);
    kill(pid_, SIGKILL);
    Reap(true);
  }
  if (master_ >= 0) close(master_);
}

bool PtyProcess::ReadSome(int timeout_ms) {
  if (closed_ || master_ < 0) return false;
  pollfd fd = {master_, POLLIN, 0};
  int n = poll(&fd, 1, timeout_ms);
  if (n < 0) return errno == EINTR;
  if (n == 0) return true;
  char buffer[4096];
  while (true) {
    ssize_t got = read(master_, buffer, sizeof buffer);
    if (got > 0) {
      output_.append(buffer, static_cast<size_t>(got));
      continue;
    }
    if (got < 0 && errno == EINTR) continue;
    if (got < 0 && errno == EAGAIN) return true;
    // EIO (Linux) or EOF: the last process holding the terminal closed it.
    closed_ = true;
    return false;
  }
}

void PtyProcess::Reap(bool block) {
  if (pid_ <= 0 || exit_code_) return;
  int status = 0;
  pid_t r;
  do {
    r = waitpid(pid_, &status, block ? 0 : WNOHANG);
  } while (r < 0 && errno == EINTR);
  if (r != pid_) return;
  if (WIFEXITED(status)) {
    exit_code_ = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    exit_code_ = 128 + WTERMSIG(status);
  }
}

bool PtyProcess::WaitForOutput(const std::string& text, double timeout_s) {
  const auto deadline = Deadline(timeout_s);
  while (output_.find(text) == std::string::npos) {
    if (Clock::now() >= deadline) return false;
    // Short polls, so that a program that ended without closing is noticed.
    if (!ReadSome(std::min(MillisLeft(deadline), 100))) {
      return output_.find(text) != std::string::npos;
    }
  }
  return true;
}

void PtyProcess::Write(const std::string& bytes) {
  size_t done = 0;
  while (master_ >= 0 && done < bytes.size()) {
    ssize_t n = write(master_, bytes.data() + done, bytes.size() - done);
    if (n > 0) {
      done += static_cast<size_t>(n);
    } else if (n < 0 && (errno == EINTR || errno == EAGAIN)) {
      pollfd fd = {master_, POLLOUT, 0};
      poll(&fd, 1, 100);
    } else {
      return;
    }
  }
}

void PtyProcess::WriteLine(const std::string& line) { Write(line + "\r"); }

bool PtyProcess::WaitForExit(double timeout_s) {
  const auto deadline = Deadline(timeout_s);
  while (true) {
    Reap(false);
    if (exit_code_) {
      // What it wrote just before it ended may still be in the terminal's buffer.
      while (!closed_) {
        const size_t before = output_.size();
        if (!ReadSome(0) || output_.size() == before) break;
      }
      return true;
    }
    if (Clock::now() >= deadline) return false;
    if (!ReadSome(std::min(MillisLeft(deadline), 50))) {
      // The terminal has closed: nothing to read until the program is reaped.
      poll(nullptr, 0, std::min(MillisLeft(deadline), 20));
    }
  }
}

}  // namespace gw::test
