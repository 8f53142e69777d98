#include "queue/job_end.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace gw::queue {
namespace {

using ::testing::HasSubstr;

constexpr int64_t kNow = 1'700'000'000'000;

Job Running() {
  Job j;
  j.id = 7;
  j.owner = {1000, 1000, "ann"};
  j.spec.argv = {"train"};
  j.spec.vram_bytes = 8ULL << 30;
  j.state = JobState::kRunning;
  j.start_unix_ms = kNow - 5000;
  j.gpu_indices = {1};
  j.gpu_uuids = {"GPU-1"};
  j.supervisor_pid = 4000;
  j.supervisor_start_ticks = 40;
  j.pid = 4001;
  j.pid_start_ticks = 41;
  return j;
}

ExitRecord Record(std::string reason, std::optional<int> code, std::optional<int> sig = {}) {
  ExitRecord r;
  r.reason = std::move(reason);
  r.exit_code = code;
  r.signal = sig;
  r.start_unix_ms = kNow - 4000;
  r.end_unix_ms = kNow - 1000;
  r.detail = "detail from the supervisor";
  return r;
}

Result<std::optional<ExitRecord>> Have(ExitRecord r) {
  return std::optional<ExitRecord>(std::move(r));
}
Result<std::optional<ExitRecord>> None() { return std::optional<ExitRecord>(); }
// The run's claim: by its supervisor (it may have started the job), none.
Result<std::optional<LaunchRecord>> Claimed() {
  return std::optional<LaunchRecord>(LaunchRecord{true, 4000, 40});
}
Result<std::optional<LaunchRecord>> Unclaimed() { return std::optional<LaunchRecord>(); }

TEST(DecideEnd, ExitZeroSucceedsWithTheRecordedEndTime) {
  EndDecision d = DecideEnd(Running(), Have(Record("exit", 0)), Claimed(), "", kNow);
  EXPECT_EQ(d.job.state, JobState::kSucceeded);
  EXPECT_EQ(d.job.end_reason, "exit");
  EXPECT_EQ(d.job.exit_code, 0);
  EXPECT_EQ(d.job.end_unix_ms, kNow - 1000);
  EXPECT_FALSE(d.kill_leftovers);
}

TEST(DecideEnd, NonZeroExitAndSignalFail) {
  EndDecision e = DecideEnd(Running(), Have(Record("exit", 3)), Claimed(), "", kNow);
  EXPECT_EQ(e.job.state, JobState::kFailed);
  EXPECT_EQ(e.job.end_reason, "exit");
  EXPECT_EQ(e.job.exit_code, 3);
  EndDecision s =
      DecideEnd(Running(), Have(Record("signal", std::nullopt, 9)), Claimed(), "", kNow);
  EXPECT_EQ(s.job.state, JobState::kFailed);
  EXPECT_EQ(s.job.end_reason, "signal");
  EXPECT_EQ(s.job.exit_signal, 9);
}

TEST(DecideEnd, TimeLimitAndStartFailedKeepTheirReason) {
  EXPECT_EQ(DecideEnd(Running(), Have(Record("time_limit", std::nullopt, 15)), Claimed(), "", kNow)
                .job.end_reason,
            "time_limit");
  EndDecision d = DecideEnd(Running(), Have(Record("start_failed", 127)), Claimed(), "", kNow);
  EXPECT_EQ(d.job.state, JobState::kFailed);
  EXPECT_EQ(d.job.end_reason, "start_failed");
  EXPECT_EQ(d.job.end_detail, "detail from the supervisor");
}

TEST(DecideEnd, TheRecordedStopReasonWinsOverTheOneAsked) {
  // Asked before a restart: this daemon asked nothing, the record knows.
  EndDecision d = DecideEnd(Running(), Have(Record("stopped:cancelled", std::nullopt, 15)),
                            Claimed(), "", kNow);
  EXPECT_EQ(d.job.state, JobState::kCancelled);
  EXPECT_EQ(d.job.end_reason, "cancelled");
  EndDecision v = DecideEnd(Running(), Have(Record("stopped:vram_limit", std::nullopt, 15)),
                            Claimed(), "cancelled", kNow);
  EXPECT_EQ(v.job.state, JobState::kFailed);
  EXPECT_EQ(v.job.end_reason, "vram_limit");
  EXPECT_THAT(v.job.end_detail, HasSubstr("--vram 8 GiB"));
}

TEST(DecideEnd, APreemptedJobGoesBackToTheQueueUnderANewRun) {
  EndDecision d = DecideEnd(Running(), Have(Record("stopped:preempted", std::nullopt, 15)),
                            Claimed(), "", kNow);
  EXPECT_EQ(d.job.state, JobState::kQueued);
  EXPECT_EQ(d.job.requeues, 1u);
  EXPECT_EQ(d.job.end_reason, "preempted");
  EXPECT_FALSE(d.job.start_unix_ms);
  EXPECT_FALSE(d.job.end_unix_ms);
  EXPECT_TRUE(d.job.gpu_indices.empty());
  EXPECT_TRUE(d.job.gpu_uuids.empty());
  EXPECT_FALSE(d.job.supervisor_pid);
  EXPECT_FALSE(d.job.pid);
  EXPECT_FALSE(d.kill_leftovers);
  // Asked, but the supervisor died before recording: requeued, and what it
  // left is ended.
  EndDecision n = DecideEnd(Running(), None(), Claimed(), "preempted", kNow);
  EXPECT_EQ(n.job.state, JobState::kQueued);
  EXPECT_TRUE(n.kill_leftovers);
}

TEST(DecideEnd, NoRecordIsLostAndItsLeftoversAreKilled) {
  EndDecision d = DecideEnd(Running(), None(), Claimed(), "", kNow);
  EXPECT_EQ(d.job.state, JobState::kLost);
  EXPECT_EQ(d.job.end_reason, "lost");
  EXPECT_EQ(d.job.end_unix_ms, kNow);
  EXPECT_TRUE(d.kill_leftovers);
  // A cancel asked of a supervisor that then vanished is still lost: nobody
  // saw the job end.
  EXPECT_EQ(DecideEnd(Running(), None(), Claimed(), "cancelled", kNow).job.state, JobState::kLost);
}

TEST(DecideEnd, ASupervisorThatEndedBeforeClaimingTheRunRequeuesTheJobAndKillsNothing) {
  // It could not write its claim (a read-only disk): the job never started.
  EndDecision d = DecideEnd(Running(), None(), Unclaimed(), "", kNow);
  EXPECT_EQ(d.job.state, JobState::kQueued);
  EXPECT_TRUE(d.never_started);
  EXPECT_FALSE(d.kill_leftovers);
  EXPECT_EQ(d.job.requeues, 1u);
  EXPECT_FALSE(d.job.supervisor_pid);
  EXPECT_TRUE(d.job.gpu_indices.empty());
  EXPECT_THAT(d.job.end_detail, HasSubstr("ended before starting it"));
  // The daemon's own claim (a restart gave the run up) is no start either.
  EXPECT_EQ(
      DecideEnd(Running(), None(), std::optional<LaunchRecord>(LaunchRecord{false, 0, 0}), "", kNow)
          .job.state,
      JobState::kQueued);
  // Cancelled meanwhile: cancelled, not lost.
  EndDecision c = DecideEnd(Running(), None(), Unclaimed(), "cancelled", kNow);
  EXPECT_EQ(c.job.state, JobState::kCancelled);
  EXPECT_EQ(c.job.end_reason, "cancelled");
  EXPECT_FALSE(c.kill_leftovers);
  // A claim that cannot be read may hide a start: lost, as before.
  EXPECT_EQ(
      DecideEnd(Running(), None(), MakeError("io", "launched: I/O error"), "", kNow).job.state,
      JobState::kLost);
  // Not for ever: a run that never starts fails after kMaxRequeuesOfUnstartedRuns.
  Job tried = Running();
  tried.requeues = kMaxRequeuesOfUnstartedRuns;
  EndDecision f = DecideEnd(tried, None(), Unclaimed(), "", kNow);
  EXPECT_EQ(f.job.state, JobState::kFailed);
  EXPECT_EQ(f.job.end_reason, "start_failed");
  EXPECT_THAT(f.job.end_detail, HasSubstr("given up after 11 runs"));
}

TEST(DecideEnd, AMalformedRecordFailsTheJobNamingTheFileAndKillsNothing) {
  Result<std::optional<ExitRecord>> bad =
      MakeError("malformed", "/state/jobs/7/exit.json: exit_code: expected an integer");
  EndDecision d = DecideEnd(Running(), bad, Claimed(), "", kNow);
  EXPECT_EQ(d.job.state, JobState::kFailed);
  EXPECT_EQ(d.job.end_reason, "record_unreadable");
  EXPECT_THAT(d.job.end_detail, HasSubstr("/state/jobs/7/exit.json"));
  EXPECT_THAT(d.job.end_detail, HasSubstr("expected an integer"));
  EXPECT_EQ(d.job.end_unix_ms, kNow);
  EXPECT_FALSE(d.kill_leftovers);
}

// --- PlanRecovery -------------------------------------------------------------

Job Stored(JobState state) {
  Job j = Running();
  j.state = state;
  if (state == JobState::kQueued || state == JobState::kHeld) {
    j.supervisor_pid.reset();
    j.supervisor_start_ticks.reset();
    j.pid.reset();
    j.pid_start_ticks.reset();
  }
  return j;
}

TEST(PlanRecovery, QueuedAndHeldJobsWaitAsBefore) {
  for (JobState s : {JobState::kQueued, JobState::kHeld}) {
    RecoveryPlan p = PlanRecovery(Stored(s), {});
    EXPECT_EQ(p.action, RecoveryAction::kKeep);
    EXPECT_EQ(p.job.state, s);
    EXPECT_FALSE(p.store);
  }
}

TEST(PlanRecovery, AStartingJobClaimedBackIsRequeuedUnderANewRun) {
  Job j = Stored(JobState::kStarting);
  j.supervisor_pid.reset();
  j.supervisor_start_ticks.reset();
  RecoveryFacts f;
  f.claimed = Result<bool>(true);
  RecoveryPlan p = PlanRecovery(j, f);
  EXPECT_EQ(p.action, RecoveryAction::kRequeue);
  EXPECT_EQ(p.job.state, JobState::kQueued);
  EXPECT_EQ(p.job.requeues, 1u);
  EXPECT_TRUE(p.job.gpu_indices.empty());
  EXPECT_TRUE(p.store);
}

TEST(PlanRecovery, AStartingJobASupervisorClaimedIsAdoptedFromItsLaunchRecord) {
  Job j = Stored(JobState::kStarting);
  j.supervisor_pid.reset();  // The daemon died before storing it.
  j.supervisor_start_ticks.reset();
  j.pid.reset();
  RecoveryFacts f;
  f.claimed = Result<bool>(false);
  f.launch = Result<std::optional<LaunchRecord>>(
      std::optional<LaunchRecord>(LaunchRecord{true, 4100, 410}));
  f.pid = Result<std::optional<PidRecord>>(std::optional<PidRecord>(PidRecord{4101, 411, 0}));
  f.supervisor_alive = true;
  Job known = WithLaunchFacts(j, f);
  EXPECT_EQ(known.supervisor_pid, 4100);
  RecoveryPlan p = PlanRecovery(j, f);
  EXPECT_EQ(p.action, RecoveryAction::kAdopt);
  EXPECT_EQ(p.job.state, JobState::kRunning);
  EXPECT_EQ(p.job.supervisor_pid, 4100);
  EXPECT_EQ(p.job.supervisor_start_ticks, 410u);
  EXPECT_EQ(p.job.pid, 4101);
  EXPECT_TRUE(p.store);
}

TEST(PlanRecovery, AStartingJobWhoseSupervisorEndedMeanwhileIsFinished) {
  Job j = Stored(JobState::kStarting);
  RecoveryFacts f;
  f.claimed = Result<bool>(false);
  f.supervisor_alive = false;
  RecoveryPlan p = PlanRecovery(j, f);
  EXPECT_EQ(p.action, RecoveryAction::kFinish);
  EXPECT_EQ(p.job.state, JobState::kRunning);
}

TEST(PlanRecovery, AClaimThatFailedIsNotARequeue) {
  Job j = Stored(JobState::kStarting);
  j.supervisor_pid.reset();
  j.supervisor_start_ticks.reset();
  RecoveryFacts f;
  f.claimed = Result<bool>(MakeError("io", "/state/jobs/7: Permission denied"));
  f.launch = Result<std::optional<LaunchRecord>>(std::optional<LaunchRecord>());
  RecoveryPlan p = PlanRecovery(j, f);
  EXPECT_EQ(p.action, RecoveryAction::kFinish);  // No supervisor known: its record decides.
  EXPECT_EQ(p.job.requeues, 0u);
}

TEST(PlanRecovery, ARunningJobIsAdoptedWhileItsSupervisorLivesElseFinished) {
  RecoveryFacts alive;
  alive.supervisor_alive = true;
  RecoveryPlan a = PlanRecovery(Stored(JobState::kRunning), alive);
  EXPECT_EQ(a.action, RecoveryAction::kAdopt);
  EXPECT_FALSE(a.store);
  RecoveryPlan f = PlanRecovery(Stored(JobState::kRunning), {});
  EXPECT_EQ(f.action, RecoveryAction::kFinish);
}

TEST(PlanRecovery, ARunningJobLearnsItsPidFromThePidRecord) {
  Job j = Stored(JobState::kRunning);
  j.pid.reset();
  j.pid_start_ticks.reset();
  RecoveryFacts f;
  f.pid = Result<std::optional<PidRecord>>(std::optional<PidRecord>(PidRecord{4242, 99, 0}));
  f.supervisor_alive = true;
  RecoveryPlan p = PlanRecovery(j, f);
  EXPECT_EQ(p.job.pid, 4242);
  EXPECT_EQ(p.job.pid_start_ticks, 99u);
  EXPECT_TRUE(p.store);
}

}  // namespace
}  // namespace gw::queue
