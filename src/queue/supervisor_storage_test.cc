// Storage faults under a running job: the supervisor's records (pid,
// exit.json) on a filesystem that fills up or turns read-only are written
// once the disk takes them again, and the job's end is never lost. Needs root
// (the test mounts a small tmpfs of its own); skipped otherwise.
#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>

#include "queue/runner_test_util.h"

namespace gw::queue {
namespace {

using ::testing::HasSubstr;
using namespace runner_test;  // NOLINT: the shared helpers of these tests.

size_t Count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

class SupervisorStorageTest : public RunnerTest {
 protected:
  void SetUp() override {
    RunnerTest::SetUp();
    if (geteuid() != 0) GTEST_SKIP() << "needs root to mount a tmpfs";
    disk_ = root_ + "/disk";
    ASSERT_EQ(mkdir(disk_.c_str(), 0700), 0);
    if (mount("tmpfs", disk_.c_str(), "tmpfs", 0, "size=1m,mode=0700") != 0) {
      GTEST_SKIP() << "cannot mount a tmpfs: " << std::strerror(errno);
    }
    mounted_ = true;
    state_dir_ = disk_ + "/state";
    ASSERT_EQ(mkdir(state_dir_.c_str(), 0700), 0);
    options_.state_dir = state_dir_;
  }
  void TearDown() override {
    for (pid_t pid : supervisors_) {
      kill(pid, SIGKILL);
      WaitExit(pid, kWaitS);
    }
    supervisors_.clear();
    if (read_only_) umount2(disk_.c_str(), MNT_DETACH);
    if (mounted_) umount2(disk_.c_str(), MNT_DETACH);
    RunnerTest::TearDown();
  }

