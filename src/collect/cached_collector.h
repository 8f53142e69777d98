// How `gpuwarden watch` and gpuwardend look at the server every second
// without paying for a full look every second.
//
// A full look (collect::Collect: NVML, the device-file holder scan of every
// process's open files, and /proc for each holder) costs tens of
// milliseconds of CPU on a busy host, nearly all of it in the holder scan
// and in reading each process's status, command line and cgroup. At 1 Hz
// that alone would break the 1 % CPU budget. So a full look runs every
// `full_every_ms` (gpuwarden watch and gpuwardend: 60 s), and the looks
// between are light: NVML
// only, plus the processes the driver lists and the holders the last full
// look found, read through a cache. A cached process costs one read of
// /proc/PID/stat (state, CPU time, parent); its static facts (user, command
// line, owner) are read again only when its start time changes, i.e. when
// the PID names another process. What a light look cannot see: a new
// device-file holder that the driver does not list shows up at the next
// full look, at most `full_every_ms` later.
#ifndef GPUWARDEN_COLLECT_CACHED_COLLECTOR_H_
#define GPUWARDEN_COLLECT_CACHED_COLLECTOR_H_

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "collect/collector.h"
#include "core/clock.h"
#include "core/snapshot.h"
#include "nvml/probe.h"
#include "proc/proc_reader.h"

namespace gw::collect {

// Per-PID facts, refreshed cheaply. Not thread-safe.
//
// It keeps each cached process's /proc/PID/stat open (up to kMaxOpenFiles)
// and re-reads it with pread(): one system call a process a tick instead of
// open, read and close with a path lookup. An open stat file stays tied to
// the process it was opened for: once that process is gone, reads fail
// (ESRCH) even if the PID is reused, and the file is opened anew.
class ProcessCache {
 public:
  static constexpr size_t kMaxOpenFiles = 512;

  explicit ProcessCache(std::string proc_root);
  ~ProcessCache();
  ProcessCache(const ProcessCache&) = delete;
  ProcessCache& operator=(const ProcessCache&) = delete;

  // The processes among `pids` that exist now, at wall time now_unix_ms: a
  // cached process (same PID and start time) gets its state, parent, CPU
  // time, age and RSS from /proc/PID/stat; another is read in full
  // (proc::ProcReader::ReadProcess) and cached. Entries for PIDs not asked
  // for are dropped.
  std::map<pid_t, HostProcess> Refresh(const std::set<pid_t>& pids, int64_t now_unix_ms);

  // Takes processes read elsewhere (a full look) into the cache.
  void Seed(const std::map<pid_t, HostProcess>& processes);

  size_t full_reads() const { return full_reads_; }
  size_t open_files() const { return open_files_; }

 private:
  struct Entry {
    HostProcess process;
    int stat_fd = -1;
  };
  // The current content of PID's stat file, through its kept descriptor
  // when there is one.
  std::optional<std::string> ReadStat(pid_t pid, Entry* entry);
  void Drop(std::map<pid_t, Entry>::iterator it);

  std::string root_;
  proc::ProcReader reader_;
  long clock_ticks_;
  long page_size_;
  std::map<pid_t, Entry> cache_;
  size_t full_reads_ = 0;
  size_t open_files_ = 0;
};

// NVML stays loaded and initialised between looks (an nvml::ProbeSession):
// at 1 Hz, loading the library and nvmlInit every look would cost more than
// the look itself, and far more on a real driver without persistence mode.
class CachedCollector {
 public:
  // `clock` (null: the real one) must outlive the collector and be safe to
  // read from the thread that calls Look.
  CachedCollector(collect::CollectOptions options, int64_t full_every_ms,
                  const Clock* clock = nullptr);

  // One look; `samples_since_us` as CollectOptions::process_samples_since_us.
  // A full one when `full_every_ms` has passed since the last (or there was
  // none) and `full_allowed`: a caller that looks many times a second for
  // the driver's view alone (the queue waiting for memory) never pays for
  // the holder scan.
  Snapshot Look(uint64_t samples_since_us, bool full_allowed = true);

  // Looks so far, and how many were full.
  uint64_t looks() const { return looks_; }
  uint64_t full_looks() const { return full_looks_; }
  // The last look was a full one.
  bool last_full() const { return last_full_; }

 private:
  struct Shared {
    std::mutex mu;
    ProcessCache cache;
    explicit Shared(const std::string& root) : cache(root) {}
  };

  collect::CollectOptions options_;
  std::unique_ptr<nvml::ProbeSession> nvml_;  // options_.nvml_session points here.
  int64_t full_every_ms_;
  const Clock& clock_;
  int64_t last_full_ms_ = -1;
  bool last_full_ = false;
  std::map<pid_t, std::vector<std::string>> holders_;  // From the last full look.
  std::shared_ptr<Shared> shared_;
  uint64_t looks_ = 0;
  uint64_t full_looks_ = 0;
};

}  // namespace gw::collect

#endif  // GPUWARDEN_COLLECT_CACHED_COLLECTOR_H_
