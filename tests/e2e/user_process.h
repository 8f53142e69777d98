// Processes of the test and of an unprivileged test user, for end-to-end tests
// of what gpuwarden may and may not do to whose processes.
#ifndef GPUWARDEN_TESTS_E2E_USER_PROCESS_H_
#define GPUWARDEN_TESTS_E2E_USER_PROCESS_H_

#include <sys/types.h>

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "e2e/run_process.h"

namespace gw::test {

inline constexpr char kTestUserName[] = "gw-e2e";

struct TestUser {
  std::string name;
  uid_t uid = 0;
  gid_t gid = 0;
};

// When the test runs as root: makes sure the system user gw-e2e exists
// (useradd --system --no-create-home --shell /usr/sbin/nologin) and returns it.
// Otherwise, or when it cannot be created: nullopt, and *why_not says why.
std::optional<TestUser> EnsureTestUser(std::string* why_not);

// Skips the current test (GTEST_SKIP) unless the test user is available; else
// declares `const TestUser var`.
#define GW_REQUIRE_TEST_USER(var)                       \
  std::string var##_why_not;                            \
  const std::optional<::gw::test::TestUser> var##_opt = \
      ::gw::test::EnsureTestUser(&var##_why_not);       \
  if (!var##_opt) GTEST_SKIP() << var##_why_not;        \
  const ::gw::test::TestUser& var = *var##_opt

// options, run as `user` (uid, gid) with HOME set to `home`.
RunOptions AsUser(RunOptions options, const TestUser& user, const std::string& home);

// Hands a directory to `user` (chown) and makes it readable and searchable by
// everyone (0755), so that the user can write there and anyone can read it.
bool GiveDirectoryTo(const std::string& path, const TestUser& user);

// A child of the test that lives until the object is destroyed: killed (its
// whole process group when it leads one) and reaped, unless a wait reaped it.
class TestChild {
 public:
  struct Options {
    std::optional<uid_t> uid;  // Run as this user and group (needs root); both or neither.
    std::optional<gid_t> gid;
    // Lead a process group of its own, as a shell job does. Keeps a tree-wide
    // action (`clean --tree`) on this child from reaching the test itself.
    bool own_group = true;
    // Processes the child starts (fork, exec) before it execs argv itself: its
    // children, in its process group, which argv's program never reaps — a
    // launcher and its workers. Each argv[0] an absolute path.
    std::vector<std::vector<std::string>> workers;
    // Start with exactly this PID (clone3 with set_tid: root only, Linux >=
    // 5.5). When that fails, pid() is -1 and start_error() says why (EEXIST:
    // the PID is in use).
    std::optional<pid_t> pid;
    // Variables to set (value) or remove (nullopt) in the child's environment
    // (ChildEnvironment); empty: the test's own.
    std::map<std::string, std::optional<std::string>> env;
    // stdout and stderr appended to this file (created 0644) instead of
    // stdout on /dev/null and stderr the test's: for daemons that log there.
    std::optional<std::string> output;
  };
  // argv[0] must be an absolute path; exec'd directly with stdin, stdout and
  // stderr on /dev/null.
  TestChild(const std::vector<std::string>& argv, const Options& options);
  explicit TestChild(const std::vector<std::string>& argv) : TestChild(argv, Options()) {}
  TestChild() : TestChild({"/bin/sleep", "300"}) {}
  ~TestChild();
  TestChild(const TestChild&) = delete;
  TestChild& operator=(const TestChild&) = delete;

  pid_t pid() const { return pid_; }
  // errno of a failed start (pid() == -1), else 0.
  int start_error() const { return start_error_; }
  // Waits until the child has ended and reaps it. Its exit status (128 +
  // signal when killed by one), or nullopt if it still runs after timeout_s.
  std::optional<int> WaitForExit(double timeout_s);
  // Reaps the child now if it has ended (a zombie); true once reaped.
  bool TryReap();
  bool reaped() const { return status_.has_value(); }
  std::optional<int> status() const { return status_; }

 private:
  pid_t pid_ = -1;
  int start_error_ = 0;
  bool own_group_ = true;
  std::optional<int> status_;
};

// A process with a zombie child it never reaps: /bin/sleep started with one
// worker, /bin/true, that exits at once. No shell is involved (a shell may
// reap its background child before it execs), so the zombie stays until the
// sleep ends. The constructor waits up to timeout_s for it: zombie() is 0 when
// it did not appear.
class ZombieParent {
 public:
  explicit ZombieParent(double timeout_s);
  pid_t pid() const { return parent_.pid(); }
  pid_t zombie() const { return zombie_; }
  std::optional<int> WaitForExit(double timeout_s) { return parent_.WaitForExit(timeout_s); }

 private:
  TestChild parent_;
  pid_t zombie_ = 0;
};

// The whole file at `path`, or "" when it is missing or cannot be read. For
// /proc/PID/* of processes that may end at any moment: a read there fails
// with ESRCH once the process is reaped between open and read, and a test
// must see "gone", not an exception (an istreambuf_iterator over an ifstream
// throws on a failed read).
std::string ReadFileOrEmpty(const std::string& path);

// /proc facts about any process.
// The state letter of /proc/PID/stat ('R', 'S', 'Z', ...), nullopt when there is no such process.
std::optional<char> ProcessStateOf(pid_t pid);
// Exists and is not a zombie (or dead).
bool ProcessAlive(pid_t pid);
// Field 22 of /proc/PID/stat: the start time in clock ticks since boot.
std::optional<unsigned long long> ProcessStartTicks(pid_t pid);
// The real uid of the process (/proc/PID/status).
std::optional<uid_t> ProcessUid(pid_t pid);

// The process's name (/proc/PID/comm): "sleep" once a shell has exec'd it.
std::string CommOf(pid_t pid);
// Children of `parent`, ascending (scanning /proc: no dependency on
// CONFIG_PROC_CHILDREN).
std::vector<pid_t> ChildrenOf(pid_t parent);

// Polls `condition` every interval_s (10 ms) until it holds (true) or
// timeout_s passes (false). A longer interval for conditions that run a
// program each time.
bool WaitUntil(const std::function<bool()>& condition, double timeout_s, double interval_s = 0.01);

}  // namespace gw::test

#endif  // GPUWARDEN_TESTS_E2E_USER_PROCESS_H_
