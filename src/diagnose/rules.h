// The diagnosis rules: pure functions from a history of Snapshots (and,
// optionally, kernel-log events) to Findings. No I/O, no clock: time comes in
// the snapshots.
//
// The history is oldest first: one Snapshot (`gpuwarden why --now`), a short
// window of a few seconds (`gpuwarden why`), or a daemon's longer history.
// Rules do not care where it came from; they work with one sample. "No data"
// (a nullopt field, an unreachable GPU, processes_known false, an offline dump
// without /proc) makes a rule skip, never report.
#ifndef GPUWARDEN_DIAGNOSE_RULES_H_
#define GPUWARDEN_DIAGNOSE_RULES_H_

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"
#include "core/snapshot.h"
#include "core/units.h"
#include "diagnose/finding.h"
#include "diagnose/idle_time.h"
#include "kmsg/event_age.h"
#include "kmsg/kernel_event.h"

namespace gw::diagnose {
// What the caller wants to run: `gpus` GPUs with `bytes_per_gpu` free each,
// optionally all joined by NVLink.
struct NeedRequest {
  unsigned gpus = 1;
  uint64_t bytes_per_gpu = 0;
  bool nvlink = false;
};

// Parses a need: "SIZE" or "NxSIZE", then optionally "+nvlink":
//   "20G", "2x24G", "4x40GiB", "2X24g", "8x80G+nvlink".
// SIZE is gw::ParseSize's (binary units, "20G" = 20 GiB). N is 1..1024 and
// SIZE is above 0. Errors (code "malformed" or "out_of_range") quote the input.
Result<NeedRequest> ParseNeed(std::string_view text);

// The need as text, as ParseNeed reads it back: "2x24 GiB+nvlink" -> "2x24G+nvlink".
std::string FormatNeed(const NeedRequest& need);

// Which health findings still let new work be placed on their GPU: the one
// rule that `why --need` and the queue place with (health.h, UnhealthyGpus;
// docs/diagnosis.md "Placement"). Set from config.toml's [placement] table.
struct PlacementHealth {
  // A GPU whose only health finding is ROW_REMAP_PENDING takes new work:
  // NVIDIA's guidance is that a pending remap leaves the GPU usable and the
  // next reset activates it. Such a GPU is placed on last (so that it may be
  // idle for the reset) and the answer says so. False: it is left out.
  bool use_remap_pending = true;
};

// Thresholds and the caller's context. Defaults are documented in
// docs/diagnosis.md; the catalog's texts quote them.
struct DiagnoseOptions {
  // VRAM_EXHAUSTED: a GPU is full when its free memory is below
  // max(vram_full_free_pct % of its total, vram_full_min_free_bytes): relative
  // to its size (8 GiB free on an 80 GiB GPU, 1.6 GiB on a 16 GiB one).
  double vram_full_free_pct = 10;
  uint64_t vram_full_min_free_bytes = kGiB;
  // GPU state "free": used <= max(free_used_pct % of total, free_used_min_bytes)
  // with no compute process and utilisation <= idle_util_max_pct.
  double free_used_pct = 2;
  uint64_t free_used_min_bytes = uint64_t{256} << 20;
  // COMPUTE_SATURATED: utilisation >= this in every sample (one process is enough).
  double saturated_util_pct = 90;
  // IDLE_HOLDER: holds >= this and was seen without GPU work for at least
  // idle_holder_min_idle_s (idle_time.h: measured, never the process's age),
  // and has run at least idle_holder_min_age_s (0: no minimum beyond the
  // idle time, which never exceeds the age).
  uint64_t idle_holder_min_bytes = kGiB;
  double idle_holder_min_idle_s = 600;
  double idle_holder_min_age_s = 0;
  // INVISIBLE_HOLDER: used >= this with no process listed.
  uint64_t invisible_min_bytes = kGiB;
  // UNINTERRUPTIBLE_HOLDER: D state over a window at least this long (2+ samples).
  double stuck_min_s = 2;
  // HOT_WHILE_IDLE / FAN_HIGH_WHILE_IDLE: idle means utilisation <= idle_util_max_pct.
  double hot_idle_temp_c = 80;
  double fan_idle_high_pct = 80;
  double idle_util_max_pct = 5;
  // A temperature drop over the window of more than this means "cooling down".
  double cooling_drop_c = 2;
  // PCIE_LINK_DEGRADED: only judged in samples with utilisation >= this.
  double pcie_load_util_pct = 50;
  // PCIE_REPLAY_RATE: above DCGM's per-lane rate and at least this many replays.
  uint64_t pcie_replay_min_count = 5;
  // Memory health limits (DCGM).
  uint64_t retired_pages_limit = 63;
  uint64_t retired_pages_dbe_limit = 15;
  uint64_t row_remap_uncorrectable_limit = 512;

  // The caller's request (--need); enables the placement findings.
  Opt<NeedRequest> need;
  // Which degraded GPUs placement may still use ([placement] in config.toml).
  PlacementHealth placement;
  // Who asks: decides whose processes are "yours" and what a non-root caller
  // cannot see.
  Opt<uid_t> caller_uid;
  bool caller_is_root = false;
  // The caller's environment, as set (nullopt = unset).
  Opt<std::string> cuda_visible_devices;
  Opt<std::string> cuda_device_order;
  // gpuwarden itself runs in a container (its own PID namespace).
  bool in_container = false;
  // The /proc it read lists every process of the host
  // (proc::ProcReader::ShowsEveryHostProcess): a PID the driver lists and
  // /proc lacks has ended (GONE_PROCESS_HOLDER), not hidden elsewhere.
  bool proc_shows_every_process = false;

  // What gpuwardend's history says about the time before the looks judged
  // (idle_time.h): how long each holder has been idle. Null: no history.
  std::shared_ptr<const ActivityHistory> activity_history;
  // Names the administrator protects beyond the known processes (config
  // `protect`, --protect): proc::ProtectedName's rule, which clean applies too.
  std::vector<std::string> protect;

  // Which kernel-log events are current (the running boot, --since, the age
  // limit): kmsg/event_age.h. The reference time is the latest snapshot's.
  kmsg::EventAgeOptions events;
};

// Runs every rule over `history` (oldest first) and returns the findings in
// rule order (unranked; Diagnose ranks them). Empty history: no findings.
// `kernel_events` are the kernel log's NVRM events, chronological (as
// kmsg::ReadKernelEvents returns them): current Xids become XID_* findings,
// older ones XID_HISTORY, GPUs the kernel saw that no sample lists
// GPU_MISSING (options.events says what "current" means).
std::vector<Finding> RunRules(std::span<const Snapshot> history, const DiagnoseOptions& options,
                              std::span<const kmsg::KernelEvent> kernel_events = {});

// The registered rules, for listings and tests: a name and the codes it emits.
struct RuleInfo {
  std::string_view name;
  std::vector<std::string_view> codes;
};
std::vector<RuleInfo> ListRules();

}  // namespace gw::diagnose

#endif  // GPUWARDEN_DIAGNOSE_RULES_H_
