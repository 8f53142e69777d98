// The runner: the pure parts (environment, PATH lookup, spec format), then
// real jobs run by the built gpuwarden-supervise. Waits are generous (slow
// shared cores, sanitizers) and wait for events, never for durations.
#include "queue/runner.h"

#include <fcntl.h>
#include <gmock/gmock.h>
#include <grp.h>
#include <gtest/gtest.h>
#include <pwd.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <set>
#include <sstream>
#include <thread>

namespace gw::queue {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

constexpr double kWaitS = 90;

// ---------------------------------------------------------------------------
// BuildJobEnvironment

JobSpec SpecWithEnv(std::vector<std::string> env) {
  JobSpec spec;
  spec.argv = {"/bin/true"};
  spec.env = std::move(env);
  return spec;
}

std::vector<std::string> Tail(const std::vector<std::string>& env, size_t from) {
  return std::vector<std::string>(env.begin() + static_cast<long>(from), env.end());
}

TEST(BuildJobEnvironmentTest, SetsDevicesOrderAndIdAfterTheSubmittersEnvironment) {
  JobSpec spec = SpecWithEnv({"HOME=/home/ann", "PATH=/usr/bin", "ODD=a=b"});
  spec.gpus = 2;
  const auto env = BuildJobEnvironment(spec, 42, {"GPU-aaa", "GPU-bbb"}, 80ull << 30, false);
  EXPECT_EQ(env, (std::vector<std::string>{"HOME=/home/ann", "PATH=/usr/bin", "ODD=a=b",
                                           "CUDA_VISIBLE_DEVICES=GPU-aaa,GPU-bbb",
                                           "CUDA_DEVICE_ORDER=PCI_BUS_ID", "GPUWARDEN_JOB_ID=42"}));
}

TEST(BuildJobEnvironmentTest, ZeroGpuJobSeesNoDeviceAndNoBudget) {
  JobSpec spec = SpecWithEnv({"CUDA_VISIBLE_DEVICES=0,1"});
  spec.gpus = 0;
  spec.vram_bytes = 4ull << 30;
  const auto env = BuildJobEnvironment(spec, 7, {}, 80ull << 30, true);
  EXPECT_EQ(env, (std::vector<std::string>{"CUDA_VISIBLE_DEVICES=", "CUDA_DEVICE_ORDER=PCI_BUS_ID",
                                           "GPUWARDEN_JOB_ID=7"}));
}

TEST(BuildJobEnvironmentTest, SubmittersCopiesOfOurVariablesAreReplacedOnce) {
  JobSpec spec = SpecWithEnv({"CUDA_VISIBLE_DEVICES=3", "A=1", "CUDA_DEVICE_ORDER=FASTEST_FIRST",
                              "GPUWARDEN_JOB_ID=999", "GPUWARDEN_VRAM_FRACTION=0.9",
                              "CUDA_VISIBLE_DEVICES=4"});
  const auto env = BuildJobEnvironment(spec, 5, {"GPU-x"}, 0, false);
  EXPECT_EQ(env, (std::vector<std::string>{"A=1", "CUDA_VISIBLE_DEVICES=GPU-x",
                                           "CUDA_DEVICE_ORDER=PCI_BUS_ID", "GPUWARDEN_JOB_ID=5"}));
}

TEST(BuildJobEnvironmentTest, BudgetSetsLimitFractionAndFrameworkKnobs) {
  JobSpec spec = SpecWithEnv({});
  spec.vram_bytes = 20ull << 30;
  const auto env = BuildJobEnvironment(spec, 1, {"GPU-a"}, 80ull << 30, false);
  EXPECT_EQ(Tail(env, 3), (std::vector<std::string>{
                              "GPUWARDEN_VRAM_LIMIT_BYTES=" + std::to_string(20ull << 30),
                              "GPUWARDEN_VRAM_FRACTION=0.25", "XLA_PYTHON_CLIENT_PREALLOCATE=false",
                              "XLA_PYTHON_CLIENT_MEM_FRACTION=0.25", "XLA_CLIENT_MEM_FRACTION=0.25",
                              "TF_FORCE_GPU_ALLOW_GROWTH=true"}));
}

TEST(BuildJobEnvironmentTest, FractionRoundsDownAndStaysWithinBounds) {
  JobSpec spec = SpecWithEnv({});
  auto fraction = [&](uint64_t vram, uint64_t total) {
    spec.vram_bytes = vram;
    for (const std::string& e : BuildJobEnvironment(spec, 1, {"GPU-a"}, total, false)) {
      if (e.rfind("GPUWARDEN_VRAM_FRACTION=", 0) == 0) return e.substr(24);
    }
    return std::string("absent");
  };
  EXPECT_EQ(fraction(1, 1000000), "0.0001");  // Never 0: that would allow nothing.
  EXPECT_EQ(fraction(1, 3), "0.3333");
  EXPECT_EQ(fraction(2, 3), "0.6666");   // Down, not to nearest.
  EXPECT_EQ(fraction(90, 80), "1");      // A budget above the GPU caps at the GPU.
  EXPECT_EQ(fraction(10, 0), "absent");  // Total unknown: no fraction at all.
  EXPECT_EQ(fraction(1000, 1001), "0.999");
}

TEST(BuildJobEnvironmentTest, UnknownTotalGivesLimitButNoFractions) {
  JobSpec spec = SpecWithEnv({});
  spec.vram_bytes = 1 << 30;
  const auto env = BuildJobEnvironment(spec, 1, {"GPU-a"}, 0, false);
  EXPECT_EQ(Tail(env, 3), (std::vector<std::string>{"GPUWARDEN_VRAM_LIMIT_BYTES=1073741824",
                                                    "XLA_PYTHON_CLIENT_PREALLOCATE=false",
                                                    "TF_FORCE_GPU_ALLOW_GROWTH=true"}));
}

TEST(BuildJobEnvironmentTest, UsersOwnFrameworkSettingsAreKept) {
  JobSpec spec = SpecWithEnv({"XLA_PYTHON_CLIENT_PREALLOCATE=true", "XLA_CLIENT_MEM_FRACTION=.1",
                              "TF_FORCE_GPU_ALLOW_GROWTH=false"});
  spec.vram_bytes = 40ull << 30;
  const auto env = BuildJobEnvironment(spec, 1, {"GPU-a"}, 80ull << 30, false);
  EXPECT_EQ(env, (std::vector<std::string>{
                     "XLA_PYTHON_CLIENT_PREALLOCATE=true", "XLA_CLIENT_MEM_FRACTION=.1",
                     "TF_FORCE_GPU_ALLOW_GROWTH=false", "CUDA_VISIBLE_DEVICES=GPU-a",
                     "CUDA_DEVICE_ORDER=PCI_BUS_ID", "GPUWARDEN_JOB_ID=1",
                     "GPUWARDEN_VRAM_LIMIT_BYTES=" + std::to_string(40ull << 30),
                     "GPUWARDEN_VRAM_FRACTION=0.5"}));
  // Either name of the JAX fraction counts as the user's choice.
  spec.env = {"XLA_PYTHON_CLIENT_MEM_FRACTION=.2"};
  const auto env2 = BuildJobEnvironment(spec, 1, {"GPU-a"}, 80ull << 30, false);
  EXPECT_EQ(std::count_if(env2.begin(), env2.end(),
                          [](const std::string& e) { return e.find("MEM_FRACTION") != e.npos; }),
            1);
}

TEST(BuildJobEnvironmentTest, MpsLimitPerGpuInMibReplacesTheUsers) {
  JobSpec spec = SpecWithEnv({"CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=0=99G"});
  spec.vram_bytes = (3ull << 30) + 12345;  // Rounded down to whole MiB.
  const auto env = BuildJobEnvironment(spec, 1, {"GPU-a", "GPU-b"}, 0, true);
  EXPECT_EQ(std::count(env.begin(), env.end(),
                       "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=GPU-a=3072M,GPU-b=3072M"),
            1);
  EXPECT_EQ(std::count_if(env.begin(), env.end(),
                          [](const std::string& e) {
                            return e.rfind("CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=", 0) == 0;
                          }),
            1);
  // Without MPS the user's setting is theirs to keep, and none is added.
  const auto no_mps = BuildJobEnvironment(spec, 1, {"GPU-a"}, 0, false);
  EXPECT_EQ(no_mps.front(), "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=0=99G");
  EXPECT_EQ(std::count_if(no_mps.begin(), no_mps.end(),
                          [](const std::string& e) { return e.find("MPS") != e.npos; }),
            1);
}

// ---------------------------------------------------------------------------
// ExecCandidates, JobDir, spec.json

TEST(ExecCandidatesTest, SlashMeansNoLookup) {
  EXPECT_EQ(ExecCandidates("./run.sh", {"PATH=/x"}), (std::vector<std::string>{"./run.sh"}));
  EXPECT_EQ(ExecCandidates("/bin/true", {}), (std::vector<std::string>{"/bin/true"}));
  EXPECT_TRUE(ExecCandidates("", {"PATH=/x"}).empty());
}

TEST(ExecCandidatesTest, UsesTheJobsFirstPathWithEmptyElementsAsWorkingDirectory) {
  EXPECT_EQ(ExecCandidates("python", {"HOME=/h", "PATH=/opt/env/bin::/usr/bin/", "PATH=/no"}),
            (std::vector<std::string>{"/opt/env/bin/python", "python", "/usr/bin/python"}));
  EXPECT_EQ(ExecCandidates("x", {"PATH="}), (std::vector<std::string>{"x"}));
  EXPECT_EQ(ExecCandidates("x", {"NOPATH=1"}),
            (std::vector<std::string>{"/usr/local/bin/x", "/usr/bin/x", "/bin/x"}));
}

TEST(JobDirTest, FirstRunIsTheIdLaterRunsAreNumbered) {
  EXPECT_EQ(JobDir("/var/lib/gw", 12, 0), "/var/lib/gw/jobs/12");
  EXPECT_EQ(JobDir("/var/lib/gw", 12, 3), "/var/lib/gw/jobs/12.3");
}

TEST(SpecJsonTest, RoundTripsArbitraryBytes) {
  SupervisorSpec s;
  s.job_id = 99;
  s.argv = {"/bin/x", std::string("\xff\xfe bad utf8"), "", "$HOME;`rm`"};
  s.env = {"A=\x01\x80", "NOEQUALS"};
  s.cwd = "/tmp/\xc3\x28";
  s.umask = 027;
  s.uid = 1234;
  s.gid = 5678;
  s.user = "ann";
  s.stdout_path = "/l/o";
  s.stderr_path = "/l/e";
  s.stderr_by_job = true;
  s.time_limit_s = 3600;
  s.grace_s = 2.5;
  Result<SupervisorSpec> back = SupervisorSpecFromJson(SupervisorSpecToJson(s));
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(back->job_id, 99);
  EXPECT_EQ(back->argv, s.argv);
  EXPECT_EQ(back->env, s.env);
  EXPECT_EQ(back->cwd, s.cwd);
  EXPECT_EQ(back->umask, 027u);
  EXPECT_EQ(back->uid, 1234u);
  EXPECT_EQ(back->gid, 5678u);
  EXPECT_EQ(back->user, "ann");
  EXPECT_EQ(back->stdout_path, "/l/o");
  EXPECT_FALSE(back->stdout_by_job);
  EXPECT_TRUE(back->stderr_by_job);
  EXPECT_EQ(back->time_limit_s, 3600);
  EXPECT_EQ(back->grace_s, 2.5);
}

TEST(SpecJsonTest, MalformedSpecsAreRejected) {
  EXPECT_EQ(SupervisorSpecFromJson("not json").error().code, "malformed");
  EXPECT_EQ(SupervisorSpecFromJson("{}").error().code, "malformed");
  SupervisorSpec s;
  s.argv = {"/bin/true"};
  s.cwd = "/";
  s.stdout_path = "/o";
  s.stderr_path = "/e";
  std::string text = SupervisorSpecToJson(s);
  ASSERT_TRUE(SupervisorSpecFromJson(text).ok());
  const std::string bad_b64 = std::string(text).replace(text.find("\"cwd_b64\":\"") + 11, 1, "!");
  EXPECT_FALSE(SupervisorSpecFromJson(bad_b64).ok());
  s.cwd = "relative";
  EXPECT_FALSE(SupervisorSpecFromJson(SupervisorSpecToJson(s)).ok());
  s.cwd = "/";
  s.argv = {std::string("/bin/a\0b", 8)};
  EXPECT_FALSE(SupervisorSpecFromJson(SupervisorSpecToJson(s)).ok());
}

// ---------------------------------------------------------------------------
// Real jobs.

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

bool WaitFor(const std::function<bool()>& done, double timeout_s) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return true;
}

