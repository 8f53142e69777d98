// Collect: one look at the server. Reads the GPUs through NVML (under the probe
// deadline) and, in parallel, the processes that hold them from /proc — the
// driver's process lists and the device-file holders ("fuser" view) — and joins
// both into one Snapshot.
//
// Never hangs: NVML and /proc work each run under the same overall deadline; what
// did not finish is reported in Snapshot::errors and Snapshot::timed_out.
#ifndef GPUWARDEN_COLLECT_COLLECTOR_H_
#define GPUWARDEN_COLLECT_COLLECTOR_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/clock.h"
#include "core/snapshot.h"
#include "nvml/probe.h"
#include "proc/proc_reader.h"

namespace gw::collect {

struct CollectOptions {
  // The NVML library to load (see nvml::ResolveLibraryPath).
  std::string nvml_library = "libnvidia-ml.so.1";
  // True when nvml_library is gpuwarden's simulator (marks the snapshot).
  bool simulated = false;
  std::string scenario;  // The scenario file, when simulated.
  // Deadline for the whole probe, NVML and /proc together.
  int64_t deadline_ms = 2000;
  // Where /proc and the NVIDIA device files are; tests point these elsewhere.
  std::string proc_root = "/proc";
  std::string device_dir = "/dev";
  std::string device_prefix = "nvidia";
  // Attribute processes from /proc (off: NVML facts only).
  bool scan_processes = true;
  // With scan_processes: also find every process that holds an NVIDIA device
  // file (the "fuser" view: processes the driver does not list, e.g. in
  // another PID namespace). The costliest part of a look — every open file of
  // every process — so a caller that looks often may do it only now and then;
  // off, only the processes the driver lists are read from /proc.
  bool scan_device_files = true;
  // Per-process utilisation samples newer than this (CPU µs; 0 = all the
  // driver has buffered).
  uint64_t process_samples_since_us = 0;
  // Read the host's own facts (name, boot time, CPU count; /proc/stat, which
  // is long on a large server). A caller that looks often may reuse an
  // earlier look's instead.
  bool read_host = true;
  // When set, NVML is read through this long-lived session (loaded and
  // initialised once; its own library path and deadline) instead of a fresh
  // probe: for callers that look often. Must outlive the call.
  nvml::ProbeSession* nvml_session = nullptr;
};

Snapshot Collect(const CollectOptions& options, const Clock& clock);

// The NVML part of `options`: library path, deadline and sample window; what
// a caller passes to an nvml::ProbeSession it keeps for CollectOptions::nvml_session.
nvml::ProbeOptions NvmlProbeOptions(const CollectOptions& options);

// The time the /proc reads of a look get once NVML has answered: what is
// left of the deadline, but at least half the deadline up to a second,
// however long NVML took, so that a timeout reported for them is /proc's,
// never NVML's.
int64_t ProcReadBudgetMs(int64_t deadline_ms, int64_t remaining_ms);

// Every process that holds one of the NVIDIA device files (the "fuser" view),
// with the files it holds, except `exclude_pid`; errors (the scan failed, or
// some processes' open files could not be read) as Snapshot::errors takes
// them. Reads every open file of every process: the costliest part of a look,
// and it can block on a process stuck in the kernel (run it under a deadline).
struct DeviceHolders {
  std::map<pid_t, std::vector<std::string>> holders;
  std::vector<ProbeError> errors;
  bool listed = false;        // /proc could be listed: `holders` is the scan's.
  std::vector<pid_t> unread;  // Sorted: processes whose open files could not be read.
};
// The warning of a scan that could not read some processes' open files: how
// many, and which (the first ten PIDs, then how many more and where the rest
// are listed; the error's `pids` holds them all).
std::string PartialScanMessage(const proc::HolderScanStats& stats);

// `skip`: sorted PIDs whose files are not read (proc::DeviceMatch::skip).
DeviceHolders ScanDeviceHolders(const CollectOptions& options, pid_t exclude_pid,
                                std::vector<pid_t> skip = {});

// Joins host facts into a snapshot: for every GPU process and every device-file
// holder, the HostProcess from `host` (when present), with listed_by_driver and
// device_files set; what it attaches is moved out of `host`. Pure; exposed for
// tests.
void AttachHostProcesses(Snapshot& snapshot, std::map<pid_t, HostProcess> host,
                         const std::map<pid_t, std::vector<std::string>>& holders);

}  // namespace gw::collect

#endif  // GPUWARDEN_COLLECT_COLLECTOR_H_
