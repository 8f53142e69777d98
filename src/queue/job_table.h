// JobTable: the daemon's core. It owns the active jobs (queued, held,
// starting, running) and their life: admission and submit, hold, release,
// cancel, placement passes over GPU snapshots (policy.h), starts, stops,
// ends, the VRAM guard and recovery after a restart. It reaches the world
// only through the parts it is given: the JobStore, the Supervisors, the
// Clock, a ProcReader (the process table, to find a job's processes) and a
// ProcessControl (every signal it sends itself goes through a pidfd there),
// and reports to the DaemonLog. It opens no socket and reads no GPU: the
// daemon's loop hands it snapshots and supervisor ends; the request
// handlers (ops.h) call its request methods.
//
// Storage faults lose nothing:
//   - A client's request whose write fails is refused with code "storage"
//     and the store's message; nothing changed, nothing acknowledged.
//   - A job's own progress (start, end, requeue, pids, peak VRAM) whose write
//     fails stays in memory and is written again at every Tick until it is
//     stored; meanwhile the table is degraded ("storage" in degraded()).
//   - A job is never started unless its "starting" state was stored first.
//   - The degraded state is left at the first write that succeeds with
//     nothing left to write again (while only a request's write failed, an
//     active job is rewritten unchanged every retry as a probe).
//
// Not thread-safe: the event loop's thread only.
#ifndef GPUWARDEN_QUEUE_JOB_TABLE_H_
#define GPUWARDEN_QUEUE_JOB_TABLE_H_

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "act/process_control.h"
#include "core/clock.h"
#include "core/result.h"
#include "core/snapshot.h"
#include "diagnose/verdict.h"
#include "fleet/fleet_view.h"
#include "os/unique_fd.h"
#include "proc/proc_reader.h"
#include "queue/daemon_log.h"
#include "queue/job.h"
#include "queue/job_store.h"
#include "queue/policy.h"
#include "queue/supervisors.h"

namespace gw::queue {

struct JobTableOptions {
  std::string state_dir;        // For LaunchOptions.
  std::string supervisor_path;  // gpuwarden-supervise.
  PolicyConfig policy;
  // Which degraded GPUs still take jobs ([placement] in config.toml): the
  // same rule as `why --need`'s (diagnose/health.h).
  diagnose::PlacementHealth placement;
  double grace_s = 10;  // Stop: SIGTERM, this, SIGKILL.
  // A job over its VRAM by more than the margin is stopped (else warned).
  bool vram_guard_stop = true;
  // How often progress that could not be stored is written again.
  int64_t retry_interval_ms = 1000;
  // At most one placement pass per this many ms for submits: a pass costs
  // time in proportion to the waiting jobs, so a stream of submits pays for
  // one pass every few ms instead of one each. A submit after a quiet spell
  // is placed at once, and so is everything a job's end, a control request
  // or a changed look at the GPUs asks for.
  int64_t min_pass_interval_ms = kDefaultMinPassIntervalMs;
  static constexpr int64_t kDefaultMinPassIntervalMs = 5;
};

struct JobTableParts {
  JobStore& store;
  Supervisors& supervisors;
  const Clock& clock;
  proc::ProcReader& procs;
  act::ProcessControl& control;
  DaemonLog& log;
};

// A way in which the daemon is not fully working, for the "queue" reply.
struct Degraded {
  std::string what;  // "storage" (writes refused), "gpus" (the GPUs cannot be read).
  std::string detail;
  int64_t since_unix_ms = 0;
};

// What the table has done since it was made, for the daemon's metrics.
struct JobCounters {
  uint64_t starts = 0;                    // Jobs started (running).
  std::map<std::string, uint64_t> ended;  // Jobs ended, by their end state ("succeeded", ...).
  fleet::WaitHistogram waits;             // Submit to start, of each job started.
};

// The error code of a request refused because it could not be stored.
inline constexpr const char* kRefusedStorage = "storage";

class JobTable {
 public:
  // The parts must outlive the table.
  JobTable(JobTableOptions options, JobTableParts parts);

  // After a restart: takes every active job from the store. Queued and held
  // ones wait again; a launch that never started is requeued; live
  // supervisors are watched again; runs that ended meanwhile get their end.
  // Error: the store cannot be read (the daemon cannot start).
  Status Recover();

  // --- Requests -------------------------------------------------------------
  // Accepts a new job (state, owner and spec set by the caller), durable
  // before it returns. Errors: "unsatisfiable" (CheckAdmission: it can never
  // run here), "storage" (not stored; nothing changed).
  Result<JobId> Submit(Job job);

  // "hold", "release" or "cancel" job `id` for `caller_uid` (its owner or
  // root). Returns the state after the request (a running job being
  // cancelled stays running until its supervisor records the end). Errors:
  // "not_found", "forbidden", "state", "storage", "store" (cannot read).
  Result<JobState> Control(JobId id, const std::string& op, uid_t caller_uid,
                           const std::string& caller_user);

  // The job as the daemon knows it now (its live version when active, or
  // ended but not yet stored), nullopt when there is none. Error "store".
  Result<std::optional<Job>> Find(JobId id);
  // The store's listing with live versions in place of the stored ones.
  Result<std::vector<Job>> List(const JobFilter& filter);