// The exit status of a child (128 + signal when a signal ended it), reaped;
// nullopt if it still runs after timeout_s.
std::optional<int> WaitExit(pid_t pid, double timeout_s) {
  std::optional<int> result;
  WaitFor(
      [&] {
        int status = 0;
        const pid_t r = waitpid(pid, &status, WNOHANG);
        if (r == pid) {
          result = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
          return true;
        }
        return r < 0;  // Not ours (any more).
      },
      timeout_s);
  return result;
}

bool ProcessGone(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  if (!in) return true;
  std::string stat((std::istreambuf_iterator<char>(in)), {});
  const size_t close = stat.rfind(')');
  return close != std::string::npos && close + 2 < stat.size() && stat[close + 2] == 'Z';
}

// Another user, for the tests that run as root.
struct TestUser {
  std::string name;
  uid_t uid;
  gid_t gid;
};

std::optional<TestUser> EnsureTestUser(std::string* why_not) {
  if (geteuid() != 0) {
    *why_not = "needs root to run a job as the test user gw-e2e";
    return std::nullopt;
  }
  auto look_up = []() -> std::optional<TestUser> {
    passwd pw{};
    passwd* found = nullptr;
    std::vector<char> buffer(16384);
    if (getpwnam_r("gw-e2e", &pw, buffer.data(), buffer.size(), &found) != 0 || !found) {
      return std::nullopt;
    }
    return TestUser{"gw-e2e", pw.pw_uid, pw.pw_gid};
  };
  for (int attempt = 0; attempt < 5; ++attempt) {
    if (auto user = look_up()) return user;
    // Tests running in parallel may race to create it: the loser sees it exist.
    (void)!std::system(
        "/usr/sbin/useradd --system --no-create-home --shell /usr/sbin/nologin gw-e2e "
        ">/dev/null 2>&1");
  }
  *why_not = "cannot create the test user gw-e2e";
  return std::nullopt;
}

