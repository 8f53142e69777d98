// MakeRealSupervisors against real gpuwarden-supervise runs: the seam the
// daemon uses does what runner.h's protocol says.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <fstream>
#include <memory>
#include <string>

#include "queue/runner_test_util.h"
#include "queue/supervisors.h"

namespace gw::queue {
namespace {

using ::testing::HasSubstr;
using namespace runner_test;  // NOLINT: the shared helpers of these tests.

class RealSupervisorsTest : public RunnerTest {
 protected:
  void SetUp() override {
    RunnerTest::SetUp();
    supervisors_impl_ = MakeRealSupervisors(state_dir_, "/proc");
  }

  // Launches through the seam, as the daemon does; the job remembers its
  // supervisor as the store would.
  Launched LaunchThroughSeam(Job* job) {
    Result<Launched> l = supervisors_impl_->Launch(*job, options_);
    EXPECT_TRUE(l.ok()) << l.error().message;
    if (!l.ok()) return Launched{};
    supervisors_.push_back(l->supervisor_pid);
    job->supervisor_pid = l->supervisor_pid;
    job->supervisor_start_ticks = l->supervisor_start_ticks;
    return *l;
  }

  // Polls the watch descriptor until it says the supervisor ended.
  static bool BecomesReadable(int fd) {
    pollfd p{fd, POLLIN, 0};
    const int n = poll(&p, 1, static_cast<int>(kWaitS * 1000));
    return n == 1 && (p.revents & POLLIN) != 0;
  }

