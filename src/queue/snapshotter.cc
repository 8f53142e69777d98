#include "queue/snapshotter.h"

#include <sys/eventfd.h>
#include <unistd.h>

#include <cstdint>
#include <utility>

namespace gw::queue {

Snapshotter::Snapshotter(collect::CollectOptions options, const Clock& clock,
                         KernelLogReading kernel_log, int64_t holder_scan_every_ms,
                         int64_t process_stat_every_ms)
    : clock_(clock),
      kernel_log_(std::move(kernel_log)),
      collector_(std::move(options), holder_scan_every_ms, &clock, process_stat_every_ms),
      wake_fd_(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) {
  thread_ = std::thread([this] { Loop(); });
}

Snapshotter::~Snapshotter() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void Snapshotter::Request(bool full) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    requested_ = true;
    full_ |= full;
  }
  cv_.notify_all();
}

std::optional<Snapshotter::Look> Snapshotter::Take() {
  uint64_t n;
  while (read(wake_fd_.get(), &n, sizeof n) > 0) {
  }
  std::lock_guard<std::mutex> lock(mu_);
  std::optional<Look> out = std::move(ready_);
  ready_.reset();
  return out;
}

bool Snapshotter::busy() {
  std::lock_guard<std::mutex> lock(mu_);
  return requested_ || running_;
}

void Snapshotter::Loop() {
  for (;;) {
    bool sampled = false;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [this] { return stop_ || requested_; });
      if (stop_) return;
      requested_ = false;
      running_ = true;
      sampled = full_;
      full_ = false;
    }
    Look look{collector_.Look(0, /*full_allowed=*/sampled), sampled, std::nullopt};
    const int64_t now = clock_.MonotonicMs();
    if (look.full && kernel_log_.read &&
        (!kernel_log_read_ms_ || now - *kernel_log_read_ms_ >= kernel_log_.every_ms)) {
      look.kernel_log = collect::ReadKernelLog(kernel_log_.file, std::nullopt);
      kernel_log_read_ms_ = now;
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      ready_ = std::move(look);
      running_ = false;
    }
    const uint64_t one = 1;
    (void)!write(wake_fd_.get(), &one, sizeof one);
  }
}

}  // namespace gw::queue
