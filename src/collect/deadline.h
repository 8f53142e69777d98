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

}  // namespace gw::collect

#endif  // GPUWARDEN_COLLECT_DEADLINE_H_
