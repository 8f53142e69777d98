#include "queue/launcher.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <optional>

#include "os/errno_text.h"
#include "os/file_io.h"
#include "os/pidfd.h"
#include "os/unique_fd.h"
#include "queue/job_environment.h"
#include "proc/proc_reader.h"
#include "queue/process_stat.h"
#include "queue/supervisor.h"

#ifndef CLOSE_RANGE_CLOEXEC
#define CLOSE_RANGE_CLOEXEC (1U << 2)
#endif

namespace gw::queue {
namespace {

using os::ErrnoText;
using os::UniqueFd;

// The supervisor needs nothing from the daemon's environment.
constexpr char kSupervisorEnvPath[] =
    "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
constexpr int64_t kExecConfirmTimeoutMs = 30000;
constexpr char kDefaultProcRoot[] = "/proc";

// mkdir 0700 unless it exists; either way it must pass CheckPrivateDir.
Status EnsurePrivateDir(const std::string& path) {
  if (mkdir(path.c_str(), 0700) != 0 && errno != EEXIST) {
    return MakeError("io", "mkdir " + path + ": " + ErrnoText(errno));
  }
  return CheckPrivateDir(path);
}

// A daemon started with stdin, stdout or stderr closed gets those numbers
// back from open(); the child's dup2 onto 0-2 would then clobber one
// descriptor with another. Moves `fd` (close-on-exec) to 3 or above.
int AboveStdio(int fd) {
  if (fd < 0 || fd > STDERR_FILENO) return fd;
  const int moved = fcntl(fd, F_DUPFD_CLOEXEC, STDERR_FILENO + 1);
  const int err = errno;
  close(fd);
  errno = err;
  return moved;
}

}  // namespace

Result<PreparedRun> PrepareRun(const Job& job, const LaunchOptions& o) {
  const JobSpec& js = job.spec;
  auto usage = [&](const std::string& why) {
    return MakeError("usage", fmt::format("job {}: {}", job.id, why));
  };
  if (o.state_dir.empty() || o.state_dir[0] != '/') return usage("state_dir is not absolute");
  if (js.argv.empty() || js.argv[0].empty()) return usage("no command");
  for (const std::string& a : js.argv) {
    if (HasNul(a)) return usage("an argument contains a NUL byte");
  }
  for (const std::string& e : js.env) {
    if (HasNul(e)) return usage("an environment entry contains a NUL byte");
  }
  if (js.cwd.empty() || js.cwd[0] != '/' || HasNul(js.cwd)) {
    return usage("the working directory is not an absolute path");
  }
  for (const std::string* p : {&job.stdout_path, &job.stderr_path}) {
    if (!p->empty() && ((*p)[0] != '/' || HasNul(*p))) return usage("a log path is not absolute");
  }
  if (job.gpu_uuids.size() != js.gpus) {
    return usage(fmt::format("{} GPU UUIDs for a job of {} GPUs", job.gpu_uuids.size(), js.gpus));
  }
  if (js.time_limit_s && *js.time_limit_s <= 0) return usage("the time limit is not positive");
  if (!(o.grace_s >= 0) || !std::isfinite(o.grace_s)) return usage("grace_s is negative");

  const std::string jobs_dir = o.state_dir + "/jobs";
  if (Status ok = EnsurePrivateDir(jobs_dir); !ok.ok()) return ok.error();
  const std::string job_dir = JobDir(o.state_dir, job.id, job.requeues);
  if (Status ok = EnsurePrivateDir(job_dir); !ok.ok()) return ok.error();
  struct stat st {};
  if (lstat((job_dir + "/" + kRunLaunchedFile).c_str(), &st) == 0) {
    return MakeError("exists", job_dir + " was claimed already; a new run needs a new directory");
  }

  SupervisorSpec s;
  s.job_id = job.id;
  s.argv = js.argv;
  s.env = BuildJobEnvironment(js, job.id, job.gpu_uuids, o.gpu_total_bytes, o.mps_active);
  s.cwd = js.cwd;
  s.umask = js.umask & 0777;
  s.uid = job.owner.uid;
  s.gid = job.owner.gid;
  s.user = job.owner.user;
  // A daemon may fill in the default paths before the launch (to serve them
  // after a restart mid-launch); those are still the supervisor's to open.
  const std::string default_out = job_dir + "/stdout";
  const std::string default_err = job_dir + "/stderr";
  s.stdout_by_job = !job.stdout_path.empty() && job.stdout_path != default_out;
  s.stderr_by_job = !job.stderr_path.empty() && job.stderr_path != default_err;
  s.stdout_path = s.stdout_by_job ? job.stdout_path : default_out;
  s.stderr_path = s.stderr_by_job ? job.stderr_path : default_err;
  s.time_limit_s = js.time_limit_s;
  s.grace_s = o.grace_s;
  // Not synced: it is read once, by the supervisor started right after, and a
  // machine that crashes takes that supervisor with it; on restart the daemon
  // gives an unclaimed run up and starts the next run in a directory of its
  // own (ClaimUnlaunched). Two fsyncs fewer between a free GPU and the job.
  if (Status ok = os::WriteFileAtomic(job_dir, kRunSpecFile, SupervisorSpecToJson(s),
                                      os::Sync::kProcessCrashOnly);
      !ok.ok())
    return ok.error();
  return PreparedRun{job_dir, s.stdout_path, s.stderr_path};
}

Result<Launched> StartSupervisor(const std::string& job_dir, const LaunchOptions& options,
                                 const Clock& clock) {
  const std::string& supervisor_path = options.supervisor_path;
  if (supervisor_path.empty() || supervisor_path[0] != '/') {
    return MakeError("usage", "the supervisor path is not absolute: " + supervisor_path);
  }
  UniqueFd null_fd(AboveStdio(open("/dev/null", O_RDWR | O_CLOEXEC)));
  if (null_fd.get() < 0) return MakeError("io", "/dev/null: " + ErrnoText(errno));
  const std::string log_path = job_dir + "/" + kRunSupervisorLog;
  UniqueFd log_fd(AboveStdio(open(
      log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC, 0600)));
  if (log_fd.get() < 0) return MakeError("io", log_path + ": " + ErrnoText(errno));
  int confirm[2];
  if (pipe2(confirm, O_CLOEXEC) != 0) return MakeError("io", "pipe: " + ErrnoText(errno));
  UniqueFd confirm_read(confirm[0]);
  UniqueFd confirm_write(AboveStdio(confirm[1]));
  if (confirm_write.get() < 0) return MakeError("io", "pipe: " + ErrnoText(errno));

  // Built before fork: the child of a multithreaded daemon may only make
  // async-signal-safe calls.
  std::string path_copy = supervisor_path;
  std::string dir_copy = job_dir;
  std::string proc_flag = "--proc-root";
  std::string proc_root = options.proc_root;
  // The default stays off the command line: `ps` shows what matters.
  char* argv_default[] = {path_copy.data(), dir_copy.data(), nullptr};
  char* argv_proc[] = {path_copy.data(), proc_flag.data(), proc_root.data(), dir_copy.data(),
                       nullptr};
  char** argv = options.proc_root == kDefaultProcRoot ? argv_default : argv_proc;
  std::string env_path = kSupervisorEnvPath;
  char* envp[] = {env_path.data(), nullptr};
  const sigset_t blocked = SupervisorSignals();
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  const int in = null_fd.get();
  const int out = log_fd.get();
  const int report = confirm_write.get();

  const pid_t pid = fork();
  if (pid < 0) return MakeError("io", "fork: " + ErrnoText(errno));
  if (pid == 0) {
    // Signals first: the daemon's handlers must not run here, and the
    // supervisor must not die of a stop request it is not ready for.
    sigset_t all;
    sigfillset(&all);
    sigprocmask(SIG_SETMASK, &all, nullptr);
    for (int sig = 1; sig < NSIG; ++sig) {
      if (sig != SIGKILL && sig != SIGSTOP) sigaction(sig, &dfl, nullptr);
    }
    if (dup2(in, STDIN_FILENO) < 0 || dup2(out, STDOUT_FILENO) < 0 ||
        dup2(out, STDERR_FILENO) < 0) {
      const int err = errno;
      (void)!write(report, &err, sizeof err);
      _exit(127);
    }
    // Everything else closes at exec (the confirm pipe included, which is
    // how the parent learns that execve succeeded).
    if (syscall(SYS_close_range, 3U, ~0U, CLOSE_RANGE_CLOEXEC) != 0) {
      const long max_fd = sysconf(_SC_OPEN_MAX);
      for (int fd = 3; fd < (max_fd > 0 && max_fd < 65536 ? max_fd : 65536); ++fd) {
        fcntl(fd, F_SETFD, FD_CLOEXEC);
      }
    }
    setsid();
    sigprocmask(SIG_SETMASK, &blocked, nullptr);
    execve(argv[0], argv, envp);
    const int err = errno;
    (void)!write(report, &err, sizeof err);
    _exit(127);
  }
  confirm_write.Reset();
  null_fd.Reset();
  log_fd.Reset();
  // The child is ours and unreaped: its PID cannot be reused meanwhile.
  const proc::ProcReader procs(options.proc_root);
  const Result<proc::StatFields> st = procs.ReadStat(pid);
  int child_errno = 0;
  pollfd p{confirm_read.get(), POLLIN, 0};
  const int64_t give_up = clock.MonotonicMs() + kExecConfirmTimeoutMs;
  for (;;) {
    const int64_t left = give_up - clock.MonotonicMs();
    if (left <= 0) break;  // Still not exec'd; it will be, or it will end.
    const int rc = poll(&p, 1, static_cast<int>(left));
    if (rc < 0 && errno == EINTR) continue;
    if (rc <= 0) break;
    const ssize_t n = read(confirm_read.get(), &child_errno, sizeof child_errno);
    if (n < 0 && errno == EINTR) continue;
    if (n != static_cast<ssize_t>(sizeof child_errno)) child_errno = 0;
    break;
  }
  if (child_errno != 0 || !st.ok()) {
    if (child_errno == 0) kill(pid, SIGKILL);  // Cannot pin it: do not let it run unknown.
    while (waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
    }
    return MakeError("io", child_errno != 0
                               ? "cannot run " + supervisor_path + ": " + ErrnoText(child_errno)
                               : "cannot read the supervisor's start time");
  }
  Launched l;
  l.job_dir = job_dir;
  l.supervisor_pid = pid;
  l.supervisor_start_ticks = st->start_ticks;
  return l;
}

Result<Launched> Launch(const Job& job, const LaunchOptions& options, const Clock& clock) {
  Result<PreparedRun> run = PrepareRun(job, options);
  if (!run.ok()) return run.error();
  Result<Launched> launched = StartSupervisor(run->job_dir, options, clock);
  if (!launched.ok()) return launched.error();
  launched->stdout_path = run->stdout_path;
  launched->stderr_path = run->stderr_path;
  return launched;
}

Status RequestStop(const std::string& job_dir, pid_t supervisor_pid,
                   uint64_t supervisor_start_ticks, const std::string& reason, double grace_s,
                   const proc::ProcReader& procs) {
  if (!(grace_s >= 0) || !std::isfinite(grace_s)) {
    return MakeError("usage", "the grace period must be a non-negative number of seconds");
  }
  if (supervisor_pid <= 0) return MakeError("gone", "no supervisor");
  // Pin first, then check: a pidfd that passed the check names the checked
  // process whatever happens to the PID afterwards.
  Result<UniqueFd> fd = os::PidfdOpen(supervisor_pid);
  if (!fd.ok() && fd.error().code == "gone") return MakeError("gone", "the supervisor has ended");
  const Result<proc::StatFields> st = procs.ReadStat(supervisor_pid);
  if (!st.ok() || IsZombie(st->state)) return MakeError("gone", "the supervisor has ended");
  if (st->start_ticks != supervisor_start_ticks) {
    return MakeError("gone", "the supervisor has ended (its PID belongs to another process now)");
  }
  if (Status ok = os::WriteFileAtomic(job_dir, kRunStopFile,
                                      StopRequestToJson(StopRequest{reason, grace_s}));
      !ok.ok()) {
    return ok;
  }
  if (fd.ok()) {
    Status sent = os::PidfdSendSignal(fd->get(), SIGUSR1);
    if (sent.ok()) return sent;
    if (sent.error().code == "gone") return MakeError("gone", "the supervisor has ended");
    if (sent.error().code == "denied") {
      return MakeError("denied", "not allowed to signal the supervisor");
    }
    return MakeError("io", "signal the supervisor: " + sent.error().message);
  }
  // No pidfd support (or none to be had): the start time was checked just now.
  if (kill(supervisor_pid, SIGUSR1) == 0) return Status::Ok();
  if (errno == ESRCH) return MakeError("gone", "the supervisor has ended");
  if (errno == EPERM) return MakeError("denied", "not allowed to signal the supervisor");
  return MakeError("io", "signal the supervisor: " + ErrnoText(errno));
}

Result<bool> ClaimUnlaunched(const std::string& job_dir, const proc::ProcReader& procs) {
  struct stat st {};
  if (lstat(job_dir.c_str(), &st) != 0) {
    if (errno == ENOENT) return true;  // Launch never got as far as the directory.
    return MakeError("io", job_dir + ": " + ErrnoText(errno));
  }
  if (!S_ISDIR(st.st_mode)) return MakeError("io", job_dir + ": not a directory");
  const Result<proc::StatFields> self = procs.ReadStat(getpid());
  LaunchRecord claim;
  claim.by_supervisor = false;
  claim.pid = getpid();
  claim.start_ticks = self.ok() ? self->start_ticks : 0;
  return os::CreateFileOnce(job_dir, kRunLaunchedFile, LaunchRecordToJson(claim));
}

bool SupervisorAlive(pid_t pid, uint64_t start_ticks, const proc::ProcReader& procs) {
  if (pid <= 0) return false;
  const Result<proc::StatFields> st = procs.ReadStat(pid);
  return st.ok() && st->start_ticks == start_ticks && !IsZombie(st->state);
}

}  // namespace gw::queue
