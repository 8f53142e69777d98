// How `gpuwarden watch` and gpuwardend look at the server every second
// without paying for a full look every second.
//
// A full look (collect::Collect: NVML, the device-file holder scan of every
// process's open files, and /proc for each holder) costs tens of
// milliseconds of CPU on a busy host, nearly all of it in the holder scan
// and in reading each process's status, command line and cgroup. At 1 Hz
// that alone would break the 1 % CPU budget. So the collector reads each
// process's lasting facts (user, command line, owner) once, through a cache,
// and again only when its start time changes (the PID names another
// process); a cached process costs one read of /proc/PID/stat (state, CPU
// time, parent), at most every `stat_every_ms` for one the driver lists.
// The holder scan runs with a full look, every `full_every_ms` (gpuwarden
// watch and gpuwardend: 60 s); the light looks between carry the holders it
// found. What a light look cannot see: a new device-file holder that the
// driver does not list shows up at the next full look, at most
// `full_every_ms` later. The scan does not read again the open files of a
// process the driver lists whose files an earlier scan read (the same
// process, by the cache's start time): the driver vouches that it holds the
// GPU, and a process it lists is never judged by the files it holds. Such a
// process's files are those of its first scan.
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
#include "collect/deadline.h"
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
//
// Even a kept stat file costs the kernel ~6 us to format, and a busy server
// lists hundreds of GPU processes. So with `stat_every_ms` above 0, a process
// the driver vouches for (`listed`: it exists, or the driver would not list
// it) has its stat re-read only that often: at the marks every stat_every_ms
// from the cache's first refresh, all listed processes together, so that the
// looks between read nothing at all (and need no thread that may block in
// /proc: CachedCollector). Between reads its age moves on and its state,
// parent, CPU time and RSS are those of the last read. A process not listed
// (a device-file holder only) is read every time: the read is how the cache
// learns that it ended.
class ProcessCache {
 public:
  static constexpr size_t kMaxOpenFiles = 512;

  explicit ProcessCache(std::string proc_root, int64_t stat_every_ms = 0);
  ~ProcessCache();
  ProcessCache(const ProcessCache&) = delete;
  ProcessCache& operator=(const ProcessCache&) = delete;

  // The processes among `pids` that exist now, at wall time now_unix_ms: a
  // cached process (same PID and start time) gets its state, parent, CPU
  // time, age and RSS from /proc/PID/stat (for one in `listed`, at most every
  // stat_every_ms); another is read in full (proc::ProcReader::ReadProcess)
  // and cached. Entries for PIDs not asked for are dropped. The result is
  // built in the nodes of `spare` (a finished look's processes) as far as
  // they go, with their strings' room reused.
  std::map<pid_t, HostProcess> Refresh(std::vector<pid_t> pids, int64_t now_unix_ms,
                                       std::vector<pid_t> listed = {},
                                       std::map<pid_t, HostProcess> spare = {});

  // Whether Refresh(pids, now_unix_ms, listed) would read /proc: a PID not
  // cached, one not listed, or a listed one whose stat is due. `pids` and
  // `listed` sorted, without duplicates.
  bool WouldRead(const std::vector<pid_t>& pids, const std::vector<pid_t>& listed,
                 int64_t now_unix_ms) const;

  // The start time (clock ticks) of the process cached under `pid`, if any.
  std::optional<uint64_t> StartTicks(pid_t pid) const;

  size_t full_reads() const { return full_reads_; }
  size_t stat_reads() const { return stat_reads_; }
  size_t open_files() const { return open_files_; }

