// The signal seam: how clean/kill reach processes. The real implementation
// pins each target with a pidfd, so the process signalled is the process
// that was checked even if its PID is reused meanwhile; tests use a fake
// (fake_process_control.h).
#ifndef GPUWARDEN_ACT_PROCESS_CONTROL_H_
#define GPUWARDEN_ACT_PROCESS_CONTROL_H_

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/result.h"
#include "core/snapshot.h"

namespace gw::act {

// One pinned process. Opaque to callers.
class ProcessHandle {
 public:
  virtual ~ProcessHandle() = default;
  virtual pid_t pid() const = 0;
};

class ProcessControl {
 public:
  virtual ~ProcessControl() = default;

  // Pins the process `pid` if it is still the one that started at
  // `start_ticks` (/proc/PID/stat field 22). Errors: "gone" (no such
  // process, or it already exited), "reused" (the PID now names another
  // process; message says when that one started), "error" (anything else).
  virtual Result<std::unique_ptr<ProcessHandle>> Open(pid_t pid, uint64_t start_ticks) = 0;

  // Sends `signal`. Errors: "gone" (it exited meanwhile), "denied" (EPERM),
  // "error".
  virtual Status Signal(ProcessHandle& process, int signal) = 0;

  // Whether it has exited (a zombie waiting for its parent counts: it holds
  // nothing any more).
  virtual bool Exited(ProcessHandle& process) = 0;

  // Blocks until one of `processes` exits or `timeout_ms` passes; returns at
  // once when one has already exited. Time passes on the Clock the executor
  // was given (the fake advances its FakeClock).
  virtual void WaitAny(const std::vector<ProcessHandle*>& processes, int64_t timeout_ms) = 0;

  // Its state now (D = uninterruptible: signals wait until it leaves the
  // driver or the disk), when readable.
  virtual std::optional<ProcessState> State(ProcessHandle& process) = 0;
};

// pidfd_open / pidfd_send_signal / poll on the pidfd, with start times read
// from `proc_root`/PID/stat. On kernels without pidfds (before 5.3) it falls
// back to kill(2) after re-checking the start time right before each signal.
std::unique_ptr<ProcessControl> MakeRealProcessControl(std::string proc_root = "/proc");

// Signal names: "TERM", "SIGTERM", "term" and "15" all give SIGTERM. Only
// the signals a program can catch to shut down cleanly are accepted for the
// first signal: TERM, INT, HUP, QUIT, USR1, USR2 (KILL is what follows the
// grace period anyway). Error "usage" naming the value otherwise.
Result<int> ParseStopSignal(const std::string& name);
std::string SignalName(int signal);  // "SIGTERM"

}  // namespace gw::act

#endif  // GPUWARDEN_ACT_PROCESS_CONTROL_H_
