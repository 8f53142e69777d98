// The queue when its disk fails, end to end: a real gpuwardend on the
// simulator whose state directory is a small tmpfs this test mounts (root
// only; skipped otherwise, or when mounting is refused). The disk fills up
// under a running job; the state directory is made read-only while the
// daemon is down. Submits are refused with the cause, nothing acknowledged is
// lost, nothing runs twice, and the daemon recovers by itself when the disk
// does. One daemon serves every test of this binary, in order.
#include <errno.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mount.h>
#include <unistd.h>

#include <time.h>

#include <cstdio>
#include <iostream>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "e2e/queue_e2e_util.h"

namespace gw::test {
namespace {

using nlohmann::json;

class QueueStorageE2e : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (geteuid() != 0) {
      skip_ = "needs root to mount a small filesystem for the state directory";
      return;
    }
    server_ = new QueueServer("queue-two-free.json");
    mkdir(server_->state_dir().c_str(), 0700);
    if (mount("tmpfs", server_->state_dir().c_str(), "tmpfs", MS_NOSUID | MS_NODEV,
              "size=6m,mode=0700") != 0) {
      skip_ = std::string("cannot mount a tmpfs: ") + std::strerror(errno);
      delete server_;
      server_ = nullptr;
      return;
    }
    mounted_ = true;
  }
  static void TearDownTestSuite() {
    if (server_ != nullptr) {
      server_->Stop();
      server_->KillLeftovers();
      if (mounted_) umount2(server_->state_dir().c_str(), MNT_DETACH);
      delete server_;
      server_ = nullptr;
    }
  }
  void SetUp() override {
    if (!skip_.empty()) GTEST_SKIP() << skip_;
    if (!server_->Alive()) {
      ASSERT_TRUE(server_->Start());
    }
  }

  QueueServer& q() { return *server_; }
  std::string Filler() const { return server_->state_dir() + "/filler"; }

