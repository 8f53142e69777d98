// ProcReader against fake proc trees built in a temporary directory.
#include "proc/proc_reader.h"

#include <grp.h>
#include <gtest/gtest.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <string>

#include "proc/proc_test_util.h"

namespace gw::proc {
namespace {

using namespace std::string_literals;
using testing::PasswdName;
using testing::TempTree;

constexpr uint64_t kBootS = 1'700'000'000;

struct FakeProcess {
  pid_t pid = 4242;
  std::string comm = "python3";
  char state = 'S';
  pid_t ppid = 1;
  pid_t pgrp = 4200;
  pid_t session = 4100;
  uint64_t utime_ticks = 0;
  uint64_t stime_ticks = 0;
  uint64_t start_ticks = 0;
  int64_t rss_pages = 0;
  uid_t uid = 0;
  std::string cmdline = "python3\0train.py\0"s;
  std::string cgroup = "0::/user.slice/user-1000.slice/session-4.scope\n";

  void WriteTo(const TempTree& t) const {
    const std::string dir = std::to_string(pid) + "/";
    t.Write(dir + "stat",
            std::to_string(pid) + " (" + comm + ") " + state + " " + std::to_string(ppid) + " " +
                std::to_string(pgrp) + " " + std::to_string(session) + " 0 -1 4194304 10 0 0 0 " +
                std::to_string(utime_ticks) + " " + std::to_string(stime_ticks) + " 0 0 20 0 1 0 " +
                std::to_string(start_ticks) + " 1000000 " + std::to_string(rss_pages) +
                " 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 0 0 0 0 0 0 0 "
                "0 0 0 0 0 0 0\n");
    t.Write(dir + "status", "Name:\t" + comm + "\nState:\t" + state + "\nUid:\t" +
                                std::to_string(uid) + "\t" + std::to_string(uid) + "\t" +
                                std::to_string(uid) + "\t" + std::to_string(uid) + "\n");
    t.Write(dir + "cmdline", cmdline);
    t.Write(dir + "cgroup", cgroup);
  }
};

void WriteProcStat(const TempTree& t) {
  t.Write("stat", "cpu  1 2 3 4\ncpu0 1 2 3 4\ncpu1 1 2 3 4\nbtime " + std::to_string(kBootS) +
                      "\nprocesses 9\n");
}

uint64_t Ticks() { return static_cast<uint64_t>(sysconf(_SC_CLK_TCK)); }
uint64_t PageSize() { return static_cast<uint64_t>(sysconf(_SC_PAGESIZE)); }

// The GPUs the driver probed, as /proc/driver/nvidia/gpus names them.
TEST(ProcReaderFake, ListsTheDriversGpus) {
  TempTree t;
  ProcReader none(t.root());
  EXPECT_FALSE(none.ListDriverGpus().ok());  // No driver loaded.
  t.Write("driver/nvidia/gpus/0000:3b:00.0/information", "Model: NVIDIA H100\n");
  t.Write("driver/nvidia/gpus/0000:18:00.0/information", "Model: NVIDIA H100\n");
  t.Write("driver/nvidia/gpus/README", "not a GPU\n");
  ProcReader reader(t.root());
  auto gpus = reader.ListDriverGpus();
  ASSERT_TRUE(gpus.ok());
  EXPECT_EQ(*gpus, (std::vector<std::string>{"0000:18:00.0", "0000:3b:00.0"}));
}

// Whether a PID missing from the root has ended: only where the root is the
// host's PID namespace and does not hide other users' processes.
TEST(ProcReaderFake, ShowsEveryHostProcessOnlyInTheHostNamespaceWithoutHidepid) {
  TempTree t;
  ProcReader reader(t.root());
  EXPECT_FALSE(reader.ShowsEveryHostProcess(true));  // Nothing to read: not claimed.
  std::filesystem::create_directories(t.root() + "/self/ns");
  std::filesystem::create_symlink("pid:[4026532481]", t.root() + "/self/ns/pid");
  EXPECT_FALSE(reader.ShowsEveryHostProcess(true));  // A container's namespace.
  std::filesystem::remove(t.root() + "/self/ns/pid");
  std::filesystem::create_symlink("pid:[4026531836]", t.root() + "/self/ns/pid");
  EXPECT_TRUE(reader.ShowsEveryHostProcess(true));    // Root sees through hidepid.
  EXPECT_FALSE(reader.ShowsEveryHostProcess(false));  // No mount table read.
  const std::string line = "21 26 0:20 / " + t.root() + " rw,relatime - proc proc rw";
  t.Write("self/mountinfo", line + "\n");
  EXPECT_TRUE(reader.ShowsEveryHostProcess(false));
  t.Write("self/mountinfo", line + ",hidepid=invisible\n");
  EXPECT_FALSE(reader.ShowsEveryHostProcess(false));
}

TEST(ProcReaderLive, ShowsEveryHostProcessAgreesWithThisMachinesNamespace) {
  char link[64] = {};
  ASSERT_GT(readlink("/proc/self/ns/pid", link, sizeof link - 1), 0);
  const bool host = std::string(link) == "pid:[4026531836]";
  EXPECT_EQ(ProcReader().ShowsEveryHostProcess(true), host);
}

TEST(ProcReaderFake, ReadsEveryField) {
  TempTree t;
  WriteProcStat(t);
  FakeProcess f;
  f.start_ticks = 100 * Ticks();  // 100 s after boot.
  f.utime_ticks = 20 * Ticks();
  f.stime_ticks = 5 * Ticks();
  f.rss_pages = 1000;
  f.cgroup = "0::/system.slice/docker-" + std::string(64, 'a') + ".scope\n";
  f.WriteTo(t);
  FakeProcess init;
  init.pid = 1;
  init.comm = "systemd";
  init.ppid = 0;
  init.WriteTo(t);
  ProcReader reader(t.root());
  const int64_t start_ms = static_cast<int64_t>(kBootS + 100) * 1000;
  Result<HostProcess> p = reader.ReadProcess(4242, start_ms + 50'000);
  ASSERT_TRUE(p.ok()) << p.error().message;
  EXPECT_EQ(p->pid, 4242);
  EXPECT_TRUE(p->readable);
  EXPECT_EQ(p->comm, "python3");
  EXPECT_EQ(p->cmdline, (std::vector<std::string>{"python3", "train.py"}));
  EXPECT_EQ(p->state, ProcessState::kSleeping);
  EXPECT_EQ(p->ppid, 1);
  EXPECT_EQ(p->parent_comm, "systemd");
  EXPECT_EQ(p->pgid, 4200);
  EXPECT_EQ(p->sid, 4100);
  EXPECT_EQ(p->uid, 0u);
  EXPECT_EQ(p->user, PasswdName(0));
  EXPECT_EQ(p->start_time_unix_ms, start_ms);
  ASSERT_TRUE(p->age_s);
  EXPECT_DOUBLE_EQ(*p->age_s, 50.0);
  EXPECT_EQ(p->cpu_time_ms, 25'000u);
  ASSERT_TRUE(p->cpu_pct);
  EXPECT_DOUBLE_EQ(*p->cpu_pct, 50.0);
  EXPECT_EQ(p->rss_bytes, 1000 * PageSize());
  EXPECT_EQ(p->owner.container_runtime, "docker");
  EXPECT_EQ(p->owner.container_id, std::string(64, 'a'));
  EXPECT_TRUE(p->device_files.empty());
  EXPECT_FALSE(p->listed_by_driver);
}

TEST(ProcReaderFake, UserWithoutPasswdEntryKeepsTheUid) {
  uid_t uid = 3'987'654'321u;
  if (getpwuid(uid) != nullptr) GTEST_SKIP() << "uid " << uid << " has a passwd entry here";
  TempTree t;
  WriteProcStat(t);
  FakeProcess f;
  f.uid = uid;
  f.WriteTo(t);
  ProcReader reader(t.root());
  Result<HostProcess> p = reader.ReadProcess(4242, kBootS * 1000);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->uid, uid);
  EXPECT_FALSE(p->user);
  // The cached answer is the same.
  Result<HostProcess> again = reader.ReadProcess(4242, kBootS * 1000);
  ASSERT_TRUE(again.ok());
  EXPECT_FALSE(again->user);
}

TEST(ProcReaderFake, MissingProcessIsNotFound) {
  TempTree t;
  WriteProcStat(t);
  ProcReader reader(t.root());
  Result<HostProcess> p = reader.ReadProcess(777, 0);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.error().code, "not_found");
  EXPECT_NE(p.error().message.find("777"), std::string::npos);
}

TEST(ProcReaderFake, DirectoryWithoutStatIsAProcessThatExited) {
  TempTree t;
  WriteProcStat(t);
  t.Write("55/cmdline", "x");
  ProcReader reader(t.root());
  Result<HostProcess> p = reader.ReadProcess(55, 0);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.error().code, "not_found");
}

TEST(ProcReaderFake, InvalidPid) {
  ProcReader reader("/nonexistent");
  for (pid_t pid : {0, -1}) {
    Result<HostProcess> p = reader.ReadProcess(pid, 0);
    ASSERT_FALSE(p.ok());
    EXPECT_EQ(p.error().code, "invalid_argument");
  }
}

TEST(ProcReaderFake, MalformedStat) {
  TempTree t;
  WriteProcStat(t);
  FakeProcess f;
  f.WriteTo(t);
  t.Write("4242/stat", "4242 (python3 S 1\n");
  ProcReader reader(t.root());
  Result<HostProcess> p = reader.ReadProcess(4242, 0);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.error().code, "malformed");
}

