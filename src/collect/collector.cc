#include "collect/collector.h"

#include <fmt/format.h>

#include <unistd.h>

#include <algorithm>
#include <map>
#include <set>
#include <utility>
#include <vector>

#include "collect/deadline.h"
#include "nvml/probe.h"
#include "proc/proc_reader.h"

namespace gw::collect {
namespace {

struct HostScan {
  DeviceHolders found;
  std::map<pid_t, HostProcess> processes;
};

ProbeError ProcError(std::string code, std::string message) {
  return ProbeError{"proc", std::move(code), std::move(message), std::nullopt, std::nullopt};
}

// Reads each pid in `pids` that is not yet in `into`. A process that exited in
// the meantime is simply absent: the renderer shows it as not found.
void ReadProcesses(proc::ProcReader& reader, const std::set<pid_t>& pids, int64_t now_unix_ms,
                   std::map<pid_t, HostProcess>& into) {
  proc::AncestorMemo ancestors;  // Siblings share their parents' reads.
  for (pid_t pid : pids) {
    if (into.count(pid)) continue;
    auto process = reader.ReadProcess(pid, now_unix_ms, &ancestors);
    if (process.ok()) into.emplace(pid, std::move(process).value());
  }
}

std::set<pid_t> DriverListedPids(const Snapshot& snapshot) {
  std::set<pid_t> pids;
  for (const Gpu& gpu : snapshot.gpus) {
    for (const GpuProcess& p : gpu.processes) pids.insert(p.pid);
  }
  return pids;
}

}  // namespace

std::string PartialScanMessage(const proc::HolderScanStats& stats) {
  // A warning names what it is about: the processes, by PID (docs/cli.md).
  constexpr size_t kNamed = 10;
  const std::vector<pid_t>& pids = stats.denied_pids;
  std::string which;
  for (size_t i = 0; i < pids.size() && i < kNamed; ++i) {
    which += fmt::format("{}{}", i == 0 ? "" : ", ", pids[i]);
  }
  if (pids.size() > kNamed) {
    which += fmt::format(" and {} more, all listed by status --verbose", pids.size() - kNamed);
  }
  const size_t n = pids.empty() ? stats.fd_denied : pids.size();
  return fmt::format(
      "could not read the open files of {} process{} (permission denied{}): device-file "
      "holders among them are not shown",
      n, n == 1 ? "" : "es",
      which.empty() ? "" : fmt::format("; PID{} {}", pids.size() == 1 ? "" : "s", which));
}

int64_t ProcReadBudgetMs(int64_t deadline_ms, int64_t remaining_ms) {
  constexpr int64_t kMinBudgetMs = 1000;
  return std::max(remaining_ms, std::min<int64_t>(deadline_ms / 2, kMinBudgetMs));
}

DeviceHolders ScanDeviceHolders(const CollectOptions& options, pid_t exclude_pid,
                                std::vector<pid_t> skip) {
  DeviceHolders out;
  proc::DeviceMatch match;
  match.dir = options.device_dir;
  match.prefix = options.device_prefix;
  match.exclude_pid = exclude_pid;
  match.skip = std::move(skip);
  proc::ProcReader reader(options.proc_root);
  proc::HolderScanStats stats;
  auto holders = reader.ScanDeviceHolders(match, &stats);
  if (!holders.ok()) {
    out.errors.push_back(ProcError(holders.error().code, holders.error().message));
    return out;
  }
  if (stats.fd_denied > 0) {
    // Without the right to read other users' fds the "fuser" view is
    // partial: holders may be missing, so say so rather than imply none.
    ProbeError partial = ProcError("partial_scan", PartialScanMessage(stats));
    partial.pids = stats.denied_pids;
    out.errors.push_back(std::move(partial));
  }
  out.holders = std::move(holders).value();
  out.listed = true;
  out.unread = std::move(stats.denied_pids);
  return out;
}

void AttachHostProcesses(Snapshot& snapshot, std::map<pid_t, HostProcess> host,
                         const std::map<pid_t, std::vector<std::string>>& holders) {
  // Sorted PIDs, not a std::set: this runs at every look, over every GPU
  // process.
  std::vector<pid_t> listed;
  for (const Gpu& gpu : snapshot.gpus) {
    for (const GpuProcess& p : gpu.processes) listed.push_back(p.pid);
  }
  std::sort(listed.begin(), listed.end());
  for (auto it = host.begin(); it != host.end();) {
    const pid_t pid = it->first;
    auto next = std::next(it);
    const bool is_listed = std::binary_search(listed.begin(), listed.end(), pid);
    auto held = holders.find(pid);
    if (is_listed || held != holders.end()) {
      auto node = host.extract(it);  // The node moves over, not its contents.
      HostProcess& p = node.mapped();
      p.listed_by_driver = is_listed;
      p.device_files = held == holders.end() ? std::vector<std::string>{} : held->second;
      auto placed = snapshot.processes.insert(std::move(node));
      if (!placed.inserted) placed.position->second = std::move(placed.node.mapped());
    }
    it = next;
  }
}

nvml::ProbeOptions NvmlProbeOptions(const CollectOptions& options) {
  nvml::ProbeOptions probe;
  probe.library_path = options.nvml_library;
  probe.deadline_ms = options.deadline_ms;
  probe.process_samples_since_us = options.process_samples_since_us;
  return probe;
}

Snapshot Collect(const CollectOptions& options, const Clock& clock) {
  const int64_t start_ms = clock.MonotonicMs();
  const int64_t now_unix_ms = clock.NowUnixMs();
  auto remaining_ms = [&] {
    return std::max<int64_t>(0, options.deadline_ms - (clock.MonotonicMs() - start_ms));
  };

  // The device-holder scan needs nothing from NVML: start it first, on its own
  // thread, so it overlaps the NVML probe.
  struct ScanShared {
    std::mutex mu;
    std::condition_variable cv;
    std::optional<HostScan> result;
  };
  auto scan_shared = std::make_shared<ScanShared>();
  const bool scan_holders = options.scan_processes && options.scan_device_files;
  if (scan_holders) {
    // Once NVML is loaded this process holds /dev/nvidiactl itself.
    std::thread([scan_shared, options, now_unix_ms] {
      HostScan scan;
      scan.found = ScanDeviceHolders(options, getpid());
      std::set<pid_t> pids;
      for (const auto& [pid, files] : scan.found.holders) pids.insert(pid);
      proc::ProcReader reader(options.proc_root);
      ReadProcesses(reader, pids, now_unix_ms, scan.processes);
      std::lock_guard<std::mutex> lock(scan_shared->mu);
      scan_shared->result = std::move(scan);
      scan_shared->cv.notify_all();
    }).detach();
  }

  Snapshot snapshot =
      options.nvml_session != nullptr
          ? options.nvml_session->Probe(clock, options.process_samples_since_us).snapshot
          : nvml::ProbeNvml(NvmlProbeOptions(options), clock).snapshot;
  if (options.simulated) {
    snapshot.source = SnapshotSource::kSimulated;
    snapshot.source_detail = options.scenario;
  }
  snapshot.time_unix_ms = now_unix_ms;
  snapshot.device_dir = options.device_dir;

  if (options.scan_processes) {
    snapshot.processes_scanned = true;
    std::map<pid_t, HostProcess> host;

    // Wait for the holder scan within what is left of the deadline.
    std::optional<HostScan> scan;
    if (!scan_holders) {
      scan.emplace();
    } else {
      std::unique_lock<std::mutex> lock(scan_shared->mu);
      scan_shared->cv.wait_for(lock, std::chrono::milliseconds(remaining_ms()),
                               [&] { return scan_shared->result.has_value(); });
      if (scan_shared->result) scan = std::move(scan_shared->result);
    }
    if (scan) {
      host = std::move(scan->processes);
      for (auto& e : scan->found.errors) snapshot.errors.push_back(std::move(e));
    } else {
      snapshot.timed_out = true;
      snapshot.errors.push_back(ProcError(
          "timeout", fmt::format("device-file holder scan of {} did not finish within {:.1f} s "
                                 "(a process stuck in uninterruptible sleep?)",
                                 options.proc_root, options.deadline_ms / 1000.0)));
    }

    // Processes the driver listed that the holder scan did not already read
    // (a process can use a GPU without holding a device file we can see).
    std::set<pid_t> missing;
    for (pid_t pid : DriverListedPids(snapshot)) {
      if (!host.count(pid)) missing.insert(pid);
    }
    if (!missing.empty()) {
      // These reads start only once NVML has answered; a probe whose NVML
      // part used the whole deadline (a hung GPU) still gives them a budget.
      const int64_t budget_ms = ProcReadBudgetMs(options.deadline_ms, remaining_ms());
      auto read = RunWithDeadline<std::map<pid_t, HostProcess>>(
          [root = options.proc_root, missing, now_unix_ms] {
            proc::ProcReader reader(root);
            std::map<pid_t, HostProcess> out;
            ReadProcesses(reader, missing, now_unix_ms, out);
            return out;
          },
          budget_ms);
      if (read) {
        host.merge(*read);
      } else {
        snapshot.timed_out = true;
        snapshot.errors.push_back(ProcError(
            "timeout", fmt::format("reading /proc for the GPU processes did not finish within "
                                   "{:.1f} s (a process stuck in uninterruptible sleep?)",
                                   static_cast<double>(budget_ms) / 1000.0)));
      }
    }

    AttachHostProcesses(snapshot, std::move(host),
                        scan ? scan->found.holders : std::map<pid_t, std::vector<std::string>>{});
  }
  proc::ProcReader host_reader(options.proc_root);
  if (options.read_host) snapshot.host = host_reader.ReadHost();
  // The GPUs the driver probed, to name one NVML does not list. A simulated
  // server's GPUs are not this machine's: then only a test's proc tree counts.
  if (!options.simulated || options.proc_root != "/proc") {
    if (auto gpus = host_reader.ListDriverGpus(); gpus.ok()) snapshot.driver_gpu_bus_ids = *gpus;
  }

  snapshot.probe_duration_ms = static_cast<double>(clock.MonotonicMs() - start_ms);
  return snapshot;
}

}  // namespace gw::collect
