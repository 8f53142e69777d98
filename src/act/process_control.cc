#include "act/process_control.h"

#include <poll.h>
#include <signal.h>

#include <algorithm>
#include <cerrno>
#include <utility>

#include "os/errno_text.h"
#include "os/pidfd.h"
#include "os/unique_fd.h"
#include "proc/proc_parse.h"
#include "proc/proc_reader.h"

namespace gw::act {
namespace {

struct StatRead {
  bool exists = false;
  std::optional<uint64_t> start_ticks;
  std::optional<ProcessState> state;
};

class RealHandle final : public ProcessHandle {
 public:
  RealHandle(pid_t pid, os::UniqueFd fd, uint64_t start_ticks)
      : pid_(pid), fd_(std::move(fd)), ticks_(start_ticks) {}
  pid_t pid() const override { return pid_; }
  int fd() const { return fd_.get(); }
  uint64_t start_ticks() const { return ticks_; }

 private:
  pid_t pid_;
  os::UniqueFd fd_;  // Not valid without pidfd support.
  uint64_t ticks_;
};

class RealProcessControl final : public ProcessControl {
 public:
  explicit RealProcessControl(std::string proc_root) : reader_(std::move(proc_root)) {}

  Result<std::unique_ptr<ProcessHandle>> Open(pid_t pid, uint64_t start_ticks) override {
    if (pid <= 0) return MakeError("error", "invalid PID " + std::to_string(pid));
    // Pin first, then check: if the check passes, the pidfd refers to the
    // process that was checked, whatever happens to the PID afterwards.
    Result<os::UniqueFd> pinned = os::PidfdOpen(pid);
    os::UniqueFd fd;
    if (pinned.ok()) {
      fd = std::move(pinned).value();
    } else if (pinned.error().code == "gone") {
      return MakeError("gone", "no such process");
    } else if (pinned.error().code != "unsupported") {
      return MakeError("error", pinned.error().message);
    }
    StatRead now = ReadStat(pid);
    if (!now.exists || !now.start_ticks) return MakeError("gone", "no such process");
    if (*now.start_ticks != start_ticks) {
      return MakeError("reused", "the PID now belongs to another process, started later");
    }
    if (now.state == ProcessState::kZombie || now.state == ProcessState::kDead) {
      return MakeError("gone", "it has already exited");
    }
    return std::unique_ptr<ProcessHandle>(new RealHandle(pid, std::move(fd), start_ticks));
  }

  Status Signal(ProcessHandle& process, int signal) override {
    auto& h = static_cast<RealHandle&>(process);
    if (h.fd() >= 0) {
      Status sent = os::PidfdSendSignal(h.fd(), signal);
      if (sent.ok()) return sent;
      if (sent.error().code == "gone") return MakeError("gone", "it has exited");
      if (sent.error().code == "denied") return MakeError("denied", "permission denied");
      return MakeError("error", sent.error().message);
    }
    // No pidfd: the narrowest window we have is a check right before kill.
    StatRead now = ReadStat(h.pid());
    if (!now.exists || now.start_ticks != h.start_ticks()) {
      return MakeError("gone", "it has exited");
    }
    if (kill(h.pid(), signal) == 0) return Status::Ok();
    if (errno == ESRCH) return MakeError("gone", "it has exited");
    if (errno == EPERM) return MakeError("denied", "permission denied");
    return MakeError("error", os::ErrnoText(errno));
  }

  bool Exited(ProcessHandle& process) override {
    auto& h = static_cast<RealHandle&>(process);
    if (h.fd() >= 0 && os::PidfdExited(h.fd())) return true;
    StatRead now = ReadStat(h.pid());
    return !now.exists || now.start_ticks != h.start_ticks() ||
           now.state == ProcessState::kZombie || now.state == ProcessState::kDead;
  }

  void WaitAny(const std::vector<ProcessHandle*>& processes, int64_t timeout_ms) override {
    std::vector<pollfd> fds;
    bool all_pinned = true;
    for (ProcessHandle* p : processes) {
      if (Exited(*p)) return;
      auto* h = static_cast<RealHandle*>(p);
      if (h->fd() >= 0) {
        fds.push_back({h->fd(), POLLIN, 0});
      } else {
        all_pinned = false;
      }
    }
    if (timeout_ms <= 0) return;
    // A zombie whose parent never reaps it makes its pidfd readable, which
    // Exited() counts; without pidfds, poll the stat files.
    const int step = all_pinned ? static_cast<int>(std::min<int64_t>(timeout_ms, 1 << 30))
                                : static_cast<int>(std::min<int64_t>(timeout_ms, 50));
    poll(fds.data(), fds.size(), step);
  }

  std::optional<ProcessState> State(ProcessHandle& process) override {
    auto& h = static_cast<RealHandle&>(process);
    StatRead now = ReadStat(h.pid());
    if (!now.exists || now.start_ticks != h.start_ticks()) return std::nullopt;
    return now.state;
  }

 private:
  // Any failure to read the stat file (gone, unreadable, malformed) counts
  // as no such process: nothing is signalled on a guess.
  StatRead ReadStat(pid_t pid) const {
    StatRead out;
    Result<proc::StatFields> stat = reader_.ReadStat(pid);
    if (!stat.ok()) return out;
    out.exists = true;
    out.start_ticks = stat->start_ticks;
    out.state = proc::StateFromChar(stat->state);
    return out;
  }

  const proc::ProcReader reader_;
};

struct NamedSignal {
  const char* name;
  int number;
};
constexpr NamedSignal kStopSignals[] = {{"TERM", SIGTERM}, {"INT", SIGINT},   {"HUP", SIGHUP},
                                        {"QUIT", SIGQUIT}, {"USR1", SIGUSR1}, {"USR2", SIGUSR2}};

}  // namespace

std::unique_ptr<ProcessControl> MakeRealProcessControl(std::string proc_root) {
  return std::make_unique<RealProcessControl>(std::move(proc_root));
}

Result<int> ParseStopSignal(const std::string& name) {
  std::string upper;
  for (char c : name) upper += static_cast<char>(c >= 'a' && c <= 'z' ? c - 'a' + 'A' : c);
  if (upper.rfind("SIG", 0) == 0) upper = upper.substr(3);
  for (const NamedSignal& s : kStopSignals) {
    if (upper == s.name || upper == std::to_string(s.number)) return s.number;
  }
  return MakeError("usage", "--signal " + name +
                                ": not a signal a program can catch to stop cleanly (use TERM, "
                                "INT, HUP, QUIT, USR1 or USR2; KILL follows the grace period)");
}

std::string SignalName(int signal) {
  if (signal == SIGKILL) return "SIGKILL";
  for (const NamedSignal& s : kStopSignals) {
    if (s.number == signal) return std::string("SIG") + s.name;
  }
  return "signal " + std::to_string(signal);
}

}  // namespace gw::act