TEST(ProcReaderFake, ReadStatGivesTheStatFields) {
  TempTree t;
  FakeProcess f;
  f.state = 'Z';
  f.ppid = 17;
  f.start_ticks = 123456;
  f.comm = "a) (b";
  f.WriteTo(t);
  const ProcReader reader(t.root());
  Result<StatFields> stat = reader.ReadStat(4242);
  ASSERT_TRUE(stat.ok()) << stat.error().message;
  EXPECT_EQ(stat->pid, 4242);
  EXPECT_EQ(stat->comm, "a) (b");
  EXPECT_EQ(stat->state, 'Z');
  EXPECT_EQ(stat->ppid, 17);
  EXPECT_EQ(stat->start_ticks, 123456u);
}

TEST(ProcReaderFake, ReadStatOfAMissingProcessIsGone) {
  TempTree t;
  t.Write("55/cmdline", "x");  // A directory left without its stat: it exited.
  t.Write("66", "");           // Not a directory at all.
  const ProcReader reader(t.root());
  for (pid_t pid : {777, 55, 66, 0, -3}) {
    Result<StatFields> stat = reader.ReadStat(pid);
    ASSERT_FALSE(stat.ok()) << pid;
    EXPECT_EQ(stat.error().code, "gone") << pid;
    EXPECT_NE(stat.error().message.find(std::to_string(pid)), std::string::npos);
  }
}

