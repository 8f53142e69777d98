#include "e2e/user_process.h"

#include <fcntl.h>
#include <linux/sched.h>
#include <pwd.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "os/file_io.h"

namespace gw::test {

std::string ReadFileOrEmpty(const std::string& path) {
  // Bounded only so that a runaway file cannot take the test's memory.
  constexpr size_t kMaxBytes = 64u << 20;
  Result<std::string> text = os::ReadFileBounded(path, kMaxBytes);
  return text.ok() ? std::move(text).value() : std::string();
}

namespace {

std::optional<TestUser> LookUp(const char* name) {
  passwd pw{};
  passwd* found = nullptr;
  std::vector<char> buffer(16384);
  if (getpwnam_r(name, &pw, buffer.data(), buffer.size(), &found) != 0 || found == nullptr) {
    return std::nullopt;
  }
  return TestUser{name, pw.pw_uid, pw.pw_gid};
}

std::string ReadStat(pid_t pid) {
  return ReadFileOrEmpty("/proc/" + std::to_string(pid) + "/stat");
}

// The fields after "(comm)"; field 3 (state) is element 0.
std::vector<std::string> StatFieldsAfterComm(pid_t pid) {
  const std::string stat = ReadStat(pid);
  const size_t close = stat.rfind(')');
  if (close == std::string::npos) return {};
  std::istringstream rest(stat.substr(close + 1));
  std::vector<std::string> fields;
  for (std::string f; rest >> f;) fields.push_back(f);
  return fields;
}

}  // namespace

std::optional<TestUser> EnsureTestUser(std::string* why_not) {
  if (geteuid() != 0) {
    *why_not = std::string("needs root to create and switch to the test user ") + kTestUserName;
    return std::nullopt;
  }
  if (auto user = LookUp(kTestUserName)) return user;
  std::string last_error;
  // Tests running in parallel may race to create it: the loser sees it exist.
  for (int attempt = 0; attempt < 5; ++attempt) {
    RunOptions options;
    options.timeout_s = 60;
    RunResult r = RunProcess({"/usr/sbin/useradd", "--system", "--no-create-home", "--shell",
                              "/usr/sbin/nologin", kTestUserName},
                             options);
    if (auto user = LookUp(kTestUserName)) return user;
    last_error = "useradd exited " + std::to_string(r.exit_code) + ": " + r.err;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  *why_not = std::string("cannot create the test user ") + kTestUserName + ": " + last_error;
  return std::nullopt;
}

RunOptions AsUser(RunOptions options, const TestUser& user, const std::string& home) {
  options.uid = user.uid;
  options.gid = user.gid;
  options.env["HOME"] = home;
  options.env["USER"] = user.name;
  options.env["LOGNAME"] = user.name;
  options.env["XDG_CONFIG_HOME"] = std::nullopt;
  options.env["XDG_RUNTIME_DIR"] = std::nullopt;
  return options;
}

bool GiveDirectoryTo(const std::string& path, const TestUser& user) {
  return chown(path.c_str(), user.uid, user.gid) == 0 && chmod(path.c_str(), 0755) == 0;
}

TestChild::TestChild(const std::vector<std::string>& argv, const Options& options)
    : own_group_(options.own_group) {
  // Everything the child needs is built before fork: only async-signal-safe
  // calls may follow it.
  auto to_args = [](const std::vector<std::string>& strings) {
    std::vector<char*> out;
    for (const auto& a : strings) out.push_back(const_cast<char*>(a.c_str()));
    out.push_back(nullptr);
    return out;
  };
  std::vector<char*> args = to_args(argv);
  std::vector<std::vector<char*>> worker_args;
  for (const auto& w : options.workers) worker_args.push_back(to_args(w));
  RunOptions identity;
  identity.uid = options.uid;
  identity.gid = options.gid;
  identity.env = options.env;
  std::vector<std::string> env_strings;
  std::vector<char*> envp;
  if (!options.env.empty()) {
    env_strings = ChildEnvironment(identity);
    for (auto& e : env_strings) envp.push_back(e.data());
    envp.push_back(nullptr);
  }
  const char* output = options.output ? options.output->c_str() : nullptr;
  if (options.pid) {
    // A raw clone3 is a fork that may name the new PID.
    pid_t wanted = *options.pid;
    clone_args clone{};
    clone.exit_signal = SIGCHLD;
    clone.set_tid = reinterpret_cast<uintptr_t>(&wanted);
    clone.set_tid_size = 1;
    pid_ = static_cast<pid_t>(syscall(SYS_clone3, &clone, sizeof clone));
  } else {
    pid_ = fork();
  }
  if (pid_ < 0) {
    start_error_ = errno;
    pid_ = -1;
    return;
  }
  if (pid_ == 0) {
    if (options.own_group) setpgid(0, 0);
    int null_fd = open("/dev/null", O_RDWR);
    if (null_fd < 0 || dup2(null_fd, STDIN_FILENO) < 0 || dup2(null_fd, STDOUT_FILENO) < 0) {
      _exit(127);
    }
    // Without `output`, stderr stays the test's: an exec failure is then
    // visible in its log.
    if (output != nullptr) {
      int out_fd = open(output, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
      if (out_fd < 0 || dup2(out_fd, STDOUT_FILENO) < 0 || dup2(out_fd, STDERR_FILENO) < 0) {
        _exit(127);
      }
    }
    if (!AssumeIdentity(identity)) _exit(126);
    for (auto& w : worker_args) {
      if (fork() == 0) {
        execv(w[0], w.data());
        _exit(127);
      }
    }
    if (envp.empty()) {
      execv(args[0], args.data());
    } else {
      execve(args[0], args.data(), envp.data());
    }
    _exit(127);
  }
  // Also in the parent, so that the group exists before anyone looks.
  if (pid_ > 0 && options.own_group) setpgid(pid_, pid_);
}

TestChild::~TestChild() {
  if (pid_ <= 0 || status_) return;
  if (own_group_) kill(-pid_, SIGKILL);
  kill(pid_, SIGKILL);
  int status = 0;
  while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
  }
}

bool TestChild::TryReap() {
  if (status_) return true;
  if (pid_ <= 0) return false;
  int status = 0;
  pid_t r;
  do {
    r = waitpid(pid_, &status, WNOHANG);
  } while (r < 0 && errno == EINTR);
  if (r != pid_) return false;
  if (WIFEXITED(status)) {
    status_ = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    status_ = 128 + WTERMSIG(status);
  } else {
    status_ = -1;
  }
  return true;
}

std::optional<int> TestChild::WaitForExit(double timeout_s) {
  WaitUntil([this] { return TryReap(); }, timeout_s);
  return status_;
}

std::optional<char> ProcessStateOf(pid_t pid) {
  std::vector<std::string> fields = StatFieldsAfterComm(pid);
  if (fields.empty() || fields[0].empty()) return std::nullopt;
  return fields[0][0];
}

bool ProcessAlive(pid_t pid) {
  std::optional<char> state = ProcessStateOf(pid);
  return state && *state != 'Z' && *state != 'X' && *state != 'x';
}

std::optional<unsigned long long> ProcessStartTicks(pid_t pid) {
  std::vector<std::string> fields = StatFieldsAfterComm(pid);
  // Field 22 overall is element 22 - 3 after the comm.
  if (fields.size() < 20) return std::nullopt;
  try {
    return std::stoull(fields[19]);
  } catch (...) {
    return std::nullopt;
  }
}

std::optional<uid_t> ProcessUid(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("Uid:", 0) == 0) {
      std::istringstream fields(line.substr(4));
      unsigned long uid = 0;
      if (fields >> uid) return static_cast<uid_t>(uid);
    }
  }
  return std::nullopt;
}

