#include "collect/cached_collector.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <utility>

#include "collect/deadline.h"
#include "core/clock.h"
#include "proc/proc_parse.h"

namespace gw::collect {

ProcessCache::ProcessCache(std::string proc_root)
    : root_(std::move(proc_root)),
      reader_(root_),
      clock_ticks_(sysconf(_SC_CLK_TCK)),
      page_size_(sysconf(_SC_PAGESIZE)) {}

ProcessCache::~ProcessCache() {
  for (auto& [pid, e] : cache_) {
    if (e.stat_fd >= 0) close(e.stat_fd);
  }
}

void ProcessCache::Drop(std::map<pid_t, Entry>::iterator it) {
  if (it->second.stat_fd >= 0) {
    close(it->second.stat_fd);
    --open_files_;
  }
  cache_.erase(it);
}

void ProcessCache::Seed(const std::map<pid_t, HostProcess>& processes) {
  for (const auto& [pid, p] : processes) {
    if (!p.start_ticks || !p.readable) continue;
    Entry& e = cache_[pid];
    if (e.process.start_ticks != p.start_ticks && e.stat_fd >= 0) {
      close(e.stat_fd);  // Another process's file.
      e.stat_fd = -1;
      --open_files_;
    }
    e.process = p;
    e.process.device_files.clear();
    e.process.listed_by_driver = false;
  }
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

std::map<pid_t, HostProcess> ProcessCache::Refresh(const std::set<pid_t>& pids,
                                                   int64_t now_unix_ms) {
  std::map<pid_t, HostProcess> out;
  for (pid_t pid : pids) {
    auto it = cache_.find(pid);
    Entry* entry = it == cache_.end() ? nullptr : &it->second;
    auto text = ReadStat(pid, entry);
    if (!text) {
      if (it != cache_.end()) Drop(it);
      continue;
    }
    auto stat = proc::ParseStat(*text);
    if (!stat.ok()) continue;
    if (entry != nullptr && entry->process.start_ticks == stat->start_ticks) {
      HostProcess& p = entry->process;
      p.state = proc::StateFromChar(stat->state);
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
      out[pid] = p;
      continue;
    }
    // New to the cache, or the PID names another process now.
    auto full = reader_.ReadProcess(pid, now_unix_ms);
    ++full_reads_;
    if (!full.ok()) {
      if (it != cache_.end()) Drop(it);
      continue;
    }
    if (entry == nullptr) {
      entry = &cache_[pid];
      ReadStat(pid, entry);  // Keeps its stat file open for the next ticks.
    }
    entry->process = *full;
    out[pid] = std::move(*full);
  }
  for (auto it = cache_.begin(); it != cache_.end();) {
    if (pids.count(it->first)) {
      ++it;
    } else {
      auto next = std::next(it);
      Drop(it);
      it = next;
    }
  }
  return out;
}

namespace {
const Clock& TheRealClock() {
  static const RealClock clock;
  return clock;
}
}  // namespace

CachedCollector::CachedCollector(collect::CollectOptions options, int64_t full_every_ms,
                                 const Clock* clock)
    : options_(std::move(options)),
      nvml_(std::make_unique<nvml::ProbeSession>(collect::NvmlProbeOptions(options_))),
      full_every_ms_(full_every_ms),
      clock_(clock != nullptr ? *clock : TheRealClock()),
      shared_(std::make_shared<Shared>(options_.proc_root)) {
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
  if (full || !options_.scan_processes) {
    Snapshot snapshot = collect::Collect(options, clock);
    if (!full) return snapshot;
    ++full_looks_;
    last_full_ms_ = now;
    holders_.clear();
    for (const auto& [pid, p] : snapshot.processes) {
      if (!p.device_files.empty()) holders_[pid] = p.device_files;
    }
    // Only when no earlier refresh is still stuck in /proc.
    std::unique_lock<std::mutex> lock(shared_->mu, std::try_to_lock);
    if (lock.owns_lock()) shared_->cache.Seed(snapshot.processes);
    return snapshot;
  }

  // A light look: NVML only, then the cached /proc facts under what is
  // left of the deadline (a process stuck in the kernel can block a read).
  options.scan_processes = false;
  const int64_t start = clock.MonotonicMs();
  Snapshot snapshot = collect::Collect(options, clock);
  snapshot.processes_scanned = true;
  std::set<pid_t> pids;
  for (const Gpu& gpu : snapshot.gpus) {
    for (const GpuProcess& p : gpu.processes) pids.insert(p.pid);
  }
  for (const auto& [pid, files] : holders_) pids.insert(pid);
  const int64_t left = std::max<int64_t>(0, options.deadline_ms - (clock.MonotonicMs() - start));
  const int64_t now_unix = snapshot.time_unix_ms;
  auto host = collect::RunWithDeadline<std::map<pid_t, HostProcess>>(
      [shared = shared_, pids, now_unix] {
        std::lock_guard<std::mutex> lock(shared->mu);
        return shared->cache.Refresh(pids, now_unix);
      },
      left);
  if (!host) {
    snapshot.timed_out = true;
    snapshot.errors.push_back(ProbeError{
        "proc", "timeout", "reading /proc for the GPU processes did not finish within the deadline",
        std::nullopt, std::nullopt});
    host.emplace();
  }
  std::map<pid_t, std::vector<std::string>> holders;
  for (const auto& [pid, files] : holders_) {
    if (host->count(pid)) holders[pid] = files;
  }
  collect::AttachHostProcesses(snapshot, *host, holders);
  return snapshot;
}

}  // namespace gw::collect
