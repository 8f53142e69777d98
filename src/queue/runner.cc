#include "queue/runner.h"

#include <dirent.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <grp.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cmath>
#include <cstring>
#include <nlohmann/json.hpp>
#include <set>
#include <stdexcept>

#include "core/text.h"
#include "proc/proc_parse.h"
#include "queue/protocol.h"

#ifndef CLOSE_RANGE_CLOEXEC
#define CLOSE_RANGE_CLOEXEC (1U << 2)
#endif

namespace gw::queue {
namespace {

using json = nlohmann::json;

constexpr char kSpecFile[] = "spec.json";
constexpr char kLaunchedFile[] = "launched";
constexpr char kPidFile[] = "pid";
constexpr char kStopFile[] = "stop";
constexpr char kExitFile[] = "exit.json";
constexpr char kSupervisorLog[] = "supervisor.log";
constexpr char kDefaultPath[] = "/usr/local/bin:/usr/bin:/bin";
// The supervisor needs nothing from the daemon's environment.
constexpr char kSupervisorEnvPath[] =
    "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

constexpr size_t kMaxSpecBytes = 64u << 20;  // argv + env are bounded by ARG_MAX anyway.
constexpr size_t kMaxRecordBytes = 1u << 20;
constexpr int64_t kLeftoverGraceMaxMs = 2000;
constexpr int64_t kAfterKillWaitMs = 5000;
constexpr int64_t kMaxPollMs = 10000;  // A missed wake-up costs at most this.
constexpr int kExecConfirmTimeoutMs = 30000;

// ---------------------------------------------------------------------------
// Small helpers.

int64_t ClockMs(clockid_t clock) {
  timespec ts{};
  clock_gettime(clock, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000 + ts.tv_nsec / 1000000;
}
int64_t NowUnixMs() { return ClockMs(CLOCK_REALTIME); }
int64_t MonotonicMs() { return ClockMs(CLOCK_MONOTONIC); }

std::string ErrnoText(int err) { return std::strerror(err); }

class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) : fd_(fd) {}
  ~UniqueFd() { Reset(); }
  UniqueFd(UniqueFd&& other) noexcept : fd_(other.Release()) {}
  UniqueFd& operator=(UniqueFd&& other) noexcept {
    if (this != &other) {
      Reset();
      fd_ = other.Release();
    }
    return *this;
  }
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  int get() const { return fd_; }
  int Release() {
    int fd = fd_;
    fd_ = -1;
    return fd;
  }
  void Reset() {
    if (fd_ >= 0) close(fd_);
    fd_ = -1;
  }