  std::unique_ptr<Supervisors> supervisors_impl_;
};

TEST_F(RealSupervisorsTest, LaunchWatchReapAndReadWhatTheRunRecorded) {
  Job job = MakeJob({"/bin/sh", "-c", "while [ ! -e go ]; do sleep 0.05; done; exit 7"});
  job.requeues = 2;
  Launched l = LaunchThroughSeam(&job);
  EXPECT_EQ(l.job_dir, JobDir(state_dir_, job.id, 2));
  EXPECT_EQ(supervisors_impl_->DirOf(job), l.job_dir);
  WaitForPidRecord(l);

  EXPECT_TRUE(supervisors_impl_->Alive(l.supervisor_pid, l.supervisor_start_ticks));
  Result<os::UniqueFd> watch = supervisors_impl_->Watch(l.supervisor_pid, l.supervisor_start_ticks);
  ASSERT_TRUE(watch.ok()) << watch.error().message;
  pollfd early{watch->get(), POLLIN, 0};
  EXPECT_EQ(poll(&early, 1, 0), 0);  // Not readable while the supervisor runs.

  { std::ofstream go(work_ + "/go"); }
  ASSERT_TRUE(BecomesReadable(watch->get()));
  // A zombie until reaped; Reap collects it without blocking.
  EXPECT_FALSE(supervisors_impl_->Alive(l.supervisor_pid, l.supervisor_start_ticks));
  ASSERT_TRUE(WaitFor(
      [&] {
        supervisors_impl_->Reap(l.supervisor_pid);
        return waitpid(l.supervisor_pid, nullptr, WNOHANG) < 0 && errno == ECHILD;
      },
      kWaitS));
  supervisors_.clear();

  Result<std::optional<ExitRecord>> exit = supervisors_impl_->ReadExit(job);
  ASSERT_TRUE(exit.ok()) << exit.error().message;
  ASSERT_TRUE(exit->has_value());
  EXPECT_EQ((*exit)->reason, "exit");
  EXPECT_EQ((*exit)->exit_code, 7);
  Result<std::optional<PidRecord>> pid = supervisors_impl_->ReadPid(job);
  ASSERT_TRUE(pid.ok()) << pid.error().message;
  ASSERT_TRUE(pid->has_value());
  EXPECT_EQ((*pid)->start_unix_ms, (*exit)->start_unix_ms);
  Result<std::optional<LaunchRecord>> launch = supervisors_impl_->ReadLaunch(job);
  ASSERT_TRUE(launch.ok()) << launch.error().message;
  ASSERT_TRUE(launch->has_value());
  EXPECT_TRUE((*launch)->by_supervisor);
  EXPECT_EQ((*launch)->pid, l.supervisor_pid);

  // Ended: no watch, no stop.
  Result<os::UniqueFd> late = supervisors_impl_->Watch(l.supervisor_pid, l.supervisor_start_ticks);
  ASSERT_FALSE(late.ok());
  EXPECT_EQ(late.error().code, "gone");
  Status stop = supervisors_impl_->RequestStop(job, "cancelled", 1);
  ASSERT_FALSE(stop.ok());
  EXPECT_EQ(stop.error().code, "gone");
}

TEST_F(RealSupervisorsTest, WatchOfAReusedPidIsGone) {
  Job job = MakeJob({"/bin/sleep", "100"});
  Launched l = LaunchThroughSeam(&job);
  Result<os::UniqueFd> watch =
      supervisors_impl_->Watch(l.supervisor_pid, l.supervisor_start_ticks + 1);
  ASSERT_FALSE(watch.ok());
  EXPECT_EQ(watch.error().code, "gone");
  EXPECT_THAT(watch.error().message, HasSubstr("another process"));
  EXPECT_FALSE(supervisors_impl_->Alive(l.supervisor_pid, l.supervisor_start_ticks + 1));
  ASSERT_TRUE(supervisors_impl_->RequestStop(job, "done", 0).ok());
  EXPECT_EQ(Finish(l).reason, "stopped:done");
}

TEST_F(RealSupervisorsTest, RequestStopReachesTheRunsSupervisor) {
  Job job = MakeJob({"/bin/sleep", "100"});
  Launched l = LaunchThroughSeam(&job);
  WaitForPidRecord(l);
  Status s = supervisors_impl_->RequestStop(job, "preempted", 30);
  ASSERT_TRUE(s.ok()) << s.error().message;
  ExitRecord r = Finish(l);
  EXPECT_EQ(r.reason, "stopped:preempted");
  EXPECT_EQ(r.signal, SIGTERM);

  Job never = MakeJob({"/bin/true"});
  Status none = supervisors_impl_->RequestStop(never, "x", 1);
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.error().code, "gone");
}

TEST_F(RealSupervisorsTest, ClaimUnlaunchedGivesUpARunNobodyStarted) {
  Job job = MakeJob({"/bin/sh", "-c", "echo ran > side-effect"});
  ASSERT_TRUE(PrepareRun(job, options_).ok());
  Result<bool> claimed = supervisors_impl_->ClaimUnlaunched(job);
  ASSERT_TRUE(claimed.ok()) << claimed.error().message;
  EXPECT_TRUE(*claimed);
  Result<std::optional<LaunchRecord>> launch = supervisors_impl_->ReadLaunch(job);
  ASSERT_TRUE(launch.ok() && launch->has_value());
  EXPECT_FALSE((*launch)->by_supervisor);
  EXPECT_EQ((*launch)->pid, getpid());
  Result<bool> again = supervisors_impl_->ClaimUnlaunched(job);
  ASSERT_TRUE(again.ok());
  EXPECT_FALSE(*again);
}

TEST_F(RealSupervisorsTest, AMalformedExitRecordIsAnErrorNotAMissingOne) {
  Job job = MakeJob({"/bin/true"});
  Result<std::optional<ExitRecord>> absent = supervisors_impl_->ReadExit(job);
  ASSERT_TRUE(absent.ok());
  EXPECT_FALSE(absent->has_value());
  ASSERT_TRUE(PrepareRun(job, options_).ok());
  { std::ofstream(supervisors_impl_->DirOf(job) + "/exit.json") << "{\"reason\":"; }
  Result<std::optional<ExitRecord>> exit = supervisors_impl_->ReadExit(job);
  ASSERT_FALSE(exit.ok());
  EXPECT_EQ(exit.error().code, "malformed");
  EXPECT_THAT(exit.error().message, HasSubstr(supervisors_impl_->DirOf(job) + "/exit.json"));
}

TEST_F(RealSupervisorsTest, ProcessesAreReadUnderTheProcRootGiven) {
  // A proc root without the supervisor in it: its start time cannot be read,
  // so the launch is refused (the supervisor ended and reaped) and nothing
  // there is alive or watchable.
  std::unique_ptr<Supervisors> blind = MakeRealSupervisors(state_dir_, root_ + "/no-proc");
  Job job = MakeJob({"/bin/sh", "-c", "echo ran > side-effect"});
  Result<Launched> l = blind->Launch(job, options_);
  ASSERT_FALSE(l.ok());
  EXPECT_THAT(l.error().message, HasSubstr("start time"));
  EXPECT_FALSE(blind->Alive(getpid(), 0));
  Result<os::UniqueFd> watch = blind->Watch(getpid(), 0);
  ASSERT_FALSE(watch.ok());
  EXPECT_EQ(watch.error().code, "gone");
}

}  // namespace
}  // namespace gw::queue
