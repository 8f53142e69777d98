// Internal to the rules: the shared view of the history every rule reads, and
// small helpers to describe processes and build findings. Not a public API.
#ifndef GPUWARDEN_DIAGNOSE_RULE_CONTEXT_H_
#define GPUWARDEN_DIAGNOSE_RULE_CONTEXT_H_

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/snapshot.h"
#include "diagnose/catalog.h"
#include "diagnose/finding.h"
#include "diagnose/idle_time.h"
#include "diagnose/memory_health.h"
#include "diagnose/rules.h"
#include "diagnose/xid_incidents.h"
#include "kmsg/kernel_event.h"
#include "proc/known_processes.h"

namespace gw::diagnose::internal {

// What holds a GPU in the latest snapshot: a process the driver lists on it,
// or one that only has its device file open (from /proc).
struct Holding {
  size_t gpu_i = 0;  // Position in latest().gpus.
  unsigned gpu = 0;  // GPU index.
  pid_t pid = 0;
  const GpuProcess* listed = nullptr;  // Null: holds only the device file.
  size_t hint = 0;                     // Position in the GPU's process list.
  const HostProcess* host = nullptr;   // Null when /proc has no entry.
  Opt<uint64_t> bytes() const { return listed ? listed->used_memory_bytes : std::nullopt; }
};

// The holdings grouped: one entry per listed (GPU, process) and one per
// unlisted process with all the GPUs whose device files it holds (a process
// that ran cuInit holds every /dev/nvidiaN and is reported once, not once per
// GPU).
struct HolderGroup {
  const Holding* h = nullptr;
  std::vector<unsigned> gpus;
};

// The history, with each GPU of the latest snapshot lined up across samples.
class RuleContext {
 public:
  // REQUIRES: !history.empty().
  RuleContext(std::span<const Snapshot> history, const DiagnoseOptions& options,
              std::span<const kmsg::KernelEvent> events);

  std::span<const Snapshot> history() const { return history_; }
  const Snapshot& latest() const { return history_.back(); }
  const DiagnoseOptions& options() const { return options_; }
  std::span<const kmsg::KernelEvent> events() const { return events_; }
  size_t samples() const { return history_.size(); }
  // Seconds between the first and the last sample (0 for one sample).
  double window_s() const { return window_s_; }
  // The caller's environment applies: the data is live, not an offline dump.
  bool live() const { return latest().source != SnapshotSource::kXmlDump; }

  // For latest().gpus[i]: the same GPU (by UUID, else index) in every sample,
  // oldest first; nullptr where a sample lacks it. The last entry is the GPU itself.
  std::span<const Gpu* const> Series(size_t i) const { return series_[i]; }

  // Whether per-process SM figures of latest().gpus[i] in sample `s` can be
  // believed: not when the GPU was busy while every process read 0 % (the
  // process-utilisation samples were missed, not the work).
  bool ProcessSmReliable(size_t i, size_t s) const { return sm_reliable_[i][s] != 0; }

  // Every holding of the latest snapshot: listed processes GPU by GPU, then
  // unlisted device-file holders (only when /proc was scanned). Built once.
  const std::vector<Holding>& Holdings() const;
  // Holdings() grouped (HolderGroup), in the same order. Built once.
  const std::vector<HolderGroup>& HolderGroups() const;

  // The kernel log's Xids as incidents, placed and aged. Built once.
  const XidIncidents& Incidents() const;
  // The memory judgement of latest().gpus[i] (memory_health.h), from its
  // counters and its current incidents. Built once for every GPU.
  const MemoryHealth& Memory(size_t i) const;
  // What the looks of the history saw of each holder's work (idle_time.h).
  // Built once.
  const ActivityLog& Activity() const;

