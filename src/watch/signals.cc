#include "watch/signals.h"

#include <fcntl.h>
#include <signal.h>
#include <termios.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "os/errno_text.h"

namespace gw::watch {
namespace {

constexpr int kForwarded[] = {SIGINT, SIGTERM, SIGHUP, SIGWINCH};
constexpr int kCrash[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGTRAP, SIGSYS};

// Shared with the handlers: written before they are installed (or, for the
// restore sequence, while a crash signal is blocked), read only in them.
int g_pipe_write = -1;
char g_restore[512];
volatile sig_atomic_t g_restore_len = 0;
struct termios g_saved_modes;
volatile sig_atomic_t g_have_modes = 0;

struct sigaction g_old_forwarded[std::size(kForwarded)];
struct sigaction g_old_crash[std::size(kCrash)];
bool g_installed = false;

void OnForwarded(int sig) {
  const int saved = errno;
  const unsigned char byte = static_cast<unsigned char>(sig);
  [[maybe_unused]] ssize_t n = write(g_pipe_write, &byte, 1);
  errno = saved;
}

void OnCrash(int sig) {
  // Only async-signal-safe calls here: write, tcsetattr, sigaction, raise.
  if (g_restore_len > 0) {
    [[maybe_unused]] ssize_t n =
        write(STDOUT_FILENO, g_restore, static_cast<size_t>(g_restore_len));
  }
  if (g_have_modes) tcsetattr(STDIN_FILENO, TCSANOW, &g_saved_modes);
  struct sigaction dfl;
  std::memset(&dfl, 0, sizeof dfl);
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  sigaction(sig, &dfl, nullptr);
  // SA_NODEFER: the signal is not blocked here, so this delivers it now
  // with the default action. A fault that returned would re-fault anyway.
  raise(sig);
}

}  // namespace

Result<int> InstallSignalHandlers() {
  if (g_installed) return MakeError("internal", "signal handlers installed twice");
  int fds[2];
  if (pipe2(fds, O_CLOEXEC | O_NONBLOCK) != 0) {
    return MakeError("io", "pipe: " + os::ErrnoText(errno));
  }
  g_pipe_write = fds[1];
  if (tcgetattr(STDIN_FILENO, &g_saved_modes) == 0) g_have_modes = 1;

  struct sigaction sa;
  std::memset(&sa, 0, sizeof sa);
  sa.sa_handler = OnForwarded;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  for (size_t i = 0; i < std::size(kForwarded); ++i) {
    sigaction(kForwarded[i], &sa, &g_old_forwarded[i]);
  }
  struct sigaction crash;
  std::memset(&crash, 0, sizeof crash);
  crash.sa_handler = OnCrash;
  sigemptyset(&crash.sa_mask);
  crash.sa_flags = SA_NODEFER | SA_RESETHAND;
  for (size_t i = 0; i < std::size(kCrash); ++i) sigaction(kCrash[i], &crash, &g_old_crash[i]);
  g_installed = true;
  return fds[0];
}

void SetCrashRestoreSequence(const std::string& bytes) {
  // Block the crash signals while the buffer changes, so a handler never
  // sees half of it.
  sigset_t block;
  sigset_t old;
  sigemptyset(&block);
  for (int sig : kCrash) sigaddset(&block, sig);
  pthread_sigmask(SIG_BLOCK, &block, &old);
  const size_t n = std::min(bytes.size(), sizeof g_restore);
  std::memcpy(g_restore, bytes.data(), n);
  g_restore_len = static_cast<sig_atomic_t>(n);
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
}

void RestoreSignalHandlers() {
  if (!g_installed) return;
  for (size_t i = 0; i < std::size(kForwarded); ++i) {
    sigaction(kForwarded[i], &g_old_forwarded[i], nullptr);
  }
  for (size_t i = 0; i < std::size(kCrash); ++i) sigaction(kCrash[i], &g_old_crash[i], nullptr);
  g_restore_len = 0;
  g_installed = false;
}

}  // namespace gw::watch
