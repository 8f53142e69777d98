// The command-line conventions of docs/cli.md, as a table run against the
// real binaries: every time flag takes 30s/5m/2h/1d or plain seconds and
// refuses anything else in one line naming the flag and the forms; choices
// and process ids name what they accept; an unknown command is named with
// the nearest one; global options work after the command; a process that
// does not exist is an error.
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "e2e/e2e_util.h"
#include "e2e/run_process.h"
#include "e2e/user_process.h"

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

const std::string kDuration = "is not a duration: 30s, 5m, 2h, 1d or plain seconds";
const std::string kSize = "is not a size: 512M, 20G, 1.5T or plain bytes";

// Every time, size and choice flag of every command refused once; the test
// below checks that no such flag of --help is missing here.
std::vector<Refused> RefusedTable() {
  return {
      {Gpuwarden({"--timeout", "abc", "status"}), "--timeout", kDuration},
      {Gpuwarden({"--timeout", "11m", "status"}), "--timeout", "is out of range: 0.05s to 10m"},
      {Gpuwarden({"why", "--window", "2x"}), "--window", kDuration},
      {Gpuwarden({"why", "--idle-for", "soon"}), "--idle-for", kDuration},
      {Gpuwarden({"why", "--min-age", "old"}), "--min-age", kDuration},
      {Gpuwarden({"health", "--window", "11m"}), "--window", "is out of range: 0s to 10m"},
      {Gpuwarden({"health", "--window", "-1"}), "--window", kDuration},
      {Gpuwarden({"health", "--slurm-timeout", "forever"}), "--slurm-timeout", kDuration},
      {Gpuwarden({"clean", "--window", "abc"}), "--window", kDuration},
      {Gpuwarden({"clean", "--idle-for", "ten"}), "--idle-for", kDuration},
      {Gpuwarden({"clean", "--min-age", "1x"}), "--min-age", kDuration},
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
      {Gpuwarden({"why", "--since", "2x"}), "--since", kDuration},
      {Gpuwarden({"health", "--since", "abc"}), "--since", kDuration},
      {Gpuwarden({"events", "--since", "yesterday"}), "--since", kDuration},
      {Gpuwarden({"history", "--since", "abc"}), "--since", kDuration},
      {Gpuwarden({"usage", "--since", "forever"}), "--since", kDuration},
      {Gpuwarden({"capacity", "--since", "lately"}), "--since", kDuration},
      {Gpuwarden({"capacity", "--slurm", "--slurm-timeout", "z"}), "--slurm-timeout", kDuration},
      {Gpuwarden({"why", "--now", "--no-kernel-log", "--idle-for", "1y", "--sim", Scenario()}),
       "--idle-for", kDuration},
      {Gpuwarden({"cancel", "--slurm", "--slurm-timeout", "z", "1"}), "--slurm-timeout", kDuration},
      {Gpuwarden({"jobs", "--slurm", "--slurm-timeout", "z"}), "--slurm-timeout", kDuration},
      {Gpuwarden({"status", "--slurm-timeout", "z"}), "--slurm-timeout", kDuration},
      {Gpuwarden({"why", "--slurm-timeout", "z"}), "--slurm-timeout", kDuration},
      {Gpuwarden({"watch", "--grace", "z"}), "--grace", kDuration},
      {Gpuwarden({"watch", "--settle", "z"}), "--settle", kDuration},
      {Gpuwarden({"kill", "--grace", "z", "1"}), "--grace", kDuration},
      {Gpuwarden({"clean", "--settle", "z"}), "--settle", kDuration},
      {Gpuwarden({"run", "--vram", "20x", "--", "true"}), "--vram", kSize},
      {Gpuwarden({"clean", "--min-vram", "lots"}), "--min-vram", kSize},
      {Daemon({"--margin", "abc"}), "--margin", kSize},
      {Gpuwarden({"advise", "gpt2", "--task", "sing"}), "--task",
       "is not one of train, finetune, lora, qlora or infer"},
      {Gpuwarden({"advise", "gpt2", "--precision", "fp64"}), "--precision",
       "is not one of fp32, bf16, fp16, fp8, int8 or int4"},
      {Gpuwarden({"advise", "gpt2", "--optimizer", "adam"}), "--optimizer",
       "is not one of adamw, adamw-8bit, sgd or sgd-momentum"},
      {Gpuwarden({"advise", "gpt2", "--attention", "sparse"}), "--attention",
       "is not one of flash or eager"},
      {Gpuwarden({"advise", "gpt2", "--batch", "0"}), "--batch",
       "\"0\" is not a whole number from 1 to 1048576"},
      {Gpuwarden({"advise", "gpt2", "--seq", "2k"}), "--seq", "is not a whole number from 1 to"},
      {Gpuwarden({"advise", "gpt2", "--concurrency", "-1"}), "--concurrency",
       "is not a whole number from 1 to"},
      {Gpuwarden({"advise", "gpt2", "--lora-rank", "0"}), "--lora-rank",
       "is not a whole number from 1 to 65536"},
      {Gpuwarden({"advise", "--params", "lots"}), "--params", "\"lots\" is not a parameter count"},
      {Daemon({"--metrics-process-min", "1q"}), "--metrics-process-min", kSize},
  };
}

