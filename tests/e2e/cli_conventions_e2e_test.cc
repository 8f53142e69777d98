// The command-line conventions of docs/cli.md, as a table run against the
// real binaries: every time flag takes 30s/5m/2h/1d or plain seconds and
// refuses anything else in one line naming the flag and the forms; choices
// and process ids name what they accept; an unknown command is named with
// the nearest one; global options work after the command; a process that
// does not exist is an error.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "e2e/e2e_util.h"
#include "e2e/run_process.h"

namespace gw::test {
namespace {

std::string Scenario() { return ScenarioPath("vram-exhausted.json"); }

std::vector<std::string> Daemon(std::vector<std::string> args) {
  std::string bin = GpuwardenBinary();
  bin = bin.substr(0, bin.rfind('/')) + "/gpuwardend";
  args.insert(args.begin(), bin);
  return args;
}

RunOptions Quick() {
  RunOptions o;
  o.timeout_s = 30;
  o.env["GPUWARDEN_SOCKET"] = "/nonexistent/gpuwardend.sock";
  return o;
}

struct Refused {
  std::vector<std::string> argv;
  std::string flag;     // named first on the line
  std::string accepts;  // what it says is accepted
};

// Usage errors: exit 2, one line on stderr, naming the flag and the forms it
// takes; nothing on stdout.
TEST(CliConventionsE2e, EveryBadFlagValueIsOneLineNamingTheFlagAndWhatItTakes) {
  const std::string kDuration = "is not a duration: 30s, 5m, 2h, 1d or plain seconds";
  const std::vector<Refused> table = {
      {Gpuwarden({"--timeout", "abc", "status"}), "--timeout", kDuration},
      {Gpuwarden({"--timeout", "11m", "status"}), "--timeout", "is out of range: 0.05s to 10m"},
      {Gpuwarden({"why", "--window", "2x"}), "--window", kDuration},
      {Gpuwarden({"why", "--idle-for", "soon"}), "--idle-for", kDuration},
      {Gpuwarden({"health", "--window", "11m"}), "--window", "is out of range: 0s to 10m"},
      {Gpuwarden({"health", "--window", "-1"}), "--window", kDuration},
      {Gpuwarden({"health", "--slurm-timeout", "forever"}), "--slurm-timeout", kDuration},
      {Gpuwarden({"clean", "--window", "abc"}), "--window", kDuration},
      {Gpuwarden({"clean", "--idle-for", "ten"}), "--idle-for", kDuration},
      {Gpuwarden({"clean", "--grace", "1y"}), "--grace", kDuration},
      {Gpuwarden({"kill", "--settle", "x", "1"}), "--settle", kDuration},
      {Gpuwarden({"watch", "--interval", "abc"}), "--interval", kDuration},
      {Gpuwarden({"watch", "--history", "long"}), "--history", kDuration},
      {Gpuwarden({"cluster", "--slurm-timeout", "0"}), "--slurm-timeout", "is out of range"},
      {Gpuwarden({"run", "--time-limit", "abc", "--", "true"}), "--time-limit", kDuration},
      {Gpuwarden({"run", "--slurm", "--slurm-timeout", "z", "--", "true"}), "--slurm-timeout",
       kDuration},
      {Gpuwarden({"queue", "--slurm", "--slurm-timeout", "z"}), "--slurm-timeout", kDuration},
      {Gpuwarden({"--color", "purple", "status"}), "--color",
       "is not one of auto, always or never"},
      {Gpuwarden({"health", "--on-degraded", "sometimes"}), "--on-degraded",
       "is not one of ignore or drain"},
      {Gpuwarden({"kill", "abc"}), "pid", "\"abc\" is not a process id"},
      {Gpuwarden({"clean", "--pid", "0"}), "--pid", "\"0\" is not a process id"},
      {Daemon({"--grace", "abc"}), "--grace", kDuration},
      {Daemon({"--timeout", "abc"}), "--timeout", kDuration},
      {Daemon({"--vram-guard", "maybe"}), "--vram-guard", "is not one of stop or warn"},
  };
  for (const Refused& row : table) {
    std::string cmd;
    for (size_t i = 1; i < row.argv.size(); ++i) cmd += row.argv[i] + " ";
    const RunResult r = RunProcess(row.argv, Quick());
    EXPECT_EQ(r.exit_code, 2) << cmd << "\n" << r.out << r.err;
    EXPECT_EQ(CountLines(r.err), 1u) << cmd << "\n" << r.err;
    EXPECT_NE(r.err.find(row.flag + ": "), std::string::npos) << cmd << "\n" << r.err;
    EXPECT_NE(r.err.find(row.accepts), std::string::npos) << cmd << "\n" << r.err;
    EXPECT_EQ(r.out, "") << cmd;
  }
}

// The same flags take every form of a duration: none of these is a usage
// error (each runs against the simulator, or fails later for another reason
// than its command line: no daemon, no Slurm).
TEST(CliConventionsE2e, EveryTimeFlagTakesSecondsMinutesHoursAndDays) {
  const std::string s = Scenario();
  const std::vector<std::vector<std::string>> table = {
      Gpuwarden({"--timeout", "2s", "status", "--sim", s}),
      Gpuwarden({"--timeout", "1.5", "status", "--sim", s}),
      Gpuwarden({"why", "--now", "--no-kernel-log", "--idle-for", "30m", "--sim", s}),
      Gpuwarden({"why", "--now", "--no-kernel-log", "--idle-for", "1d", "--sim", s}),
      Gpuwarden({"why", "--window", "0.2s", "--no-kernel-log", "--sim", s}),
      Gpuwarden({"health", "--window", "0.2", "--no-kernel-log", "--sim", s}),
      Gpuwarden({"clean", "--now", "--dry-run", "--idle-for", "2h", "--grace", "5s", "--settle",
                 "1m", "--sim", s}),
      Gpuwarden({"clean", "--window", "0.1s", "--dry-run", "--sim", s}),
      Gpuwarden({"run", "--time-limit", "90m", "--", "true"}),
      Gpuwarden({"run", "--time-limit", "3600", "--", "true"}),
  };
  for (const auto& argv : table) {
    std::string cmd;
    for (size_t i = 1; i < argv.size(); ++i) cmd += argv[i] + " ";
    const RunResult r = RunProcess(argv, Quick());
    EXPECT_NE(r.exit_code, 2) << cmd << "\n" << r.out << r.err;
    EXPECT_LT(r.exit_code, 128) << cmd << "\n" << r.err;
    EXPECT_EQ(r.err.find("is not a duration"), std::string::npos) << cmd << "\n" << r.err;
  }
}

TEST(CliConventionsE2e, AnUnknownCommandIsNamedWithTheNearestOne) {
  RunResult r = RunProcess(Gpuwarden({"stauts"}), Quick());
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(CountLines(r.err), 1u) << r.err;
  EXPECT_NE(r.err.find("\"stauts\" is not a command; did you mean \"status\"?"), std::string::npos)
      << r.err;
  r = RunProcess(Gpuwarden({"--sim", Scenario(), "clen"}), Quick());
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("did you mean \"clean\"?"), std::string::npos) << r.err;
  // Nothing near: the commands are listed.
  r = RunProcess(Gpuwarden({"frobnicate"}), Quick());
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(CountLines(r.err), 1u) << r.err;
  EXPECT_NE(r.err.find("\"frobnicate\" is not a command (commands: "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("status"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("run"), std::string::npos) << r.err;
}

TEST(CliConventionsE2e, GlobalOptionsWorkAfterTheCommandToo) {
  const std::string s = Scenario();
  RunResult before = RunProcess(Gpuwarden({"--sim", s, "--color", "never", "status"}), Quick());
  RunResult after = RunProcess(Gpuwarden({"status", "--sim", s, "--color", "never"}), Quick());
  ASSERT_EQ(before.exit_code, 0) << before.err;
  ASSERT_EQ(after.exit_code, 0) << after.err;
  EXPECT_NE(after.out.find("SIMULATED server"), std::string::npos) << after.out;
  // Same server, same GPUs (the time in the header line aside).
  EXPECT_EQ(CountLines(before.out), CountLines(after.out));
  RunResult why = RunProcess(
      Gpuwarden({"why", "--now", "--no-kernel-log", "--sim", s, "--timeout", "3s"}), Quick());
  EXPECT_NE(why.exit_code, 2) << why.err;
  // The queue's front takes them after its commands too.
  RunResult queue = RunProcess(Gpuwarden({"queue", "--socket", "/nonexistent/x.sock"}), Quick());
  EXPECT_EQ(queue.exit_code, 15) << queue.err;
  EXPECT_NE(queue.err.find("/nonexistent/x.sock"), std::string::npos) << queue.err;
}

TEST(CliConventionsE2e, KillingAProcessThatDoesNotExistIsAnError) {
  // Above the kernel's default pid_max on 64-bit (4194304) and below the
  // largest id: no process has it.
  RunResult r =
      RunProcess(Gpuwarden({"kill", "--yes", "2147483000", "--sim", Scenario()}), Quick());
  EXPECT_EQ(r.exit_code, 8) << r.out << r.err;
  EXPECT_NE((r.out + r.err).find("no such process"), std::string::npos) << r.out << r.err;
}

}  // namespace
}  // namespace gw::test
