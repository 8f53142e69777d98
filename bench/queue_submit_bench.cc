// queue_submit_bench: submit throughput and latency of the GPU queue, for
// bench/queue_bench.sh (docs/benchmarks.md, "The GPU queue against
// task-spooler").
//
//   queue_submit_bench spawn --count N --name A -- cmd args ... [--name B -- cmd args ...]
//     Runs each variant's command N times, each time a new process (as a user
//     submitting from a shell does), the variants interleaved submit by submit
//     (A, B, A, B, ...) so drift in machine load hits all of them alike. stdin,
//     stdout and stderr are /dev/null; only the process exec'd is waited for
//     (tsp forks a waiting client into the background and returns). Per variant:
//     the sum of the wall times ("total"), median, p99, max and failures.
//
//   queue_submit_bench protocol --socket PATH --count N [--window HH:MM-HH:MM]
//     One connection to gpuwardend, `hello`, then N `submit` requests back to
//     back, each sent once the previous reply was read (the protocol's
//     rule). Each job is `/bin/true`, no GPU, this process's environment and
//     working directory, as `gpuwarden run` sends them; with --window the jobs
//     wait for that window instead of starting. Prints total, rate, median,
//     p99 and max.
//
//   queue_submit_bench states --socket PATH
//     How many jobs the daemon has in each state (`jobs`, all of them). Reads
//     the reply without the clients' 1 MiB line limit: a thousand jobs with
//     their environments are more than that.
//
// Every output line starts with the mode and is `key=value` separated, for
// the script to collect. Exits 1 when a command could not be started or a
// submit was refused.
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "queue/job.h"
#include "queue/protocol.h"

extern char** environ;

namespace {

using Clock = std::chrono::steady_clock;

double Ms(Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

struct Stats {
  double total = 0, median = 0, p99 = 0, max = 0;
};

// p99 by nearest rank: the smallest value at least 99 % of the samples
// are at or below.
Stats Summarise(std::vector<double> v) {
  Stats s;
  if (v.empty()) return s;
  for (double x : v) s.total += x;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  s.median = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
  s.p99 = v[static_cast<size_t>(std::ceil(0.99 * static_cast<double>(n))) - 1];
  s.max = v.back();
  return s;
}

struct Variant {
  std::string name;
  std::vector<std::string> argv;
  std::vector<double> ms;
  int failures = 0;
};

// Runs argv once; returns its exit status (128+signal), or -1 if it could
// not be started.
int RunOnce(const std::vector<std::string>& argv, double* ms) {
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
  const auto start = Clock::now();
  pid_t pid;
  const int rc = posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) {
    std::fprintf(stderr, "queue_submit_bench: cannot start %s: %s\n", args[0], std::strerror(rc));
    return -1;
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  *ms = Ms(Clock::now() - start);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

int Spawn(int argc, char** argv) {
  int count = 1000;
  std::vector<Variant> variants;
  for (int i = 2; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--count" && i + 1 < argc) {
      count = std::atoi(argv[++i]);
    } else if (a == "--name" && i + 2 < argc && std::string(argv[i + 2]) == "--") {
      Variant v;
      v.name = argv[i + 1];
      i += 3;
      while (i < argc && std::string(argv[i]) != "--name") v.argv.push_back(argv[i++]);
      --i;
      if (v.argv.empty()) {
        std::fprintf(stderr, "queue_submit_bench: variant %s has no command\n", v.name.c_str());
        return 2;
      }
      variants.push_back(std::move(v));
    } else {
      std::fprintf(stderr, "queue_submit_bench spawn: unexpected argument %s\n", a.c_str());
      return 2;
    }
  }
  if (variants.empty() || count < 1) {
    std::fprintf(
        stderr,
        "usage: queue_submit_bench spawn --count N --name A -- cmd ... [--name B -- cmd ...]\n");
    return 2;
  }
  for (int r = 0; r < count; ++r) {
    for (Variant& v : variants) {
      double ms = 0;
      const int code = RunOnce(v.argv, &ms);
      if (code < 0) return 1;
      if (code != 0) ++v.failures;
      v.ms.push_back(ms);
    }
  }
  for (const Variant& v : variants) {
    const Stats s = Summarise(v.ms);
    std::printf(
        "spawn name=%s n=%zu fail=%d total_ms=%.1f median_ms=%.3f p99_ms=%.3f max_ms=%.3f\n",
        v.name.c_str(), v.ms.size(), v.failures, s.total, s.median, s.p99, s.max);
  }
  return 0;
}

int Protocol(int argc, char** argv) {
  int count = 1000;
  std::string socket_path;
  std::string window;
  for (int i = 2; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--count" && i + 1 < argc) {
      count = std::atoi(argv[++i]);
    } else if (a == "--socket" && i + 1 < argc) {
      socket_path = argv[++i];
    } else if (a == "--window" && i + 1 < argc) {
      window = argv[++i];
    } else {
      std::fprintf(stderr, "queue_submit_bench protocol: unexpected argument %s\n", a.c_str());
      return 2;
    }
  }
  if (socket_path.empty() || count < 1) {
    std::fprintf(stderr,
                 "usage: queue_submit_bench protocol --socket PATH --count N [--window W]\n");
    return 2;
  }
  gw::queue::JobSpec spec;
  spec.argv = {"/bin/true"};
  char cwd[4096];
  spec.cwd = getcwd(cwd, sizeof cwd) != nullptr ? cwd : "/";
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) spec.env.emplace_back(*e);
  spec.gpus = 0;
  if (!window.empty()) {
    auto w = gw::queue::ParseTimeWindow(window);
    if (!w.ok()) {
      std::fprintf(stderr, "queue_submit_bench: --window: %s\n", w.error().message.c_str());
      return 2;
    }
    spec.window = *w;
  }
  nlohmann::json request = {
      {"v", gw::queue::kProtocolVersion}, {"op", "submit"}, {"spec", gw::queue::SpecToJson(spec)}};
  // The request is the same each time; serialising it is the client's cost,
  // so it is done for every submit as a client would.
  auto fd = gw::queue::ConnectToDaemon(socket_path);
  if (!fd.ok()) {
    std::fprintf(stderr, "queue_submit_bench: %s\n", fd.error().message.c_str());
    return 1;
  }
  std::string buffer;
  auto call = [&](const nlohmann::json& req, nlohmann::json* reply) -> bool {
    if (!gw::queue::WriteLine(*fd, req.dump()).ok()) return false;
    auto line = gw::queue::ReadLine(*fd, buffer);
    if (!line.ok()) return false;
    *reply = nlohmann::json::parse(*line, nullptr, false);
    return reply->is_object() && reply->value("ok", false);
  };
  nlohmann::json reply;
  if (!call({{"v", gw::queue::kProtocolVersion}, {"op", "hello"}}, &reply)) {
    std::fprintf(stderr, "queue_submit_bench: hello refused: %s\n", reply.dump().c_str());
    return 1;
  }
  std::vector<double> ms;
  ms.reserve(static_cast<size_t>(count));
  const auto start = Clock::now();
  for (int i = 0; i < count; ++i) {
    const auto t = Clock::now();
    if (!call(request, &reply)) {
      std::fprintf(stderr, "queue_submit_bench: submit %d refused: %s\n", i, reply.dump().c_str());
      return 1;
    }
    ms.push_back(Ms(Clock::now() - t));
  }
  const double wall = Ms(Clock::now() - start);
  close(*fd);
  const Stats s = Summarise(ms);
  std::printf(
      "protocol n=%d wall_ms=%.1f rate_per_s=%.0f median_ms=%.3f p99_ms=%.3f max_ms=%.3f "
      "last_job=%lld\n",
      count, wall, count / (wall / 1000.0), s.median, s.p99, s.max,
      static_cast<long long>(reply.value("job", int64_t{0})));
  return 0;
}

