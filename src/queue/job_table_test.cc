// The daemon's core through its fakes: a FaultyJobStore over a real SQLite
// store in a temporary directory, FakeSupervisors, a FakeClock, a
// FakeProcessControl and an empty process table.
#include "queue/job_table.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "act/fake_process_control.h"
#include "diagnose/test_util.h"
#include "queue/fake_supervisors.h"
#include "queue/faulty_job_store.h"
#include "queue/ops.h"
#include "queue/sqlite_job_store.h"

namespace gw::queue {
namespace {

using ::testing::Contains;
using testing::FakeSupervisors;
using ::testing::HasSubstr;

class JobTableTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (std::filesystem::temp_directory_path() / "gw_job_table.XXXXXX").string();
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
    std::filesystem::create_directories(dir_ + "/proc");  // An empty process table.
    OpenStore();
    procs_ = std::make_unique<proc::ProcReader>(dir_ + "/proc");
    NewTable();
  }
  void TearDown() override {
    table_.reset();
    faulty_.reset();
    sqlite_.reset();
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }

  void OpenStore() {
    auto s = SqliteJobStore::Open(dir_ + "/queue.db");
    ASSERT_TRUE(s.ok()) << s.error().message;
    sqlite_ = std::move(*s);
    faulty_ = std::make_unique<FaultyJobStore>(*sqlite_);
  }
  // A fresh table over the same store and supervisors: a restarted daemon.
  // Passes are not spaced out unless asked: these tests step the clock only
  // where the time matters to them.
  void NewTable(double grace_s = 10, int64_t min_pass_interval_ms = 0) {
    JobTableOptions o;
    o.state_dir = dir_;
    o.supervisor_path = "/fake/gpuwarden-supervise";
    o.retry_interval_ms = 1000;
    o.grace_s = grace_s;
    o.min_pass_interval_ms = min_pass_interval_ms;
    table_ = std::make_unique<JobTable>(
        o, JobTableParts{*faulty_, sup_, clock_, *procs_, control_, log_});
  }

  static Job NewJob(unsigned gpus = 1) {
    Job j;
    j.owner = {1000, 1000, "ann"};
    j.spec.argv = {"/usr/bin/python3", "train.py"};
    j.spec.name = "train";
    j.spec.cwd = "/home/ann";
    j.spec.gpus = gpus;
    j.state = JobState::kQueued;
    j.submit_unix_ms = 1;
    return j;
  }

  JobId SubmitOk(Job j) {
    Result<JobId> id = table_->Submit(std::move(j));
    EXPECT_TRUE(id.ok()) << id.error().message;
    return id.ok() ? *id : 0;
  }

  // A look at two idle 80 GiB GPUs and a placement pass.
  void Look() {
    table_->OnSnapshot(diagnose::fixtures::HealthyServer(2, clock_.NowUnixMs()), /*full=*/true);
    table_->Tick();
  }
  // Polls the Watch descriptors as the loop does and reports those that fired.
  void DeliverEnds() {
    for (const JobTable::WatchFd& w : table_->Watches()) {
      char c;
      if (read(w.fd, &c, 1) >= 0) table_->OnSupervisorExit(w.id);
    }
  }

  Job Stored(JobId id) {
    Result<std::optional<Job>> j = sqlite_->Get(id);
    EXPECT_TRUE(j.ok() && *j);
    return j.ok() && *j ? **j : Job{};
  }
  Job Live(JobId id) {
    Result<std::optional<Job>> j = table_->Find(id);
    EXPECT_TRUE(j.ok() && *j);
    return j.ok() && *j ? **j : Job{};
  }
  // A process in the fake /proc: in `session`, owned by `uid`.
  void FakeProcess(pid_t pid, pid_t session, uid_t uid, uint64_t start_ticks) {
    const std::string d = dir_ + "/proc/" + std::to_string(pid);
    std::filesystem::create_directories(d);
    WriteFile(d + "/stat", fmt::format("{} (worker) S 1 {} {} 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 {} "
                                       "1000 100\n",
                                       pid, pid, session, start_ticks));
    WriteFile(d + "/status", fmt::format("Name:\tworker\nUid:\t{0}\t{0}\t{0}\t{0}\n", uid));
    control_.processes[pid] = act::testing::FakeProcess{start_ticks};
  }
  static void WriteFile(const std::string& path, const std::string& text) {
    FILE* f = fopen(path.c_str(), "w");
    ASSERT_NE(f, nullptr);
    fputs(text.c_str(), f);
    fclose(f);
  }
  bool Logged(const std::string& part) const {
    for (const std::string& l : lines_) {
      if (l.find(part) != std::string::npos) return true;
    }
    return false;
  }
  std::vector<std::string> DegradedWhat() const {
    std::vector<std::string> out;
    for (const Degraded& d : table_->degraded()) out.push_back(d.what);
    return out;
  }

