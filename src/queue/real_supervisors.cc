// MakeRealSupervisors: the Supervisors seam (supervisors.h) over the runner's
// protocol (runner.h): JOB_DIR files, gpuwarden-supervise processes, pidfds.
#include <sys/wait.h>

#include <cerrno>
#include <utility>

#include "core/clock.h"
#include "os/pidfd.h"
#include "proc/proc_reader.h"
#include "queue/launcher.h"
#include "queue/process_stat.h"
#include "queue/run_files.h"
#include "queue/supervisors.h"

namespace gw::queue {
namespace {

class RealSupervisors final : public Supervisors {
 public:
  RealSupervisors(std::string state_dir, std::string proc_root)
      : state_dir_(std::move(state_dir)), procs_(std::move(proc_root)) {}

  std::string DirOf(const Job& job) const override {
    return JobDir(state_dir_, job.id, job.requeues);
  }

  // The run goes under this object's state directory and proc root, whatever
  // `options` says of them: one Supervisors, one JOB_DIR per job.
  Result<Launched> Launch(const Job& job, const LaunchOptions& options) override {
    LaunchOptions o = options;
    o.state_dir = state_dir_;
    o.proc_root = procs_.proc_root();
    return queue::Launch(job, o, clock_);
  }

  Status RequestStop(const Job& job, const std::string& reason, double grace_s) override {
    if (!job.supervisor_pid || !job.supervisor_start_ticks) {
      return MakeError("gone", "job " + std::to_string(job.id) + " has no supervisor recorded");
    }
    return queue::RequestStop(DirOf(job), *job.supervisor_pid, *job.supervisor_start_ticks, reason,
                              grace_s, procs_);
  }

  Result<bool> ClaimUnlaunched(const Job& job) override {
    return queue::ClaimUnlaunched(DirOf(job), procs_);
  }

  Result<std::optional<LaunchRecord>> ReadLaunch(const Job& job) override {
    return ReadLaunchRecord(DirOf(job));
  }
  Result<std::optional<PidRecord>> ReadPid(const Job& job) override {
    return ReadPidRecord(DirOf(job));
  }
  Result<std::optional<ExitRecord>> ReadExit(const Job& job) override {
    return ReadExitRecord(DirOf(job));
  }

  bool Alive(pid_t pid, uint64_t start_ticks) override {
    return SupervisorAlive(pid, start_ticks, procs_);
  }

  Result<os::UniqueFd> Watch(pid_t pid, uint64_t start_ticks) override {
    if (pid <= 0) return MakeError("gone", "no supervisor");
    // Pin first, then check: the descriptor then names the checked process
    // whatever happens to the PID afterwards.
    Result<os::UniqueFd> fd = os::PidfdOpen(pid);
    if (!fd.ok()) {
      if (fd.error().code == "gone") {
        return MakeError("gone", "supervisor " + std::to_string(pid) + " has ended");
      }
      return fd.error();
    }
    const Result<proc::StatFields> st = procs_.ReadStat(pid);
    if (!st.ok() || IsZombie(st->state)) {
      return MakeError("gone", "supervisor " + std::to_string(pid) + " has ended");
    }
    if (st->start_ticks != start_ticks) {
      return MakeError("gone", "supervisor " + std::to_string(pid) +
                                   " has ended (its PID belongs to another process now)");
    }
    return fd;
  }

  void Reap(pid_t pid) override {
    if (pid <= 0) return;  // waitpid would take any child.
    // ECHILD for a process that is not (or no longer) ours: nothing to do.
    while (waitpid(pid, nullptr, WNOHANG) < 0 && errno == EINTR) {
    }
  }

 private:
  std::string state_dir_;
  proc::ProcReader procs_;
  RealClock clock_;  // The launcher's deadline (the supervisor's exec).
};

}  // namespace

std::unique_ptr<Supervisors> MakeRealSupervisors(std::string state_dir, std::string proc_root) {
  return std::make_unique<RealSupervisors>(std::move(state_dir), std::move(proc_root));
}

}  // namespace gw::queue
