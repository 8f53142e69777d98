// The runner with real jobs run by the built gpuwarden-supervise: the
// launcher's side (launcher.h) and the supervisor's (supervisor.h).
#include "queue/runner.h"

#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <string>

#include "queue/runner_test_util.h"

namespace gw::queue {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using namespace runner_test;  // NOLINT: the shared helpers of these tests.

TEST_F(RunnerTest, ExitCodeIsRecorded) {
  Launched l = LaunchOrDie(MakeJob({"/bin/sh", "-c", "exit 3"}));
  EXPECT_EQ(l.job_dir, JobDir(state_dir_, next_id_, 0));
  ExitRecord r = Finish(l);
  EXPECT_EQ(r.reason, "exit");
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_FALSE(r.signal.has_value());
  EXPECT_EQ(r.detail, "exited with status 3");
  EXPECT_GT(r.start_unix_ms, 0);
  EXPECT_GE(r.end_unix_ms, r.start_unix_ms);
  std::optional<PidRecord> pid = Present(ReadPidRecord(l.job_dir));
  ASSERT_TRUE(pid.has_value());
  EXPECT_GT(pid->pid, 0);
  EXPECT_GT(pid->start_ticks, 0u);
  EXPECT_EQ(pid->start_unix_ms, r.start_unix_ms);
  std::optional<LaunchRecord> claim = Present(ReadLaunchRecord(l.job_dir));
  ASSERT_TRUE(claim.has_value());
  EXPECT_TRUE(claim->by_supervisor);
  EXPECT_EQ(claim->pid, l.supervisor_pid);
  EXPECT_EQ(claim->start_ticks, l.supervisor_start_ticks);
  struct stat st {};
  ASSERT_EQ(stat(l.job_dir.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0700u);
}

TEST_F(RunnerTest, DeathBySignalIsRecorded) {
  ExitRecord r = Run(MakeJob({"/bin/sh", "-c", "kill -KILL $$"}));
  EXPECT_EQ(r.reason, "signal");
  EXPECT_EQ(r.signal, SIGKILL);
  EXPECT_FALSE(r.exit_code.has_value());
  EXPECT_EQ(r.detail, "killed by SIGKILL");
}

TEST_F(RunnerTest, StdoutAndStderrGoToTheLogs) {
  Launched l = LaunchOrDie(MakeJob({"/bin/sh", "-c", "echo out; echo err >&2; read x; echo $?"}));
  EXPECT_EQ(l.stdout_path, l.job_dir + "/stdout");
  EXPECT_EQ(l.stderr_path, l.job_dir + "/stderr");
  EXPECT_EQ(Finish(l).exit_code, 0);
  EXPECT_EQ(ReadAll(l.stdout_path), "out\n1\n");  // stdin is /dev/null: read sees EOF.
  EXPECT_EQ(ReadAll(l.stderr_path), "err\n");
  struct stat st {};
  ASSERT_EQ(stat(l.stdout_path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0600u);
}

TEST_F(RunnerTest, DefaultLogPathsFilledInByTheDaemonAreStillTheSupervisors) {
  std::string why_not;
  Job job = MakeJob({"/bin/sh", "-c", "echo out; echo err >&2"});
  job.stdout_path = JobDir(state_dir_, job.id, 0) + "/stdout";
  job.stderr_path = JobDir(state_dir_, job.id, 0) + "/stderr";
  if (geteuid() == 0) {
    // Run as another user, only the supervisor can open files in JOB_DIR.
    const std::optional<TestUser> user = EnsureTestUser(&why_not);
    if (user) job.owner = {user->uid, user->gid, user->name};
  }
  Launched l = LaunchOrDie(job);
  EXPECT_EQ(l.stdout_path, job.stdout_path);
  EXPECT_EQ(Finish(l).exit_code, 0);
  EXPECT_EQ(ReadAll(l.stdout_path), "out\n");
  EXPECT_EQ(ReadAll(l.stderr_path), "err\n");
}

TEST_F(RunnerTest, ArgumentsArriveLiterallyNeverThroughAShell) {
  const std::vector<std::string> args = {"a b",  "'single'", "\"double\"", "$HOME",
                                         "x;id", "`id`",     "",           "\xff\xfe"};
  std::vector<std::string> argv = {"/usr/bin/printf", "%s\\n"};
  argv.insert(argv.end(), args.begin(), args.end());
  Launched l = LaunchOrDie(MakeJob(argv));
  EXPECT_EQ(Finish(l).exit_code, 0);
  std::string expected;
  for (const std::string& a : args) expected += a + "\n";
  EXPECT_EQ(ReadAll(l.stdout_path), expected);
}

TEST_F(RunnerTest, EnvironmentCarriesTheGpusAndTheSubmittersBytes) {
  Job job = MakeJob({"/usr/bin/env"});
  job.spec.gpus = 2;
  job.gpu_uuids = {"GPU-11111111-2222", "GPU-33333333-4444"};
  job.spec.env.push_back("ODD=\xff$HOME;x");
  job.spec.env.push_back("CUDA_VISIBLE_DEVICES=0");
  Launched l = LaunchOrDie(job);
  EXPECT_EQ(Finish(l).exit_code, 0);
  const std::string out = ReadAll(l.stdout_path);
  EXPECT_THAT(out, HasSubstr("\nCUDA_VISIBLE_DEVICES=GPU-11111111-2222,GPU-33333333-4444\n"));
  EXPECT_THAT(out, HasSubstr("\nCUDA_DEVICE_ORDER=PCI_BUS_ID\n"));
  EXPECT_THAT(out, HasSubstr("\nGPUWARDEN_JOB_ID=" + std::to_string(job.id) + "\n"));
  EXPECT_THAT(out, HasSubstr("\nODD=\xff$HOME;x\n"));
  EXPECT_THAT(out, Not(HasSubstr("CUDA_VISIBLE_DEVICES=0\n")));
}

TEST_F(RunnerTest, WorkingDirectoryAndUmaskAreApplied) {
  Job job = MakeJob({"/bin/sh", "-c", "pwd; umask; : > made"});
  job.spec.umask = 027;
  Launched l = LaunchOrDie(job);
  EXPECT_EQ(Finish(l).exit_code, 0);
  EXPECT_EQ(ReadAll(l.stdout_path), work_ + "\n0027\n");
  struct stat st {};
  ASSERT_EQ(stat((work_ + "/made").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0640u);
}

TEST_F(RunnerTest, ProgramIsLookedUpInTheJobsPath) {
  const std::string bin = work_ + "/bin";
  ASSERT_EQ(mkdir(bin.c_str(), 0755), 0);
  {
    std::ofstream script(bin + "/gw-hello");
    script << "#!/bin/sh\necho hello \"$@\"\n";
  }
  ASSERT_EQ(chmod((bin + "/gw-hello").c_str(), 0755), 0);
  Job job = MakeJob({"gw-hello", "there"});
  job.spec.env = {"PATH=/nonexistent:" + bin};
  Launched l = LaunchOrDie(job);
  EXPECT_EQ(Finish(l).exit_code, 0);
  EXPECT_EQ(ReadAll(l.stdout_path), "hello there\n");
}

TEST_F(RunnerTest, ProgramNotFoundIs127WithAMessage) {
  Launched l = LaunchOrDie(MakeJob({"/nonexistent/program", "x"}));
  ExitRecord r = Finish(l);
  EXPECT_EQ(r.reason, "start_failed");
  EXPECT_EQ(r.exit_code, kExitNotFound);
  EXPECT_THAT(r.detail, HasSubstr("cannot run /nonexistent/program"));
  EXPECT_THAT(ReadAll(l.stderr_path), HasSubstr("cannot run /nonexistent/program"));

  Job lookup = MakeJob({"gw-surely-no-such-program"});
  ExitRecord r2 = Run(lookup);
  EXPECT_EQ(r2.reason, "start_failed");
  EXPECT_EQ(r2.exit_code, kExitNotFound);
}

TEST_F(RunnerTest, NonExecutableFileIs126AndNeverHandedToAShell) {
  {
    std::ofstream script(work_ + "/noshebang");
    script << "echo ran > " << work_ << "/ran\n";
  }
  ASSERT_EQ(chmod((work_ + "/noshebang").c_str(), 0755), 0);
  ExitRecord r = Run(MakeJob({work_ + "/noshebang"}));
  EXPECT_EQ(r.reason, "start_failed");
  EXPECT_EQ(r.exit_code, kExitCannotRun);
  EXPECT_THAT(r.detail, HasSubstr("Exec format error"));
  EXPECT_FALSE(std::filesystem::exists(work_ + "/ran"));
}

TEST_F(RunnerTest, MissingWorkingDirectoryIs126) {
  Job job = MakeJob({"/bin/true"});
  job.spec.cwd = work_ + "/gone";
  Launched l = LaunchOrDie(job);
  ExitRecord r = Finish(l);
  EXPECT_EQ(r.reason, "start_failed");
  EXPECT_EQ(r.exit_code, kExitCannotRun);
  EXPECT_THAT(r.detail, HasSubstr("cannot change to the working directory " + work_ + "/gone"));
  EXPECT_THAT(ReadAll(l.stderr_path), HasSubstr("working directory"));
}

TEST_F(RunnerTest, TimeLimitEndsTheJob) {
  Job job = MakeJob({"/bin/sleep", "100"});
  job.spec.time_limit_s = 1;
  ExitRecord r = Run(job);
  EXPECT_EQ(r.reason, "time_limit");
  EXPECT_EQ(r.signal, SIGTERM);
  EXPECT_THAT(r.detail, HasSubstr("time limit of 1 s reached"));
}

TEST_F(RunnerTest, TimeLimitKillsWhatIgnoresSigterm) {
  Job job = MakeJob({"/bin/sh", "-c", "trap '' TERM; /bin/sleep 100; /bin/sleep 100"});
  job.spec.time_limit_s = 1;
  options_.grace_s = 1;
  ExitRecord r = Run(job);
  EXPECT_EQ(r.reason, "time_limit");
  EXPECT_EQ(r.signal, SIGKILL);
  EXPECT_THAT(r.detail, HasSubstr("SIGKILL after 1 s"));
}

TEST_F(RunnerTest, RequestStopStopsWithTheReason) {
  Launched l = LaunchOrDie(MakeJob({"/bin/sleep", "100"}));
  WaitForPidRecord(l);
  ASSERT_TRUE(SupervisorAlive(l.supervisor_pid, l.supervisor_start_ticks, procs_));
  Status s =
      RequestStop(l.job_dir, l.supervisor_pid, l.supervisor_start_ticks, "cancelled", 30, procs_);
  ASSERT_TRUE(s.ok()) << s.error().message;
  ExitRecord r = Finish(l);
  EXPECT_EQ(r.reason, "stopped:cancelled");
  EXPECT_EQ(r.signal, SIGTERM);
  EXPECT_THAT(r.detail, HasSubstr("stop requested (cancelled)"));
  EXPECT_FALSE(SupervisorAlive(l.supervisor_pid, l.supervisor_start_ticks, procs_));
  Status again = RequestStop(l.job_dir, l.supervisor_pid, l.supervisor_start_ticks, "x", 1, procs_);
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.error().code, "gone");
}

TEST_F(RunnerTest, SecondStopWithZeroGraceKillsAtOnce) {
  Launched l = LaunchOrDie(MakeJob({"/bin/sh", "-c", "trap '' TERM; : > ready; /bin/sleep 100"}));
  ASSERT_TRUE(WaitFor([&] { return std::filesystem::exists(work_ + "/ready"); }, kWaitS));
  // The first grace would outlast the test's wait; only the second can end it.
  ASSERT_TRUE(
      RequestStop(l.job_dir, l.supervisor_pid, l.supervisor_start_ticks, "preempted", 3600, procs_)
          .ok());
  ASSERT_TRUE(WaitFor(
      [&] { return ReadAll(l.job_dir + "/supervisor.log").find("SIGTERM") != std::string::npos; },
      kWaitS));
  ASSERT_TRUE(
      RequestStop(l.job_dir, l.supervisor_pid, l.supervisor_start_ticks, "other", 0, procs_).ok());
  ExitRecord r = Finish(l);
  EXPECT_EQ(r.reason, "stopped:preempted");
  EXPECT_EQ(r.signal, SIGKILL);
}

TEST_F(RunnerTest, SigtermToTheSupervisorStopsTheJob) {
  Launched l = LaunchOrDie(MakeJob({"/bin/sleep", "100"}));
  WaitForPidRecord(l);
  ASSERT_EQ(kill(l.supervisor_pid, SIGTERM), 0);
  ExitRecord r = Finish(l);
  EXPECT_EQ(r.reason, "stopped:supervisor");
  EXPECT_EQ(r.signal, SIGTERM);
}

TEST_F(RunnerTest, SupervisorLeavesTheLaunchersSessionAndGroup) {
  leaked_ = work_ + "/open-in-launcher";
  const int leak = open(leaked_.c_str(), O_WRONLY | O_CREAT, 0600);  // Not close-on-exec.
  ASSERT_GE(leak, 0);
  Launched l = LaunchOrDie(MakeJob({"/bin/sleep", "100"}));
  WaitForPidRecord(l);
  EXPECT_EQ(getsid(l.supervisor_pid), l.supervisor_pid);
  EXPECT_NE(getsid(l.supervisor_pid), getsid(0));
  EXPECT_EQ(getpgid(l.supervisor_pid), l.supervisor_pid);
  std::optional<PidRecord> job = Present(ReadPidRecord(l.job_dir));
  ASSERT_TRUE(job.has_value());
  EXPECT_EQ(getpgid(job->pid), job->pid);  // The job leads its own group.
  // Nothing the launcher had open reaches the supervisor: beyond 0-2 it holds
  // only descriptors of its own, all close-on-exec (so none reach the job).
  const std::string fd_dir = "/proc/" + std::to_string(l.supervisor_pid) + "/fd";
  for (const auto& entry : std::filesystem::directory_iterator(fd_dir)) {
    const std::string name = entry.path().filename().string();
    if (name == "0" || name == "1" || name == "2") continue;
    std::error_code ec;
    const std::string target = std::filesystem::read_symlink(entry.path(), ec).string();
    EXPECT_NE(target, leaked_) << name;
    std::ifstream info("/proc/" + std::to_string(l.supervisor_pid) + "/fdinfo/" + name);
    std::string key;
    std::string flags;
    while (info >> key && key != "flags:") {
    }
    if (!(info >> flags)) continue;  // Closed meanwhile: it was a passing one.
    EXPECT_NE(std::stoul(flags, nullptr, 8) & O_CLOEXEC, 0u) << name << " -> " << target;
  }
  ASSERT_TRUE(
      RequestStop(l.job_dir, l.supervisor_pid, l.supervisor_start_ticks, "done", 5, procs_).ok());
  Finish(l);
  close(leak);
}

TEST_F(RunnerTest, SupervisorOutlivesItsKilledLauncherAndRecordsTheEnd) {
  // The launcher's orphans come back to this test, which can then reap them.
  ASSERT_EQ(prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
  Job job =
      MakeJob({"/bin/sh", "-c", "while [ ! -e go ]; do sleep 0.05; done; echo done > marker"});
  int pipe_fds[2];
  ASSERT_EQ(pipe(pipe_fds), 0);
  const pid_t launcher = fork();
  ASSERT_GE(launcher, 0);
  if (launcher == 0) {
    close(pipe_fds[0]);
    Result<Launched> l = Launch(job, options_, clock_);
    pid_t pid = l.ok() ? l->supervisor_pid : -1;
    uint64_t ticks = l.ok() ? l->supervisor_start_ticks : 0;
    (void)!write(pipe_fds[1], &pid, sizeof pid);
    (void)!write(pipe_fds[1], &ticks, sizeof ticks);
    pause();
    _exit(0);
  }
  close(pipe_fds[1]);
  pid_t supervisor = -1;
  uint64_t ticks = 0;
  ASSERT_EQ(read(pipe_fds[0], &supervisor, sizeof supervisor),
            static_cast<ssize_t>(sizeof supervisor));
  ASSERT_EQ(read(pipe_fds[0], &ticks, sizeof ticks), static_cast<ssize_t>(sizeof ticks));
  close(pipe_fds[0]);
  ASSERT_GT(supervisor, 0);
  supervisors_.push_back(supervisor);
  ASSERT_EQ(kill(launcher, SIGKILL), 0);
  ASSERT_EQ(WaitExit(launcher, kWaitS), 128 + SIGKILL);

  EXPECT_TRUE(SupervisorAlive(supervisor, ticks, procs_));
  const std::string job_dir = JobDir(state_dir_, job.id, 0);
  { std::ofstream go(work_ + "/go"); }
  Launched l;
  l.job_dir = job_dir;
  l.supervisor_pid = supervisor;
  ExitRecord r = Finish(l);
  EXPECT_EQ(r.reason, "exit");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(ReadAll(work_ + "/marker"), "done\n");
}

TEST_F(RunnerTest, LauncherWithClosedStdoutKeepsTheSupervisorsLog) {
  Job job = MakeJob({"/bin/sh", "-c", "echo out; echo err >&2"});
  const pid_t launcher = fork();
  ASSERT_GE(launcher, 0);
  if (launcher == 0) {
    // A daemon started with stdout and stderr closed: open() hands those
    // numbers out again, and the supervisor's stderr must still be its log.
    close(STDOUT_FILENO);
    close(STDERR_FILENO);
    Result<Launched> l = Launch(job, options_, clock_);
    if (!l.ok()) _exit(100);
    int status = 0;
    if (waitpid(l->supervisor_pid, &status, 0) != l->supervisor_pid) _exit(101);
    _exit(WIFEXITED(status) ? WEXITSTATUS(status) : 102);
  }
  ASSERT_EQ(WaitExit(launcher, kWaitS), kSupervisorRecorded);
  const std::string dir = JobDir(state_dir_, job.id, 0);
  EXPECT_EQ(ReadAll(dir + "/stdout"), "out\n");
  EXPECT_EQ(ReadAll(dir + "/stderr"), "err\n");
  EXPECT_THAT(ReadAll(dir + "/supervisor.log"), HasSubstr("recorded: exit"));
}

TEST_F(RunnerTest, ClaimBeforeTheSupervisorMeansTheJobNeverRuns) {
  Job job = MakeJob({"/bin/sh", "-c", "echo ran > side-effect"});
  Result<PreparedRun> run = PrepareRun(job, options_);
  ASSERT_TRUE(run.ok()) << run.error().message;
  Result<bool> claimed = ClaimUnlaunched(run->job_dir, procs_);
  ASSERT_TRUE(claimed.ok()) << claimed.error().message;
  EXPECT_TRUE(*claimed);
  std::optional<LaunchRecord> record = Present(ReadLaunchRecord(run->job_dir));
  ASSERT_TRUE(record.has_value());
  EXPECT_FALSE(record->by_supervisor);
  EXPECT_EQ(record->pid, getpid());

  // A supervisor that comes late (the dead daemon's) refuses.
  Result<Launched> late = StartSupervisor(run->job_dir, options_, clock_);
  ASSERT_TRUE(late.ok()) << late.error().message;
  EXPECT_EQ(WaitExit(late->supervisor_pid, kWaitS), kSupervisorRefused);
  EXPECT_FALSE(std::filesystem::exists(work_ + "/side-effect"));
  EXPECT_FALSE(Present(ReadPidRecord(run->job_dir)).has_value());
  EXPECT_FALSE(Present(ReadExitRecord(run->job_dir)).has_value());
  EXPECT_FALSE(Present(ReadLaunchRecord(run->job_dir))->by_supervisor);

  // The directory is spent; a new run needs a new one.
  Result<PreparedRun> again = PrepareRun(job, options_);
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.error().code, "exists");
  job.requeues = 1;
  Launched next = LaunchOrDie(job);
  EXPECT_EQ(next.job_dir, JobDir(state_dir_, job.id, 1));
  EXPECT_EQ(Finish(next).exit_code, 0);
  EXPECT_EQ(ReadAll(work_ + "/side-effect"), "ran\n");
}

TEST_F(RunnerTest, ClaimAfterTheSupervisorClaimedIsFalse) {
  Launched l = LaunchOrDie(MakeJob({"/bin/sh", "-c", "while [ ! -e go ]; do sleep 0.05; done"}));
  ASSERT_TRUE(WaitFor([&] { return Present(ReadLaunchRecord(l.job_dir)).has_value(); }, kWaitS));
  Result<bool> claimed = ClaimUnlaunched(l.job_dir, procs_);
  ASSERT_TRUE(claimed.ok());
  EXPECT_FALSE(*claimed);
  std::optional<LaunchRecord> record = Present(ReadLaunchRecord(l.job_dir));
  ASSERT_TRUE(record.has_value());
  EXPECT_TRUE(record->by_supervisor);
  EXPECT_EQ(record->pid, l.supervisor_pid);
  { std::ofstream go(work_ + "/go"); }
  EXPECT_EQ(Finish(l).reason, "exit");
}

TEST_F(RunnerTest, ClaimOfARunThatNeverGotADirectoryIsTrue) {
  Result<bool> claimed = ClaimUnlaunched(state_dir_ + "/jobs/12345", procs_);
  ASSERT_TRUE(claimed.ok());
  EXPECT_TRUE(*claimed);
}

TEST_F(RunnerTest, WhatTheLeaderLeavesBehindIsEnded) {
  // One worker stays in the job's group, one ignores SIGTERM, one leaves the
  // group with a session of its own.
  Launched l = LaunchOrDie(
      MakeJob({"/bin/sh", "-c",
               "/bin/sleep 300 & echo $! > worker; (trap '' TERM; exec /bin/sleep 302) & echo $! > "
               "stubborn; /usr/bin/setsid /bin/sleep 301 & echo $! > escaped; exit 0"}));
  ExitRecord r = Finish(l);
  EXPECT_EQ(r.reason, "exit");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_THAT(r.detail, HasSubstr("3 leftover processes ended"));
  for (const char* name : {"worker", "stubborn", "escaped"}) {
    const pid_t pid = std::stoi(ReadAll(work_ + "/" + name));
    EXPECT_TRUE(ProcessGone(pid)) << name << " " << pid;
  }
}

TEST_F(RunnerTest, SupervisorRefusesADirectoryOthersCanWrite) {
  const std::string dir = state_dir_ + "/open";
  ASSERT_EQ(mkdir(dir.c_str(), 0700), 0);
  ASSERT_EQ(chmod(dir.c_str(), 0777), 0);
  Result<Launched> l = StartSupervisor(dir, options_, clock_);
  ASSERT_TRUE(l.ok()) << l.error().message;
  EXPECT_EQ(WaitExit(l->supervisor_pid, kWaitS), kSupervisorBadJobDir);
  EXPECT_FALSE(std::filesystem::exists(dir + "/launched"));
}

TEST_F(RunnerTest, BadSupervisorPathIsAnError) {
  Result<Launched> l = Launch(
      MakeJob({"/bin/true"}),
      [&] {
        LaunchOptions o = options_;
        o.supervisor_path = "/nonexistent/gpuwarden-supervise";
        return o;
      }(),
      clock_);
  ASSERT_FALSE(l.ok());
  EXPECT_THAT(l.error().message, HasSubstr("No such file"));
}

TEST_F(RunnerTest, LaunchRejectsWhatCannotBeRun) {
  auto code = [&](Job job) {
    Result<PreparedRun> r = PrepareRun(job, options_);
    return r.ok() ? std::string("ok") : r.error().code;
  };
  EXPECT_EQ(code(MakeJob({})), "usage");
  Job relative = MakeJob({"/bin/true"});
  relative.spec.cwd = "work";
  EXPECT_EQ(code(relative), "usage");
  Job nul = MakeJob({std::string("/bin/tr\0ue", 10)});
  EXPECT_EQ(code(nul), "usage");
  Job gpus = MakeJob({"/bin/true"});
  gpus.spec.gpus = 2;
  gpus.gpu_uuids = {"GPU-a"};
  EXPECT_EQ(code(gpus), "usage");
  Job limit = MakeJob({"/bin/true"});
  limit.spec.time_limit_s = 0;
  EXPECT_EQ(code(limit), "usage");
}

TEST_F(RunnerTest, TheProcRootReachesTheSupervisor) {
  // A proc root that is /proc under another name: the run works through it,
  // and the supervisor was told where it is.
  const std::string proc = root_ + "/proc-view";
  ASSERT_EQ(symlink("/proc", proc.c_str()), 0);
  options_.proc_root = proc;
  Launched l = LaunchOrDie(MakeJob({"/bin/sh", "-c", "while [ ! -e go ]; do sleep 0.05; done"}));
  WaitForPidRecord(l);
  EXPECT_THAT(
      ReadAll("/proc/" + std::to_string(l.supervisor_pid) + "/cmdline"),
      HasSubstr(std::string("--proc-root\0", 12) + proc + std::string("\0", 1) + l.job_dir));
  std::optional<PidRecord> pid = Present(ReadPidRecord(l.job_dir));
  ASSERT_TRUE(pid.has_value());
  EXPECT_GT(pid->start_ticks, 0u);
  { std::ofstream go(work_ + "/go"); }
  EXPECT_EQ(Finish(l).exit_code, 0);
}

TEST_F(RunnerTest, StopOfAnEndedSupervisorIsGone) {
  Status s = RequestStop(state_dir_, 0, 0, "x", 1, procs_);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().code, "gone");
  Status negative = RequestStop(state_dir_, getpid(), 0, "x", -1, procs_);
  ASSERT_FALSE(negative.ok());
  EXPECT_EQ(negative.error().code, "usage");
}

TEST_F(RunnerTest, WithoutRootAJobOfAnotherUserDoesNotStart) {
  if (geteuid() == 0) GTEST_SKIP() << "root may start jobs for any user";
  Job job = MakeJob({"/bin/sh", "-c", ": > ran"});
  job.owner.uid = geteuid() + 1;
  ExitRecord r = Run(job);
  EXPECT_EQ(r.reason, "start_failed");
  EXPECT_THAT(r.detail, HasSubstr("cannot start a job for uid"));
  EXPECT_FALSE(std::filesystem::exists(work_ + "/ran"));
}

TEST_F(RunnerTest, RootRunsTheJobAsItsOwnerWithTheOwnersGroupsAndLogs) {
  std::string why_not;
  const std::optional<TestUser> user = EnsureTestUser(&why_not);
  if (!user) GTEST_SKIP() << why_not;
  Job job =
      MakeJob({"/bin/sh", "-c", "/usr/bin/id -u; /usr/bin/id -g; /usr/bin/id -G; echo e >&2"});
  job.owner = {user->uid, user->gid, user->name};
  job.spec.cwd = "/";
  Launched l = LaunchOrDie(job);
  ExitRecord r = Finish(l);
  ASSERT_EQ(r.exit_code, 0) << r.detail << ReadAll(l.stderr_path);
  std::istringstream out(ReadAll(l.stdout_path));
  uid_t uid = 0;
  gid_t gid = 0;
  out >> uid >> gid;
  EXPECT_EQ(uid, user->uid);
  EXPECT_EQ(gid, user->gid);
  std::set<gid_t> groups;
  for (gid_t g; out >> g;) groups.insert(g);
  EXPECT_EQ(groups, GroupsOf(*user));
  EXPECT_EQ(groups.count(0), GroupsOf(*user).count(0));  // root's group is not passed on.
  for (const std::string& log : {l.stdout_path, l.stderr_path}) {
    struct stat st {};
    ASSERT_EQ(stat(log.c_str(), &st), 0) << log;
    EXPECT_EQ(st.st_uid, user->uid) << log;
    EXPECT_EQ(st.st_gid, user->gid) << log;
    EXPECT_EQ(st.st_mode & 07777, 0600u) << log;
  }
  EXPECT_EQ(ReadAll(l.stderr_path), "e\n");
}

TEST_F(RunnerTest, RootOpensLogsTheJobNamedWithTheJobsRights) {
  std::string why_not;
  const std::optional<TestUser> user = EnsureTestUser(&why_not);
  if (!user) GTEST_SKIP() << why_not;
  // work_ is root's (0755): the user may not create a file there.
  Job denied = MakeJob({"/bin/true"});
  denied.owner = {user->uid, user->gid, user->name};
  denied.spec.cwd = "/";
  denied.stdout_path = work_ + "/user-chose-this";
  Launched l = LaunchOrDie(denied);
  EXPECT_EQ(l.stdout_path, work_ + "/user-chose-this");
  ExitRecord r = Finish(l);
  EXPECT_EQ(r.reason, "start_failed");
  EXPECT_THAT(r.detail, HasSubstr("cannot open the stdout log " + work_ + "/user-chose-this"));
  EXPECT_THAT(r.detail, HasSubstr("Permission denied"));
  EXPECT_FALSE(std::filesystem::exists(work_ + "/user-chose-this"));

  // In a directory of the user's, the file is created, and it is the user's.
  const std::string mine = work_ + "/mine";
  ASSERT_EQ(mkdir(mine.c_str(), 0700), 0);
  ASSERT_EQ(chown(mine.c_str(), user->uid, user->gid), 0);
  Job allowed = MakeJob({"/bin/echo", "hi"});
  allowed.owner = {user->uid, user->gid, user->name};
  allowed.spec.cwd = "/";
  allowed.stdout_path = mine + "/out.log";
  Launched l2 = LaunchOrDie(allowed);
  EXPECT_EQ(Finish(l2).exit_code, 0);
  EXPECT_EQ(ReadAll(mine + "/out.log"), "hi\n");
  struct stat st {};
  ASSERT_EQ(stat((mine + "/out.log").c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, user->uid);
}

}  // namespace
}  // namespace gw::queue