  std::string dir_;
  FakeClock clock_;
  std::vector<std::string> lines_;
  DaemonLog log_{clock_, [this](std::string_view l) { lines_.emplace_back(l); }};
  FakeSupervisors sup_;
  act::testing::FakeProcessControl control_{clock_};
  std::unique_ptr<proc::ProcReader> procs_;
  std::unique_ptr<SqliteJobStore> sqlite_;
  std::unique_ptr<FaultyJobStore> faulty_;
  std::unique_ptr<JobTable> table_;
};

TEST_F(JobTableTest, AJobRunsAndItsEndIsRecordedAndLogged) {
  const JobId id = SubmitOk(NewJob());
  Look();
  ASSERT_EQ(sup_.Count("Launch"), 1);
  EXPECT_EQ(Stored(id).state, JobState::kRunning);
  EXPECT_TRUE(Logged("job 1 started on GPU 0 for ann: /usr/bin/python3 train.py"));
  sup_.End(id, FakeSupervisors::Exited(0));
  DeliverEnds();
  EXPECT_EQ(Stored(id).state, JobState::kSucceeded);
  EXPECT_TRUE(table_->active().empty());
  EXPECT_TRUE(Logged("notice: job 1 ended: succeeded (exit 0)"));
  EXPECT_THAT(sup_.calls, Contains("Reap " + std::to_string(*Stored(id).supervisor_pid)));
}

// The GPUs are read every --poll-ms only while a job waits for them; a job
// that waits for its window or for another job does not need them read.
TEST_F(JobTableTest, TheGpusAreReadOftenOnlyWhileAJobWaitsForThem) {
  constexpr int64_t kOften = 20, kIdle = 1000;
  EXPECT_EQ(table_->PollIntervalMs(kOften, kIdle), kIdle);  // Nothing waits.
  // A window that opens two hours from now (local time), for a minute.
  const time_t now_s = static_cast<time_t>(clock_.NowUnixMs() / 1000);
  struct tm local {};
  ASSERT_NE(localtime_r(&now_s, &local), nullptr);
  const int opens = (local.tm_hour * 60 + local.tm_min + 120) % 1440;
  Job later = NewJob();
  later.spec.window = TimeWindow{opens, (opens + 1) % 1440};
  const JobId windowed = SubmitOk(later);
  EXPECT_EQ(table_->PollIntervalMs(kOften, kIdle), kOften);  // Not through a pass yet.
  Look();
  EXPECT_EQ(Live(windowed).state, JobState::kQueued);
  EXPECT_EQ(table_->PollIntervalMs(kOften, kIdle), kIdle);  // Waits for its window only.
  Job after = NewJob();
  after.spec.after = {windowed};
  const JobId dependent = SubmitOk(after);
  Look();
  EXPECT_EQ(Live(dependent).state, JobState::kQueued);
  EXPECT_EQ(table_->PollIntervalMs(kOften, kIdle), kIdle);  // And one for that job.
  // Three one-GPU jobs on two GPUs: the third waits for a GPU to free.
  for (int i = 0; i < 3; ++i) SubmitOk(NewJob(1));
  Look();
  EXPECT_EQ(sup_.Count("Launch"), 2);
  EXPECT_EQ(table_->PollIntervalMs(kOften, kIdle), kOften);
}