TEST(ProcReaderFake, ReadStatOfAMalformedFileIsAnIoErrorNamingIt) {
  TempTree t;
  t.Write("4242/stat", "4242 (python3 S 1\n");
  const ProcReader reader(t.root());
  Result<StatFields> stat = reader.ReadStat(4242);
  ASSERT_FALSE(stat.ok());
  EXPECT_EQ(stat.error().code, "io");
  EXPECT_NE(stat.error().message.find(t.Path("4242/stat")), std::string::npos)
      << stat.error().message;
}

TEST(ProcReaderFake, MissingCgroupFileLeavesOwnerEmpty) {
  TempTree t;
  WriteProcStat(t);
  FakeProcess f;
  f.WriteTo(t);
  std::remove(t.Path("4242/cgroup").c_str());
  ProcReader reader(t.root());
  Result<HostProcess> p = reader.ReadProcess(4242, 0);
  ASSERT_TRUE(p.ok());
  EXPECT_TRUE(p->readable);
  EXPECT_FALSE(p->owner.cgroup_path);
  EXPECT_EQ(p->comm, "python3");
  EXPECT_EQ(p->uid, 0u);
}

// Root's slurmstepd as PID 300, its title rewritten to `title` (NUL-padded,
// as slurmstepd leaves it).
FakeProcess Slurmstepd(std::string title) {
  FakeProcess f;
  f.pid = 300;
  f.comm = "slurmstepd";
  f.cmdline = std::move(title) + "\0\0\0"s;
  f.cgroup = "0::/\n";
  return f;
}

