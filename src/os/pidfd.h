// pidfds: a process pinned by a file descriptor, so that a signal reaches the
// process that was checked even if its PID is reused meanwhile. Raw syscalls:
// glibc's wrappers need headers newer than some build hosts.
#ifndef GPUWARDEN_OS_PIDFD_H_
#define GPUWARDEN_OS_PIDFD_H_

#include <sys/types.h>

#include "core/result.h"
#include "os/unique_fd.h"

namespace gw::os {

// pidfd_open(pid). Errors: "gone" (no such process), "unsupported" (the
// kernel has no pidfds: before 5.3), "error" (anything else, errno's text).
// The descriptor is close-on-exec. Check the process's identity (start time)
// after opening: only then is the pinned process the one that was checked.
Result<UniqueFd> PidfdOpen(pid_t pid);

// pidfd_send_signal. Errors: "gone" (it exited), "denied" (EPERM), "error".
Status PidfdSendSignal(int pidfd, int signal);

// Whether the pinned process has exited (a zombie counts: it holds nothing
// any more). A pidfd becomes readable (POLLIN) when its process exits.
bool PidfdExited(int pidfd);

}  // namespace gw::os

#endif  // GPUWARDEN_OS_PIDFD_H_
