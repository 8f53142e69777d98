#include "collect/cached_collector.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <map>
#include <thread>

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

// With stat_every_ms, a driver-listed process's stat is read again only when
// due (its age still moves on); one not listed is read every time, which is
// how its end is seen.
TEST(ProcessCache, ReadsAListedProcessStatOnlyWhenDue) {
  const pid_t listed = StartSleeper();
  const pid_t holder = StartSleeper();
  ASSERT_GT(listed, 0);
  ASSERT_GT(holder, 0);
  ProcessCache cache("/proc", /*stat_every_ms=*/10'000);
  const int64_t now = RealClock().NowUnixMs();
  auto first = cache.Refresh({listed, holder}, now, {listed});
  ASSERT_EQ(first.size(), 2u);
  const size_t stats = cache.stat_reads();
  auto second = cache.Refresh({listed, holder}, now + 1, {listed});
  ASSERT_EQ(second.size(), 2u);
  // The holder's stat again; the listed one's not before its turn (at most
  // 10 s after its full read, spread by PID).
  EXPECT_LE(cache.stat_reads(), stats + 2);
  EXPECT_GE(cache.stat_reads(), stats + 1);
  ASSERT_TRUE(second[listed].age_s);

  // Both end. The holder is gone at once; the listed one stays as the driver
  // still lists it until its stat is due, and is gone then.
  Reap(listed);
  Reap(holder);
  auto third = cache.Refresh({listed, holder}, now + 2, {listed});
  EXPECT_EQ(third.count(holder), 0u);
  auto later = cache.Refresh({listed, holder}, now + 10'001, {listed});
  EXPECT_EQ(later.count(listed), 0u);
  EXPECT_EQ(later.count(holder), 0u);
  EXPECT_EQ(cache.open_files(), 0u);
}

TEST(ProcessCache, AgeMovesOnBetweenStatReadsAndAClockGoneBackRereads) {
  const pid_t child = StartSleeper();
  ASSERT_GT(child, 0);
  ProcessCache cache("/proc", /*stat_every_ms=*/3'600'000);
  const int64_t now = RealClock().NowUnixMs();
  auto first = cache.Refresh({child}, now, {child});
  ASSERT_EQ(first.size(), 1u);
  ASSERT_TRUE(first[child].age_s);
  const size_t stats = cache.stat_reads();
  auto second = cache.Refresh({child}, now + 5'000, {child});
  EXPECT_EQ(cache.stat_reads(), stats);  // Not due within the hour.
  ASSERT_TRUE(second[child].age_s);
  EXPECT_NEAR(*second[child].age_s, *first[child].age_s + 5.0, 0.01);
  // The wall clock set back by two hours: the due time is now further than
  // one interval away, so the stat is read.
  (void)cache.Refresh({child}, now - 7'200'000, {child});
  EXPECT_EQ(cache.stat_reads(), stats + 1);
  Reap(child);
}

// A process whose parent ends is reparented: its cached parent's name must
// follow (orphans are told from a service's children by it), and its own
// name too when it renames itself.
TEST(ProcessCache, FollowsAReparentedProcessToItsNewParent) {
  ASSERT_EQ(prctl(PR_SET_CHILD_SUBREAPER, 1), 0);  // The orphan comes to this test.
  int out[2];
  ASSERT_EQ(pipe(out), 0);
  const pid_t shell = fork();
  if (shell == 0) {
    dup2(out[1], STDOUT_FILENO);
    close(out[0]);
    execl("/bin/sh", "sh", "-c", "sleep 60 & echo $!; wait", static_cast<char*>(nullptr));
    _exit(127);
  }
  close(out[1]);
  char buf[32] = {};
  ASSERT_GT(read(out[0], buf, sizeof buf - 1), 0);
  close(out[0]);
  const pid_t sleeper = static_cast<pid_t>(std::atoi(buf));
  ASSERT_GT(sleeper, 0);
  ProcessCache cache("/proc");
  const int64_t now = RealClock().NowUnixMs();
  auto before = cache.Refresh({sleeper}, now);
  ASSERT_EQ(before.count(sleeper), 1u);
  EXPECT_EQ(before[sleeper].ppid, shell);
  EXPECT_EQ(before[sleeper].parent_comm, "sh");
  Reap(shell);
  char self_comm[32] = {};
  ASSERT_EQ(prctl(PR_GET_NAME, self_comm), 0);
  std::map<pid_t, HostProcess> after;
  for (int i = 0; i < 200; ++i) {  // Reparenting follows the reap at once, but poll.
    after = cache.Refresh({sleeper}, now + 1000 + i);
    if (after.count(sleeper) && after[sleeper].ppid == getpid()) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ASSERT_EQ(after.count(sleeper), 1u);
  EXPECT_EQ(after[sleeper].ppid, getpid());
  EXPECT_EQ(after[sleeper].parent_comm, std::string(self_comm));
  EXPECT_EQ(cache.full_reads(), 1u);  // Still from the cache.
  Reap(sleeper);
  prctl(PR_SET_CHILD_SUBREAPER, 0);
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
