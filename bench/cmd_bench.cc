// cmd_bench: times whole commands side by side, for benchmarks that compare
// gpuwarden with a peer tool in the same run.
//
//   cmd_bench [--runs N] [--warmup N] --name A -- cmd args ... [--name B -- cmd args ...]
//
// Each command is exec'd directly (no shell), stdout and stderr to /dev/null,
// the variants interleaved run by run so drift in machine load hits all of them
// alike. Prints per variant the median, min and max wall time in milliseconds
// and the exit codes seen, then the ratio of each variant's median to the first.
// Exits 1 if a command could not be started.
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <set>
#include <string>
#include <vector>

extern char** environ;

namespace {

struct Variant {
  std::string name;
  std::vector<std::string> argv;
  std::vector<double> ms;
  std::set<int> exit_codes;
};

int RunOnce(const std::vector<std::string>& argv, double* ms) {
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
  auto start = std::chrono::steady_clock::now();
  pid_t pid;
  int rc = posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) {
    std::fprintf(stderr, "cmd_bench: cannot start %s: %s\n", args[0], std::strerror(rc));
    return -1;
  }
  int status = 0;
  waitpid(pid, &status, 0);
  *ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

}  // namespace

int main(int argc, char** argv) {
  int runs = 20, warmup = 2;
  std::vector<Variant> variants;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--runs" && i + 1 < argc) {
      runs = std::atoi(argv[++i]);
    } else if (a == "--warmup" && i + 1 < argc) {
      warmup = std::atoi(argv[++i]);
    } else if (a == "--name" && i + 2 < argc && std::string(argv[i + 2]) == "--") {
      Variant v;
      v.name = argv[i + 1];
      i += 3;
      while (i < argc && std::string(argv[i]) != "--name") v.argv.push_back(argv[i++]);
      --i;
      variants.push_back(v);
    } else {
      std::fprintf(stderr, "usage: cmd_bench [--runs N] [--warmup N] --name A -- cmd ... \n");
      return 2;
    }
  }
  if (variants.empty() || runs < 1) {
    std::fprintf(stderr, "cmd_bench: nothing to run\n");
    return 2;
  }
  for (int r = 0; r < warmup + runs; ++r) {
    for (auto& v : variants) {
      double ms = 0;
      int code = RunOnce(v.argv, &ms);
      if (code < 0) return 1;
      if (r >= warmup) {
        v.ms.push_back(ms);
        v.exit_codes.insert(code);
      }
    }
  }
  const double base = Median(variants.front().ms);
  std::printf("%-28s %6s %10s %10s %10s %8s  %s\n", "command", "runs", "median_ms", "min_ms",
              "max_ms", "ratio", "exit codes");
  for (const auto& v : variants) {
    std::string codes;
    for (int c : v.exit_codes) codes += std::to_string(c) + " ";
    const double med = Median(v.ms);
    std::printf("%-28s %6zu %10.2f %10.2f %10.2f %8.2f  %s\n", v.name.c_str(), v.ms.size(), med,
                *std::min_element(v.ms.begin(), v.ms.end()),
                *std::max_element(v.ms.begin(), v.ms.end()), med / base, codes.c_str());
  }
  return 0;
}
