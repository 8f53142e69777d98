#include "act/plan.h"
#include "core/units.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace gw::act {
namespace {
constexpr uid_t kAlice = 1001;
constexpr uid_t kBob = 1002;

HostProcess Proc(pid_t pid, uid_t uid, pid_t ppid, pid_t pgid, pid_t sid, std::string comm) {
  HostProcess p;
  p.pid = pid;
  p.uid = uid;
  p.user = uid == 0 ? "root" : uid == kAlice ? "alice" : uid == kBob ? "bob" : "";
  p.ppid = ppid;
  p.pgid = pgid;
  p.sid = sid;
  p.comm = comm;
  p.cmdline = {"/usr/bin/" + comm, "--flag"};
  p.state = ProcessState::kSleeping;
  p.start_ticks = 1000 + static_cast<uint64_t>(pid);
  p.age_s = 3600;
  return p;
}

diagnose::Finding Found(std::string code, std::vector<pid_t> pids) {
  diagnose::Finding f;
  f.code = std::move(code);
  f.pids = std::move(pids);
  return f;
}

// Two GPUs. Alice's run: sshd(100, root) -> bash(200, session leader) ->
// python(300, group 300) -> workers 301, 302 (group 300); 300 holds 20 GiB on
// GPU 0. Bob's python 400 holds 30 GiB on GPU 1. gpuwarden runs as 900 under
// alice's bash 200.
struct World {
  Snapshot snap;
  std::map<pid_t, HostProcess> table;
  std::vector<diagnose::Finding> findings;
  ProtectedList protect;
  Caller caller{kAlice, "alice", 900};