  // Fills the disk with `name` until a write fails with ENOSPC.
  void Fill(const std::string& name) {
    const int fd =
        open((disk_ + "/" + name).c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    ASSERT_GE(fd, 0);
    const std::string block(4096, 'x');
    for (;;) {
      const ssize_t n = write(fd, block.data(), block.size());
      if (n < 0) {
        EXPECT_EQ(errno, ENOSPC);
        break;
      }
    }
    close(fd);
  }
  void Remove(const std::string& name) { ASSERT_EQ(unlink((disk_ + "/" + name).c_str()), 0); }
  // The disk read-only for whoever opens a path on it now, as a read-only
  // remount would be (which the kernel refuses while the job's logs are open
  // for writing): a read-only bind mount on top; files already open stay
  // writable underneath.
  void MakeReadOnly() {
    ASSERT_EQ(mount(disk_.c_str(), disk_.c_str(), nullptr, MS_BIND, nullptr), 0)
        << std::strerror(errno);
    read_only_ = true;
    ASSERT_EQ(mount(nullptr, disk_.c_str(), nullptr, MS_REMOUNT | MS_BIND | MS_RDONLY, nullptr), 0)
        << std::strerror(errno);
  }
  void MakeWritable() {
    ASSERT_EQ(umount2(disk_.c_str(), MNT_DETACH), 0) << std::strerror(errno);
    read_only_ = false;
  }

  // Prepares the run with its supervisor.log already holding a line, so
  // that the log has a page of its own and can still take the supervisor's
  // lines when the disk is full.
  PreparedRun PrepareWithLog(const Job& job) {
    Result<PreparedRun> run = PrepareRun(job, options_);
    EXPECT_TRUE(run.ok()) << run.error().message;
    if (!run.ok()) return PreparedRun{};
    std::ofstream(run->job_dir + "/supervisor.log") << "test: the disk is about to fill up\n";
    chmod((run->job_dir + "/supervisor.log").c_str(), 0600);
    return *run;
  }

  Launched Start(const PreparedRun& run) {
    Result<Launched> l = StartSupervisor(run.job_dir, options_, clock_);
    EXPECT_TRUE(l.ok()) << l.error().message;
    if (!l.ok()) return Launched{};
    supervisors_.push_back(l->supervisor_pid);
    return *l;
  }

  bool LogSays(const std::string& job_dir, const std::string& what) {
    return ReadAll(job_dir + "/supervisor.log").find(what) != std::string::npos;
  }

  bool SupervisorRuns(pid_t pid) { return waitpid(pid, nullptr, WNOHANG) == 0; }

  std::string disk_;
  bool mounted_ = false;
  bool read_only_ = false;
};

TEST_F(SupervisorStorageTest, RecordsAreWrittenOnceSpaceReturns) {
  Job job = MakeJob({"/bin/sh", "-c", ": > started; while [ ! -e go ]; do sleep 0.05; done"});
  const PreparedRun run = PrepareWithLog(job);
  // Full but for one page: the claim takes it, so the pid record finds none.
  {
    std::ofstream reserve(disk_ + "/reserve");
    reserve << std::string(4096, 'r');
  }
  Fill("filler");
  Remove("reserve");
  const Launched l = Start(run);

  ASSERT_TRUE(WaitFor([&] { return LogSays(l.job_dir, "cannot record the job's PID"); }, kWaitS))
      << ReadAll(l.job_dir + "/supervisor.log");
  EXPECT_TRUE(Present(ReadLaunchRecord(l.job_dir)).has_value());
  EXPECT_FALSE(Present(ReadPidRecord(l.job_dir)).has_value());
  ASSERT_TRUE(WaitFor([&] { return std::filesystem::exists(work_ + "/started"); }, kWaitS));

  // Space returns while the job runs: the pid record follows.
  Remove("filler");
  WaitForPidRecord(l);
  const std::optional<PidRecord> pid = Present(ReadPidRecord(l.job_dir));
  ASSERT_TRUE(pid.has_value());

  // Full again when the job ends: the end waits for the disk.
  Fill("filler");
  { std::ofstream go(work_ + "/go"); }
  ASSERT_TRUE(WaitFor([&] { return LogSays(l.job_dir, "cannot record the end"); }, kWaitS))
      << ReadAll(l.job_dir + "/supervisor.log");
  EXPECT_TRUE(ProcessGone(pid->pid));
  EXPECT_TRUE(SupervisorRuns(l.supervisor_pid));
  EXPECT_FALSE(Present(ReadExitRecord(l.job_dir)).has_value());

  Remove("filler");
  const ExitRecord r = Finish(l);
  EXPECT_EQ(r.reason, "exit");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.start_unix_ms, pid->start_unix_ms);
  EXPECT_GE(r.end_unix_ms, r.start_unix_ms);
  const std::string log = ReadAll(l.job_dir + "/supervisor.log");
  EXPECT_EQ(Count(log, "cannot record the end"), 1u) << log;  // Logged once, retried quietly.
  EXPECT_EQ(Count(log, "cannot record the job's PID"), 1u) << log;
  EXPECT_THAT(log, HasSubstr("recorded at last: exit: exited with status 0"));
}

TEST_F(SupervisorStorageTest, AReadOnlyDiskHoldsTheEndUntilItIsWritableAgain) {
  Job job = MakeJob({"/bin/sh", "-c", "while [ ! -e go ]; do sleep 0.05; done; exit 4"});
  const Launched l = Start(PrepareWithLog(job));
  WaitForPidRecord(l);
  const std::optional<PidRecord> pid = Present(ReadPidRecord(l.job_dir));
  ASSERT_TRUE(pid.has_value());

  MakeReadOnly();
  ASSERT_EQ(open((l.job_dir + "/probe").c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0600), -1);
  EXPECT_EQ(errno, EROFS);
  { std::ofstream go(work_ + "/go"); }
  // The supervisor's log was open before: it still takes the line.
  ASSERT_TRUE(WaitFor([&] { return LogSays(l.job_dir, "cannot record the end"); }, kWaitS))
      << ReadAll(l.job_dir + "/supervisor.log");
  EXPECT_TRUE(LogSays(l.job_dir, "Read-only file system"));
  EXPECT_TRUE(ProcessGone(pid->pid));
  EXPECT_TRUE(SupervisorRuns(l.supervisor_pid));
  EXPECT_FALSE(Present(ReadExitRecord(l.job_dir)).has_value());

  MakeWritable();
  const ExitRecord r = Finish(l);
  EXPECT_EQ(r.reason, "exit");
  EXPECT_EQ(r.exit_code, 4);
}

TEST_F(SupervisorStorageTest, SigtermWhileWaitingForTheDiskMakesOneLastAttempt) {
  Job job = MakeJob({"/bin/sh", "-c", "while [ ! -e go ]; do sleep 0.05; done"});
  const Launched l = Start(PrepareWithLog(job));
  WaitForPidRecord(l);
  Fill("filler");
  { std::ofstream go(work_ + "/go"); }
  ASSERT_TRUE(WaitFor([&] { return LogSays(l.job_dir, "cannot record the end"); }, kWaitS))
      << ReadAll(l.job_dir + "/supervisor.log");
  ASSERT_EQ(kill(l.supervisor_pid, SIGTERM), 0);
  EXPECT_EQ(WaitExit(l.supervisor_pid, kWaitS), kSupervisorFailed);
  supervisors_.clear();
  EXPECT_FALSE(Present(ReadExitRecord(l.job_dir)).has_value());
  EXPECT_THAT(ReadAll(l.job_dir + "/supervisor.log"), HasSubstr("told to stop"));
}

}  // namespace
}  // namespace gw::queue
