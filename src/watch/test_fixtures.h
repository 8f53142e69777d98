// Fixed inputs for the watch tests, built in code so every value is known.
#ifndef GPUWARDEN_WATCH_TEST_FIXTURES_H_
#define GPUWARDEN_WATCH_TEST_FIXTURES_H_

#include <memory>
#include <string>
#include <vector>

#include "core/units.h"
#include "diagnose/verdict.h"
#include "render/test_snapshots.h"
#include "watch/model.h"

namespace gw::watch::testing {

using render::testing::H100;
using render::testing::Host;
using render::testing::kTime;
using render::testing::Proc;

// Two H100s: GPU 0 runs alice's training (PID 4242, 60 GiB, SM 97) and bob's
// idle notebook (PID 5151, 10 GiB, SM 0); GPU 1 is free.
inline Snapshot TwoGpus() {
  Snapshot s;
  s.time_unix_ms = kTime;
  s.host.hostname = "lab-7";
  s.system.driver_version = "550.90.07";
  s.processes_scanned = true;
  Gpu g0 = H100(0, "19");
  g0.memory.used_bytes = 70 * kGiB;
  g0.utilization_gpu_pct = 97;
  g0.temperature_c = 71;
  g0.power_draw_w = 650;
  g0.processes = {Proc(4242, 60 * kGiB, 97), Proc(5151, 10 * kGiB, 0)};
  Gpu g1 = H100(1, "3B");
  s.gpus = {g0, g1};
  s.processes[4242] = Host(4242, 1001, "alice", {"python", "train.py", "--epochs", "90"}, 7200);
  s.processes[5151] = Host(5151, 1002, "bob", {"jupyter-kernel"}, 3600 * 30);
  s.processes[4242].cpu_pct = 98.5;
  s.processes[5151].cpu_pct = 0.2;
  s.processes[5151].state = ProcessState::kSleeping;
  return s;
}

inline std::string BusOf(unsigned g) {
  static const char* kBus[] = {"19", "3B", "4C", "5D", "9B", "BB", "CB", "DB"};
  return kBus[g % 8];
}

// Eight H100s, `per_gpu` processes each (PIDs 10000 + 100 * gpu + i), owned
// by four users, each a worker of a launcher per GPU (PPID 9000 + gpu).
inline Snapshot EightGpus(int per_gpu) {
  Snapshot s;
  s.time_unix_ms = kTime;
  s.host.hostname = "big-1";
  s.system.driver_version = "550.90.07";
  s.processes_scanned = true;
  const char* users[] = {"alice", "bob", "carol", "dave"};
  for (unsigned g = 0; g < 8; ++g) {
    Gpu gpu = H100(g, BusOf(g));
    gpu.memory.used_bytes = static_cast<uint64_t>(per_gpu) * 2 * kGiB;
    gpu.utilization_gpu_pct = 10 * g + 5;
    gpu.temperature_c = 40 + static_cast<int>(g) * 5;
    gpu.power_draw_w = 100.0 + 70.0 * g;
    for (int i = 0; i < per_gpu; ++i) {
      const pid_t pid = static_cast<pid_t>(10000 + 100 * g + i);
      gpu.processes.push_back(Proc(pid, 2 * kGiB, static_cast<unsigned>(i % 100)));
      HostProcess h = Host(pid, 1001 + g % 4, users[g % 4],
                           {"python", "worker.py", std::to_string(i)}, 60.0 * (i + 1));
      h.ppid = static_cast<pid_t>(9000 + g);
      h.parent_comm = "torchrun";
      s.processes[pid] = h;
    }
    s.gpus.push_back(gpu);
  }
  return s;
}

// A diagnosis with `n` findings of each severity, server BUSY.
inline diagnose::Diagnosis SomeDiagnosis(const Snapshot& s, int n) {
  diagnose::Diagnosis d;
  d.server = diagnose::Verdict::kBusy;
  d.summary = "BUSY — resource shortage: 1/2 GPUs ≥ 95 % VRAM";
  for (const Gpu& g : s.gpus) {
    diagnose::GpuVerdict v;
    v.index = g.index;
    v.verdict = g.processes.empty() ? diagnose::Verdict::kOk : diagnose::Verdict::kBusy;
    v.line =
        "GPU " + std::to_string(g.index) + (g.processes.empty() ? " OK — free" : " BUSY — in use");
    d.gpus.push_back(v);
  }
  for (int i = 0; i < n; ++i) {
    for (auto sev :
         {diagnose::Severity::kCritical, diagnose::Severity::kWarning, diagnose::Severity::kInfo}) {
      diagnose::Finding f;
      f.severity = sev;
      f.code = sev == diagnose::Severity::kCritical  ? "XID_FATAL"
               : sev == diagnose::Severity::kWarning ? "IDLE_HOLDER"
                                                     : "FOREIGN_PID";
      f.message = "finding " + std::to_string(i) + " of " + f.code;
      d.findings.push_back(f);
    }
  }
  return d;
}

inline WatchModel ModelOf(Snapshot s, diagnose::Diagnosis d) {
  WatchModel m;
  m.data_unix_ms = s.time_unix_ms;
  m.updated_unix_ms = s.time_unix_ms;
  m.snapshot = std::make_shared<const Snapshot>(std::move(s));
  m.diagnosis = std::make_shared<const diagnose::Diagnosis>(std::move(d));
  m.queue.state = QueueView::State::kNoDaemon;
  return m;
}

}  // namespace gw::watch::testing

#endif  // GPUWARDEN_WATCH_TEST_FIXTURES_H_
