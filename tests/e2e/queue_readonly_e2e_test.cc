// The queue when the kernel turns its disk read-only under it, end to end: a
// real gpuwardend on the simulator whose state directory is an ext4 image on
// a loop device, mounted errors=remount-ro, that this test makes. An ext4
// error (sysfs trigger_fs_error, as a failing disk or a detected corruption
// causes) makes the kernel remount it read-only while the daemon holds its
// store open and a job runs — the way a real disk goes read-only, and the
// only one: a remount by hand is refused while files are open for writing.
// Submits are refused with the cause, the running job keeps running, and
// after the admin's repair (daemon stopped, fsck, mounted again, daemon
// started) every acknowledged job is there and runs exactly once.
// Root only; skipped when loop devices or mkfs.ext4 are not available.
#include <errno.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mount.h>
#include <unistd.h>

#include <fstream>
#include <iostream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "e2e/queue_e2e_util.h"

namespace gw::test {
namespace {

using nlohmann::json;

class QueueReadOnlyE2e : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "needs root to make and mount an ext4 image";
    for (const char* tool : {"/usr/sbin/mkfs.ext4", "/usr/sbin/losetup", "/usr/sbin/e2fsck"}) {
      if (access(tool, X_OK) != 0) GTEST_SKIP() << tool << " is not installed";
    }
    server_ = std::make_unique<QueueServer>("queue-two-free.json");
    image_ = server_->dir() + "/disk.img";
    {
      const int fd = open(image_.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
      ASSERT_GE(fd, 0);
      ASSERT_EQ(ftruncate(fd, 64 << 20), 0);
      close(fd);
    }
    RunResult mk = RunProcess({"/usr/sbin/mkfs.ext4", "-q", "-F", image_});
    ASSERT_EQ(mk.exit_code, 0) << Trace(mk);
    ASSERT_EQ(mkdir(server_->state_dir().c_str(), 0700), 0);
    if (std::string why = Mount(); !why.empty()) GTEST_SKIP() << why;
  }
  void TearDown() override {
    if (server_ == nullptr) return;
    server_->Stop();
    server_->KillLeftovers();
    Unmount();
  }