// A batch step as proctrack/linuxproc leaves it, without Slurm cgroups:
// python3 (4242) <- bash (301) <- root's slurmstepd: [77.batch] (300).
struct BatchStepTree {
  FakeProcess stepd = Slurmstepd("slurmstepd: [77.batch]");
  FakeProcess shell;
  FakeProcess job;
  explicit BatchStepTree(const TempTree& t) {
    WriteProcStat(t);
    stepd.WriteTo(t);
    shell.pid = 301;
    shell.ppid = 300;
    shell.comm = "bash";
    shell.uid = 1000;
    shell.cgroup = "0::/\n";
    shell.WriteTo(t);
    job.ppid = 301;
    job.uid = 1000;
    job.cgroup = "0::/\n";
    job.WriteTo(t);
  }
};

// proctrack/linuxproc: no Slurm cgroup, so the job comes from the root-owned
// slurmstepd above the process.
TEST(ProcReaderFake, SlurmJobFromTheRootOwnedSlurmstepdAncestor) {
  TempTree t;
  BatchStepTree tree(t);
  FakeProcess& stepd = tree.stepd;
  ProcReader reader(t.root());
  Result<HostProcess> p = reader.ReadProcess(4242, 0);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->owner.slurm_job_id, "77");
  EXPECT_EQ(p->owner.slurm_step, "batch");

  // A user's own process calling itself slurmstepd names no job.
  stepd.uid = 1000;
  stepd.WriteTo(t);
  p = reader.ReadProcess(4242, 0);
  ASSERT_TRUE(p.ok());
  EXPECT_FALSE(p->owner.slurm_job_id);
  EXPECT_FALSE(p->owner.slurm_step);
}

// One look's memo: siblings read their shared ancestors once (the second
// sibling sees what the first read, even after the files changed), and a
// read without the memo, or with a new one, reads them again.
TEST(ProcReaderFake, SiblingsShareTheirAncestorsReadsThroughOneMemo) {
  TempTree t;
  BatchStepTree tree(t);
  FakeProcess& stepd = tree.stepd;
  FakeProcess& shell = tree.shell;
  FakeProcess second = tree.job;
  second.pid = 4243;
  second.WriteTo(t);
  ProcReader reader(t.root());
  AncestorMemo memo;
  Result<HostProcess> a = reader.ReadProcess(4242, 0, &memo);
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->parent_comm, "bash");
  EXPECT_EQ(a->owner.slurm_job_id, "77");
  // The ancestors change under the look: the memo keeps what it read.
  shell.comm = "zsh";
  shell.WriteTo(t);
  stepd.cmdline = "slurmstepd: [78.0]\0"s;
  stepd.WriteTo(t);
  Result<HostProcess> b = reader.ReadProcess(4243, 0, &memo);
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->parent_comm, "bash");
  EXPECT_EQ(b->owner.slurm_job_id, "77");
  // The next look reads them anew.
  AncestorMemo next;
  b = reader.ReadProcess(4243, 0, &next);
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->parent_comm, "zsh");
  EXPECT_EQ(b->owner.slurm_job_id, "78");
  EXPECT_EQ(b->owner.slurm_step, "0");
  b = reader.ReadProcess(4243, 0);
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->owner.slurm_job_id, "78");
}

