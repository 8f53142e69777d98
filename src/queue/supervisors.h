// Supervisors: the seam between the daemon and the runs it starts. Everything
// the daemon asks of a run (launch it, stop it, read what it recorded, watch
// it end, claim back a run that never started) goes through this interface,
// so the daemon's decisions can be tested with FakeSupervisors
// (fake_supervisors.h), which records every call and ends runs when told.
//
// The real implementation (MakeRealSupervisors) is the runner's protocol
// (runner.h: JOB_DIR files, gpuwarden-supervise processes, pidfds).
// Every call names the run by its Job (id and requeues give JOB_DIR).
#ifndef GPUWARDEN_QUEUE_SUPERVISORS_H_
#define GPUWARDEN_QUEUE_SUPERVISORS_H_

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "core/result.h"
#include "os/unique_fd.h"
#include "queue/job.h"
#include "queue/runner.h"

namespace gw::queue {

class Supervisors {
 public:
  virtual ~Supervisors() = default;

  // The run's directory (JobDir of the job's id and requeues).
  virtual std::string DirOf(const Job& job) const = 0;

  // Prepares JOB_DIR and starts the run's supervisor (runner.h Launch()).
  // The supervisor is the caller's child: reap it with Reap().
  virtual Result<Launched> Launch(const Job& job, const LaunchOptions& options) = 0;

  // Asks the run's supervisor to stop the job (runner.h RequestStop()).
  // Errors: "gone" (the supervisor already ended: its end is reported through
  // Watch()), "usage", "denied", "io".
  virtual Status RequestStop(const Job& job, const std::string& reason, double grace_s) = 0;

  // For a job the store says is "starting" after a restart (runner.h
  // ClaimUnlaunched()): true = it never started and never will.
  virtual Result<bool> ClaimUnlaunched(const Job& job) = 0;

  // What the run recorded. nullopt: the file does not exist (yet). An error
  // (code "malformed" or "io", the message naming the file and the problem)
  // when it exists but cannot be read or parsed: that is not "missing".
  virtual Result<std::optional<LaunchRecord>> ReadLaunch(const Job& job) = 0;
  virtual Result<std::optional<PidRecord>> ReadPid(const Job& job) = 0;
  virtual Result<std::optional<ExitRecord>> ReadExit(const Job& job) = 0;

  // Whether the supervisor `pid` that started at `start_ticks` still runs
  // (not a zombie); false for a reused PID.
  virtual bool Alive(pid_t pid, uint64_t start_ticks) = 0;

  // A descriptor that becomes readable (POLLIN) once that supervisor has
  // ended; the daemon polls it. Error "gone" when it has already ended or its
  // PID names another process now.
  virtual Result<os::UniqueFd> Watch(pid_t pid, uint64_t start_ticks) = 0;

  // Collects the exit status of a supervisor this process launched (waitpid
  // without blocking); nothing for one it did not.
  virtual void Reap(pid_t pid) = 0;
};

// The runner's protocol under `state_dir`, reading process start times from
// `proc_root`.
std::unique_ptr<Supervisors> MakeRealSupervisors(std::string state_dir,
                                                 std::string proc_root = "/proc");

}  // namespace gw::queue

#endif  // GPUWARDEN_QUEUE_SUPERVISORS_H_
