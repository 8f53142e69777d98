#include "os/pidfd.h"

#include <poll.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>

#include "os/errno_text.h"

namespace gw::os {

Result<UniqueFd> PidfdOpen(pid_t pid) {
  const int fd = static_cast<int>(syscall(SYS_pidfd_open, pid, 0));
  if (fd >= 0) return UniqueFd(fd);  // pidfds are always close-on-exec.
  const int err = errno;
  if (err == ESRCH) return MakeError("gone", "process " + std::to_string(pid) + " is gone");
  if (err == ENOSYS) return MakeError("unsupported", "this kernel has no pidfd_open (Linux < 5.3)");
  return MakeError("error", "pidfd_open " + std::to_string(pid) + ": " + ErrnoText(err));
}

Status PidfdSendSignal(int pidfd, int signal) {
  if (syscall(SYS_pidfd_send_signal, pidfd, signal, nullptr, 0) == 0) return Status::Ok();
  const int err = errno;
  if (err == ESRCH) return MakeError("gone", "the process has exited");
  if (err == EPERM) return MakeError("denied", ErrnoText(err));
  return MakeError("error", "pidfd_send_signal: " + ErrnoText(err));
}

bool PidfdExited(int pidfd) {
  pollfd p{pidfd, POLLIN, 0};
  for (;;) {
    const int n = poll(&p, 1, 0);
    if (n < 0 && errno == EINTR) continue;
    return n > 0 && (p.revents & (POLLIN | POLLHUP | POLLERR)) != 0;
  }
}

}  // namespace gw::os