// The cgroup wins: the ancestors are not read for a job the cgroup names, and
// a process with no slurmstepd above it has no job.
TEST(ProcReaderFake, SlurmCgroupWinsAndNoAncestorMeansNoJob) {
  TempTree t;
  WriteProcStat(t);
  Slurmstepd("slurmstepd: [77.0]").WriteTo(t);
  FakeProcess job;
  job.ppid = 300;
  job.cgroup = "0::/system.slice/slurmstepd.scope/job_78/step_3/user/task_0\n";
  job.WriteTo(t);
  FakeProcess loose;
  loose.pid = 5000;
  loose.ppid = 1;
  loose.WriteTo(t);
  ProcReader reader(t.root());
  Result<HostProcess> p = reader.ReadProcess(4242, 0);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->owner.slurm_job_id, "78");
  EXPECT_EQ(p->owner.slurm_step, "3");
  p = reader.ReadProcess(5000, 0);
  ASSERT_TRUE(p.ok());
  EXPECT_FALSE(p->owner.slurm_job_id);
}

TEST(ProcReaderFake, ZombieShape) {
  TempTree t;
  WriteProcStat(t);
  FakeProcess f;
  f.comm = "pt_data_worker";
  f.state = 'Z';
  f.ppid = 4000;
  f.cmdline = "";
  f.utime_ticks = 3 * Ticks();
  f.WriteTo(t);
  ProcReader reader(t.root());
  Result<HostProcess> p = reader.ReadProcess(4242, kBootS * 1000 + 10'000);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->state, ProcessState::kZombie);
  EXPECT_TRUE(p->cmdline.empty());
  EXPECT_EQ(p->comm, "pt_data_worker");
  EXPECT_EQ(p->ppid, 4000);
  EXPECT_FALSE(p->parent_comm);  // No process 4000 in the tree.
  EXPECT_EQ(p->rss_bytes, 0u);
  EXPECT_EQ(p->cpu_time_ms, 3000u);
}

TEST(ProcReaderFake, HostileCommAndCmdlineSurviveRaw) {
  TempTree t;
  WriteProcStat(t);
  FakeProcess f;
  f.comm = "a) R 1 (\n\x1b[2J";
  f.ppid = 31337;
  f.cmdline = "\x1b]0;pwn\x07\0line1\nline2\0"s;
  f.WriteTo(t);
  ProcReader reader(t.root());
  Result<HostProcess> p = reader.ReadProcess(4242, 0);
  ASSERT_TRUE(p.ok()) << p.error().message;
  EXPECT_EQ(p->comm, "a) R 1 (\n\x1b[2J");
  EXPECT_EQ(p->ppid, 31337);
  EXPECT_EQ(p->state, ProcessState::kSleeping);
  EXPECT_EQ(p->cmdline, (std::vector<std::string>{"\x1b]0;pwn\x07", "line1\nline2"}));
}

TEST(ProcReaderFake, StartAfterNowGivesAgeZeroAndNoCpuPercent) {
  TempTree t;
  WriteProcStat(t);
  FakeProcess f;
  f.start_ticks = 10 * Ticks();
  f.utime_ticks = 1;
  f.WriteTo(t);
  ProcReader reader(t.root());
  Result<HostProcess> p = reader.ReadProcess(4242, kBootS * 1000);  // Before the start.
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->age_s, 0.0);
  EXPECT_FALSE(p->cpu_pct);
  EXPECT_TRUE(p->cpu_time_ms);
}

TEST(ProcReaderFake, NoBootTimeMeansNoStartAgeOrCpuPercent) {
  TempTree t;
  t.Write("stat", "cpu  1 2 3\ncpu0 1 2 3\n");
  FakeProcess f;
  f.utime_ticks = 2 * Ticks();
  f.WriteTo(t);
  ProcReader reader(t.root());
  Result<HostProcess> p = reader.ReadProcess(4242, kBootS * 1000);
  ASSERT_TRUE(p.ok());
  EXPECT_FALSE(p->start_time_unix_ms);
  EXPECT_FALSE(p->age_s);
  EXPECT_FALSE(p->cpu_pct);
  EXPECT_EQ(p->cpu_time_ms, 2000u);
}

