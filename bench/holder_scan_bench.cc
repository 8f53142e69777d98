// holder_scan_bench: gpuwarden's device-holder scan against `fuser -v`, on a
// host with thousands of real processes.
//
// It creates "device" files (nvidia0..7, nvidiactl, nvidia-uvm, and one
// non-matching file) in a temporary directory, forks N children (default
// 2500) that each open some of them (a quarter open none) and pause, then in
// the same run times:
//   - ProcReader::ScanDeviceHolders over /proc (fds only, and fds + maps),
//   - `fuser -v <the ten device files>` (output discarded),
// taking turns, each as the median wall and CPU time of R runs (default 15).
// Both must find exactly the holder set the children were told to create, or
// the run fails (exit status 1). It also
// times ProcReader::ReadProcess over 64 of the children (a status probe's
// per-process cost). All children are killed before it exits.
//
// Usage: holder_scan_bench [--procs=N] [--runs=R] [--fuser=PATH]
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "core/clock.h"
#include "proc/proc_reader.h"

extern char** environ;

namespace {

using Clock = std::chrono::steady_clock;

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

double MsSince(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

double TimevalMs(const timeval& tv) {
  return static_cast<double>(tv.tv_sec) * 1000 + static_cast<double>(tv.tv_usec) / 1000;
}

// CPU time (user + system) of the calling thread.
double ThreadCpuMs() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1000 + static_cast<double>(ts.tv_nsec) / 1e6;
}

void RaiseLimit(int resource, rlim_t want) {
  rlimit lim;
  if (getrlimit(resource, &lim) != 0) return;
  if (lim.rlim_cur != RLIM_INFINITY && lim.rlim_cur < want) {
    lim.rlim_cur = std::min(want, lim.rlim_max);
    setrlimit(resource, &lim);
  }
}

// Runs argv with stdout captured (when out != nullptr) or discarded, stderr
// discarded; *cpu_ms (when given) gets its user + system time. Returns the
// exit status, or -1 when it could not start.
int Run(const std::vector<std::string>& argv, std::string* out, double* cpu_ms) {
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  int fds[2] = {-1, -1};
  if (out != nullptr && pipe2(fds, O_CLOEXEC) != 0) return -1;
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
  if (out != nullptr) {
    posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
  } else {
    posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
  }
  pid_t pid;
  int rc = posix_spawnp(&pid, args[0], &fa, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  if (out != nullptr) {
    close(fds[1]);
    if (rc == 0) {
      char buf[4096];
      ssize_t n;
      while ((n = read(fds[0], buf, sizeof buf)) > 0) out->append(buf, static_cast<size_t>(n));
    }
    close(fds[0]);
  }
  if (rc != 0) return -1;
  int status = 0;
  rusage ru{};
  while (wait4(pid, &status, 0, &ru) < 0 && errno == EINTR) {
  }
  if (cpu_ms != nullptr) *cpu_ms = TimevalMs(ru.ru_utime) + TimevalMs(ru.ru_stime);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

std::set<pid_t> PidsIn(const std::string& text) {
  std::set<pid_t> pids;
  for (size_t i = 0; i < text.size();) {
    if (text[i] >= '0' && text[i] <= '9') {
      size_t j = i;
      while (j < text.size() && text[j] >= '0' && text[j] <= '9') ++j;
      pids.insert(std::atoi(text.substr(i, j - i).c_str()));
      i = j;
    } else {
      ++i;
    }
  }
  return pids;
}

}  // namespace

int main(int argc, char** argv) {
  int procs = 2500;
  int runs = 15;
  std::string fuser = "fuser";
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a.starts_with("--procs=")) {
      procs = std::atoi(a.c_str() + 8);
    } else if (a.starts_with("--runs=")) {
      runs = std::atoi(a.c_str() + 7);
    } else if (a.starts_with("--fuser=")) {
      fuser = a.substr(8);
    } else {
      std::fprintf(stderr, "usage: %s [--procs=N] [--runs=R] [--fuser=PATH]\n", argv[0]);
      return 2;
    }
  }
  if (procs < 64 || runs < 1) {
    std::fprintf(stderr, "need --procs >= 64 and --runs >= 1\n");
    return 2;
  }
  RaiseLimit(RLIMIT_NPROC, static_cast<rlim_t>(procs) + 1024);
  RaiseLimit(RLIMIT_NOFILE, 4096);

