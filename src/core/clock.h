// The clock seam: everything that reads the time takes a Clock&, so tests can
// move time by hand (FakeClock, below).
#ifndef GPUWARDEN_CORE_CLOCK_H_
#define GPUWARDEN_CORE_CLOCK_H_

#include <chrono>
#include <cstdint>

namespace gw {

class Clock {
 public:
  virtual ~Clock() = default;
  // Wall-clock time, milliseconds since the Unix epoch.
  virtual int64_t NowUnixMs() const = 0;
  // Monotonic time in milliseconds, for durations and deadlines.
  virtual int64_t MonotonicMs() const = 0;
};

class RealClock final : public Clock {
 public:
  int64_t NowUnixMs() const override {
    return std::chrono::duration_cast<std::chrono::milliseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
  }
  int64_t MonotonicMs() const override {
    return std::chrono::duration_cast<std::chrono::milliseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
  }
};

// A clock that moves only when told to.
class FakeClock final : public Clock {
 public:
  explicit FakeClock(int64_t now_unix_ms = 1'700'000'000'000) : now_(now_unix_ms) {}
  int64_t NowUnixMs() const override { return now_; }
  int64_t MonotonicMs() const override { return now_; }
  void AdvanceMs(int64_t ms) { now_ += ms; }
  void SetUnixMs(int64_t ms) { now_ = ms; }

 private:
  int64_t now_;
};

}  // namespace gw

#endif  // GPUWARDEN_CORE_CLOCK_H_