 private:
  std::span<const Snapshot> history_;
  const DiagnoseOptions& options_;
  std::span<const kmsg::KernelEvent> events_;
  double window_s_ = 0;
  std::vector<std::vector<const Gpu*>> series_;
  std::vector<std::vector<char>> sm_reliable_;
  mutable Opt<std::vector<Holding>> holdings_;
  mutable Opt<std::vector<HolderGroup>> holder_groups_;
  mutable Opt<XidIncidents> incidents_;
  mutable Opt<std::vector<MemoryHealth>> memory_;
  mutable Opt<ActivityLog> activity_;
};

// Positions in snapshot.gpus of the GPUs whose <snapshot.device_dir>/nvidiaN
// `host` holds (matched by minor number); control files do not count.
std::vector<size_t> HeldGpus(const Snapshot& snapshot, const HostProcess& host);
// The driver lists `pid` on some GPU of the snapshot.
bool ListedAnywhere(const Snapshot& snapshot, pid_t pid);

// A process's GPU memory and SM use on one GPU across the window.
struct ProcessWindow {
  unsigned present = 0;   // Samples where the GPU lists it.
  unsigned sm_known = 0;  // ... with a reliable SM figure.
  unsigned sm_busy = 0;   // ... with SM > 0.
  unsigned sm_max = 0;
};
// `hint` is the process's position in the latest GPU's list (lists are
// usually in the same order from sample to sample).
ProcessWindow ProcessOverWindow(const RuleContext& ctx, size_t gpu_i, pid_t pid, size_t hint);

const HostProcess* FindHost(const Snapshot& snapshot, pid_t pid);
const GpuProcess* FindGpuProcess(const Gpu& gpu, pid_t pid, size_t hint = 0);

// "alice", else "uid 1001", else "?" (sanitised).
std::string UserText(const HostProcess* host);
// Text from another process, made safe for a terminal (printable ASCII is
// passed through as is).
std::string Safe(std::string_view raw);
// "python", from comm, argv[0]'s base name or the dump's process name (sanitised); "?".
std::string NameText(const HostProcess* host, const GpuProcess* gpu_process);
// "alice, docker 3f2a1b9c0d1e" / "bob, jupyter.service" / "alice, slurm job
// 1234 \"train\"" (the job's name from the snapshot's Slurm section, when it
// has the job) ... (sanitised).
std::string OwnerText(const Snapshot& snapshot, const HostProcess* host);
// "PID 4242 python (alice, jupyter.service)"; a known process says its role:
// "PID 1500 Xorg (root, display server)".
std::string ProcessText(const Snapshot& snapshot, pid_t pid, const HostProcess* host,
                        const GpuProcess* gpu_process);
// The known process (proc/known_processes.h) a holder is, from /proc or, in a
// dump, from the driver's process name.
std::optional<proc::KnownProcess> KnownHolder(const HostProcess* host,
                                              const GpuProcess* gpu_process);

std::string Pct(double value);                           // "98.9 %"
std::string GpuList(const std::vector<unsigned>& gpus);  // "0,2,3"
double Gib(uint64_t bytes);

Evidence TextEvidence(std::string name, std::string value);
Evidence BytesEvidence(std::string name, uint64_t bytes);
Evidence NumberEvidence(std::string name, double number, std::string unit, std::string value);

// Evidence "pci_bus_id": where GPU `gpu` sits ("0000:bb:00"), and how that is
// known when NVML did not say it (core/gpu_pci.h: placed by NVML's order).
Evidence PciEvidence(const GpuPciMap& map, unsigned gpu, const PciAddress& slot);

// A finding of `code` with the catalog's fixed fields. REQUIRES: code is in the catalog.
Finding MakeFinding(std::string_view code, std::vector<unsigned> gpus, std::vector<pid_t> pids,
                    std::string message, double impact);
// Appends the catalog's steps for the finding, filled with `values` (gpu
// defaults to the finding's GPUs), after any steps the rule already added.
void AddCatalogSteps(Finding& finding, StepValues values = {});

// GPU-level facts several rules share.
Opt<uint64_t> FreeBytes(const Gpu& gpu);
Opt<double> UsedPct(const Gpu& gpu);
// The free memory below which a GPU of `total_bytes` is full:
// max(vram_full_free_pct % of it, vram_full_min_free_bytes), at most the total.
uint64_t FullMarkFreeBytes(uint64_t total_bytes, const DiagnoseOptions& options);
// Free memory known and below the full mark.
bool VramFull(const Gpu& gpu, const DiagnoseOptions& options);
// Used memory known and at most max(free_used_pct % of total, free_used_min_bytes).
bool MemoryEssentiallyFree(const Gpu& gpu, const DiagnoseOptions& options);
// Utilisation >= saturated_util_pct in every sample where it is known (and
// known in at least one).
bool SaturatedOverWindow(std::span<const Gpu* const> series, const DiagnoseOptions& options);
// Neither its memory nor its utilisation was read, so what the GPU is doing
// cannot be told: the probe gave up on it before the first value, or the
// library answers nothing (or "Unknown Error") for both. A temperature or a
// power reading alone does not say whether work runs there.
bool UsageUnread(const Gpu& gpu);
// Why a GPU of `snapshot` that is not unreachable has no usable reading, in
// words, for the verdict line and the health report. A GPU with nothing read
// at all was not tried (its own call that did not return would make it
// unreachable): "not tried: " and why — the probe's own call that did not
// return (init, the GPU count), no thread for it, or the deadline came first.
std::string UnreadReason(const Gpu& gpu, const Snapshot& snapshot);
// The finding names `gpu` among its GPUs.
bool About(const Finding& finding, unsigned gpu);
bool ExclusiveMode(const Gpu& gpu);
bool HasComputeProcess(const Gpu& gpu);
// Processes known as reparented to init or a subreaper while still in their
// old process group, not session leaders, whose group leader is not alive in
// the snapshot.
bool LooksOrphaned(const Snapshot& snapshot, const HostProcess& host);

// The rules, one function each (rules_*.cc). Each appends its findings.
using RuleFn = void (*)(const RuleContext&, std::vector<Finding>&);
void RuleVramExhausted(const RuleContext& ctx, std::vector<Finding>& out);
void RuleComputeSaturated(const RuleContext& ctx, std::vector<Finding>& out);
void RuleZombieHolder(const RuleContext& ctx, std::vector<Finding>& out);
void RuleUninterruptibleHolder(const RuleContext& ctx, std::vector<Finding>& out);
void RuleOrphanHolder(const RuleContext& ctx, std::vector<Finding>& out);
void RuleIdleHolder(const RuleContext& ctx, std::vector<Finding>& out);
void RuleInvisibleHolder(const RuleContext& ctx, std::vector<Finding>& out);
void RuleUnlistedDeviceHolder(const RuleContext& ctx, std::vector<Finding>& out);
void RuleForeignPid(const RuleContext& ctx, std::vector<Finding>& out);
void RuleServiceHolder(const RuleContext& ctx, std::vector<Finding>& out);
void RuleSlurmAllocated(const RuleContext& ctx, std::vector<Finding>& out);
void RuleSlurmOutsideAllocation(const RuleContext& ctx, std::vector<Finding>& out);
void RuleNeed(const RuleContext& ctx, std::vector<Finding>& out);
void RuleComputeMode(const RuleContext& ctx, std::vector<Finding>& out);
void RuleMig(const RuleContext& ctx, std::vector<Finding>& out);
void RulePersistence(const RuleContext& ctx, std::vector<Finding>& out);
void RuleCudaVisibleDevices(const RuleContext& ctx, std::vector<Finding>& out);
void RuleProbeErrors(const RuleContext& ctx, std::vector<Finding>& out);
void RuleNoGpu(const RuleContext& ctx, std::vector<Finding>& out);
void RuleEcc(const RuleContext& ctx, std::vector<Finding>& out);
void RuleRetiredPages(const RuleContext& ctx, std::vector<Finding>& out);
void RuleRowRemap(const RuleContext& ctx, std::vector<Finding>& out);
void RulePcieLink(const RuleContext& ctx, std::vector<Finding>& out);
void RulePcieReplay(const RuleContext& ctx, std::vector<Finding>& out);
void RuleNvlink(const RuleContext& ctx, std::vector<Finding>& out);
void RuleIdleThermal(const RuleContext& ctx, std::vector<Finding>& out);
void RuleClockEvents(const RuleContext& ctx, std::vector<Finding>& out);
void RuleXid(const RuleContext& ctx, std::vector<Finding>& out);

}  // namespace gw::diagnose::internal

#endif  // GPUWARDEN_DIAGNOSE_RULE_CONTEXT_H_
