// ProcReader against the real /proc and real child processes: a sleeping
// child, a zombie, hostile names and argv, another uid, and children that
// hold (or map) temporary "device" files.
#include <fcntl.h>
#include <grp.h>
#include <gtest/gtest.h>
#include <linux/capability.h>
#include <pwd.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "core/clock.h"
#include "proc/proc_parse.h"
#include "proc/proc_reader.h"
#include "proc/proc_test_util.h"

namespace gw::proc {
namespace {

using testing::PasswdName;
using testing::TempTree;

// Starts children, each in its own process group, and on destruction kills
// the groups and reaps everything, including grandchildren (this process is
// made a subreaper so orphans come back to it rather than to init).
class Children {
 public:
  Children() { prctl(PR_SET_CHILD_SUBREAPER, 1); }
  Children(const Children&) = delete;
  Children& operator=(const Children&) = delete;
  ~Children() {
    for (pid_t pid : pids_) Kill(pid);
  }

  // Forks a child that runs setup() and then pauses for ever. Returns its PID
  // once setup() has returned true, or -1 if it failed.
  pid_t StartPaused(const std::function<bool()>& setup) {
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0) return -1;
    pid_t pid = fork();
    if (pid == 0) {
      setpgid(0, 0);
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      close(fds[0]);
      if (!setup()) _exit(1);
      char ok = 1;
      if (write(fds[1], &ok, 1) != 1) _exit(1);
      close(fds[1]);
      for (;;) pause();
    }
    close(fds[1]);
    if (pid < 0) {
      close(fds[0]);
      return -1;
    }
    setpgid(pid, pid);  // Also here, so the group exists before Kill can run.
    pids_.push_back(pid);
    char ok = 0;
    ssize_t n;
    do {
      n = read(fds[0], &ok, 1);
    } while (n < 0 && errno == EINTR);
    close(fds[0]);
    return n == 1 ? pid : -1;
  }

  // Forks and execs argv (PATH searched), output to /dev/null. Returns the
  // PID once exec has succeeded, or -1.
  pid_t StartExec(const std::vector<std::string>& argv) {
    std::vector<char*> args;
    for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0) return -1;
    pid_t pid = fork();
    if (pid == 0) {
      setpgid(0, 0);
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      close(fds[0]);
      int devnull = open("/dev/null", O_RDWR);
      dup2(devnull, 0);
      dup2(devnull, 1);
      dup2(devnull, 2);
      execvp(args[0], args.data());
      int err = errno;
      if (write(fds[1], &err, sizeof err) < 0) _exit(126);
      _exit(127);
    }
    close(fds[1]);
    if (pid < 0) {
      close(fds[0]);
      return -1;
    }
    setpgid(pid, pid);
    pids_.push_back(pid);
    int err = 0;
    ssize_t n;
    do {
      n = read(fds[0], &err, sizeof err);  // EOF: the exec closed the pipe.
    } while (n < 0 && errno == EINTR);
    close(fds[0]);
    return n == 0 ? pid : -1;
  }

  // Kills pid's process group and reaps its members.
  void Kill(pid_t pid) {
    kill(-pid, SIGKILL);
    kill(pid, SIGKILL);
    int status;
    while (waitpid(-pid, &status, 0) > 0 || errno == EINTR) {
    }
    waitpid(pid, &status, 0);
    std::erase(pids_, pid);
  }

 private:
  std::vector<pid_t> pids_;
};

