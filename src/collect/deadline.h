// RunWithDeadline: run work on its own thread and wait for it at most until a
// deadline. Used for everything that can block in the kernel for ever — NVML
// calls on a wedged driver, and /proc reads of a process stuck in D state
// (reading /proc/PID/cmdline takes the target's mmap lock).
//
// On timeout the worker is abandoned, not cancelled: it keeps running (or stays
// stuck) on a detached thread that owns everything it touches through shared
// state, so nothing dangles. A process that saw a timeout should end with
// std::quick_exit/_exit rather than run static destructors under that thread.
#ifndef GPUWARDEN_COLLECT_DEADLINE_H_
#define GPUWARDEN_COLLECT_DEADLINE_H_

#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <utility>

namespace gw::collect {

// Runs `work` (which must own, not reference, what it uses) on a new thread.
// Returns its value, or nullopt when it did not finish within `timeout_ms`.
template <typename T>
std::optional<T> RunWithDeadline(std::function<T()> work, int64_t timeout_ms) {
  struct Shared {
    std::mutex mu;
    std::condition_variable done_cv;
    std::optional<T> value;
  };
  auto shared = std::make_shared<Shared>();
  std::thread([shared, work = std::move(work)]() mutable {
    T value = work();
    std::lock_guard<std::mutex> lock(shared->mu);
    shared->value = std::move(value);
    shared->done_cv.notify_all();
  }).detach();

  std::unique_lock<std::mutex> lock(shared->mu);
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms < 0 ? 0 : timeout_ms);
  shared->done_cv.wait_until(lock, deadline, [&] { return shared->value.has_value(); });
  if (!shared->value) return std::nullopt;
  return std::move(shared->value);
}

// RunWithDeadline on one thread kept for the purpose: a caller that runs
// bounded work many times a second (gpuwardend's 1-Hz looks, the queue's
// looks every --poll-ms) pays for a thread once, not at every call.
//
// Work that overruns its deadline keeps the thread: the worker is then busy
// until that work ends, and a call made meanwhile returns nullopt at once
// (it would only queue behind the same stuck read) instead of starting a
// thread of its own — so a process stuck in the kernel costs one thread, not
// one a look. Work must own, not reference, what it uses. Not thread-safe:
// one caller at a time. The thread is detached; the destructor does not wait
// for work in progress.
class DeadlineWorker {
 public:
  DeadlineWorker();
  ~DeadlineWorker();
  DeadlineWorker(const DeadlineWorker&) = delete;
  DeadlineWorker& operator=(const DeadlineWorker&) = delete;

  template <typename T>
  std::optional<T> Run(std::function<T()> work, int64_t timeout_ms) {
    struct Slot {
      std::optional<T> value;
    };
    auto slot = std::make_shared<Slot>();
    const bool done =
        Post([slot, work = std::move(work)]() mutable { slot->value.emplace(work()); }, timeout_ms);
    if (!done) return std::nullopt;
    return std::move(slot->value);
  }

  // The work posted so far, and the calls refused because earlier work was
  // still running.
  uint64_t runs() const { return runs_; }
  uint64_t refused() const { return refused_; }

  struct Shared;  // With the worker thread.

 private:
  // Runs `task` on the worker and waits at most timeout_ms for it: true
  // when it finished (its writes are then visible to the caller).
  bool Post(std::function<void()> task, int64_t timeout_ms);

  std::shared_ptr<Shared> shared_;
  uint64_t runs_ = 0;
  uint64_t refused_ = 0;
};

}  // namespace gw::collect

#endif  // GPUWARDEN_COLLECT_DEADLINE_H_
