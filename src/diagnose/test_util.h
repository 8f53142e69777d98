// Synthetic snapshots for the diagnosis tests and the benchmark: a healthy,
// idle 8-GPU H100 server by default, with helpers to add processes and build
// windows of samples.
#ifndef GPUWARDEN_DIAGNOSE_TEST_UTIL_H_
#define GPUWARDEN_DIAGNOSE_TEST_UTIL_H_

#include <sys/types.h>

#include <algorithm>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "core/snapshot.h"
#include "core/units.h"
#include "diagnose/catalog.h"
#include "diagnose/finding.h"
#include "diagnose/rules.h"
#include "diagnose/verdict.h"

namespace gw::diagnose::fixtures {
inline constexpr int64_t kT0 = 1'767'000'000'000;  // Some time in 2025.

// An idle, healthy H100 SXM: 80 GiB, 0 %, 30 C, P8, PCIe downshifted to Gen1
// at idle (normal), 18 NVLinks up, persistence on.
inline Gpu HealthyGpu(unsigned index) {
  Gpu g;
  g.index = index;
  g.name = "NVIDIA H100 80GB HBM3";
  g.uuid = fmt::format("GPU-{:08x}-1111-2222-3333-444455556666", 0xabc00 + index);
  g.serial = fmt::format("165123456{:04}", index);
  g.pci_bus_id = fmt::format("00000000:{:02X}:00.0", 0x18 + 0x10 * index);
  g.pci_device_id = 0x233010DE;
  g.minor_number = index;
  g.memory.total_bytes = 80 * kGiB;
  g.memory.reserved_bytes = 512 * kMiB;
  g.memory.used_bytes = 1 * kMiB;
  g.memory.free_bytes = *g.memory.total_bytes - *g.memory.reserved_bytes - *g.memory.used_bytes;
  g.utilization_gpu_pct = 0;
  g.utilization_memory_pct = 0;
  g.temperature_c = 30;
  g.temperature_slowdown_c = 87;
  g.temperature_shutdown_c = 92;
  g.power_draw_w = 70;
  g.power_limit_w = 700;
  g.clocks.sm_mhz = 345;
  g.clocks.max_sm_mhz = 1980;
  g.clocks.graphics_mhz = 345;
  g.clocks.max_graphics_mhz = 1980;
  g.pstate = 8;
  g.persistence_mode = true;
  g.compute_mode = ComputeMode::kDefault;
  g.mig_mode_current = false;
  g.mig_mode_pending = false;
  g.ecc.mode_current = true;
  g.ecc.volatile_corrected = 0;
  g.ecc.volatile_uncorrected = 0;
  g.ecc.aggregate_corrected = 0;
  g.ecc.aggregate_uncorrected = 0;
  g.remapped_rows.correctable = 0;
  g.remapped_rows.uncorrectable = 0;
  g.remapped_rows.pending = false;
  g.remapped_rows.failure = false;
  g.clock_event_reasons = clock_event::kGpuIdle;
  g.clock_event_reasons_supported = 0x1ff;
  g.pcie.link_gen_current = 1;
  g.pcie.link_gen_max = 5;
  g.pcie.link_gen_gpu_max = 5;
  g.pcie.link_width_current = 16;
  g.pcie.link_width_max = 16;
  g.pcie.replay_counter = 0;
  for (unsigned l = 0; l < 18; ++l) g.nvlinks.push_back({l, true});
  g.processes_known = true;
  return g;
}

// A healthy idle server of `gpus` H100s joined by NVSwitch, /proc scanned.
inline Snapshot HealthyServer(unsigned gpus = 8, int64_t time_ms = kT0) {
  Snapshot s;
  s.source = SnapshotSource::kNvml;
  s.source_detail = "libnvidia-ml.so.1";
  s.time_unix_ms = time_ms;
  s.probe_duration_ms = 40;
  s.system.driver_version = "550.54.15";
  s.system.nvml_version = "12.550.54.15";
  s.system.cuda_driver_version = 12040;
  s.system.gpu_count = gpus;
  s.host.hostname = "gpu-node-01";
  s.host.cpu_count = 128;
  for (unsigned i = 0; i < gpus; ++i) s.gpus.push_back(HealthyGpu(i));
  for (unsigned a = 0; a < gpus; ++a) {
    for (unsigned b = a + 1; b < gpus; ++b) {
      s.topology.push_back({a, b, TopologyLevel::kSystem, 18});
    }
  }
  s.processes_scanned = true;
  return s;
}

// A process on a GPU, as both the driver and /proc see it.
struct Proc {
  pid_t pid = 0;
  unsigned gpu = 0;
  uint64_t bytes = kGiB;
  Opt<unsigned> sm = 50;
  std::string user = "alice";
  uid_t uid = 1001;
  std::string comm = "python";
  double age_s = 3600;
  ProcessState state = ProcessState::kSleeping;
  pid_t ppid = 4000;
  Opt<pid_t> pgid = std::nullopt;  // Defaults to pid (a job leader).
  Opt<pid_t> sid = 3900;
  std::string parent_comm = "bash";
  bool listed = true;      // The driver lists it (else: device file only).
  bool in_proc = true;     // /proc has it.
  bool add_memory = true;  // Add `bytes` to the GPU's used memory.
};

inline Gpu* GpuAt(Snapshot& s, unsigned index) {
  for (Gpu& g : s.gpus) {
    if (g.index == index) return &g;
  }
  return nullptr;
}

inline void AddProcess(Snapshot& s, const Proc& p) {
  Gpu& gpu = *GpuAt(s, p.gpu);
  if (p.listed) {
    GpuProcess gp;
    gp.pid = p.pid;
    gp.used_memory_bytes = p.bytes;
    gp.sm_util_pct = p.sm;
    gp.mem_util_pct = p.sm ? Opt<unsigned>(*p.sm / 2) : std::nullopt;
    gpu.processes.push_back(gp);
    if (p.add_memory) {
      *gpu.memory.used_bytes += p.bytes;
      *gpu.memory.free_bytes -= std::min(*gpu.memory.free_bytes, p.bytes);
    }
  }
  if (!p.in_proc) return;
  auto [it, inserted] = s.processes.try_emplace(p.pid);
  HostProcess& h = it->second;
  h.pid = p.pid;
  h.uid = p.uid;
  h.user = p.user;
  h.comm = p.comm;
  h.cmdline = {"/usr/bin/" + p.comm, "train.py"};
  h.state = p.state;
  h.ppid = p.ppid;
  h.pgid = p.pgid ? *p.pgid : p.pid;
  h.sid = p.sid;
  h.parent_comm = p.parent_comm;
  h.age_s = p.age_s;
  h.start_time_unix_ms = s.time_unix_ms - static_cast<int64_t>(p.age_s * 1000);
  h.device_files.push_back(fmt::format("/dev/nvidia{}", *gpu.minor_number));
  if (inserted) {
    h.device_files.push_back("/dev/nvidiactl");
    h.device_files.push_back("/dev/nvidia-uvm");
  }
  h.listed_by_driver = h.listed_by_driver || p.listed;
}

// Sets a GPU's utilisation; a loaded GPU's PCIe link runs at its maximum.
inline void SetLoad(Snapshot& s, unsigned gpu, unsigned util) {
  Gpu& g = *GpuAt(s, gpu);
  g.utilization_gpu_pct = util;
  if (util > 0) g.pcie.link_gen_current = g.pcie.link_gen_max;
}

// `n` copies of `base`, `step_ms` apart, ending at base's time.
inline std::vector<Snapshot> Window(const Snapshot& base, size_t n, int64_t step_ms = 1000) {
  std::vector<Snapshot> out(n, base);
  for (size_t k = 0; k < n; ++k) {
    out[k].time_unix_ms = base.time_unix_ms - static_cast<int64_t>(n - 1 - k) * step_ms;
  }
  return out;
}

inline size_t Count(std::span<const Finding> findings, std::string_view code) {
  return std::count_if(findings.begin(), findings.end(),
                       [&](const Finding& f) { return f.code == code; });
}

inline const Finding* Find(std::span<const Finding> findings, std::string_view code) {
  for (const Finding& f : findings) {
    if (f.code == code) return &f;
  }
  return nullptr;
}

// The evidence called `name`, or nullptr.
inline const Evidence* EvidenceNamed(const Finding& f, std::string_view name) {
  for (const Evidence& e : f.evidence) {
    if (e.name == name) return &e;
  }
  return nullptr;
}

inline std::vector<Finding> RunOne(const Snapshot& s, const DiagnoseOptions& o = {}) {
  return RunRules(std::span<const Snapshot>(&s, 1), o);
}

// The diagnosis of one snapshot (no history before it).
// Options under which a holder idle in the looks given is idle at once
// (--idle-for 0): for tests of what an idle holder leads to, not of how
// long it was idle (rules_holders_test.cc, idle_time_test.cc).
inline DiagnoseOptions IdleAtOnce() {
  DiagnoseOptions o;
  o.idle_holder_min_idle_s = 0;
  return o;
}

inline Diagnosis DiagnoseOne(const Snapshot& s, const DiagnoseOptions& o = {},
                             std::span<const kmsg::KernelEvent> events = {}) {
  return Diagnose(std::span<const Snapshot>(&s, 1), o, events);
}

inline std::vector<std::string> Codes(std::span<const Finding> findings) {
  std::vector<std::string> out;
  for (const Finding& f : findings) out.push_back(f.code);
  return out;
}

// A finding of `code` with the catalog's fixed fields (severity, category,
// verdict, who acts); the fields stay default for a code the catalog lacks.
inline Finding CatalogFinding(const std::string& code, std::vector<unsigned> gpus,
                              std::string message) {
  Finding f;
  f.code = code;
  if (const FindingSpec* spec = FindSpec(code)) {
    f.severity = spec->severity;
    f.category = spec->category;
    f.implies = spec->implies;
    f.actor = spec->actor;
  }
  f.gpus = std::move(gpus);
  f.message = std::move(message);
  return f;
}

}  // namespace gw::diagnose::fixtures

#endif  // GPUWARDEN_DIAGNOSE_TEST_UTIL_H_
