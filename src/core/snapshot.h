// Snapshot: one plain value that holds everything gpuwarden saw at one moment —
// GPUs (from NVML or an nvidia-smi XML dump), the processes that hold them (from
// NVML and /proc), the host, and every error met while looking.
//
// Collectors produce a Snapshot; diagnosis rules and renderers are pure functions
// of Snapshots. Contract for every field: std::nullopt means "unknown or not
// supported" and is never rendered as 0. A value that is present was read.
#ifndef GPUWARDEN_CORE_SNAPSHOT_H_
#define GPUWARDEN_CORE_SNAPSHOT_H_

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace gw {

template <typename T>
using Opt = std::optional<T>;

// Where the GPU facts came from.
enum class SnapshotSource {
  kNvml,       // The real libnvidia-ml.so.1.
  kSimulated,  // gpuwarden's simulated libnvidia-ml.so.1 (a scenario file).
  kXmlDump,    // An `nvidia-smi -q -x` file read with --from.
};

// An error met while collecting. `source` is "nvml", "proc", "xml" or "probe";
// `nvml_return` holds the raw nvmlReturn_t when the error came from NVML.
struct ProbeError {
  std::string source;
  std::string code;     // Stable word: "driver_not_loaded", "gpu_lost", "timeout", ...
  std::string message;  // One line for a person.
  Opt<unsigned> gpu_index;
  Opt<int> nvml_return;
  // The processes it is about, sorted, every one of them: the message names
  // at most the first ten (docs/cli.md, "Output"). Empty when it is not
  // about processes. (The initializer lets brace initialisers that stop
  // before it omit it without -Wmissing-field-initializers.)
  std::vector<pid_t> pids = {};
};

enum class ComputeMode { kDefault, kExclusiveThread, kProhibited, kExclusiveProcess };

struct MemoryInfo {
  Opt<uint64_t> total_bytes;
  Opt<uint64_t> used_bytes;
  Opt<uint64_t> free_bytes;
  Opt<uint64_t> reserved_bytes;  // NVML memory v2 / XML fb_memory_usage/reserved.
};

struct EccInfo {
  Opt<bool> mode_current;  // true = enabled.
  Opt<bool> mode_pending;
  Opt<uint64_t> volatile_corrected;
  Opt<uint64_t> volatile_uncorrected;
  Opt<uint64_t> aggregate_corrected;
  Opt<uint64_t> aggregate_uncorrected;
  // Where the volatile uncorrectable errors were, when the source splits them
  // (nvidia-smi -q -x v12+): SRAM errors are contained by the GPU (NVIDIA:
  // restart the application, reset when convenient); DRAM errors are not.
  // Both parts are included in volatile_uncorrected.
  Opt<uint64_t> volatile_sram_uncorrected;
  Opt<uint64_t> volatile_dram_uncorrected;
  Opt<bool> sram_threshold_exceeded;  // Aggregate SRAM errors passed NVIDIA's limit.
};

struct RetiredPages {
  Opt<uint64_t> single_bit;  // Pages retired for multiple single-bit errors.
  Opt<uint64_t> double_bit;  // Pages retired for a double-bit error.
  Opt<bool> pending;         // A retirement waits for the next driver reload.
};

struct RemappedRows {
  Opt<uint64_t> correctable;
  Opt<uint64_t> uncorrectable;
  Opt<bool> pending;  // A GPU reset is needed to activate a remap.
  Opt<bool> failure;  // Remapping failed: the memory can no longer repair itself.
};

struct Clocks {
  Opt<unsigned> graphics_mhz;
  Opt<unsigned> sm_mhz;
  Opt<unsigned> memory_mhz;
  Opt<unsigned> video_mhz;
  Opt<unsigned> max_graphics_mhz;
  Opt<unsigned> max_sm_mhz;
  Opt<unsigned> max_memory_mhz;
};

struct PcieInfo {
  Opt<unsigned> link_gen_current;
  Opt<unsigned> link_gen_max;      // min(GPU, host) as NVML reports it.
  Opt<unsigned> link_gen_gpu_max;  // What the GPU itself supports.
  Opt<unsigned> link_width_current;
  Opt<unsigned> link_width_max;
  Opt<uint64_t> replay_counter;
};

struct NvLinkState {
  unsigned link = 0;
  Opt<bool> active;
};

// Bits of NVML's clock event ("throttle") reason mask; same values in NVML and
// in the XML dump's clocks_event_reasons children.
namespace clock_event {
inline constexpr uint64_t kGpuIdle = 0x1;
inline constexpr uint64_t kApplicationsClocksSetting = 0x2;
inline constexpr uint64_t kSwPowerCap = 0x4;
inline constexpr uint64_t kHwSlowdown = 0x8;
inline constexpr uint64_t kSyncBoost = 0x10;
inline constexpr uint64_t kSwThermalSlowdown = 0x20;
inline constexpr uint64_t kHwThermalSlowdown = 0x40;
inline constexpr uint64_t kHwPowerBrakeSlowdown = 0x80;
inline constexpr uint64_t kDisplayClockSetting = 0x100;
}  // namespace clock_event

enum class GpuProcessType { kCompute, kGraphics, kComputeAndGraphics };

// A process as the GPU driver lists it on one GPU.
struct GpuProcess {
  pid_t pid = 0;  // Host PID (the driver always reports host PIDs).
  GpuProcessType type = GpuProcessType::kCompute;
  Opt<uint64_t> used_memory_bytes;  // Unknown on MIG and WDDM.
  Opt<unsigned> sm_util_pct;        // From NVML process-utilization samples.
  Opt<unsigned> mem_util_pct;
  Opt<unsigned> gpu_instance_id;  // MIG only.
  Opt<unsigned> compute_instance_id;
  Opt<std::string> name;  // Only from an XML dump (process_name); live data uses /proc.
};

struct Gpu {
  unsigned index = 0;
  Opt<std::string> name;
  Opt<std::string> uuid;
  Opt<std::string> serial;
  Opt<std::string> pci_bus_id;  // "00000000:3B:00.0", the form NVML reports.
  Opt<uint32_t> pci_device_id;  // (device << 16) | vendor, e.g. 0x233010DE.
  Opt<unsigned> minor_number;   // /dev/nvidia<minor>.

  MemoryInfo memory;
  Opt<unsigned> utilization_gpu_pct;
  Opt<unsigned> utilization_memory_pct;
  // The GPU does not report utilisation at all (NVML: NOT_SUPPORTED; a dump:
  // "N/A"), as some GeForce and vGPU boards: not a failed read. Its memory and
  // processes then say whether it is idle.
  bool utilization_not_supported = false;
  Opt<int> temperature_c;
  Opt<int> temperature_slowdown_c;
  Opt<int> temperature_shutdown_c;
  Opt<unsigned> fan_speed_pct;
  Opt<double> power_draw_w;
  Opt<double> power_limit_w;          // Enforced limit.
  Opt<double> power_default_limit_w;  // The board's default limit (what it ships with).
  Clocks clocks;
  Opt<unsigned> pstate;  // 0..15.
  Opt<bool> persistence_mode;
  Opt<ComputeMode> compute_mode;
  Opt<bool> mig_mode_current;
  Opt<bool> mig_mode_pending;
  EccInfo ecc;
  RetiredPages retired_pages;
  RemappedRows remapped_rows;
  Opt<uint64_t> clock_event_reasons;            // Active reasons, clock_event bits.
  Opt<uint64_t> clock_event_reasons_supported;  // Supported reasons.
  PcieInfo pcie;
  std::vector<NvLinkState> nvlinks;  // Empty when unknown or no NVLink.

  std::vector<GpuProcess> processes;  // Compute and graphics, merged by PID.
  bool processes_known = false;       // False when the process lists could not be read.

  // Set when the GPU could not be reached at all (lost, no permission, timed out).
  // The other fields then hold whatever was read before the failure.
  Opt<ProbeError> unreachable;
};

// Topology: the closest common ancestor of two GPUs (NVML topology levels).
enum class TopologyLevel {
  kInternal = 0,     // Same board (multi-GPU board).
  kSingle = 10,      // One PCIe switch.
  kMultiple = 20,    // Several PCIe switches, no host bridge.
  kHostBridge = 30,  // The same host bridge.
  kNode = 40,        // Same NUMA node (CPU).
  kSystem = 50,      // Across CPUs (SMP interconnect).
};

struct TopologyLink {
  unsigned gpu_a = 0;
  unsigned gpu_b = 0;
  TopologyLevel level = TopologyLevel::kSystem;
  unsigned nvlinks = 0;  // Active NVLinks joining the two, when known; 0 = none seen.
};

enum class ProcessState {
  kRunning,
  kSleeping,
  kDiskSleep,  // Uninterruptible (D): signals cannot reach it.
  kZombie,
  kStopped,
  kIdle,
  kDead,
  kOther,
};

// Where a process lives, read from /proc/PID/cgroup.
struct ProcessOwner {
  Opt<std::string> container_runtime;  // "docker", "containerd", "podman", "lxc", "kubernetes".
  Opt<std::string> container_id;       // Full id as found in the cgroup path.
  Opt<std::string> systemd_unit;       // "jupyter.service", "session-4.scope", ...
  // The Slurm job and step the process runs in: from its cgroup
  // (proctrack/cgroup: .../job_15/step_0) or, where Slurm tracks processes
  // without cgroups (proctrack/linuxproc, pgid), from the root-owned
  // slurmstepd it descends from ("slurmstepd: [15.0]"). Step is "0",
  // "batch", "extern", "interactive", ...
  Opt<std::string> slurm_job_id;
  Opt<std::string> slurm_step;
  Opt<std::string> cgroup_path;
};

// What /proc says about one host process. Text fields (comm, cmdline) are raw
// bytes from another process: renderers must sanitise them before a terminal.
struct HostProcess {
  pid_t pid = 0;
  Opt<uid_t> uid;
  Opt<std::string> user;  // Resolved from uid; absent when no passwd entry.
  Opt<std::string> comm;
  std::vector<std::string> cmdline;  // argv; empty for kernel threads / zombies.
  Opt<ProcessState> state;
  Opt<pid_t> ppid;
  Opt<pid_t> pgid;               // Process group (a training run and its workers share one).
  Opt<pid_t> sid;                // Session; daemons lead their own.
  Opt<std::string> parent_comm;  // The parent's name, to tell orphans from services.
  Opt<int64_t> start_time_unix_ms;
  // Start time in clock ticks since boot (/proc/PID/stat field 22): exact, so
  // (pid, start_ticks) names one process for its whole life even when the PID
  // is later reused. What clean/kill check before signalling.
  Opt<uint64_t> start_ticks;
  // The executable's path (/proc/PID/exe); needs root or the owner. A process
  // can rename itself (comm, argv[0]) but not this.
  Opt<std::string> exe;
  Opt<double> age_s;          // At the snapshot's time.
  Opt<double> cpu_pct;        // Average over the process's life (as ps), or over a window.
  Opt<uint64_t> cpu_time_ms;  // utime + stime, for windowed CPU % from two snapshots.
  Opt<uint64_t> rss_bytes;
  ProcessOwner owner;
  std::vector<std::string> device_files;  // /dev/nvidia* it holds open ("fuser" view).
  bool listed_by_driver = false;          // Appears in some GPU's process list.
  bool readable = true;                   // False when /proc/PID could not be read.
  // Which full read of /proc by the collector's process cache filled the
  // lasting facts above (uid, user, command line, start, exe, owner); 0: none
  // counted. Two copies from one cache with the same non-zero value hold the
  // same lasting facts, so a look refills a finished look's copy with the
  // changing ones only (collect::ProcessCache).
  uint64_t facts_read = 0;
};

struct SystemInfo {
  Opt<std::string> driver_version;
  Opt<std::string> nvml_version;
  Opt<int> cuda_driver_version;  // e.g. 12020 for 12.2.
  Opt<unsigned> gpu_count;       // What the driver reports, even if handles fail.
};

struct HostInfo {
  Opt<std::string> hostname;
  Opt<uint64_t> boot_time_unix_s;
  Opt<unsigned> cpu_count;
};

// A Slurm job that holds resources of this node, as slurmctld reports it
// (squeue --json), with its GPUs mapped onto this snapshot's.
struct SlurmJob {
  std::string id;  // "15"; an array task's own job id, not "15_3"
  Opt<std::string> user;
  Opt<std::string> name;   // Raw job name: sanitise before a terminal.
  Opt<std::string> state;  // "RUNNING", "SUSPENDED", "COMPLETING"
  Opt<int64_t> start_time_unix_s;
  // Slurm's GRES indexes of its GPUs on this node (IDX), ascending, and the
  // Gpu::index of each that matched a GPU of this server, in the same order
  // (an index without a match here is left out, and named in
  // SlurmNode::notes).
  std::vector<unsigned> gres_indexes;
  std::vector<unsigned> gpus;
};

// This server as a Slurm node: the jobs slurmctld runs on it and which of its
// GPUs each was given. Present in a snapshot only when this host was looked up
// in Slurm (status and why on a Slurm node).
struct SlurmNode {
  std::string name;  // NodeName
  // Set when Slurm could not be asked ("squeue: no answer within 3000 ms");
  // then `jobs` is unknown, not empty.
  Opt<std::string> unread;
  std::vector<SlurmJob> jobs;
  // How GRES indexes became GPUs: "device files" (slurmd -G names each
  // index's /dev/nvidiaN, matched by minor number) or "minor order" (index k
  // taken as the k-th GPU by minor number, Slurm's own order, when slurmd -G
  // could not be run).
  std::string gpu_map;
  // What could not be read or matched, one line each, for the evidence.
  std::vector<std::string> notes;
};

struct Snapshot {
  SnapshotSource source = SnapshotSource::kNvml;
  std::string source_detail;  // Library path, scenario file or XML file.
  int64_t time_unix_ms = 0;   // When the probe started.
  double probe_duration_ms = 0;
  SystemInfo system;
  HostInfo host;
  std::vector<Gpu> gpus;
  std::vector<TopologyLink> topology;
  std::map<pid_t, HostProcess> processes;  // Every GPU process and device-file holder.
  bool processes_scanned = false;          // /proc was consulted (not in offline mode).
  // Where the paths in processes[].device_files live (--dev-dir): GPU N's
  // device file is <device_dir>/nvidia<N> (proc::GpuDeviceMinor).
  std::string device_dir = "/dev";
  std::vector<ProbeError> errors;
  bool timed_out = false;  // The probe hit its deadline; some values are missing.
  // The GPUs the NVIDIA kernel driver has probed: the entries of
  // /proc/driver/nvidia/gpus ("0000:3b:00.0"), read live beside NVML. A GPU
  // listed here that NVML does not list failed to initialise or was lost.
  // nullopt when not read (offline dumps, simulated servers, no driver).
  Opt<std::vector<std::string>> driver_gpu_bus_ids;
  Opt<SlurmNode> slurm;
};

}  // namespace gw

#endif  // GPUWARDEN_CORE_SNAPSHOT_H_