  std::string dir_template =
      (std::filesystem::temp_directory_path() / "gw_holders_XXXXXX").string();
  if (mkdtemp(dir_template.data()) == nullptr) {
    std::perror("mkdtemp");
    return 1;
  }
  const std::string dir = dir_template;
  std::vector<std::string> devices;
  for (int i = 0; i < 8; ++i) devices.push_back(dir + "/nvidia" + std::to_string(i));
  devices.push_back(dir + "/nvidiactl");
  devices.push_back(dir + "/nvidia-uvm");
  const std::string other = dir + "/other";
  for (const std::string& path : devices) std::ofstream(path) << "x";
  std::ofstream(other) << "x";

  // What each child opens: most hold ctl + uvm + one GPU like a CUDA process,
  // some two GPUs, some also an unrelated file, a quarter nothing.
  std::vector<std::vector<std::string>> plan(static_cast<size_t>(procs));
  for (int i = 0; i < procs; ++i) {
    if (i % 4 == 0) continue;
    auto& p = plan[static_cast<size_t>(i)];
    p = {devices[8], devices[9], devices[static_cast<size_t>(i % 8)]};
    if (i % 3 == 0) p.push_back(devices[static_cast<size_t>((i + 1) % 8)]);
    if (i % 5 == 0) p.push_back(other);
  }

  std::printf("holder_scan_bench: %d children, %d runs each, device dir %s\n", procs, runs,
              dir.c_str());
  std::fflush(stdout);
  int ready[2];
  if (pipe(ready) != 0) {
    std::perror("pipe");
    return 1;
  }
  std::vector<pid_t> children;
  children.reserve(static_cast<size_t>(procs));
  const pid_t parent = getpid();
  auto t_fork = Clock::now();
  for (int i = 0; i < procs; ++i) {
    pid_t pid = fork();
    if (pid == 0) {
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (getppid() != parent) _exit(1);
      close(ready[0]);
      for (const std::string& path : plan[static_cast<size_t>(i)]) {
        if (open(path.c_str(), O_RDONLY) < 0) _exit(1);
      }
      close(ready[1]);  // The parent sees EOF once every child got here.
      for (;;) pause();
    }
    if (pid < 0) {
      std::perror("fork");
      break;
    }
    children.push_back(pid);
  }
  close(ready[1]);
  char c;
  while (read(ready[0], &c, 1) > 0) {
  }
  close(ready[0]);
  std::printf("started %zu children in %.0f ms\n", children.size(), MsSince(t_fork));

  int rc = 0;
  if (children.size() != static_cast<size_t>(procs)) rc = 1;

  std::map<pid_t, std::vector<std::string>> want;
  for (size_t i = 0; i < children.size(); ++i) {
    std::vector<std::string> held;
    for (const std::string& p : plan[i]) {
      if (p != other) held.push_back(p);
    }
    if (held.empty()) continue;
    std::sort(held.begin(), held.end());
    held.erase(std::unique(held.begin(), held.end()), held.end());
    want[children[i]] = held;
  }

  gw::proc::ProcReader reader;
  gw::proc::DeviceMatch match;
  match.dir = dir;
  gw::proc::DeviceMatch with_maps = match;
  with_maps.include_maps = true;

