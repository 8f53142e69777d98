// Fixed Snapshots for the render tests, built in code so every value is known.
#ifndef GPUWARDEN_RENDER_TEST_SNAPSHOTS_H_
#define GPUWARDEN_RENDER_TEST_SNAPSHOTS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "core/snapshot.h"
#include "core/units.h"

namespace gw::render::testing {
inline constexpr uint64_t kH100Total = 81559 * kMiB;  // 85520809984 bytes.
inline constexpr int64_t kTime = 1737368306000;       // 2025-01-20 10:18:26 UTC.

inline Gpu H100(unsigned index, const std::string& bus) {
  Gpu g;
  g.index = index;
  g.name = "NVIDIA H100 80GB HBM3";
  g.uuid = "GPU-5d1f0c3a-0000-4000-8000-00000000000" + std::to_string(index);
  g.serial = "165232300000" + std::to_string(index);
  g.pci_bus_id = "00000000:" + bus + ":00.0";
  g.pci_device_id = 0x233010DE;
  g.minor_number = index;
  g.memory.total_bytes = kH100Total;
  g.memory.used_bytes = 1 * kMiB;
  g.memory.free_bytes = kH100Total - 1 * kMiB - 530 * kMiB;
  g.memory.reserved_bytes = 530 * kMiB;
  g.utilization_gpu_pct = 0;
  g.utilization_memory_pct = 0;
  g.temperature_c = 27;
  g.temperature_slowdown_c = 87;
  g.temperature_shutdown_c = 92;
  g.power_draw_w = 72.5;
  g.power_limit_w = 700;
  g.pstate = 0;
  g.persistence_mode = true;
  g.compute_mode = ComputeMode::kDefault;
  g.mig_mode_current = false;
  g.mig_mode_pending = false;
  g.ecc.mode_current = true;
  g.ecc.volatile_uncorrected = 0;
  g.processes_known = true;
  return g;
}

inline GpuProcess Proc(pid_t pid, uint64_t bytes, unsigned sm) {
  GpuProcess p;
  p.pid = pid;
  p.used_memory_bytes = bytes;
  p.sm_util_pct = sm;
  return p;
}

inline HostProcess Host(pid_t pid, uid_t uid, const std::string& user,
                        std::vector<std::string> argv, double age_s) {
  HostProcess h;
  h.pid = pid;
  h.uid = uid;
  h.user = user;
  h.comm = argv.empty() ? "?" : argv[0].substr(0, 15);
  h.cmdline = std::move(argv);
  h.state = ProcessState::kRunning;
  h.ppid = 1;
  h.age_s = age_s;
  h.start_time_unix_ms = kTime - static_cast<int64_t>(age_s * 1000);
  h.listed_by_driver = true;
  return h;
}

// A busy 4-GPU box:
//   GPU 0: alice 1001 (60 GiB, SM 95), bob 1002 (10 GiB, SM 3)
//   GPU 1: alice 1001 again (20 GiB, SM 90)
//   GPU 2: carol 2001 in docker (30 GiB, SM unknown), PID 3001 not in /proc (1 GiB)
//   GPU 3: no processes, MIG on; bob's 4001 holds /dev/nvidia3 unlisted
inline Snapshot BusyBox() {
  Snapshot s;
  s.source = SnapshotSource::kNvml;
  s.source_detail = "libnvidia-ml.so.1";
  s.time_unix_ms = kTime;
  s.probe_duration_ms = 41.5;
  s.system.driver_version = "550.90.07";
  s.system.nvml_version = "12.550.90.07";
  s.system.cuda_driver_version = 12040;
  s.system.gpu_count = 4;
  s.host.hostname = "node07";
  s.host.cpu_count = 96;
  s.host.boot_time_unix_s = 1737000000;
  s.processes_scanned = true;

  Gpu g0 = H100(0, "19");
  g0.memory.used_bytes = 70 * kGiB;
  g0.utilization_gpu_pct = 97;
  g0.temperature_c = 61;
  g0.fan_speed_pct = 40;
  g0.power_draw_w = 512.4;
  g0.processes = {Proc(1001, 60 * kGiB, 95), Proc(1002, 10 * kGiB, 3)};
  Gpu g1 = H100(1, "3B");
  g1.memory.used_bytes = 20 * kGiB;
  g1.utilization_gpu_pct = 50;
  g1.processes = {Proc(1001, 20 * kGiB, 90)};
  Gpu g2 = H100(2, "4C");
  g2.memory.used_bytes = 31 * kGiB;
  g2.utilization_gpu_pct = 5;
  GpuProcess carol = Proc(2001, 30 * kGiB, 0);
  carol.sm_util_pct.reset();
  g2.processes = {carol, Proc(3001, 1 * kGiB, 1)};
  Gpu g3 = H100(3, "5D");
  g3.mig_mode_current = true;
  g3.mig_mode_pending = true;
  s.gpus = {g0, g1, g2, g3};
  s.topology = {{0, 1, TopologyLevel::kSingle, 0},
                {0, 2, TopologyLevel::kNode, 0},
                {2, 3, TopologyLevel::kSingle, 0}};

  HostProcess a =
      Host(1001, 1000, "alice", {"python", "train.py", "--config", "a b.yaml"}, 3 * 3600 + 20 * 60);
  a.device_files = {"/dev/nvidia0", "/dev/nvidia1", "/dev/nvidia2", "/dev/nvidia3",
                    "/dev/nvidiactl"};
  a.owner.systemd_unit = "session-4.scope";
  HostProcess b =
      Host(1002, 1001, "bob", {"/usr/bin/python3", "-m", "jupyter", "lab"}, 2 * 86400 + 4 * 3600);
  b.state = ProcessState::kSleeping;
  b.owner.systemd_unit = "jupyter.service";
  HostProcess c = Host(2001, 0, "root", {"python", "serve.py"}, 45);
  c.user = "carol";
  c.uid = 1002;
  c.owner.container_runtime = "docker";
  c.owner.container_id = "3f2a1b9c4d5e6f708192a3b4c5d6e7f8091a2b3c4d5e6f708192a3b4c5d6e7f8";
  HostProcess holder = Host(4001, 1001, "bob", {"python", "worker.py"}, 700);
  holder.listed_by_driver = false;
  holder.state = ProcessState::kSleeping;
  holder.device_files = {"/dev/nvidia3", "/dev/nvidiactl"};
  s.processes = {{1001, a}, {1002, b}, {2001, c}, {4001, holder}};
  return s;
}

// GPU 1 fell off the bus: every value unknown, process list unknown.
inline Snapshot LostGpu() {
  Snapshot s;
  s.time_unix_ms = kTime;
  s.system.driver_version = "535.183.01";
  s.system.gpu_count = 2;
  s.host.hostname = "node08";
  s.processes_scanned = true;
  s.gpus.push_back(H100(0, "19"));
  Gpu lost;
  lost.index = 1;
  lost.pci_bus_id = "00000000:3B:00.0";
  lost.uuid = "GPU-5d1f0c3a-0000-4000-8000-000000000001";
  lost.unreachable = ProbeError{"nvml", "gpu_lost", "GPU has fallen off the bus", 1u, 15};
  s.gpus.push_back(lost);
  s.errors.push_back({"nvml", "gpu_lost", "GPU has fallen off the bus", 1u, 15});
  return s;
}

// The probe hit its deadline after the first GPU's name.
inline Snapshot TimedOut() {
  Snapshot s;
  s.time_unix_ms = kTime;
  s.probe_duration_ms = 2000;
  s.timed_out = true;
  s.system.gpu_count = 1;
  s.host.hostname = "node09";
  s.errors.push_back(
      {"probe", "timeout", "NVML did not answer within 2000 ms (nvmlDeviceGetMemoryInfo)", 0u, {}});
  Gpu g;
  g.index = 0;
  g.name = "NVIDIA A100-SXM4-80GB";
  s.gpus.push_back(g);
  return s;
}

// Everything optional is unknown; one GPU with one process that /proc knows
// nothing about beyond its PID.
inline Snapshot AllUnknown() {
  Snapshot s;
  s.time_unix_ms = kTime;
  s.processes_scanned = true;
  Gpu g;
  g.index = 0;
  g.processes_known = true;
  GpuProcess p;
  p.pid = 4242;
  g.processes.push_back(p);
  s.gpus.push_back(g);
  HostProcess h;
  h.pid = 4242;
  h.listed_by_driver = true;
  s.processes[4242] = h;
  return s;
}

// Hostile and odd text from other processes.
inline Snapshot Hostile() {
  Snapshot s = BusyBox();
  s.source = SnapshotSource::kSimulated;
  s.source_detail = "scenarios/busy-8xh100.yaml";
  HostProcess& a = s.processes.at(1001);
  a.cmdline = {"\x1b[2J\x1b]0;pwned\x07", "evil\nname",
               "csi\xC2\x9B"
               "31m",
               "rtl\xE2\x80\xAE"
               "gpj.exe"};
  HostProcess& b = s.processes.at(1002);
  b.cmdline = {"caf\xE9", "\xFF\xFE", "--x=\x9B"};
  HostProcess& c = s.processes.at(2001);
  c.cmdline = {"python3", "训练模型.py", "--数据集=/数据/图像/训练集",
               "--输出=/模型/检查点/最新的一个", "--说明=这是一个很长的中文命令行参数用于测试截断"};
  c.user = "用户";
  c.owner.container_id = "\x1b[31mRED";
  return s;
}

// An nvidia-smi -q -x dump: no /proc data, names from the dump.
inline Snapshot XmlDump() {
  Snapshot s;
  s.source = SnapshotSource::kXmlDump;
  s.source_detail = "/tmp/a100.xml";
  s.time_unix_ms = kTime;
  s.system.driver_version = "535.54.03";
  s.system.cuda_driver_version = 12020;
  s.system.gpu_count = 1;
  s.processes_scanned = false;
  Gpu g = H100(0, "07");
  g.name = "NVIDIA A100-SXM4-80GB";
  GpuProcess p = Proc(3121, 512 * kMiB, 0);
  p.sm_util_pct.reset();
  p.name = "/usr/bin/python3";
  g.processes = {p};
  s.gpus.push_back(g);
  return s;
}

inline std::vector<std::pair<std::string, Snapshot>> AllFixtures() {
  return {{"busy", BusyBox()},       {"lost", LostGpu()},    {"timed_out", TimedOut()},
          {"unknown", AllUnknown()}, {"hostile", Hostile()}, {"xml", XmlDump()},
          {"empty", Snapshot{}}};
}

}  // namespace gw::render::testing

#endif  // GPUWARDEN_RENDER_TEST_SNAPSHOTS_H_