 private:
  int fd_ = -1;
};

bool WriteAll(int fd, const void* data, size_t size) {
  const char* p = static_cast<const char*>(data);
  while (size > 0) {
    ssize_t n = write(fd, p, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    p += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

// Reads a whole file that is not a symlink. Error code "not_found" when it
// does not exist, "io" otherwise.
Result<std::string> ReadSmallFile(const std::string& path, size_t max_bytes) {
  UniqueFd fd(open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY));
  if (fd.get() < 0) {
    const int err = errno;
    return MakeError(err == ENOENT ? "not_found" : "io", path + ": " + ErrnoText(err));
  }
  std::string out;
  char buffer[65536];
  for (;;) {
    ssize_t n = read(fd.get(), buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return MakeError("io", path + ": " + ErrnoText(errno));
    if (n == 0) break;
    out.append(buffer, static_cast<size_t>(n));
    if (out.size() > max_bytes) return MakeError("io", path + ": larger than expected");
  }
  return out;
}

Status FsyncDir(const std::string& dir) {
  UniqueFd fd(open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (fd.get() < 0 || fsync(fd.get()) != 0) {
    return MakeError("io", "fsync " + dir + ": " + ErrnoText(errno));
  }
  return Status::Ok();
}

// Whether a record must survive a crash of the machine, not only of a process.
enum class Sync { kDurable, kProcessCrashOnly };

// Writes `content` to a temporary file beside `name` and (kDurable) fsyncs
// it; the caller renames or links it into place. Temporary names carry the
// writer's PID, so concurrent writers (two claimants) never share one.
Result<std::string> WriteTemp(const std::string& dir, const std::string& name,
                              std::string_view content, Sync sync = Sync::kDurable) {
  std::string tmp = dir + "/." + name + ".tmp." + std::to_string(getpid());
  UniqueFd fd(open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (fd.get() < 0) return MakeError("io", tmp + ": " + ErrnoText(errno));
  if (!WriteAll(fd.get(), content.data(), content.size()) ||
      (sync == Sync::kDurable && fsync(fd.get()) != 0)) {
    const int err = errno;
    unlink(tmp.c_str());
    return MakeError("io", tmp + ": " + ErrnoText(err));
  }
  return tmp;
}

Status WriteFileAtomic(const std::string& dir, const std::string& name, std::string_view content,
                       Sync sync = Sync::kDurable) {
  Result<std::string> tmp = WriteTemp(dir, name, content, sync);
  if (!tmp.ok()) return tmp.error();
  const std::string path = dir + "/" + name;
  if (rename(tmp->c_str(), path.c_str()) != 0) {
    const int err = errno;
    unlink(tmp->c_str());
    return MakeError("io", "rename to " + path + ": " + ErrnoText(err));
  }
  return sync == Sync::kDurable ? FsyncDir(dir) : Status::Ok();
}

// Creates dir/name with `content` unless it exists: link(2) fails with EEXIST
// when another claimant was first, and the file is complete whenever it is
// visible. true = created.
Result<bool> CreateFileOnce(const std::string& dir, const std::string& name,
                            std::string_view content) {
  Result<std::string> tmp = WriteTemp(dir, name, content);
  if (!tmp.ok()) return tmp.error();
  const std::string path = dir + "/" + name;
  const int rc = link(tmp->c_str(), path.c_str());
  const int err = errno;
  unlink(tmp->c_str());
  if (rc != 0 && err == EEXIST) return false;
  if (rc != 0) return MakeError("io", "link " + path + ": " + ErrnoText(err));
  Status synced = FsyncDir(dir);
  if (!synced.ok()) return synced.error();
  return true;
}

std::optional<proc::StatFields> ReadStat(pid_t pid) {
  Result<std::string> text = ReadSmallFile("/proc/" + std::to_string(pid) + "/stat", 65536);
  if (!text.ok()) return std::nullopt;
  Result<proc::StatFields> stat = proc::ParseStat(*text);
  if (!stat.ok()) return std::nullopt;
  return *stat;
}

bool IsZombie(char state) { return state == 'Z' || state == 'X' || state == 'x'; }

int PidfdOpen(pid_t pid) { return static_cast<int>(syscall(SYS_pidfd_open, pid, 0)); }
int PidfdSendSignal(int fd, int sig) {
  return static_cast<int>(syscall(SYS_pidfd_send_signal, fd, sig, nullptr, 0));
}

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

// A directory only the daemon's (or supervisor's) user may change: a root
// supervisor runs whatever spec.json says, as whichever uid it names.
Status CheckPrivateDir(const std::string& path) {
  struct stat st {};
  if (lstat(path.c_str(), &st) != 0) return MakeError("io", path + ": " + ErrnoText(errno));
  if (!S_ISDIR(st.st_mode)) return MakeError("io", path + ": not a directory");
  if (st.st_uid != geteuid()) {
    return MakeError("io", fmt::format("{}: owned by uid {}, not {}", path, st.st_uid, geteuid()));
  }
  if ((st.st_mode & 022) != 0) {
    return MakeError("io", fmt::format("{}: writable by group or others (mode {:04o})", path,
                                       st.st_mode & 07777));
  }
  return Status::Ok();
}

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

bool HasNul(std::string_view s) { return s.find('\0') != std::string_view::npos; }

std::string_view EnvKey(std::string_view entry) {
  const size_t eq = entry.find('=');
  return eq == std::string_view::npos ? entry : entry.substr(0, eq);
}

// ---------------------------------------------------------------------------
// base64 (RFC 4648, with padding): spec.json carries argv, env and paths as
// bytes, which JSON strings cannot.

std::string DumpJson(const json& j) {
  // Replace, never throw: every string here is valid UTF-8 by construction,
  // but a dump must not be the place where that assumption fails loudly.
  return j.dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
}

// The parsers below run inside one try block each; these throw
// std::runtime_error (caught there) for a missing or mistyped field.
std::string B64Field(const json& j, const char* key) {
  std::optional<std::string> bytes = Base64Decode(j.at(key).get<std::string>());
  if (!bytes) throw std::runtime_error(std::string(key) + " is not base64");
  return *bytes;
}
std::vector<std::string> B64ListField(const json& j, const char* key) {
  std::vector<std::string> out;
  for (const json& item : j.at(key)) {
    std::optional<std::string> bytes = Base64Decode(item.get<std::string>());
    if (!bytes) throw std::runtime_error(std::string(key) + " holds an item that is not base64");
    out.push_back(std::move(*bytes));
  }
  return out;
}
template <typename T>
T IntField(const json& j, const char* key) {
  const json& v = j.at(key);
  if (!v.is_number_integer()) throw std::runtime_error(std::string(key) + " is not an integer");
  return v.get<T>();
}

template <typename T, typename Parse>
std::optional<T> ReadRecord(const std::string& job_dir, const char* name, std::string* error,
                            Parse parse) {
  if (error != nullptr) error->clear();
  const std::string path = job_dir + "/" + name;
  Result<std::string> text = ReadSmallFile(path, kMaxRecordBytes);
  if (!text.ok()) {
    if (text.error().code != "not_found" && error != nullptr) *error = text.error().message;
    return std::nullopt;
  }
  try {
    const json j = json::parse(*text);
    return parse(j);
  } catch (const std::exception& e) {
    if (error != nullptr) *error = path + ": malformed: " + e.what();
    return std::nullopt;
  }
}

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
  const int oom = open("/proc/self/oom_score_adj", O_WRONLY | O_CLOEXEC);
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

sigset_t SupervisorSignals() {
  sigset_t set;
  sigemptyset(&set);
  for (int sig : {SIGCHLD, SIGUSR1, SIGTERM, SIGINT, SIGQUIT, SIGHUP}) sigaddset(&set, sig);
  return set;
}

struct ProcEntry {
  pid_t pid = 0;
  pid_t ppid = 0;
  pid_t pgrp = 0;
  char state = '?';
};

std::vector<ProcEntry> ScanProc() {
  std::vector<ProcEntry> out;
  DIR* dir = opendir("/proc");
  if (dir == nullptr) return out;
  while (dirent* e = readdir(dir)) {
    char* end = nullptr;
    const long pid = std::strtol(e->d_name, &end, 10);
    if (end == e->d_name || *end != '\0' || pid <= 0) continue;
    std::optional<proc::StatFields> stat = ReadStat(static_cast<pid_t>(pid));
    if (!stat) continue;
    out.push_back({stat->pid, stat->ppid, stat->pgrp, stat->state});
  }
  closedir(dir);
  return out;
}

class Supervisor {
 public:
  explicit Supervisor(std::string job_dir) : job_dir_(std::move(job_dir)) {}
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
};

int Supervisor::Finish(ExitRecord r) {
  if (r.end_unix_ms == 0) r.end_unix_ms = NowUnixMs();
  json j;
  j["reason"] = ToValidUtf8(r.reason);
  j["exit_code"] = r.exit_code ? json(*r.exit_code) : json(nullptr);
  j["signal"] = r.signal ? json(*r.signal) : json(nullptr);
  j["core_dumped"] = r.core_dumped;
  j["start_unix_ms"] = r.start_unix_ms;
  j["end_unix_ms"] = r.end_unix_ms;
  j["detail"] = ToValidUtf8(r.detail);
  Status written = WriteFileAtomic(job_dir_, kExitFile, DumpJson(j));
  if (!written.ok()) {
    Log("cannot record the end (" + r.reason + ": " + r.detail + "): " + written.error().message);
    return kSupervisorFailed;
  }
  Log("recorded: " + r.reason + ": " + r.detail);
  return kSupervisorRecorded;
}

std::optional<std::pair<std::string, double>> Supervisor::ReadStop() {
  Result<std::string> text = ReadSmallFile(job_dir_ + "/" + kStopFile, kMaxRecordBytes);
  if (!text.ok()) {
    if (text.error().code != "not_found") Log(text.error().message);
    return std::nullopt;
  }
  try {
    const json j = json::parse(*text);
    std::string reason = j.at("reason").get<std::string>();
    double grace = spec_.grace_s;
    if (j.contains("grace_s") && j["grace_s"].is_number()) grace = j["grace_s"].get<double>();
    if (!(grace >= 0) || !std::isfinite(grace)) grace = spec_.grace_s;
    return std::make_pair(std::move(reason), grace);
  } catch (const std::exception& e) {
    Log(std::string("stop file malformed: ") + e.what());
    return std::nullopt;
  }
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
    std::vector<char> buffer(1 << 16);
    passwd pw{};
    passwd* found = nullptr;
    if (getpwuid_r(spec_.uid, &pw, buffer.data(), buffer.size(), &found) == 0 && found != nullptr) {
      int count = 64;
      for (int attempt = 0; attempt < 8; ++attempt) {
        std::vector<gid_t> groups(static_cast<size_t>(count));
        int n = count;
        if (getgrouplist(found->pw_name, spec_.gid, groups.data(), &n) >= 0) {
          groups.resize(static_cast<size_t>(n));
          plan->groups = std::move(groups);
          break;
        }
        if (n <= count) n = count * 2;
        count = n;
      }
    }
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
  const int64_t kill_at = MonotonicMs() + SecondsToMs(grace_s);
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
  const int64_t kill_at = MonotonicMs() + grace_ms;
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
    const int64_t now = MonotonicMs();
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
  const std::optional<proc::StatFields> self_stat = ReadStat(getpid());
  json claim;
  claim["by"] = "supervisor";
  claim["pid"] = getpid();
  claim["start_ticks"] = self_stat ? self_stat->start_ticks : 0;
  Result<bool> claimed = CreateFileOnce(job_dir_, kLaunchedFile, DumpJson(claim));
  if (!claimed.ok()) {
    Log("cannot claim the run: " + claimed.error().message);
    return kSupervisorFailed;
  }
  if (!*claimed) {
    Log("the run was already claimed (started, or given up by a restarted daemon); not starting");
    return kSupervisorRefused;
  }

  // 4. The spec.
  Result<std::string> text = ReadSmallFile(job_dir_ + "/" + kSpecFile, kMaxSpecBytes);
  if (!text.ok()) return FinishUnstarted("start_failed", text.error().message);
  Result<SupervisorSpec> spec = SupervisorSpecFromJson(*text);
  if (!spec.ok()) return FinishUnstarted("start_failed", spec.error().message);
  spec_ = std::move(spec).value();
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
  start_unix_ms_ = NowUnixMs();
  const int64_t start_ms = MonotonicMs();
  leader_ = fork();
  if (leader_ < 0) return FinishUnstarted("start_failed", "fork: " + ErrnoText(errno));
  if (leader_ == 0) RunJobProcess(plan);
  setpgid(leader_, leader_);  // Also here: the group exists before any signal to it.
  report_write.Reset();
  keep.clear();
  fcntl(report_fd_.get(), F_SETFL, O_NONBLOCK);

  // 7. Where it runs, for a daemon that has to find it without us.
  if (std::optional<proc::StatFields> st = ReadStat(leader_)) {
    json j;
    j["pid"] = leader_;
    j["start_ticks"] = st->start_ticks;
    j["start_unix_ms"] = start_unix_ms_;
    if (Status ok = WriteFileAtomic(job_dir_, kPidFile, DumpJson(j)); !ok.ok()) {
      Log("cannot record the job's PID: " + ok.error().message);
    }
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
    const int64_t now = MonotonicMs();
    if (stop_reason_.empty() && limit_at && now >= *limit_at) {
      BeginStop("time_limit", spec_.grace_s,
                fmt::format("time limit of {} s reached", *spec_.time_limit_s));
    }
    if (!stop_reason_.empty() && !kill_sent_ && now >= kill_at_ms_) {
      Log("grace period over: SIGKILL to the job's process group");
      SignalLeader(SIGKILL);
      kill_sent_ = true;
    }
    int64_t wake = now + kMaxPollMs;
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

std::string FormatFraction(uint64_t vram, uint64_t total) {
  // Rounded down to 1/10000, so that the cap never exceeds the budget.
  if (vram >= total) return "1";
  uint64_t ten_thousandths = static_cast<uint64_t>((static_cast<unsigned __int128>(vram) * 10000) /
                                                   static_cast<unsigned __int128>(total));
  ten_thousandths = std::max<uint64_t>(ten_thousandths, 1);
  std::string digits = fmt::format("{:04d}", ten_thousandths);
  while (!digits.empty() && digits.back() == '0') digits.pop_back();
  return "0." + digits;
}

}  // namespace

// ---------------------------------------------------------------------------
// Pure parts.

std::string JobDir(const std::string& state_dir, JobId id, unsigned run) {
  std::string dir = state_dir + "/jobs/" + std::to_string(id);
  if (run > 0) dir += "." + std::to_string(run);
  return dir;
}

std::vector<std::string> BuildJobEnvironment(const JobSpec& spec, JobId id,
                                             const std::vector<std::string>& gpu_uuids,
                                             uint64_t gpu_total_bytes, bool mps_active) {
  const bool budget = spec.vram_bytes > 0 && !gpu_uuids.empty();
  const bool fraction = budget && gpu_total_bytes > 0;
  const bool mps_limit = budget && mps_active;
  std::set<std::string_view> user_keys;
  for (const std::string& e : spec.env) user_keys.insert(EnvKey(e));
  auto ours = [&](std::string_view key) {
    return key == "CUDA_VISIBLE_DEVICES" || key == "CUDA_DEVICE_ORDER" ||
           key == "GPUWARDEN_JOB_ID" || key == "GPUWARDEN_VRAM_LIMIT_BYTES" ||
           key == "GPUWARDEN_VRAM_FRACTION" ||
           (mps_limit && key == "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT");
  };
  auto user_set = [&](std::string_view key) { return user_keys.count(key) != 0; };

  std::vector<std::string> env;
  for (const std::string& e : spec.env) {
    if (!ours(EnvKey(e))) env.push_back(e);
  }
  std::string devices;
  for (const std::string& uuid : gpu_uuids) {
    if (!devices.empty()) devices += ',';
    devices += uuid;
  }
  env.push_back("CUDA_VISIBLE_DEVICES=" + devices);
  env.push_back("CUDA_DEVICE_ORDER=PCI_BUS_ID");
  env.push_back("GPUWARDEN_JOB_ID=" + std::to_string(id));
  if (!budget) return env;
  const std::string frac = fraction ? FormatFraction(spec.vram_bytes, gpu_total_bytes) : "";
  env.push_back("GPUWARDEN_VRAM_LIMIT_BYTES=" + std::to_string(spec.vram_bytes));
  if (fraction) env.push_back("GPUWARDEN_VRAM_FRACTION=" + frac);
  if (mps_limit) {
    const uint64_t mib = std::max<uint64_t>(1, spec.vram_bytes >> 20);
    std::string limits;
    for (const std::string& uuid : gpu_uuids) {
      if (!limits.empty()) limits += ',';
      limits += fmt::format("{}={}M", uuid, mib);
    }
    env.push_back("CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=" + limits);
  }
  if (!user_set("XLA_PYTHON_CLIENT_PREALLOCATE")) {
    env.push_back("XLA_PYTHON_CLIENT_PREALLOCATE=false");
  }
  if (fraction && !user_set("XLA_PYTHON_CLIENT_MEM_FRACTION") &&
      !user_set("XLA_CLIENT_MEM_FRACTION")) {
    env.push_back("XLA_PYTHON_CLIENT_MEM_FRACTION=" + frac);
    env.push_back("XLA_CLIENT_MEM_FRACTION=" + frac);
  }
  if (!user_set("TF_FORCE_GPU_ALLOW_GROWTH")) env.push_back("TF_FORCE_GPU_ALLOW_GROWTH=true");
  return env;
}

std::vector<std::string> ExecCandidates(const std::string& argv0,
                                        const std::vector<std::string>& env) {
  if (argv0.empty()) return {};
  if (argv0.find('/') != std::string::npos) return {argv0};
  std::string_view path = kDefaultPath;
  for (const std::string& e : env) {
    if (e.rfind("PATH=", 0) == 0) {
      path = std::string_view(e).substr(5);
      break;  // The first, as getenv would find it.
    }
  }
  std::vector<std::string> out;
  size_t start = 0;
  for (;;) {
    const size_t colon = path.find(':', start);
    const std::string_view dir = path.substr(
        start, colon == std::string_view::npos ? std::string_view::npos : colon - start);
    if (dir.empty()) {
      out.push_back(argv0);  // Relative: the job's working directory.
    } else {
      std::string candidate(dir);
      if (candidate.back() != '/') candidate += '/';
      out.push_back(candidate + argv0);
    }
    if (colon == std::string_view::npos) break;
    start = colon + 1;
  }
  return out;
}

std::string SupervisorSpecToJson(const SupervisorSpec& s) {
  json j;
  j["version"] = 1;
  j["job_id"] = s.job_id;
  json argv = json::array();
  for (const std::string& a : s.argv) argv.push_back(Base64Encode(a));
  j["argv_b64"] = std::move(argv);
  json env = json::array();
  for (const std::string& e : s.env) env.push_back(Base64Encode(e));
  j["env_b64"] = std::move(env);
  j["cwd_b64"] = Base64Encode(s.cwd);
  j["umask"] = static_cast<unsigned>(s.umask);
  j["uid"] = s.uid;
  j["gid"] = s.gid;
  j["user_b64"] = Base64Encode(s.user);
  j["stdout_b64"] = Base64Encode(s.stdout_path);
  j["stderr_b64"] = Base64Encode(s.stderr_path);
  j["stdout_by_job"] = s.stdout_by_job;
  j["stderr_by_job"] = s.stderr_by_job;
  j["time_limit_s"] = s.time_limit_s ? json(*s.time_limit_s) : json(nullptr);
  j["grace_s"] = s.grace_s;
  return DumpJson(j);
}

Result<SupervisorSpec> SupervisorSpecFromJson(std::string_view text) {
  try {
    const json j = json::parse(text);
    if (IntField<int>(j, "version") != 1) throw std::runtime_error("unknown version");
    SupervisorSpec s;
    s.job_id = IntField<JobId>(j, "job_id");
    s.argv = B64ListField(j, "argv_b64");
    s.env = B64ListField(j, "env_b64");
    s.cwd = B64Field(j, "cwd_b64");
    const auto mask = IntField<int64_t>(j, "umask");
    if (mask < 0 || mask > 0777) throw std::runtime_error("umask out of range");
    s.umask = static_cast<mode_t>(mask);
    const auto uid = IntField<int64_t>(j, "uid");
    const auto gid = IntField<int64_t>(j, "gid");
    if (uid < 0 || gid < 0 || uid >= UINT32_MAX || gid >= UINT32_MAX) {
      throw std::runtime_error("uid or gid out of range");
    }
    s.uid = static_cast<uid_t>(uid);
    s.gid = static_cast<gid_t>(gid);
    s.user = B64Field(j, "user_b64");
    s.stdout_path = B64Field(j, "stdout_b64");
    s.stderr_path = B64Field(j, "stderr_b64");
    s.stdout_by_job = j.at("stdout_by_job").get<bool>();
    s.stderr_by_job = j.at("stderr_by_job").get<bool>();
    if (!j.at("time_limit_s").is_null()) {
      s.time_limit_s = IntField<int64_t>(j, "time_limit_s");
      if (*s.time_limit_s <= 0) throw std::runtime_error("time_limit_s must be positive");
    }
    s.grace_s = j.at("grace_s").get<double>();
    if (!(s.grace_s >= 0) || !std::isfinite(s.grace_s)) {
      throw std::runtime_error("grace_s must be a non-negative number");
    }
    if (s.argv.empty()) throw std::runtime_error("argv is empty");
    if (s.cwd.empty() || s.cwd[0] != '/') throw std::runtime_error("cwd is not absolute");
    if (s.stdout_path.empty() || s.stdout_path[0] != '/' || s.stderr_path.empty() ||
        s.stderr_path[0] != '/') {
      throw std::runtime_error("a log path is not absolute");
    }
    auto has_nul = [](const std::vector<std::string>& v) {
      return std::any_of(v.begin(), v.end(), [](const std::string& x) { return HasNul(x); });
    };
    if (has_nul(s.argv) || has_nul(s.env) || HasNul(s.cwd) || HasNul(s.stdout_path) ||
        HasNul(s.stderr_path)) {
      throw std::runtime_error("a NUL byte in argv, env or a path");
    }
    return s;
  } catch (const std::exception& e) {
    return MakeError("malformed", std::string("spec.json: ") + e.what());
  }
}

// ---------------------------------------------------------------------------
// The daemon's side.

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
  if (lstat((job_dir + "/" + kLaunchedFile).c_str(), &st) == 0) {
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
  if (Status ok =
          WriteFileAtomic(job_dir, kSpecFile, SupervisorSpecToJson(s), Sync::kProcessCrashOnly);
      !ok.ok())
    return ok.error();
  return PreparedRun{job_dir, s.stdout_path, s.stderr_path};
}

Result<Launched> StartSupervisor(const std::string& job_dir, const std::string& supervisor_path) {
  if (supervisor_path.empty() || supervisor_path[0] != '/') {
    return MakeError("usage", "the supervisor path is not absolute: " + supervisor_path);
  }
  UniqueFd null_fd(AboveStdio(open("/dev/null", O_RDWR | O_CLOEXEC)));
  if (null_fd.get() < 0) return MakeError("io", "/dev/null: " + ErrnoText(errno));
  const std::string log_path = job_dir + "/" + kSupervisorLog;
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
  char* argv[] = {path_copy.data(), dir_copy.data(), nullptr};
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
  const std::optional<proc::StatFields> st = ReadStat(pid);
  int child_errno = 0;
  pollfd p{confirm_read.get(), POLLIN, 0};
  const int64_t give_up = MonotonicMs() + kExecConfirmTimeoutMs;
  for (;;) {
    const int64_t left = give_up - MonotonicMs();
    if (left <= 0) break;  // Still not exec'd; it will be, or it will end.
    const int rc = poll(&p, 1, static_cast<int>(left));
    if (rc < 0 && errno == EINTR) continue;
    if (rc <= 0) break;
    const ssize_t n = read(confirm_read.get(), &child_errno, sizeof child_errno);
    if (n < 0 && errno == EINTR) continue;
    if (n != static_cast<ssize_t>(sizeof child_errno)) child_errno = 0;
    break;
  }
  if (child_errno != 0 || !st) {
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

Result<Launched> Launch(const Job& job, const LaunchOptions& options) {
  Result<PreparedRun> run = PrepareRun(job, options);
  if (!run.ok()) return run.error();
  Result<Launched> launched = StartSupervisor(run->job_dir, options.supervisor_path);
  if (!launched.ok()) return launched.error();
  launched->stdout_path = run->stdout_path;
  launched->stderr_path = run->stderr_path;
  return launched;
}

std::optional<LaunchRecord> ReadLaunchRecord(const std::string& job_dir, std::string* error) {
  return ReadRecord<LaunchRecord>(job_dir, kLaunchedFile, error, [](const json& j) {
    LaunchRecord r;
    const std::string by = j.at("by").get<std::string>();
    if (by != "supervisor" && by != "daemon") throw std::runtime_error("unknown claimant " + by);
    r.by_supervisor = by == "supervisor";
    r.pid = IntField<pid_t>(j, "pid");
    r.start_ticks = IntField<uint64_t>(j, "start_ticks");
    return r;
  });
}

std::optional<PidRecord> ReadPidRecord(const std::string& job_dir, std::string* error) {
  return ReadRecord<PidRecord>(job_dir, kPidFile, error, [](const json& j) {
    PidRecord r;
    r.pid = IntField<pid_t>(j, "pid");
    r.start_ticks = IntField<uint64_t>(j, "start_ticks");
    r.start_unix_ms = IntField<int64_t>(j, "start_unix_ms");
    if (r.pid <= 0) throw std::runtime_error("pid is not positive");
    return r;
  });
}

std::optional<ExitRecord> ReadExitRecord(const std::string& job_dir, std::string* error) {
  return ReadRecord<ExitRecord>(job_dir, kExitFile, error, [](const json& j) {
    ExitRecord r;
    r.reason = j.at("reason").get<std::string>();
    if (r.reason.empty()) throw std::runtime_error("empty reason");
    if (!j.at("exit_code").is_null()) r.exit_code = IntField<int>(j, "exit_code");
    if (!j.at("signal").is_null()) r.signal = IntField<int>(j, "signal");
    r.core_dumped = j.at("core_dumped").get<bool>();
    r.start_unix_ms = IntField<int64_t>(j, "start_unix_ms");
    r.end_unix_ms = IntField<int64_t>(j, "end_unix_ms");
    r.detail = j.at("detail").get<std::string>();
    return r;
  });
}

Status RequestStop(const std::string& job_dir, pid_t supervisor_pid,
                   uint64_t supervisor_start_ticks, const std::string& reason, double grace_s) {
  if (!(grace_s >= 0) || !std::isfinite(grace_s)) {
    return MakeError("usage", "the grace period must be a non-negative number of seconds");
  }
  if (supervisor_pid <= 0) return MakeError("gone", "no supervisor");
  // Pin first, then check: a pidfd that passed the check names the checked
  // process whatever happens to the PID afterwards.
  UniqueFd fd(PidfdOpen(supervisor_pid));
  if (fd.get() < 0 && errno == ESRCH) return MakeError("gone", "the supervisor has ended");
  const std::optional<proc::StatFields> st = ReadStat(supervisor_pid);
  if (!st || IsZombie(st->state)) return MakeError("gone", "the supervisor has ended");
  if (st->start_ticks != supervisor_start_ticks) {
    return MakeError("gone", "the supervisor has ended (its PID belongs to another process now)");
  }
  json j;
  j["reason"] = ToValidUtf8(reason);
  j["grace_s"] = grace_s;
  if (Status ok = WriteFileAtomic(job_dir, kStopFile, DumpJson(j)); !ok.ok()) return ok;
  const int rc = fd.get() >= 0 ? PidfdSendSignal(fd.get(), SIGUSR1)
                               : kill(supervisor_pid, SIGUSR1);  // No pidfd support.
  if (rc == 0) return Status::Ok();
  if (errno == ESRCH) return MakeError("gone", "the supervisor has ended");
  if (errno == EPERM) return MakeError("denied", "not allowed to signal the supervisor");
  return MakeError("io", "signal the supervisor: " + ErrnoText(errno));
}

Result<bool> ClaimUnlaunched(const std::string& job_dir) {
  struct stat st {};
  if (lstat(job_dir.c_str(), &st) != 0) {
    if (errno == ENOENT) return true;  // Launch never got as far as the directory.
    return MakeError("io", job_dir + ": " + ErrnoText(errno));
  }
  if (!S_ISDIR(st.st_mode)) return MakeError("io", job_dir + ": not a directory");
  const std::optional<proc::StatFields> self = ReadStat(getpid());
  json claim;
  claim["by"] = "daemon";
  claim["pid"] = getpid();
  claim["start_ticks"] = self ? self->start_ticks : 0;
  return CreateFileOnce(job_dir, kLaunchedFile, DumpJson(claim));
}

bool SupervisorAlive(pid_t pid, uint64_t start_ticks) {
  if (pid <= 0) return false;
  const std::optional<proc::StatFields> st = ReadStat(pid);
  return st && st->start_ticks == start_ticks && !IsZombie(st->state);
}

int SuperviseMain(const std::string& job_dir) {
  // fds 0-2 must be taken, so that nothing opened later lands on them and is
  // then replaced by the job's dup2.
  // open() takes the lowest free descriptor, so the loop fills the gaps in order.
  for (int fd = 0; fd <= 2; ++fd) {
    if (fcntl(fd, F_GETFD) < 0) (void)!open("/dev/null", O_RDWR);
  }
  Supervisor supervisor(job_dir);
  return supervisor.Run();
}

}  // namespace gw::queue
