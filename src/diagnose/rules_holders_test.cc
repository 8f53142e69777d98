// IDLE, ORPHAN, ZOMBIE, UNINTERRUPTIBLE, INVISIBLE and UNLISTED_DEVICE holders,
// and FOREIGN_PID.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "diagnose/rules.h"
#include "diagnose/test_util.h"
#include "diagnose/verdict.h"

namespace gw::diagnose {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;
using namespace fixtures;  // NOLINT

constexpr double kTwoDays = 2 * 86400 + 4 * 3600;

// The classic: a Jupyter kernel holding 70 GiB for two days at 0 % SM.
Snapshot JupyterServer() {
  Snapshot s = HealthyServer(4);
  AddProcess(s, {.pid = 4242,
                 .gpu = 3,
                 .bytes = 70 * kGiB,
                 .sm = 0,
                 .user = "alice",
                 .comm = "python3",
                 .age_s = kTwoDays,
                 .ppid = 4100,
                 .sid = 4000,
                 .parent_comm = "jupyter-lab"});
  s.processes[4242].owner.systemd_unit = "jupyter.service";
  return s;
}

bool HasStep(const Finding& f, std::string_view text) {
  for (const std::string& step : f.next_steps) {
    if (step.find(text) != std::string::npos) return true;
  }
  return false;
}

// gpuwardend's looks: `pid` on `gpu` seen since `first_seen_ago_s` before
// `s`, idle since `idle_ago_s` before it (unset: at work in its last look).
DiagnoseOptions WithHistory(const Snapshot& s, unsigned gpu, pid_t pid, double first_seen_ago_s,
                            Opt<double> idle_ago_s, bool per_process = true) {
  auto h = std::make_shared<ActivityHistory>();
  h->as_of_ms = s.time_unix_ms;
  for (const Gpu& g : s.gpus) h->gpus.push_back(g.index);
  HolderActivity a;
  a.gpu = gpu;
  a.pid = pid;
  a.first_seen_ms = s.time_unix_ms - static_cast<int64_t>(first_seen_ago_s * 1000);
  a.last_seen_ms = s.time_unix_ms;
  if (idle_ago_s) {
    a.idle_since_ms = s.time_unix_ms - static_cast<int64_t>(*idle_ago_s * 1000);
    if (*idle_ago_s < first_seen_ago_s) a.last_work_ms = *a.idle_since_ms - 1000;
  } else {
    a.last_work_ms = s.time_unix_ms;
  }
  a.idle_per_process = per_process;
  h->holders.push_back(a);
  DiagnoseOptions o;
  o.activity_history = h;
  return o;
}

TEST(IdleHolderTest, JupyterKernel) {
  // gpuwardend has watched it idle for two hours.
  const Snapshot s = JupyterServer();
  auto findings = RunRules(Window(s, 3), WithHistory(s, 3, 4242, 7200, 7200));
  ASSERT_EQ(Count(findings, "IDLE_HOLDER"), 1u);
  const Finding& f = *Find(findings, "IDLE_HOLDER");
  EXPECT_THAT(f.gpus, ElementsAre(3));
  EXPECT_THAT(f.pids, ElementsAre(4242));
  EXPECT_EQ(f.implies, Verdict::kReclaimable);
  EXPECT_EQ(f.message,
            "PID 4242 python3 (alice, jupyter.service) holds 70 GiB on GPU 3 and has done no GPU "
            "work: idle for at least 2h (gpuwardend's per-process history); it has run for 2d 4h");
  EXPECT_EQ(*EvidenceNumber(f, kHeldEvidence), 70.0 * kGiB);
  EXPECT_NEAR(*EvidenceNumber(f, "idle_for"), 7200, 1);
  EXPECT_NEAR(f.impact, 70, 1e-9);
  EXPECT_TRUE(HasStep(f, "gpuwarden clean --pid 4242 --dry-run"));
  EXPECT_TRUE(HasStep(f, "gpuwarden kill 4242"));
}

// The case: a two-hour run that paused a minute ago (a checkpoint)
// sits at 0 % in the window; its age says nothing about its idle time.
TEST(IdleHolderTest, APauseWithinATwoHourRunIsNotIdle) {
  const Snapshot s = JupyterServer();
  const DiagnoseOptions o = WithHistory(s, 3, 4242, 7200, 60);
  auto findings = RunRules(Window(s, 7, 500), o);
  EXPECT_EQ(Count(findings, "IDLE_HOLDER"), 0u);
  ASSERT_EQ(Count(findings, "HOLDER_IDLE_SHORT"), 1u);
  const Finding& f = *Find(findings, "HOLDER_IDLE_SHORT");
  EXPECT_THAT(f.message, HasSubstr("idle for 1m (gpuwardend's per-process history)"));
  EXPECT_THAT(f.message, HasSubstr("a holder counts as idle after 10m without work"));
  EXPECT_NEAR(*EvidenceNumber(f, "idle_for"), 60, 1);
  EXPECT_EQ(f.implies, Verdict::kOk);
  const Diagnosis d = Diagnose(Window(s, 7, 500), o);
  EXPECT_NE(d.server, Verdict::kReclaimable);
  // Without a daemon the window is all that was seen: 3 s, not 10 minutes.
  auto alone = RunRules(Window(s, 7, 500), {});
  EXPECT_EQ(Count(alone, "IDLE_HOLDER"), 0u);
  ASSERT_EQ(Count(alone, "HOLDER_IDLE_SHORT"), 1u);
  EXPECT_THAT(Find(alone, "HOLDER_IDLE_SHORT")->message,
              HasSubstr("idle for at least 3s (this look's samples)"));
  // Asked for less (--idle-for 2s): the window shows that much.
  DiagnoseOptions brief;
  brief.idle_holder_min_idle_s = 2;
  EXPECT_EQ(Count(RunRules(Window(s, 7, 500), brief), "IDLE_HOLDER"), 1u);
}

// At work in the daemon's last look, just before the window: not idle.
TEST(IdleHolderTest, WorkJustBeforeTheWindowIsNotIdle) {
  const Snapshot s = JupyterServer();
  auto findings = RunRules(Window(s, 7, 500), WithHistory(s, 3, 4242, 7200, std::nullopt));
  EXPECT_EQ(Count(findings, "IDLE_HOLDER"), 0u);
  EXPECT_THAT(Find(findings, "HOLDER_IDLE_SHORT")->message, HasSubstr("idle for 3s"));
}

TEST(IdleHolderTest, OneLookWithHistoryIsEnough) {
  const Snapshot s = JupyterServer();
  EXPECT_EQ(Count(RunOne(s, WithHistory(s, 3, 4242, 7200, 7200)), "IDLE_HOLDER"), 1u);
  EXPECT_EQ(Count(RunOne(s), "IDLE_HOLDER"), 0u);
  EXPECT_EQ(Count(RunOne(s), "HOLDER_IDLE_ONE_SAMPLE"), 1u);
}

// The daemon's per-process log reaches back to its start; the GPU's own
// history (held and idle since) reaches further, never past the process's age.
TEST(IdleHolderTest, TheGpusHistoryReachesFurtherBoundedByAge) {
  Snapshot s = JupyterServer();
  DiagnoseOptions o = WithHistory(s, 3, 4242, 300, 300);  // Restarted 5 minutes ago.
  auto h = std::make_shared<ActivityHistory>(*o.activity_history);
  h->gpu_idle[3] = GpuIdleRun{s.time_unix_ms - 3 * 3600 * 1000, false};
  o.activity_history = h;
  auto findings = RunRules(Window(s, 3), o);
  ASSERT_EQ(Count(findings, "IDLE_HOLDER"), 1u);
  const Finding& f = *Find(findings, "IDLE_HOLDER");
  EXPECT_NEAR(*EvidenceNumber(f, "idle_for"), 3 * 3600, 1);
  EXPECT_THAT(f.message, HasSubstr("idle for 3h (gpuwardend's history of the GPU's utilisation)"));
  // A process 20 minutes old has been idle 20 minutes at most.
  s.processes[4242].age_s = 1200;
  auto young = RunRules(Window(s, 3), o);
  ASSERT_EQ(Count(young, "IDLE_HOLDER"), 1u);
  EXPECT_NEAR(*EvidenceNumber(*Find(young, "IDLE_HOLDER"), "idle_for"), 1200, 1);
  EXPECT_THAT(Find(young, "IDLE_HOLDER")->message, HasSubstr("all its life"));
}

// A history that ends long before the window, or of another process under
// the same PID, says nothing about this one.
TEST(IdleHolderTest, StaleOrReusedHistoryIsNotUsed) {
  Snapshot s = JupyterServer();
  s.processes[4242].start_ticks = 111;
  DiagnoseOptions o = WithHistory(s, 3, 4242, 7200, 7200);
  auto stale = std::make_shared<ActivityHistory>(*o.activity_history);
  stale->as_of_ms -= 600'000;
  stale->holders[0].last_seen_ms -= 600'000;
  DiagnoseOptions old_history;
  old_history.activity_history = stale;
  EXPECT_EQ(Count(RunRules(Window(s, 3), old_history), "IDLE_HOLDER"), 0u);
  auto reused = std::make_shared<ActivityHistory>(*o.activity_history);
  reused->holders[0].start_ticks = 99;
  DiagnoseOptions other_process;
  other_process.activity_history = reused;
  EXPECT_EQ(Count(RunRules(Window(s, 3), other_process), "IDLE_HOLDER"), 0u);
  EXPECT_EQ(Count(RunRules(Window(s, 3), o), "IDLE_HOLDER"), 1u);
}

// --min-age: idle long enough, but has not run long enough.
TEST(IdleHolderTest, MinimumAgeIsSeparate) {
  const Snapshot s = JupyterServer();
  DiagnoseOptions o = WithHistory(s, 3, 4242, 7200, 7200);
  o.idle_holder_min_age_s = 3 * 86400;
  auto findings = RunRules(Window(s, 3), o);
  EXPECT_EQ(Count(findings, "IDLE_HOLDER"), 0u);
  EXPECT_THAT(Find(findings, "HOLDER_IDLE_SHORT")->message,
              HasSubstr("a holder counts as idle only once it has run 3d"));
}

TEST(IdleHolderTest, NotYoursSaysWhomToAsk) {
  const Snapshot s = JupyterServer();
  DiagnoseOptions o = WithHistory(s, 3, 4242, 7200, 7200);
  o.caller_uid = 1002;
  auto findings = RunOne(s, o);
  ASSERT_EQ(Count(findings, "IDLE_HOLDER"), 1u);
  EXPECT_TRUE(HasStep(*Find(findings, "IDLE_HOLDER"), "It is not yours: ask alice"));
  o.caller_uid = 1001;
  EXPECT_FALSE(HasStep(*Find(RunOne(s, o), "IDLE_HOLDER"), "not yours"));
}

// `exec -a Xorg sleep`: argv[0] and comm say Xorg, the executable says sleep.
// The kernel's word decides, in why as in clean (act/plan_test.cc).
TEST(IdleHolderTest, ARenamedProcessIsJudgedByItsExecutable) {
  Snapshot s = JupyterServer();
  HostProcess& p = s.processes[4242];
  p.comm = "Xorg";
  p.cmdline = {"Xorg"};
  p.exe = "/usr/bin/sleep";
  p.owner.systemd_unit = "session-4.scope";
  DiagnoseOptions o = WithHistory(s, 3, 4242, 7200, 7200);
  auto findings = RunRules(Window(s, 3), o);
  EXPECT_EQ(Count(findings, "IDLE_HOLDER"), 1u);
  EXPECT_EQ(Count(findings, "GRAPHICS_HOLDER"), 0u);
  // The real one: its executable.
  p.exe = "/usr/lib/xorg/Xorg";
  findings = RunRules(Window(s, 3), o);
  EXPECT_EQ(Count(findings, "IDLE_HOLDER"), 0u);
  EXPECT_EQ(Count(findings, "GRAPHICS_HOLDER"), 1u);
  // The administrator's protected unit: never idle either.
  p.exe = "/usr/bin/python3.11";
  p.owner.systemd_unit = "jupyter.service";
  o.protect = {"jupyter"};
  EXPECT_EQ(Count(RunRules(Window(s, 3), o), "IDLE_HOLDER"), 0u);
}

TEST(IdleHolderTest, WorkInAnySampleIsNotIdle) {
  auto window = Window(JupyterServer(), 3);
  window[1].gpus[3].processes[0].sm_util_pct = 3;
  window[1].gpus[3].utilization_gpu_pct = 3;
  EXPECT_EQ(Count(RunRules(window, {}), "IDLE_HOLDER"), 0u);
}

TEST(IdleHolderTest, UnknownSmSkips) {
  Snapshot s = JupyterServer();
  s.gpus[3].processes[0].sm_util_pct.reset();
  EXPECT_EQ(Count(RunOne(s), "IDLE_HOLDER"), 0u);
}

TEST(IdleHolderTest, UnreliableSmSkips) {
  // The GPU is 80 % busy while its only process reads 0 %: the process
  // samples were missed, not the work.
  Snapshot s = JupyterServer();
  SetLoad(s, 3, 80);
  EXPECT_EQ(Count(RunOne(s), "IDLE_HOLDER"), 0u);
}

TEST(IdleHolderTest, YoungOrSmallIsNotReported) {
  Snapshot s = JupyterServer();
  s.processes[4242].age_s = 120;  // Still loading its model.
  EXPECT_EQ(Count(RunOne(s), "IDLE_HOLDER"), 0u);
  Snapshot small = HealthyServer(1);
  AddProcess(small, {.pid = 7, .gpu = 0, .bytes = 900 * kMiB, .sm = 0, .age_s = kTwoDays});
  EXPECT_EQ(Count(RunOne(small), "IDLE_HOLDER"), 0u);
}

TEST(IdleHolderTest, OfflineDumpNeedsALongWindow) {
  Snapshot s = JupyterServer();
  s.source = SnapshotSource::kXmlDump;
  s.processes.clear();
  s.processes_scanned = false;
  EXPECT_EQ(Count(RunOne(s), "IDLE_HOLDER"), 0u);  // Age unknown, one sample.
  auto window = Window(s, 61, 10'000);             // Ten minutes of samples.
  auto findings = RunRules(window, {});
  ASSERT_EQ(Count(findings, "IDLE_HOLDER"), 1u);
  EXPECT_THAT(Find(findings, "IDLE_HOLDER")->message, HasSubstr("PID 4242 ? (?)"));
  // Samples a minute apart: what happened between them was not seen.
  EXPECT_EQ(Count(RunRules(Window(s, 11, 60'000), {}), "IDLE_HOLDER"), 0u);
}

TEST(OrphanHolderTest, WorkerOfAKilledRun) {
  Snapshot s = HealthyServer(2);
  // Main process 5000 was killed; its workers 5001 and 5002 were adopted by init.
  for (pid_t pid : {5001, 5002}) {
    AddProcess(s, {.pid = pid,
                   .gpu = 0,
                   .bytes = 3 * kGiB,
                   .sm = 0,
                   .user = "bob",
                   .uid = 1002,
                   .age_s = 7200,
                   .ppid = 1,
                   .pgid = 5000,
                   .sid = 4900,
                   .parent_comm = "systemd"});
  }
  auto findings = RunOne(s);
  ASSERT_EQ(Count(findings, "ORPHAN_HOLDER"), 2u);
  EXPECT_EQ(Count(findings, "IDLE_HOLDER"), 0u);  // Reported once, as orphans.
  const Finding& f = *Find(findings, "ORPHAN_HOLDER");
  EXPECT_THAT(f.pids, ElementsAre(5001));
  EXPECT_THAT(f.message, HasSubstr("adopted by init (PID 1) while still in process group 5000"));
  EXPECT_THAT(f.message, HasSubstr("with no GPU work in the window"));
  EXPECT_EQ(*EvidenceNumber(f, kHeldEvidence), 3.0 * kGiB);
  EXPECT_TRUE(HasStep(f, "kill -- -5000"));
  EXPECT_TRUE(HasStep(f, "gpuwarden clean --pid 5001 --dry-run"));
}

// PID 5003, adopted by init from process group 5000, holding the device file
// of GPUs 0..gpus-1 without being listed by the driver.
void AddUnlistedOrphanWorker(Snapshot& s, unsigned gpus) {
  for (unsigned g = 0; g < gpus; ++g) {
    AddProcess(s, {.pid = 5003,
                   .gpu = g,
                   .ppid = 1,
                   .pgid = 5000,
                   .parent_comm = "systemd",
                   .listed = false});
  }
}

TEST(OrphanHolderTest, UnlistedWorkerIsReportedOnceForAllItsGpus) {
  // A data-loader worker forked after cuInit holds every /dev/nvidiaN but has
  // no context: the driver does not list it ("fuser -v /dev/nvidia*" does).
  Snapshot s = HealthyServer(4);
  AddUnlistedOrphanWorker(s, 4);
  auto findings = RunOne(s);
  ASSERT_EQ(Count(findings, "ORPHAN_HOLDER"), 1u);
  const Finding& f = *Find(findings, "ORPHAN_HOLDER");
  EXPECT_THAT(f.gpus, ElementsAre(0, 1, 2, 3));
  EXPECT_THAT(f.message, HasSubstr("holds /dev/nvidia* of GPU 0,1,2,3, but its parent is gone"));
  EXPECT_FALSE(EvidenceNumber(f, kHeldEvidence).has_value());  // Memory unknown, not 0.
  EXPECT_EQ(Count(findings, "UNLISTED_DEVICE_HOLDER"), 0u);    // Reported as the orphan it is.
}

TEST(OrphanHolderTest, TheMessageNamesTheSnapshotsDeviceDirectory) {
  // gpuwarden --dev-dir /tmp/gw-dev: the holder scan matched /tmp/gw-dev/nvidiaN.
  Snapshot s = HealthyServer(2);
  s.device_dir = "/tmp/gw-dev/";
  AddUnlistedOrphanWorker(s, 2);
  for (auto& [pid, host] : s.processes) {
    for (std::string& file : host.device_files) file.replace(0, 5, "/tmp/gw-dev/");
  }
  auto findings = RunOne(s);
  ASSERT_EQ(Count(findings, "ORPHAN_HOLDER"), 1u);
  const Finding& f = *Find(findings, "ORPHAN_HOLDER");
  EXPECT_THAT(f.message, HasSubstr("holds /tmp/gw-dev/nvidia* of GPU 0,1, but its parent is gone"));
  EXPECT_THAT(f.message, Not(HasSubstr("/dev/nvidia*")));
}

TEST(OrphanHolderTest, AdoptedBySystemdUser) {
  Snapshot s = HealthyServer(1);
  AddProcess(s, {.pid = 6001,
                 .gpu = 0,
                 .bytes = 2 * kGiB,
                 .sm = 0,
                 .ppid = 1500,
                 .pgid = 6000,
                 .parent_comm = "systemd"});
  auto findings = RunOne(s);
  ASSERT_EQ(Count(findings, "ORPHAN_HOLDER"), 1u);
  EXPECT_THAT(Find(findings, "ORPHAN_HOLDER")->message, HasSubstr("adopted by systemd (PID 1500)"));
}

TEST(OrphanHolderTest, NotOrphans) {
  auto orphan_count = [](Proc p) {
    Snapshot s = HealthyServer(1);
    AddProcess(s, p);
    return Count(RunOne(s), "ORPHAN_HOLDER");
  };
  const Proc worker{
      .pid = 5001, .gpu = 0, .sm = 0, .ppid = 1, .pgid = 5000, .parent_comm = "systemd"};
  EXPECT_EQ(orphan_count(worker), 1u);
  Proc p = worker;
  p.pgid = 5001;  // Leads its own group: a job started with nohup from a shell.
  EXPECT_EQ(orphan_count(p), 0u);
  p = worker;
  p.sid = 5001;  // Leads its session: a daemon.
  EXPECT_EQ(orphan_count(p), 0u);
  p = worker;
  p.ppid = 5000;  // Its parent is alive.
  p.parent_comm = "python";
  EXPECT_EQ(orphan_count(p), 0u);
  p = worker;
  p.sm = 70;  // It computes: somebody's running job.
  EXPECT_EQ(orphan_count(p), 0u);

  // The group leader is alive on the GPU.
  Snapshot s = HealthyServer(1);
  AddProcess(s, worker);
  AddProcess(s, {.pid = 5000, .gpu = 0, .sm = 40});
  EXPECT_EQ(Count(RunOne(s), "ORPHAN_HOLDER"), 0u);

  // Offline: no /proc, no judgement.
  Snapshot offline = HealthyServer(1);
  AddProcess(offline, worker);
  offline.processes_scanned = false;
  EXPECT_EQ(Count(RunOne(offline), "ORPHAN_HOLDER"), 0u);
}

// A zombie has closed its files: reaping it frees nothing. What holds the
// memory is a process that inherited the device file (its run's workers).
TEST(ZombieHolderTest, WorkersThatInheritedTheDeviceFileAreNamed) {
  Snapshot s = HealthyServer(2);
  AddProcess(s, {.pid = 7001,
                 .gpu = 1,
                 .bytes = 5 * kGiB,
                 .sm = 0,
                 .state = ProcessState::kZombie,
                 .ppid = 7000,
                 .pgid = 7000,
                 .parent_comm = "torchrun"});
  // A data-loader worker of the same run holds /dev/nvidia1, unlisted.
  AddProcess(s, {.pid = 7005, .gpu = 1, .sm = 0, .ppid = 1, .pgid = 7000, .listed = false});
  auto findings = RunRules(Window(s, 2), {});
  ASSERT_EQ(Count(findings, "ZOMBIE_HOLDER"), 1u);
  const Finding& f = *Find(findings, "ZOMBIE_HOLDER");
  EXPECT_THAT(f.message, HasSubstr("kill cannot help and reaping it frees nothing"));
  EXPECT_THAT(f.message, HasSubstr("PID 7005 of its process group 7000 still holds /dev/nvidia*, "
                                   "inherited from it: end it to free the GPU"));
  EXPECT_THAT(f.message, Not(HasSubstr("reap it")));
  EXPECT_TRUE(HasStep(f, "kill -- -7000"));
  EXPECT_FALSE(HasStep(f, "gpuwarden kill 7000"));  // Its parent frees nothing.
  EXPECT_FALSE(HasStep(f, "gpuwarden kill 7001"));  // Killing a zombie does nothing.
  // The worker, adopted by init, is the orphan that clean ends.
  ASSERT_EQ(Count(findings, "ORPHAN_HOLDER"), 1u);
  EXPECT_THAT(Find(findings, "ORPHAN_HOLDER")->pids, ElementsAre(7005));
  EXPECT_EQ(Count(findings, "IDLE_HOLDER"), 0u);
}

TEST(ZombieHolderTest, NothingElseHoldsItMeansTheDriverHasTheContext) {
  Snapshot s = HealthyServer(1);
  AddProcess(s, {.pid = 7001,
                 .gpu = 0,
                 .sm = 0,
                 .state = ProcessState::kZombie,
                 .ppid = 1,
                 .pgid = 7000,
                 .parent_comm = "systemd"});
  auto findings = RunOne(s);
  ASSERT_EQ(Count(findings, "ZOMBIE_HOLDER"), 1u);
  const Finding& f = *Find(findings, "ZOMBIE_HOLDER");
  EXPECT_THAT(f.message, HasSubstr("no other process holds its device file: the driver is "
                                   "tearing its context down, or has kept it"));
  EXPECT_FALSE(HasStep(f, "gpuwarden kill"));  // Never suggest killing init.
  EXPECT_FALSE(HasStep(f, "kill -- -"));
  EXPECT_TRUE(HasStep(f, "admin: "));
}

TEST(ZombieHolderTest, JustExitedIsNotReported) {
  Snapshot s = HealthyServer(1);
  AddProcess(s, {.pid = 7001, .gpu = 0, .sm = 0, .state = ProcessState::kZombie});
  auto window = Window(s, 3);
  window[0].processes[7001].state = ProcessState::kRunning;
  EXPECT_EQ(Count(RunRules(window, {}), "ZOMBIE_HOLDER"), 0u);
}

TEST(UninterruptibleHolderTest, StuckInD) {
  Snapshot s = HealthyServer(1);
  AddProcess(
      s, {.pid = 8001, .gpu = 0, .bytes = 12 * kGiB, .sm = 0, .state = ProcessState::kDiskSleep});
  auto findings = RunRules(Window(s, 3, 1500), {});
  ASSERT_EQ(Count(findings, "UNINTERRUPTIBLE_HOLDER"), 1u);
  const Finding& f = *Find(findings, "UNINTERRUPTIBLE_HOLDER");
  EXPECT_EQ(f.implies, Verdict::kDegraded);
  EXPECT_EQ(f.actor, Actor::kAdmin);
  EXPECT_THAT(f.message, HasSubstr("for at least 3s"));
  EXPECT_TRUE(HasStep(f, "kill -9 cannot end a process in D state"));
  EXPECT_TRUE(HasStep(f, "admin: if it stays in D, reset the GPU (gpuwarden reset --plan 0 lists"));
  EXPECT_EQ(Count(findings, "IDLE_HOLDER"), 0u);
}

TEST(UninterruptibleHolderTest, BriefDIsNormal) {
  Snapshot s = HealthyServer(1);
  AddProcess(
      s, {.pid = 8001, .gpu = 0, .bytes = 12 * kGiB, .sm = 0, .state = ProcessState::kDiskSleep});
  EXPECT_EQ(Count(RunOne(s), "UNINTERRUPTIBLE_HOLDER"), 0u);                        // One sample.
  EXPECT_EQ(Count(RunRules(Window(s, 3, 500), {}), "UNINTERRUPTIBLE_HOLDER"), 0u);  // 1 s.
  auto window = Window(s, 3, 1500);
  window[0].processes[8001].state = ProcessState::kRunning;
  EXPECT_EQ(Count(RunRules(window, {}), "UNINTERRUPTIBLE_HOLDER"), 0u);
}

// Invisible holders are judged over a window: one sample cannot tell an idle
// holder from a job between two steps.
std::vector<Snapshot> Idle(const Snapshot& s) { return Window(s, 3); }

TEST(InvisibleHolderTest, CausesInOrder) {
  Snapshot s = HealthyServer(2);
  GpuAt(s, 1)->memory.used_bytes = 23 * kGiB;
  DiagnoseOptions o;
  o.caller_is_root = true;
  o.proc_shows_every_process = true;
  auto findings = RunRules(Idle(s), o);
  ASSERT_EQ(Count(findings, "INVISIBLE_HOLDER"), 1u);
  const Finding& f = *Find(findings, "INVISIBLE_HOLDER");
  EXPECT_THAT(f.gpus, ElementsAre(1));
  EXPECT_THAT(f.message, HasSubstr("GPU 1 has 23 GiB in use but lists no process"));
  EXPECT_THAT(f.message, HasSubstr("memory leaked in the driver: nothing on this host holds"));
  EXPECT_EQ(*EvidenceNumber(f, kHeldEvidence), 23.0 * kGiB);
  // Root needs no sudo, and "run it as root" tells root nothing.
  for (const std::string& step : f.next_steps) {
    EXPECT_EQ(step.find("sudo"), std::string::npos) << step;
    EXPECT_EQ(step.find("In a container"), std::string::npos) << step;
  }
  EXPECT_TRUE(HasStep(f, "Who holds the device files: fuser -v /dev/nvidia*"));

  // "Nothing holds it" needs a view of everything: a /proc that does not
  // show every process, or PIDs the driver lists that it lacks, say so.
  DiagnoseOptions partial = o;
  partial.proc_shows_every_process = false;
  const auto partial_findings = RunRules(Idle(s), partial);
  const Finding& blind = *Find(partial_findings, "INVISIBLE_HOLDER");
  EXPECT_THAT(blind.message, HasSubstr("a holder this view cannot see (this /proc does not show "
                                       "every process of the host), or memory leaked"));
  EXPECT_THAT(blind.message, Not(HasSubstr("nothing on this host holds")));
  Snapshot foreign = s;
  AddProcess(foreign, {.pid = 31337, .gpu = 0, .in_proc = false});
  const auto foreign_findings = RunRules(Idle(foreign), o);
  const Finding& other_ns = *Find(foreign_findings, "INVISIBLE_HOLDER");
  EXPECT_THAT(other_ns.message,
              HasSubstr("PID 31337 listed by the driver is not in this /proc: processes of "
                        "another PID namespace are present"));

  o.caller_is_root = false;
  EXPECT_THAT(Find(RunRules(Idle(s), o), "INVISIBLE_HOLDER")->message,
              HasSubstr("processes of other users hidden from you"));
  EXPECT_TRUE(HasStep(*Find(RunRules(Idle(s), o), "INVISIBLE_HOLDER"), "sudo gpuwarden why"));

  // A process holds the device file without being listed.
  Snapshot held = s;
  AddProcess(held, {.pid = 9100, .gpu = 1, .listed = false});
  EXPECT_THAT(Find(RunRules(Idle(held), o), "INVISIBLE_HOLDER")->message,
              HasSubstr("PID 9100 holds /dev/nvidia* of this GPU without being listed"));
  EXPECT_THAT(Find(RunRules(Idle(held), o), "INVISIBLE_HOLDER")->pids, ElementsAre(9100));

  o.in_container = true;
  EXPECT_THAT(Find(RunRules(Idle(held), o), "INVISIBLE_HOLDER")->message,
              HasSubstr("gpuwarden runs in a container"));
}

// Issue class "reclaimable that is live work": memory with no process listed
// on a GPU that computes is work in another PID namespace.
TEST(InvisibleHolderTest, AComputingGpuIsLiveWorkNeverReclaimable) {
  Snapshot s = HealthyServer(4);
  for (unsigned i = 0; i < 4; ++i) {
    GpuAt(s, i)->memory.used_bytes = 70 * kGiB;
    GpuAt(s, i)->memory.free_bytes = 10 * kGiB;
    SetLoad(s, i, 97 + i);
  }
  DiagnoseOptions o;
  o.caller_is_root = true;
  const auto window = Window(s, 3);
  const auto findings = RunRules(window, o);
  EXPECT_EQ(Count(findings, "INVISIBLE_HOLDER"), 0u);
  ASSERT_EQ(Count(findings, "HIDDEN_USE"), 4u);
  const Finding& f = *Find(findings, "HIDDEN_USE");
  EXPECT_EQ(f.implies, Verdict::kOk);
  EXPECT_THAT(f.message, HasSubstr("the GPU computes"));
  EXPECT_THAT(f.message, HasSubstr("live work"));
  const Diagnosis d = Diagnose(window, o);
  for (const GpuVerdict& g : d.gpus) {
    EXPECT_EQ(g.reclaimable_bytes, 0u) << g.line;
    EXPECT_NE(g.verdict, Verdict::kReclaimable) << g.line;
    EXPECT_NE(g.state, GpuState::kReclaimable) << g.line;
  }
  EXPECT_NE(d.server, Verdict::kReclaimable) << d.summary;
  EXPECT_EQ(d.summary.find("could free"), std::string::npos) << d.summary;
}

TEST(InvisibleHolderTest, OneSampleOrUnknownUtilisationIsNotProofOfIdleness) {
  Snapshot s = HealthyServer(2);
  GpuAt(s, 0)->memory.used_bytes = 30 * kGiB;
  GpuAt(s, 1)->memory.used_bytes = 30 * kGiB;
  GpuAt(s, 1)->utilization_gpu_pct.reset();
  auto findings = RunOne(s);
  EXPECT_EQ(Count(findings, "INVISIBLE_HOLDER"), 0u);
  EXPECT_EQ(Count(findings, "HIDDEN_USE"), 2u);
  findings = RunRules(Window(s, 3), {});
  EXPECT_EQ(Count(findings, "INVISIBLE_HOLDER"), 1u);  // GPU 0, idle in every sample.
  EXPECT_EQ(Count(findings, "HIDDEN_USE"), 1u);        // GPU 1, utilisation unknown.
}

TEST(InvisibleHolderTest, NoDataOrTransientNoFinding) {
  Snapshot s = HealthyServer(5);
  for (Gpu& g : s.gpus) g.memory.used_bytes = 20 * kGiB;
  GpuAt(s, 0)->processes_known = false;
  GpuAt(s, 1)->mig_mode_current = true;
  GpuAt(s, 2)->unreachable = ProbeError{"nvml", "gpu_lost", "lost", 2u, 15};
  GpuAt(s, 3)->memory.used_bytes = kGiB / 2;
  auto window = Window(s, 3);
  // GPU 4 listed a process a moment ago: it is exiting, not invisible.
  GpuProcess exiting;
  exiting.pid = 1;
  exiting.used_memory_bytes = 20 * kGiB;
  window[0].gpus[4].processes.push_back(exiting);
  EXPECT_EQ(Count(RunRules(window, {}), "INVISIBLE_HOLDER"), 0u);
  EXPECT_EQ(Count(RunRules(Window(window.back(), 2), {}), "INVISIBLE_HOLDER"), 1u);
}

TEST(InvisibleHolderTest, OfflineDump) {
  Snapshot s = HealthyServer(1);
  s.source = SnapshotSource::kXmlDump;
  s.processes_scanned = false;
  GpuAt(s, 0)->memory.used_bytes = 30 * kGiB;
  DiagnoseOptions o;
  o.in_container = true;  // Where gpuwarden runs says nothing about the dump.
  const auto findings = RunOne(s, o);
  EXPECT_EQ(Count(findings, "INVISIBLE_HOLDER"), 0u);  // One sample: not provably idle.
  EXPECT_THAT(Find(findings, "HIDDEN_USE")->message,
              HasSubstr("the nvidia-smi that made this dump ran in a container"));
}

TEST(UnlistedDeviceHolderTest, Reported) {
  Snapshot s = HealthyServer(3);
  AddProcess(s, {.pid = 9100, .gpu = 2, .user = "carol", .listed = false});
  auto findings = RunOne(s);
  ASSERT_EQ(Count(findings, "UNLISTED_DEVICE_HOLDER"), 1u);
  const Finding& f = *Find(findings, "UNLISTED_DEVICE_HOLDER");
  EXPECT_THAT(f.gpus, ElementsAre(2));
  EXPECT_THAT(f.pids, ElementsAre(9100));
  EXPECT_EQ(f.severity, Severity::kInfo);
  EXPECT_THAT(f.message, HasSubstr("PID 9100 python (carol) holds the device file of GPU 2"));
}

TEST(UnlistedDeviceHolderTest, ToolsControlFilesAndOfflineAreNot) {
  Snapshot s = HealthyServer(2);
  AddProcess(
      s,
      {.pid = 900, .gpu = 0, .user = "root", .uid = 0, .comm = "nvidia-persiste", .listed = false});
  AddProcess(s, {.pid = 901, .gpu = 1, .comm = "nvtop", .listed = false});
  HostProcess ctl;
  ctl.pid = 902;
  ctl.comm = "python";
  ctl.device_files = {"/dev/nvidiactl", "/dev/nvidia-uvm"};
  s.processes[902] = ctl;
  EXPECT_EQ(Count(RunOne(s), "UNLISTED_DEVICE_HOLDER"), 0u);
  Snapshot offline = HealthyServer(1);
  AddProcess(offline, {.pid = 9100, .gpu = 0, .listed = false});
  offline.processes_scanned = false;
  EXPECT_EQ(Count(RunOne(offline), "UNLISTED_DEVICE_HOLDER"), 0u);
}

TEST(ForeignPidTest, ListedButNotInProc) {
  Snapshot s = HealthyServer(2);
  AddProcess(s, {.pid = 31337, .gpu = 1, .in_proc = false});
  auto findings = RunOne(s);
  ASSERT_EQ(Count(findings, "FOREIGN_PID"), 1u);
  EXPECT_THAT(Find(findings, "FOREIGN_PID")->pids, ElementsAre(31337));
  EXPECT_THAT(Find(findings, "FOREIGN_PID")->message,
              HasSubstr("1 process listed on GPU 1 (PID 31337) is not in this /proc"));
  // Present a moment ago: it just exited.
  auto window = Window(s, 2);
  AddProcess(window[0], {.pid = 31337, .gpu = 0, .add_memory = false});
  EXPECT_EQ(Count(RunRules(window, {}), "FOREIGN_PID"), 0u);
  // No /proc at all: nothing to compare.
  s.processes_scanned = false;
  EXPECT_EQ(Count(RunOne(s), "FOREIGN_PID"), 0u);
}

// Class 7: a PID the driver charges memory to and a /proc that shows every
// process of the host lacks has ended: its context was not freed.
TEST(GoneProcessHolderTest, AbsentIdleAndWatchedWhereProcShowsEveryProcess) {
  Snapshot s = HealthyServer(2);
  AddProcess(s, {.pid = 31337, .gpu = 1, .bytes = 24 * kGiB, .sm = 0, .in_proc = false});
  const auto window = Window(s, 3);  // 2 s.
  DiagnoseOptions host;
  host.proc_shows_every_process = true;
  auto findings = RunRules(window, host);
  ASSERT_EQ(Count(findings, "GONE_PROCESS_HOLDER"), 1u);
  const Finding& f = *Find(findings, "GONE_PROCESS_HOLDER");
  EXPECT_THAT(f.gpus, ElementsAre(1));
  EXPECT_THAT(f.pids, ElementsAre(31337));
  EXPECT_EQ(f.implies, Verdict::kDegraded);
  EXPECT_THAT(f.message, HasSubstr("GPU 1: 24 GiB charged to PID 31337, which has ended: no "
                                   "/proc entry in 3 samples over 2.0 s"));
  EXPECT_EQ(Count(findings, "FOREIGN_PID"), 0u);
  EXPECT_EQ(Count(findings, "IDLE_HOLDER"), 0u);
}

TEST(GoneProcessHolderTest, NotFromOneSampleAContainerWorkOrAHiddenProc) {
  Snapshot s = HealthyServer(2);
  AddProcess(s, {.pid = 31337, .gpu = 1, .bytes = 24 * kGiB, .sm = 0, .in_proc = false});
  DiagnoseOptions host;
  host.proc_shows_every_process = true;
  // One sample: it may be ending; said as such.
  auto one = RunOne(s, host);
  EXPECT_EQ(Count(one, "GONE_PROCESS_HOLDER"), 0u);
  ASSERT_EQ(Count(one, "FOREIGN_PID"), 1u);
  EXPECT_THAT(Find(one, "FOREIGN_PID")->message,
              HasSubstr("which shows every process of the host"));
  // A /proc that cannot see every process (hidepid, another namespace).
  EXPECT_EQ(Count(RunRules(Window(s, 3), {}), "GONE_PROCESS_HOLDER"), 0u);
  // In a container, whatever /proc says.
  DiagnoseOptions container = host;
  container.in_container = true;
  EXPECT_EQ(Count(RunRules(Window(s, 3), container), "GONE_PROCESS_HOLDER"), 0u);
  // GPU work attributed to it: it runs somewhere.
  Snapshot busy = HealthyServer(2);
  AddProcess(busy, {.pid = 31337, .gpu = 1, .sm = 40, .in_proc = false});
  SetLoad(busy, 1, 40);
  EXPECT_EQ(Count(RunRules(Window(busy, 3), host), "GONE_PROCESS_HOLDER"), 0u);
  // Too short a window (under stuck_min_s).
  EXPECT_EQ(Count(RunRules(Window(s, 3, 500), host), "GONE_PROCESS_HOLDER"), 0u);
}

TEST(ServiceHolderTest, TheMpsServerIsNamedAndNeverAnIdleHolder) {
  Snapshot s = HealthyServer(2);
  AddProcess(s, {.pid = 3301,
                 .gpu = 0,
                 .bytes = 3 * kGiB,
                 .sm = 0,
                 .user = "root",
                 .uid = 0,
                 .comm = "nvidia-cuda-mp",
                 .age_s = 86400});
  s.processes[3301].cmdline = {"nvidia-cuda-mps-server"};
  s.processes[3301].comm = "nvidia-cuda-mps";  // The kernel's 15 bytes.
  AddProcess(s, {.pid = 7201, .gpu = 0, .bytes = 10 * kGiB, .sm = 0, .age_s = 7200});
  const auto window = Window(s, 3);
  auto findings = RunRules(window, IdleAtOnce());
  ASSERT_EQ(Count(findings, "MPS_SERVER_HOLDER"), 1u);
  const Finding& f = *Find(findings, "MPS_SERVER_HOLDER");
  EXPECT_THAT(f.pids, ElementsAre(3301));
  EXPECT_THAT(f.message, HasSubstr("PID 3301 nvidia-cuda-mps (root, MPS server) is the CUDA MPS "
                                   "server on GPU 0: it holds 3 GiB"));
  EXPECT_THAT(f.message, HasSubstr("(1 other compute process listed there)"));
  // The idle client is an idle holder; the server never is.
  for (const Finding& idle : findings) {
    if (idle.code == "IDLE_HOLDER") {
      EXPECT_THAT(idle.pids, ElementsAre(7201));
    }
  }
  EXPECT_EQ(Count(findings, "IDLE_HOLDER"), 1u);
}

TEST(ServiceHolderTest, GraphicsContextsAreOneFindingPerGpuAndNeverReclaimable) {
  Snapshot s = HealthyServer(2);
  AddProcess(s, {.pid = 2150,
                 .gpu = 0,
                 .bytes = 2 * kGiB,
                 .sm = 0,
                 .user = "root",
                 .uid = 0,
                 .comm = "Xorg",
                 .age_s = 86400});
  AddProcess(s, {.pid = 2398, .gpu = 0, .bytes = kGiB, .sm = 0, .comm = "blender", .age_s = 86400});
  for (GpuProcess& p : GpuAt(s, 0)->processes) p.type = GpuProcessType::kGraphics;
  const auto window = Window(s, 3);
  auto findings = RunRules(window, {});
  ASSERT_EQ(Count(findings, "GRAPHICS_HOLDER"), 1u);
  const Finding& f = *Find(findings, "GRAPHICS_HOLDER");
  EXPECT_THAT(f.pids, ElementsAre(2150, 2398));
  EXPECT_THAT(f.message, HasSubstr("GPU 0: 2 graphics contexts (PID 2150 Xorg (root, display "
                                   "server) 2 GiB; PID 2398 blender (alice) 1 GiB) hold 3 GiB"));
  EXPECT_EQ(Count(findings, "IDLE_HOLDER"), 0u);
  const Diagnosis d = Diagnose(window, {});
  EXPECT_NE(d.server, Verdict::kReclaimable);
}

// One live look: NVML's per-process samples say 0 %, but a process not
// known to have lived idle_holder_min_age_s may be a job between two steps.
TEST(IdleHolderTest, OneLookAtAYoungOrUnknownHolderMayBeIdleNeverReclaimable) {
  Snapshot s = HealthyServer(2);
  AddProcess(s, {.pid = 4242, .gpu = 1, .bytes = 20 * kGiB, .sm = 0, .age_s = 60});
  SetLoad(s, 1, 0);
  auto young = RunOne(s);
  EXPECT_EQ(Count(young, "IDLE_HOLDER"), 0u);
  ASSERT_EQ(Count(young, "HOLDER_IDLE_ONE_SAMPLE"), 1u);
  EXPECT_THAT(Find(young, "HOLDER_IDLE_ONE_SAMPLE")->message, HasSubstr("it may be idle"));
  // Known to have lived an hour at 0 %: one look still cannot show it idle.
  Snapshot old = HealthyServer(2);
  AddProcess(old, {.pid = 4242, .gpu = 1, .bytes = 20 * kGiB, .sm = 0, .age_s = 3600});
  SetLoad(old, 1, 0);
  EXPECT_EQ(Count(RunOne(old), "IDLE_HOLDER"), 0u);
  EXPECT_EQ(Count(RunOne(old), "HOLDER_IDLE_ONE_SAMPLE"), 1u);
}

}  // namespace
}  // namespace gw::diagnose