std::set<gid_t> GroupsOf(const TestUser& user) {
  int n = 256;
  std::vector<gid_t> groups(static_cast<size_t>(n));
  EXPECT_GE(getgrouplist(user.name.c_str(), user.gid, groups.data(), &n), 0);
  groups.resize(static_cast<size_t>(std::max(n, 0)));
  return std::set<gid_t>(groups.begin(), groups.end());
}

class RunnerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/gw-runner-test-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    root_ = tmpl;
    // Searchable, so that a job run as another user can reach work_.
    ASSERT_EQ(chmod(root_.c_str(), 0755), 0);
    state_dir_ = root_ + "/state";
    work_ = root_ + "/work";
    ASSERT_EQ(mkdir(state_dir_.c_str(), 0700), 0);
    ASSERT_EQ(mkdir(work_.c_str(), 0755), 0);
    options_.state_dir = state_dir_;
    options_.supervisor_path = GW_SUPERVISOR_PATH;
    options_.grace_s = 5;
  }
  void TearDown() override {
    // A failed test must not leave a supervisor behind; its job gets SIGKILL
    // through PR_SET_PDEATHSIG.
    for (pid_t pid : supervisors_) {
      kill(pid, SIGKILL);
      WaitExit(pid, kWaitS);
    }
    std::error_code ec;
    std::filesystem::remove_all(root_, ec);
  }

  Job MakeJob(std::vector<std::string> argv) {
    Job job;
    job.id = ++next_id_;
    job.owner.uid = geteuid();
    job.owner.gid = getegid();
    job.owner.user = "tester";
    job.spec.argv = std::move(argv);
    job.spec.cwd = work_;
    job.spec.env = {"PATH=/usr/bin:/bin", "HOME=" + work_};
    job.spec.gpus = 0;
    return job;
  }

  Launched LaunchOrDie(const Job& job) {
    Result<Launched> l = Launch(job, options_);
    EXPECT_TRUE(l.ok()) << l.error().message;
    if (!l.ok()) return Launched{};
    supervisors_.push_back(l->supervisor_pid);
    return *l;
  }

  // Waits for the supervisor to end and returns the record it left.
  ExitRecord Finish(const Launched& l, int expected_status = kSupervisorRecorded) {
    const std::optional<int> status = WaitExit(l.supervisor_pid, kWaitS);
    supervisors_.erase(std::remove(supervisors_.begin(), supervisors_.end(), l.supervisor_pid),
                       supervisors_.end());
    EXPECT_EQ(status, expected_status) << ReadAll(l.job_dir + "/supervisor.log");
    std::string error;
    std::optional<ExitRecord> r = ReadExitRecord(l.job_dir, &error);
    EXPECT_TRUE(r.has_value()) << error << ReadAll(l.job_dir + "/supervisor.log");
    return r.value_or(ExitRecord{});
  }

  ExitRecord Run(const Job& job) { return Finish(LaunchOrDie(job)); }

  void WaitForPidRecord(const Launched& l) {
    ASSERT_TRUE(WaitFor([&] { return ReadPidRecord(l.job_dir, nullptr).has_value(); }, kWaitS))
        << ReadAll(l.job_dir + "/supervisor.log");
  }

  std::string root_;
  std::string state_dir_;
  std::string work_;
  LaunchOptions options_;
  std::vector<pid_t> supervisors_;
  JobId next_id_ = 0;
  std::string leaked_ = "(none)";
};

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
  std::optional<PidRecord> pid = ReadPidRecord(l.job_dir, nullptr);
  ASSERT_TRUE(pid.has_value());
  EXPECT_GT(pid->pid, 0);
  EXPECT_GT(pid->start_ticks, 0u);
  EXPECT_EQ(pid->start_unix_ms, r.start_unix_ms);
  std::optional<LaunchRecord> claim = ReadLaunchRecord(l.job_dir, nullptr);
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
  ASSERT_TRUE(SupervisorAlive(l.supervisor_pid, l.supervisor_start_ticks));
  Status s = RequestStop(l.job_dir, l.supervisor_pid, l.supervisor_start_ticks, "cancelled", 30);
  ASSERT_TRUE(s.ok()) << s.error().message;
  ExitRecord r = Finish(l);
  EXPECT_EQ(r.reason, "stopped:cancelled");
  EXPECT_EQ(r.signal, SIGTERM);
  EXPECT_THAT(r.detail, HasSubstr("stop requested (cancelled)"));
  EXPECT_FALSE(SupervisorAlive(l.supervisor_pid, l.supervisor_start_ticks));
  Status again = RequestStop(l.job_dir, l.supervisor_pid, l.supervisor_start_ticks, "x", 1);
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.error().code, "gone");
}

