// The probe thread of `gpuwarden watch`: runs one round (collect, diagnose,
// ask the queue) every interval, off the UI thread, and hands the newest
// Frame to the UI, waking it through a pipe the UI polls. The UI never waits
// for a round: a wedged driver delays only this thread, and the UI keeps
// answering keys (q quits at once).
#ifndef GPUWARDEN_WATCH_PROBER_H_
#define GPUWARDEN_WATCH_PROBER_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <thread>

#include "watch/model.h"

namespace gw::watch {

class Prober {
 public:
  // `round` runs on the probe thread and must own what it uses (it may
  // outlive this object: see Stop). After each round one byte is written to
  // `wake_fd` (non-blocking; a full pipe already means "wake up").
  Prober(std::function<Frame()> round, int64_t interval_ms, int wake_fd);
  // Stops the thread (Stop(0)).
  ~Prober();
  Prober(const Prober&) = delete;
  Prober& operator=(const Prober&) = delete;

  void Start();
  // The newest Frame not taken yet; older untaken ones are dropped (the UI
  // only ever shows the latest).
  std::optional<Frame> Take();
  // Starts the next round now instead of at the end of the interval (after
  // an action, so the screen shows its effect at once).
  void RequestNow();
  // Asks the thread to end and waits up to `wait_ms` for it. True when it
  // ended (joined); false when a round is still running (stuck in the
  // driver): the thread is then detached and owns its state, and the
  // process should end with _exit/quick_exit rather than run destructors
  // under it.
  bool Stop(int64_t wait_ms);
  // Rounds finished so far.
  uint64_t rounds() const;

 private:
  struct Shared;
  std::shared_ptr<Shared> shared_;
  std::function<Frame()> round_;
  int64_t interval_ms_;
  int wake_fd_;
  std::thread thread_;
};

}  // namespace gw::watch

#endif  // GPUWARDEN_WATCH_PROBER_H_
