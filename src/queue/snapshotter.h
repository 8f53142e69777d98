// Snapshotter: the daemon's GPU snapshot worker. Looks are taken on a thread
// of their own, so a wedged driver blocks that thread (up to the probe's
// deadline), never the event loop. A light look skips the device-file holder
// scan (every open file of every process): the queue's decisions need only
// the driver's view, and light looks are what make a short poll interval
// affordable. NVML stays loaded and initialised between looks.
//
// The loop polls fd(): it becomes readable when a look is ready (Take()).
#ifndef GPUWARDEN_QUEUE_SNAPSHOTTER_H_
#define GPUWARDEN_QUEUE_SNAPSHOTTER_H_

#include <condition_variable>
#include <mutex>
#include <optional>
#include <thread>

#include "collect/collector.h"
#include "core/clock.h"
#include "os/unique_fd.h"

namespace gw::queue {

class Snapshotter {
 public:
  struct Look {
    Snapshot snapshot;
    bool full = false;  // With the device-file holder scan.
  };

  // `clock` must outlive the worker (it is read on the worker's thread, so
  // it must be safe to read from two threads: RealClock is).
  Snapshotter(collect::CollectOptions options, const Clock& clock);
  ~Snapshotter();  // Waits for a look in progress.
  Snapshotter(const Snapshotter&) = delete;
  Snapshotter& operator=(const Snapshotter&) = delete;

  int fd() const { return wake_fd_.get(); }
  // Asks for a look (full: with the holder scan); one in progress is not
  // interrupted, and requests made meanwhile merge into one.
  void Request(bool full);
  // The look that is ready, if any.
  std::optional<Look> Take();
  // A look is asked for or in progress.
  bool busy();

 private:
  void Loop();

  collect::CollectOptions options_;
  const Clock& clock_;
  nvml::ProbeSession nvml_;
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
