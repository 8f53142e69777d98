#include "act/execute.h"

#include <gtest/gtest.h>

#include "act/fake_process_control.h"

namespace gw::act {
namespace {

using testing::FakeProcess;
using testing::FakeProcessControl;

class MemoryAudit final : public AuditSink {
 public:
  std::vector<AuditRecord> records;
  bool fail = false;
  Status Append(const AuditRecord& r) override {
    if (fail) return MakeError("io", "audit log /x/audit.log: No space left on device");
    records.push_back(r);
    return Status::Ok();
  }
};

PlanItem Target(pid_t pid, uint64_t ticks = 100) {
  PlanItem i;
  i.pid = pid;
  i.start_ticks = ticks;
  i.user = "alice";
  i.uid = 1001;
  i.cmdline = {"python", "train.py"};
  i.gpus = {0};
  i.vram_bytes = 1 << 30;
  return i;
}

struct Fixture {
  FakeClock clock{1'700'000'000'000};
  FakeProcessControl control{clock};
  MemoryAudit audit;
  Caller caller{1001, "alice", 900};
  Plan plan;
  ExecuteOptions options;
  ExecuteReport Run() { return Execute(plan, options, caller, control, clock, &audit); }
};

TEST(Execute, TermEndsACooperativeProcess) {
  Fixture f;
  f.control.processes[10] = FakeProcess{.exits_after_stop_ms = 300};
  f.plan.act = {Target(10)};
  ExecuteReport r = f.Run();
  ASSERT_EQ(r.results.size(), 1u);
  EXPECT_EQ(r.results[0].outcome, Outcome::kExited);
  EXPECT_EQ(r.results[0].signals, (std::vector<int>{SIGTERM}));
  EXPECT_DOUBLE_EQ(*r.results[0].seconds, 0.3);
  EXPECT_EQ(f.control.sent, (std::vector<std::pair<pid_t, int>>{{10, SIGTERM}}));
  // One signal line and one result line.
  ASSERT_EQ(f.audit.records.size(), 2u);
  EXPECT_EQ(f.audit.records[0].event, "signal");
  EXPECT_EQ(f.audit.records[0].signal, "SIGTERM");
  EXPECT_EQ(f.audit.records[0].outcome, "delivered");
  EXPECT_EQ(f.audit.records[0].command, "python train.py");
  EXPECT_EQ(f.audit.records[0].caller_uid, 1001u);
  EXPECT_EQ(f.audit.records[1].event, "result");
  EXPECT_EQ(f.audit.records[1].outcome, "exited");
}

TEST(Execute, IgnoredTermIsFollowedByKillAfterTheGrace) {
  Fixture f;
  f.options.grace_ms = 2000;
  f.control.processes[10] = FakeProcess{.exits_after_stop_ms = -1, .exits_after_kill_ms = 10};
  f.control.processes[11] = FakeProcess{.exits_after_stop_ms = 500};
  f.plan.act = {Target(10), Target(11)};
  const int64_t t0 = f.clock.MonotonicMs();
  ExecuteReport r = f.Run();
  EXPECT_EQ(r.results[0].outcome, Outcome::kKilled);
  EXPECT_EQ(r.results[0].signals, (std::vector<int>{SIGTERM, SIGKILL}));
  EXPECT_GE(*r.results[0].seconds, 2.0);
  EXPECT_EQ(r.results[1].outcome, Outcome::kExited);
  EXPECT_DOUBLE_EQ(*r.results[1].seconds, 0.5);
  EXPECT_EQ(f.clock.MonotonicMs() - t0, 2010);  // Waited no longer than needed.
  EXPECT_EQ(f.control.sent,
            (std::vector<std::pair<pid_t, int>>{{10, SIGTERM}, {11, SIGTERM}, {10, SIGKILL}}));
}

TEST(Execute, CustomFirstSignal) {
  Fixture f;
  f.options.first_signal = SIGINT;
  f.control.processes[10] = FakeProcess{};
  f.plan.act = {Target(10)};
  ExecuteReport r = f.Run();
  EXPECT_EQ(r.results[0].signals, (std::vector<int>{SIGINT}));
  EXPECT_EQ(f.audit.records[0].signal, "SIGINT");
}

TEST(Execute, ReusedPidIsNeverSignalled) {
  Fixture f;
  f.control.processes[10] = FakeProcess{.start_ticks = 999};  // Someone else now.
  f.plan.act = {Target(10, 100)};
  ExecuteReport r = f.Run();
  EXPECT_EQ(r.results[0].outcome, Outcome::kReused);
  EXPECT_TRUE(r.results[0].signals.empty());
  EXPECT_TRUE(f.control.sent.empty());
  ASSERT_EQ(f.audit.records.size(), 1u);
  EXPECT_EQ(f.audit.records[0].event, "result");
  EXPECT_EQ(f.audit.records[0].outcome, "reused");
}

TEST(Execute, UnknownStartTimeIsNotSignalled) {
  Fixture f;
  f.control.processes[10] = FakeProcess{};
  PlanItem t = Target(10);
  t.start_ticks.reset();
  f.plan.act = {t};
  ExecuteReport r = f.Run();
  EXPECT_EQ(r.results[0].outcome, Outcome::kError);
  EXPECT_TRUE(f.control.sent.empty());
}

TEST(Execute, GoneDeniedAndStuck) {
  Fixture f;
  f.options.grace_ms = 1000;
  f.options.kill_wait_ms = 1000;
  f.control.processes[11] = FakeProcess{.deny = true};
  f.control.processes[12] = FakeProcess{
      .state = ProcessState::kDiskSleep, .exits_after_stop_ms = -1, .exits_after_kill_ms = -1};
  f.plan.act = {Target(10), Target(11), Target(12)};  // 10 does not exist.
  ExecuteReport r = f.Run();
  EXPECT_EQ(r.results[0].outcome, Outcome::kGone);
  EXPECT_EQ(r.results[1].outcome, Outcome::kDenied);
  EXPECT_EQ(r.results[2].outcome, Outcome::kSurvived);
  EXPECT_EQ(r.results[2].state, ProcessState::kDiskSleep);
  EXPECT_NE(r.results[2].detail.find("uninterruptible"), std::string::npos);
  EXPECT_FALSE(Ended(Outcome::kSurvived));
  EXPECT_TRUE(Ended(Outcome::kGone));
}

TEST(Execute, AFailingAuditLogIsReportedOnceAndChangesNothing) {
  Fixture f;
  f.audit.fail = true;
  f.control.processes[10] = FakeProcess{};
  f.control.processes[11] = FakeProcess{};
  f.plan.act = {Target(10), Target(11)};
  ExecuteReport r = f.Run();
  EXPECT_EQ(r.results[0].outcome, Outcome::kExited);
  EXPECT_EQ(r.results[1].outcome, Outcome::kExited);
  ASSERT_EQ(r.audit_errors.size(), 1u);
  EXPECT_NE(r.audit_errors[0].find("No space left"), std::string::npos);
}

TEST(Execute, SignalNamesParse) {
  EXPECT_EQ(*ParseStopSignal("TERM"), SIGTERM);
  EXPECT_EQ(*ParseStopSignal("sigint"), SIGINT);
  EXPECT_EQ(*ParseStopSignal("SIGUSR1"), SIGUSR1);
  EXPECT_EQ(*ParseStopSignal("1"), SIGHUP);
  EXPECT_FALSE(ParseStopSignal("KILL").ok());  // KILL comes after the grace anyway.
  EXPECT_FALSE(ParseStopSignal("STOP").ok());
  EXPECT_FALSE(ParseStopSignal("").ok());
  EXPECT_NE(ParseStopSignal("bogus").error().message.find("bogus"), std::string::npos);
  EXPECT_EQ(SignalName(SIGKILL), "SIGKILL");
  EXPECT_EQ(SignalName(SIGTERM), "SIGTERM");
}

}  // namespace
}  // namespace gw::act