TEST_F(JobTableTest, PassesAreSpacedOutWhileRequestsStreamAndALoneOneRunsAtOnce) {
  NewTable(/*grace_s=*/10, /*min_pass_interval_ms=*/5);
  const JobId first = SubmitOk(NewJob());
  Look();  // After a quiet spell: placed at once.
  EXPECT_EQ(sup_.Count("Launch"), 1);
  EXPECT_EQ(Live(first).state, JobState::kRunning);
  EXPECT_FALSE(table_->NextPassMs().has_value());  // Nothing asked for.

  const JobId second = SubmitOk(NewJob());
  ASSERT_TRUE(table_->NextPassMs().has_value());
  EXPECT_EQ(*table_->NextPassMs(), clock_.MonotonicMs() + 5);  // The loop wakes then.
  table_->Tick();                                              // 0 ms after the last pass: not yet.
  EXPECT_EQ(sup_.Count("Launch"), 1);
  EXPECT_EQ(table_->Position(second), std::nullopt);
  clock_.AdvanceMs(4);
  table_->Tick();
  EXPECT_EQ(sup_.Count("Launch"), 1);
  clock_.AdvanceMs(1);
  table_->Tick();  // Due.
  EXPECT_EQ(sup_.Count("Launch"), 2);
  EXPECT_EQ(Live(second).state, JobState::kRunning);

  // A question about the queue does not wait: the pass runs before it is answered.
  const JobId third = SubmitOk(NewJob());
  table_->RunPendingPass();
  EXPECT_TRUE(table_->Position(third).has_value());  // Both GPUs are taken: it waits.
  EXPECT_FALSE(table_->NextPassMs().has_value());

  // A job's end right after that pass is handed over at once.
  sup_.End(first, FakeSupervisors::Exited(0));
  DeliverEnds();
  table_->Tick();  // 0 ms after the last pass.
  EXPECT_EQ(sup_.Count("Launch"), 3);
  EXPECT_EQ(Live(third).state, JobState::kRunning);
}

TEST_F(JobTableTest, APreemptedJobGoesBackToTheQueueAndRunsAgainUnderANewRun) {
  const JobId id = SubmitOk(NewJob());
  Look();
  ASSERT_EQ(Stored(id).state, JobState::kRunning);
  ExitRecord r;
  r.reason = "stopped:preempted";
  r.signal = 15;
  sup_.End(id, r);
  DeliverEnds();
  Job back = Stored(id);
  EXPECT_EQ(back.state, JobState::kQueued);
  EXPECT_EQ(back.requeues, 1u);
  EXPECT_EQ(back.end_reason, "preempted");
  EXPECT_FALSE(back.supervisor_pid);
  EXPECT_TRUE(control_.sent.empty());  // Recorded: nothing left to kill.
  Look();
  EXPECT_EQ(sup_.Count("Launch"), 2);
  EXPECT_TRUE(sup_.RunOf(id, 1).alive);  // Its second run, in a directory of its own.
  EXPECT_EQ(Stored(id).state, JobState::kRunning);
}

TEST_F(JobTableTest, ALostSupervisorMarksTheJobLostAndEndsItsLeftovers) {
  const JobId id = SubmitOk(NewJob());
  Look();
  const pid_t sup = *Stored(id).supervisor_pid;
  FakeProcess(8001, sup, 1000, 555);  // A worker the job left in its session.
  FakeProcess(8002, sup, 1001, 556);  // Someone else's: a session id cannot say more.
  FakeProcess(8003, 1, 1000, 557);    // The owner's, elsewhere.
  sup_.End(id, std::nullopt);         // No exit.json.
  DeliverEnds();
  Job j = Stored(id);
  EXPECT_EQ(j.state, JobState::kLost);
  EXPECT_EQ(j.end_reason, "lost");
  // Through a pidfd pinned at the checked start time, only the owner's.
  ASSERT_EQ(control_.sent.size(), 1u);
  EXPECT_EQ(control_.sent[0], std::make_pair(pid_t{8001}, SIGKILL));
  EXPECT_TRUE(Logged("warning: job 1 ended: lost"));
}

TEST_F(JobTableTest, ASupervisorThatCouldNotClaimItsRunPutsTheJobBackAndItRunsOnce) {
  const JobId id = SubmitOk(NewJob());
  Look();
  FakeProcess(8001, *Stored(id).supervisor_pid, 1000, 555);
  sup_.EndUnclaimed(id);  // E.g. its claim hit a disk gone read-only.
  DeliverEnds();
  Job j = Live(id);
  EXPECT_EQ(j.state, JobState::kQueued);
  EXPECT_EQ(j.requeues, 1u);
  EXPECT_TRUE(control_.sent.empty());  // Nothing started, nothing to end.
  EXPECT_TRUE(
      Logged("warning: job 1 did not start (its supervisor ended first): back in the "
             "queue (run 1)"));
  Look();  // The next pass starts it again, under a run of its own.
  EXPECT_EQ(sup_.Count("Launch"), 2);
  EXPECT_EQ(Live(id).state, JobState::kRunning);
  sup_.End(id, FakeSupervisors::Exited(0), /*requeues=*/1);
  DeliverEnds();
  EXPECT_EQ(Stored(id).state, JobState::kSucceeded);
}