TEST_F(RunnerTest, SecondStopWithZeroGraceKillsAtOnce) {
  Launched l = LaunchOrDie(MakeJob({"/bin/sh", "-c", "trap '' TERM; : > ready; /bin/sleep 100"}));
  ASSERT_TRUE(WaitFor([&] { return std::filesystem::exists(work_ + "/ready"); }, kWaitS));
  // The first grace would outlast the test's wait; only the second can end it.
  ASSERT_TRUE(
      RequestStop(l.job_dir, l.supervisor_pid, l.supervisor_start_ticks, "preempted", 3600).ok());
  ASSERT_TRUE(WaitFor(
      [&] { return ReadAll(l.job_dir + "/supervisor.log").find("SIGTERM") != std::string::npos; },
      kWaitS));
  ASSERT_TRUE(RequestStop(l.job_dir, l.supervisor_pid, l.supervisor_start_ticks, "other", 0).ok());
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
  std::optional<PidRecord> job = ReadPidRecord(l.job_dir, nullptr);
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
  ASSERT_TRUE(RequestStop(l.job_dir, l.supervisor_pid, l.supervisor_start_ticks, "done", 5).ok());
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
    Result<Launched> l = Launch(job, options_);
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

  EXPECT_TRUE(SupervisorAlive(supervisor, ticks));
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
    Result<Launched> l = Launch(job, options_);
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
  Result<bool> claimed = ClaimUnlaunched(run->job_dir);
  ASSERT_TRUE(claimed.ok()) << claimed.error().message;
  EXPECT_TRUE(*claimed);
  std::optional<LaunchRecord> record = ReadLaunchRecord(run->job_dir, nullptr);
  ASSERT_TRUE(record.has_value());
  EXPECT_FALSE(record->by_supervisor);
  EXPECT_EQ(record->pid, getpid());

  // A supervisor that comes late (the dead daemon's) refuses.
  Result<Launched> late = StartSupervisor(run->job_dir, options_.supervisor_path);
  ASSERT_TRUE(late.ok()) << late.error().message;
  EXPECT_EQ(WaitExit(late->supervisor_pid, kWaitS), kSupervisorRefused);
  EXPECT_FALSE(std::filesystem::exists(work_ + "/side-effect"));
  EXPECT_FALSE(ReadPidRecord(run->job_dir, nullptr).has_value());
  EXPECT_FALSE(ReadExitRecord(run->job_dir, nullptr).has_value());
  EXPECT_FALSE(ReadLaunchRecord(run->job_dir, nullptr)->by_supervisor);

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
  ASSERT_TRUE(WaitFor([&] { return ReadLaunchRecord(l.job_dir, nullptr).has_value(); }, kWaitS));
  Result<bool> claimed = ClaimUnlaunched(l.job_dir);
  ASSERT_TRUE(claimed.ok());
  EXPECT_FALSE(*claimed);
  std::optional<LaunchRecord> record = ReadLaunchRecord(l.job_dir, nullptr);
  ASSERT_TRUE(record.has_value());
  EXPECT_TRUE(record->by_supervisor);
  EXPECT_EQ(record->pid, l.supervisor_pid);
  { std::ofstream go(work_ + "/go"); }
  EXPECT_EQ(Finish(l).reason, "exit");
}