// Runs body() as uid/gid 65534 when root (so that file modes apply), and
// exits with its result; for use inside EXPECT_EXIT.
template <typename Body>
[[noreturn]] void ExitWithBodyAsNobody(Body body) {
  if (geteuid() == 0) {
    if (setgroups(0, nullptr) != 0 || setresgid(65534, 65534, 65534) != 0 ||
        setresuid(65534, 65534, 65534) != 0) {
      std::fprintf(stderr, "cannot drop privileges\n");
      _exit(2);
    }
  }
  _exit(body());
}

TEST(ProcReaderFakeDeathTest, UnreadableFileGivesPartialProcess) {
  TempTree t;
  WriteProcStat(t);
  FakeProcess f;
  f.ppid = 99;
  f.WriteTo(t);
  ASSERT_EQ(chmod(t.Path("4242/status").c_str(), 0), 0);
  EXPECT_EXIT(ExitWithBodyAsNobody([&t]() {
                ProcReader reader(t.root());
                Result<HostProcess> p = reader.ReadProcess(4242, 0);
                if (!p.ok()) {
                  std::fprintf(stderr, "error %s\n", p.error().code.c_str());
                  return 1;
                }
                if (p->readable) return 3;             // Must say it could not read everything,
                if (p->uid) return 4;                  // status was unreadable,
                if (p->ppid != 99) return 5;           // but stat was read,
                if (p->cmdline.size() != 2) return 6;  // and so was cmdline.
                return 0;
              }),
              ::testing::ExitedWithCode(0), "");
}

TEST(ProcReaderFake, ReadHost) {
  TempTree t;
  WriteProcStat(t);
  t.Write("sys/kernel/hostname", "gpu-node-07\n");
  ProcReader reader(t.root());
  HostInfo h = reader.ReadHost();
  EXPECT_EQ(h.hostname, "gpu-node-07");
  EXPECT_EQ(h.boot_time_unix_s, kBootS);
  EXPECT_EQ(h.cpu_count, 2u);
}

TEST(ProcReaderFake, ReadHostOfAnEmptyTreeIsAllUnknown) {
  TempTree t;
  HostInfo h = ProcReader(t.root()).ReadHost();
  EXPECT_FALSE(h.hostname);
  EXPECT_FALSE(h.boot_time_unix_s);
  EXPECT_FALSE(h.cpu_count);
  EXPECT_FALSE(ProcReader(t.Path("missing")).ReadHost().hostname);
}

// A fake proc tree whose fd entries point into a fake device directory.
class HolderScanFake : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* name : {"nvidia0", "nvidia1", "nvidiactl", "nvidia-uvm", "other"}) {
      tree_.Write("dev/" + std::string(name), "");
    }
    tree_.Write("dev/nvidia-caps/nvidia-cap1", "");
    tree_.Write("dev-other/nvidia0", "");
    Fd(100, 0, "/dev/null");
    Fd(100, 1, Dev("nvidia0"));
    Fd(100, 2, Dev("nvidiactl"));
    Fd(100, 3, Dev("nvidia0"));  // Same device twice: reported once.
    Fd(100, 4, "socket:[1234]");
    Fd(100, 5, Dev("other"));
    Fd(101, 9, Dev("nvidia-caps/nvidia-cap1"));
    tree_.Mkdir("proc/102/fd");  // Holds nothing.
    tree_.Mkdir("proc/103");     // Exited: no fd directory any more.
    Fd(104, 7, Dev("nvidia-uvm"));
    tree_.Symlink("proc/104/fd/x", Dev("nvidia0"));  // Not a descriptor number.
    Fd(106, 1, tree_.Path("dev-other/nvidia0"));     // Same name, other directory.
    tree_.Mkdir("proc/107/fd");
    tree_.Write("proc/107/maps",
                "7f0000000000-7f0000001000 rw-s 00000000 00:05 12 " + Dev("nvidia1") + "\n" +
                    "7f0000001000-7f0000002000 rw-s 00000000 00:05 13 " + Dev("nvidiactl") +
                    " (deleted)\n" + "7f0000002000-7f0000003000 r-xp 00000000 08:01 99 " +
                    "/usr/lib/x86_64-linux-gnu/libcuda.so.1\n");
    tree_.Write("proc/108/fd", "");  // Not a directory: unreadable.
    // Entries that are not processes.
    tree_.Symlink("proc/self", "100");
    tree_.Mkdir("proc/sys/kernel");
    Fd(0, 1, Dev("nvidia0"));  // "0" is not a PID.
    tree_.Mkdir("proc/12ab/fd");
    tree_.Symlink("proc/12ab/fd/1", Dev("nvidia0"));
  }

  std::string Dev(const std::string& name) const { return tree_.Path("dev/" + name); }
  void Fd(pid_t pid, int fd, const std::string& target) {
    tree_.Symlink("proc/" + std::to_string(pid) + "/fd/" + std::to_string(fd), target);
  }
  DeviceMatch Match() const {
    DeviceMatch m;
    m.dir = tree_.Path("dev");
    return m;
  }

  TempTree tree_;
};

