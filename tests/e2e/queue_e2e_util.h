// Helpers for the queue's end-to-end tests: a real gpuwardend on the
// simulator in a temporary directory of its own, its clients (the real
// gpuwarden binary, or a raw connection to the socket), and a clean-up that
// leaves no job process behind.
#ifndef GPUWARDEN_TESTS_E2E_QUEUE_E2E_UTIL_H_
#define GPUWARDEN_TESTS_E2E_QUEUE_E2E_UTIL_H_

#include <dirent.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <map>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <iterator>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "e2e/e2e_util.h"
#include "e2e/run_process.h"
#include "e2e/user_process.h"
#include "test_paths.h"

namespace gw::test {

// Generous: two slow cores shared with other tests, and the suite also runs
// under AddressSanitizer.
inline constexpr double kQueueWaitS = 90;

// gpuwarden's exit code for "the daemon could not store the request" (the
// shared contract's client table; cli/exit_codes.h kExitStorageRefused),
// written here as the documentation gives it, not read from the code.
inline constexpr int kExitStorageRefused = 18;

inline std::string DaemonBinary() { return gw::test::BinaryDir() + "/gpuwardend"; }

inline double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// A client run as a failure message shows it.
inline std::string Trace(const RunResult& r) {
  return "exit " + std::to_string(r.exit_code) + (r.timed_out ? " (timed out)" : "") +
         "\nstdout:\n" + r.out + "\nstderr:\n" + r.err;
}

// Polls `condition` every 50 ms until it holds (true) or timeout_s passes.
inline bool Eventually(const std::function<bool()>& condition, double timeout_s = kQueueWaitS) {
  const auto start = std::chrono::steady_clock::now();
  while (!condition()) {
    if (SecondsSince(start) > timeout_s) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return true;
}

// "a\0b\0" -> {"a", "b"} (/proc/PID/cmdline and environ).
inline std::vector<std::string> SplitNul(const std::string& text) {
  std::vector<std::string> out;
  for (size_t at = 0; at < text.size();) {
    size_t z = text.find('\0', at);
    if (z == std::string::npos) z = text.size();
    out.push_back(text.substr(at, z - at));
    at = z + 1;
  }
  return out;
}

// One connection to a daemon's socket, speaking the protocol line by line.
class RawConnection {
 public:
  // Connects; nullptr when nobody accepts.
  static std::unique_ptr<RawConnection> Open(const std::string& socket_path) {
    const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return nullptr;
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    if (socket_path.size() >= sizeof addr.sun_path) {
      close(fd);
      return nullptr;
    }
    std::memcpy(addr.sun_path, socket_path.c_str(), socket_path.size() + 1);
    if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
      close(fd);
      return nullptr;
    }
    return std::unique_ptr<RawConnection>(new RawConnection(fd));
  }
  ~RawConnection() {
    if (fd_ >= 0) close(fd_);
  }
  RawConnection(const RawConnection&) = delete;
  RawConnection& operator=(const RawConnection&) = delete;

  // Writes all of `bytes`; false when the daemon closed the connection.
  bool Send(const std::string& bytes) {
    size_t done = 0;
    while (done < bytes.size()) {
      const ssize_t n = send(fd_, bytes.data() + done, bytes.size() - done, MSG_NOSIGNAL);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return false;
      done += static_cast<size_t>(n);
    }
    return true;
  }

  // The next line without its '\n'; nullopt at EOF (closed() is then true)
  // or after timeout_s.
  std::optional<std::string> ReadLine(double timeout_s) {
    const auto start = std::chrono::steady_clock::now();
    for (;;) {
      const size_t nl = buffer_.find('\n');
      if (nl != std::string::npos) {
        std::string line = buffer_.substr(0, nl);
        buffer_.erase(0, nl + 1);
        return line;
      }
      if (closed_) return std::nullopt;
      const double left = timeout_s - SecondsSince(start);
      if (left <= 0) return std::nullopt;
      pollfd p{fd_, POLLIN, 0};
      const int r = poll(&p, 1, static_cast<int>(left * 1000) + 1);
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0) continue;
      char buf[65536];
      const ssize_t n = read(fd_, buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        closed_ = true;
        continue;
      }
      buffer_.append(buf, static_cast<size_t>(n));
    }
  }