// Usage errors: exit 2, one line on stderr, naming the flag and the forms it
// takes; nothing on stdout.
TEST(CliConventionsE2e, EveryBadFlagValueIsOneLineNamingTheFlagAndWhatItTakes) {
  for (const Refused& row : RefusedTable()) {
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
      Gpuwarden({"capacity", "--since", "1w"}),
      Gpuwarden({"capacity", "--since", "2d 4h", "--slurm", "--slurm-timeout", "0.5"}),
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

// The table above covers every flag of a time or a size that --help lists,
// of every command and of gpuwardend: a new one without a row fails here.
TEST(CliConventionsE2e, TheTableCoversEveryTimeAndSizeFlagOfEveryCommand) {
  // "COMMAND FLAG" for each row ("gpuwardend FLAG" for the daemon's, " FLAG"
  // for a global option before the command).
  const std::vector<std::string> commands = {"status", "why",     "health",  "events", "clean",
                                             "kill",   "cluster", "history", "usage",  "capacity",
                                             "advise", "watch",   "run",     "queue",  "jobs",
                                             "cancel", "hold",    "release", "logs"};
  std::set<std::string> covered;
  for (const Refused& row : RefusedTable()) {
    std::string command = row.argv[0].ends_with("gpuwardend") ? "gpuwardend" : "";
    for (size_t i = 1; i < row.argv.size() && command.empty(); ++i) {
      if (std::find(commands.begin(), commands.end(), row.argv[i]) != commands.end()) {
        command = row.argv[i];
      }
    }
    covered.insert(command + " " + row.flag);
  }
  // The flags of a --help text whose value is a DURATION or a SIZE.
  auto typed_flags = [](const std::string& help) {
    std::vector<std::string> flags;
    std::istringstream in(help);
    std::string line;
    while (std::getline(in, line)) {
      if (!line.starts_with("  -")) continue;
      if (line.find(" DURATION") == std::string::npos && line.find(" SIZE") == std::string::npos) {
        continue;
      }
      std::string first = line.substr(2, line.find(' ', 2) - 2);
      flags.push_back(
          first.substr(first.rfind(',') == std::string::npos ? 0 : first.rfind(',') + 1));
    }
    return flags;
  };
  size_t checked = 0;
  for (const std::string& command : commands) {
    const RunResult help = RunProcess(Gpuwarden({command, "--help"}), Quick());
    ASSERT_EQ(help.exit_code, 0) << command;
    for (const std::string& flag : typed_flags(help.out)) {
      ++checked;
      // A global option is covered by any row (it is the same validator).
      if (flag == "--timeout") continue;
      EXPECT_TRUE(covered.count(command + " " + flag))
          << "no row refuses " << command << " " << flag;
    }
  }
  const RunResult daemon = RunProcess(Daemon({"--help"}), Quick());
  ASSERT_EQ(daemon.exit_code, 0);
  for (const std::string& flag : typed_flags(daemon.out)) {
    ++checked;
    EXPECT_TRUE(covered.count("gpuwardend " + flag)) << "no row refuses gpuwardend " << flag;
  }
  EXPECT_GE(checked, 25u);
}

// Display columns of UTF-8 text (every character here is one column wide).
size_t Columns(const std::string& line) {
  size_t n = 0;
  for (unsigned char c : line) n += (c & 0xC0) != 0x80;
  return n;
}

// docs/cli.md, "Output": in a pipe nothing is cut, however long; on a
// terminal of 120 columns (COLUMNS stands in for its width) lines fit it and
// wrap instead of losing the finding codes.
TEST(CliConventionsE2e, OutputIsCutOnlyOnATerminalAndThenWrapped) {
  RunOptions pipe = Quick();
  pipe.env["COLUMNS"] = std::nullopt;
  for (const std::string scenario : {"bench-8gpu-64proc.json", "hw-slowdown.json"}) {
    for (const std::vector<std::string>& args :
         {std::vector<std::string>{"status"},
          std::vector<std::string>{"why", "--now", "--no-kernel-log", "--verbose"}}) {
      std::vector<std::string> argv = args;
      argv.insert(argv.end(), {"--sim", ScenarioPath(scenario)});
      const RunResult r = RunProcess(Gpuwarden(argv), pipe);
      ASSERT_LT(r.exit_code, 15) << scenario << " " << args[0] << "\n" << r.err;
      EXPECT_EQ(r.out.find("…"), std::string::npos) << scenario << " " << args[0] << "\n" << r.out;
    }
  }
  // Line 1 of why is the whole verdict: head -1 needs nothing more.
  const RunResult why = RunProcess(
      Gpuwarden({"why", "--now", "--no-kernel-log", "--sim", ScenarioPath("hw-slowdown.json")}),
      pipe);
  const std::string first = why.out.substr(0, why.out.find('\n'));
  EXPECT_NE(first.find(" — "), std::string::npos) << first;
  // The next line is GPU 0's, not the rest of the verdict.
  EXPECT_EQ(why.out.compare(first.size(), 8, "\n  GPU 0"), 0) << why.out;

  RunOptions terminal = Quick();
  terminal.env["COLUMNS"] = "120";
  const RunResult wide = RunProcess(
      Gpuwarden({"why", "--now", "--no-kernel-log", "--sim", ScenarioPath("hw-slowdown.json")}),
      terminal);
  std::istringstream lines(wide.out);
  std::string line;
  while (std::getline(lines, line)) EXPECT_LE(Columns(line), 120u) << line;
  EXPECT_EQ(wide.out.find("…"), std::string::npos) << wide.out;
  EXPECT_NE(wide.out.find("HW_THERMAL_SLOWDOWN"), std::string::npos) << wide.out;
}

// docs/cli.md, "Files": a named audit log in a missing directory is an error
// naming it, and the directory is not made (by the flag or the config file).
TEST(CliConventionsE2e, AMissingAuditLogDirectoryIsNamedNotCreated) {
  const std::string dir = "/tmp/gw-no-such-dir-" + std::to_string(getpid());
  const std::string s = Scenario();
  for (const std::vector<std::string>& argv :
       {Gpuwarden({"clean", "--dry-run", "--audit-log", dir + "/x.log", "--sim", s}),
        Gpuwarden({"kill", "--yes", "--audit-log", dir + "/x.log", "2147483000", "--sim", s})}) {
    const RunResult r = RunProcess(argv, Quick());
    EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
    EXPECT_EQ(CountLines(r.err), 1u) << r.err;
    EXPECT_NE(
        r.err.find("--audit-log: the directory " + dir + " of " + dir + "/x.log does not exist"),
        std::string::npos)
        << r.err;
    EXPECT_EQ(access(dir.c_str(), F_OK), -1) << dir << " was created";
  }
  const std::string config = "/tmp/gw-audit-config-" + std::to_string(getpid()) + ".toml";
  {
    std::ofstream out(config);
    out << "[clean]\naudit_log = \"" << dir << "/audit.log\"\n";
  }
  RunOptions with_config = Quick();
  with_config.env["GPUWARDEN_CONFIG"] = config;
  const RunResult r = RunProcess(Gpuwarden({"clean", "--dry-run", "--sim", s}), with_config);
  std::remove(config.c_str());
  EXPECT_EQ(r.exit_code, 3) << r.out << r.err;
  EXPECT_NE(r.err.find("audit_log: the directory " + dir), std::string::npos) << r.err;
  EXPECT_EQ(access(dir.c_str(), F_OK), -1) << dir << " was created";
}

// The issue's own example: kill 999999 (when no process has that id).
TEST(CliConventionsE2e, KillOfPid999999IsAnError) {
  if (access("/proc/999999", F_OK) == 0) GTEST_SKIP() << "a process 999999 exists here";
  const RunResult r =
      RunProcess(Gpuwarden({"kill", "--yes", "999999", "--sim", Scenario()}), Quick());
  EXPECT_EQ(r.exit_code, 8) << r.out << r.err;
  EXPECT_NE((r.out + r.err).find("no such process"), std::string::npos) << r.out << r.err;
}

// docs/cli.md, "Output": a warning names what it is about, the first ten in
// its line and where the rest are, and --verbose and --json list them all.
// A proc tree of 25 processes whose open files only root may read, looked at
// by an unprivileged user: every one of them is a partial scan.
TEST(CliConventionsE2e, AWarningNamesItsProcessesAndVerboseListsThemAll) {
  GW_REQUIRE_TEST_USER(user);
  TempDir proc;
  ASSERT_EQ(chmod(proc.path().c_str(), 0755), 0);
  std::vector<int> pids;
  for (int pid = 3001; pid <= 3025; ++pid) {
    const std::string dir = proc.path() + "/" + std::to_string(pid);
    ASSERT_EQ(mkdir(dir.c_str(), 0755), 0) << dir;
    ASSERT_EQ(mkdir((dir + "/fd").c_str(), 0700), 0) << dir;
    pids.push_back(pid);
  }
  const RunOptions as_user = AsUser(Quick(), user, proc.path());
  auto status = [&](std::vector<std::string> extra) {
    std::vector<std::string> args = {"status", "--sim", Scenario(), "--proc-root", proc.path()};
    args.insert(args.end(), extra.begin(), extra.end());
    return RunProcess(Gpuwarden(args), as_user);
  };

  const RunResult plain = status({});
  EXPECT_EQ(plain.exit_code, 0) << plain.out << plain.err;
  EXPECT_NE(plain.out.find("could not read the open files of 25 processes (permission denied; "
                           "PIDs 3001, 3002, 3003, 3004, 3005, 3006, 3007, 3008, 3009, 3010 and "
                           "15 more, all listed by status --verbose)"),
            std::string::npos)
      << plain.out;
  EXPECT_EQ(plain.out.find("3025"), std::string::npos) << plain.out;

  const RunResult verbose = status({"--verbose"});
  EXPECT_EQ(verbose.exit_code, 0) << verbose.out << verbose.err;
  std::string all = "PIDs:";
  for (int pid : pids) all += (pid == pids.front() ? " " : ", ") + std::to_string(pid);
  EXPECT_NE(verbose.out.find(all), std::string::npos) << verbose.out;

  const RunResult json_run = status({"--json"});
  ASSERT_EQ(json_run.exit_code, 0) << json_run.out << json_run.err;
  const nlohmann::json doc = nlohmann::json::parse(json_run.out, nullptr, false);
  ASSERT_FALSE(doc.is_discarded()) << json_run.out;
  bool found = false;
  for (const nlohmann::json& e : doc.at("errors")) {
    if (e.at("code") != "partial_scan") continue;
    found = true;
    EXPECT_EQ(e.at("pids").get<std::vector<int>>(), pids);
  }
  EXPECT_TRUE(found) << json_run.out;
}

}  // namespace
}  // namespace gw::test
