// The daemon's side of a run: prepare JOB_DIR and start its supervisor, ask
// it to stop, give up a run nobody started, and tell whether a supervisor
// still runs (runner.h gives the protocol these serve).
//
// Processes are read through the ProcReader (or proc root) given, so that a
// daemon run with --proc-root reads the same process table everywhere; time
// comes from the Clock given.
#ifndef GPUWARDEN_QUEUE_LAUNCHER_H_
#define GPUWARDEN_QUEUE_LAUNCHER_H_

#include <sys/types.h>

#include <cstdint>
#include <string>

#include "core/clock.h"
#include "core/result.h"
#include "proc/proc_reader.h"
#include "queue/job.h"
#include "queue/run_files.h"

namespace gw::queue {

struct LaunchOptions {
  std::string state_dir;        // Absolute; exists, owned by the daemon's user.
  std::string supervisor_path;  // Absolute path of gpuwarden-supervise.
  // Where the process table is (the daemon's --proc-root); the supervisor
  // gets it too (gpuwarden-supervise --proc-root DIR, only when not /proc).
  std::string proc_root = "/proc";
  // Seconds between SIGTERM and SIGKILL at the time limit, and for a stop
  // request without a grace of its own.
  double grace_s = 10;
  bool mps_active = false;  // The job's GPUs are served by CUDA MPS.
  // Memory of one GPU, for the memory fractions handed to frameworks; with
  // GPUs of different sizes pass the largest, so that no fraction exceeds the
  // job's budget on any of its GPUs. 0 = unknown: no fractions.
  uint64_t gpu_total_bytes = 0;
};

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

// Starts `options.supervisor_path [--proc-root DIR] JOB_DIR` (fork + execve,
// never a shell) with stdin on /dev/null, stdout and stderr on
// JOB_DIR/supervisor.log, no other file descriptor, a minimal environment,
// default signal dispositions, in a new session (setsid), and with
// SupervisorSignals() blocked so that a stop request sent before the
// supervisor is ready stays pending instead of killing it. Returns once execve
// succeeded (waiting at most 30 s by `clock` for it to say so); an execve
// failure is an error ("io") and the child is reaped. The start time is read
// under options.proc_root. Safe to call from a multithreaded daemon (only
// async-signal-safe calls after fork).
Result<Launched> StartSupervisor(const std::string& job_dir, const LaunchOptions& options,
                                 const Clock& clock);

// PrepareRun() then StartSupervisor().
Result<Launched> Launch(const Job& job, const LaunchOptions& options, const Clock& clock);

// Asks the supervisor (pid, start ticks) to stop the job: writes JOB_DIR/stop
// (reason, grace_s) atomically, then sends SIGUSR1 through a pidfd opened and
// checked against the start ticks before the write. The supervisor sends
// SIGTERM (and SIGCONT) to the job's process group, SIGKILL after grace_s, and
// records "stopped:<reason>". A later request replaces the file: its reason is
// ignored once the job is being stopped, but a shorter grace is honoured (0 =
// SIGKILL now). Errors: "gone" (the supervisor ended, or the PID is another
// process now), "usage" (grace_s < 0), "denied", "io".
Status RequestStop(const std::string& job_dir, pid_t supervisor_pid,
                   uint64_t supervisor_start_ticks, const std::string& reason, double grace_s,
                   const proc::ProcReader& procs);

// For a restarted daemon with a job in "starting": claims JOB_DIR/launched for
// itself (its own PID and start time, read through `procs`). true: the run
// never started and never will (any supervisor that comes later finds the
// claim and exits kSupervisorRefused without starting anything); also true
// when JOB_DIR does not exist (nothing can have started). false: a supervisor
// had claimed it; adopt it (ReadLaunchRecord()).
Result<bool> ClaimUnlaunched(const std::string& job_dir, const proc::ProcReader& procs);

// Whether the process `pid` started at `start_ticks` is still running (not a
// zombie); false for a reused PID.
bool SupervisorAlive(pid_t pid, uint64_t start_ticks, const proc::ProcReader& procs);

}  // namespace gw::queue

#endif  // GPUWARDEN_QUEUE_LAUNCHER_H_