  // Sends `request` as one line and parses the reply line; nullopt when no
  // reply came or it is not JSON.
  std::optional<nlohmann::json> Call(const nlohmann::json& request, double timeout_s = 30) {
    if (!Send(request.dump() + "\n")) return std::nullopt;
    std::optional<std::string> line = ReadLine(timeout_s);
    if (!line) return std::nullopt;
    nlohmann::json reply = nlohmann::json::parse(*line, nullptr, false);
    if (reply.is_discarded()) return std::nullopt;
    return reply;
  }

  // Reads (and drops) until the daemon closes the connection: true, or
  // timeout_s passes: false.
  bool WaitClosed(double timeout_s) {
    const auto start = std::chrono::steady_clock::now();
    while (!closed_ && SecondsSince(start) < timeout_s) {
      (void)ReadLine(timeout_s - SecondsSince(start));
      buffer_.clear();
    }
    return closed_;
  }
  bool closed() const { return closed_; }

 private:
  explicit RawConnection(int fd) : fd_(fd) {}
  int fd_ = -1;
  bool closed_ = false;
  std::string buffer_;
};

// A job's state, "" when absent.
inline std::string StateOf(const nlohmann::json& job) {
  return job.is_object() && job.contains("state") && job["state"].is_string()
             ? job["state"].get<std::string>()
             : "";
}

// A job's state is final.
inline bool IsEnded(const nlohmann::json& job) {
  const std::string s = StateOf(job);
  return s == "succeeded" || s == "failed" || s == "cancelled" || s == "lost";
}

inline bool IsRunningState(const nlohmann::json& job) {
  const std::string s = StateOf(job);
  return s == "running" || s == "starting";
}

// The spec a client would send for `argv`: the test's working directory
// and the environment a child started with `options` gets.
inline nlohmann::json SpecFor(const std::vector<std::string>& argv, const RunOptions& options) {
  char cwd[4096];
  nlohmann::json spec = {{"argv", argv},
                         {"cwd", getcwd(cwd, sizeof cwd) != nullptr ? cwd : "/"},
                         {"env", ChildEnvironment(options)}};
  return spec;
}

// A gpuwardend serving a scenario from a temporary directory DIR:
//   DIR/s.sock  the socket        DIR/state  its state directory
//   DIR/reg     the simulator's process registry (GPUWARDEN_SIM_PROCESS_DIR), mode 1777
//   DIR/mark    where the tests' jobs leave their traces, mode 1777
//   DIR/daemon.log  what every run of the daemon printed
// DIR itself is 0755, so that other users can reach the socket. Clients get
// REG=DIR/reg, MARK=DIR/mark and a marker variable in their environment,
// which their jobs inherit: KillLeftovers() (and the destructor) finds every
// job process by it, and every supervisor by its command line, and kills it.
class QueueServer {
 public:
  explicit QueueServer(std::string scenario) : scenario_(std::move(scenario)) {
    chmod(dir().c_str(), 0755);
    for (const std::string& d : {reg(), mark()}) {
      mkdir(d.c_str(), 0777);
      chmod(d.c_str(), 01777);
    }
  }
  ~QueueServer() {
    if (pid_ > 0) Stop();
    KillLeftovers();
  }
  QueueServer(const QueueServer&) = delete;
  QueueServer& operator=(const QueueServer&) = delete;

