#include "collect/cached_collector.h"

#include <dirent.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <map>
#include <string>
#include <string_view>
#include <thread>

#include "core/clock.h"
#include "nvml/probe.h"
#include "test_paths.h"

namespace gw::collect {
namespace {

pid_t StartSleeper() {
  const pid_t pid = fork();
  if (pid == 0) {
    // Gone with the test even when a failed assertion skips its Reap: a
    // sleeper left behind would hold ctest's output pipe for a minute.
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    execl("/bin/sleep", "sleep", "60", static_cast<char*>(nullptr));
    _exit(127);
  }
  return pid;
}

// Until the child has become sleep: before its exec it reads as a copy of
// this process, and during it the kernel names the new executable before it
// has set up the arguments (its command line then reads empty).
bool WaitForExec(pid_t pid) {
  const std::string dir = "/proc/" + std::to_string(pid);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (std::chrono::steady_clock::now() < deadline) {
    char target[256];
    const ssize_t n = readlink((dir + "/exe").c_str(), target, sizeof target);
    if (n > 0 && std::string_view(target, static_cast<size_t>(n)).ends_with("/sleep")) {
      char args[64] = {};
      const int fd = open((dir + "/cmdline").c_str(), O_RDONLY | O_CLOEXEC);
      const ssize_t got = fd >= 0 ? read(fd, args, sizeof args - 1) : -1;
      if (fd >= 0) close(fd);
      if (got > 0 && std::string_view(args) == "sleep") return true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return false;
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

// A finished look's processes handed back as `spare` only lend their memory:
// the result is the same as without them, whatever PIDs they held, and the
// cache's walk beside the sorted PIDs adds, keeps and drops entries as a
// search for each would.
TEST(ProcessCache, SpareNodesLendTheirMemoryNotTheirContent) {
  const pid_t a = StartSleeper(), b = StartSleeper(), c = StartSleeper();
  ASSERT_GT(a, 0);
  ASSERT_GT(b, 0);
  ASSERT_GT(c, 0);
  ASSERT_TRUE(WaitForExec(a));
  ASSERT_TRUE(WaitForExec(b));
  ASSERT_TRUE(WaitForExec(c));
  ProcessCache plain("/proc"), recycled("/proc");
  const int64_t now = RealClock().NowUnixMs();
  // Spare nodes under other PIDs, with long strings that must not show through.
  auto stale = [] {
    std::map<pid_t, HostProcess> spare;
    for (pid_t pid : {1, 2, 999'999, 999'998}) {
      HostProcess& p = spare[pid];
      p.pid = pid;
      p.comm = std::string(100, 'x');
      p.cmdline = {std::string(200, 'y'), "z"};
      p.owner.cgroup_path = std::string(300, 'w');
      p.exe = "/stale";
    }
    return spare;
  };
  const std::vector<std::vector<pid_t>> rounds = {
      {c, a}, {a, b, c, getpid()}, {b}, {getpid(), c, a}, {}};
  int64_t t = now;
  for (const auto& pids : rounds) {
    t += 1000;
    auto want = plain.Refresh(pids, t);
    auto got = recycled.Refresh(pids, t, {}, stale());
    ASSERT_EQ(got.size(), want.size());
    for (const auto& [pid, p] : want) {
      SCOPED_TRACE(pid);
      ASSERT_EQ(got.count(pid), 1u);
      const HostProcess& g = got.at(pid);
      EXPECT_EQ(g.pid, pid);
      EXPECT_EQ(g.comm, p.comm);
      EXPECT_EQ(g.cmdline, p.cmdline);
      EXPECT_EQ(g.exe, p.exe);
      EXPECT_EQ(g.owner.cgroup_path, p.owner.cgroup_path);
      EXPECT_EQ(g.start_ticks, p.start_ticks);
      EXPECT_EQ(g.age_s, p.age_s);
    }
    EXPECT_EQ(recycled.open_files(), plain.open_files());
    EXPECT_EQ(recycled.full_reads(), plain.full_reads());
  }
  EXPECT_EQ(recycled.open_files(), 0u);
  // Only a process new to the cache was read in full: c, a, b and this one,
  // then this one, c and a again (the round of b alone dropped them).
  EXPECT_EQ(recycled.full_reads(), 7u);
  Reap(a);
  Reap(b);
  Reap(c);
}

// A spare node filled from the same full read of a process (facts_read) keeps
// its command line, user and owner and gets only what changes; one from an
// earlier read of that PID (the process was dropped from the cache and read
// again: it may have exec'd since) is filled whole.
TEST(ProcessCache, ASpareNodeKeepsLastingFactsOnlyFromTheSameRead) {
  const pid_t a = StartSleeper();
  ASSERT_GT(a, 0);
  ASSERT_TRUE(WaitForExec(a));
  ProcessCache cache("/proc");
  int64_t t = RealClock().NowUnixMs();
  std::map<pid_t, HostProcess> first = cache.Refresh({a}, t += 1000);
  ASSERT_EQ(first.count(a), 1u);
  const std::vector<std::string> cmdline = first.at(a).cmdline;
  ASSERT_FALSE(cmdline.empty());
  EXPECT_NE(first.at(a).facts_read, 0u);

  cache.Refresh({}, t += 1000);  // Dropped.
  first.at(a).cmdline = {"stale"};
  std::map<pid_t, HostProcess> again = cache.Refresh({a}, t += 1000, {}, std::move(first));
  ASSERT_EQ(again.count(a), 1u);
  EXPECT_EQ(again.at(a).cmdline, cmdline);
  EXPECT_EQ(cache.full_reads(), 2u);

  const HostProcess before = again.at(a);
  // A mark in the spare's lasting facts: it stays, since they are not copied
  // again (by facts_read's contract, the cache's are the same).
  again.at(a).exe = "/marked";
  std::map<pid_t, HostProcess> next = cache.Refresh({a}, t += 1000, {}, std::move(again));
  ASSERT_EQ(next.count(a), 1u);
  const HostProcess& p = next.at(a);
  EXPECT_EQ(p.facts_read, before.facts_read);
  EXPECT_EQ(p.exe, "/marked");
  EXPECT_EQ(p.cmdline, cmdline);
  EXPECT_EQ(p.user, before.user);
  ASSERT_TRUE(p.age_s && before.age_s);
  EXPECT_GT(*p.age_s, *before.age_s);  // What changes did.
  EXPECT_EQ(cache.full_reads(), 2u);
  Reap(a);
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

// Listed processes' stats are read together, at marks stat_every_ms apart
// from the first refresh: between marks a refresh of listed, cached
// processes reads nothing, and says so beforehand (WouldRead).
TEST(ProcessCache, WouldReadOnlyForANewUnlistedOrDueProcess) {
  const pid_t a = StartSleeper(), b = StartSleeper();
  ASSERT_GT(a, 0);
  ASSERT_GT(b, 0);
  ASSERT_TRUE(WaitForExec(a));
  ASSERT_TRUE(WaitForExec(b));
  const std::vector<pid_t> ab = a < b ? std::vector<pid_t>{a, b} : std::vector<pid_t>{b, a};
  ProcessCache cache("/proc", /*stat_every_ms=*/30'000);
  const int64_t t0 = RealClock().NowUnixMs();
  EXPECT_TRUE(cache.WouldRead(ab, ab, t0));  // Not cached yet.
  cache.Refresh(ab, t0, ab);
  EXPECT_FALSE(cache.WouldRead(ab, ab, t0 + 1'000));
  EXPECT_FALSE(cache.WouldRead({a}, {a}, t0 + 1'000));
  EXPECT_TRUE(cache.WouldRead(ab, {ab[0]}, t0 + 1'000));  // Not listed: read every time.
  EXPECT_TRUE(cache.WouldRead(ab, ab, t0 + 30'000));      // The mark: both due.
  size_t stats = cache.stat_reads();
  cache.Refresh(ab, t0 + 1'000, ab);
  EXPECT_EQ(cache.stat_reads(), stats);
  cache.Refresh(ab, t0 + 30'000, ab);
  EXPECT_EQ(cache.stat_reads(), stats + 2);
  EXPECT_FALSE(cache.WouldRead(ab, ab, t0 + 59'999));

  // A process first read between marks is read at the next mark, with the rest.
  const pid_t c = StartSleeper();
  ASSERT_GT(c, 0);
  ASSERT_TRUE(WaitForExec(c));
  std::vector<pid_t> abc = {a, b, c};
  std::sort(abc.begin(), abc.end());
  EXPECT_TRUE(cache.WouldRead(abc, abc, t0 + 45'000));
  cache.Refresh(abc, t0 + 45'000, abc);
  EXPECT_FALSE(cache.WouldRead(abc, abc, t0 + 59'999));
  EXPECT_TRUE(cache.WouldRead(abc, abc, t0 + 60'000));
  stats = cache.stat_reads();
  cache.Refresh(abc, t0 + 60'000, abc);
  EXPECT_EQ(cache.stat_reads(), stats + 3);
  for (pid_t pid : {a, b, c}) Reap(pid);
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

// Options for looks at the simulated server of scenarios/`scenario`, with a
// deadline long enough for a sanitizer build (nothing here blocks).
collect::CollectOptions SimOptions(const std::string& scenario) {
  setenv("GPUWARDEN_SIM_SCENARIO", (gw::test::SourceDir() + "/scenarios/" + scenario).c_str(), 1);
  collect::CollectOptions options;
  options.nvml_library = gw::test::BinaryDir() + "/sim/libnvidia-ml.so.1";
  options.simulated = true;
  options.deadline_ms = 20'000;
  return options;
}

TEST(CachedCollector, FullLooksNowAndThenLightLooksBetween) {
  collect::CollectOptions options = SimOptions("timeline-demo.json");
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

// A light look whose processes are all listed, cached and not due reads
// nothing of /proc and runs no worker; at the mark it reads them on the
// worker, under the deadline.
TEST(CachedCollector, ALightLookWithNothingDueReadsNothingAndWakesNoWorker) {
  const pid_t listed = StartSleeper();
  ASSERT_GT(listed, 0);
  ASSERT_TRUE(WaitForExec(listed));
  setenv("GW_CLEAN_PID_0", std::to_string(listed).c_str(), 1);  // Listed on GPU 0.
  collect::CollectOptions options = SimOptions("clean-idle.json");
  FakeClock clock(RealClock().NowUnixMs());
  CachedCollector collector(options, /*full_every_ms=*/3'600'000, &clock,
                            /*stat_every_ms=*/30'000);
  const Snapshot first = collector.Look(0);
  ASSERT_EQ(first.processes.count(listed), 1u);
  ASSERT_TRUE(first.processes.at(listed).age_s);
  EXPECT_EQ(collector.unread_looks(), 0u);

  clock.AdvanceMs(1'000);
  const Snapshot light = collector.Look(0);
  EXPECT_EQ(collector.unread_looks(), 1u);
  ASSERT_EQ(light.processes.count(listed), 1u);
  const HostProcess& p = light.processes.at(listed);
  EXPECT_TRUE(p.listed_by_driver);
  EXPECT_EQ(p.cmdline, first.processes.at(listed).cmdline);
  ASSERT_TRUE(p.age_s);
  EXPECT_NEAR(*p.age_s, *first.processes.at(listed).age_s + 1.0, 0.01);

  clock.AdvanceMs(30'000);  // Past the mark: the stat is read, on the worker.
  (void)collector.Look(0);
  EXPECT_EQ(collector.unread_looks(), 1u);
  clock.AdvanceMs(1'000);
  const Snapshot after = collector.Look(0);
  EXPECT_EQ(collector.unread_looks(), 2u);
  EXPECT_EQ(after.processes.count(listed), 1u);
  Reap(listed);
  unsetenv("GW_CLEAN_PID_0");
  EXPECT_TRUE(nvml::WaitForProbeWorkers(20'000));
}

// Recycle is called from the daemon's loop: it must not wait behind a look
// whose /proc read is stuck (here a FIFO in place of a listed process's stat
// file, which blocks its open until a writer comes).
TEST(CachedCollector, RecycleDoesNotWaitForAStuckProcRead) {
  setenv("GPUWARDEN_SIM_SCENARIO",
         (gw::test::SourceDir() + "/scenarios/timeline-demo.json").c_str(), 1);
  char dir_template[] = "/tmp/gw_cached_collector.XXXXXX";
  ASSERT_NE(mkdtemp(dir_template), nullptr);
  const std::string root = dir_template;
  const std::string pid_dir = root + "/720440";  // Listed on GPU 1 by the scenario.
  const std::string fifo = pid_dir + "/stat";
  ASSERT_EQ(mkdir(pid_dir.c_str(), 0755), 0);
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  collect::CollectOptions options;
  options.nvml_library = gw::test::BinaryDir() + "/sim/libnvidia-ml.so.1";
  options.simulated = true;
  options.proc_root = root;
  options.deadline_ms = 1'500;
  {
    CachedCollector collector(options, /*full_every_ms=*/3'600'000);
    Snapshot stuck = collector.Look(0);
    EXPECT_TRUE(stuck.timed_out);
    std::map<pid_t, HostProcess> spare;
    spare[1].comm = "spare";
    const auto start = std::chrono::steady_clock::now();
    collector.Recycle(std::move(spare));
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(500));
    // A writer that comes and goes: the stuck open returns, the read sees
    // the end, and the worker is free again.
    const int writer = open(fifo.c_str(), O_WRONLY);
    ASSERT_GE(writer, 0);
    close(writer);
  }
  EXPECT_TRUE(nvml::WaitForProbeWorkers(20'000));
  unlink(fifo.c_str());
  rmdir(pid_dir.c_str());
  rmdir(root.c_str());
}

// A caller that looks often for the driver's view alone never pays for a
// full look; the next look that may be full is, once it is due (a fake
// clock: a minute passes at once).
TEST(CachedCollector, NoFullLookWhereItIsNotAllowedAndOneOnceDue) {
  collect::CollectOptions options = SimOptions("timeline-demo.json");
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
  setenv("GPUWARDEN_SIM_BLOCK_SCALE", "0.05", 1);
  collect::CollectOptions options = SimOptions("init-hang.json");
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

// A child that holds `file` open until `release` exists, then closes it and
// waits to be killed.
pid_t StartHolder(const std::string& file, const std::string& release) {
  const pid_t pid = fork();
  if (pid == 0) {
    const int fd = open(file.c_str(), O_RDONLY);
    if (fd < 0) _exit(127);
    while (access(release.c_str(), F_OK) != 0) usleep(1000);
    close(fd);
    for (;;) pause();
  }
  return pid;
}

// `pid` has `file` open (one of /proc/PID/fd links to it).
bool HoldsOpen(pid_t pid, const std::string& file) {
  const std::string fds = "/proc/" + std::to_string(pid) + "/fd";
  DIR* dir = opendir(fds.c_str());
  if (dir == nullptr) return false;
  bool found = false;
  while (dirent* e = readdir(dir)) {
    char target[512];
    const ssize_t n = readlinkat(dirfd(dir), e->d_name, target, sizeof target);
    found = found || (n > 0 && std::string_view(target, static_cast<size_t>(n)) == file);
  }
  closedir(dir);
  return found;
}

// The full look's scan does not read again the files of a process the driver
// lists and an earlier scan read: it keeps what that scan found, even once
// the process has closed them. A holder the driver does not list is read at
// every scan, and is gone once it has closed them.
TEST(CachedCollector, AListedProcessFilesAreReadAtItsFirstScanOnly) {
  char dir_template[] = "/tmp/gw_cached_devices.XXXXXX";
  ASSERT_NE(mkdtemp(dir_template), nullptr);
  const std::string dev = dir_template;
  const std::string file = dev + "/nvidia0", release = dev + "/release";
  {
    const int fd = open(file.c_str(), O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
    ASSERT_GE(fd, 0);
    close(fd);
  }
  const pid_t listed = StartHolder(file, release), hidden = StartHolder(file, release);
  ASSERT_GT(listed, 0);
  ASSERT_GT(hidden, 0);
  setenv("GW_CLEAN_PID_0", std::to_string(listed).c_str(), 1);  // Listed on GPU 0.
  collect::CollectOptions options = SimOptions("clean-idle.json");
  options.device_dir = dev;
  FakeClock clock(RealClock().NowUnixMs());
  CachedCollector collector(options, /*full_every_ms=*/60'000, &clock);
  auto files_of = [](const Snapshot& s, pid_t pid) {
    auto it = s.processes.find(pid);
    return it == s.processes.end() ? std::vector<std::string>{} : it->second.device_files;
  };
  // Both children have opened the file before the first scan: a listed
  // process scanned before it opened its files would keep that scan's none.
  for (int i = 0; i < 5000 && !(HoldsOpen(listed, file) && HoldsOpen(hidden, file)); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ASSERT_TRUE(HoldsOpen(listed, file) && HoldsOpen(hidden, file));
  clock.AdvanceMs(60'000);
  const Snapshot first = collector.Look(0);
  ASSERT_TRUE(collector.last_full());
  EXPECT_EQ(files_of(first, listed), std::vector<std::string>{file});
  EXPECT_EQ(files_of(first, hidden), std::vector<std::string>{file});
  EXPECT_TRUE(first.processes.at(listed).listed_by_driver);
  // Both close it.
  {
    const int fd = open(release.c_str(), O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
    ASSERT_GE(fd, 0);
    close(fd);
  }
  Snapshot later;
  for (int i = 0; i < 2000; ++i) {
    clock.AdvanceMs(60'000);
    later = collector.Look(0);
    if (!later.processes.count(hidden)) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ASSERT_TRUE(collector.last_full());
  EXPECT_EQ(later.processes.count(hidden), 0u);  // Read again: it holds nothing now.
  EXPECT_EQ(files_of(later, listed), std::vector<std::string>{file});  // Not read again.
  for (pid_t pid : {listed, hidden}) Reap(pid);
  unsetenv("GW_CLEAN_PID_0");
  unlink(file.c_str());
  unlink(release.c_str());
  rmdir(dev.c_str());
  EXPECT_TRUE(nvml::WaitForProbeWorkers(20'000));
}

}  // namespace
}  // namespace gw::collect
