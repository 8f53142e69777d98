#include "collect/cached_collector.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/clock.h"
#include "nvml/probe.h"

namespace gw::collect {
namespace {

pid_t StartSleeper() {
  const pid_t pid = fork();
  if (pid == 0) {
    execl("/bin/sleep", "sleep", "60", static_cast<char*>(nullptr));
    _exit(127);
  }
  return pid;
}

void Reap(pid_t pid) {
  kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
}

TEST(ProcessCache, ReadsAProcessOnceThenOnlyItsStat) {
  const pid_t child = StartSleeper();
  ASSERT_GT(child, 0);
  ProcessCache cache("/proc");
  const int64_t now = RealClock().NowUnixMs();
  auto first = cache.Refresh({getpid(), child}, now);
  ASSERT_EQ(first.size(), 2u);
  EXPECT_EQ(cache.full_reads(), 2u);
  ASSERT_TRUE(first[child].start_ticks);
  auto second = cache.Refresh({getpid(), child}, now + 5000);
  EXPECT_EQ(cache.full_reads(), 2u);  // Only /proc/PID/stat this time,
  EXPECT_EQ(cache.open_files(), 2u);  // through the files kept open.
  ASSERT_EQ(second.size(), 2u);
  EXPECT_EQ(second[child].cmdline, first[child].cmdline);
  EXPECT_EQ(second[child].user, first[child].user);
  ASSERT_TRUE(second[getpid()].age_s);
  EXPECT_GT(*second[getpid()].age_s, *first[getpid()].age_s);  // Refreshed.
  // A process that ended is dropped.
  Reap(child);
  auto third = cache.Refresh({getpid(), child}, now + 6000);
  EXPECT_EQ(third.count(child), 0u);
  EXPECT_EQ(third.count(getpid()), 1u);
  EXPECT_EQ(cache.open_files(), 1u);
  // PIDs no longer asked for are forgotten, their files closed.
  EXPECT_TRUE(cache.Refresh({}, now + 7000).empty());
  EXPECT_EQ(cache.open_files(), 0u);
}

TEST(CachedCollector, FullLooksNowAndThenLightLooksBetween) {
  setenv("GPUWARDEN_SIM_SCENARIO", GW_SOURCE_DIR "/scenarios/timeline-demo.json", 1);
  collect::CollectOptions options;
  options.nvml_library = GW_BINARY_DIR "/sim/libnvidia-ml.so.1";
  options.simulated = true;
  options.deadline_ms = 20'000;  // Slow under sanitizers; nothing here blocks.
  CachedCollector collector(options, /*full_every_ms=*/3'600'000);
  Snapshot full = collector.Look(0);
  EXPECT_EQ(collector.full_looks(), 1u);
  Snapshot light = collector.Look(0);
  EXPECT_EQ(collector.looks(), 2u);
  EXPECT_EQ(collector.full_looks(), 1u);
  ASSERT_EQ(full.gpus.size(), 2u);
  ASSERT_EQ(light.gpus.size(), 2u);
  EXPECT_TRUE(light.processes_scanned);
  EXPECT_FALSE(light.timed_out);
  // The same driver-listed processes in both (PID 720440 on GPU 1).
  ASSERT_EQ(light.gpus[1].processes.size(), 1u);
  EXPECT_EQ(light.gpus[1].processes[0].pid, full.gpus[1].processes[0].pid);
  EXPECT_TRUE(nvml::WaitForProbeWorkers(20'000));
}

// A caller that looks often for the driver's view alone never pays for a
// full look; the next look that may be full is, once it is due (a fake
// clock: a minute passes at once).
TEST(CachedCollector, NoFullLookWhereItIsNotAllowedAndOneOnceDue) {
  setenv("GPUWARDEN_SIM_SCENARIO", GW_SOURCE_DIR "/scenarios/timeline-demo.json", 1);
  collect::CollectOptions options;
  options.nvml_library = GW_BINARY_DIR "/sim/libnvidia-ml.so.1";
  options.simulated = true;
  options.deadline_ms = 20'000;
  FakeClock clock(1'767'000'000'000);
  CachedCollector collector(options, /*full_every_ms=*/60'000, &clock);
  collector.Look(0, /*full_allowed=*/false);
  EXPECT_FALSE(collector.last_full());
  EXPECT_EQ(collector.full_looks(), 0u);
  collector.Look(0);
  EXPECT_TRUE(collector.last_full());  // The first allowed look is full.
  clock.AdvanceMs(30'000);
  collector.Look(0);
  EXPECT_FALSE(collector.last_full());  // Not due yet.
  clock.AdvanceMs(30'000);
  collector.Look(0, /*full_allowed=*/false);
  EXPECT_FALSE(collector.last_full());  // Due, but not allowed.
  collector.Look(0);
  EXPECT_TRUE(collector.last_full());
  EXPECT_EQ(collector.looks(), 5u);
  EXPECT_EQ(collector.full_looks(), 2u);
  EXPECT_TRUE(nvml::WaitForProbeWorkers(20'000));
}

// NVML is initialised once for all the looks: the simulated driver's
// initialisation blocks (init-hang: 60 s, scaled to 3 s), nested ones do not,
// so only the first look may wait for it.
TEST(CachedCollector, InitialisesNvmlOnceForAllItsLooks) {
  setenv("GPUWARDEN_SIM_SCENARIO", GW_SOURCE_DIR "/scenarios/init-hang.json", 1);
  setenv("GPUWARDEN_SIM_BLOCK_SCALE", "0.05", 1);
  collect::CollectOptions options;
  options.nvml_library = GW_BINARY_DIR "/sim/libnvidia-ml.so.1";
  options.simulated = true;
  options.deadline_ms = 20'000;
  {
    CachedCollector collector(options, /*full_every_ms=*/3'600'000);
    auto timed_look = [&collector] {
      const int64_t start = RealClock().MonotonicMs();
      Snapshot s = collector.Look(0);
      EXPECT_TRUE(s.gpus.size() == 2u && !s.timed_out) << s.errors.size();
      return RealClock().MonotonicMs() - start;
    };
    EXPECT_GE(timed_look(), 3'000);  // The first look waits for nvmlInit...
    for (int i = 0; i < 3; ++i) {
      EXPECT_LT(timed_look(), 3'000) << "look " << i + 2 << " initialised NVML again";
    }
  }
  unsetenv("GPUWARDEN_SIM_BLOCK_SCALE");
  EXPECT_TRUE(nvml::WaitForProbeWorkers(20'000));
}

}  // namespace
}  // namespace gw::collect