  const JobTableOptions& options() const { return o_; }
  const std::map<JobId, Job>& active() const { return active_; }
  const Decisions& last_decisions() const { return last_; }
  const JobCounters& counters() const { return counters_; }
  // Queue position (1 = next) from the last placement pass.
  std::optional<size_t> Position(JobId id) const;
  std::vector<Degraded> degraded() const;
  const std::optional<Snapshot>& latest() const { return latest_; }

  // --- Events from the loop -------------------------------------------------
  struct WatchFd {
    JobId id;
    int fd;  // Readable once the job's supervisor has ended.
  };
  std::vector<WatchFd> Watches() const;
  // The supervisor of `id` ended (its Watch fd fired).
  void OnSupervisorExit(JobId id);
  // A look at the GPUs (full: a sampled look, once a second, with the
  // device-file holders of the last scan: Snapshotter).
  // A full look's idle holders and unhealthy GPUs come from `diagnosis` when
  // the caller judged it (the daemon, once for everything it serves), else
  // from the table's own judgement of its recent full looks.
  void OnSnapshot(Snapshot snapshot, bool full, const diagnose::Diagnosis* diagnosis = nullptr);
  // Every loop pass: writes again what could not be stored (every
  // retry_interval_ms), runs a placement pass when one is due.
  void Tick();
  // When (monotonic ms) the pass asked for is due, nullopt when none is:
  // the loop wakes for it.
  std::optional<int64_t> NextPassMs() const;
  // Runs the pass asked for now, due or not, so that an answer about
  // positions and reasons reflects every request before it.
  void RunPendingPass();
  // True once since the last call when a job started or ended: its memory
  // changed, so the loop should look at the GPUs at once.
  bool TakeLookRequest();
  // While a job waits for the GPUs the GPUs are read every `waiting_ms`,
  // else every `idle_ms`. A job that waits only for its window, for another
  // job or for its owner's own jobs to end (by the last pass) does not count:
  // no look at the GPUs can start it, and the events that can run a pass
  // of their own.
  int64_t PollIntervalMs(int64_t waiting_ms, int64_t idle_ms) const;

 private:
  struct Watched {
    os::UniqueFd fd;
    bool child = false;       // Launched by this daemon: reap it.
    std::string stop_reason;  // Set when the daemon asked it to stop.
    bool warned_vram = false;
  };

  void Schedule();
  void StartJob(const StartDecision& s);
  void StopJob(Job& job, const std::string& reason);
  void Watch(Job& job, bool child);
  // The supervisor ended: its record decides (DecideEnd). `stop_reason` is
  // the stop this daemon asked for, if any.
  void Finish(JobId id, const std::string& stop_reason);
  void EndJob(Job job);  // Out of active_, stored or kept for another try.
  void KillLeftovers(const Job& job);

  // Stores `job`; on failure keeps it for RetryUnsaved and degrades.
  void Persist(const Job& job);
  // One write; updates the degraded state either way.
  Status Write(const Job& job);
  void WriteFailed(const Error& error);
  void WriteSucceeded();
  void RetryUnsaved();

  std::map<JobId, std::vector<pid_t>> JobProcesses();
  void LearnJobPids();
  void Judge();
  void ApplyDiagnosis(const diagnose::Diagnosis& diagnosis);
  void GuardVram();
  void NoteGpuErrors(const Snapshot& s);
  std::vector<GpuState> GpuStates();
  std::string DirOf(const Job& job) const { return parts_.supervisors.DirOf(job); }

  JobTableOptions o_;
  JobTableParts parts_;
  std::map<JobId, Job> active_;
  std::map<JobId, Watched> watched_;
  std::set<JobId> dirty_;                     // Active jobs whose latest version is not stored.
  std::map<JobId, Job> unsaved_ended_;        // Ended, their end not stored yet.
  std::optional<Degraded> storage_degraded_;  // Set while a write failed.
  std::optional<Degraded> gpus_degraded_;
  int64_t next_retry_ms_ = 0;  // Monotonic.
  // A pass is asked for. Submits ask for one that may wait for
  // min_pass_interval_ms; a job's end, a control request or a changed look
  // at the GPUs ask for one at once (pass_now_), so a GPU that frees is
  // handed over without waiting.
  bool schedule_needed_ = false;
  bool pass_now_ = false;
  void AskPassNow() { schedule_needed_ = pass_now_ = true; }
  std::optional<int64_t> last_pass_ms_;  // Monotonic; for min_pass_interval_ms.
  bool look_requested_ = false;
  std::optional<Snapshot> latest_;
  std::vector<Snapshot> history_;
  std::map<JobId, std::vector<pid_t>> job_pids_;
  bool job_pids_stale_ = false;  // A job started or ended since job_pids_ was read.
  uint64_t fingerprint_ = 0;     // DecisionFingerprint of latest_.
  std::set<pid_t> idle_pids_;
  std::map<unsigned, std::string> unhealthy_;
  std::map<unsigned, std::string> reset_pending_;  // Usable; a reset waits (ResetPendingGpus).
  Decisions last_;
  std::unordered_map<JobId, size_t> position_;
  JobCounters counters_;
};

}  // namespace gw::queue

#endif  // GPUWARDEN_QUEUE_JOB_TABLE_H_
