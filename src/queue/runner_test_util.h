// What the runner's tests of real runs share: waiting for events, reading
// files, a test user for the root-only tests, and a fixture that launches
// jobs under the built gpuwarden-supervise in a temporary state directory.
// Waits are generous (slow shared cores, sanitizers) and wait for events,
// never for durations.
#ifndef GPUWARDEN_QUEUE_RUNNER_TEST_UTIL_H_
#define GPUWARDEN_QUEUE_RUNNER_TEST_UTIL_H_

#include <grp.h>
#include <gtest/gtest.h>
#include <pwd.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "core/clock.h"
#include "core/result.h"
#include "os/file_io.h"
#include "proc/proc_reader.h"
#include "queue/runner.h"
#include "test_paths.h"

namespace gw::queue::runner_test {

inline constexpr double kWaitS = 90;

// The record a reader found; a reader's error fails the test (an error is
// never "not there yet").
template <typename T>
std::optional<T> Present(const Result<std::optional<T>>& r) {
  if (!r.ok()) {
    ADD_FAILURE() << r.error().code << ": " << r.error().message;
    return std::nullopt;
  }
  return *r;
}

inline std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

inline bool WaitFor(const std::function<bool()>& done, double timeout_s) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return true;
}

// The exit status of a child (128 + signal when a signal ended it), reaped;
// nullopt if it still runs after timeout_s.
inline std::optional<int> WaitExit(pid_t pid, double timeout_s) {
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

// Gone or a zombie. A failed read is "gone": /proc/PID/stat fails with ESRCH
// once the process is reaped between open and read.
inline bool ProcessGone(pid_t pid) {
  Result<std::string> read = os::ReadFileBounded("/proc/" + std::to_string(pid) + "/stat", 4096);
  if (!read.ok()) return true;
  const std::string& stat = read.value();
  const size_t close = stat.rfind(')');
  return close != std::string::npos && close + 2 < stat.size() && stat[close + 2] == 'Z';
}

// Another user, for the tests that run as root.
struct TestUser {
  std::string name;
  uid_t uid;
  gid_t gid;
};

inline std::optional<TestUser> EnsureTestUser(std::string* why_not) {
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

inline std::set<gid_t> GroupsOf(const TestUser& user) {
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
    options_.supervisor_path = gw::test::BinaryDir() + "/gpuwarden-supervise";
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
    Result<Launched> l = Launch(job, options_, clock_);
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
    std::optional<ExitRecord> r = Present(ReadExitRecord(l.job_dir));
    EXPECT_TRUE(r.has_value()) << ReadAll(l.job_dir + "/supervisor.log");
    return r.value_or(ExitRecord{});
  }

  ExitRecord Run(const Job& job) { return Finish(LaunchOrDie(job)); }

  void WaitForPidRecord(const Launched& l) {
    ASSERT_TRUE(WaitFor([&] { return Present(ReadPidRecord(l.job_dir)).has_value(); }, kWaitS))
        << ReadAll(l.job_dir + "/supervisor.log");
  }

  std::string root_;
  std::string state_dir_;
  std::string work_;
  LaunchOptions options_;
  RealClock clock_;
  proc::ProcReader procs_{"/proc"};
  std::vector<pid_t> supervisors_;
  JobId next_id_ = 0;
  std::string leaked_ = "(none)";
};
}  // namespace gw::queue::runner_test

#endif  // GPUWARDEN_QUEUE_RUNNER_TEST_UTIL_H_