  World() {
    for (unsigned i = 0; i < 2; ++i) {
      Gpu g;
      g.index = i;
      g.minor_number = i;
      g.memory.total_bytes = 80 * kGiB;
      snap.gpus.push_back(g);
    }
    AddGpuProcess(0, 300, 20 * kGiB, 0);
    AddGpuProcess(1, 400, 30 * kGiB, 0);
    Put(Proc(1, 0, 0, 1, 1, "systemd"));
    Put(Proc(100, 0, 1, 100, 100, "sshd"));
    Put(Proc(200, kAlice, 100, 200, 200, "bash"));
    Put(Proc(300, kAlice, 200, 300, 200, "python"));
    Put(Proc(301, kAlice, 300, 300, 200, "python"));
    Put(Proc(302, kAlice, 300, 300, 200, "python"));
    Put(Proc(400, kBob, 1, 400, 400, "python"));
    Put(Proc(900, kAlice, 200, 900, 200, "gpuwarden"));
  }
  void AddGpuProcess(unsigned gpu, pid_t pid, uint64_t bytes, unsigned sm) {
    GpuProcess p;
    p.pid = pid;
    p.used_memory_bytes = bytes;
    p.sm_util_pct = sm;
    snap.gpus[gpu].processes.push_back(p);
  }
  void Put(HostProcess p) {
    snap.processes[p.pid] = p;
    table[p.pid] = p;
  }
  Plan Make(const PlanRequest& r) const {
    return MakePlan(PlanInput{snap, table, findings, protect, caller}, r);
  }
};

std::vector<pid_t> Pids(const std::vector<PlanItem>& items) {
  std::vector<pid_t> out;
  for (const auto& i : items) out.push_back(i.pid);
  return out;
}

const PlanItem* Item(const std::vector<PlanItem>& items, pid_t pid) {
  auto it =
      std::find_if(items.begin(), items.end(), [pid](const PlanItem& i) { return i.pid == pid; });
  return it == items.end() ? nullptr : &*it;
}

TEST(Plan, CleanTakesOwnIdleHolderWithItsMemoryAndIdentity) {
  World w;
  w.findings = {Found("IDLE_HOLDER", {300})};
  Plan p = w.Make({.mode = PlanMode::kClean});
  ASSERT_EQ(Pids(p.act), (std::vector<pid_t>{300}));
  const PlanItem& item = p.act[0];
  EXPECT_EQ(item.reason, Reason::kIdleHolder);
  EXPECT_EQ(item.role, Role::kHolder);
  EXPECT_EQ(item.gpus, (std::vector<unsigned>{0}));
  EXPECT_EQ(item.vram_bytes, 20 * kGiB);
  EXPECT_EQ(item.start_ticks, 1300u);
  EXPECT_EQ(item.user, "alice");
  EXPECT_TRUE(p.skip.empty());
  // Without --tree the run is only offered.
  ASSERT_EQ(p.notes.size(), 1u);
  EXPECT_NE(p.notes[0].find("--tree"), std::string::npos);
  EXPECT_NE(p.notes[0].find("301, 302"), std::string::npos);
}

TEST(Plan, TreeTakesTheWholeRunButNotTheSessionShell) {
  World w;
  w.findings = {Found("IDLE_HOLDER", {301})};
  Plan p = w.Make({.mode = PlanMode::kClean, .tree = true});
  EXPECT_EQ(Pids(p.act), (std::vector<pid_t>{300, 301, 302}));
  EXPECT_EQ(Item(p.act, 301)->role, Role::kHolder);
  EXPECT_EQ(Item(p.act, 300)->role, Role::kRunMember);
  EXPECT_EQ(Item(p.act, 300)->because_of, 301);
  EXPECT_EQ(Item(p.act, 302)->reason, Reason::kRunMember);
  EXPECT_EQ(Item(p.act, 200), nullptr);  // bash leads the session.
  EXPECT_EQ(Item(p.skip, 200), nullptr);
  EXPECT_TRUE(p.notes.empty());
}

TEST(Plan, TreeTakesOrphanedWorkersOfTheSameGroup) {
  World w;
  // The launcher 300 died: its workers were re-parented to init.
  w.table.erase(300);
  w.snap.processes.erase(300);
  w.table[301].ppid = 1;
  w.table[302].ppid = 1;
  w.findings = {Found("ORPHAN_HOLDER", {301})};
  Plan p = w.Make({.mode = PlanMode::kClean, .tree = true});
  EXPECT_EQ(Pids(p.act), (std::vector<pid_t>{301, 302}));
  EXPECT_EQ(Item(p.act, 301)->reason, Reason::kOrphanHolder);
}

TEST(Plan, AScriptsOtherJobsAreNotPartOfTheRun) {
  World w;
  // A script (not a session leader) started two independent jobs in its
  // group; one of them has a dataloader worker.
  w.Put(Proc(250, kAlice, 200, 250, 200, "bash"));
  w.Put(Proc(260, kAlice, 250, 250, 200, "python"));
  w.Put(Proc(261, kAlice, 260, 250, 200, "python"));
  w.Put(Proc(270, kAlice, 250, 250, 200, "python"));
  w.findings = {Found("IDLE_HOLDER", {260})};
  Plan p = w.Make({.mode = PlanMode::kClean, .tree = true});
  EXPECT_EQ(Pids(p.act), (std::vector<pid_t>{260, 261}));
}

TEST(Plan, NonRootNeverActsOnOthers) {
  World w;
  w.findings = {Found("IDLE_HOLDER", {300}), Found("IDLE_HOLDER", {400})};
  Plan p = w.Make({.mode = PlanMode::kClean});
  EXPECT_EQ(Pids(p.act), (std::vector<pid_t>{300}));
  ASSERT_NE(Item(p.skip, 400), nullptr);
  EXPECT_EQ(Item(p.skip, 400)->reason, Reason::kNotYours);
  EXPECT_NE(Item(p.skip, 400)->detail.find("bob"), std::string::npos);
  // Even naming bob changes nothing for a non-root caller (the CLI refuses
  // the flag; the plan does not trust it either).
  Plan q = w.Make({.mode = PlanMode::kClean, .users = {kBob}, .all_users = true});
  EXPECT_EQ(Item(q.skip, 400)->reason, Reason::kNotYours);
}

TEST(Plan, RootNeedsAnExplicitUser) {
  World w;
  w.caller = {0, "root", 900};
  w.table[900].uid = 0;
  w.findings = {Found("IDLE_HOLDER", {300}), Found("IDLE_HOLDER", {400})};
  Plan p = w.Make({.mode = PlanMode::kClean});
  EXPECT_TRUE(p.act.empty());
  EXPECT_EQ(Item(p.skip, 300)->reason, Reason::kNeedsUserFlag);
  EXPECT_NE(Item(p.skip, 300)->detail.find("--user alice"), std::string::npos);
  Plan q = w.Make({.mode = PlanMode::kClean, .users = {kBob}});
  EXPECT_EQ(Pids(q.act), (std::vector<pid_t>{400}));
  EXPECT_EQ(Item(q.skip, 300)->reason, Reason::kNeedsUserFlag);
  Plan r = w.Make({.mode = PlanMode::kClean, .all_users = true});
  EXPECT_EQ(Pids(r.act), (std::vector<pid_t>{300, 400}));
}

TEST(Plan, ProtectedNamesAreNeverSignalledEvenByRoot) {
  World w;
  w.caller = {0, "root", 900};
  HostProcess persisted = Proc(500, 0, 1, 500, 500, "nvidia-persiste");  // comm is cut at 15.
  persisted.cmdline = {"/usr/bin/nvidia-persistenced", "--user", "nvidia-persistenced"};
  w.Put(persisted);
  HostProcess renamed = Proc(501, kAlice, 1, 501, 501, "worker");  // argv[0] says Xorg.
  renamed.cmdline = {"/usr/lib/xorg/Xorg", ":0"};
  w.Put(renamed);
  HostProcess by_exe = Proc(502, kAlice, 1, 502, 502, "python");
  by_exe.exe = "/usr/bin/nv-hostengine";
  w.Put(by_exe);
  HostProcess configured = Proc(503, kAlice, 1, 503, 503, "jupyterhub");
  w.Put(configured);
  w.protect = ProtectedList({"jupyterhub"});
  w.findings = {Found("UNLISTED_DEVICE_HOLDER", {500, 501, 502, 503})};
  Plan p = w.Make({.mode = PlanMode::kClean, .all_users = true});
  EXPECT_TRUE(p.act.empty());
  for (pid_t pid : {500, 501, 502, 503}) {
    ASSERT_NE(Item(p.skip, pid), nullptr) << pid;
    EXPECT_EQ(Item(p.skip, pid)->reason, Reason::kProtected) << pid;
  }
  EXPECT_EQ(Item(p.skip, 500)->detail, "nvidia-persistenced");
  EXPECT_EQ(Item(p.skip, 503)->detail, "jupyterhub");
}

TEST(Plan, KillRefusesSelfAncestorsInitAndKernelThreads) {
  World w;
  w.caller = {0, "root", 900};
  w.Put(Proc(2, 0, 0, 0, 0, "kthreadd"));
  w.Put(Proc(77, 0, 2, 0, 0, "kworker/0:1"));
  Plan p = w.Make({.mode = PlanMode::kKill, .pids = {1, 77, 200, 900}, .all_users = true});
  EXPECT_TRUE(p.act.empty());
  EXPECT_EQ(Item(p.skip, 1)->reason, Reason::kInit);
  EXPECT_EQ(Item(p.skip, 77)->reason, Reason::kKernelThread);
  EXPECT_EQ(Item(p.skip, 200)->reason, Reason::kSelf);  // The caller's shell.
  EXPECT_EQ(Item(p.skip, 900)->reason, Reason::kSelf);
  EXPECT_EQ(p.refused_named, (std::vector<pid_t>{1, 77, 200, 900}));
}

// A process named that does not exist is an error of the command
// (docs/cli.md): skipped as gone and counted as refused for the exit code.
TEST(Plan, KillOfAGoneProcessIsAnError) {
  World w;
  Plan p = w.Make({.mode = PlanMode::kKill, .pids = {4242, 300}});
  EXPECT_EQ(Pids(p.act), (std::vector<pid_t>{300}));
  EXPECT_EQ(Item(p.skip, 4242)->reason, Reason::kGone);
  EXPECT_EQ(p.refused_named, (std::vector<pid_t>{4242}));
  EXPECT_EQ(Item(p.act, 300)->reason, Reason::kNamed);
}

TEST(Plan, ZombieHolderMeansItsParent) {
  World w;
  HostProcess zombie = Proc(310, kAlice, 300, 300, 200, "python");
  zombie.state = ProcessState::kZombie;
  zombie.cmdline.clear();
  w.Put(zombie);
  w.AddGpuProcess(0, 310, 4 * kGiB, 0);
  w.findings = {Found("ZOMBIE_HOLDER", {310})};
  Plan p = w.Make({.mode = PlanMode::kClean});
  EXPECT_EQ(Pids(p.act), (std::vector<pid_t>{300}));
  EXPECT_EQ(p.act[0].role, Role::kZombieParent);
  EXPECT_EQ(p.act[0].because_of, 310);
  ASSERT_NE(Item(p.skip, 310), nullptr);
  EXPECT_EQ(Item(p.skip, 310)->reason, Reason::kZombie);
  EXPECT_NE(Item(p.skip, 310)->detail.find("parent 300"), std::string::npos);
  // Named to kill: the same; not refused, since the parent is acted on.
  Plan k = w.Make({.mode = PlanMode::kKill, .pids = {310}});
  EXPECT_EQ(Pids(k.act), (std::vector<pid_t>{300}));
  EXPECT_TRUE(k.refused_named.empty());
}

TEST(Plan, ZombieOfSomeoneElsesParentIsRefused) {
  World w;
  HostProcess zombie = Proc(410, kBob, 400, 400, 400, "python");
  zombie.state = ProcessState::kZombie;
  w.Put(zombie);
  Plan k = w.Make({.mode = PlanMode::kKill, .pids = {410}});
  EXPECT_TRUE(k.act.empty());
  EXPECT_EQ(Item(k.skip, 400)->reason, Reason::kNotYours);
  EXPECT_EQ(Item(k.skip, 410)->reason, Reason::kZombie);
  EXPECT_EQ(k.refused_named, (std::vector<pid_t>{410}));
}

TEST(Plan, CleanFilters) {
  World w;
  w.caller = {0, "root", 900};
  w.findings = {Found("IDLE_HOLDER", {300}), Found("IDLE_HOLDER", {400})};
  auto acts = [&](PlanRequest r) {
    r.mode = PlanMode::kClean;
    r.all_users = true;
    return Pids(w.Make(r).act);
  };
  EXPECT_EQ(acts({.gpus = {1}}), (std::vector<pid_t>{400}));
  EXPECT_EQ(acts({.min_vram_bytes = 25 * kGiB}), (std::vector<pid_t>{400}));
  EXPECT_EQ(acts({.min_vram_bytes = 31 * kGiB}), (std::vector<pid_t>{}));
  EXPECT_EQ(acts({.pids = {300}}), (std::vector<pid_t>{300}));
  EXPECT_EQ(acts({}), (std::vector<pid_t>{300, 400}));
}

TEST(Plan, DeviceFileHoldersMapToTheirGpu) {
  World w;
  HostProcess stale = Proc(600, kAlice, 1, 600, 600, "python");
  stale.device_files = {"/dev/nvidia1", "/dev/nvidiactl", "/dev/nvidia-uvm"};
  w.Put(stale);
  w.findings = {Found("UNLISTED_DEVICE_HOLDER", {600})};
  Plan p = w.Make({.mode = PlanMode::kClean});
  ASSERT_EQ(Pids(p.act), (std::vector<pid_t>{600}));
  EXPECT_EQ(p.act[0].gpus, (std::vector<unsigned>{1}));
  EXPECT_FALSE(p.act[0].vram_bytes);  // Unknown, not zero.
  EXPECT_EQ(p.act[0].reason, Reason::kStaleDeviceHolder);
}

TEST(Plan, DeviceFilesAreReadUnderTheSnapshotsDeviceDirectory) {
  // Scanned with --dev-dir /tmp/gw-dev: GPU 1's file is /tmp/gw-dev/nvidia1,
  // and a /dev/nvidia0 path (not in that directory) is no GPU of this server.
  World w;
  w.snap.device_dir = "/tmp/gw-dev/";
  HostProcess stale = Proc(600, kAlice, 1, 600, 600, "python");
  stale.device_files = {"/dev/nvidia0", "/tmp/gw-dev/nvidia1", "/tmp/gw-dev/nvidiactl"};
  w.Put(stale);
  w.findings = {Found("UNLISTED_DEVICE_HOLDER", {600})};
  Plan p = w.Make({.mode = PlanMode::kClean});
  ASSERT_EQ(Pids(p.act), (std::vector<pid_t>{600}));
  EXPECT_EQ(p.act[0].gpus, (std::vector<unsigned>{1}));
  Plan on_gpu0 = w.Make({.mode = PlanMode::kClean, .gpus = {0}});
  EXPECT_TRUE(on_gpu0.act.empty());
}

TEST(Plan, OtherFindingsAreNotCandidates) {
  World w;
  w.findings = {Found("UNINTERRUPTIBLE_HOLDER", {300}), Found("VRAM_EXHAUSTED", {}),
                Found("FOREIGN_PID", {300})};
  Plan p = w.Make({.mode = PlanMode::kClean});
  EXPECT_TRUE(p.act.empty());
  EXPECT_TRUE(p.skip.empty());
}

TEST(Plan, WordsAreStable) {
  EXPECT_EQ(ReasonCode(Reason::kNeedsUserFlag), "needs_user_flag");
  EXPECT_EQ(ReasonCode(Reason::kStaleDeviceHolder), "stale_device_holder");
  EXPECT_EQ(RoleName(Role::kZombieParent), "zombie_parent");
  EXPECT_TRUE(IsActReason(Reason::kRunMember));
  EXPECT_FALSE(IsActReason(Reason::kProtected));
}

}  // namespace
}  // namespace gw::act