TEST_F(JobTableTest, AMalformedExitRecordFailsTheJobWithoutKillingAnything) {
  const JobId id = SubmitOk(NewJob());
  Look();
  sup_.EndMalformed(id, "/state/jobs/1/exit.json: not JSON (line 1)");
  DeliverEnds();
  Job j = Stored(id);
  EXPECT_EQ(j.state, JobState::kFailed);
  EXPECT_EQ(j.end_reason, "record_unreadable");
  EXPECT_THAT(j.end_detail, HasSubstr("/state/jobs/1/exit.json: not JSON"));
  EXPECT_TRUE(control_.sent.empty());
}

TEST_F(JobTableTest, NoStartWhenStartingCannotBeStoredThenItStartsOnceTheDiskRecovers) {
  const JobId id = SubmitOk(NewJob());
  faulty_->FailEveryWrite(StoreFault::kDiskFull);
  Look();
  EXPECT_EQ(sup_.Count("Launch"), 0);  // Never started unless "starting" is durable.
  EXPECT_EQ(Stored(id).state, JobState::kQueued);
  EXPECT_EQ(Live(id).state, JobState::kQueued);
  EXPECT_THAT(DegradedWhat(), Contains("storage"));
  EXPECT_TRUE(Logged("error: queue storage degraded: queue storage not writable: no space left"));
  // A new request is refused with the reason, and nothing is stored.
  Result<JobId> refused = table_->Submit(NewJob());
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().code, "storage");
  EXPECT_THAT(refused.error().message, HasSubstr("no space left on device"));
  Result<JobState> hold = table_->Control(id, "hold", 1000, "ann");
  ASSERT_FALSE(hold.ok());
  EXPECT_EQ(hold.error().code, "storage");
  EXPECT_EQ(Live(id).state, JobState::kQueued);  // The refused hold changed nothing.

  faulty_->Heal();
  clock_.AdvanceMs(1000);
  Look();
  EXPECT_EQ(sup_.Count("Launch"), 1);
  EXPECT_EQ(Stored(id).state, JobState::kRunning);
  EXPECT_TRUE(table_->degraded().empty());
  EXPECT_TRUE(Logged("notice: queue storage writable again"));
  Result<std::vector<Job>> all = sqlite_->List({});
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(all->size(), 1u);  // The refused submit left nothing behind.
}

TEST_F(JobTableTest, AFailedWriteAfterTheLaunchKeepsTheJobRunningAndIsRetried) {
  const JobId id = SubmitOk(NewJob());
  faulty_->FailNthWrite(2, StoreFault::kFsyncError);  // 1: "starting", 2: "running".
  Look();
  EXPECT_EQ(sup_.Count("Launch"), 1);
  EXPECT_EQ(Live(id).state, JobState::kRunning);
  EXPECT_EQ(Stored(id).state, JobState::kStarting);  // Safe: recovery adopts it.
  EXPECT_THAT(DegradedWhat(), Contains("storage"));
  clock_.AdvanceMs(1000);
  table_->Tick();
  Job j = Stored(id);
  EXPECT_EQ(j.state, JobState::kRunning);
  EXPECT_EQ(j.supervisor_pid, Live(id).supervisor_pid);
  EXPECT_TRUE(table_->degraded().empty());
}

TEST_F(JobTableTest, AnEndThatCannotBeStoredIsKeptAndStoredOnceWritesSucceed) {
  const JobId id = SubmitOk(NewJob());
  Look();
  faulty_->FailEveryWrite(StoreFault::kReadOnly);
  sup_.End(id, FakeSupervisors::Exited(3));
  DeliverEnds();
  EXPECT_EQ(Stored(id).state, JobState::kRunning);
  EXPECT_EQ(Live(id).state, JobState::kFailed);  // Served from memory meanwhile.
  EXPECT_EQ(Live(id).exit_code, 3);
  clock_.AdvanceMs(1000);
  table_->Tick();  // Still read-only: retried and kept.
  EXPECT_EQ(Stored(id).state, JobState::kRunning);
  faulty_->Heal();
  clock_.AdvanceMs(1000);
  table_->Tick();
  EXPECT_EQ(Stored(id).state, JobState::kFailed);
  EXPECT_EQ(Stored(id).exit_code, 3);
  EXPECT_TRUE(table_->degraded().empty());
}

