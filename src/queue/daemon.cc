#include "queue/daemon.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <utility>

#include <fmt/format.h>

#include "os/errno_text.h"
#include "os/unique_fd.h"
#include "proc/proc_reader.h"
#include "queue/job_table.h"
#include "queue/ops.h"
#include "queue/snapshotter.h"
#include "queue/socket_server.h"
#include "queue/sqlite_job_store.h"

namespace gw::queue {
namespace {

constexpr int kLockWaitTries = 100;  // 2 s

class DaemonImpl final : public Daemon {
 public:
  DaemonImpl(DaemonOptions o, DaemonParts parts) : o_(std::move(o)), parts_(std::move(parts)) {}

  Status Init() {
    if (!parts_.clock) parts_.clock = std::make_unique<RealClock>();
    log_ = parts_.log_sink ? std::make_unique<DaemonLog>(*parts_.clock, parts_.log_sink)
                           : std::make_unique<DaemonLog>(*parts_.clock);
    std::error_code ec;
    std::filesystem::create_directories(o_.state_dir + "/jobs", ec);
    if (ec) return MakeError("io", "state directory " + o_.state_dir + ": " + ec.message());
    chmod(o_.state_dir.c_str(), 0700);
    chmod((o_.state_dir + "/jobs").c_str(), 0700);
    const std::string lock_path = o_.state_dir + "/lock";
    lock_fd_.Reset(open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600));
    if (!lock_fd_.valid()) {
      const int err = errno;
      if (err == EROFS || err == ENOSPC || err == EDQUOT || err == EIO) {
        return MakeError(kStoreUnwritable, "queue storage not writable: " + os::ErrnoText(err) +
                                               " (" + lock_path + ")");
      }
      return MakeError("io", lock_path + ": " + os::ErrnoText(err));
    }
    // A daemon that was just killed may leave its lock held for a moment by
    // a child between fork and exec (the descriptor closes at exec): wait up
    // to kLockWaitTries × 20 ms before calling the directory taken. A live
    // daemon holds it for good.
    int tries = 0;
    while (flock(lock_fd_.get(), LOCK_EX | LOCK_NB) != 0) {
      if ((errno != EWOULDBLOCK && errno != EINTR) || ++tries >= kLockWaitTries) {
        return MakeError("busy", "another gpuwardend uses the state directory " + o_.state_dir);
      }
      poll(nullptr, 0, 20);
    }
    if (!parts_.store) {
      auto store = SqliteJobStore::Open(o_.state_dir + "/queue.db");
      if (!store.ok()) return store.error();
      parts_.store = std::move(*store);
    }
    if (!parts_.supervisors) {
      parts_.supervisors = MakeRealSupervisors(o_.state_dir, o_.collect.proc_root);
    }
    if (!parts_.control) parts_.control = act::MakeRealProcessControl(o_.collect.proc_root);
    procs_ = std::make_unique<proc::ProcReader>(o_.collect.proc_root);

    JobTableOptions to = o_.table;
    to.state_dir = o_.state_dir;
    table_ = std::make_unique<JobTable>(
        to, JobTableParts{*parts_.store, *parts_.supervisors, *parts_.clock, *procs_,
                          *parts_.control, *log_});
    handler_ = std::make_unique<RequestHandler>(*table_, *parts_.clock,
                                                OpsOptions{o_.system_mode, geteuid()});
    auto server = SocketServer::Listen(
        o_.socket_path, o_.system_mode, *parts_.clock,
        [this](const Caller& c, std::string_view line) { return handler_->Handle(c, line); });
    if (!server.ok()) return server.error();
    server_ = std::move(*server);

    sigset_t mask;
    sigemptyset(&mask);
    sigaddset(&mask, SIGTERM);
    sigaddset(&mask, SIGINT);
    sigaddset(&mask, SIGCHLD);
    sigaddset(&mask, SIGHUP);
    pthread_sigmask(SIG_BLOCK, &mask, nullptr);
    signal(SIGPIPE, SIG_IGN);
    signal_fd_.Reset(signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK));
    if (Status s = table_->Recover(); !s.ok()) return s;
    snapshots_ = std::make_unique<Snapshotter>(o_.collect, *parts_.clock);
    snapshots_->Request(/*full=*/true);
    log_->Notice(fmt::format("{} mode, listening on {}, state in {} ({} active jobs)",
                             o_.system_mode ? "system" : "personal", o_.socket_path, o_.state_dir,
                             table_->active().size()));
    return Status::Ok();
  }

