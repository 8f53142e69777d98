// Snapshotter: the daemon's GPU snapshot worker. Looks are taken on a thread
// of their own, so a wedged driver blocks that thread (up to the probe's
// deadline), never the event loop. Every look goes through one
// collect::CachedCollector: NVML stays loaded and initialised between looks,
// and a process's lasting facts (user, command line, owner, Slurm job) are
// read once, then only its stat file. A sampled look (the daemon's 1-Hz look,
// diagnosed and kept in the history) is a full one — with the device-file
// holder scan of every process's open files — every holder_scan_every_ms;
// between those it carries the holders the last scan found. The queue's
// quick looks while jobs wait never scan. A driver-listed process's stat is
// read every process_stat_every_ms (0: at every look).
//
// The loop polls fd(): it becomes readable when a look is ready (Take()).
#ifndef GPUWARDEN_QUEUE_SNAPSHOTTER_H_
#define GPUWARDEN_QUEUE_SNAPSHOTTER_H_

#include <condition_variable>
#include <map>
#include <mutex>
#include <optional>
#include <thread>

#include "collect/cached_collector.h"
#include "collect/collector.h"
#include "collect/kernel_log.h"
#include "core/clock.h"
#include "os/unique_fd.h"

namespace gw::queue {

// The kernel log, read on the worker's thread too (the journal can take a
// while) with a full look: `file` "" is the system's own sources.
struct KernelLogReading {
  bool read = false;
  std::string file;
  int64_t every_ms = 60'000;
};

class Snapshotter {
 public:
  struct Look {
    Snapshot snapshot;
    bool full = false;  // A sampled look (Request(true)).
    // Read with a full look every KernelLogReading::every_ms (else unset).
    std::optional<Result<collect::KernelLog>> kernel_log;
  };

  // `clock` must outlive the worker (it is read on the worker's thread, so
  // it must be safe to read from two threads: RealClock is).
  Snapshotter(collect::CollectOptions options, const Clock& clock, KernelLogReading kernel_log = {},
              int64_t holder_scan_every_ms = 60'000, int64_t process_stat_every_ms = 0);
  ~Snapshotter();  // Waits for a look in progress.
  Snapshotter(const Snapshotter&) = delete;
  Snapshotter& operator=(const Snapshotter&) = delete;

  int fd() const { return wake_fd_.get(); }
  // Asks for a look (full: a sampled one); one in progress is not
  // interrupted, and requests made meanwhile merge into one.
  void Request(bool full);
  // The look that is ready, if any.
  std::optional<Look> Take();
  // A look is asked for or in progress.
  bool busy();
  // Hands back a taken look's processes once they are no longer needed
  // (collect::CachedCollector::Recycle); any thread.
  void Recycle(std::map<pid_t, HostProcess> processes) { collector_.Recycle(std::move(processes)); }

 private:
  void Loop();

  const Clock& clock_;
  KernelLogReading kernel_log_;
  std::optional<int64_t> kernel_log_read_ms_;  // Monotonic; worker thread only.
  collect::CachedCollector collector_;         // Worker thread only.
  os::UniqueFd wake_fd_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  bool requested_ = false;
  bool full_ = false;
  bool running_ = false;
  std::optional<Look> ready_;
  std::thread thread_;
};

}  // namespace gw::queue

#endif  // GPUWARDEN_QUEUE_SNAPSHOTTER_H_
