// The runner: how a job is started, supervised and stopped, and how its end is
// recorded, so that the daemon may die at any moment (kill -9 included)
// without losing a job's end and without a job ever starting twice.
//
// Every run of a job has its own directory JOB_DIR (JobDir()), mode 0700,
// owned by the daemon's user. The daemon writes the run's spec there and
// starts `gpuwarden-supervise JOB_DIR` (Launch()). That supervisor leaves the
// daemon's session, claims the run, starts the job in a process group of its
// own, enforces the time limit, obeys stop requests, ends what the job leaves
// behind and records the end. It never needs the daemon again.
//
// Files in JOB_DIR. Every file a reader depends on appears complete or not at
// all (written to a temporary name, fsync'd, renamed or linked into place,
// directory fsync'd):
//   spec.json       daemon      What to run (SupervisorSpec), before the supervisor starts.
//   launched        claimant    Who claimed the run (LaunchRecord): the supervisor that
//                               runs it, or a restarted daemon that gave it up
//                               (ClaimUnlaunched). Created by link(2), so exactly one
//                               claimant wins and the file is complete when it appears.
//   pid             supervisor  The job's leader (PidRecord), once forked.
//   stop            daemon      Why and how gently to stop (RequestStop).
//   exit.json       supervisor  How the run ended (ExitRecord); the supervisor's last act.
//   stdout, stderr  the job     Its logs, unless the job names its own files.
//   supervisor.log  supervisor  Its own messages (stdout and stderr of the supervisor).
//
// The daemon's protocol:
//   start    Persist the job as "starting" first, then Launch(), then persist "running"
//            with Launched's supervisor pid and start ticks and the log paths.
//   watch    The supervisor is the launching daemon's child, for that daemon to reap (no
//            other thread may reap it with waitpid(-1, ...) before Launch() returns: Launch
//            reads its start time from /proc). A restarted daemon watches adopted supervisors with
//            SupervisorAlive() (or a pidfd). Once the supervisor has ended:
//            ReadExitRecord(); none and the supervisor exited kSupervisorRefused: another
//            claimant holds the run (ReadLaunchRecord()); none otherwise: the job is lost,
//            and whatever PidRecord names (pid + start ticks, leader of process group pid)
//            may still run and should be ended by the daemon.
//   restart  For a job in "starting": ReadLaunchRecord(); a supervisor's record -> adopt
//            that supervisor (alive: watch it; gone: ReadExitRecord() or lost). No record
//            -> ClaimUnlaunched(): true = the run never started and never will (requeue
//            it under a new run number, see JobDir()); false = a supervisor claimed it
//            meanwhile, read the record again and adopt. For a job in "running": watch the
//            recorded supervisor as above.
//   stop     RequestStop() (cancel, preempt, VRAM guard); the end arrives in exit.json.
//   find     The job's processes are in the supervisor's session (session id = supervisor
//            pid) and, unless they left it, in the process group PidRecord::pid.
//
// Deployment: the supervisors must outlive the daemon, so a systemd unit for
// gpuwardend needs KillMode=process (or must place each supervisor in a scope
// of its own); with the default KillMode=control-group, stopping or restarting
// the daemon kills every job.
#ifndef GPUWARDEN_QUEUE_RUNNER_H_
#define GPUWARDEN_QUEUE_RUNNER_H_

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"
#include "queue/job.h"