  int Run() override {
    const Clock& clock = *parts_.clock;
    while (!stop_) {
      std::vector<pollfd> fds;
      fds.push_back({signal_fd_.get(), POLLIN, 0});
      fds.push_back({snapshots_->fd(), POLLIN, 0});
      const std::vector<JobTable::WatchFd> watches = table_->Watches();
      for (const JobTable::WatchFd& w : watches) fds.push_back({w.fd, POLLIN, 0});
      const size_t server_at = fds.size();
      const size_t server_count = server_->AppendPollFds(fds);
      const int64_t now = clock.MonotonicMs();
      const int64_t wake = std::min(next_poll_ms_, table_->NextPassMs().value_or(next_poll_ms_));
      // A pass due now is INT64_MIN ("at once"): compared, never subtracted
      // from (that overflowed; UBSan stopped the daemon under a burst of
      // submits, and a wrapped difference would have been a 1 s wait).
      const int timeout = wake <= now ? 0 : static_cast<int>(std::min<int64_t>(wake - now, 1000));
      const int n = poll(fds.data(), fds.size(), timeout);
      if (n < 0 && errno != EINTR) {
        log_->Error("poll: " + os::ErrnoText(errno));
        break;
      }
      if (fds[0].revents & POLLIN) HandleSignals();
      if (fds[1].revents & POLLIN) {
        if (auto look = snapshots_->Take())
          table_->OnSnapshot(std::move(look->snapshot), look->full);
      }
      for (size_t i = 0; i < watches.size(); ++i) {
        if (fds[2 + i].revents & (POLLIN | POLLHUP | POLLERR))
          table_->OnSupervisorExit(watches[i].id);
      }
      server_->OnPoll(fds.data() + server_at, server_count);
      if (const int64_t now_ms = clock.MonotonicMs();
          now_ms >= next_poll_ms_ && !snapshots_->busy()) {
        const bool full = now_ms >= next_full_poll_ms_;
        snapshots_->Request(full);
        next_poll_ms_ = now_ms + table_->PollIntervalMs(o_.poll_waiting_ms, o_.poll_idle_ms);
        if (full) next_full_poll_ms_ = now_ms + o_.poll_idle_ms;
      }
      table_->Tick();
      if (table_->TakeLookRequest()) snapshots_->Request(/*full=*/false);
    }
    log_->Notice("stopping; running jobs keep running under their supervisors");
    return 0;
  }

 private:
  void HandleSignals() {
    signalfd_siginfo si;
    while (read(signal_fd_.get(), &si, sizeof si) == sizeof si) {
      if (si.ssi_signo == SIGTERM || si.ssi_signo == SIGINT) stop_ = true;
    }
    // Reap supervisors this daemon started; their Watch descriptors report
    // the end.
    while (waitpid(-1, nullptr, WNOHANG) > 0) {
    }
  }

  DaemonOptions o_;
  DaemonParts parts_;
  std::unique_ptr<DaemonLog> log_;
  std::unique_ptr<proc::ProcReader> procs_;
  std::unique_ptr<JobTable> table_;
  std::unique_ptr<RequestHandler> handler_;
  std::unique_ptr<SocketServer> server_;
  // After the parts its thread reads: destroyed (the thread joined) before them.
  std::unique_ptr<Snapshotter> snapshots_;
  os::UniqueFd lock_fd_;
  os::UniqueFd signal_fd_;
  bool stop_ = false;
  int64_t next_poll_ms_ = 0;
  int64_t next_full_poll_ms_ = 0;  // Light looks in between (see Snapshotter).
};

}  // namespace

Result<std::unique_ptr<Daemon>> Daemon::StartWith(DaemonOptions options, DaemonParts parts) {
  auto d = std::make_unique<DaemonImpl>(std::move(options), std::move(parts));
  if (Status s = d->Init(); !s.ok()) return s.error();
  return std::unique_ptr<Daemon>(std::move(d));
}

Result<std::unique_ptr<Daemon>> Daemon::Start(DaemonOptions options) {
  return StartWith(std::move(options), DaemonParts{});
}

}  // namespace gw::queue