// Polls cond() every 5 ms for up to 20 s. Correctness waits, not timing.
bool WaitUntil(const std::function<bool()>& cond) {
  for (int i = 0; i < 4000; ++i) {
    if (cond()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return cond();
}

bool HasState(ProcReader& reader, pid_t pid, ProcessState state) {
  Result<HostProcess> p = reader.ReadProcess(pid, RealClock().NowUnixMs());
  return p.ok() && p->state == state;
}

std::string ReadWhole(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::optional<std::string> ReadProcessComm(pid_t pid) {
  std::string comm = ReadWhole("/proc/" + std::to_string(pid) + "/comm");
  if (comm.empty()) return std::nullopt;
  comm.pop_back();  // The newline.
  return comm;
}

TEST(LiveProcess, SleepChild) {
  Children children;
  RealClock clock;
  const int64_t t0 = clock.NowUnixMs();
  pid_t pid = children.StartExec({"sleep", "1000"});
  ASSERT_GT(pid, 0);
  const int64_t t1 = clock.NowUnixMs();
  ProcReader reader;
  ASSERT_TRUE(WaitUntil([&] { return HasState(reader, pid, ProcessState::kSleeping); }));
  Result<HostProcess> p = reader.ReadProcess(pid, clock.NowUnixMs());
  ASSERT_TRUE(p.ok()) << p.error().message;
  EXPECT_EQ(p->pid, pid);
  EXPECT_TRUE(p->readable);
  EXPECT_EQ(p->comm, "sleep");
  EXPECT_EQ(p->cmdline, (std::vector<std::string>{"sleep", "1000"}));
  EXPECT_EQ(p->ppid, getpid());
  EXPECT_EQ(p->pgid, pid);       // The child leads its own group,
  EXPECT_EQ(p->sid, getsid(0));  // in this test's session.
  EXPECT_EQ(p->parent_comm, ReadProcessComm(getpid()));
  EXPECT_EQ(p->uid, getuid());
  EXPECT_EQ(p->user, PasswdName(getuid()));
  ASSERT_TRUE(p->start_time_unix_ms);
  // btime has whole-second precision: the start can read up to ~1 s early.
  EXPECT_GE(*p->start_time_unix_ms, t0 - 2000);
  EXPECT_LE(*p->start_time_unix_ms, t1 + 1000);
  ASSERT_TRUE(p->age_s);
  EXPECT_GE(*p->age_s, 0.0);
  EXPECT_TRUE(p->cpu_time_ms);
  ASSERT_TRUE(p->rss_bytes);
  EXPECT_GT(*p->rss_bytes, 0u);
  // The child sits in this test's cgroup.
  EXPECT_EQ(p->owner.cgroup_path, ParseCgroup(ReadWhole("/proc/self/cgroup")).cgroup_path);
  EXPECT_TRUE(p->owner.cgroup_path);
  // The identity: exactly stat's field 22, and the same on every read.
  Result<StatFields> stat = ParseStat(ReadWhole("/proc/" + std::to_string(pid) + "/stat"));
  ASSERT_TRUE(stat.ok());
  EXPECT_EQ(p->start_ticks, stat->start_ticks);
  EXPECT_EQ(reader.ReadProcess(pid, clock.NowUnixMs())->start_ticks, p->start_ticks);
  // Our own child: its executable is readable.
  ASSERT_TRUE(p->exe);
  EXPECT_EQ(p->exe->substr(p->exe->rfind('/') + 1), "sleep");
  // It is in the process table, which is sorted.
  Result<std::vector<pid_t>> pids = reader.ListPids();
  ASSERT_TRUE(pids.ok());
  EXPECT_TRUE(std::is_sorted(pids->begin(), pids->end()));
  EXPECT_TRUE(std::binary_search(pids->begin(), pids->end(), pid));
  EXPECT_TRUE(std::binary_search(pids->begin(), pids->end(), getpid()));
}

TEST(ProcReaderListPids, MissingRootIsUnavailable) {
  ProcReader reader("/nonexistent-gw-proc-root");
  Result<std::vector<pid_t>> pids = reader.ListPids();
  ASSERT_FALSE(pids.ok());
  EXPECT_EQ(pids.error().code, "unavailable");
  EXPECT_NE(pids.error().message.find("/nonexistent-gw-proc-root"), std::string::npos);
}

TEST(LiveProcess, OwnProcess) {
  ProcReader reader;
  Result<HostProcess> p = reader.ReadProcess(getpid(), RealClock().NowUnixMs());
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->comm, ReadProcessComm(getpid()));
  EXPECT_EQ(p->state, ProcessState::kRunning);
  EXPECT_EQ(p->ppid, getppid());
  ASSERT_FALSE(p->cmdline.empty());
  EXPECT_NE(p->cmdline[0].find("gw_proc_test"), std::string::npos);
}

TEST(LiveProcess, ZombieWhoseParentDoesNotReap) {
  Children children;
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  // The middle process forks a grandchild that exits at once and is never
  // waited for: a real zombie with a live parent.
  pid_t middle = children.StartPaused([&fds] {
    pid_t gc = fork();
    if (gc == 0) _exit(0);
    return gc > 0 && write(fds[1], &gc, sizeof gc) == sizeof gc;
  });
  close(fds[1]);
  ASSERT_GT(middle, 0);
  pid_t zombie = 0;
  ASSERT_EQ(read(fds[0], &zombie, sizeof zombie), static_cast<ssize_t>(sizeof zombie));
  close(fds[0]);
  ProcReader reader;
  ASSERT_TRUE(WaitUntil([&] { return HasState(reader, zombie, ProcessState::kZombie); }));
  Result<HostProcess> p = reader.ReadProcess(zombie, RealClock().NowUnixMs());
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->state, ProcessState::kZombie);
  EXPECT_EQ(p->ppid, middle);
  EXPECT_TRUE(p->cmdline.empty());
  EXPECT_EQ(p->uid, getuid());
  Result<HostProcess> self = reader.ReadProcess(getpid(), 0);
  ASSERT_TRUE(self.ok());
  EXPECT_EQ(p->comm, self->comm);  // A fork of this test keeps its name.
  // Its parent lives on, paused.
  EXPECT_TRUE(WaitUntil([&] { return HasState(reader, middle, ProcessState::kSleeping); }));
}

TEST(LiveProcess, HostileComm) {
  Children children;
  const std::string name = "x) (y\nz) R 1";
  pid_t pid = children.StartPaused([&name] { return prctl(PR_SET_NAME, name.c_str()) == 0; });
  ASSERT_GT(pid, 0);
  ProcReader reader;
  ASSERT_TRUE(WaitUntil([&] { return HasState(reader, pid, ProcessState::kSleeping); }));
  Result<HostProcess> p = reader.ReadProcess(pid, RealClock().NowUnixMs());
  ASSERT_TRUE(p.ok()) << p.error().message;
  EXPECT_EQ(p->comm, name);
  EXPECT_EQ(p->ppid, getpid());
  EXPECT_EQ(p->state, ProcessState::kSleeping);
  EXPECT_EQ(p->uid, getuid());
}

TEST(LiveProcess, HostileArgv) {
  Children children;
  // "; :" keeps sh from exec'ing sleep, so the sh process keeps this argv.
  const std::vector<std::string> argv = {
      "sh", "-c", "sleep 1000; :", "\x1b[31mred\x1b[0m) (\x1b]0;title\x07", "two\nlines\ttab\r",
      ""};
  pid_t pid = children.StartExec(argv);
  ASSERT_GT(pid, 0);
  ProcReader reader;
  // The trailing empty argument is indistinguishable from NUL padding and is
  // dropped (documented in ParseCmdline).
  const std::vector<std::string> want(argv.begin(), argv.end() - 1);
  Result<HostProcess> p = reader.ReadProcess(pid, RealClock().NowUnixMs());
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->cmdline, want);
  EXPECT_EQ(p->comm, "sh");
  EXPECT_EQ(p->ppid, getpid());
}

