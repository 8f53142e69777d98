#include "queue/supervisor.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <grp.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <optional>
#include <set>
#include <vector>

#include "core/result.h"
#include "core/text.h"
#include "os/errno_text.h"
#include "os/file_io.h"
#include "os/unique_fd.h"
#include "proc/proc_reader.h"
#include "proc/users.h"
#include "queue/job_environment.h"
#include "queue/process_stat.h"
#include "queue/run_files.h"

namespace gw::queue {
namespace {

using os::ErrnoText;
using os::UniqueFd;

constexpr int64_t kLeftoverGraceMaxMs = 2000;
constexpr int64_t kAfterKillWaitMs = 5000;
constexpr int64_t kMaxPollMs = 10000;  // A missed wake-up costs at most this.

std::string SignalName(int sig) {
  const char* abbrev = sigabbrev_np(sig);
  if (abbrev == nullptr) return "signal " + std::to_string(sig);
  return std::string("SIG") + abbrev;
}

// Seconds (validated non-negative and finite) to milliseconds, capped so that
// adding them to a clock reading cannot overflow.
int64_t SecondsToMs(double s) {
  constexpr double kMaxS = 1e12;
  return static_cast<int64_t>(std::clamp(s, 0.0, kMaxS) * 1000);
}

std::string FormatSeconds(double s) { return fmt::format("{:g} s", s); }

// ---------------------------------------------------------------------------
// The supervisor.

// What the job's process reports through the close-on-exec pipe when it
// fails before execve succeeds.
enum Stage : int32_t {
  kStageDup = 0,
  kStageSetgroups,
  kStageSetgid,
  kStageSetuid,
  kStageRegainRoot,
  kStageParentGone,
  kStageOpenStdout,
  kStageOpenStderr,
  kStageChdir,
  kStageExec,
  kStageCount,
};
struct ChildFailure {
  int32_t stage = 0;
  int32_t err = 0;
};

// Everything the job's process needs, built before fork so that the child
// allocates nothing (the supervisor is single-threaded, but a child that only
// makes system calls cannot trip over a lock or a sanitizer either).
struct ChildPlan {
  std::vector<std::string> candidates;
  std::vector<char*> argv;
  std::vector<char*> envp;
  std::string cwd;
  mode_t umask = 022;
  bool change_ids = false;
  uid_t uid = 0;
  gid_t gid = 0;
  std::vector<gid_t> groups;
  int null_fd = -1;
  int out_fd = -1;  // -1: the job opens out_path itself.
  int err_fd = -1;
  std::string out_path;
  std::string err_path;
  int report_fd = -1;
  pid_t supervisor_pid = 0;
  std::string oom_score_adj_path;       // <proc root>/self/oom_score_adj
  std::string stage_text[kStageCount];  // "cannot change to the working directory /x"
};

size_t CopyInto(char* buffer, size_t at, size_t cap, const char* text) {
  while (*text != '\0' && at + 1 < cap) buffer[at++] = *text++;
  return at;
}

[[noreturn]] void ChildFail(const ChildPlan& plan, Stage stage, int err, int exit_code) {
  // To fd 2 (the job's stderr log once it is in place, the supervisor's log
  // before that), then to the supervisor, which records it in exit.json.
  char line[2048];
  size_t n = CopyInto(line, 0, sizeof line, "gpuwarden: ");
  n = CopyInto(line, n, sizeof line, plan.stage_text[stage].c_str());
  if (err != 0) {
    n = CopyInto(line, n, sizeof line, ": ");
    n = CopyInto(line, n, sizeof line, strerror(err));
  }
  line[n++] = '\n';
  (void)!write(STDERR_FILENO, line, n);
  const ChildFailure failure{stage, err};
  (void)!write(plan.report_fd, &failure, sizeof failure);
  _exit(exit_code);
}

bool IsNotFound(int err) {
  return err == ENOENT || err == ENOTDIR || err == ESTALE || err == ENODEV || err == ETIMEDOUT;
}

[[noreturn]] void RunJobProcess(const ChildPlan& plan) {
  setpgid(0, 0);
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  for (int sig = 1; sig < NSIG; ++sig) {
    if (sig != SIGKILL && sig != SIGSTOP) sigaction(sig, &dfl, nullptr);
  }
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  // Raising one's own oom_score_adj needs no privilege; lowering would.
  const int oom = open(plan.oom_score_adj_path.c_str(), O_WRONLY | O_CLOEXEC);
  if (oom >= 0) {
    (void)!write(oom, "0", 1);
    close(oom);
  }
  if (dup2(plan.null_fd, STDIN_FILENO) < 0) ChildFail(plan, kStageDup, errno, kExitCannotRun);
  if (plan.out_fd >= 0 && dup2(plan.out_fd, STDOUT_FILENO) < 0) {
    ChildFail(plan, kStageDup, errno, kExitCannotRun);
  }
  if (plan.err_fd >= 0 && dup2(plan.err_fd, STDERR_FILENO) < 0) {
    ChildFail(plan, kStageDup, errno, kExitCannotRun);
  }
  if (plan.change_ids) {
    if (setgroups(plan.groups.size(), plan.groups.data()) != 0) {
      ChildFail(plan, kStageSetgroups, errno, kExitCannotRun);
    }
    if (setgid(plan.gid) != 0) ChildFail(plan, kStageSetgid, errno, kExitCannotRun);
    if (setuid(plan.uid) != 0) ChildFail(plan, kStageSetuid, errno, kExitCannotRun);
    if (plan.uid != 0 && setuid(0) != -1) ChildFail(plan, kStageRegainRoot, 0, kExitCannotRun);
  }
  // After the identity change, which clears it. A job that outlives its
  // supervisor would run unwatched: no time limit, no recorded end.
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != plan.supervisor_pid) ChildFail(plan, kStageParentGone, 0, kExitCannotRun);
  // Logs the job named are opened with the job's own rights.
  constexpr int kLogFlags = O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC;
  if (plan.out_fd < 0) {
    const int fd = open(plan.out_path.c_str(), kLogFlags, 0600);
    if (fd < 0) ChildFail(plan, kStageOpenStdout, errno, kExitCannotRun);
    if (dup2(fd, STDOUT_FILENO) < 0) ChildFail(plan, kStageDup, errno, kExitCannotRun);
  }
  if (plan.err_fd < 0) {
    const int fd = open(plan.err_path.c_str(), kLogFlags, 0600);
    if (fd < 0) ChildFail(plan, kStageOpenStderr, errno, kExitCannotRun);
    if (dup2(fd, STDERR_FILENO) < 0) ChildFail(plan, kStageDup, errno, kExitCannotRun);
  }
  if (chdir(plan.cwd.c_str()) != 0) ChildFail(plan, kStageChdir, errno, kExitCannotRun);
  umask(plan.umask);
  // execvpe's rules, without its fall-back to /bin/sh for ENOEXEC.
  int not_found = ENOENT;
  bool saw_eacces = false;
  int hard_error = 0;
  for (const std::string& path : plan.candidates) {
    execve(path.c_str(), plan.argv.data(), plan.envp.data());
    const int err = errno;
    if (err == EACCES) {
      saw_eacces = true;
    } else if (IsNotFound(err)) {
      not_found = err;
    } else {
      hard_error = err;
      break;
    }
  }
  const int err = hard_error != 0 ? hard_error : (saw_eacces ? EACCES : not_found);
  ChildFail(plan, kStageExec, err, IsNotFound(err) ? kExitNotFound : kExitCannotRun);
}

struct ProcEntry {
  pid_t pid = 0;
  pid_t ppid = 0;
  pid_t pgrp = 0;
  char state = '?';
};

// The supplementary groups of uid's account as it is now (getgrouplist with
// `gid` as the primary group); {gid} when uid has no account.
// MERGE(h-os): proc/users.h gains a growing-buffer getgrouplist lookup;
// this becomes a call to it.
std::vector<gid_t> AccountGroups(uid_t uid, gid_t gid) {
  const std::optional<std::string> name = proc::LookupUserName(uid);
  if (!name) return {gid};
  int count = 64;
  for (int attempt = 0; attempt < 8; ++attempt) {
    std::vector<gid_t> groups(static_cast<size_t>(count));
    int n = count;
    if (getgrouplist(name->c_str(), gid, groups.data(), &n) >= 0) {
      groups.resize(static_cast<size_t>(n));
      return groups;
    }
    if (n <= count) n = count * 2;
    count = n;
  }
  return {gid};
}

class Supervisor {
 public:
  Supervisor(std::string job_dir, const std::string& proc_root, const Clock& clock)
      : job_dir_(std::move(job_dir)), procs_(proc_root), clock_(clock) {}
  int Run();