namespace gw::queue {

// gpuwarden-supervise's exit status.
// exit.json written (whatever the job did).
inline constexpr int kSupervisorRecorded = 0;
// Wrong command line; nothing touched.
inline constexpr int kSupervisorUsage = 64;
// Could not claim the run (nothing started), or claimed it but could not write
// exit.json; supervisor.log says which.
inline constexpr int kSupervisorFailed = 70;
// Someone else claimed the run; nothing started.
inline constexpr int kSupervisorRefused = 75;
// JOB_DIR is not an absolute path to a directory (not a link) owned by the
// supervisor's user and not writable by group or others; nothing touched.
inline constexpr int kSupervisorBadJobDir = 78;

// Exit codes the job gets when it cannot be started (a shell's conventions):
// the program was not found, or it was found but could not be run or the
// job's identity, working directory or logs could not be set up.
inline constexpr int kExitNotFound = 127;
inline constexpr int kExitCannotRun = 126;

// The run directory: STATE_DIR/jobs/<id> for run 0, STATE_DIR/jobs/<id>.<run>
// for later runs. A directory serves one run only (its `launched` claim is
// never removed), so a job that goes back to the queue after it was launched
// or claimed must come back under a new run number; Launch() uses
// Job::requeues.
std::string JobDir(const std::string& state_dir, JobId id, unsigned run);

struct LaunchOptions {
  std::string state_dir;        // Absolute; exists, owned by the daemon's user.
  std::string supervisor_path;  // Absolute path of gpuwarden-supervise.
  // Seconds between SIGTERM and SIGKILL at the time limit, and for a stop
  // request without a grace of its own.
  double grace_s = 10;
  bool mps_active = false;  // The job's GPUs are served by CUDA MPS.
  // Memory of one GPU, for the memory fractions handed to frameworks; with
  // GPUs of different sizes pass the largest, so that no fraction exceeds the
  // job's budget on any of its GPUs. 0 = unknown: no fractions.
  uint64_t gpu_total_bytes = 0;
};

// The job's environment: the submitter's `spec.env`, then
//   CUDA_VISIBLE_DEVICES   the GPU UUIDs joined by ','; "" for a 0-GPU job (no GPU)
//   CUDA_DEVICE_ORDER      PCI_BUS_ID (NVML's order, for tools that print indices)
//   GPUWARDEN_JOB_ID       the job's id
// and when spec.vram_bytes > 0 and the job has GPUs (the budget is per GPU):
//   GPUWARDEN_VRAM_LIMIT_BYTES         spec.vram_bytes
//   GPUWARDEN_VRAM_FRACTION            vram / gpu_total_bytes, rounded down to 4
//                                      decimals (at least 0.0001, at most 1), for
//                                      torch.cuda.set_per_process_memory_fraction;
//                                      only when gpu_total_bytes > 0
//   CUDA_MPS_PINNED_DEVICE_MEM_LIMIT   when mps_active: "<uuid>=<MiB>M,..." (MiB
//                                      rounded down, at least 1). Advisory: a
//                                      client can only lower the limit the MPS
//                                      server was given; enforcement is the
//                                      daemon's (set_device_pinned_mem_limit).
//   and, only when the submitter set none of the knob's variables (a user who
//   tunes a framework knows better than a default):
//   XLA_PYTHON_CLIENT_PREALLOCATE=false
//   XLA_PYTHON_CLIENT_MEM_FRACTION, XLA_CLIENT_MEM_FRACTION  the fraction (one knob,
//                                      old and new name; only with gpu_total_bytes)
//   TF_FORCE_GPU_ALLOW_GROWTH=true
// A submitter's entry for a variable the runner sets (CUDA_VISIBLE_DEVICES,
// CUDA_DEVICE_ORDER, GPUWARDEN_JOB_ID, GPUWARDEN_VRAM_*, and the MPS limit
// when it is set) is removed, so every such variable appears once. Other
// entries keep their bytes and order; the runner's come last, in the order
// above. Pure.
std::vector<std::string> BuildJobEnvironment(const JobSpec& spec, JobId id,
                                             const std::vector<std::string>& gpu_uuids,
                                             uint64_t gpu_total_bytes, bool mps_active);

// The paths execve is tried with to run `argv0`, as execvpe would but with the
// PATH of the job's environment `env` (glibc's execvpe uses the caller's): an
// argv0 containing '/' is the only candidate; otherwise each PATH element
// joined with argv0, an empty element meaning the working directory. No PATH
// in env: "/usr/local/bin:/usr/bin:/bin". Empty argv0: none. A file that is
// not a valid executable (ENOEXEC) fails; it is never handed to a shell.
std::vector<std::string> ExecCandidates(const std::string& argv0,
                                        const std::vector<std::string>& env);

// spec.json: everything the supervisor needs, and nothing it has to look up
// in the daemon. Strings that come from users are bytes, stored as base64.
struct SupervisorSpec {
  JobId job_id = 0;
  std::vector<std::string> argv;  // argv[0] looked up with ExecCandidates().
  std::vector<std::string> env;   // Final (BuildJobEnvironment()).
  std::string cwd;                // Absolute.
  mode_t umask = 022;
  uid_t uid = 0;
  gid_t gid = 0;
  std::string user;         // For a person; the groups come from uid's account.
  std::string stdout_path;  // Absolute.
  std::string stderr_path;  // Absolute.
  // True when the log was named by the job (Job::stdout_path / stderr_path):
  // the job's process opens it after taking the job's identity, so a
  // root-run supervisor never creates or appends to a path a user chose.
  // False: JOB_DIR/stdout or stderr, opened by the supervisor and handed to
  // the job's user (fchown) with mode 0600.
  bool stdout_by_job = false;
  bool stderr_by_job = false;
  std::optional<int64_t> time_limit_s;
  double grace_s = 10;
};
std::string SupervisorSpecToJson(const SupervisorSpec& spec);
Result<SupervisorSpec> SupervisorSpecFromJson(std::string_view text);  // Error "malformed".

struct PreparedRun {
  std::string job_dir;
  std::string stdout_path;
  std::string stderr_path;
};

// Creates STATE_DIR/jobs (0700) when missing and JOB_DIR (0700) for
// JobDir(state_dir, job.id, job.requeues), and writes spec.json for `job`
// (argv, cwd, umask, owner, the final environment, time limit; the logs at
// job.stdout_path / job.stderr_path, or JOB_DIR/stdout and JOB_DIR/stderr when
// those are empty or already name exactly these defaults).
// An existing JOB_DIR is reused (and spec.json replaced) only while nobody
// claimed it: a daemon that died between this and the supervisor's start can
// prepare the same run again. Errors: "usage" (empty argv, a NUL byte, a
// relative path, GPU UUIDs not matching spec.gpus, a bad time limit or grace),
// "exists" (the run was claimed), "io".
Result<PreparedRun> PrepareRun(const Job& job, const LaunchOptions& options);

struct Launched {
  std::string job_dir;
  pid_t supervisor_pid = 0;  // The caller's child; reap it by PID.
  uint64_t supervisor_start_ticks = 0;
  std::string stdout_path;
  std::string stderr_path;
};

// Starts `supervisor_path JOB_DIR` (fork + execve, never a shell) with stdin
// on /dev/null, stdout and stderr on JOB_DIR/supervisor.log, no other file
// descriptor, a minimal environment, default signal dispositions, in a new
// session (setsid), and with SIGCHLD, SIGUSR1, SIGTERM, SIGINT, SIGQUIT and
// SIGHUP blocked so that a stop request sent before the supervisor is ready stays
// pending instead of killing it. Returns once execve succeeded; an execve
// failure is an error ("io") and the child is reaped. Safe to call from a
// multithreaded daemon (only async-signal-safe calls after fork).
Result<Launched> StartSupervisor(const std::string& job_dir, const std::string& supervisor_path);

// PrepareRun() then StartSupervisor().
Result<Launched> Launch(const Job& job, const LaunchOptions& options);

// JOB_DIR/launched.
struct LaunchRecord {
  bool by_supervisor = false;  // false: a daemon gave the run up (ClaimUnlaunched).
  pid_t pid = 0;               // The claimant.
  uint64_t start_ticks = 0;    // Its start time, /proc/PID/stat field 22.
};

// JOB_DIR/pid, written once the job's leader is forked.
struct PidRecord {
  pid_t pid = 0;  // Also the job's process group.
  uint64_t start_ticks = 0;
  int64_t start_unix_ms = 0;
};

// JOB_DIR/exit.json.
struct ExitRecord {
  // "exit"          the leader exited by itself (exit_code)
  // "signal"        a signal it did not get from the supervisor ended it (signal)
  // "time_limit"    the supervisor stopped it at its time limit
  // "stopped:<why>" RequestStop(why), or "stopped:supervisor" when the
  //                 supervisor itself got SIGTERM, SIGINT or SIGQUIT (shutdown)
  // "start_failed"  it never ran: spec unreadable, logs not opened, no process
  //                 forked (no exit_code); or its process could not take the
  //                 job's identity, working directory or named logs, or exec
  //                 the program (exit_code kExitCannotRun / kExitNotFound, the
  //                 message also in the stderr log where that was open)
  // For time_limit and stopped:*, exit_code / signal say how the leader ended;
  // both are absent when it was stopped before it started.
  std::string reason;
  std::optional<int> exit_code;
  std::optional<int> signal;
  bool core_dumped = false;
  int64_t start_unix_ms = 0;  // 0 when it never started.
  int64_t end_unix_ms = 0;
  std::string detail;  // One line for a person (valid UTF-8, not sanitised for terminals).
};

// Each reader: nullopt with *error empty when the file does not exist (yet);
// nullopt with *error naming the file and the problem when it cannot be read
// or is malformed. `error` may be null.
std::optional<LaunchRecord> ReadLaunchRecord(const std::string& job_dir, std::string* error);
std::optional<PidRecord> ReadPidRecord(const std::string& job_dir, std::string* error);
std::optional<ExitRecord> ReadExitRecord(const std::string& job_dir, std::string* error);

// Asks the supervisor (pid, start ticks) to stop the job: writes JOB_DIR/stop
// (reason, grace_s) atomically, then sends SIGUSR1 through a pidfd opened and
// checked against the start ticks before the write. The supervisor sends
// SIGTERM (and SIGCONT) to the job's process group, SIGKILL after grace_s, and
// records "stopped:<reason>". A later request replaces the file: its reason is
// ignored once the job is being stopped, but a shorter grace is honoured (0 =
// SIGKILL now). Errors: "gone" (the supervisor ended, or the PID is another
// process now), "usage" (grace_s < 0), "denied", "io".
Status RequestStop(const std::string& job_dir, pid_t supervisor_pid,
                   uint64_t supervisor_start_ticks, const std::string& reason, double grace_s);

// For a restarted daemon with a job in "starting": claims JOB_DIR/launched for
// itself. true: the run never started and never will (any supervisor that
// comes later finds the claim and exits kSupervisorRefused without starting
// anything); also true when JOB_DIR does not exist (nothing can have started).
// false: a supervisor had claimed it; adopt it (ReadLaunchRecord()).
Result<bool> ClaimUnlaunched(const std::string& job_dir);

// Whether the process `pid` started at `start_ticks` is still running (not a
// zombie); false for a reused PID.
bool SupervisorAlive(pid_t pid, uint64_t start_ticks);

// gpuwarden-supervise JOB_DIR, as a function (supervisor_main.cc calls it).
// Returns the exit status (kSupervisor*). In order:
//   1. setsid(); SIGCHLD, SIGUSR1, SIGTERM, SIGINT, SIGQUIT, SIGHUP blocked and
//      read from a signalfd; SIGPIPE, SIGUSR2, SIGALRM, SIGVTALRM, SIGPROF, SIGIO,
//      SIGXFSZ ignored (a stray signal must not end it); becomes a child subreaper
//      (PR_SET_CHILD_SUBREAPER), so that processes the job orphans come back to it.
//   2. JOB_DIR must be a directory (not a link) owned by the supervisor's user
//      and not writable by group or others, else kSupervisorBadJobDir.
//   3. Claims JOB_DIR/launched (link(2)); taken -> kSupervisorRefused.
//   4. Reads spec.json; from here on every outcome ends in exit.json. A stop
//      file, or a pending SIGTERM/SIGINT, found now ends the run unstarted.
//   5. Opens JOB_DIR/stdout and JOB_DIR/stderr (O_CREAT|O_APPEND|O_NOFOLLOW, 0600,
//      fchown to the job's uid/gid when root); looks up the supplementary groups
//      of uid's account (getgrouplist; only gid when uid has no account).
//   6. Forks the job's leader, which: makes its own process group; resets signal
//      mask and dispositions; sets oom_score_adj to 0 (a daemon protected from
//      the OOM killer must not pass that on); takes stdin from /dev/null and
//      stdout/stderr from the logs; when root: setgroups, setgid, setuid, checks
//      that setuid(0) now fails (unless uid is 0); asks for SIGKILL should the
//      supervisor die (PR_SET_PDEATHSIG); opens logs the job named itself (as the
//      job's user); chdir(cwd); umask; execve along ExecCandidates(). A failure
//      goes to the stderr log and, through a close-on-exec pipe, to the
//      supervisor: "start_failed", exit 126 / 127. Not root: the job runs as the
//      supervisor's user, and a spec for another uid fails to start.
//   7. Writes JOB_DIR/pid; waits. At the time limit (counted from the fork), on
//      SIGUSR1 (JOB_DIR/stop; without a readable one it is ignored) or on
//      SIGTERM/SIGINT/SIGQUIT to itself: SIGTERM + SIGCONT to the job's process group,
//      SIGKILL after the grace. SIGHUP is ignored.
//   8. When the leader has exited (held as a zombie meanwhile, so its PID, the
//      group's id, cannot be reused): whatever is left of its process group and
//      every process orphaned to the supervisor (the job's escaped descendants,
//      with their own groups) gets SIGTERM + SIGCONT, SIGKILL after
//      min(grace, 2 s), and is waited for at most 5 s more.
//   9. Writes exit.json and returns kSupervisorRecorded (kSupervisorFailed when it
//      cannot).
// Every wait is bounded by the deadlines above; the supervisor holds no file
// descriptor the daemon gave it but 0-2, and runs nothing through a shell.
int SuperviseMain(const std::string& job_dir);

}  // namespace gw::queue

#endif  // GPUWARDEN_QUEUE_RUNNER_H_
