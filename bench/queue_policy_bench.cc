// queue_policy_bench: how long one placement pass (gw::queue::Schedule) takes
// over a long queue, so that the daemon can run it on every submit and job
// end. Target: under 10 ms for 100,000 waiting jobs (release build).
//
// The server is synthetic but shaped like a busy shared 8 x 80 GiB box: 16
// running jobs (two per GPU, some with time limits, some preemptible), a
// queue from 50 users with mixed priorities, sizes from 1 GiB to whole GPUs,
// 1 to 8 GPUs per job (some NVLink), held jobs, windows, dependencies, time
// limits, submitted over two days. The same queue every run.
//
// Two layouts of the waiting list: in id order, as the store lists it, and
// shuffled (the policy then has to sort within each priority/user bucket,
// and sort ids itself for its result).
//
// A pass allocates about 100 bytes per waiting job, most of it the result.
// glibc may hand that memory back to the kernel after each pass, so the next
// pass faults it in again; on a virtual machine that costs several ms per
// 100,000 jobs. A daemon avoids it by keeping freed memory, e.g.
//   GLIBC_TUNABLES=glibc.malloc.trim_threshold=268435456:glibc.malloc.mmap_threshold=33554432
// (or mallopt() at start-up). Run the benchmark both ways to see it.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/units.h"
#include "lcg.h"
#include "queue/policy.h"

namespace {

using namespace gw;         // NOLINT
using namespace gw::queue;  // NOLINT
constexpr int64_t kNow = 1'800'000'000'000;
constexpr unsigned kGpus = 8;
constexpr unsigned kUsers = 50;

using gw::bench::Lcg;

struct Fixture {
  std::vector<Job> jobs;
  QueueView view;
};

std::unique_ptr<Fixture> MakeFixture(size_t waiting, bool shuffled) {
  auto f = std::make_unique<Fixture>();
  Lcg rng(42);
  QueueView& v = f->view;
  v.now_unix_ms = kNow;
  v.minute_of_day = 14 * 60;
  for (unsigned g = 0; g < kGpus; ++g) {
    GpuState s;
    s.index = g;
    s.uuid = "GPU-" + std::to_string(g);
    s.total_bytes = 80 * kGiB;
    s.free_bytes = 80 * kGiB;
    s.util_pct = 20 + rng.Next(70);
    v.gpus.push_back(s);
  }
  // NVLink pairs (0-1, 2-3, ...), two PCIe switches of four.
  for (unsigned a = 0; a < kGpus; ++a) {
    for (unsigned b = a + 1; b < kGpus; ++b) {
      TopologyLevel level = a / 4 == b / 4 ? TopologyLevel::kSingle : TopologyLevel::kSystem;
      v.topology.push_back({a, b, level, a / 2 == b / 2 ? 12u : 0u});
    }
  }
  // 16 running jobs, two per GPU: 30 GiB promised, 10-30 GiB allocated.
  for (unsigned i = 0; i < 16; ++i) {
    RunningJob r;
    r.id = 1'000'000 + i;
    r.uid = 1000 + rng.Next(kUsers);
    r.user = "user" + std::to_string(r.uid);
    r.priority = static_cast<int>(rng.Next(3)) - 1;
    r.preemptible = i % 3 == 0;
    const unsigned g = i / 2;
    r.gpus = {g};
    r.vram_per_gpu = 30 * kGiB;
    r.pids = {static_cast<pid_t>(50'000 + i)};
    const uint64_t used = (10 + rng.Next(21)) * kGiB;
    v.gpus[g].process_bytes[r.pids[0]] = used;
    *v.gpus[g].free_bytes -= used;
    r.start_unix_ms = kNow - (1 + rng.Next(48)) * 3'600'000ll;
    if (i % 2 == 0) r.time_limit_s = 72 * 3600;
    v.running.push_back(r);
  }
  // An outside process: an idle notebook on GPU 3.
  v.gpus[3].process_bytes[777] = 6 * kGiB;
  *v.gpus[3].free_bytes -= 6 * kGiB;
  v.gpus[3].holders.push_back({777, "mallory", 6 * kGiB, 2 * 86400.0, "jupyter"});
  for (unsigned u = 0; u < kUsers; ++u) v.usage_gpu_s[1000 + u] = rng.Next(1'000'000);

  f->jobs.resize(waiting);
  for (size_t i = 0; i < waiting; ++i) {
    Job& j = f->jobs[i];
    j.id = static_cast<JobId>(i + 1);
    j.owner.uid = 1000 + rng.Next(kUsers);
    j.owner.user = "user" + std::to_string(j.owner.uid);
    j.spec.argv = {"python", "train.py", "--seed", std::to_string(i)};
    const unsigned p = rng.Next(100);
    j.spec.priority = p < 80 ? 0 : p < 90 ? 1 : p < 95 ? -1 : 3;
    const unsigned n = rng.Next(100);
    j.spec.gpus = n < 75 ? 1 : n < 90 ? 2 : n < 97 ? 4 : 8;
    j.spec.vram_bytes = rng.Next(10) == 0 ? 0 : (1 + rng.Next(70)) * kGiB;
    j.spec.nvlink = j.spec.gpus > 1 && rng.Next(2) == 0;
    if (rng.Next(2) == 0) j.spec.time_limit_s = 600 * (1 + rng.Next(144));
    if (rng.Next(20) == 0) j.spec.max_util_pct = 50;
    if (rng.Next(20) == 0) j.spec.window = TimeWindow{22 * 60, 7 * 60};
    if (rng.Next(50) == 0 && i > 0) {
      j.spec.after = {static_cast<JobId>(1 + rng.Next(static_cast<unsigned>(i)))};
    }
    j.spec.preemptible = rng.Next(4) == 0;
    j.state = rng.Next(20) == 0 ? JobState::kHeld : JobState::kQueued;
    // Ids grow with submit time, as the store assigns them.
    j.submit_unix_ms = kNow - 2 * 86'400'000ll +
                       static_cast<int64_t>(i) * (2 * 86'400'000ll) / static_cast<int64_t>(waiting);
    v.waiting.push_back(&j);
  }
  // As the daemon would build it each pass from one query.
  for (const Job& j : f->jobs) {
    for (JobId dep : j.spec.after) v.dependency_states[dep] = JobState::kQueued;
  }
  if (shuffled) {
    for (size_t i = v.waiting.size(); i > 1; --i) {
      std::swap(v.waiting[i - 1], v.waiting[rng.Next(static_cast<unsigned>(i))]);
    }
  }
  return f;
}

void Run(benchmark::State& state, bool shuffled) {
  const auto f = MakeFixture(static_cast<size_t>(state.range(0)), shuffled);
  Decisions d;
  for (auto _ : state) {
    d = Schedule(f->view);
    benchmark::DoNotOptimize(d);
  }
  state.counters["started"] = static_cast<double>(d.start.size());
  state.counters["preempt"] = static_cast<double>(d.preempt.size());
  state.counters["waiting"] = static_cast<double>(d.waiting.size());
}

void BM_Schedule(benchmark::State& state) { Run(state, false); }
void BM_ScheduleShuffled(benchmark::State& state) { Run(state, true); }

BENCHMARK(BM_Schedule)->Arg(1'000)->Arg(10'000)->Arg(100'000)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_ScheduleShuffled)->Arg(100'000)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