TEST_F(HolderScanFake, FindsExactlyTheHolders) {
  ProcReader reader(tree_.Path("proc"));
  HolderScanStats stats;
  Result<HolderMap> h = reader.ScanDeviceHolders(Match(), &stats);
  ASSERT_TRUE(h.ok()) << h.error().message;
  HolderMap want = {
      {100, {Dev("nvidia0"), Dev("nvidiactl")}},
      {101, {Dev("nvidia-caps/nvidia-cap1")}},
      {104, {Dev("nvidia-uvm")}},
  };
  EXPECT_EQ(*h, want);
  EXPECT_EQ(stats.processes, 8u);  // 100 101 102 103 104 106 107 108.
  EXPECT_EQ(stats.vanished, 1u);
  EXPECT_EQ(stats.fd_denied, 1u);
}

TEST_F(HolderScanFake, MapsAreScannedOnlyWhenAsked) {
  ProcReader reader(tree_.Path("proc"));
  DeviceMatch m = Match();
  m.include_maps = true;
  Result<HolderMap> h = reader.ScanDeviceHolders(m);
  ASSERT_TRUE(h.ok());
  ASSERT_EQ(h->count(107), 1u);
  EXPECT_EQ(h->at(107), (std::vector<std::string>{Dev("nvidia1"), Dev("nvidiactl")}));
  EXPECT_EQ(h->size(), 4u);
  Result<HolderMap> no_maps = reader.ScanDeviceHolders(Match());
  ASSERT_TRUE(no_maps.ok());
  EXPECT_EQ(no_maps->count(107), 0u);
}

TEST_F(HolderScanFake, ExcludePid) {
  DeviceMatch m = Match();
  m.exclude_pid = 100;
  Result<HolderMap> h = ProcReader(tree_.Path("proc")).ScanDeviceHolders(m);
  ASSERT_TRUE(h.ok());
  EXPECT_EQ(h->count(100), 0u);
  EXPECT_EQ(h->count(101), 1u);
}

TEST_F(HolderScanFake, PrefixAndTrailingSlash) {
  DeviceMatch m = Match();
  m.dir += "//";
  m.prefix = "nvidiactl";
  Result<HolderMap> h = ProcReader(tree_.Path("proc")).ScanDeviceHolders(m);
  ASSERT_TRUE(h.ok());
  EXPECT_EQ(*h, (HolderMap{{100, {Dev("nvidiactl")}}}));
}

TEST_F(HolderScanFake, MissingProcRootIsAnError) {
  Result<HolderMap> h = ProcReader(tree_.Path("nope")).ScanDeviceHolders(Match());
  ASSERT_FALSE(h.ok());
  EXPECT_EQ(h.error().code, "unavailable");
}

}  // namespace
}  // namespace gw::proc
