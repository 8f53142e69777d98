#include "watch/prober.h"

#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <utility>

namespace gw::watch {

struct Prober::Shared {
  std::mutex mu;
  std::condition_variable cv;
  std::optional<Frame> latest;
  bool stop = false;
  bool now = false;
  bool done = false;  // The thread has left its loop.
  uint64_t rounds = 0;
};

Prober::Prober(std::function<Frame()> round, int64_t interval_ms, int wake_fd)
    : shared_(std::make_shared<Shared>()),
      round_(std::move(round)),
      interval_ms_(interval_ms < 1 ? 1 : interval_ms),
      wake_fd_(wake_fd) {}

Prober::~Prober() { Stop(0); }

void Prober::Start() {
  if (thread_.joinable()) return;
  thread_ = std::thread(
      [shared = shared_, round = round_, interval_ms = interval_ms_, wake_fd = wake_fd_] {
        using Clock = std::chrono::steady_clock;
        for (;;) {
          const auto start = Clock::now();
          Frame frame = round();
          {
            std::lock_guard<std::mutex> lock(shared->mu);
            if (shared->stop) break;
            shared->latest = std::move(frame);
            ++shared->rounds;
          }
          const char byte = 1;
          // Non-blocking: if the pipe is full the UI has wake-ups pending anyway.
          [[maybe_unused]] ssize_t n = write(wake_fd, &byte, 1);
          std::unique_lock<std::mutex> lock(shared->mu);
          // Rounds start `interval` apart; a slow round is followed at once.
          shared->cv.wait_until(lock, start + std::chrono::milliseconds(interval_ms),
                                [&] { return shared->stop || shared->now; });
          shared->now = false;
          if (shared->stop) break;
        }
        std::lock_guard<std::mutex> lock(shared->mu);
        shared->done = true;
        shared->cv.notify_all();
      });
}

std::optional<Frame> Prober::Take() {
  std::lock_guard<std::mutex> lock(shared_->mu);
  std::optional<Frame> out = std::move(shared_->latest);
  shared_->latest.reset();
  return out;
}

void Prober::RequestNow() {
  std::lock_guard<std::mutex> lock(shared_->mu);
  shared_->now = true;
  shared_->cv.notify_all();
}

bool Prober::Stop(int64_t wait_ms) {
  if (!thread_.joinable()) return true;
  std::unique_lock<std::mutex> lock(shared_->mu);
  shared_->stop = true;
  shared_->cv.notify_all();
  const bool ended = shared_->cv.wait_for(
      lock, std::chrono::milliseconds(wait_ms < 0 ? 0 : wait_ms), [&] { return shared_->done; });
  lock.unlock();
  if (ended) {
    thread_.join();
  } else {
    thread_.detach();
  }
  return ended;
}

uint64_t Prober::rounds() const {
  std::lock_guard<std::mutex> lock(shared_->mu);
  return shared_->rounds;
}

}  // namespace gw::watch