int States(int argc, char** argv) {
  std::string socket_path;
  for (int i = 2; i < argc; ++i) {
    if (std::string(argv[i]) == "--socket" && i + 1 < argc) socket_path = argv[++i];
  }
  auto fd = gw::queue::ConnectToDaemon(socket_path);
  if (!fd.ok()) {
    std::fprintf(stderr, "queue_submit_bench: %s\n", fd.error().message.c_str());
    return 1;
  }
  const nlohmann::json req = {{"v", gw::queue::kProtocolVersion}, {"op", "jobs"}};
  if (!gw::queue::WriteLine(*fd, req.dump()).ok()) return 1;
  std::string line;
  char buf[65536];
  for (;;) {
    const ssize_t n = read(*fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    line.append(buf, static_cast<size_t>(n));
    if (line.find('\n') != std::string::npos) break;
  }
  close(*fd);
  const nlohmann::json reply = nlohmann::json::parse(line, nullptr, false);
  if (!reply.is_object() || !reply.value("ok", false) || !reply["jobs"].is_array()) {
    std::fprintf(stderr, "queue_submit_bench: jobs refused\n");
    return 1;
  }
  std::map<std::string, int> counts;
  for (const auto& j : reply["jobs"]) counts[j.value("state", "?")]++;
  std::printf("states jobs=%zu", reply["jobs"].size());
  for (const auto& [state, n] : counts) std::printf(" %s=%d", state.c_str(), n);
  std::printf("\n");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  if (mode == "spawn") return Spawn(argc, argv);
  if (mode == "protocol") return Protocol(argc, argv);
  if (mode == "states") return States(argc, argv);
  std::fprintf(
      stderr,
      "usage: queue_submit_bench spawn --count N --name A -- cmd ... [--name B -- cmd ...]\n"
      "       queue_submit_bench protocol --socket PATH --count N [--window HH:MM-HH:MM]\n"
      "       queue_submit_bench states --socket PATH\n");
  return 2;
}