  // Fills the state directory's filesystem to the last byte.
  void FillTheDisk() {
    const int fd = open(Filler().c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    ASSERT_GE(fd, 0);
    const std::string chunk(4096, 'x');
    for (;;) {
      const ssize_t n = write(fd, chunk.data(), chunk.size());
      if (n > 0) continue;
      ASSERT_EQ(errno, ENOSPC);
      break;
    }
    for (;;) {  // The last partial page, byte by byte.
      if (write(fd, "x", 1) != 1) break;
    }
    close(fd);
  }

  // Every acknowledged job (id -> what must become of it).
  static std::map<int64_t, std::string>& Acknowledged() {
    static std::map<int64_t, std::string> ids;
    return ids;
  }

  static inline QueueServer* server_ = nullptr;
  static inline bool mounted_ = false;
  static inline std::string skip_;
};

TEST_F(QueueStorageE2e, AFullDiskRefusesSubmitsWithTheCauseAndLosesNothing) {
  // A job that runs until told, and writes where the full disk is not.
  const std::string go = q().mark() + "/go";
  const std::string started = q().mark() + "/started";
  std::optional<int64_t> runner =
      q().Submit({"--gpus", "0", "--", "sh", "-c",
                  ": > \"$MARK/started\"; while [ ! -e \"$MARK/go\" ]; do sleep 0.05; done; "
                  "echo \"$GPUWARDEN_JOB_ID\" >> \"$MARK/ran\""});
  ASSERT_TRUE(runner);
  Acknowledged()[*runner] = "succeeded";
  ASSERT_EQ(StateOf(q().WaitForState(*runner, "running")), "running");
  // "running" is the daemon's word once it launched the supervisor; the
  // supervisor still has to record the launch (on the disk about to fill)
  // before it execs the command, and one that cannot record it does not run
  // the job (the daemon puts it back in the queue). Fill the disk only once
  // the command itself runs.
  ASSERT_TRUE(Eventually([&] { return access(started.c_str(), F_OK) == 0; })) << q().Log();

  FillTheDisk();
  // The store may still fit a few writes in pages it already holds; every
  // one it acknowledges must survive. Submit until the disk refuses.
  std::optional<json> refusal;
  for (int i = 0; i < 500 && !refusal; ++i) {
    std::optional<json> r =
        q().RawSubmit({"sh", "-c", "echo \"$GPUWARDEN_JOB_ID\" >> \"$MARK/ran\""}, *runner);
    ASSERT_TRUE(r) << "no reply";
    if (r->value("ok", false)) {
      Acknowledged()[(*r)["job"].get<int64_t>()] = "succeeded";
    } else {
      refusal = r;
    }
  }
  ASSERT_TRUE(refusal) << "the full disk never refused a submit";
  EXPECT_EQ((*refusal)["error"].value("code", ""), "storage") << refusal->dump();
  EXPECT_NE((*refusal)["error"]
                .value("message", "")
                .find("queue storage not writable: no space left on device"),
            std::string::npos)
      << refusal->dump();

  // The client says why, with the contract's exit code.
  RunResult cli = q().Gw({"run", "--detach", "--gpus", "0", "--", "true"});
  EXPECT_EQ(cli.exit_code, kExitStorageRefused) << Trace(cli);
  EXPECT_NE(cli.err.find("no space left on device"), std::string::npos) << Trace(cli);

  // The queue reports the degraded store; the running job keeps running.
  json degraded = q().Degraded();
  ASSERT_TRUE(degraded.is_array() && !degraded.empty()) << degraded.dump();
  EXPECT_EQ(degraded[0].value("what", ""), "storage");
  EXPECT_NE(degraded[0].value("detail", "").find("no space left on device"), std::string::npos);
  EXPECT_GT(degraded[0].value("since_unix_ms", int64_t{0}), 0);
  EXPECT_EQ(StateOf(q().Job(*runner)), "running");
  EXPECT_NE(q().Log().find("gpuwardend: error: queue storage degraded: queue storage not "
                           "writable: no space left on device"),
            std::string::npos)
      << q().Log();

  // Space returns: the daemon notices by itself, then the job ends and is
  // recorded.
  ASSERT_EQ(unlink(Filler().c_str()), 0);
  ASSERT_TRUE(Eventually([&] {
    json d = q().Degraded();
    return d.is_array() && d.empty();
  })) << q().Degraded().dump();
  EXPECT_NE(q().Log().find("gpuwardend: notice: queue storage writable again"), std::string::npos);
  std::ofstream(go).put('\n');
  for (const auto& [id, want] : Acknowledged()) {
    EXPECT_EQ(StateOf(q().WaitForEnd(id)), want) << "job " << id;
  }

  // A restart finds every acknowledged job as it ended, and none ran twice.
  q().Stop();
  ASSERT_TRUE(q().Start());
  for (const auto& [id, want] : Acknowledged()) {
    EXPECT_EQ(StateOf(q().Job(id)), want) << "job " << id << " after the restart";
  }
  std::multiset<int64_t> ran;
  std::istringstream lines(ReadFileOrEmpty(q().mark() + "/ran"));
  for (int64_t id; lines >> id;) ran.insert(id);
  for (const auto& [id, want] : Acknowledged()) EXPECT_EQ(ran.count(id), 1u) << "job " << id;
  EXPECT_EQ(ran.size(), Acknowledged().size());
  if (HasFailure()) std::cerr << "daemon log:\n" << q().Log();
}

TEST_F(QueueStorageE2e, AReadOnlyStateDirectoryIsNamedAndTheQueueComesBackWhenItIsWritable) {
  // A job that waits (its window opens in two hours), held: stored, and not
  // running (a running job's logs would keep the filesystem busy).
  json spec = SpecFor({"true"}, q().ClientOptions());
  spec["gpus"] = 0;
  const time_t now = time(nullptr);
  struct tm local;
  localtime_r(&now, &local);
  const int m = local.tm_hour * 60 + local.tm_min;
  char window[32];
  std::snprintf(window, sizeof window, "%02d:%02d-%02d:%02d", (m + 120) / 60 % 24, (m + 120) % 60,
                (m + 180) / 60 % 24, (m + 180) % 60);
  spec["window"] = window;
  std::optional<json> held = q().Call({{"op", "submit"}, {"spec", spec}});
  ASSERT_TRUE(held && held->value("ok", false)) << (held ? held->dump() : "no reply");
  const int64_t held_id = (*held)["job"].get<int64_t>();
  std::optional<json> hold = q().Call({{"op", "hold"}, {"job", held_id}});
  ASSERT_TRUE(hold && hold->value("ok", false)) << (hold ? hold->dump() : "no reply");

  // A mounted filesystem cannot be made read-only while the daemon holds its
  // store open for writing (EBUSY), so it is remounted while the daemon is
  // down, as after a reboot onto a damaged disk.
  q().Stop();
  ASSERT_EQ(mount(nullptr, q().state_dir().c_str(), nullptr, MS_REMOUNT | MS_RDONLY, nullptr), 0)
      << std::strerror(errno);
  EXPECT_FALSE(q().Start());
  EXPECT_NE(q().Log().find("gpuwardend: error: queue storage not writable: "), std::string::npos)
      << q().Log();
  EXPECT_NE(q().Log().find("Read-only file system"), std::string::npos) << q().Log();

  ASSERT_EQ(mount(nullptr, q().state_dir().c_str(), nullptr, MS_REMOUNT, nullptr), 0)
      << std::strerror(errno);
  ASSERT_TRUE(q().Start());
  json job = q().Job(held_id);
  EXPECT_EQ(StateOf(job), "held") << job.dump();
  for (const auto& [id, want] : Acknowledged()) {
    EXPECT_EQ(StateOf(q().Job(id)), want) << "job " << id;
  }
  json degraded = q().Degraded();
  EXPECT_TRUE(degraded.is_array() && degraded.empty()) << degraded.dump();
  std::optional<json> again = q().RawSubmit({"true"});
  ASSERT_TRUE(again && again->value("ok", false)) << (again ? again->dump() : "no reply");
  if (HasFailure()) std::cerr << "daemon log:\n" << q().Log();
}

}  // namespace
}  // namespace gw::test