  // fuser: one run with stdout captured for the holder-set check; the timed
  // runs are `fuser -v` with all output discarded.
  std::vector<std::string> fuser_argv = {fuser};
  fuser_argv.insert(fuser_argv.end(), devices.begin(), devices.end());
  std::string fuser_out;
  const bool have_fuser = Run(fuser_argv, &fuser_out, nullptr) >= 0;
  std::set<pid_t> want_pids;
  for (const auto& [pid, paths] : want) want_pids.insert(pid);
  const bool fuser_same = have_fuser && PidsIn(fuser_out) == want_pids;
  if (!fuser_same) rc = 1;
  fuser_argv.insert(fuser_argv.begin() + 1, "-v");

  // The contenders take turns within each run, so a change in the load of a
  // shared machine hits all of them alike. Wall and CPU (user + system) time.
  std::vector<double> wall[3], cpu[3];
  bool exact[2] = {true, true};
  unsigned scanned = 0;
  for (int r = 0; r < runs; ++r) {
    for (int k = 0; k < 2; ++k) {
      gw::proc::HolderScanStats stats;
      const double c0 = ThreadCpuMs();
      auto t0 = Clock::now();
      gw::Result<gw::proc::HolderMap> h = reader.ScanDeviceHolders(k ? with_maps : match, &stats);
      wall[k].push_back(MsSince(t0));
      cpu[k].push_back(ThreadCpuMs() - c0);
      exact[k] = exact[k] && h.ok() && *h == want;
      scanned = stats.processes;
    }
    if (have_fuser) {
      double child_cpu = 0;
      auto t0 = Clock::now();
      Run(fuser_argv, nullptr, &child_cpu);
      wall[2].push_back(MsSince(t0));
      cpu[2].push_back(child_cpu);
    }
  }
  const char* labels[3] = {"gpuwarden scan (fds)     ", "gpuwarden scan (fds+maps)",
                           "fuser -v                 "};
  for (int k = 0; k < 3; ++k) {
    if (wall[k].empty()) continue;
    const char* check =
        k < 2 ? (exact[k] ? "exact" : "WRONG") : (fuser_same ? "same" : "DIFFERENT");
    std::printf("%s: median %8.2f ms wall, %8.2f ms CPU over %d runs; holders %s\n", labels[k],
                Median(wall[k]), Median(cpu[k]), runs, check);
  }
  std::printf("processes on the host: %u; holders: %zu\n", scanned, want.size());
  if (!exact[0] || !exact[1]) rc = 1;
  if (have_fuser) {
    std::printf(
        "speed-up over fuser -v: %.1fx wall, %.1fx CPU (fds); %.1fx wall, %.1fx CPU "
        "(fds+maps)\n",
        Median(wall[2]) / Median(wall[0]), Median(cpu[2]) / Median(cpu[0]),
        Median(wall[2]) / Median(wall[1]), Median(cpu[2]) / Median(cpu[1]));
  } else {
    std::printf("fuser: could not run %s\n", fuser.c_str());
  }

  // ReadProcess over 64 of the children, with a fresh reader each run (as a
  // probe would have), so the user-name lookup is included.
  std::vector<double> read_wall, read_cpu;
  gw::RealClock clock;
  for (int r = 0; r < runs; ++r) {
    gw::proc::ProcReader fresh;
    const double c0 = ThreadCpuMs();
    auto t0 = Clock::now();
    int ok = 0;
    for (size_t i = 0; i < 64; ++i) ok += fresh.ReadProcess(children[i], clock.NowUnixMs()).ok();
    read_wall.push_back(MsSince(t0));
    read_cpu.push_back(ThreadCpuMs() - c0);
    if (ok != 64) rc = 1;
  }
  std::printf("ReadProcess x64: median %.2f ms wall (%.1f us per process), %.2f ms CPU\n",
              Median(read_wall), Median(read_wall) * 1000 / 64, Median(read_cpu));

  for (pid_t pid : children) kill(pid, SIGKILL);
  for (pid_t pid : children) {
    while (waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
    }
  }
  std::filesystem::remove_all(dir);
  std::printf("%s\n", rc == 0 ? "OK" : "FAILED");
  return rc;
}