 private:
  struct Entry {
    HostProcess process;
    int stat_fd = -1;
    // Wall time (ms) at which its stat is next due; 0: at the next refresh.
    int64_t stat_due_ms = 0;
  };
  // Sets the entry's next stat read: the first mark after now.
  void ScheduleStat(Entry& entry, int64_t now_unix_ms);
  // A listed process's entry needs no read now: its stat is not due (and the
  // clock has not gone back past a whole interval).
  bool Fresh(const Entry& entry, int64_t now_unix_ms) const;
  // The current content of PID's stat file, through its kept descriptor
  // when there is one.
  std::optional<std::string> ReadStat(pid_t pid, Entry* entry);
  // Closes the entry's stat file and erases it; the entry after it.
  std::map<pid_t, Entry>::iterator Drop(std::map<pid_t, Entry>::iterator it);

  std::string root_;
  int64_t stat_every_ms_;
  std::optional<int64_t> marks_from_ms_;  // The first refresh's time: the marks' origin.
  proc::ProcReader reader_;
  long clock_ticks_;
  long page_size_;
  std::map<pid_t, Entry> cache_;
  size_t full_reads_ = 0;  // Also the HostProcess::facts_read of the last full read.
  size_t stat_reads_ = 0;
  size_t open_files_ = 0;
};

// NVML stays loaded and initialised between looks (an nvml::ProbeSession):
// at 1 Hz, loading the library and nvmlInit every look would cost more than
// the look itself, and far more on a real driver without persistence mode.
class CachedCollector {
 public:
  // `clock` (null: the real one) must outlive the collector and be safe to
  // read from the thread that calls Look. `stat_every_ms`: as ProcessCache's
  // (0: every driver-listed process's stat at every look).
  CachedCollector(collect::CollectOptions options, int64_t full_every_ms,
                  const Clock* clock = nullptr, int64_t stat_every_ms = 0);

  // One look; `samples_since_us` as CollectOptions::process_samples_since_us.
  // A full one when `full_every_ms` has passed since the last (or there was
  // none) and `full_allowed`: a caller that looks many times a second for
  // the driver's view alone (the queue waiting for memory) never pays for
  // the holder scan.
  Snapshot Look(uint64_t samples_since_us, bool full_allowed = true);

  // Hands back the processes of a look that is no longer needed, from any
  // thread: the next look builds its own in their memory instead of
  // allocating (at 1 Hz on a busy server, allocating and freeing a look's
  // processes, strings and all, is a tenth of the daemon's CPU).
  void Recycle(std::map<pid_t, HostProcess> processes);

  // Looks so far, how many were full, and how many read nothing of /proc
  // (the cache answered on the caller's thread).
  uint64_t looks() const { return looks_; }
  uint64_t full_looks() const { return full_looks_; }
  uint64_t unread_looks() const { return unread_looks_; }
  // The last look was a full one.
  bool last_full() const { return last_full_; }

 private:
  struct Shared {
    std::mutex mu;
    ProcessCache cache;
    // Recycle's, under its own lock: the cache's is held through /proc reads
    // that can block, and Recycle must not wait for them.
    std::mutex spare_mu;
    std::map<pid_t, HostProcess> spare;
    Shared(const std::string& root, int64_t stat_every_ms) : cache(root, stat_every_ms) {}
  };

  collect::CollectOptions options_;
  std::unique_ptr<nvml::ProbeSession> nvml_;  // options_.nvml_session points here.
  int64_t full_every_ms_;
  const Clock& clock_;
  int64_t last_full_ms_ = -1;
  bool last_full_ = false;
  std::map<pid_t, std::vector<std::string>> holders_;  // From the last full look.
  // The processes the driver listed at the last full look, by start time:
  // their files are in holders_ (or they held none), not read again.
  std::map<pid_t, uint64_t> scanned_listed_;
  std::optional<HostInfo> host_;  // From the last full look.
  std::shared_ptr<Shared> shared_;
  // The /proc reads of a look that has any (a full look's scan, a new
  // process, a stat due), under the deadline, on one kept thread.
  DeadlineWorker proc_worker_;
  uint64_t looks_ = 0;
  uint64_t full_looks_ = 0;
  uint64_t unread_looks_ = 0;
};

}  // namespace gw::collect

#endif  // GPUWARDEN_COLLECT_CACHED_COLLECTOR_H_