TEST(LiveProcess, ExitedProcessIsNotFound) {
  pid_t pid = fork();
  if (pid == 0) _exit(0);
  ASSERT_GT(pid, 0);
  int status;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  Result<HostProcess> p = ProcReader().ReadProcess(pid, 0);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.error().code, "not_found");
}

TEST(LiveProcess, ReadStatFollowsAChildFromLifeToZombieToGone) {
  pid_t pid = fork();
  if (pid == 0) {
    pause();
    _exit(0);
  }
  ASSERT_GT(pid, 0);
  const ProcReader reader;
  Result<StatFields> alive = reader.ReadStat(pid);
  ASSERT_TRUE(alive.ok()) << alive.error().message;
  EXPECT_EQ(alive->pid, pid);
  EXPECT_EQ(alive->ppid, getpid());
  Result<StatFields> parsed = ParseStat(ReadWhole("/proc/" + std::to_string(pid) + "/stat"));
  ASSERT_TRUE(parsed.ok());
  EXPECT_EQ(alive->start_ticks, parsed->start_ticks);
  ASSERT_EQ(kill(pid, SIGKILL), 0);
  // Unreaped, it is a zombie: still there, state 'Z'.
  siginfo_t info{};
  ASSERT_EQ(waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOWAIT), 0);
  Result<StatFields> zombie = reader.ReadStat(pid);
  ASSERT_TRUE(zombie.ok()) << zombie.error().message;
  EXPECT_EQ(zombie->state, 'Z');
  EXPECT_EQ(zombie->start_ticks, alive->start_ticks);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  Result<StatFields> gone = reader.ReadStat(pid);
  ASSERT_FALSE(gone.ok());
  EXPECT_EQ(gone.error().code, "gone");
}

