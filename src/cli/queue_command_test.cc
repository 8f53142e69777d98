#include "cli/queue_command.h"

#include <gtest/gtest.h>
#include <signal.h>

#include "cli/exit_codes.h"

namespace gw::cli {
namespace {

using nlohmann::json;

json Ended(const char* state, const char* reason) {
  return {{"id", 26},         {"state", state},         {"end_reason", reason},
          {"end_detail", ""}, {"exit_code", nullptr},   {"exit_signal", nullptr},
          {"gpus", 1},        {"time_limit_s", nullptr}};
}

// The table of docs/queue.md, row by row.
TEST(DescribeJobEnd, TheJobsOwnStatusWhenItExited) {
  json j = Ended("succeeded", "exit");
  j["exit_code"] = 0;
  EXPECT_EQ(DescribeJobEnd(j, 0).exit_code, 0);
  EXPECT_EQ(DescribeJobEnd(j, 0).line, "job 26 succeeded");
  j = Ended("failed", "exit");
  j["exit_code"] = 3;
  EXPECT_EQ(DescribeJobEnd(j, 0).exit_code, 3);
  EXPECT_EQ(DescribeJobEnd(j, 0).line, "job 26 exited with status 3");
  j = Ended("failed", "signal");
  j["exit_signal"] = 9;
  EXPECT_EQ(DescribeJobEnd(j, 0).exit_code, 137);
  EXPECT_EQ(DescribeJobEnd(j, 0).line, "job 26 was killed by signal 9 (SIGKILL)");
}

TEST(DescribeJobEnd, OneWhenItEndedWithoutAStatusOfItsOwn) {
  // Cancelled from another shell: the job died of the SIGTERM it was sent
  // (143 was the bug), or trapped it and exited 5.
  json j = Ended("cancelled", "cancelled");
  j["exit_signal"] = SIGTERM;
  EXPECT_EQ(DescribeJobEnd(j, 0).exit_code, 1);
  EXPECT_EQ(DescribeJobEnd(j, 0).line, "job 26 was cancelled");
  j = Ended("cancelled", "cancelled");
  j["end_detail"] = "cancelled by alice before it started";
  EXPECT_EQ(DescribeJobEnd(j, 0).line,
            "job 26 was cancelled: cancelled by alice before it started");

  j = Ended("failed", "time_limit");
  j["exit_signal"] = SIGTERM;
  j["time_limit_s"] = 3600;
  EXPECT_EQ(DescribeJobEnd(j, 0).exit_code, 1);
  EXPECT_EQ(DescribeJobEnd(j, 0).line, "job 26 stopped at its time limit (1h)");

  j = Ended("failed", "vram_limit");
  j["end_detail"] = "stopped: used more GPU memory than its --vram 20 GiB allows";
  EXPECT_EQ(DescribeJobEnd(j, 0).exit_code, 1);
  EXPECT_EQ(DescribeJobEnd(j, 0).line,
            "job 26 stopped: used more GPU memory than its --vram 20 GiB allows");

  j = Ended("failed", "start_failed");
  j["exit_code"] = 127;
  j["end_detail"] = "exec ./x: Permission denied";
  EXPECT_EQ(DescribeJobEnd(j, 0).exit_code, 1);
  EXPECT_EQ(DescribeJobEnd(j, 0).line, "job 26 failed to start: exec ./x: Permission denied");

  j = Ended("failed", "dependency");
  j["end_detail"] = "job 25 failed";
  EXPECT_EQ(DescribeJobEnd(j, 0).exit_code, 1);
  EXPECT_EQ(DescribeJobEnd(j, 0).line, "job 26 did not run: job 25 failed");

  j = Ended("lost", "lost");
  EXPECT_EQ(DescribeJobEnd(j, 0).exit_code, 1);
  EXPECT_EQ(DescribeJobEnd(j, 0).line, "job 26 was lost");
}

// Ctrl-C cancels the job; once it ended, 130 whatever the job did (it may
// trap SIGTERM and exit 5: that was the bug).
TEST(DescribeJobEnd, InterruptedIs128PlusTheSignal) {
  json j = Ended("cancelled", "cancelled");
  j["exit_code"] = 5;
  EXPECT_EQ(DescribeJobEnd(j, SIGINT).exit_code, 130);
  EXPECT_EQ(DescribeJobEnd(j, SIGINT).line, "job 26 was cancelled");
  EXPECT_EQ(DescribeJobEnd(Ended("succeeded", "exit"), SIGTERM).exit_code, 143);
}

TEST(ExitCodeForError, EachRefusalHasItsCode) {
  EXPECT_EQ(ExitCodeForError({"no_daemon", "x"}), kExitNoDaemon);
  EXPECT_EQ(ExitCodeForError({"disconnected", "x"}), kExitNoDaemon);
  EXPECT_EQ(ExitCodeForError({"no_reply", "x"}), kExitNoDaemon);
  EXPECT_EQ(ExitCodeForError({"busy", "x"}), kExitNoDaemon);
  EXPECT_EQ(ExitCodeForError({"bad_request", "x"}), kExitUsage);
  EXPECT_EQ(ExitCodeForError({"storage", "x"}), kExitStorageRefused);
  EXPECT_EQ(ExitCodeForError({"store", "x"}), kExitStorageRefused);
  EXPECT_EQ(ExitCodeForError({"unsatisfiable", "x"}), kExitUnsatisfiable);
  for (const char* code : {"not_found", "forbidden", "state"}) {
    EXPECT_EQ(ExitCodeForError({code, "x"}), kExitRefusedByDaemon) << code;
  }
  EXPECT_EQ(kExitStorageRefused, 18);
  EXPECT_EQ(kExitUnsatisfiable, 19);
}

TEST(ControlResultText, ACancelledRunningJobIsStopping) {
  EXPECT_EQ(ControlResultText("cancel", {{"job", 26}, {"state", "running"}, {"grace_s", 10}}),
            "stopping (SIGTERM, then SIGKILL after 10s)");
  EXPECT_EQ(ControlResultText("cancel", {{"job", 26}, {"state", "running"}}),
            "stopping (SIGTERM, then SIGKILL after the daemon's --grace)");
  EXPECT_EQ(ControlResultText("cancel", {{"job", 26}, {"state", "cancelled"}}), "cancelled");
  EXPECT_EQ(ControlResultText("hold", {{"job", 26}, {"state", "held"}}), "held");
  EXPECT_EQ(ControlResultText("release", {{"job", 26}, {"state", "queued"}}), "released (queued)");
}

}  // namespace
}  // namespace gw::cli
