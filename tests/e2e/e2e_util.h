// Small helpers shared by the end-to-end tests.
#ifndef GPUWARDEN_TESTS_E2E_E2E_UTIL_H_
#define GPUWARDEN_TESTS_E2E_E2E_UTIL_H_

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "e2e/run_process.h"

namespace gw::test {

// A child process that lives until the object is destroyed (killed and reaped).
class ChildProcess {
 public:
  // argv[0] must be an absolute path; exec'd directly.
  explicit ChildProcess(const std::vector<std::string>& argv) {
    // Build argv before fork: only async-signal-safe calls may follow it.
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    pid_ = fork();
    if (pid_ == 0) {
      execv(args[0], args.data());
      _exit(127);
    }
  }
  ChildProcess() : ChildProcess({"/bin/sleep", "120"}) {}
  ~ChildProcess() {
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
  }
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;
  pid_t pid() const { return pid_; }

 private:
  pid_t pid_ = -1;
};

// A temporary directory removed with everything in it.
class TempDir {
 public:
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "gw-e2e-XXXXXX").string();
    path_ = mkdtemp(tmpl.data());
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }
  std::string Write(const std::string& name, const std::string& content) const {
    std::string p = path_ + "/" + name;
    std::ofstream(p, std::ios::binary) << content;
    return p;
  }

 private:
  std::string path_;
};

inline std::string NowSecondsString() {
  using namespace std::chrono;
  return std::to_string(duration<double>(system_clock::now().time_since_epoch()).count());
}

// Options for running gpuwarden against the simulator: the simulated library
// (GPUWARDEN_NVML_LIB unset: the build's), the simulation clock starting now,
// and no CUDA_VISIBLE_DEVICES / CUDA_DEVICE_ORDER from the test's environment.
inline RunOptions SimOptions() {
  RunOptions o;
  o.env["GPUWARDEN_NVML_LIB"] = std::nullopt;
  o.env["GPUWARDEN_SIM_START"] = NowSecondsString();
  o.env["CUDA_VISIBLE_DEVICES"] = std::nullopt;
  o.env["CUDA_DEVICE_ORDER"] = std::nullopt;
  return o;
}

inline std::vector<std::string> Gpuwarden(std::vector<std::string> args) {
  args.insert(args.begin(), GpuwardenBinary());
  return args;
}

inline size_t CountLines(const std::string& s) {
  size_t n = 0;
  for (char c : s) n += c == '\n';
  if (!s.empty() && s.back() != '\n') ++n;
  return n;
}

}  // namespace gw::test

#endif  // GPUWARDEN_TESTS_E2E_E2E_UTIL_H_
