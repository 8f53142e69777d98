// fleet_look_bench: where one of gpuwardend's 1-Hz full looks spends its CPU
// (issue 15, docs/benchmarks.md section 9), part by part, with the daemon's
// own code: the look (collect::Collect through a kept nvml::ProbeSession, as
// the Snapshotter does), and what the daemon does with it (OnLook: the
// diagnosis over the last 8 full looks, the 1-s history point, the snapshot
// copies), and what one scrape of /metrics costs (RenderMetrics). Some parts
// are not the daemon's path, for comparison: Collect's full and light looks
// (what `gpuwarden status` does), the stat files of the listed processes read
// alone (opened each time or kept open), and the cached look with every stat
// read at every look.
//
//   fleet_look_bench SIM_LIBRARY SCENARIO [REPS]
//
// Run by bench/fleet_profile.sh, which starts the 256 real processes that
// scenarios/bench-8gpu-256proc.json reads from $GW_BENCH_PID_n. CPU is the
// process's CPU time (CLOCK_PROCESS_CPUTIME_ID: every thread, the look's
// helper threads too); each part runs REPS times, 50 ms apart (a daemon's
// caches are not hot a second later either); medians.
#include <fcntl.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "collect/cached_collector.h"
#include "collect/collector.h"
#include "core/clock.h"
#include "diagnose/verdict.h"
#include "fleet/fleet_view.h"
#include "fleet/history.h"
#include "fleet/history_point.h"
#include "fleet/history_store.h"
#include "fleet/metrics.h"
#include "nvml/probe.h"
#include "proc/proc_parse.h"
#include "proc/proc_reader.h"

namespace {

using namespace gw;  // NOLINT

double CpuMs() {
  timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) / 1e6;
}