 private:
  void Log(const std::string& message) {
    const std::string line = fmt::format("gpuwarden-supervise[{}]: {}\n", getpid(), message);
    (void)!write(STDERR_FILENO, line.data(), line.size());
  }
  int Finish(ExitRecord record);
  int FinishUnstarted(std::string reason, std::string detail) {
    ExitRecord r;
    r.reason = std::move(reason);
    r.detail = std::move(detail);
    return Finish(std::move(r));
  }
  std::optional<std::pair<std::string, double>> ReadStop();
  std::vector<ProcEntry> ScanProc();
  bool TryWritePid();
  bool WaitBeforeRetry();
  Status PreparePlan(ChildPlan* plan, std::vector<UniqueFd>* keep);
  void SignalLeader(int sig);
  void BeginStop(const std::string& reason, double grace_s, const std::string& why);
  void HandleSignals(bool leader_alive);
  void DrainReport();
  bool PeekLeader(siginfo_t* info);
  void ReapOrphans();
  void EndLeftovers();
  std::string FailureDetail() const;

  std::string job_dir_;
  proc::ProcReader procs_;
  const Clock& clock_;
  SupervisorSpec spec_;
  UniqueFd signal_fd_;
  UniqueFd report_fd_;
  pid_t leader_ = -1;
  int64_t start_unix_ms_ = 0;
  std::string stage_text_[kStageCount];
  std::optional<ChildFailure> failure_;
  std::string stop_reason_;  // Empty while the job is not being stopped.
  std::string stop_why_;
  int64_t kill_at_ms_ = 0;
  bool kill_sent_ = false;
  double stop_grace_s_ = 0;
  size_t leftovers_ended_ = 0;
  size_t leftovers_remaining_ = 0;
  bool pid_pending_ = false;  // JOB_DIR/pid not yet written (step 7).
  bool pid_failure_logged_ = false;
  PidRecord pid_record_;
};

int Supervisor::Finish(ExitRecord r) {
  if (r.end_unix_ms == 0) r.end_unix_ms = clock_.NowUnixMs();
  const std::string text = ExitRecordToJson(r);
  const std::string what = r.reason + ": " + r.detail;
  bool logged = false;
  for (;;) {
    Status written = os::WriteFileAtomic(job_dir_, kRunExitFile, text);
    if (written.ok()) {
      Log(std::string(logged ? "recorded at last: " : "recorded: ") + what);
      return kSupervisorRecorded;
    }
    if (!logged) {
      Log(fmt::format("cannot record the end ({}): {}; trying again every {} ms", what,
                      written.error().message, kRecordRetryMs));
      logged = true;
    }
    struct stat st {};
    if (lstat(job_dir_.c_str(), &st) != 0 && errno == ENOENT) {
      Log("the job directory was removed; the end cannot be recorded");
      return kSupervisorFailed;
    }
    if (!WaitBeforeRetry()) {
      // Told to stop: one last attempt.
      written = os::WriteFileAtomic(job_dir_, kRunExitFile, text);
      if (written.ok()) {
        Log("recorded at last: " + what);
        return kSupervisorRecorded;
      }
      Log("told to stop; the end stays unrecorded: " + written.error().message);
      return kSupervisorFailed;
    }
  }
}

// Waits kRecordRetryMs for a retry of a record, reaping what comes back to
// the subreaper meanwhile. false: SIGTERM, SIGINT or SIGQUIT arrived.
bool Supervisor::WaitBeforeRetry() {
  const int64_t until = clock_.MonotonicMs() + kRecordRetryMs;
  for (;;) {
    const int64_t left = until - clock_.MonotonicMs();
    if (left <= 0) return true;
    pollfd p{signal_fd_.get(), POLLIN, 0};
    poll(&p, 1, static_cast<int>(left));
    signalfd_siginfo si{};
    while (read(signal_fd_.get(), &si, sizeof si) == static_cast<ssize_t>(sizeof si)) {
      if (si.ssi_signo == SIGTERM || si.ssi_signo == SIGINT || si.ssi_signo == SIGQUIT) {
        return false;
      }
    }
    while (waitpid(-1, nullptr, WNOHANG) > 0) {
    }
  }
}

std::optional<std::pair<std::string, double>> Supervisor::ReadStop() {
  Result<std::optional<StopRequest>> stop = ReadStopRequest(job_dir_);
  if (!stop.ok()) {
    Log(stop.error().message);
    return std::nullopt;
  }
  if (!*stop) return std::nullopt;
  return std::make_pair(std::move((*stop)->reason), (*stop)->grace_s.value_or(spec_.grace_s));
}

std::vector<ProcEntry> Supervisor::ScanProc() {
  std::vector<ProcEntry> out;
  Result<std::vector<pid_t>> pids = procs_.ListPids();
  if (!pids.ok()) return out;
  for (pid_t pid : *pids) {
    Result<proc::StatFields> stat = procs_.ReadStat(pid);
    if (!stat.ok()) continue;  // Gone meanwhile.
    out.push_back({stat->pid, stat->ppid, stat->pgrp, stat->state});
  }
  return out;
}

// JOB_DIR/pid; false while it could not be written (logged once).
bool Supervisor::TryWritePid() {
  Status ok = os::WriteFileAtomic(job_dir_, kRunPidFile, PidRecordToJson(pid_record_));
  if (ok.ok()) {
    if (pid_failure_logged_) Log("recorded the job's PID at last");
    pid_pending_ = false;
    return true;
  }
  if (!pid_failure_logged_) {
    Log(fmt::format("cannot record the job's PID: {}; trying again every {} ms", ok.error().message,
                    kRecordRetryMs));
    pid_failure_logged_ = true;
  }
  return false;
}

Status Supervisor::PreparePlan(ChildPlan* plan, std::vector<UniqueFd>* keep) {
  const bool root = geteuid() == 0;
  if (!root && spec_.uid != geteuid()) {
    return MakeError("start_failed",
                     fmt::format("the supervisor runs as uid {} and cannot start a job for uid {}",
                                 geteuid(), spec_.uid));
  }
  if (spec_.argv.empty()) return MakeError("start_failed", "the spec has no command");
  plan->change_ids = root;
  plan->uid = spec_.uid;
  plan->gid = spec_.gid;
  plan->groups = {spec_.gid};
  if (root) {
    // The groups of the uid's account as it is now, not of whatever name the
    // spec carries: a renamed or reused name must not lend its groups.
    plan->groups = AccountGroups(spec_.uid, spec_.gid);
  }
  UniqueFd null_fd(open("/dev/null", O_RDWR | O_CLOEXEC));
  if (null_fd.get() < 0) return MakeError("start_failed", "/dev/null: " + ErrnoText(errno));
  plan->null_fd = null_fd.get();
  keep->push_back(std::move(null_fd));
  auto open_log = [&](const std::string& path, bool by_job, int* fd_out,
                      std::string* path_out) -> Status {
    *path_out = path;
    if (by_job) return Status::Ok();
    UniqueFd fd(open(path.c_str(),
                     O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC, 0600));
    if (fd.get() < 0) {
      return MakeError("start_failed", "cannot open the log " + path + ": " + ErrnoText(errno));
    }
    struct stat st {};
    if (fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) {
      return MakeError("start_failed", "the log " + path + " is not a regular file");
    }
    if (root && (fchown(fd.get(), spec_.uid, spec_.gid) != 0 || fchmod(fd.get(), 0600) != 0)) {
      return MakeError("start_failed",
                       "cannot hand the log " + path + " to the job's user: " + ErrnoText(errno));
    }
    *fd_out = fd.get();
    keep->push_back(std::move(fd));
    return Status::Ok();
  };
  Status out = open_log(spec_.stdout_path, spec_.stdout_by_job, &plan->out_fd, &plan->out_path);
  if (!out.ok()) return out;
  Status err = open_log(spec_.stderr_path, spec_.stderr_by_job, &plan->err_fd, &plan->err_path);
  if (!err.ok()) return err;

  plan->candidates = ExecCandidates(spec_.argv[0], spec_.env);
  for (std::string& a : spec_.argv) plan->argv.push_back(a.data());
  plan->argv.push_back(nullptr);
  for (std::string& e : spec_.env) plan->envp.push_back(e.data());
  plan->envp.push_back(nullptr);
  plan->cwd = spec_.cwd;
  plan->umask = spec_.umask;
  plan->supervisor_pid = getpid();
  plan->oom_score_adj_path = procs_.proc_root() + "/self/oom_score_adj";

  const std::string argv0 = ToValidUtf8(spec_.argv[0]);
  stage_text_[kStageDup] = "cannot set up stdin, stdout and stderr";
  stage_text_[kStageSetgroups] =
      fmt::format("cannot set the supplementary groups of uid {}", spec_.uid);
  stage_text_[kStageSetgid] = fmt::format("cannot set gid {}", spec_.gid);
  stage_text_[kStageSetuid] = fmt::format("cannot set uid {}", spec_.uid);
  stage_text_[kStageRegainRoot] =
      fmt::format("could still regain root after switching to uid {}", spec_.uid);
  stage_text_[kStageParentGone] = "the supervisor ended before the job started";
  stage_text_[kStageOpenStdout] = "cannot open the stdout log " + ToValidUtf8(plan->out_path);
  stage_text_[kStageOpenStderr] = "cannot open the stderr log " + ToValidUtf8(plan->err_path);
  stage_text_[kStageChdir] = "cannot change to the working directory " + ToValidUtf8(spec_.cwd);
  stage_text_[kStageExec] = "cannot run " + argv0;
  for (int i = 0; i < kStageCount; ++i) plan->stage_text[i] = stage_text_[i];
  return Status::Ok();
}

std::string Supervisor::FailureDetail() const {
  const ChildFailure& f = *failure_;
  const int stage = f.stage >= 0 && f.stage < kStageCount ? f.stage : kStageExec;
  std::string detail = stage_text_[stage];
  if (f.err != 0) detail += ": " + ErrnoText(f.err);
  return detail;
}

void Supervisor::SignalLeader(int sig) {
  // The leader is an unreaped child: its PID, and so the group's id, cannot
  // name another process until the supervisor reaps it.
  if (getpgid(leader_) != leader_) kill(leader_, sig);  // It left its group.
  kill(-leader_, sig);
}

void Supervisor::BeginStop(const std::string& reason, double grace_s, const std::string& why) {
  const int64_t kill_at = clock_.MonotonicMs() + SecondsToMs(grace_s);
  if (!stop_reason_.empty()) {
    // Already stopping: only a shorter grace counts.
    if (!kill_sent_ && kill_at < kill_at_ms_) {
      kill_at_ms_ = kill_at;
      stop_grace_s_ = grace_s;
    }
    return;
  }
  stop_reason_ = reason;
  stop_why_ = why;
  stop_grace_s_ = grace_s;
  kill_at_ms_ = kill_at;
  Log(why + ": SIGTERM to the job's process group");
  SignalLeader(SIGTERM);
  SignalLeader(SIGCONT);  // A stopped process would not act on SIGTERM.
}

void Supervisor::DrainReport() {
  if (report_fd_.get() < 0) return;
  ChildFailure f;
  const ssize_t n = read(report_fd_.get(), &f, sizeof f);
  if (n < 0 && (errno == EAGAIN || errno == EINTR)) return;
  if (n == static_cast<ssize_t>(sizeof f)) failure_ = f;
  // EOF (execve succeeded, or the child is gone), a report, or an error: the
  // pipe has nothing more to say.
  report_fd_.Reset();
}

bool Supervisor::PeekLeader(siginfo_t* info) {
  // WNOWAIT: look, but leave the leader a zombie until its group is dealt with.
  std::memset(info, 0, sizeof *info);
  if (waitid(P_PID, static_cast<id_t>(leader_), info, WEXITED | WNOHANG | WNOWAIT) != 0) {
    // ECHILD cannot happen for an unreaped child; treat it as ended rather
    // than waiting forever.
    if (errno == ECHILD) {
      info->si_pid = leader_;
      info->si_code = CLD_KILLED;
      info->si_status = SIGKILL;
      return true;
    }
    return false;
  }
  return info->si_pid == leader_;
}

void Supervisor::ReapOrphans() {
  const pid_t self = getpid();
  for (const ProcEntry& p : ScanProc()) {
    if (p.ppid == self && p.pid != leader_ && IsZombie(p.state)) waitpid(p.pid, nullptr, WNOHANG);
  }
}

void Supervisor::HandleSignals(bool leader_alive) {
  bool child_event = false;
  signalfd_siginfo si{};
  while (read(signal_fd_.get(), &si, sizeof si) == static_cast<ssize_t>(sizeof si)) {
    switch (si.ssi_signo) {
      case SIGCHLD:
        child_event = true;
        break;
      case SIGUSR1:
        if (!leader_alive) break;
        if (auto stop = ReadStop()) {
          BeginStop("stopped:" + stop->first, stop->second,
                    "stop requested (" + ToValidUtf8(stop->first) + ")");
        } else {
          Log("SIGUSR1 without a readable stop file: ignored");
        }
        break;
      case SIGTERM:
      case SIGINT:
      case SIGQUIT:
        if (leader_alive) {
          BeginStop("stopped:supervisor", spec_.grace_s,
                    "the supervisor got " + SignalName(static_cast<int>(si.ssi_signo)));
        }
        break;
      default:  // SIGHUP: no terminal to lose.
        break;
    }
  }
  if (child_event) ReapOrphans();
}

void Supervisor::EndLeftovers() {
  const pid_t self = getpid();
  const int64_t grace_ms = std::min<int64_t>(kLeftoverGraceMaxMs, SecondsToMs(spec_.grace_s));
  const int64_t kill_at = clock_.MonotonicMs() + grace_ms;
  int64_t give_up_at = 0;
  bool killing = false;
  bool group_termed = false;
  std::set<pid_t> termed;
  std::set<pid_t> seen;
  for (;;) {
    std::vector<pid_t> group_alive;
    std::vector<pid_t> children_alive;
    for (const ProcEntry& p : ScanProc()) {
      if (p.pid == leader_) continue;
      if (p.ppid == self) {
        if (IsZombie(p.state)) {
          waitpid(p.pid, nullptr, WNOHANG);
        } else {
          children_alive.push_back(p.pid);
        }
      } else if (p.pgrp == leader_ && !IsZombie(p.state)) {
        group_alive.push_back(p.pid);
      }
    }
    if (group_alive.empty() && children_alive.empty()) break;
    seen.insert(group_alive.begin(), group_alive.end());
    seen.insert(children_alive.begin(), children_alive.end());
    const int64_t now = clock_.MonotonicMs();
    if (!killing && now >= kill_at) {
      killing = true;
      give_up_at = now + kAfterKillWaitMs;
    }
    if (killing && now >= give_up_at) {
      leftovers_remaining_ = group_alive.size() + children_alive.size();
      Log(fmt::format("{} leftover processes still present after SIGKILL", leftovers_remaining_));
      break;
    }
    const int sig = killing ? SIGKILL : SIGTERM;
    // The group id is the leader's PID, held by the zombie leader.
    if (!group_alive.empty() && (killing || !group_termed)) {
      kill(-leader_, sig);
      if (!killing) kill(-leader_, SIGCONT);
      group_termed = true;
    }
    // Processes orphaned to the supervisor are its children, so their PIDs
    // are stable too; one that leads a group takes that group with it (a
    // group cannot reach outside its leader's session, which it made).
    for (pid_t c : children_alive) {
      if (!killing && termed.count(c) != 0) continue;
      const pid_t target = getpgid(c) == c ? -c : c;
      kill(target, sig);
      if (!killing) kill(target, SIGCONT);
      termed.insert(c);
    }
    pollfd p{signal_fd_.get(), POLLIN, 0};
    poll(&p, 1, 100);
    HandleSignals(/*leader_alive=*/false);
  }
  leftovers_ended_ = seen.size() - leftovers_remaining_;
}

int Supervisor::Run() {
  // 1. Our own session, signals, subreaper.
  setsid();  // Fails only when already a session leader, which is as good.
  const sigset_t signals = SupervisorSignals();
  sigprocmask(SIG_BLOCK, &signals, nullptr);
  struct sigaction act {};
  sigemptyset(&act.sa_mask);
  act.sa_handler = SIG_DFL;
  sigaction(SIGCHLD, &act, nullptr);  // An inherited SIG_IGN would make waiting impossible.
  act.sa_handler = SIG_IGN;
  // Stray signals must not end the one process that records the job's end.
  for (int sig : {SIGPIPE, SIGUSR2, SIGALRM, SIGVTALRM, SIGPROF, SIGIO, SIGXFSZ}) {
    sigaction(sig, &act, nullptr);
  }
  signal_fd_ = UniqueFd(signalfd(-1, &signals, SFD_CLOEXEC | SFD_NONBLOCK));
  if (signal_fd_.get() < 0) {
    Log("signalfd: " + ErrnoText(errno));
    return kSupervisorFailed;
  }
  if (prctl(PR_SET_CHILD_SUBREAPER, 1) != 0) Log("PR_SET_CHILD_SUBREAPER: " + ErrnoText(errno));

  // 2. A directory nobody else can write.
  if (job_dir_.empty() || job_dir_[0] != '/') {
    Log("JOB_DIR must be an absolute path: " + job_dir_);
    return kSupervisorBadJobDir;
  }
  if (Status ok = CheckPrivateDir(job_dir_); !ok.ok()) {
    Log("refusing the job directory: " + ok.error().message);
    return kSupervisorBadJobDir;
  }

  // 3. The claim: at most one process ever starts this run.
  Result<proc::StatFields> self_stat = procs_.ReadStat(getpid());
  LaunchRecord claim;
  claim.by_supervisor = true;
  claim.pid = getpid();
  claim.start_ticks = self_stat.ok() ? self_stat->start_ticks : 0;
  Result<bool> claimed = os::CreateFileOnce(job_dir_, kRunLaunchedFile, LaunchRecordToJson(claim));
  if (!claimed.ok()) {
    Log("cannot claim the run: " + claimed.error().message);
    return kSupervisorFailed;
  }
  if (!*claimed) {
    Log("the run was already claimed (started, or given up by a restarted daemon); not starting");
    return kSupervisorRefused;
  }

  // 4. The spec.
  Result<std::optional<SupervisorSpec>> spec = ReadSupervisorSpec(job_dir_);
  if (!spec.ok()) return FinishUnstarted("start_failed", spec.error().message);
  if (!*spec) return FinishUnstarted("start_failed", job_dir_ + "/" + kRunSpecFile + ": missing");
  spec_ = std::move(**spec);
  if (auto stop = ReadStop()) {
    return FinishUnstarted("stopped:" + stop->first, "stopped before it started");
  }
  sigset_t pending;
  sigemptyset(&pending);
  sigpending(&pending);
  if (sigismember(&pending, SIGTERM) == 1 || sigismember(&pending, SIGINT) == 1) {
    return FinishUnstarted("stopped:supervisor",
                           "the supervisor was told to stop before the job "
                           "started");
  }

  // 5. Logs, identity, the exec plan.
  ChildPlan plan;
  std::vector<UniqueFd> keep;
  if (Status ok = PreparePlan(&plan, &keep); !ok.ok()) {
    return FinishUnstarted("start_failed", ok.error().message);
  }
  int report[2];
  if (pipe2(report, O_CLOEXEC) != 0) {
    return FinishUnstarted("start_failed", "pipe: " + ErrnoText(errno));
  }
  UniqueFd report_write(report[1]);
  report_fd_ = UniqueFd(report[0]);
  plan.report_fd = report_write.get();

  // 6. The job.
  start_unix_ms_ = clock_.NowUnixMs();
  const int64_t start_ms = clock_.MonotonicMs();
  leader_ = fork();
  if (leader_ < 0) return FinishUnstarted("start_failed", "fork: " + ErrnoText(errno));
  if (leader_ == 0) RunJobProcess(plan);
  setpgid(leader_, leader_);  // Also here: the group exists before any signal to it.
  report_write.Reset();
  keep.clear();
  fcntl(report_fd_.get(), F_SETFL, O_NONBLOCK);

  // 7. Where it runs, for a daemon that has to find it without us.
  // A write that fails (disk full, read-only) is tried again while the job
  // runs: without it a daemon that loses this supervisor cannot find the job.
  int64_t pid_retry_at = 0;
  if (Result<proc::StatFields> st = procs_.ReadStat(leader_); st.ok()) {
    pid_record_ = PidRecord{leader_, st->start_ticks, start_unix_ms_};
    pid_pending_ = !TryWritePid();
    pid_retry_at = clock_.MonotonicMs() + kRecordRetryMs;
  } else {
    Log(fmt::format("cannot read the start time of the job's process {}", leader_));
  }

  std::optional<int64_t> limit_at;
  if (spec_.time_limit_s)
    limit_at = start_ms + SecondsToMs(static_cast<double>(*spec_.time_limit_s));
  siginfo_t info{};
  for (;;) {
    DrainReport();
    if (PeekLeader(&info)) break;
    const int64_t now = clock_.MonotonicMs();
    if (stop_reason_.empty() && limit_at && now >= *limit_at) {
      BeginStop("time_limit", spec_.grace_s,
                fmt::format("time limit of {} s reached", *spec_.time_limit_s));
    }
    if (!stop_reason_.empty() && !kill_sent_ && now >= kill_at_ms_) {
      Log("grace period over: SIGKILL to the job's process group");
      SignalLeader(SIGKILL);
      kill_sent_ = true;
    }
    if (pid_pending_ && now >= pid_retry_at) {
      TryWritePid();
      pid_retry_at = now + kRecordRetryMs;
    }
    int64_t wake = now + kMaxPollMs;
    if (pid_pending_) wake = std::min(wake, pid_retry_at);
    if (stop_reason_.empty() && limit_at) wake = std::min(wake, *limit_at);
    if (!stop_reason_.empty() && !kill_sent_) wake = std::min(wake, kill_at_ms_);
    pollfd fds[2] = {{signal_fd_.get(), POLLIN, 0}, {report_fd_.get(), POLLIN, 0}};
    poll(fds, report_fd_.get() >= 0 ? 2 : 1, static_cast<int>(std::max<int64_t>(0, wake - now)));
    HandleSignals(/*leader_alive=*/true);
  }
  // The report was written before the child's _exit, so it is in the pipe,
  // and the pipe has no writer left: data or EOF, never EAGAIN.
  for (int i = 0; i < 8 && report_fd_.get() >= 0; ++i) DrainReport();
  report_fd_.Reset();

  // 8. What the job left behind, then the leader itself.
  EndLeftovers();
  int status = 0;
  while (waitpid(leader_, &status, 0) < 0 && errno == EINTR) {
  }
  while (waitpid(-1, nullptr, WNOHANG) > 0) {
  }

  // 9. The record.
  ExitRecord r;
  r.start_unix_ms = start_unix_ms_;
  const bool exited = info.si_code == CLD_EXITED;
  if (exited) {
    r.exit_code = info.si_status;
  } else {
    r.signal = info.si_status;
    r.core_dumped = info.si_code == CLD_DUMPED;
  }
  const std::string how = exited ? fmt::format("exited with status {}", info.si_status)
                                 : fmt::format("killed by {}{}", SignalName(info.si_status),
                                               r.core_dumped ? " (core dumped)" : "");
  if (failure_) {
    r.reason = "start_failed";
    r.detail = FailureDetail();
  } else if (!stop_reason_.empty()) {
    r.reason = stop_reason_;
    r.detail = stop_why_ +
               (kill_sent_ ? "; SIGTERM, then SIGKILL after " + FormatSeconds(stop_grace_s_)
                           : "; SIGTERM sent") +
               "; " + how;
  } else {
    r.reason = exited ? "exit" : "signal";
    r.detail = how;
  }
  if (leftovers_ended_ > 0) {
    r.detail += fmt::format("; {} leftover process{} ended", leftovers_ended_,
                            leftovers_ended_ == 1 ? "" : "es");
  }
  if (leftovers_remaining_ > 0) {
    r.detail += fmt::format("; {} still present after SIGKILL", leftovers_remaining_);
  }
  return Finish(std::move(r));
}
}  // namespace

sigset_t SupervisorSignals() {
  sigset_t set;
  sigemptyset(&set);
  for (int sig : {SIGCHLD, SIGUSR1, SIGTERM, SIGINT, SIGQUIT, SIGHUP}) sigaddset(&set, sig);
  return set;
}

int SuperviseMain(const std::string& job_dir, const std::string& proc_root, const Clock& clock) {
  // fds 0-2 must be taken, so that nothing opened later lands on them and is
  // then replaced by the job's dup2.
  // open() takes the lowest free descriptor, so the loop fills the gaps in order.
  for (int fd = 0; fd <= 2; ++fd) {
    if (fcntl(fd, F_GETFD) < 0) (void)!open("/dev/null", O_RDWR);
  }
  Supervisor supervisor(job_dir, proc_root, clock);
  return supervisor.Run();
}

}  // namespace gw::queue
