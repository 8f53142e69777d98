// diagnose_bench: how long one `gpuwarden why` diagnosis takes on a large,
// busy server, so that the daemon can run it every few seconds over its
// history. Target: under 1 ms per pass for 60 samples x 8 GPUs x 256 processes.
//
// The server is synthetic but shaped like a shared 8 x H100 box: a DDP run on
// all GPUs with its data-loader workers, an inference service, notebooks (some
// idle for days), orphans of a killed run, a zombie, a process stuck in D,
// containers and Slurm jobs, utilisation that moves from sample to sample.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <string>
#include <vector>

#include "diagnose/test_util.h"
#include "diagnose/verdict.h"
#include "lcg.h"

namespace {

using namespace gw;            // NOLINT
using namespace gw::diagnose;  // NOLINT
using fixtures::HealthyServer;
using fixtures::kT0;

constexpr unsigned kGpus = 8;
constexpr unsigned kProcessesPerGpu = 32;
constexpr size_t kSamples = 60;

using gw::bench::Lcg;

const char* const kUsers[] = {"alice", "bob",   "carol", "dave", "erin",    "frank",
                              "grace", "heidi", "ivan",  "judy", "mallory", "oscar"};

// The processes of one GPU: who they are stays fixed over the window.
struct Role {
  fixtures::Proc proc;
  unsigned sm_base = 0;  // SM % around which it moves; 0 = idle.
};

std::vector<Role> Roles(unsigned gpu) {
  std::vector<Role> roles;
  const pid_t base = 10000 + static_cast<pid_t>(gpu) * 1000;
  auto add = [&](pid_t pid, uint64_t bytes, unsigned sm, unsigned user, double age, pid_t ppid,
                 pid_t pgid, const char* comm, const char* parent) {
    Role r;
    r.proc.pid = pid;
    r.proc.gpu = gpu;
    r.proc.bytes = bytes;
    r.proc.sm = sm;
    r.proc.user = kUsers[user % std::size(kUsers)];
    r.proc.uid = 1000 + user;
    r.proc.comm = comm;
    r.proc.age_s = age;
    r.proc.ppid = ppid;
    r.proc.pgid = pgid;
    r.proc.sid = pgid - 1;
    r.proc.parent_comm = parent;
    r.sm_base = sm;
    roles.push_back(r);
  };
  // A DDP rank (the launcher is PID 9000) and 16 of its data-loader workers.
  const pid_t rank = base;
  add(rank, 38ull << 30, 70, 0, 5 * 3600, 9000, 9000, "python", "torchrun");
  for (pid_t w = 1; w <= 16; ++w) {
    add(rank + w, 500 * kMiB, 0, 0, 5 * 3600, rank, 9000, "pt_data_worker", "python");
  }
  // An inference service in a container: 6 workers.
  for (pid_t w = 100; w < 106; ++w) {
    add(base + w, 2ull << 30, 8 + static_cast<unsigned>(w % 5), 1, 3 * 86400, base + 99, base + 99,
        "tritonserver", "tritonserver");
  }
  // Notebooks: one idle for two days on even GPUs, one working.
  add(base + 200, gpu % 2 == 0 ? 12ull << 30 : 3ull << 30, gpu % 2 == 0 ? 0 : 15, 2 + gpu,
      2 * 86400, base + 199, base + 199, "python3", "jupyter-lab");
  add(base + 201, 4ull << 30, 25, 3 + gpu, 3600, base + 199, base + 199, "python3", "jupyter-lab");
  // Workers of a killed run, adopted by init.
  for (pid_t w = 300; w < 304; ++w) {
    add(base + w, 600 * kMiB, 0, 4, 7200, 1, base + 299, "python", "systemd");
  }
  // Small tools and tests of several users.
  for (pid_t w = 400; roles.size() < kProcessesPerGpu; ++w) {
    add(base + w, 300 * kMiB, 3, 5 + static_cast<unsigned>(w), 600, base + 399, base + w, "python",
        "bash");
  }
  return roles;
}

Snapshot Sample(size_t k, Lcg& rng) {
  Snapshot s = HealthyServer(kGpus, kT0 - static_cast<int64_t>(kSamples - 1 - k) * 1000);
  for (unsigned g = 0; g < kGpus; ++g) {
    unsigned busiest = 0;
    for (Role& role : Roles(g)) {
      fixtures::Proc p = role.proc;
      if (role.sm_base > 0) p.sm = role.sm_base - 3 + rng.Next(7);
      if (p.pid % 1000 == 400 && g == 5) p.state = ProcessState::kZombie;
      if (p.pid % 1000 == 401 && g == 6) p.state = ProcessState::kDiskSleep;
      busiest = std::max(busiest, p.sm.value_or(0));
      fixtures::AddProcess(s, p);
    }
    Gpu& gpu = *fixtures::GpuAt(s, g);
    gpu.utilization_gpu_pct = std::min(100u, busiest + 20 + rng.Next(10));
    gpu.temperature_c = 60 + static_cast<int>(rng.Next(8));
    gpu.power_draw_w = 450 + rng.Next(200);
    gpu.clock_event_reasons = rng.Next(3) == 0 ? clock_event::kSwPowerCap : 0;
    gpu.pcie.link_gen_current = 5;  // Loaded GPUs run their links at full speed.
    gpu.pcie.replay_counter = k / 20;
  }
  s.source_detail = "synthetic";
  s.processes[10000].owner.slurm_job_id = "41234";
  s.processes[10100].owner.container_runtime = "docker";
  s.processes[10100].owner.container_id = "3f2a1b9c0d1e5f6a7b8c9d0e1f2a3b4c";
  return s;
}

std::vector<Snapshot> History(size_t samples) {
  Lcg rng(42);
  std::vector<Snapshot> history;
  history.reserve(samples);
  for (size_t k = kSamples - samples; k < kSamples; ++k) history.push_back(Sample(k, rng));
  return history;
}

std::vector<kmsg::KernelEvent> Events() {
  std::vector<kmsg::KernelEvent> events;
  for (int i = 0; i < 5; ++i) {
    kmsg::KernelEvent e;
    e.time_unix_ms = kT0 - 3'600'000 + i * 60'000;
    e.pci_bus_id = "0000:28:00";
    e.xid = 13;
    e.kind = kmsg::kKindXid;
    e.raw = "NVRM: Xid (PCI:0000:28:00): 13, Graphics SM Warp Exception";
    events.push_back(e);
  }
  return events;
}

DiagnoseOptions Options() {
  DiagnoseOptions o;
  o.need = *ParseNeed("2x24G");
  o.caller_uid = 1003;
  o.cuda_visible_devices = "0,1";
  return o;
}

void BM_Diagnose(benchmark::State& state) {
  const std::vector<Snapshot> history = History(static_cast<size_t>(state.range(0)));
  const std::vector<kmsg::KernelEvent> events = Events();
  const DiagnoseOptions options = Options();
  size_t findings = 0;
  for (auto _ : state) {
    Diagnosis d = Diagnose(history, options, events);
    findings = d.findings.size();
    benchmark::DoNotOptimize(d);
  }
  state.counters["findings"] = static_cast<double>(findings);
  state.counters["processes"] = static_cast<double>(history.back().processes.size());
}
BENCHMARK(BM_Diagnose)->Arg(1)->Arg(3)->Arg(60)->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
