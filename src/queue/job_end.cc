#include "queue/job_end.h"

#include <fmt/format.h>

#include "core/units.h"

namespace gw::queue {
namespace {

// Back to the queue; the next run gets a directory of its own.
void Requeue(Job& job) {
  job.state = JobState::kQueued;
  job.requeues++;
  job.start_unix_ms.reset();
  job.gpu_indices.clear();
  job.gpu_uuids.clear();
  job.supervisor_pid.reset();
  job.supervisor_start_ticks.reset();
  job.pid.reset();
  job.pid_start_ticks.reset();
}

}  // namespace

EndDecision DecideEnd(const Job& before, const Result<std::optional<ExitRecord>>& record,
                      const Result<std::optional<LaunchRecord>>& launch,
                      const std::string& stop_reason, int64_t now_unix_ms) {
  EndDecision d;
  d.job = before;
  Job& job = d.job;
  if (!record.ok()) {
    // An end was recorded but cannot be read: saying "lost" (and killing its
    // session) would be wrong about a run that may well have ended cleanly.
    job.state = JobState::kFailed;
    job.end_reason = "record_unreadable";
    job.end_detail = "its end could not be read: " + record.error().message;
    job.end_unix_ms = now_unix_ms;
    return d;
  }
  const std::optional<ExitRecord>& rec = *record;
  // The claim comes before the job's fork: without one the job never ran.
  const bool claimed = !launch.ok() || (*launch && (*launch)->by_supervisor);
  if (!rec && !claimed) {
    d.never_started = true;
    if (stop_reason == "cancelled") {
      job.state = JobState::kCancelled;
      job.end_reason = "cancelled";
      job.end_detail = "cancelled before it started";
      job.end_unix_ms = now_unix_ms;
      return d;
    }
    if (job.requeues >= kMaxRequeuesOfUnstartedRuns) {
      job.state = JobState::kFailed;
      job.end_reason = "start_failed";
      job.end_detail = fmt::format(
          "its supervisor ended before starting it; given up after {} runs (each run's "
          "supervisor.log says why)",
          job.requeues + 1);
      job.end_unix_ms = now_unix_ms;
      return d;
    }
    Requeue(job);
    job.end_detail = "its supervisor ended before starting it; back in the queue";
    return d;
  }
  std::string why = stop_reason;
  if (rec && rec->reason.rfind("stopped:", 0) == 0) why = rec->reason.substr(8);
  if (why == "preempted") {
    Requeue(job);
    job.end_reason = "preempted";
    job.end_detail = "stopped for a higher-priority job; back in the queue";
    d.kill_leftovers = !rec;
    return d;
  }
  job.end_unix_ms = rec && rec->end_unix_ms > 0 ? rec->end_unix_ms : now_unix_ms;
  if (!rec) {
    job.state = JobState::kLost;
    job.end_reason = "lost";
    job.end_detail = "its supervisor ended without recording the job's end";
    d.kill_leftovers = true;
    return d;
  }
  job.exit_code = rec->exit_code;
  job.exit_signal = rec->signal;
  job.end_detail = rec->detail;
  if (why == "cancelled") {
    job.state = JobState::kCancelled;
    job.end_reason = "cancelled";
  } else if (why == "vram_limit") {
    job.state = JobState::kFailed;
    job.end_reason = "vram_limit";
    job.end_detail = fmt::format("stopped: used more GPU memory than its --vram {} allows",
                                 FormatBytes(job.spec.vram_bytes));
  } else if (rec->reason == "time_limit" || rec->reason == "start_failed") {
    job.state = JobState::kFailed;
    job.end_reason = rec->reason;
  } else if (rec->reason == "exit" && rec->exit_code == 0) {
    job.state = JobState::kSucceeded;
    job.end_reason = "exit";
  } else {
    job.state = JobState::kFailed;
    job.end_reason = rec->signal ? "signal" : "exit";
  }
  return d;
}

Job WithLaunchFacts(const Job& stored, const RecoveryFacts& facts) {
  Job job = stored;
  if (job.state != JobState::kStarting || job.supervisor_pid) return job;
  if (facts.launch && facts.launch->ok() && **facts.launch && (**facts.launch)->by_supervisor) {
    // A supervisor claimed the run before this daemon stored its PID.
    job.supervisor_pid = (**facts.launch)->pid;
    job.supervisor_start_ticks = (**facts.launch)->start_ticks;
  }
  return job;
}

RecoveryPlan PlanRecovery(const Job& stored, const RecoveryFacts& facts) {
  RecoveryPlan plan;
  plan.job = stored;
  Job& j = plan.job;
  if (j.state == JobState::kQueued || j.state == JobState::kHeld || IsTerminal(j.state)) {
    return plan;
  }
  if (j.state == JobState::kStarting) {
    if (facts.claimed && facts.claimed->ok() && **facts.claimed) {
      // Its supervisor never started the job, and now never will.
      Requeue(j);
      plan.action = RecoveryAction::kRequeue;
      plan.store = true;
      return plan;
    }
    j = WithLaunchFacts(j, facts);
    j.state = JobState::kRunning;
    plan.store = true;
  }
  if (!j.pid && facts.pid && facts.pid->ok() && **facts.pid) {
    j.pid = (**facts.pid)->pid;
    j.pid_start_ticks = (**facts.pid)->start_ticks;
    plan.store = true;
  }
  const bool known = j.supervisor_pid && j.supervisor_start_ticks;
  plan.action = known && facts.supervisor_alive ? RecoveryAction::kAdopt : RecoveryAction::kFinish;
  return plan;
}

}  // namespace gw::queue