  const std::string& dir() const { return dir_.path(); }
  std::string socket() const { return dir() + "/s.sock"; }
  std::string state_dir() const { return dir() + "/state"; }
  std::string reg() const { return dir() + "/reg"; }
  std::string mark() const { return dir() + "/mark"; }
  std::string log_path() const { return dir() + "/daemon.log"; }
  std::string marker() const { return "GW_QUEUE_E2E_DIR=" + dir(); }
  pid_t pid() const { return pid_; }
  int starts() const { return starts_; }
  // Set in the daemon's environment at its next Start (e.g.
  // GPUWARDEN_SIM_BLOCK_SCALE).
  std::map<std::string, std::string> extra_env;

  // Starts gpuwardend (as the test's user) and waits until it answers
  // `hello`, or with answering false only until its socket exists. On
  // failure the message holds the daemon's log.
  ::testing::AssertionResult Start(bool answering = true) {
    if (pid_ > 0) return ::testing::AssertionFailure() << "already running";
    RunOptions o;
    for (const auto& [k, v] : extra_env) o.env[k] = v;
    o.env["GPUWARDEN_SIM_PROCESS_DIR"] = reg();
    o.env["GPUWARDEN_SIM_START"] = NowSecondsString();
    o.env["GPUWARDEN_NVML_LIB"] = std::nullopt;
    o.env["GPUWARDEN_SIM_SCENARIO"] = std::nullopt;
    o.env["GPUWARDEN_SOCKET"] = std::nullopt;
    o.env["CUDA_VISIBLE_DEVICES"] = std::nullopt;
    const std::vector<std::string> argv = {DaemonBinary(),          "--socket",  socket(),
                                           "--state-dir",           state_dir(), "--sim",
                                           ScenarioPath(scenario_), "--poll-ms", "20"};
    std::vector<std::string> env = ChildEnvironment(o);
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    std::vector<char*> envp;
    for (const auto& e : env) envp.push_back(const_cast<char*>(e.c_str()));
    envp.push_back(nullptr);
    const int log = open(log_path().c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (log < 0) return ::testing::AssertionFailure() << "cannot open " << log_path();
    ++starts_;
    const std::string banner = "--- start " + std::to_string(starts_) + "\n";
    (void)!write(log, banner.data(), banner.size());
    pid_ = fork();
    if (pid_ == 0) {
      setpgid(0, 0);
      const int in = open("/dev/null", O_RDONLY);
      if (in < 0 || dup2(in, 0) < 0 || dup2(log, 1) < 0 || dup2(log, 2) < 0) _exit(127);
      execve(args[0], args.data(), envp.data());
      _exit(127);
    }
    close(log);
    if (pid_ < 0) return ::testing::AssertionFailure() << "fork failed";
    setpgid(pid_, pid_);
    const auto start = std::chrono::steady_clock::now();
    while (SecondsSince(start) < kQueueWaitS) {
      if (!Alive()) {
        pid_ = -1;
        return ::testing::AssertionFailure() << "gpuwardend exited at start:\n" << Log();
      }
      if (!answering && access(socket().c_str(), F_OK) == 0) {
        return ::testing::AssertionSuccess();
      }
      if (auto c = answering ? RawConnection::Open(socket()) : nullptr) {
        std::optional<nlohmann::json> r = c->Call({{"v", 1}, {"op", "hello"}}, 10);
        if (r && r->value("ok", false)) return ::testing::AssertionSuccess();
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return ::testing::AssertionFailure()
           << "gpuwardend did not answer within " << kQueueWaitS << " s:\n"
           << Log();
  }

  // SIGKILL, reaped.
  void Kill() {
    if (pid_ <= 0) return;
    kill(pid_, SIGKILL);
    Reap(true);
  }

  // SIGTERM and wait for it (SIGKILL after 30 s); its exit status (128 +
  // signal when a signal ended it), nullopt when it was not running.
  std::optional<int> Stop() {
    if (pid_ <= 0) return std::nullopt;
    if (!Alive()) return last_status_;
    kill(pid_, SIGTERM);
    const auto start = std::chrono::steady_clock::now();
    while (Alive() && SecondsSince(start) < 30) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    if (Alive()) {
      kill(pid_, SIGKILL);
      Reap(true);
    }
    return last_status_;
  }

  // Runs and has not exited (it is the test's child: reaped once it ended).
  bool Alive() {
    if (pid_ <= 0) return false;
    return !Reap(false);
  }
  std::optional<int> last_status() const { return last_status_; }

  std::string Log() const { return ReadFileOrEmpty(log_path()); }

  // Options for a client: the test's environment with REG, MARK and the
  // marker; GPUWARDEN_SOCKET and CUDA_* removed.
  RunOptions ClientOptions() const {
    RunOptions o;
    o.timeout_s = kQueueWaitS;
    o.env["REG"] = reg();
    o.env["MARK"] = mark();
    o.env["GW_QUEUE_E2E_DIR"] = dir();
    o.env["GPUWARDEN_SOCKET"] = std::nullopt;
    o.env["CUDA_VISIBLE_DEVICES"] = std::nullopt;
    o.env["CUDA_DEVICE_ORDER"] = std::nullopt;
    o.env["GPUWARDEN_JOB_ID"] = std::nullopt;
    return o;
  }

  // gpuwarden --socket DIR/s.sock ARGS...
  RunResult Gw(const std::vector<std::string>& args) const { return Gw(args, ClientOptions()); }
  RunResult Gw(const std::vector<std::string>& args, const RunOptions& options) const {
    std::vector<std::string> argv = {GpuwardenBinary(), "--socket", socket()};
    argv.insert(argv.end(), args.begin(), args.end());
    return RunProcess(argv, options);
  }

  // gpuwarden --socket S run --detach RUN_ARGS...: the job id, or nullopt
  // (with a failure recorded that shows the client's output).
  std::optional<int64_t> Submit(const std::vector<std::string>& run_args) const {
    return Submit(run_args, ClientOptions());
  }
  std::optional<int64_t> Submit(const std::vector<std::string>& run_args,
                                const RunOptions& options) const {
    std::vector<std::string> args = {"run", "--detach"};
    args.insert(args.end(), run_args.begin(), run_args.end());
    RunResult r = Gw(args, options);
    char* end = nullptr;
    const long long id = std::strtoll(r.out.c_str(), &end, 10);
    if (r.exit_code != 0 || id <= 0 || end == r.out.c_str()) {
      ADD_FAILURE() << "submit failed: exit " << r.exit_code << "\nstdout: " << r.out
                    << "\nstderr: " << r.err;
      return std::nullopt;
    }
    return id;
  }

  // A raw request on a fresh connection (as the test's user).
  std::optional<nlohmann::json> Call(const nlohmann::json& request, double timeout_s = 30) const {
    auto c = RawConnection::Open(socket());
    if (!c) return std::nullopt;
    nlohmann::json req = request;
    if (!req.contains("v")) req["v"] = 1;
    return c->Call(req, timeout_s);
  }

  // A raw submit of `argv` without a GPU (after job `after` when set); the
  // reply, nullopt when there is none.
  std::optional<nlohmann::json> RawSubmit(const std::vector<std::string>& argv,
                                          std::optional<int64_t> after = std::nullopt) const {
    nlohmann::json spec = SpecFor(argv, ClientOptions());
    spec["gpus"] = 0;
    if (after) spec["after"] = {*after};
    return Call({{"op", "submit"}, {"spec", spec}});
  }
  // The `queue` reply's "degraded" array, or null when there is no answer.
  nlohmann::json Degraded() const {
    std::optional<nlohmann::json> r = Call({{"op", "queue"}});
    if (!r || !r->contains("degraded")) return nullptr;
    return (*r)["degraded"];
  }

  // The `job` op's JOB, or null when there is no answer.
  nlohmann::json Job(int64_t id) const {
    std::optional<nlohmann::json> r = Call({{"op", "job"}, {"job", id}});
    if (!r || !r->value("ok", false) || !r->contains("job")) return nullptr;
    return (*r)["job"];
  }

  // Every job (`jobs` op), or null when there is no answer.
  nlohmann::json Jobs() const {
    std::optional<nlohmann::json> r = Call({{"op", "jobs"}});
    if (!r || !r->value("ok", false) || !r->contains("jobs")) return nullptr;
    return (*r)["jobs"];
  }

  // Polls Job(id) every 50 ms until `done` holds for it; returns the last
  // JOB seen (the caller asserts on it).
  nlohmann::json WaitForJob(int64_t id, const std::function<bool(const nlohmann::json&)>& done,
                            double timeout_s = kQueueWaitS) const {
    const auto start = std::chrono::steady_clock::now();
    nlohmann::json last;
    for (;;) {
      last = Job(id);
      if (!last.is_null() && done(last)) return last;
      if (SecondsSince(start) > timeout_s) return last;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }
  nlohmann::json WaitForEnd(int64_t id, double timeout_s = kQueueWaitS) const {
    return WaitForJob(id, IsEnded, timeout_s);
  }
  nlohmann::json WaitForState(int64_t id, const std::string& state,
                              double timeout_s = kQueueWaitS) const {
    return WaitForJob(
        id, [&](const nlohmann::json& j) { return StateOf(j) == state || IsEnded(j); }, timeout_s);
  }

  // Kills every process of this server's jobs (found by the marker in their
  // environment) and supervisors (found by the state directory on their
  // command line), a few rounds, until none is left.
  void KillLeftovers() const {
    for (int round = 0; round < 20; ++round) {
      std::vector<pid_t> found = Leftovers();
      if (found.empty()) return;
      for (pid_t p : found) kill(p, SIGKILL);
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }

  // The live processes that KillLeftovers() would kill.
  std::vector<pid_t> Leftovers() const {
    std::vector<pid_t> out;
    const std::string env_marker = marker();
    const std::string state_prefix = state_dir() + "/";
    DIR* proc = opendir("/proc");
    if (proc == nullptr) return out;
    while (dirent* e = readdir(proc)) {
      char* end = nullptr;
      const long pid = std::strtol(e->d_name, &end, 10);
      if (pid <= 0 || *end != '\0' || pid == getpid()) continue;
      const std::string base = std::string("/proc/") + e->d_name;
      std::string stat = ReadFileOrEmpty(base + "/stat");
      const size_t paren = stat.rfind(')');
      if (paren == std::string::npos || paren + 2 >= stat.size() || stat[paren + 2] == 'Z') {
        continue;
      }
      bool ours = false;
      for (const std::string& arg : SplitNul(ReadFileOrEmpty(base + "/cmdline"))) {
        if (arg.rfind(state_prefix, 0) == 0) ours = true;
      }
      for (const std::string& var : SplitNul(ReadFileOrEmpty(base + "/environ"))) {
        if (var == env_marker) ours = true;
      }
      if (ours) out.push_back(static_cast<pid_t>(pid));
    }
    closedir(proc);
    return out;
  }

 private:
  // Reaps the daemon if it ended (blocking: waits for it); true once reaped.
  bool Reap(bool block) {
    if (pid_ <= 0) return true;
    int status = 0;
    pid_t r;
    do {
      r = waitpid(pid_, &status, block ? 0 : WNOHANG);
    } while (r < 0 && errno == EINTR);
    if (r == 0) return false;
    if (r == pid_) {
      last_status_ = WIFEXITED(status)     ? WEXITSTATUS(status)
                     : WIFSIGNALED(status) ? 128 + WTERMSIG(status)
                                           : -1;
    }
    pid_ = -1;
    return true;
  }

  std::string scenario_;
  TempDir dir_;
  pid_t pid_ = -1;
  int starts_ = 0;
  std::optional<int> last_status_;
};

}  // namespace gw::test

#endif  // GPUWARDEN_TESTS_E2E_QUEUE_E2E_UTIL_H_
