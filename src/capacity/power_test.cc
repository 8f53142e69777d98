#include "capacity/power.h"

#include <gtest/gtest.h>

#include "os/fake_command_runner.h"

namespace gw::capacity {
namespace {

std::string UsageError(const std::vector<std::string>& argv) {
  Result<PowerArgs> a = ParsePowerArgs(argv);
  if (a.ok()) return "(parsed)";
  EXPECT_EQ(a.error().code, "usage");
  return a.error().message;
}

TEST(PowerTest, ArgumentsAreCheckedAndTheTemplateMustBeFilledIn) {
  Result<PowerArgs> a =
      ParsePowerArgs({"resume", "gpu[1-2]", "--timeout", "2m", "--parallel", "4", "--log",
                      "/tmp/p.log", "--", "/usr/bin/start", "--name={node}"});
  ASSERT_TRUE(a.ok()) << a.error().message;
  EXPECT_EQ(a->timeout_s, 120);
  EXPECT_EQ(a->parallel, 4);
  EXPECT_EQ(a->log_path, "/tmp/p.log");
  EXPECT_EQ(UsageError({"start", "n1", "--", "/bin/x", "{node}"}),
            "the first argument must be resume or suspend");
  EXPECT_EQ(UsageError({"resume", "n1", "--", "FILL-IN-the-command-that-starts", "{node}"}),
            "the resume command is not filled in: edit the template "
            "(FILL-IN-the-command-that-starts, docs/capacity.md)");
  EXPECT_EQ(UsageError({"suspend", "n1", "--", "gcloud", "stop", "{node}"}),
            "the command must be an absolute path (Slurm runs suspend with no PATH): \"gcloud\"");
  EXPECT_EQ(UsageError({"suspend", "n1", "--", "/usr/bin/stop-all"}),
            "the command must name the node: put {node} where it goes");
  EXPECT_EQ(UsageError({"suspend", "n1", "--timeout", "soon", "--", "/bin/x", "{node}"}),
            "--timeout: \"soon\" is not a duration: 30s, 5m, 2h or plain seconds");
  EXPECT_EQ(UsageError({"suspend", "n1", "--timeout", "100000d", "--", "/bin/x", "{node}"}),
            "--timeout: \"100000d\" is outside 1 ms to 1d");
  EXPECT_EQ(UsageError({"suspend", "n1", "--timeout", "0.0001", "--", "/bin/x", "{node}"}),
            "--timeout: \"0.0001\" is outside 1 ms to 1d");
  EXPECT_TRUE(ParsePowerArgs({"suspend", "n1", "--timeout", "1d", "--", "/bin/x", "{node}"}).ok());
  EXPECT_EQ(UsageError({"suspend", "n1", "/bin/x", "{node}"}),
            "unknown option /bin/x "
            "(--timeout, --parallel, --log, "
            "then -- COMMAND)");
  EXPECT_EQ(UsageError({"resume", "n1", "--"}), "the command to run per node must follow \"--\"");
}

TEST(PowerTest, EachNodeOfTheHostlistGetsItsCommand) {
  Result<PowerArgs> a = ParsePowerArgs(
      {"resume", "gpu[1-3,5],cpu-a", "--", "/usr/bin/start", "--zone=z", "node-{node}.{node}"});
  ASSERT_TRUE(a.ok());
  Result<std::vector<NodeCommand>> plan = PlanPower(*a);
  ASSERT_TRUE(plan.ok()) << plan.error().message;
  ASSERT_EQ(plan->size(), 5u);
  EXPECT_EQ((*plan)[3].node, "gpu5");
  EXPECT_EQ((*plan)[3].argv,
            (std::vector<std::string>{"/usr/bin/start", "--zone=z", "node-gpu5.gpu5"}));
  EXPECT_EQ((*plan)[4].node, "cpu-a");

  a->hostlist = "gpu[3-1]";
  EXPECT_EQ(PlanPower(*a).error().code, "usage");
  a->hostlist = "a;rm";
  EXPECT_EQ(PlanPower(*a).error().message, "\"a;rm\" is not a node name");
}

TEST(PowerTest, EveryNodeIsTriedAndOneFailureFailsTheRun) {
  os::FakeCommandRunner runner;
  runner.answers["/usr/bin/start n1"] = {0, "", ""};
  runner.answers["/usr/bin/start n2"] = {3, "", "quota exceeded\n"};
  runner.answers["/usr/bin/start n3"] = {0, "", ""};
  std::vector<std::string> lines;
  const int code =
      RunPower({"resume", "n[1-3]", "--parallel", "2", "--", "/usr/bin/start", "{node}"}, runner,
               [&](const std::string& l) { lines.push_back(l); });
  EXPECT_EQ(code, kPowerExitFailed);
  EXPECT_EQ(runner.ran.size(), 3u);
  ASSERT_EQ(lines.size(), 4u);
  EXPECT_EQ(lines[0], "resume n[1-3]: 3 nodes");
  bool named = false;
  for (const std::string& l : lines) {
    named = named || l.rfind("resume n2: FAILED, exited with status 3: quota exceeded", 0) == 0;
  }
  EXPECT_TRUE(named);

  runner.answers["/usr/bin/start n2"] = {0, "", ""};
  lines.clear();
  EXPECT_EQ(RunPower({"resume", "n[1-3]", "--", "/usr/bin/start", "{node}"}, runner,
                     [&](const std::string& l) { lines.push_back(l); }),
            kPowerExitOk);
  EXPECT_EQ(RunPower({"resume", "n1", "--", "FILL-IN", "{node}"}, runner,
                     [&](const std::string& l) { lines.push_back(l); }),
            kPowerExitUsage);
  EXPECT_EQ(lines.back().rfind("refused: the resume command is not filled in", 0), 0u)
      << lines.back();
}

}  // namespace
}  // namespace gw::capacity