TEST_F(RunnerTest, ClaimOfARunThatNeverGotADirectoryIsTrue) {
  Result<bool> claimed = ClaimUnlaunched(state_dir_ + "/jobs/12345");
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
  Result<Launched> l = StartSupervisor(dir, options_.supervisor_path);
  ASSERT_TRUE(l.ok()) << l.error().message;
  EXPECT_EQ(WaitExit(l->supervisor_pid, kWaitS), kSupervisorBadJobDir);
  EXPECT_FALSE(std::filesystem::exists(dir + "/launched"));
}

TEST_F(RunnerTest, BadSupervisorPathIsAnError) {
  Result<Launched> l = Launch(MakeJob({"/bin/true"}), [&] {
    LaunchOptions o = options_;
    o.supervisor_path = "/nonexistent/gpuwarden-supervise";
    return o;
  }());
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

TEST_F(RunnerTest, RecordReadersTellAbsentFromMalformed) {
  const std::string dir = state_dir_ + "/records";
  ASSERT_EQ(mkdir(dir.c_str(), 0700), 0);
  std::string error = "stale";
  EXPECT_FALSE(ReadExitRecord(dir, &error).has_value());
  EXPECT_EQ(error, "");
  { std::ofstream(dir + "/exit.json") << "{\"reason\":\"exit\"}"; }
  EXPECT_FALSE(ReadExitRecord(dir, &error).has_value());
  EXPECT_THAT(error, HasSubstr("exit.json: malformed"));
  { std::ofstream(dir + "/pid") << "{\"pid\":\"12\",\"start_ticks\":1,\"start_unix_ms\":1}"; }
  EXPECT_FALSE(ReadPidRecord(dir, &error).has_value());
  EXPECT_THAT(error, HasSubstr("pid: malformed"));
  { std::ofstream(dir + "/launched") << "garbage"; }
  EXPECT_FALSE(ReadLaunchRecord(dir, &error).has_value());
  EXPECT_THAT(error, HasSubstr("launched: malformed"));
}

TEST_F(RunnerTest, StopOfAnEndedSupervisorIsGone) {
  Status s = RequestStop(state_dir_, 0, 0, "x", 1);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().code, "gone");
  Status negative = RequestStop(state_dir_, getpid(), 0, "x", -1);
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
