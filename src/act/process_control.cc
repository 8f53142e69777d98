#include "act/process_control.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "proc/proc_parse.h"

namespace gw::act {
namespace {

// Raw syscalls: glibc's wrappers need headers newer than some build hosts.
int PidfdOpen(pid_t pid) { return static_cast<int>(syscall(SYS_pidfd_open, pid, 0)); }
int PidfdSendSignal(int fd, int sig) {
  return static_cast<int>(syscall(SYS_pidfd_send_signal, fd, sig, nullptr, 0));
}

struct StatRead {
  bool exists = false;
  std::optional<uint64_t> start_ticks;
  std::optional<ProcessState> state;
};

class RealHandle final : public ProcessHandle {
 public:
  RealHandle(pid_t pid, int fd, uint64_t start_ticks) : pid_(pid), fd_(fd), ticks_(start_ticks) {}
  ~RealHandle() override {
    if (fd_ >= 0) close(fd_);
  }
  RealHandle(const RealHandle&) = delete;
  RealHandle& operator=(const RealHandle&) = delete;
  pid_t pid() const override { return pid_; }
  int fd() const { return fd_; }
  uint64_t start_ticks() const { return ticks_; }

 private:
  pid_t pid_;
  int fd_;  // -1 without pidfd support.
  uint64_t ticks_;
};

class RealProcessControl final : public ProcessControl {
 public:
  explicit RealProcessControl(std::string proc_root) : proc_root_(std::move(proc_root)) {}

  Result<std::unique_ptr<ProcessHandle>> Open(pid_t pid, uint64_t start_ticks) override {
    if (pid <= 0) return MakeError("error", "invalid PID " + std::to_string(pid));
    // Pin first, then check: if the check passes, the pidfd refers to the
    // process that was checked, whatever happens to the PID afterwards.
    int fd = PidfdOpen(pid);
    if (fd < 0 && errno == ESRCH) return MakeError("gone", "no such process");
    if (fd < 0 && errno != ENOSYS) {
      return MakeError("error", std::string("pidfd_open: ") + std::strerror(errno));
    }
    StatRead now = ReadStat(pid);
    auto fail = [fd](Error e) -> Result<std::unique_ptr<ProcessHandle>> {
      if (fd >= 0) close(fd);
      return e;
    };
    if (!now.exists || !now.start_ticks) return fail(MakeError("gone", "no such process"));
    if (*now.start_ticks != start_ticks) {
      return fail(MakeError("reused", "the PID now belongs to another process, started later"));
    }
    if (now.state == ProcessState::kZombie || now.state == ProcessState::kDead) {
      return fail(MakeError("gone", "it has already exited"));
    }
    return std::unique_ptr<ProcessHandle>(new RealHandle(pid, fd, start_ticks));
  }

  Status Signal(ProcessHandle& process, int signal) override {
    auto& h = static_cast<RealHandle&>(process);
    int rc;
    if (h.fd() >= 0) {
      rc = PidfdSendSignal(h.fd(), signal);
    } else {
      // No pidfd: the narrowest window we have is a check right before kill.
      StatRead now = ReadStat(h.pid());
      if (!now.exists || now.start_ticks != h.start_ticks()) {
        return MakeError("gone", "it has exited");
      }
      rc = kill(h.pid(), signal);
    }
    if (rc == 0) return Status::Ok();
    if (errno == ESRCH) return MakeError("gone", "it has exited");
    if (errno == EPERM) return MakeError("denied", "permission denied");
    return MakeError("error", std::strerror(errno));
  }

  bool Exited(ProcessHandle& process) override {
    auto& h = static_cast<RealHandle&>(process);
    if (h.fd() >= 0) {
      pollfd p{h.fd(), POLLIN, 0};
      if (poll(&p, 1, 0) > 0) return true;
    }
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
  StatRead ReadStat(pid_t pid) const {
    StatRead out;
    std::ifstream in(proc_root_ + "/" + std::to_string(pid) + "/stat");
    if (!in) return out;
    std::stringstream text;
    text << in.rdbuf();
    Result<proc::StatFields> stat = proc::ParseStat(text.str());
    if (!stat.ok()) return out;
    out.exists = true;
    out.start_ticks = stat->start_ticks;
    out.state = proc::StateFromChar(stat->state);
    return out;
  }

  std::string proc_root_;
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