TEST_F(JobTableTest, CancellingARunningJobAsksItsSupervisorAndNeedsNoWrite) {
  const JobId id = SubmitOk(NewJob());
  Look();
  faulty_->FailEveryWrite(StoreFault::kDiskFull);
  Result<JobState> r = table_->Control(id, "cancel", 1000, "ann");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(*r, JobState::kRunning);
  EXPECT_THAT(sup_.calls, Contains("RequestStop 1 cancelled"));
  Result<JobState> other = table_->Control(id, "cancel", 1001, "bob");
  ASSERT_FALSE(other.ok());
  EXPECT_EQ(other.error().code, "forbidden");
}

// The request handlers over the same table, as the socket server calls them.
TEST_F(JobTableTest, TheCancelReplyOfARunningJobSaysHowLongItsGraceIs) {
  NewTable(/*grace_s=*/2.5);
  RequestHandler ops(table_.get(), clock_, OpsOptions{});
  const Caller ann{1000, 1000, 4242, "ann"};
  const JobId running = SubmitOk(NewJob(/*gpus=*/2));
  const JobId waiting = SubmitOk(NewJob(/*gpus=*/2));  // Both GPUs are taken: it waits.
  Look();
  ASSERT_EQ(Live(running).state, JobState::kRunning);

  nlohmann::json r = ops.Handle(ann, fmt::format(R"({{"op": "cancel", "job": {}}})", running));
  EXPECT_EQ(r.value("ok", false), true) << r.dump();
  EXPECT_EQ(r.value("state", ""), "running") << r.dump();
  ASSERT_TRUE(r.contains("grace_s")) << r.dump();
  EXPECT_DOUBLE_EQ(r["grace_s"].get<double>(), 2.5);

  // A waiting job is cancelled at once: no grace to announce.
  r = ops.Handle(ann, fmt::format(R"({{"op": "cancel", "job": {}}})", waiting));
  EXPECT_EQ(r.value("state", ""), "cancelled") << r.dump();
  EXPECT_FALSE(r.contains("grace_s")) << r.dump();
}

TEST_F(JobTableTest, MalformedRequestsAreAnsweredAndChangeNothing) {
  RequestHandler ops(table_.get(), clock_, OpsOptions{});
  const Caller ann{1000, 1000, 4242, "ann"};
  const JobId id = SubmitOk(NewJob());
  for (const char* line :
       {"", "[1, 2]", "{\"op\": 7}", "{\"op\": \"cancel\"}",
        "{\"op\": \"cancel\", \"job\": \"one\"}", "{\"op\": \"cancel\", \"job\": -1.5}",
        "{\"op\": \"submit\", \"spec\": {\"argv\": 3}}", "{\"op\": \"no-such-op\"}",
        "{\"v\": 99, \"op\": \"queue\"}"}) {
    nlohmann::json r = ops.Handle(ann, line);
    EXPECT_EQ(r.value("ok", true), false) << line << " -> " << r.dump();
    EXPECT_TRUE(r.contains("error") && r["error"].contains("code")) << line << " -> " << r.dump();
  }
  EXPECT_EQ(Live(id).state, JobState::kQueued);
}

TEST_F(JobTableTest, AdmissionRefusesWhatCanNeverRunHere) {
  Look();
  Result<JobId> r = table_->Submit(NewJob(3));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, "unsatisfiable");
  EXPECT_THAT(r.error().message, HasSubstr("--gpus 3"));
  Job after = NewJob();
  after.spec.after = {9999};
  Result<JobId> a = table_->Submit(after);
  ASSERT_FALSE(a.ok());
  EXPECT_EQ(a.error().code, "unsatisfiable");
  EXPECT_EQ(faulty_->writes(), 0);
}

TEST_F(JobTableTest, AGpuReadFailureIsLoggedAndDegradedInsteadOfZeroGpus) {
  Snapshot s;
  s.errors.push_back({"nvml", "driver_mismatch", "Driver/library version mismatch", {}, {}});
  table_->OnSnapshot(s, true);
  EXPECT_THAT(DegradedWhat(), Contains("gpus"));
  EXPECT_TRUE(Logged("error: cannot read the GPUs: Driver/library version mismatch"));
  Look();
  EXPECT_TRUE(table_->degraded().empty());
  EXPECT_TRUE(Logged("notice: the GPUs can be read again (2 GPUs)"));
}