TEST(LiveProcess, OtherUid) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to start a child as another uid";
  Children children;
  pid_t pid = children.StartPaused([] {
    return setgroups(0, nullptr) == 0 && setresgid(65534, 65534, 65534) == 0 &&
           setresuid(65534, 65534, 65534) == 0;
  });
  ASSERT_GT(pid, 0);
  ProcReader reader;
  Result<HostProcess> p = reader.ReadProcess(pid, RealClock().NowUnixMs());
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->uid, 65534u);
  EXPECT_EQ(p->user, PasswdName(65534));
  EXPECT_TRUE(p->readable);
}

TEST(LiveHost, MatchesTheSystem) {
  HostInfo h = ProcReader().ReadHost();
  char name[256] = {};
  ASSERT_EQ(gethostname(name, sizeof name - 1), 0);
  EXPECT_EQ(h.hostname, std::string(name));
  EXPECT_EQ(h.cpu_count, static_cast<unsigned>(sysconf(_SC_NPROCESSORS_ONLN)));
  ASSERT_TRUE(h.boot_time_unix_s);
  EXPECT_GT(*h.boot_time_unix_s, 0u);
  EXPECT_LE(static_cast<int64_t>(*h.boot_time_unix_s), RealClock().NowUnixMs() / 1000);
}

// Temporary "device" files, and children that hold them in different ways.
class LiveHolders : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* name : {"nvidia0", "nvidia1", "nvidiactl", "nvidia-uvm", "other"}) {
      dev_.Write(name, std::string(4096, 'x'));
    }
    dev_.Write("nvidia-caps/nvidia-cap1", "x");
  }
  std::string Dev(const std::string& name) const { return dev_.Path(name); }
  DeviceMatch Match() const {
    DeviceMatch m;
    m.dir = dev_.root();
    return m;
  }
  // A child that opens `names` and keeps them open.
  pid_t StartHolder(const std::vector<std::string>& names) {
    std::vector<std::string> paths;
    for (const std::string& n : names) paths.push_back(Dev(n));
    return children_.StartPaused([&paths] {
      for (const std::string& p : paths) {
        if (open(p.c_str(), O_RDONLY) < 0) return false;
      }
      return true;
    });
  }

  TempTree dev_;
  Children children_;
};