  // Attaches the image to a new loop device (never one that already holds it:
  // that one still carries the failed filesystem) and mounts it on the state
  // directory, errors=remount-ro. An empty string when it worked, else why not.
  std::string Mount() {
    RunResult loop = RunProcess({"/usr/sbin/losetup", "--find", "--show", image_});
    if (loop.exit_code != 0) return "no loop device: " + loop.err;
    loop_ = loop.out.substr(0, loop.out.find('\n'));
    if (mount(loop_.c_str(), server_->state_dir().c_str(), "ext4", MS_NOSUID | MS_NODEV,
              "errors=remount-ro") != 0) {
      const std::string why = std::string("cannot mount ext4: ") + std::strerror(errno);
      RunProcess({"/usr/sbin/losetup", "-d", loop_});
      loop_.clear();
      return why;
    }
    return "";
  }
  // Detaches the mount (lazily: the job's log files may still be open on the
  // failed filesystem) and lets its loop device go once they are closed.
  void Unmount() {
    if (loop_.empty()) return;
    umount2(server_->state_dir().c_str(), MNT_DETACH);
    RunProcess({"/usr/sbin/losetup", "-d", loop_});
    loop_.clear();
  }
  // What the kernel does on an ext4 error with errors=remount-ro.
  ::testing::AssertionResult FailTheFilesystem() {
    const std::string trigger =
        "/sys/fs/ext4/" + loop_.substr(loop_.rfind('/') + 1) + "/trigger_fs_error";
    std::ofstream(trigger) << "gpuwarden e2e: a simulated disk error\n";
    const std::string probe = server_->state_dir() + "/probe";
    const int fd = open(probe.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
    if (fd >= 0) {
      close(fd);
      return ::testing::AssertionFailure() << "the filesystem is still writable after " << trigger;
    }
    if (errno != EROFS) {
      return ::testing::AssertionFailure() << "creating a file: " << std::strerror(errno);
    }
    return ::testing::AssertionSuccess();
  }

  QueueServer& q() { return *server_; }
  std::unique_ptr<QueueServer> server_;
  std::string image_;
  std::string loop_;
};

TEST_F(QueueReadOnlyE2e, TheKernelRemountingTheDiskReadOnlyRefusesSubmitsAndLosesNothing) {
  ASSERT_TRUE(q().Start());
  // A job that runs until told (it writes outside the state directory), and
  // one that waits for it.
  const std::string go = q().mark() + "/go";
  std::optional<int64_t> running =
      q().Submit({"--gpus", "0", "--", "sh", "-c",
                  "touch \"$MARK/started\"; while [ ! -e \"$MARK/go\" ]; do sleep 0.05; done; echo "
                  "\"$GPUWARDEN_JOB_ID\" >> \"$MARK/ran\""});
  ASSERT_TRUE(running);
  ASSERT_EQ(StateOf(q().WaitForState(*running, "running")), "running");
  // The job itself runs (its supervisor has claimed the run and started it;
  // a supervisor that meets the failed disk before that puts the job back in
  // the queue instead: job_table_test).
  ASSERT_TRUE(Eventually([&] { return access((q().mark() + "/started").c_str(), F_OK) == 0; }));
  std::optional<json> next =
      q().RawSubmit({"sh", "-c", "echo \"$GPUWARDEN_JOB_ID\" >> \"$MARK/ran\""}, *running);
  ASSERT_TRUE(next && next->value("ok", false)) << (next ? next->dump() : "no reply");
  const int64_t waiting = (*next)["job"].get<int64_t>();

  ASSERT_TRUE(FailTheFilesystem());

  // The daemon stays up, answers, and refuses what it cannot store, naming why.
  std::optional<json> refusal = q().RawSubmit({"true"});
  ASSERT_TRUE(refusal) << "no reply:\n" << q().Log();
  EXPECT_FALSE(refusal->value("ok", true)) << refusal->dump();
  EXPECT_EQ((*refusal)["error"].value("code", ""), "storage") << refusal->dump();
  const std::string message = (*refusal)["error"].value("message", "");
  EXPECT_EQ(message.rfind("queue storage not writable: read-only file system", 0), 0) << message;
  RunResult cli = q().Gw({"run", "--detach", "--gpus", "0", "--", "true"});
  EXPECT_EQ(cli.exit_code, kExitStorageRefused) << Trace(cli);
  EXPECT_NE(cli.err.find("read-only file system"), std::string::npos) << Trace(cli);
  ASSERT_TRUE(Eventually([&] {
    json d = q().Degraded();
    return d.is_array() && !d.empty() && d[0].value("what", "") == "storage";
  })) << q().Degraded().dump();
  EXPECT_NE(q().Degraded()[0].value("detail", "").find("read-only file system"), std::string::npos)
      << q().Degraded().dump();
  RunResult shown = q().Gw({"queue"});
  EXPECT_EQ(shown.exit_code, 0) << Trace(shown);
  EXPECT_NE(shown.out.find("read-only file system"), std::string::npos) << Trace(shown);
  EXPECT_EQ(StateOf(q().Job(*running)), "running");
  EXPECT_EQ(StateOf(q().Job(waiting)), "queued");
  EXPECT_TRUE(q().Alive());

  // The admin's repair: the daemon stopped (it exits cleanly on a read-only
  // store), the filesystem checked and mounted again, the daemon started.
  std::optional<int> stopped = q().Stop();
  EXPECT_EQ(stopped, std::optional<int>(0)) << q().Log();
  Unmount();
  RunResult fsck = RunProcess({"/usr/sbin/e2fsck", "-f", "-y", image_});
  ASSERT_LE(fsck.exit_code, 1) << Trace(fsck);  // 0: clean, 1: errors corrected
  ASSERT_EQ(Mount(), "");
  ASSERT_TRUE(q().Start());

  // Every acknowledged job is there: the one still running is adopted, the
  // waiting one still waits for it; then both run, each exactly once.
  EXPECT_EQ(StateOf(q().Job(*running)), "running") << q().Job(*running).dump();
  EXPECT_EQ(StateOf(q().Job(waiting)), "queued") << q().Job(waiting).dump();
  json degraded = q().Degraded();
  EXPECT_TRUE(degraded.is_array() && degraded.empty()) << degraded.dump();
  std::ofstream(go).put('\n');
  EXPECT_EQ(StateOf(q().WaitForEnd(*running)), "succeeded");
  EXPECT_EQ(StateOf(q().WaitForEnd(waiting)), "succeeded");
  std::multiset<int64_t> ran;
  std::istringstream lines(ReadFileOrEmpty(q().mark() + "/ran"));
  for (int64_t id; lines >> id;) ran.insert(id);
  EXPECT_EQ(ran, (std::multiset<int64_t>{*running, waiting}));
  std::optional<json> again = q().RawSubmit({"true"});
  ASSERT_TRUE(again && again->value("ok", false)) << (again ? again->dump() : "no reply");
  if (HasFailure()) std::cerr << "daemon log:\n" << q().Log();
}

}  // namespace
}  // namespace gw::test
