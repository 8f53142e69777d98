// RunCommand on real programs: what they print, how they end, deadlines,
// output bounds and the child's environment.
#include "os/run_command.h"

#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <cstdlib>
#include <string>

namespace gw::os {
namespace {

// The test programs are small /bin/sh scripts: the shell is the program
// under test's stand-in here, not a way to run gpuwarden's commands.
Result<CommandOutput> Sh(const std::string& script, CommandOptions options = {}) {
  return RunCommand({"/bin/sh", "-c", script}, options);
}

TEST(RunCommand, CollectsBothStreamsAndTheExitStatus) {
  Result<CommandOutput> r = Sh("echo out; echo err >&2; exit 3");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->out, "out\n");
  EXPECT_EQ(r->err, "err\n");
  ASSERT_TRUE(r->exit_code.has_value());
  EXPECT_EQ(*r->exit_code, 3);
  EXPECT_FALSE(r->signal.has_value());
  EXPECT_FALSE(r->succeeded());
  EXPECT_EQ(r->Describe(), "exited with status 3: err");
}

TEST(RunCommand, AFailureThatSaysWhyOnStdoutIsDescribedByIt) {
  Result<CommandOutput> r = Sh("echo 'Node n9 not found'; exit 1");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->Describe(), "exited with status 1: Node n9 not found");
  // A success's output is its answer, not a reason.
  r = Sh("echo fine");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->Describe(), "exited with status 0");
}

TEST(RunCommand, ArgumentsReachTheProgramUnsplitAndUnexpanded) {
  Result<CommandOutput> r = RunCommand({"/bin/echo", "a b", "$HOME", "*"});
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_TRUE(r->succeeded());
  EXPECT_EQ(r->out, "a b $HOME *\n");
}

TEST(RunCommand, ANameIsLookedUpInPath) {
  Result<CommandOutput> r = RunCommand({"true"});
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_TRUE(r->succeeded());
}

TEST(RunCommand, AMissingProgramIsNotFound) {
  Result<CommandOutput> r = RunCommand({"/no/such/program"});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, "not_found");
  EXPECT_NE(r.error().message.find("/no/such/program"), std::string::npos);
}

TEST(RunCommand, AProgramPastItsDeadlineIsKilledAndNamed) {
  CommandOptions o;
  o.timeout_ms = 200;
  const auto start = std::chrono::steady_clock::now();
  Result<CommandOutput> r = Sh("exec sleep 30", o);
  const double took =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, "timeout");
  EXPECT_NE(r.error().message.find("200 ms"), std::string::npos) << r.error().message;
  EXPECT_LT(took, 10.0);
}

TEST(RunCommand, OutputPastTheBoundIsAnErrorNotACutText) {
  CommandOptions o;
  o.max_output_bytes = 1000;
  Result<CommandOutput> r = Sh("head -c 5000 /dev/zero", o);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, "too_large");
}

TEST(RunCommand, ADeathBySignalIsReportedAsSuch) {
  Result<CommandOutput> r = Sh("kill -TERM $$");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_FALSE(r->exit_code.has_value());
  ASSERT_TRUE(r->signal.has_value());
  EXPECT_EQ(*r->signal, SIGTERM);
  EXPECT_EQ(r->Describe(), "was killed by signal 15");
}

TEST(RunCommand, TheEnvironmentIsOursWithTheChangesAsked) {
  ASSERT_EQ(setenv("GW_RUN_COMMAND_KEPT", "kept", 1), 0);
  ASSERT_EQ(setenv("GW_RUN_COMMAND_GONE", "gone", 1), 0);
  CommandOptions o;
  o.env["GW_RUN_COMMAND_SET"] = "set";
  o.env["GW_RUN_COMMAND_GONE"] = std::nullopt;
  Result<CommandOutput> r =
      Sh("echo \"$GW_RUN_COMMAND_KEPT ${GW_RUN_COMMAND_GONE-unset} $GW_RUN_COMMAND_SET\"", o);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->out, "kept unset set\n");
}

TEST(RunCommand, StdinIsEmpty) {
  Result<CommandOutput> r = Sh("wc -c");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->out, "0\n");
}

}  // namespace
}  // namespace gw::os
