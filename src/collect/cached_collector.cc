#include "collect/cached_collector.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <utility>

#include "collect/deadline.h"
#include "core/clock.h"
#include "proc/proc_parse.h"

#include <fmt/format.h>

namespace gw::collect {
namespace {

void SortUnique(std::vector<pid_t>& v) {
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
}

// `to` = `from`, where `to` already holds the lasting facts of the same full
// read (facts_read): only what a refresh or a look changes is copied. Every
// field that ProcessCache::Refresh or AttachHostProcesses sets must be here.
void CopyChangingFacts(HostProcess& to, const HostProcess& from) {
  to.pid = from.pid;
  to.comm = from.comm;
  to.state = from.state;
  to.ppid = from.ppid;
  to.pgid = from.pgid;
  to.sid = from.sid;
  to.parent_comm = from.parent_comm;
  to.age_s = from.age_s;
  to.cpu_pct = from.cpu_pct;
  to.cpu_time_ms = from.cpu_time_ms;
  to.rss_bytes = from.rss_bytes;
  to.device_files = from.device_files;
  to.listed_by_driver = from.listed_by_driver;
  to.readable = from.readable;
}

}  // namespace

ProcessCache::ProcessCache(std::string proc_root, int64_t stat_every_ms)
    : root_(std::move(proc_root)),
      stat_every_ms_(std::max<int64_t>(0, stat_every_ms)),
      reader_(root_),
      clock_ticks_(sysconf(_SC_CLK_TCK)),
      page_size_(sysconf(_SC_PAGESIZE)) {}

ProcessCache::~ProcessCache() {
  for (auto& [pid, e] : cache_) {
    if (e.stat_fd >= 0) close(e.stat_fd);
  }
}

std::map<pid_t, ProcessCache::Entry>::iterator ProcessCache::Drop(
    std::map<pid_t, Entry>::iterator it) {
  if (it->second.stat_fd >= 0) {
    close(it->second.stat_fd);
    --open_files_;
  }
  return cache_.erase(it);
}

void ProcessCache::ScheduleStat(Entry& entry, int64_t now_unix_ms) {
  if (stat_every_ms_ == 0) {
    entry.stat_due_ms = 0;
    return;
  }
  // A clock set back before the origin moves it (the marks stay whole
  // intervals apart from then on).
  if (!marks_from_ms_ || now_unix_ms < *marks_from_ms_) marks_from_ms_ = now_unix_ms;
  const int64_t since = now_unix_ms - *marks_from_ms_;
  entry.stat_due_ms = *marks_from_ms_ + (since / stat_every_ms_ + 1) * stat_every_ms_;
}

bool ProcessCache::Fresh(const Entry& entry, int64_t now_unix_ms) const {
  // A due time further off than one interval: the clock went back; read it now.
  return entry.process.start_ticks && now_unix_ms < entry.stat_due_ms &&
         entry.stat_due_ms - now_unix_ms <= stat_every_ms_;
}

bool ProcessCache::WouldRead(const std::vector<pid_t>& pids, const std::vector<pid_t>& listed,
                             int64_t now_unix_ms) const {
  if (pids.size() != listed.size()) return true;  // A PID not listed is read every time.
  auto it = cache_.begin();
  for (size_t i = 0; i < pids.size(); ++i) {
    if (pids[i] != listed[i]) return true;
    while (it != cache_.end() && it->first < pids[i]) ++it;
    if (it == cache_.end() || it->first != pids[i] || !Fresh(it->second, now_unix_ms)) return true;
  }
  return false;
}

std::optional<std::string> ProcessCache::ReadStat(pid_t pid, Entry* entry) {
  char buf[2048];
  if (entry != nullptr && entry->stat_fd >= 0) {
    const ssize_t n = pread(entry->stat_fd, buf, sizeof buf, 0);
    if (n > 0) return std::string(buf, static_cast<size_t>(n));
    close(entry->stat_fd);  // Its process is gone (ESRCH); the PID may be another's now.
    entry->stat_fd = -1;
    --open_files_;
  }
  const std::string path = root_ + "/" + std::to_string(pid) + "/stat";
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  const ssize_t n = pread(fd, buf, sizeof buf, 0);
  if (n <= 0) {
    close(fd);
    return std::nullopt;
  }
  if (entry != nullptr && open_files_ < kMaxOpenFiles) {
    entry->stat_fd = fd;
    ++open_files_;
  } else {
    close(fd);
  }
  return std::string(buf, static_cast<size_t>(n));
}

std::map<pid_t, HostProcess> ProcessCache::Refresh(std::vector<pid_t> pids, int64_t now_unix_ms,
                                                   std::vector<pid_t> listed,
                                                   std::map<pid_t, HostProcess> spare) {
  // Sorted vectors rather than sets: this runs at every look, over every GPU
  // process.
  SortUnique(pids);
  SortUnique(listed);
  std::map<pid_t, HostProcess> out;
  // Each result goes into a node of `spare` when one is left, taken in PID
  // order: with the same processes from look to look, a node gets the same
  // process again and its strings are copied into the room they had, with no
  // allocation.
  auto put = [&](pid_t pid, auto&& process) {
    if (spare.empty()) {
      out.emplace_hint(out.end(), pid, std::forward<decltype(process)>(process));
      return;
    }
    auto node = spare.extract(spare.begin());
    node.key() = pid;
    if (process.facts_read != 0 && node.mapped().facts_read == process.facts_read) {
      // The same process as a look ago: its command line, user and owner
      // are there already. (Most of a light look's time was this copy.)
      CopyChangingFacts(node.mapped(), process);
    } else {
      node.mapped() = std::forward<decltype(process)>(process);
    }
    out.insert(out.end(), std::move(node));
  };
  // One walk over the cache beside the sorted PIDs, not a search a PID: the
  // cache's nodes are cold a second after the last look, and a search costs
  // a cache miss a level of the tree. Entries for PIDs not asked for are
  // dropped on the way.
  auto it = cache_.begin();
  size_t listed_at = 0;
  for (pid_t pid : pids) {
    while (it != cache_.end() && it->first < pid) it = Drop(it);
    Entry* entry = it != cache_.end() && it->first == pid ? &it->second : nullptr;
    while (listed_at < listed.size() && listed[listed_at] < pid) ++listed_at;
    const bool is_listed = listed_at < listed.size() && listed[listed_at] == pid;
    if (entry != nullptr && is_listed && Fresh(*entry, now_unix_ms)) {
      // Vouched for by the driver and read recently enough: only its age
      // moves on.
      HostProcess& p = entry->process;
      if (p.start_time_unix_ms) {
        p.age_s =
            static_cast<double>(std::max<int64_t>(0, now_unix_ms - *p.start_time_unix_ms)) / 1000.0;
      }
      put(pid, std::as_const(p));
      ++it;
      continue;
    }
    auto text = ReadStat(pid, entry);
    ++stat_reads_;
    if (!text) {
      if (entry != nullptr) it = Drop(it);
      continue;
    }
    auto stat = proc::ParseStat(*text);
    if (!stat.ok()) {
      if (entry != nullptr) ++it;
      continue;
    }
    if (entry != nullptr && entry->process.start_ticks == stat->start_ticks) {
      HostProcess& p = entry->process;
      p.state = proc::StateFromChar(stat->state);
      p.comm = stat->comm;  // A process may rename itself (prctl PR_SET_NAME).
      if (!p.ppid || *p.ppid != stat->ppid) {
        // Reparented (its parent ended): the new parent's name tells an
        // orphan under init or a subreaper from a child of a service.
        p.parent_comm.reset();
        if (stat->ppid > 0) {
          if (auto parent = reader_.ReadStat(stat->ppid); parent.ok()) p.parent_comm = parent->comm;
        }
      }
      p.ppid = stat->ppid;
      p.pgid = stat->pgrp;
      p.sid = stat->session;
      if (clock_ticks_ > 0) {
        p.cpu_time_ms =
            (stat->utime_ticks + stat->stime_ticks) * 1000 / static_cast<uint64_t>(clock_ticks_);
      }
      if (p.start_time_unix_ms) {
        const int64_t age_ms = std::max<int64_t>(0, now_unix_ms - *p.start_time_unix_ms);
        p.age_s = static_cast<double>(age_ms) / 1000.0;
        if (age_ms > 0 && p.cpu_time_ms) {
          p.cpu_pct = 100.0 * static_cast<double>(*p.cpu_time_ms) / static_cast<double>(age_ms);
        }
      }
      if (stat->rss_pages >= 0 && page_size_ > 0) {
        p.rss_bytes = static_cast<uint64_t>(stat->rss_pages) * static_cast<uint64_t>(page_size_);
      }
      ScheduleStat(*entry, now_unix_ms);
      put(pid, std::as_const(p));
      ++it;
      continue;
    }
    // New to the cache, or the PID names another process now.
    auto full = reader_.ReadProcess(pid, now_unix_ms);
    ++full_reads_;
    if (!full.ok()) {
      if (entry != nullptr) it = Drop(it);
      continue;
    }
    full->facts_read = full_reads_;
    if (entry == nullptr) {
      it = cache_.emplace_hint(it, pid, Entry{});
      entry = &it->second;
      ReadStat(pid, entry);  // Keeps its stat file open for the next ticks.
    }
    entry->process = *full;
    ScheduleStat(*entry, now_unix_ms);
    put(pid, std::move(*full));
    ++it;
  }
  while (it != cache_.end()) it = Drop(it);
  return out;
}

std::optional<uint64_t> ProcessCache::StartTicks(pid_t pid) const {
  auto it = cache_.find(pid);
  if (it == cache_.end()) return std::nullopt;
  return it->second.process.start_ticks;
}

namespace {
const Clock& TheRealClock() {
  static const RealClock clock;
  return clock;
}
}  // namespace

CachedCollector::CachedCollector(collect::CollectOptions options, int64_t full_every_ms,
                                 const Clock* clock, int64_t stat_every_ms)
    : options_(std::move(options)),
      nvml_(std::make_unique<nvml::ProbeSession>(collect::NvmlProbeOptions(options_))),
      full_every_ms_(full_every_ms),
      clock_(clock != nullptr ? *clock : TheRealClock()),
      shared_(std::make_shared<Shared>(options_.proc_root, stat_every_ms)) {
  options_.nvml_session = nvml_.get();
}

Snapshot CachedCollector::Look(uint64_t samples_since_us, bool full_allowed) {
  const Clock& clock = clock_;
  const int64_t now = clock.MonotonicMs();
  collect::CollectOptions options = options_;
  options.process_samples_since_us = samples_since_us;
  ++looks_;
  const bool full = options_.scan_processes && full_allowed &&
                    (last_full_ms_ < 0 || now - last_full_ms_ >= full_every_ms_);
  last_full_ = full;
  if (!options_.scan_processes) return collect::Collect(options, clock);

  // NVML, and the host's facts at a full look (else the last full look's).
  // Then, under what is left of the deadline and on the worker (a process
  // stuck in the kernel can block a read of /proc): at a full look the
  // device-file holder scan; the processes the driver lists and the holders
  // through the cache.
  options.scan_processes = false;
  options.read_host = full || !host_.has_value();
  const int64_t start = clock.MonotonicMs();
  Snapshot snapshot = collect::Collect(options, clock);
  if (options.read_host) {
    host_ = snapshot.host;
  } else {
    snapshot.host = *host_;
  }
  snapshot.processes_scanned = true;
  std::vector<pid_t> listed;
  for (const Gpu& gpu : snapshot.gpus) {
    for (const GpuProcess& p : gpu.processes) listed.push_back(p.pid);
  }
  const int64_t left =
      ProcReadBudgetMs(options.deadline_ms, options.deadline_ms - (clock.MonotonicMs() - start));
  struct Found {
    std::optional<DeviceHolders> scan;
    std::map<pid_t, HostProcess> processes;
  };
  std::vector<pid_t> pids = listed;
  if (!full) {
    for (const auto& [pid, files] : holders_) pids.push_back(pid);
  }
  // At a full look, what the last one learnt of the processes the driver
  // listed then (copied once a scan, for the worker).
  std::map<pid_t, uint64_t> scanned_listed;
  std::map<pid_t, std::vector<std::string>> scanned_holders;
  if (full) {
    scanned_listed = scanned_listed_;
    for (const auto& entry : scanned_listed) {
      if (auto it = holders_.find(entry.first); it != holders_.end()) {
        scanned_holders.emplace(entry.first, it->second);
      }
    }
  }
  std::optional<Found> found;
  if (!full) {
    // When no PID needs a read (all listed, cached and not due: most light
    // looks), the cache answers here, with no thread to wake. A worker stuck
    // in /proc may hold the cache: then the worker's path reports it.
    SortUnique(pids);
    std::vector<pid_t> sorted_listed = listed;
    SortUnique(sorted_listed);
    std::unique_lock<std::mutex> lock(shared_->mu, std::try_to_lock);
    if (lock.owns_lock() && !shared_->cache.WouldRead(pids, sorted_listed, snapshot.time_unix_ms)) {
      std::map<pid_t, HostProcess> spare;
      {
        std::lock_guard<std::mutex> spare_lock(shared_->spare_mu);
        spare.swap(shared_->spare);
      }
      found.emplace();
      found->processes = shared_->cache.Refresh(std::move(pids), snapshot.time_unix_ms,
                                                std::move(sorted_listed), std::move(spare));
      ++unread_looks_;
    }
  }
  const uint64_t refused_before = proc_worker_.refused();
  if (!found) {
    found = proc_worker_.Run<Found>(
        [shared = shared_, options, full, pids = std::move(pids), listed,
         scanned_listed = std::move(scanned_listed), scanned_holders = std::move(scanned_holders),
         now_unix = snapshot.time_unix_ms, self = getpid()]() mutable {
          Found out;
          if (full) {
            // Listed now and scanned before as the same process: not read again.
            std::vector<pid_t> known;
            {
              std::lock_guard<std::mutex> lock(shared->mu);
              for (pid_t pid : listed) {
                auto it = scanned_listed.find(pid);
                if (it != scanned_listed.end() && shared->cache.StartTicks(pid) == it->second) {
                  known.push_back(pid);
                }
              }
            }
            SortUnique(known);
            // Once NVML is loaded this process holds /dev/nvidiactl itself.
            out.scan = ScanDeviceHolders(options, self, known);
            for (pid_t pid : known) {
              auto it = scanned_holders.find(pid);
              if (it != scanned_holders.end()) out.scan->holders[pid] = std::move(it->second);
            }
            for (const auto& [pid, files] : out.scan->holders) pids.push_back(pid);
          }
          std::map<pid_t, HostProcess> spare;
          {
            std::lock_guard<std::mutex> lock(shared->spare_mu);
            spare.swap(shared->spare);
          }
          std::lock_guard<std::mutex> lock(shared->mu);
          out.processes =
              shared->cache.Refresh(std::move(pids), now_unix, std::move(listed), std::move(spare));
          return out;
        },
        left);
  }
  if (!found) {
    snapshot.timed_out = true;
    snapshot.errors.push_back(ProbeError{
        "proc", "timeout",
        proc_worker_.refused() != refused_before
            ? "reading /proc for the GPU processes is still stuck since an earlier look (a "
              "process in uninterruptible sleep?)"
            : fmt::format(
                  "{} did not finish within {:.1f} s (a process stuck in uninterruptible "
                  "sleep?)",
                  full ? "the device-file holder scan" : "reading /proc for the GPU processes",
                  static_cast<double>(left) / 1000.0),
        std::nullopt, std::nullopt});
    found.emplace();
  }
  if (full) {
    // Counted even when the scan did not finish: one stuck in /proc is not
    // tried again at every look, only when the next full look is due.
    ++full_looks_;
    last_full_ms_ = now;
    scanned_listed_.clear();
    if (found->scan) {
      holders_ = std::move(found->scan->holders);
      // What the scan read (not a process whose files it could not read:
      // the next scan tries it again).
      const std::vector<pid_t>& unread = found->scan->unread;
      for (ProbeError& e : found->scan->errors) snapshot.errors.push_back(std::move(e));
      for (pid_t pid : found->scan->listed ? listed : std::vector<pid_t>{}) {
        if (std::binary_search(unread.begin(), unread.end(), pid)) continue;
        auto it = found->processes.find(pid);
        if (it != found->processes.end() && it->second.start_ticks) {
          scanned_listed_[pid] = *it->second.start_ticks;
        }
      }
    }
  }
  std::map<pid_t, std::vector<std::string>> holders;
  for (const auto& [pid, files] : holders_) {
    if (found->processes.count(pid)) holders[pid] = files;
  }
  collect::AttachHostProcesses(snapshot, std::move(found->processes), holders);
  return snapshot;
}

void CachedCollector::Recycle(std::map<pid_t, HostProcess> processes) {
  // Freed outside the lock when there is a spare set already.
  std::lock_guard<std::mutex> lock(shared_->spare_mu);
  if (shared_->spare.size() < processes.size()) std::swap(shared_->spare, processes);
}

}  // namespace gw::collect