double WallMs() {
  return std::chrono::duration<double, std::milli>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

struct Part {
  std::string name;
  std::vector<double> cpu, wall;
};

void Measure(Part& part, int reps, const std::function<void()>& fn) {
  for (int i = 0; i < reps; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    const double c0 = CpuMs();
    const double w0 = WallMs();
    fn();
    part.wall.push_back(WallMs() - w0);
    part.cpu.push_back(CpuMs() - c0);
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: fleet_look_bench SIM_LIBRARY SCENARIO [REPS]\n");
    return 2;
  }
  const int reps = argc > 3 ? std::max(1, std::atoi(argv[3])) : 20;
  setenv("GPUWARDEN_SIM_SCENARIO", argv[2], 1);
  collect::CollectOptions options;
  options.nvml_library = argv[1];
  options.simulated = true;
  options.scenario = argv[2];
  RealClock clock;
  nvml::ProbeSession session(collect::NvmlProbeOptions(options));
  options.nvml_session = &session;

  // Warm up: NVML loaded and initialised, the scenario parsed.
  Snapshot first = collect::Collect(options, clock);
  std::set<pid_t> listed;
  for (const Gpu& g : first.gpus) {
    for (const GpuProcess& p : g.processes) listed.insert(p.pid);
  }
  std::printf(
      "a look: %zu GPUs, %zu driver-listed processes, %zu with /proc facts, "
      "%zu errors\n",
      first.gpus.size(), listed.size(), first.processes.size(), first.errors.size());
  for (const ProbeError& e : first.errors) {
    std::printf("  (%s %s: %s)\n", e.source.c_str(), e.code.c_str(), e.message.c_str());
  }

  std::vector<Part> parts;
  auto part = [&](const char* name) -> Part& {
    parts.push_back({name, {}, {}});
    return parts.back();
  };

  std::vector<Snapshot> judged;
  Measure(part("full look (Collect, holder scan)"), reps, [&] {
    options.scan_device_files = true;
    judged.push_back(collect::Collect(options, clock));
    if (judged.size() > 8) judged.erase(judged.begin());
  });
  Measure(part("  NVML through the session (sim)"), reps, [&] { (void)session.Probe(clock); });
  Measure(part("  device-file holder scan"), reps, [&] {
    proc::ProcReader reader(options.proc_root);
    proc::DeviceMatch match;
    match.exclude_pid = getpid();
    (void)reader.ScanDeviceHolders(match);
  });
  Measure(part("  /proc facts of the listed PIDs"), reps, [&] {
    proc::ProcReader reader(options.proc_root);
    proc::AncestorMemo ancestors;  // As a look reads them: shared parents once.
    const int64_t now = clock.NowUnixMs();
    for (pid_t pid : listed) (void)reader.ReadProcess(pid, now, &ancestors);
  });
  // What a cache of each process's lasting facts (user, command line, exe,
  // cgroup, parent, Slurm step: fixed for a PID's life) would leave a look to
  // read: its stat file (state, CPU time, memory), opened anew or kept open.
  Measure(part("  stat files alone, opened each time"), reps, [&] {
    proc::ProcReader reader(options.proc_root);
    for (pid_t pid : listed) (void)reader.ReadStat(pid);
  });
  std::vector<int> stat_fds;
  for (pid_t pid : listed) {
    const std::string path = "/proc/" + std::to_string(pid) + "/stat";
    const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd >= 0) stat_fds.push_back(fd);
  }
  Measure(part("  stat files alone, kept open (pread)"), reps, [&] {
    char buf[1024];
    for (int fd : stat_fds) {
      const ssize_t n = pread(fd, buf, sizeof buf, 0);
      if (n > 0) (void)proc::ParseStat(std::string_view(buf, static_cast<size_t>(n)));
    }
  });
  for (int fd : stat_fds) close(fd);
  Measure(part("light look (Collect, no holder scan)"), reps, [&] {
    options.scan_device_files = false;
    (void)collect::Collect(options, clock);
  });
  // The daemon's sampled look between holder scans: NVML, then the listed
  // processes through the cache (their lasting facts read once), each one's
  // stat at most every 10 s as gpuwardend reads them
  // (DaemonOptions::process_stat_every_ms); and, for comparison, every
  // process's stat at every look.
  for (const int64_t stat_every_ms : {int64_t{10'000}, int64_t{0}}) {
    collect::CollectOptions cached_options = options;
    cached_options.nvml_session = nullptr;  // The collector keeps its own.
    cached_options.scan_device_files = true;
    collect::CachedCollector cached(cached_options, /*full_every_ms=*/3'600'000, &clock,
                                    stat_every_ms);
    (void)cached.Look(0);  // The full one, which fills the cache.
    Measure(part(stat_every_ms != 0 ? "cached look (the daemon's, between holder scans)"
                                    : "  the same, every stat at every look"),
            reps, [&] { cached.Recycle(std::move(cached.Look(0).processes)); });
  }
  // The daemon's look with the holder scan (once a minute): the scan, then the
  // processes through the same cache.
  {
    collect::CollectOptions cached_options = options;
    cached_options.nvml_session = nullptr;
    cached_options.scan_device_files = true;
    collect::CachedCollector cached(cached_options, /*full_every_ms=*/0, &clock, 10'000);
    (void)cached.Look(0);
    Measure(part("cached look with the holder scan (once a minute)"), reps,
            [&] { (void)cached.Look(0); });
  }

  diagnose::DiagnoseOptions dopt;
  std::shared_ptr<const diagnose::Diagnosis> diagnosis;
  Measure(part("diagnosis over 8 full looks"), reps, [&] {
    diagnosis = std::make_shared<const diagnose::Diagnosis>(diagnose::Diagnose(judged, dopt));
  });
  Measure(part("snapshot copies (judged + published)"), reps, [&] {
    std::vector<Snapshot> copies;
    copies.push_back(judged.back());
    copies.push_back(judged.back());
  });

  char dir_template[] = "/tmp/fleet_look_bench.XXXXXX";
  if (mkdtemp(dir_template) == nullptr) return 1;
  const std::string dir = dir_template;
  {
    auto store = fleet::SqliteHistoryStore::Open(dir + "/history.db");
    if (!store.ok()) {
      std::fprintf(stderr, "%s\n", store.error().message.c_str());
      return 1;
    }
    fleet::History history(**store);
    (void)history.Load(judged.back().time_unix_ms / 1000);
    Snapshot s = judged.back();
    // The store takes the 1-s points ten at a time (fleet/history.h): each
    // rep adds ten seconds' points, and the figure is a tenth of it.
    constexpr int kBatch = 10;
    Part& points = part("history point (PointOf + History::Add), one");
    Measure(points, reps, [&] {
      for (int i = 0; i < kBatch; ++i) {
        s.time_unix_ms += 1000;
        (void)history.Add(fleet::PointOf(s, *diagnosis, std::nullopt));
      }
    });
    for (double& v : points.cpu) v /= kBatch;
    for (double& v : points.wall) v /= kBatch;
  }
  std::filesystem::remove_all(dir);

  fleet::FleetView view;
  view.latest = std::make_shared<const Snapshot>(judged.back());
  view.diagnosis = diagnosis;
  fleet::MetricsOptions mopt;
  size_t page = 0;
  Measure(part("one /metrics page (RenderMetrics)"), reps,
          [&] { page = fleet::RenderMetrics(view, mopt).size(); });

  const std::string head = "part (medians of " + std::to_string(reps) + ")";
  std::printf("%-42s %12s %12s\n", head.c_str(), "CPU ms", "wall ms");
  for (const Part& p : parts) {
    std::printf("%-42s %12.3f %12.3f\n", p.name.c_str(), Median(p.cpu), Median(p.wall));
  }
  std::printf("(/metrics page: %zu bytes)\n", page);
  return 0;
}
