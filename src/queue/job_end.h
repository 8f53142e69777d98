// The daemon's two judgements about a job's run, as pure functions so that
// every case has a unit test: how a run ended (DecideEnd), and what a
// restarted daemon does with a job its store says was active (PlanRecovery).
// No I/O here: the caller reads the run's records through Supervisors and
// acts on the answer.
#ifndef GPUWARDEN_QUEUE_JOB_END_H_
#define GPUWARDEN_QUEUE_JOB_END_H_

#include <cstdint>
#include <optional>
#include <string>

#include "core/result.h"
#include "queue/job.h"
#include "queue/runner.h"

namespace gw::queue {

struct EndDecision {
  // The job after its run: ended (state terminal, end_reason, end_detail,
  // exit status, end time) or back in the queue (preempted: state queued,
  // requeues + 1, its placement and processes cleared).
  Job job;
  // The supervisor ended without a record of the job's end: processes of its
  // session may live on and must be ended by the daemon.
  bool kill_leftovers = false;
  // Back in the queue because its supervisor ended before starting it (not
  // preempted).
  bool never_started = false;
};

// A run whose supervisor ended before it claimed the run goes back to the
// queue at most this many times (counting every requeue of the job), then
// fails: a supervisor that can never claim (its directory refused, the disk
// read-only for good) must not be relaunched for ever.
inline constexpr int kMaxRequeuesOfUnstartedRuns = 10;

// How a run ended, from what its supervisor recorded (`record`: ReadExit's
// answer, nullopt = no exit.json; `launch`: ReadLaunch's answer, the run's
// claim) and the stop the daemon asked for
// (`stop_reason`: "cancelled", "preempted", "vram_limit", or "" for none; a
// record's "stopped:<why>" wins, as it also covers a stop asked before a
// restart). `now_unix_ms` is the end time when the record has none.
//   - record unreadable (an error: malformed or unreadable exit.json): failed,
//     end_reason "record_unreadable", the detail the reader's message (which
//     names the file and the problem). Not lost: the supervisor did record an
//     end, so nothing is killed.
//   - no record and no claim by a supervisor (`launch` read, and nullopt or
//     the daemon's own claim): the job never started, so nothing is killed
//     and nothing is lost: cancelled when a cancel was asked, else back to
//     the queue (end_detail says why), or failed "start_failed" once it has
//     been requeued kMaxRequeuesOfUnstartedRuns times.
//   - preempted: back to the queue (leftovers killed when there is no record).
//   - no record: lost, leftovers killed.
//   - cancelled -> cancelled; vram_limit -> failed "vram_limit";
//     time_limit / start_failed -> failed with that reason; exit 0 ->
//     succeeded "exit"; any other exit -> failed "exit"; a signal -> failed
//     "signal".
EndDecision DecideEnd(const Job& job, const Result<std::optional<ExitRecord>>& record,
                      const Result<std::optional<LaunchRecord>>& launch,
                      const std::string& stop_reason, int64_t now_unix_ms);

// What a restarted daemon learned about one stored active job's run, read in
// this order by the caller (each only when the earlier ones leave it open):
struct RecoveryFacts {
  // "starting" only: ClaimUnlaunched's answer (true = the run never started
  // and never will).
  std::optional<Result<bool>> claimed;
  // "starting" without a stored supervisor: ReadLaunch's answer.
  std::optional<Result<std::optional<LaunchRecord>>> launch;
  // "running" (or adopted) without a stored job pid: ReadPid's answer.
  std::optional<Result<std::optional<PidRecord>>> pid;
  // Whether the supervisor (as the plan's job names it) still runs.
  bool supervisor_alive = false;
};

enum class RecoveryAction {
  kKeep,     // Queued or held: it waits as before.
  kRequeue,  // A launch that never started: back to the queue under a new run number.
  kAdopt,    // Its supervisor runs: watch it again.
  kFinish,   // Its supervisor is gone: read how it ended (DecideEnd).
};

struct RecoveryPlan {
  RecoveryAction action = RecoveryAction::kKeep;
  Job job;             // With what the facts taught (supervisor, pid, state).
  bool store = false;  // `job` differs from the stored one: write it.
};

// Which supervisor a stored "starting" job has, once `launch` is known: the
// stored one, else the launch record's when a supervisor claimed the run.
// The caller uses it to ask Alive() before PlanRecovery.
Job WithLaunchFacts(const Job& stored, const RecoveryFacts& facts);

// Pure. A "starting" job: claimed -> kRequeue; otherwise a supervisor claimed
// it: adopt it like a running one (a claim that failed with an error is
// treated the same: only a supervisor's own record or its absence decides).
// A "running" job: supervisor alive -> kAdopt, else kFinish; its pid from
// the pid record when the store has none. Queued and held: kKeep.
RecoveryPlan PlanRecovery(const Job& stored, const RecoveryFacts& facts);

}  // namespace gw::queue

#endif  // GPUWARDEN_QUEUE_JOB_END_H_