bool WaitUntil(const std::function<bool()>& condition, double timeout_s, double interval_s) {
  const auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                            std::chrono::duration<double>(timeout_s));
  while (true) {
    if (condition()) return true;
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::duration<double>(interval_s));
  }
}

std::string CommOf(pid_t pid) {
  std::string comm = ReadFileOrEmpty("/proc/" + std::to_string(pid) + "/comm");
  if (!comm.empty() && comm.back() == '\n') comm.pop_back();
  return comm;
}

std::vector<pid_t> ChildrenOf(pid_t parent) {
  std::vector<pid_t> out;
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    const std::string name = entry.path().filename().string();
    if (name.empty() || !std::all_of(name.begin(), name.end(), ::isdigit)) continue;
    const std::string stat = ReadFileOrEmpty(entry.path() / "stat");
    size_t close = stat.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream rest(stat.substr(close + 1));
    std::string state;
    long ppid = 0;
    if (rest >> state >> ppid && ppid == parent) out.push_back(std::stoi(name));
  }
  std::sort(out.begin(), out.end());
  return out;
}

namespace {
TestChild::Options WithOneShortLivedWorker() {
  TestChild::Options o;
  o.workers = {{"/bin/true"}};
  return o;
}
}  // namespace

ZombieParent::ZombieParent(double timeout_s)
    : parent_({"/bin/sleep", "300"}, WithOneShortLivedWorker()) {
  if (parent_.pid() <= 0) return;
  WaitUntil(
      [&] {
        const std::vector<pid_t> children = ChildrenOf(parent_.pid());
        if (children.size() != 1 || ProcessStateOf(children[0]) != 'Z' ||
            CommOf(parent_.pid()) != "sleep") {
          return false;
        }
        zombie_ = children[0];
        return true;
      },
      timeout_s);
}

}  // namespace gw::test
