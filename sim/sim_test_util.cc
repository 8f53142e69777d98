#include "sim_test_util.h"
#include "test_paths.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

extern char** environ;

namespace gw::sim::test {

namespace fs = std::filesystem;

double UnixNow() {
  using namespace std::chrono;
  return duration<double>(system_clock::now().time_since_epoch()).count();
}

RunResult RunProgram(const std::vector<std::string>& argv,
                     const std::map<std::string, std::string>& set,
                     const std::vector<std::string>& unset, double timeout_s) {
  RunResult result;
  std::vector<std::string> env_strings;
  for (char** e = environ; *e != nullptr; ++e) {
    std::string entry = *e;
    std::string name = entry.substr(0, entry.find('='));
    if (set.count(name) != 0) continue;
    if (std::find(unset.begin(), unset.end(), name) != unset.end()) continue;
    env_strings.push_back(entry);
  }
  for (const auto& [name, value] : set) env_strings.push_back(name + "=" + value);
  std::vector<char*> envp;
  for (auto& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::vector<std::string> args = argv;
  std::vector<char*> argp;
  for (auto& a : args) argp.push_back(a.data());
  argp.push_back(nullptr);

  int out_pipe[2];
  int err_pipe[2];
  if (pipe2(out_pipe, O_CLOEXEC) != 0 || pipe2(err_pipe, O_CLOEXEC) != 0) return result;
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, out_pipe[1], STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, err_pipe[1], STDERR_FILENO);
  pid_t pid = -1;
  int rc = posix_spawn(&pid, argp[0], &actions, nullptr, argp.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  close(out_pipe[1]);
  close(err_pipe[1]);
  if (rc != 0) {
    close(out_pipe[0]);
    close(err_pipe[0]);
    result.err = std::string("spawn failed: ") + std::strerror(rc);
    return result;
  }

  auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  pollfd fds[2] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}};
  std::string* sinks[2] = {&result.out, &result.err};
  int open_fds = 2;
  while (open_fds > 0) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                    deadline - std::chrono::steady_clock::now())
                    .count();
    if (left <= 0) {
      result.timed_out = true;
      kill(pid, SIGKILL);
      break;
    }
    int n = poll(fds, 2, static_cast<int>(std::min<long long>(left, 1000)));
    if (n < 0 && errno == EINTR) continue;
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || (fds[i].revents & (POLLIN | POLLHUP | POLLERR)) == 0) continue;
      char buf[65536];
      ssize_t got = read(fds[i].fd, buf, sizeof buf);
      if (got > 0) {
        sinks[i]->append(buf, static_cast<size_t>(got));
      } else {
        close(fds[i].fd);
        fds[i].fd = -1;
        --open_fds;
      }
    }
  }
  for (auto& f : fds) {
    if (f.fd >= 0) close(f.fd);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  if (!result.timed_out && WIFEXITED(status)) result.exit_code = WEXITSTATUS(status);
  return result;
}

std::map<std::string, std::string> ParseKeyValues(const std::string& text,
                                                  std::vector<std::string>* duplicates) {
  std::map<std::string, std::string> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    auto eq = line.find('=');
    if (eq == std::string::npos) continue;
    std::string key = line.substr(0, eq);
    if (!out.emplace(key, line.substr(eq + 1)).second && duplicates != nullptr) {
      duplicates->push_back(key);
    }
  }
  return out;
}

// Where sim/CMakeLists.txt puts them: the libraries in GW_SIM_DIR (the build
// tree's sim/), the client in this directory's build folder, which is the same.
std::string SimLibrary() { return gw::test::BinaryDir() + "/sim/libnvidia-ml.so.1"; }
std::string LegacySimLibrary() { return gw::test::BinaryDir() + "/sim/legacy/libnvidia-ml.so.1"; }
std::string SimClient() { return gw::test::BinaryDir() + "/sim/gw_nvml_client"; }

std::vector<std::string> ShippedScenarios() {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(fs::path(gw::test::SourceDir()) / "scenarios")) {
    if (e.path().extension() == ".json") out.push_back(e.path().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

namespace {

// This process's scratch directory, removed at exit.
struct TempDir {
  fs::path path;
  TempDir() {
    const char* tmp = std::getenv("TEST_TMPDIR");
    path = fs::path(tmp != nullptr ? tmp : fs::temp_directory_path().string()) /
           ("gw-sim-test-" + std::to_string(getpid()));
    fs::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

}  // namespace

std::string WriteTempFile(const std::string& name, const std::string& text) {
  static TempDir dir;
  fs::path path = dir.path / name;
  std::ofstream(path, std::ios::binary) << text;
  return path.string();
}

}  // namespace gw::sim::test
