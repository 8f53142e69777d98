#include "watch/watch_probe.h"

#include <gtest/gtest.h>

#include "watch/test_fixtures.h"

namespace gw::watch {
namespace {

struct Fakes {
  int collects = 0;
  int in_flight = 0;
  int kernel_reads = 0;
  bool time_out = false;
  bool whole_look = false;  // The timeout is the look's own call (nvmlInit), not a GPU's.
  int64_t now = testing::kTime;
  std::vector<uint64_t> since;

  ProbeSources Sources() {
    ProbeSources s;
    s.collect = [this](uint64_t since_us) {
      ++collects;
      since.push_back(since_us);
      Snapshot snap = testing::TwoGpus();
      snap.time_unix_ms = now;
      snap.processes[4242].cpu_time_ms = static_cast<uint64_t>(now - testing::kTime) / 2;
      snap.processes[4242].start_ticks = 1234;
      if (time_out) {
        snap.timed_out = true;
        snap.errors.push_back(ProbeError{
            "nvml", "timeout",
            "driver not responding: nvmlDeviceGetMemoryInfo_v2 on GPU 1 did not return within "
            "2.0 s",
            whole_look ? std::nullopt : std::optional<unsigned>(1u), std::nullopt});
      }
      return snap;
    };
    s.queue = [] {
      QueueView q;
      q.state = QueueView::State::kNoDaemon;
      return q;
    };
    s.driver_calls_in_flight = [this] { return in_flight; };
    s.kernel_events = [this] {
      ++kernel_reads;
      return std::vector<kmsg::KernelEvent>{};
    };
    s.now_unix_ms = [this] { return now; };
    return s;
  }
};

TEST(WatchProbe, ARoundGivesASnapshotItsDiagnosisAndTheQueue) {
  Fakes f;
  WatchProbe probe(f.Sources(), ProbeSettings{});
  Frame frame = probe.Round();
  ASSERT_TRUE(frame.snapshot);
  ASSERT_TRUE(frame.diagnosis);
  EXPECT_FALSE(frame.driver_stuck);
  EXPECT_EQ(frame.queue.state, QueueView::State::kNoDaemon);
  EXPECT_EQ(f.since, (std::vector<uint64_t>{0}));
  f.now += 1000;
  frame = probe.Round();
  // Per-process samples since the previous look.
  EXPECT_EQ(f.since.back(), static_cast<uint64_t>(testing::kTime) * 1000);
  // CPU over the interval: 500 ms of CPU in 1000 ms.
  EXPECT_DOUBLE_EQ(*frame.snapshot->processes.at(4242).cpu_pct, 50.0);
}

// One GPU's call stuck: the others are read on every round (the probe's
// session answers for the stuck GPU at once).
TEST(WatchProbe, AStuckGpuCostsThatGpuAndTheOthersAreReadOn) {
  Fakes f;
  WatchProbe probe(f.Sources(), ProbeSettings{});
  f.time_out = true;
  Frame frame = probe.Round();
  EXPECT_TRUE(frame.driver_stuck);
  f.in_flight = 1;
  f.now += 5000;
  frame = probe.Round();
  EXPECT_EQ(f.collects, 2);
  ASSERT_TRUE(frame.snapshot);
  EXPECT_TRUE(frame.driver_stuck);
  EXPECT_NE(frame.driver_message.find("the other GPUs are read on"), std::string::npos)
      << frame.driver_message;
  f.time_out = false;
  frame = probe.Round();
  EXPECT_FALSE(frame.driver_stuck);
}

TEST(WatchProbe, AWedgedDriverIsNotAskedAgainUntilItsCallReturns) {
  Fakes f;
  WatchProbe probe(f.Sources(), ProbeSettings{});
  f.time_out = true;
  f.whole_look = true;
  Frame frame = probe.Round();
  EXPECT_TRUE(frame.driver_stuck);
  EXPECT_EQ(frame.driver_message,
            "nvmlDeviceGetMemoryInfo_v2 on GPU 1 did not return within 2.0 s");
  ASSERT_TRUE(frame.snapshot);  // What was read before the deadline.
  // The call is still stuck: the next rounds do not ask.
  f.in_flight = 1;
  f.now += 5000;
  frame = probe.Round();
  EXPECT_EQ(f.collects, 1);
  EXPECT_TRUE(frame.driver_stuck);
  EXPECT_FALSE(frame.snapshot);
  EXPECT_NE(frame.driver_message.find("no answer for 5 s"), std::string::npos)
      << frame.driver_message;
  EXPECT_EQ(frame.queue.state, QueueView::State::kNoDaemon);  // The queue still refreshes.
  // It returned: ask again.
  f.in_flight = 0;
  f.time_out = false;
  frame = probe.Round();
  EXPECT_EQ(f.collects, 2);
  EXPECT_FALSE(frame.driver_stuck);
  EXPECT_TRUE(frame.snapshot);
}

TEST(WatchProbe, TheKernelLogIsReadNowAndThen) {
  Fakes f;
  ProbeSettings settings;
  settings.kernel_log_every_ms = 60'000;
  WatchProbe probe(f.Sources(), settings);
  probe.Round();
  f.now += 30'000;
  probe.Round();
  EXPECT_EQ(f.kernel_reads, 1);
  f.now += 30'000;
  probe.Round();
  EXPECT_EQ(f.kernel_reads, 2);
}

TEST(WatchProbe, WindowedCpuNeedsTheSameProcess) {
  Snapshot a = testing::TwoGpus();
  Snapshot b = a;
  b.time_unix_ms = a.time_unix_ms + 2000;
  a.processes[4242].cpu_time_ms = 1000;
  b.processes[4242].cpu_time_ms = 2000;
  a.processes[4242].start_ticks = b.processes[4242].start_ticks = 7;
  a.processes[5151].cpu_time_ms = 1000;
  b.processes[5151].cpu_time_ms = 3000;
  a.processes[5151].start_ticks = 7;
  b.processes[5151].start_ticks = 8;  // A reused PID: keep /proc's figure.
  UseWindowedCpu(a, b);
  EXPECT_DOUBLE_EQ(*b.processes[4242].cpu_pct, 50.0);
  EXPECT_DOUBLE_EQ(*b.processes[5151].cpu_pct, 0.2);
}

}  // namespace
}  // namespace gw::watch