TEST_F(LiveHolders, SeesExactlyTheChildrenThatHoldDevices) {
  pid_t a = StartHolder({"nvidia0", "nvidiactl", "nvidia-uvm", "other"});
  pid_t b = StartHolder({});
  pid_t c = StartHolder({"nvidia-caps/nvidia-cap1", "nvidia1", "nvidia1"});
  const std::string mapped = Dev("nvidia1");
  pid_t d = children_.StartPaused([&mapped] {
    int fd = open(mapped.c_str(), O_RDWR);
    if (fd < 0) return false;
    void* m = mmap(nullptr, 4096, PROT_READ, MAP_SHARED, fd, 0);
    close(fd);  // Only the mapping holds the file now.
    return m != MAP_FAILED;
  });
  pid_t e = children_.StartExec({"sleep", "1000"});
  for (pid_t pid : {a, b, c, d, e}) ASSERT_GT(pid, 0);

  ProcReader reader;
  HolderScanStats stats;
  Result<HolderMap> h = reader.ScanDeviceHolders(Match(), &stats);
  ASSERT_TRUE(h.ok()) << h.error().message;
  HolderMap want = {
      {a, {Dev("nvidia-uvm"), Dev("nvidia0"), Dev("nvidiactl")}},
      {c, {Dev("nvidia-caps/nvidia-cap1"), Dev("nvidia1")}},
  };
  EXPECT_EQ(*h, want);
  EXPECT_GE(stats.processes, 5u);

  DeviceMatch with_maps = Match();
  with_maps.include_maps = true;
  Result<HolderMap> hm = reader.ScanDeviceHolders(with_maps);
  ASSERT_TRUE(hm.ok());
  want[d] = {Dev("nvidia1")};
  EXPECT_EQ(*hm, want);

  DeviceMatch skip_a = Match();
  skip_a.exclude_pid = a;
  Result<HolderMap> hs = reader.ScanDeviceHolders(skip_a);
  ASSERT_TRUE(hs.ok());
  EXPECT_EQ(hs->count(a), 0u);
  EXPECT_EQ(hs->count(c), 1u);

  // Once a holder is gone, so is its entry.
  children_.Kill(a);
  Result<HolderMap> after = reader.ScanDeviceHolders(Match());
  ASSERT_TRUE(after.ok());
  EXPECT_EQ(after->count(a), 0u);
  EXPECT_EQ(after->count(c), 1u);
}

TEST_F(LiveHolders, SeesTheDefaultNvidiaPrefixUnderADeviceDirectory) {
  // The default prefix, in a directory that is not /dev.
  pid_t a = StartHolder({"nvidiactl"});
  ASSERT_GT(a, 0);
  DeviceMatch m;
  m.dir = dev_.root() + "/";
  Result<HolderMap> h = ProcReader().ScanDeviceHolders(m);
  ASSERT_TRUE(h.ok());
  EXPECT_EQ(*h, (HolderMap{{a, {Dev("nvidiactl")}}}));
}

using LiveHoldersDeathTest = LiveHolders;

TEST_F(LiveHoldersDeathTest, UnprivilegedScanCountsWhatItCannotSee) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to hold files as another user";
  pid_t a = StartHolder({"nvidia0"});
  ASSERT_GT(a, 0);
  DeviceMatch m = Match();
  EXPECT_EXIT(
      {
        if (setgroups(0, nullptr) != 0 || setresgid(65534, 65534, 65534) != 0 ||
            setresuid(65534, 65534, 65534) != 0) {
          _exit(2);
        }
        HolderScanStats stats;
        Result<HolderMap> h = ProcReader().ScanDeviceHolders(m, &stats);
        if (!h.ok()) _exit(3);
        if (h->count(a) != 0) _exit(4);      // A root process's fds are hidden,
        if (stats.fd_denied == 0) _exit(5);  // and the scan says it was incomplete.
        _exit(0);
      },
      ::testing::ExitedWithCode(0), "");
}

bool DropPtraceCapability() {
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct caps[2] = {};
  if (syscall(SYS_capget, &header, caps) != 0) return false;
  caps[0].effective &= ~(1u << CAP_SYS_PTRACE);
  caps[0].permitted &= ~(1u << CAP_SYS_PTRACE);
  caps[0].inheritable &= ~(1u << CAP_SYS_PTRACE);
  return syscall(SYS_capset, &header, caps) == 0;
}

TEST_F(LiveHoldersDeathTest, ScanWithoutPtraceRightCountsRefusedLinks) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root";
  pid_t a = StartHolder({"nvidia0"});
  ASSERT_GT(a, 0);
  DeviceMatch m = Match();
  // Root without CAP_SYS_PTRACE may open a root process's fd directory (plain
  // file permissions) but not read its links (a ptrace access check).
  EXPECT_EXIT(
      {
        if (!DropPtraceCapability()) _exit(2);
        HolderScanStats stats;
        Result<HolderMap> h = ProcReader().ScanDeviceHolders(m, &stats);
        if (!h.ok()) _exit(3);
        if (h->count(a) != 0) _exit(4);
        if (stats.fd_denied == 0) _exit(5);
        _exit(0);
      },
      ::testing::ExitedWithCode(0), "");
}

}  // namespace
}  // namespace gw::proc
