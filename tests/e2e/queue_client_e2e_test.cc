// End-to-end tests of the queue's client (gpuwarden run/queue/jobs/cancel
// against a real gpuwardend on the simulator): every row of the exit-code
// table of docs/queue.md, what --wait says when a job ends, admission at
// submit, and one meaning per column.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "e2e/e2e_util.h"
#include "e2e/queue_e2e_util.h"
#include "e2e/run_process.h"

namespace gw::test {
namespace {

using nlohmann::json;

// cli/exit_codes.h
constexpr int kExitUsage = 2;
constexpr int kExitNoDaemon = 15;
constexpr int kExitRefused = 16;
constexpr int kExitStorage = 18;
constexpr int kExitUnsatisfiable = 19;

bool Contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// A daily window closed for the next hours: a job given it waits.
std::string ClosedWindow() {
  const time_t now = time(nullptr);
  tm local{};
  localtime_r(&now, &local);
  const int h = (local.tm_hour + 12) % 24;
  char text[16];
  std::snprintf(text, sizeof text, "%02d:00-%02d:01", h, h);
  return text;
}

// `gpuwarden --socket S ARGS...` started in the background (stdout and
// stderr to files), so that the test can signal it while it waits.
class BackgroundClient {
 public:
  BackgroundClient(const QueueServer& q, const std::vector<std::string>& args)
      : out_(q.dir() + "/client.out"), err_(q.dir() + "/client.err") {
    std::vector<std::string> argv = {GpuwardenBinary(), "--socket", q.socket()};
    argv.insert(argv.end(), args.begin(), args.end());
    const std::vector<std::string> env = ChildEnvironment(q.ClientOptions());
    std::vector<char*> a;
    for (const auto& s : argv) a.push_back(const_cast<char*>(s.c_str()));
    a.push_back(nullptr);
    std::vector<char*> e;
    for (const auto& s : env) e.push_back(const_cast<char*>(s.c_str()));
    e.push_back(nullptr);
    const int out = open(out_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    const int err = open(err_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    pid_ = fork();
    if (pid_ == 0) {
      const int in = open("/dev/null", O_RDONLY);
      if (in < 0 || dup2(in, 0) < 0 || dup2(out, 1) < 0 || dup2(err, 2) < 0) _exit(127);
      execve(a[0], a.data(), e.data());
      _exit(127);
    }
    close(out);
    close(err);
  }
  ~BackgroundClient() {
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
  }
  void Signal(int sig) const { kill(pid_, sig); }
  // Its exit status (128 + N for signal N), nullopt when it did not end in time.
  std::optional<int> Wait(double timeout_s) {
    const auto start = std::chrono::steady_clock::now();
    while (SecondsSince(start) < timeout_s) {
      int status = 0;
      const pid_t r = waitpid(pid_, &status, WNOHANG);
      if (r == pid_) {
        pid_ = -1;
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return std::nullopt;
  }
  std::string Err() const { return ReadFileOrEmpty(err_); }

 private:
  std::string out_;
  std::string err_;
  pid_t pid_ = -1;
};

// Until `path` exists (a job's trace), at most kQueueWaitS.
bool WaitForFile(const std::string& path) {
  const auto start = std::chrono::steady_clock::now();
  while (access(path.c_str(), F_OK) != 0) {
    if (SecondsSince(start) > kQueueWaitS) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return true;
}

// --- Queue client commands: 0, 2, 15, 16 ---------------------------------------

TEST(QueueClientE2e, DoneBadCommandLineUnreachableAndRefused) {
  QueueServer q("queue-two-free.json");
  ASSERT_TRUE(q.Start());
  RunResult r = q.Gw({"queue"});
  EXPECT_EQ(r.exit_code, 0) << Trace(r);
  r = q.Gw({"run", "--gpus", "two", "--", "/bin/true"});
  EXPECT_EQ(r.exit_code, kExitUsage) << Trace(r);
  r = q.Gw({"run", "--wait", "--detach", "--", "/bin/true"});
  EXPECT_EQ(r.exit_code, kExitUsage) << Trace(r);
  r = q.Gw({"cancel", "9999"});
  EXPECT_EQ(r.exit_code, kExitRefused) << Trace(r);
  EXPECT_TRUE(Contains(r.err, "9999")) << Trace(r);
  const auto id = q.Submit({"--gpus", "0", "--", "/bin/true"});
  ASSERT_TRUE(id);
  q.WaitForEnd(*id);
  r = q.Gw({"hold", std::to_string(*id)});
  EXPECT_EQ(r.exit_code, kExitRefused) << Trace(r);

  RunOptions o = q.ClientOptions();
  r = RunProcess({GpuwardenBinary(), "--socket", q.dir() + "/nobody.sock", "queue"}, o);
  EXPECT_EQ(r.exit_code, kExitNoDaemon) << Trace(r);
  EXPECT_TRUE(Contains(r.err, "cannot reach gpuwardend")) << Trace(r);
  r = RunProcess(
      {GpuwardenBinary(), "--socket", q.dir() + "/nobody.sock", "run", "--", "/bin/true"}, o);
  EXPECT_EQ(r.exit_code, kExitNoDaemon) << Trace(r);
}

// --- 18: the daemon could not store the request --------------------------------

// The state directory on a small tmpfs that the test fills: a submit is
// refused with 18 and the store's reason; nothing is acknowledged.
TEST(QueueClientE2e, AFullDiskRefusesTheSubmitWith18) {
  QueueServer q("queue-two-free.json");
  mkdir(q.state_dir().c_str(), 0700);
  if (mount("tmpfs", q.state_dir().c_str(), "tmpfs", 0, "size=4m,mode=0700") != 0) {
    GTEST_SKIP() << "cannot mount a tmpfs here (needs root): " << std::strerror(errno);
  }
  struct Unmount {
    QueueServer& q;
    ~Unmount() {
      q.Stop();
      q.KillLeftovers();
      umount2(q.state_dir().c_str(), MNT_DETACH);
    }
  } unmount{q};
  ASSERT_TRUE(q.Start());
  const auto before = q.Submit({"--gpus", "0", "--window", ClosedWindow(), "--", "/bin/true"});
  ASSERT_TRUE(before);
  // Fill what is left.
  {
    const int fd = open((q.state_dir() + "/fill").c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
    ASSERT_GE(fd, 0);
    const std::string block(65536, 'x');
    while (write(fd, block.data(), block.size()) > 0) {
    }
    const std::string small(512, 'x');
    while (write(fd, small.data(), small.size()) > 0) {
    }
    close(fd);
  }
  // SQLite's WAL reuses the room it has: a few submits may still fit.
  RunResult r;
  int accepted = 0;
  for (int i = 0; i < 200; ++i) {
    r = q.Gw({"run", "--detach", "--gpus", "0", "--window", ClosedWindow(), "--", "/bin/true"});
    if (r.exit_code != 0) break;
    ++accepted;
  }
  EXPECT_EQ(r.exit_code, kExitStorage) << "after " << accepted << " accepted\n" << Trace(r);
  EXPECT_TRUE(r.out.empty()) << Trace(r);  // No job id: nothing acknowledged.
  EXPECT_FALSE(r.err.empty()) << Trace(r);
}

// --- 19: can never run here -----------------------------------------------------

TEST(QueueClientE2e, ACommandThatDoesNotExistIsRefusedAtSubmit) {
  QueueServer q("queue-two-free.json");
  ASSERT_TRUE(q.Start());
  RunResult r = q.Gw({"run", "--wait", "--", "/no/such/cmd"});
  EXPECT_EQ(r.exit_code, kExitUnsatisfiable) << Trace(r);
  EXPECT_TRUE(Contains(r.err, "/no/such/cmd: no such file")) << Trace(r);
  r = q.Gw({"run", "--detach", "--", "gw-no-such-command", "--flag"});
  EXPECT_EQ(r.exit_code, kExitUnsatisfiable) << Trace(r);
  EXPECT_TRUE(Contains(r.err, "gw-no-such-command: no such command in PATH")) << Trace(r);
  // Found through the job's own PATH, as the supervisor looks.
  RunOptions o = q.ClientOptions();
  o.env["PATH"] = "/nonexistent:/bin:/usr/bin";
  r = q.Gw({"run", "--wait", "--gpus", "0", "--", "true"}, o);
  EXPECT_EQ(r.exit_code, 0) << Trace(r);
  // Not executable (no x bit: refused to root as well).
  const std::string script = q.mark() + "/not-executable.sh";
  FILE* f = std::fopen(script.c_str(), "w");
  ASSERT_NE(f, nullptr);
  std::fputs("#!/bin/sh\nexit 0\n", f);
  std::fclose(f);
  chmod(script.c_str(), 0644);
  r = q.Gw({"run", "--detach", "--", script});
  EXPECT_EQ(r.exit_code, kExitUnsatisfiable) << Trace(r);
  EXPECT_TRUE(Contains(r.err, "not executable")) << Trace(r);
  // Nothing was queued by any of these.
  json jobs = q.Jobs();
  ASSERT_TRUE(jobs.is_array());
  EXPECT_EQ(jobs.size(), 1u) << jobs.dump(2);
}

// A daemon that has just started answers once its first look at the GPUs is
// in, so a submit sent the moment its socket exists is still checked against
// them. init-hang.json: nvmlInit takes 60 s, scaled here to 0.6 s (under the
// look's 2-s deadline); two 80 GiB A100s.
TEST(QueueClientE2e, ASubmitAtStartWaitsForTheFirstLookAndIsChecked) {
  QueueServer q("init-hang.json");
  q.extra_env["GPUWARDEN_SIM_BLOCK_SCALE"] = "0.01";
  ASSERT_TRUE(q.Start(/*answering=*/false));
  RunResult r = q.Gw({"run", "--detach", "--gpus", "3", "--", "/bin/true"});
  EXPECT_EQ(r.exit_code, kExitUnsatisfiable) << Trace(r);
  EXPECT_TRUE(Contains(r.err, "--gpus 3: this server has 2 GPUs")) << Trace(r);
}

// The daemon's admission (queue/admission.h, called at submit): more GPUs
// than the server has, more memory than its GPUs have, --after a job that
// does not exist. queue-two-free.json: two 80 GiB GPUs.
TEST(QueueClientE2e, WhatCanNeverRunIsRefusedAtSubmitNamingWhy) {
  QueueServer q("queue-two-free.json");
  ASSERT_TRUE(q.Start());
  RunResult r = q.Gw({"run", "--detach", "--gpus", "3", "--", "/bin/true"});
  EXPECT_EQ(r.exit_code, kExitUnsatisfiable) << Trace(r);
  EXPECT_TRUE(Contains(r.err, "--gpus 3: this server has 2 GPUs")) << Trace(r);
  r = q.Gw({"run", "--detach", "--vram", "100G", "--", "/bin/true"});
  EXPECT_EQ(r.exit_code, kExitUnsatisfiable) << Trace(r);
  EXPECT_TRUE(Contains(r.err, "--vram 100 GiB: no GPU here has that much")) << Trace(r);
  r = q.Gw({"run", "--detach", "--after", "9999", "--", "/bin/true"});
  EXPECT_EQ(r.exit_code, kExitUnsatisfiable) << Trace(r);
  EXPECT_TRUE(Contains(r.err, "--after 9999: no such job")) << Trace(r);
  json jobs = q.Jobs();
  ASSERT_TRUE(jobs.is_array());
  EXPECT_TRUE(jobs.empty()) << jobs.dump(2);
}

// --- run --wait: how the job ended, and one line saying so ----------------------

TEST(QueueClientE2e, RunWaitExitsWithTheJobsOwnStatusOrSignal) {
  QueueServer q("queue-two-free.json");
  ASSERT_TRUE(q.Start());
  RunResult r = q.Gw({"run", "--wait", "--gpus", "0", "--", "/bin/sh", "-c", "exit 3"});
  EXPECT_EQ(r.exit_code, 3) << Trace(r);
  EXPECT_TRUE(Contains(r.err, "exited with status 3")) << Trace(r);
  r = q.Gw({"run", "--wait", "--gpus", "0", "--", "/bin/sh", "-c", "kill -KILL $$"});
  EXPECT_EQ(r.exit_code, 128 + SIGKILL) << Trace(r);
  EXPECT_TRUE(Contains(r.err, "was killed by signal 9 (SIGKILL)")) << Trace(r);
  r = q.Gw({"run", "--wait", "--gpus", "0", "--", "/bin/true"});
  EXPECT_EQ(r.exit_code, 0) << Trace(r);
  EXPECT_TRUE(Contains(r.err, "succeeded")) << Trace(r);
}

TEST(QueueClientE2e, RunWaitSaysTheJobStoppedAtItsTimeLimit) {
  QueueServer q("queue-two-free.json");
  ASSERT_TRUE(q.Start());
  RunResult r =
      q.Gw({"run", "--wait", "--gpus", "0", "--time-limit", "1s", "--", "/bin/sleep", "60"});
  EXPECT_EQ(r.exit_code, 1) << Trace(r);
  EXPECT_TRUE(Contains(r.err, "stopped at its time limit (1s)")) << Trace(r);
}

// `cancel` from another shell: 1 (not 143), and it says so; `cancel` itself
// says the running job is being stopped, not "running".
TEST(QueueClientE2e, CancelFromAnotherShellEndsRunWaitWith1) {
  QueueServer q("queue-two-free.json");
  ASSERT_TRUE(q.Start());
  BackgroundClient waiter(q, {"run", "--wait", "--gpus", "0", "--", "/bin/sh", "-c",
                              "touch \"$MARK/started\"; exec sleep 60"});
  ASSERT_TRUE(WaitForFile(q.mark() + "/started")) << waiter.Err();
  json jobs = q.Jobs();
  ASSERT_TRUE(jobs.is_array() && jobs.size() == 1) << jobs.dump(2);
  const std::string id = std::to_string(jobs[0]["id"].get<int64_t>());
  RunResult c = q.Gw({"cancel", id});
  EXPECT_EQ(c.exit_code, 0) << Trace(c);
  EXPECT_TRUE(Contains(c.out, "job " + id + ": stopping (SIGTERM, then SIGKILL after")) << Trace(c);
  const auto code = waiter.Wait(kQueueWaitS);
  ASSERT_TRUE(code) << waiter.Err();
  EXPECT_EQ(*code, 1) << waiter.Err();
  EXPECT_TRUE(Contains(waiter.Err(), "job " + id + " was cancelled")) << waiter.Err();
}

// Ctrl-C on a job that traps SIGTERM and exits 5: the job is cancelled, and
// run --wait exits 130 once it ended (5 was the bug).
TEST(QueueClientE2e, CtrlCCancelsTheJobAndExits130) {
  QueueServer q("queue-two-free.json");
  ASSERT_TRUE(q.Start());
  BackgroundClient waiter(q, {"run", "--wait", "--gpus", "0", "--", "/bin/sh", "-c",
                              "trap 'exit 5' TERM; touch \"$MARK/trapping\"; "
                              "while :; do sleep 0.1; done"});
  ASSERT_TRUE(WaitForFile(q.mark() + "/trapping")) << waiter.Err();
  waiter.Signal(SIGINT);
  const auto code = waiter.Wait(kQueueWaitS);
  ASSERT_TRUE(code) << waiter.Err();
  EXPECT_EQ(*code, 130) << waiter.Err();
  EXPECT_TRUE(Contains(waiter.Err(), "was cancelled")) << waiter.Err();
  json jobs = q.Jobs();
  ASSERT_TRUE(jobs.is_array() && jobs.size() == 1) << jobs.dump(2);
  EXPECT_EQ(jobs[0]["state"], "cancelled") << jobs.dump(2);
  EXPECT_EQ(jobs[0]["exit_code"], 5) << jobs.dump(2);
}

// --- One meaning per column ------------------------------------------------------

TEST(QueueClientE2e, ColumnsMeanOneThing) {
  QueueServer q("queue-two-free.json");
  ASSERT_TRUE(q.Start());
  const auto run =
      q.Submit({"--gpus", "1", "--", "/bin/sh", "-c", "touch \"$MARK/run\"; exec sleep 60"});
  ASSERT_TRUE(run);
  const auto wait = q.Submit({"--gpus", "2", "--window", ClosedWindow(), "--", "/bin/true"});
  ASSERT_TRUE(wait);
  ASSERT_TRUE(WaitForFile(q.mark() + "/run"));
  // WAITED is submit to start: it does not grow while the job runs.
  std::this_thread::sleep_for(std::chrono::milliseconds(2500));
  RunResult r = q.Gw({"queue"});
  ASSERT_EQ(r.exit_code, 0) << Trace(r);
  std::string running_row;
  std::string waiting_row;
  for (size_t at = 0; at < r.out.size();) {
    size_t nl = r.out.find('\n', at);
    if (nl == std::string::npos) nl = r.out.size();
    const std::string line = r.out.substr(at, nl - at);
    if (line.rfind(std::to_string(*run) + " ", 0) == 0) running_row = line;
    if (line.rfind(std::to_string(*wait) + " ", 0) == 0) waiting_row = line;
    at = nl + 1;
  }
  ASSERT_FALSE(running_row.empty()) << r.out;
  // JOB POS USER STATE GPUS VRAM WAITED START NAME
  char user[64], state[64], gpus[16], vram1[16], vram2[16], waited[16];
  ASSERT_EQ(std::sscanf(running_row.c_str(), "%*s %*s %63s %63s %15s %15s %15s %15s", user, state,
                        gpus, vram1, vram2, waited),
            6)
      << running_row;
  EXPECT_STREQ(state, "running") << running_row;
  EXPECT_STREQ(gpus, "1") << running_row;  // A count.
  EXPECT_STREQ(vram1, "whole") << running_row;
  EXPECT_STREQ(vram2, "GPU") << running_row;
  EXPECT_TRUE(std::string(waited) == "0s" || std::string(waited) == "1s") << running_row;
  EXPECT_TRUE(Contains(waiting_row, " 2 ")) << waiting_row;  // A count too.

  // `jobs`: GPUS a count, GPU IDS the indices.
  r = q.Gw({"jobs"});
  ASSERT_EQ(r.exit_code, 0) << Trace(r);
  EXPECT_TRUE(Contains(r.out, "GPUS  GPU IDS")) << r.out;
  // `jobs ID` says what a job without --vram needs.
  r = q.Gw({"jobs", std::to_string(*run)});
  EXPECT_TRUE(Contains(r.out, "a whole GPU each (no other queue job on it, at least 90 % free)"))
      << r.out;
  // JSON: how a running job ended is unknown (null), not "".
  json job = q.Job(*run);
  EXPECT_TRUE(job["end_reason"].is_null()) << job.dump(2);
  EXPECT_TRUE(job["end_detail"].is_null()) << job.dump(2);
  q.Gw({"cancel", std::to_string(*run), std::to_string(*wait)});
  q.WaitForEnd(*run);
}

}  // namespace
}  // namespace gw::test