// --- Recovery -----------------------------------------------------------------

class RecoveryTest : public JobTableTest {
 protected:
  // Stores `j` directly, as a daemon that then died left it.
  JobId Leave(Job j) {
    Result<JobId> id = sqlite_->Insert(std::move(j));
    EXPECT_TRUE(id.ok());
    return id.ok() ? *id : 0;
  }
  static Job InState(JobState s, pid_t sup = 0) {
    Job j = NewJob();
    j.state = s;
    if (sup) {
      j.supervisor_pid = sup;
      j.supervisor_start_ticks = 1000 + static_cast<uint64_t>(sup);
      j.gpu_indices = {0};
      j.start_unix_ms = 5;
    }
    return j;
  }
  FakeSupervisors::Run& LiveRun(JobId id, pid_t pid) {
    FakeSupervisors::Run& r = sup_.RunOf(id);
    r.pid = pid;
    r.start_ticks = 1000 + static_cast<uint64_t>(pid);
    r.alive = true;
    return r;
  }
};

TEST_F(RecoveryTest, EachStoredStateIsRecovered) {
  const JobId queued = Leave(InState(JobState::kQueued));
  const JobId held = Leave(InState(JobState::kHeld));
  const JobId unlaunched = Leave(InState(JobState::kStarting));
  const JobId adopted = Leave(InState(JobState::kRunning, 7001));
  const JobId ended = Leave(InState(JobState::kRunning, 7002));
  const JobId claimed = Leave(InState(JobState::kStarting));
  LiveRun(adopted, 7001);
  FakeSupervisors::Run& gone = LiveRun(ended, 7002);
  gone.alive = false;
  gone.exit =
      Result<std::optional<ExitRecord>>(std::optional<ExitRecord>(FakeSupervisors::Exited(0)));
  // A supervisor claimed this launch just before the daemon died, which
  // never stored its PID.
  FakeSupervisors::Run& c = LiveRun(claimed, 7003);
  c.claim = Result<bool>(false);
  c.launch = Result<std::optional<LaunchRecord>>(
      std::optional<LaunchRecord>(LaunchRecord{true, 7003, 1000 + 7003}));
  c.pid_record = Result<std::optional<PidRecord>>(std::optional<PidRecord>(PidRecord{7004, 1, 0}));

  ASSERT_TRUE(table_->Recover().ok());
  EXPECT_EQ(Stored(queued).state, JobState::kQueued);
  EXPECT_EQ(Stored(held).state, JobState::kHeld);
  EXPECT_EQ(Stored(unlaunched).state, JobState::kQueued);
  EXPECT_EQ(Stored(unlaunched).requeues, 1u);
  EXPECT_EQ(Stored(adopted).state, JobState::kRunning);
  EXPECT_EQ(Stored(ended).state, JobState::kSucceeded);
  EXPECT_EQ(Stored(claimed).state, JobState::kRunning);
  EXPECT_EQ(Stored(claimed).supervisor_pid, 7003);
  EXPECT_EQ(Stored(claimed).pid, 7004);
  EXPECT_THAT(sup_.calls, Contains("Watch 7001"));
  EXPECT_THAT(sup_.calls, Contains("Watch 7003"));
  EXPECT_EQ(sup_.Count("Launch"), 0);
  // Adopted runs are not this daemon's children: never reaped by it.
  sup_.End(adopted, FakeSupervisors::Exited(1));
  DeliverEnds();
  EXPECT_EQ(Stored(adopted).state, JobState::kFailed);
  EXPECT_EQ(sup_.Count("Reap"), 0);
}

TEST_F(RecoveryTest, RecoveryWritesThatFailAreRetriedAndTheJobsKeepTheirLiveState) {
  const JobId unlaunched = Leave(InState(JobState::kStarting));
  faulty_->FailEveryWrite(StoreFault::kReadOnly);
  ASSERT_TRUE(table_->Recover().ok());
  EXPECT_EQ(Live(unlaunched).state, JobState::kQueued);
  EXPECT_EQ(Stored(unlaunched).state, JobState::kStarting);
  EXPECT_THAT(DegradedWhat(), Contains("storage"));
  faulty_->Heal();
  clock_.AdvanceMs(1000);
  table_->Tick();
  EXPECT_EQ(Stored(unlaunched).state, JobState::kQueued);
  EXPECT_EQ(Stored(unlaunched).requeues, 1u);
}

}  // namespace
}  // namespace gw::queue
