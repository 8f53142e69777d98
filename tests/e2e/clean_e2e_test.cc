// `gpuwarden clean` and `gpuwarden kill` end to end: the real binary, the
// simulated driver, and real child processes that the scenario lists as GPU
// holders. The processes are really signalled, so every assertion about an
// outcome is checked against the kernel too (the child is reaped, or is still
// there), and every run writes its audit log into a temporary directory.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "core/units.h"
#include "e2e/e2e_util.h"
#include "e2e/pty_process.h"
#include "e2e/run_process.h"
#include "e2e/user_process.h"

namespace gw::test {
namespace {

using nlohmann::json;
// Generous: a 2-core machine, and the suite also runs under AddressSanitizer.
constexpr double kRunTimeoutS = 90;
constexpr double kExitTimeoutS = 30;

// Every "env:" PID that the clean-* scenarios use; a test sets the ones it
// needs and removes the others, so that nothing from the outside is listed.
const char* const kScenarioPidVars[] = {"GW_CLEAN_PID_0", "GW_CLEAN_PID_1", "GW_CLEAN_PID_2",
                                        "GW_CLEAN_BUSY_PID", "GW_ZOMBIE_PID"};

// A temporary directory for one test: the audit log, an empty settings file
// (so that an /etc/gpuwarden/config.toml on the machine cannot change what
// the test sees), and whatever else the test writes.
class Workspace {
 public:
  Workspace() { config_ = dir_.Write("config.toml", ""); }
  const std::string& path() const { return dir_.path(); }
  std::string audit_log() const { return dir_.path() + "/audit.jsonl"; }
  const std::string& config() const { return config_; }
  std::string Write(const std::string& name, const std::string& text) const {
    return dir_.Write(name, text);
  }
  // Lets `user` write here and read everything (the settings file too).
  void GiveTo(const TestUser& user) const {
    ASSERT_TRUE(GiveDirectoryTo(dir_.path(), user)) << dir_.path();
    chmod(config_.c_str(), 0644);
  }

 private:
  TempDir dir_;
  std::string config_;
};

RunOptions SimOptionsIn(const Workspace& ws, const std::map<std::string, pid_t>& pids = {}) {
  RunOptions o;
  o.timeout_s = kRunTimeoutS;
  o.env["GPUWARDEN_NVML_LIB"] = std::nullopt;
  o.env["GPUWARDEN_SIM_START"] = NowSecondsString();
  o.env["CUDA_VISIBLE_DEVICES"] = std::nullopt;
  o.env["CUDA_DEVICE_ORDER"] = std::nullopt;
  o.env["GPUWARDEN_CONFIG"] = ws.config();
  for (const char* var : kScenarioPidVars) o.env[var] = std::nullopt;
  for (const auto& [var, pid] : pids) o.env[var] = std::to_string(pid);
  return o;
}

struct GwRun {
  RunResult result;
  json out;  // Discarded when stdout is not JSON.
  std::string Trace() const {
    return "exit " + std::to_string(result.exit_code) + "\nstdout:\n" + result.out + "\nstderr:\n" +
           result.err;
  }
};

GwRun Gw(const std::vector<std::string>& args, const RunOptions& options) {
  GwRun run;
  run.result = RunProcess(Gpuwarden(args), options);
  run.out = json::parse(run.result.out, nullptr, false);
  return run;
}

// `clean` on a scenario with what every test wants: young test processes
// count as idle (--idle-for 0s), a short window, an audit log, short waits.
// Appends --grace 5s and --settle 10s unless `extra` sets them, then `extra`.
void AppendWaitsAnd(std::vector<std::string>& args, const std::vector<std::string>& extra) {
  for (const char* flag : {"--grace", "--settle"}) {
    if (std::find(extra.begin(), extra.end(), flag) != extra.end()) continue;
    args.insert(args.end(), {flag, flag == std::string("--grace") ? "5s" : "10s"});
  }
  args.insert(args.end(), extra.begin(), extra.end());
}

std::vector<std::string> CleanArgs(const std::string& scenario, const Workspace& ws,
                                   const std::vector<std::string>& extra) {
  std::vector<std::string> args = {"--sim", ScenarioPath(scenario), "clean"};
  args.insert(args.end(), {"--idle-for", "0s", "--window", "1", "--audit-log", ws.audit_log()});
  AppendWaitsAnd(args, extra);
  return args;
}

std::vector<std::string> KillArgs(const std::string& scenario, const Workspace& ws,
                                  const std::vector<pid_t>& pids,
                                  const std::vector<std::string>& extra) {
  std::vector<std::string> args = {"--sim", ScenarioPath(scenario), "kill"};
  for (pid_t p : pids) args.push_back(std::to_string(p));
  args.insert(args.end(), {"--audit-log", ws.audit_log()});
  AppendWaitsAnd(args, extra);
  return args;
}

// The plan item (act or skip) for a PID, or null.
const json* PlanItem(const json& out, const char* list, pid_t pid) {
  if (!out.contains("plan") || !out["plan"].contains(list)) return nullptr;
  for (const json& item : out["plan"][list]) {
    if (item.value("pid", -1) == pid) return &item;
  }
  return nullptr;
}
const json* Acted(const json& out, pid_t pid) { return PlanItem(out, "act", pid); }
const json* Skipped(const json& out, pid_t pid) { return PlanItem(out, "skip", pid); }

std::set<pid_t> PlanPids(const json& out, const char* list) {
  std::set<pid_t> pids;
  if (!out.contains("plan") || !out["plan"].contains(list)) return pids;
  for (const json& item : out["plan"][list]) pids.insert(item.value("pid", -1));
  return pids;
}

const json* ResultFor(const json& out, pid_t pid) {
  if (!out.contains("results")) return nullptr;
  for (const json& r : out["results"]) {
    if (r.value("pid", -1) == pid) return &r;
  }
  return nullptr;
}

const json* GpuReport(const json& out, unsigned index) {
  if (!out.contains("gpus")) return nullptr;
  for (const json& g : out["gpus"]) {
    if (g.value("index", -1) == static_cast<int>(index)) return &g;
  }
  return nullptr;
}

std::vector<json> AuditLines(const std::string& path) {
  std::vector<json> lines;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) {
    if (line.empty()) continue;
    json j = json::parse(line, nullptr, false);
    EXPECT_FALSE(j.is_discarded()) << "audit line is not JSON: " << line;
    if (!j.is_discarded()) lines.push_back(j);
  }
  return lines;
}

// The signals the audit log says were sent to `pid`, in order.
std::vector<std::string> AuditedSignals(const std::string& path, pid_t pid) {
  std::vector<std::string> signals;
  for (const json& line : AuditLines(path)) {
    if (line.value("event", "") == "signal" && line.value("pid", -1) == pid) {
      signals.push_back(line.value("signal", ""));
    }
  }
  return signals;
}

bool AuditHasResult(const std::string& path, pid_t pid) {
  for (const json& line : AuditLines(path)) {
    if (line.value("event", "") == "result" && line.value("pid", -1) == pid) return true;
  }
  return false;
}

std::vector<std::string> Strings(const json& list) {
  std::vector<std::string> out;
  if (!list.is_array()) return out;
  for (const json& s : list) out.push_back(s.is_string() ? s.get<std::string>() : s.dump());
  return out;
}

std::string Lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

// The checks every non-dry run of clean/kill shares.
void ExpectWellFormed(const json& out, const char* command) {
  EXPECT_EQ(out.value("schema", ""), "gpuwarden.clean");
  EXPECT_EQ(out.value("schema_version", 0), 1);
  EXPECT_EQ(out.value("command", ""), command);
  ASSERT_TRUE(out.contains("plan"));
  EXPECT_TRUE(out["plan"]["act"].is_array());
  EXPECT_TRUE(out["plan"]["skip"].is_array());
  EXPECT_TRUE(out["plan"]["notes"].is_array());
  EXPECT_TRUE(out["results"].is_array());
  EXPECT_TRUE(out["gpus"].is_array());
}

// ---------------------------------------------------------------------------
// Stopping idle holders.

TEST(CleanE2e, IdleHolderIsStoppedWithSigtermAndItsMemoryFreed) {
  Workspace ws;
  TestChild holder;
  const auto start_ticks = ProcessStartTicks(holder.pid());
  ASSERT_TRUE(start_ticks);
  GwRun run = Gw(CleanArgs("clean-idle.json", ws, {"--yes", "--json"}),
                 SimOptionsIn(ws, {{"GW_CLEAN_PID_0", holder.pid()}}));
  SCOPED_TRACE(run.Trace());
  ASSERT_FALSE(run.out.is_discarded());
  EXPECT_EQ(run.result.exit_code, 0);
  ExpectWellFormed(run.out, "clean");
  EXPECT_EQ(run.out["dry_run"], false);
  EXPECT_EQ(run.out["confirmed"], true);
  EXPECT_EQ(run.out["signal"], "SIGTERM");
  EXPECT_DOUBLE_EQ(run.out.value("grace_s", -1.0), 5.0);

  const json* item = Acted(run.out, holder.pid());
  ASSERT_NE(item, nullptr);
  EXPECT_EQ((*item)["role"], "holder");
  EXPECT_EQ((*item)["reason_code"], "idle_holder");
  EXPECT_EQ((*item)["uid"], getuid());
  EXPECT_EQ((*item)["gpus"], json::array({0}));
  EXPECT_EQ((*item)["vram_bytes"], 40960 * kMiB);
  EXPECT_EQ((*item)["start_ticks"], *start_ticks);
  EXPECT_TRUE((*item)["because_of"].is_null());
  EXPECT_NE((*item)["command"].get<std::string>().find("sleep"), std::string::npos);

  const json* result = ResultFor(run.out, holder.pid());
  ASSERT_NE(result, nullptr);
  EXPECT_EQ((*result)["outcome"], "exited");
  EXPECT_EQ(Strings((*result)["signals"]), std::vector<std::string>{"SIGTERM"});

  // Really gone: it is our child, and it died of SIGTERM.
  EXPECT_EQ(holder.WaitForExit(kExitTimeoutS), 128 + SIGTERM);

  const json* gpu0 = GpuReport(run.out, 0);
  ASSERT_NE(gpu0, nullptr);
  EXPECT_EQ((*gpu0)["used_before_bytes"], 40960 * kMiB);
  EXPECT_EQ((*gpu0)["used_after_bytes"], 0u);
  EXPECT_EQ((*gpu0)["expected_bytes"], 40960 * kMiB);
  EXPECT_EQ((*gpu0)["freed_bytes"], 40960 * kMiB);
  EXPECT_EQ((*gpu0)["still_held_bytes"], 0u);
  EXPECT_EQ((*gpu0)["released"], true);
  // GPU 1 held nothing of the targets: not reported.
  EXPECT_EQ(GpuReport(run.out, 1), nullptr);

  EXPECT_EQ(AuditedSignals(ws.audit_log(), holder.pid()), std::vector<std::string>{"SIGTERM"});
  EXPECT_TRUE(AuditHasResult(ws.audit_log(), holder.pid()));
  for (const json& line : AuditLines(ws.audit_log())) {
    if (line.value("event", "") != "signal") continue;
    EXPECT_EQ(line["outcome"], "delivered") << line.dump();
    EXPECT_EQ(line["caller_uid"], getuid()) << line.dump();
    EXPECT_FALSE(line.value("time", json()).is_null()) << line.dump();
  }
  EXPECT_TRUE(run.out["audit_log"]["errors"].empty());
}

TEST(CleanE2e, HolderThatIgnoresSigtermIsKilledAfterTheGracePeriod) {
  Workspace ws;
  // SIG_IGN survives exec: the sleep ignores SIGTERM.
  TestChild stubborn({"/bin/sh", "-c", "trap '' TERM; exec /bin/sleep 300"});
  // Until the exec, the shell itself would die of SIGTERM.
  ASSERT_TRUE(WaitUntil([&] { return CommOf(stubborn.pid()) == "sleep"; }, kExitTimeoutS));
  GwRun run = Gw(CleanArgs("clean-idle.json", ws, {"--yes", "--json", "--grace", "1s"}),
                 SimOptionsIn(ws, {{"GW_CLEAN_PID_0", stubborn.pid()}}));
  SCOPED_TRACE(run.Trace());
  ASSERT_FALSE(run.out.is_discarded());
  EXPECT_EQ(run.result.exit_code, 0);
  EXPECT_DOUBLE_EQ(run.out.value("grace_s", -1.0), 1.0);
  const json* result = ResultFor(run.out, stubborn.pid());
  ASSERT_NE(result, nullptr);
  EXPECT_EQ((*result)["outcome"], "killed");
  EXPECT_EQ(Strings((*result)["signals"]), (std::vector<std::string>{"SIGTERM", "SIGKILL"}));
  EXPECT_GE((*result).value("seconds", 0.0), 1.0);
  EXPECT_EQ(stubborn.WaitForExit(kExitTimeoutS), 128 + SIGKILL);
  EXPECT_EQ(AuditedSignals(ws.audit_log(), stubborn.pid()),
            (std::vector<std::string>{"SIGTERM", "SIGKILL"}));
  const json* gpu0 = GpuReport(run.out, 0);
  ASSERT_NE(gpu0, nullptr);
  EXPECT_EQ((*gpu0)["released"], true);
}

TEST(CleanE2e, ChosenSignalIsSentFirst) {
  Workspace ws;
  TestChild holder;
  GwRun run = Gw(CleanArgs("clean-idle.json", ws, {"--yes", "--json", "--signal", "INT"}),
                 SimOptionsIn(ws, {{"GW_CLEAN_PID_0", holder.pid()}}));
  SCOPED_TRACE(run.Trace());
  ASSERT_FALSE(run.out.is_discarded());
  EXPECT_EQ(run.result.exit_code, 0);
  EXPECT_EQ(run.out["signal"], "SIGINT");
  const json* result = ResultFor(run.out, holder.pid());
  ASSERT_NE(result, nullptr);
  EXPECT_EQ(Strings((*result)["signals"]), std::vector<std::string>{"SIGINT"});
  EXPECT_EQ(holder.WaitForExit(kExitTimeoutS), 128 + SIGINT);

  GwRun bad = Gw(CleanArgs("clean-idle.json", ws, {"--yes", "--json", "--signal", "STOP"}),
                 SimOptionsIn(ws, {}));
  EXPECT_EQ(bad.result.exit_code, 2) << bad.Trace();
}

// ---------------------------------------------------------------------------
// Runs: a job's process group is stopped whole (--tree, clean's default).

// A run as a launcher starts it: a process that leads its own process group
// (as a shell job does) and has two workers. The launcher is not a shell (a
// shell that started several jobs is not one run): it is `sleep`, exec'd
// after forking the workers, so it never reaps them either.
TestChild::Options LauncherOptions() {
  TestChild::Options o;
  o.workers = {{"/bin/sleep", "300"}, {"/bin/sleep", "300"}};
  return o;
}

struct Job {
  TestChild launcher{{"/bin/sleep", "300"}, LauncherOptions()};
  std::vector<pid_t> workers;
  Job() {
    WaitUntil(
        [&] {
          workers = ChildrenOf(launcher.pid());
          return CommOf(launcher.pid()) == "sleep" && workers.size() == 2 &&
                 CommOf(workers[0]) == "sleep" && CommOf(workers[1]) == "sleep";
        },
        kExitTimeoutS);
  }
  std::set<pid_t> all() const { return {launcher.pid(), workers.at(0), workers.at(1)}; }
};

TEST(CleanE2e, WholeRunIsStoppedWhenAWorkerHoldsTheGpu) {
  Workspace ws;
  Job job;
  ASSERT_EQ(job.workers.size(), 2u);
  const pid_t holder = job.workers[0];
  GwRun run = Gw(CleanArgs("clean-idle.json", ws, {"--yes", "--json"}),
                 SimOptionsIn(ws, {{"GW_CLEAN_PID_0", holder}}));
  SCOPED_TRACE(run.Trace());
  ASSERT_FALSE(run.out.is_discarded());
  EXPECT_EQ(run.result.exit_code, 0);
  EXPECT_EQ(PlanPids(run.out, "act"), job.all());
  for (pid_t member : job.all()) {
    const json* item = Acted(run.out, member);
    ASSERT_NE(item, nullptr) << member;
    if (member == holder) {
      EXPECT_EQ((*item)["role"], "holder");
      EXPECT_EQ((*item)["reason_code"], "idle_holder");
    } else {
      EXPECT_EQ((*item)["role"], "run_member") << member;
      EXPECT_EQ((*item)["reason_code"], "run_member") << member;
      EXPECT_EQ((*item)["because_of"], holder) << member;
    }
    const json* result = ResultFor(run.out, member);
    ASSERT_NE(result, nullptr) << member;
    EXPECT_TRUE((*result)["outcome"] == "exited" || (*result)["outcome"] == "gone")
        << (*result).dump();
  }
  EXPECT_EQ(job.launcher.WaitForExit(kExitTimeoutS), 128 + SIGTERM);
  for (pid_t worker : job.workers) {
    EXPECT_TRUE(WaitUntil([&] { return !ProcessAlive(worker); }, kExitTimeoutS)) << worker;
  }
  const json* gpu0 = GpuReport(run.out, 0);
  ASSERT_NE(gpu0, nullptr);
  EXPECT_EQ((*gpu0)["freed_bytes"], 40960 * kMiB);
  EXPECT_EQ((*gpu0)["released"], true);
}

TEST(CleanE2e, WholeRunIsStoppedWhenTheParentHoldsTheGpu) {
  Workspace ws;
  Job job;
  ASSERT_EQ(job.workers.size(), 2u);
  const pid_t holder = job.launcher.pid();
  GwRun run = Gw(CleanArgs("clean-idle.json", ws, {"--yes", "--json"}),
                 SimOptionsIn(ws, {{"GW_CLEAN_PID_0", holder}}));
  SCOPED_TRACE(run.Trace());
  ASSERT_FALSE(run.out.is_discarded());
  EXPECT_EQ(run.result.exit_code, 0);
  EXPECT_EQ(PlanPids(run.out, "act"), job.all());
  const json* parent = Acted(run.out, holder);
  ASSERT_NE(parent, nullptr);
  EXPECT_EQ((*parent)["role"], "holder");
  for (pid_t worker : job.workers) {
    const json* item = Acted(run.out, worker);
    ASSERT_NE(item, nullptr) << worker;
    EXPECT_EQ((*item)["role"], "run_member");
    EXPECT_EQ((*item)["because_of"], holder);
  }
  EXPECT_EQ(job.launcher.WaitForExit(kExitTimeoutS), 128 + SIGTERM);
  for (pid_t worker : job.workers) {
    EXPECT_TRUE(WaitUntil([&] { return !ProcessAlive(worker); }, kExitTimeoutS)) << worker;
  }
}

TEST(CleanE2e, NoTreeStopsOnlyTheHolder) {
  Workspace ws;
  Job job;
  ASSERT_EQ(job.workers.size(), 2u);
  const pid_t holder = job.workers[1];
  GwRun run = Gw(CleanArgs("clean-idle.json", ws, {"--yes", "--json", "--no-tree"}),
                 SimOptionsIn(ws, {{"GW_CLEAN_PID_0", holder}}));
  SCOPED_TRACE(run.Trace());
  ASSERT_FALSE(run.out.is_discarded());
  EXPECT_EQ(run.result.exit_code, 0);
  EXPECT_EQ(PlanPids(run.out, "act"), std::set<pid_t>{holder});
  const json* result = ResultFor(run.out, holder);
  ASSERT_NE(result, nullptr);
  EXPECT_EQ((*result)["outcome"], "exited");
  EXPECT_TRUE(WaitUntil([&] { return !ProcessAlive(holder); }, kExitTimeoutS));
  // The rest of the job runs on.
  EXPECT_TRUE(ProcessAlive(job.launcher.pid()));
  EXPECT_TRUE(ProcessAlive(job.workers[0]));
}

TEST(CleanE2e, JobsThatAShellStartedAreSeparateRuns) {
  Workspace ws;
  // A script (sh, leading its own group) that started two jobs: stopping one
  // leaves the script and the other job alone.
  TestChild script({"/bin/sh", "-c", "/bin/sleep 300 & /bin/sleep 300 & wait"});
  std::vector<pid_t> jobs;
  ASSERT_TRUE(WaitUntil(
      [&] {
        jobs = ChildrenOf(script.pid());
        return jobs.size() == 2 && CommOf(jobs[0]) == "sleep" && CommOf(jobs[1]) == "sleep";
      },
      kExitTimeoutS));
  GwRun run = Gw(CleanArgs("clean-idle.json", ws, {"--dry-run", "--json"}),
                 SimOptionsIn(ws, {{"GW_CLEAN_PID_0", jobs[0]}}));
  SCOPED_TRACE(run.Trace());
  ASSERT_FALSE(run.out.is_discarded());
  EXPECT_EQ(run.result.exit_code, 0);
  EXPECT_EQ(PlanPids(run.out, "act"), std::set<pid_t>{jobs[0]});
}

TEST(CleanE2e, OrphanIsStoppedWithTheOtherWorkersItsLauncherLeftBehind) {
  Workspace ws;
  // sh starts two background sleeps and exits: both are re-parented to init
  // and stay in the dead shell's process group — the workers of a killed run.
  RunResult started = RunProcess({"/bin/sh", "-c",
                                  "/bin/sleep 300 </dev/null >/dev/null 2>&1 & echo $!; "
                                  "/bin/sleep 300 </dev/null >/dev/null 2>&1 & echo $!"});
  ASSERT_EQ(started.exit_code, 0);
  std::istringstream pids(started.out);
  pid_t holder = 0, fellow = 0;
  ASSERT_TRUE(pids >> holder >> fellow) << started.out;
  struct Killer {
    std::vector<pid_t> pids;
    ~Killer() {
      for (pid_t p : pids) kill(p, SIGKILL);
    }
  } killer{{holder, fellow}};
  ASSERT_TRUE(WaitUntil([&] { return CommOf(holder) == "sleep" && CommOf(fellow) == "sleep"; },
                        kExitTimeoutS));
  GwRun run = Gw(CleanArgs("clean-idle.json", ws, {"--yes", "--json"}),
                 SimOptionsIn(ws, {{"GW_CLEAN_PID_0", holder}}));
  SCOPED_TRACE(run.Trace());
  ASSERT_FALSE(run.out.is_discarded());
  EXPECT_EQ(run.result.exit_code, 0);
  const json* item = Acted(run.out, holder);
  ASSERT_NE(item, nullptr);
  EXPECT_EQ((*item)["reason_code"], "orphan_holder");
  const json* other = Acted(run.out, fellow);
  ASSERT_NE(other, nullptr);
  EXPECT_EQ((*other)["role"], "run_member");
  EXPECT_EQ((*other)["because_of"], holder);
  for (pid_t p : {holder, fellow}) {
    EXPECT_TRUE(WaitUntil([&] { return !ProcessAlive(p); }, kExitTimeoutS)) << p;
  }
  const json* gpu0 = GpuReport(run.out, 0);
  ASSERT_NE(gpu0, nullptr);
  EXPECT_EQ((*gpu0)["released"], true);
}

// ---------------------------------------------------------------------------
// Zombies: the parent is the one to stop.

TEST(CleanE2e, ZombieHolderIsReapedByStoppingItsParent) {
  Workspace ws;
  ZombieParent parent(kExitTimeoutS);
  const pid_t zombie = parent.zombie();
  ASSERT_GT(zombie, 0) << "no zombie appeared";
  GwRun run = Gw(CleanArgs("zombie-holder.json", ws, {"--yes", "--json", "--settle", "1s"}),
                 SimOptionsIn(ws, {{"GW_ZOMBIE_PID", zombie}}));
  SCOPED_TRACE(run.Trace());
  ASSERT_FALSE(run.out.is_discarded());
  const json* item = Acted(run.out, parent.pid());
  ASSERT_NE(item, nullptr);
  EXPECT_EQ((*item)["role"], "zombie_parent");
  EXPECT_EQ((*item)["reason_code"], "zombie_parent");
  EXPECT_EQ((*item)["because_of"], zombie);
  const json* skipped = Skipped(run.out, zombie);
  ASSERT_NE(skipped, nullptr);
  EXPECT_EQ((*skipped)["reason_code"], "zombie");
  EXPECT_EQ((*skipped)["state"], "zombie");
  EXPECT_EQ(Acted(run.out, zombie), nullptr);
  EXPECT_EQ(AuditedSignals(ws.audit_log(), zombie), std::vector<std::string>{});

  const json* result = ResultFor(run.out, parent.pid());
  ASSERT_NE(result, nullptr);
  EXPECT_EQ((*result)["outcome"], "exited");
  EXPECT_EQ(parent.WaitForExit(kExitTimeoutS), 128 + SIGTERM);
  // Orphaned, the zombie is reaped by init.
  EXPECT_TRUE(WaitUntil([&] { return !ProcessStateOf(zombie); }, kExitTimeoutS));
}

TEST(CleanE2e, ZombiesMemoryThatStaysHeldIsReported) {
  Workspace ws;
  ZombieParent parent(kExitTimeoutS);
  const pid_t zombie = parent.zombie();
  ASSERT_GT(zombie, 0) << "no zombie appeared";
  GwRun run = Gw(CleanArgs("zombie-holder.json", ws, {"--yes", "--json", "--settle", "1s"}),
                 SimOptionsIn(ws, {{"GW_ZOMBIE_PID", zombie}}));
  SCOPED_TRACE(run.Trace());
  ASSERT_FALSE(run.out.is_discarded());
  ASSERT_NE(Acted(run.out, parent.pid()), nullptr);
  EXPECT_EQ(parent.WaitForExit(kExitTimeoutS), 128 + SIGTERM);
  // Stopping the parent is meant to free what the zombie holds. Here it does
  // not: zombie-holder.json's driver lists the PID whatever becomes of it (no
  // while_alive), so its 20 GiB stay in use after the zombie is reaped, and
  // clean must say so (released false, exit 9) rather than report success.
  const json* gpu0 = GpuReport(run.out, 0);
  ASSERT_NE(gpu0, nullptr);
  EXPECT_EQ((*gpu0)["expected_bytes"], 20480 * kMiB);
  EXPECT_EQ((*gpu0)["released"], false);
  EXPECT_EQ((*gpu0)["still_held_bytes"], 20480 * kMiB);
  EXPECT_EQ(run.result.exit_code, 9);
}

// ---------------------------------------------------------------------------
// Refusals: protected names, confirmation, dry runs, PIDs that changed.

TEST(KillE2e, ProtectedProcessNameIsRefused) {
  Workspace ws;
  // A copy of sleep under a protected name: comm, argv[0] and exe all say so.
  const std::string daemon = ws.path() + "/nvidia-persistenced";
  std::filesystem::copy_file("/bin/sleep", daemon);
  chmod(daemon.c_str(), 0755);
  TestChild persistenced({daemon, "300"});
  ASSERT_TRUE(
      WaitUntil([&] { return CommOf(persistenced.pid()) == "nvidia-persiste"; }, kExitTimeoutS));
  GwRun run = Gw(KillArgs("clean-idle.json", ws, {persistenced.pid()}, {"--yes", "--json"}),
                 SimOptionsIn(ws));
  SCOPED_TRACE(run.Trace());
  ASSERT_FALSE(run.out.is_discarded());
  EXPECT_EQ(run.result.exit_code, 8);
  ExpectWellFormed(run.out, "kill");
  const json* item = Skipped(run.out, persistenced.pid());
  ASSERT_NE(item, nullptr);
  EXPECT_EQ((*item)["reason_code"], "protected");
  EXPECT_EQ(Acted(run.out, persistenced.pid()), nullptr);
  EXPECT_EQ(ResultFor(run.out, persistenced.pid()), nullptr);
  EXPECT_TRUE(ProcessAlive(persistenced.pid()));
  EXPECT_FALSE(persistenced.TryReap());
  EXPECT_TRUE(AuditedSignals(ws.audit_log(), persistenced.pid()).empty());
}

// `exec -a Xorg sleep`: argv[0] says Xorg, the kernel says sleep. why and
// clean read one protection rule (the executable and the systemd unit, never
// a name the process chose): both call it an idle holder, and clean plans
// it; protected by the administrator's name for its executable, neither does.
TEST(CleanE2e, ARenamedProcessIsJudgedAlikeByWhyAndClean) {
  Workspace ws;
  TestChild renamed({"/bin/bash", "-c", "exec -a Xorg /bin/sleep 300"});
  ASSERT_TRUE(WaitUntil([&] { return CommOf(renamed.pid()) == "sleep"; }, kExitTimeoutS));
  const RunOptions options = SimOptionsIn(ws, {{"GW_CLEAN_PID_0", renamed.pid()}});
  auto why_codes = [&](const RunOptions& o) {
    const RunResult why = RunProcess(Gpuwarden({"--sim", ScenarioPath("clean-idle.json"), "why",
                                                "--window", "1", "--idle-for", "0", "--json"}),
                                     o);
    const json doc = json::parse(why.out, nullptr, false);
    EXPECT_FALSE(doc.is_discarded()) << why.out << why.err;
    std::set<std::string> codes;
    for (const json& g : doc["gpus"]) {
      for (const json& f : g["findings"]) {
        for (const json& pid : f["pids"]) {
          if (pid == renamed.pid()) codes.insert(f["code"].get<std::string>());
        }
      }
    }
    return codes;
  };
  EXPECT_EQ(why_codes(options).count("IDLE_HOLDER"), 1u);
  GwRun run = Gw(CleanArgs("clean-idle.json", ws, {"--dry-run", "--json"}), options);
  SCOPED_TRACE(run.Trace());
  ASSERT_FALSE(run.out.is_discarded());
  const json* item = Acted(run.out, renamed.pid());
  ASSERT_NE(item, nullptr);
  EXPECT_EQ((*item)["reason_code"], "idle_holder");

  // The administrator protects "sleep" (config `protect`): both leave it alone.
  const std::string config = ws.Write("protect.toml", "[clean]\nprotect = [\"sleep\"]\n");
  RunOptions protecting = options;
  protecting.env["GPUWARDEN_CONFIG"] = config;
  EXPECT_EQ(why_codes(protecting).count("IDLE_HOLDER"), 0u);
  run = Gw(CleanArgs("clean-idle.json", ws, {"--dry-run", "--json"}), protecting);
  ASSERT_FALSE(run.out.is_discarded()) << run.Trace();
  EXPECT_EQ(Acted(run.out, renamed.pid()), nullptr);
  EXPECT_TRUE(ProcessAlive(renamed.pid()));
}

TEST(KillE2e, NamedPidStopsOnlyItWithoutTreeAndItsRunWithTree) {
  Workspace ws;
  Job job;
  ASSERT_EQ(job.workers.size(), 2u);
  const pid_t named = job.workers[0];
  GwRun run = Gw(KillArgs("clean-idle.json", ws, {named}, {"--yes", "--json"}),
                 SimOptionsIn(ws, {{"GW_CLEAN_PID_0", named}}));
  SCOPED_TRACE(run.Trace());
  ASSERT_FALSE(run.out.is_discarded());
  EXPECT_EQ(run.result.exit_code, 0);
  ExpectWellFormed(run.out, "kill");
  EXPECT_EQ(PlanPids(run.out, "act"), std::set<pid_t>{named});
  const json* item = Acted(run.out, named);
  ASSERT_NE(item, nullptr);
  EXPECT_EQ((*item)["role"], "named");
  EXPECT_EQ((*item)["reason_code"], "named");
  // The plan mentions the rest of the run.
  EXPECT_FALSE(run.out["plan"]["notes"].empty());
  const json* result = ResultFor(run.out, named);
  ASSERT_NE(result, nullptr);
  EXPECT_EQ((*result)["outcome"], "exited");
  EXPECT_TRUE(WaitUntil([&] { return !ProcessAlive(named); }, kExitTimeoutS));
  EXPECT_TRUE(ProcessAlive(job.launcher.pid()));
  EXPECT_TRUE(ProcessAlive(job.workers[1]));
  const json* gpu0 = GpuReport(run.out, 0);
  ASSERT_NE(gpu0, nullptr);
  EXPECT_EQ((*gpu0)["freed_bytes"], 40960 * kMiB);

  // --tree: the rest of the run goes too.
  Workspace ws2;
  const pid_t other = job.workers[1];
  GwRun tree = Gw(KillArgs("clean-idle.json", ws2, {other},
                           {"--yes", "--json", "--tree", "--signal", "SIGHUP"}),
                  SimOptionsIn(ws2));
  SCOPED_TRACE(tree.Trace());
  ASSERT_FALSE(tree.out.is_discarded());
  EXPECT_EQ(tree.result.exit_code, 0);
  EXPECT_TRUE(Acted(tree.out, other) != nullptr);
  const json* launcher_item = Acted(tree.out, job.launcher.pid());
  ASSERT_NE(launcher_item, nullptr);
  EXPECT_EQ((*launcher_item)["role"], "run_member");
  EXPECT_EQ(tree.out["signal"], "SIGHUP");
  EXPECT_EQ(job.launcher.WaitForExit(kExitTimeoutS), 128 + SIGHUP);
  EXPECT_TRUE(WaitUntil([&] { return !ProcessAlive(other); }, kExitTimeoutS));
}

TEST(CleanE2e, WithoutYesAndWithoutATerminalNothingIsDone) {
  Workspace ws;
  TestChild holder;
  GwRun run = Gw(CleanArgs("clean-idle.json", ws, {"--json"}),
                 SimOptionsIn(ws, {{"GW_CLEAN_PID_0", holder.pid()}}));
  SCOPED_TRACE(run.Trace());
  EXPECT_EQ(run.result.exit_code, 7);
  ASSERT_FALSE(run.out.is_discarded());
  EXPECT_EQ(run.out["confirmed"], false);
  EXPECT_NE(Acted(run.out, holder.pid()), nullptr);  // The plan is still shown.
  EXPECT_TRUE(run.out["results"].empty());
  EXPECT_TRUE(run.out["gpus"].empty());
  EXPECT_TRUE(ProcessAlive(holder.pid()));
  EXPECT_FALSE(holder.TryReap());
  EXPECT_TRUE(AuditedSignals(ws.audit_log(), holder.pid()).empty());

  // The text form too.
  GwRun text = Gw(CleanArgs("clean-idle.json", ws, {}),
                  SimOptionsIn(ws, {{"GW_CLEAN_PID_0", holder.pid()}}));
  EXPECT_EQ(text.result.exit_code, 7) << text.Trace();
  EXPECT_TRUE(ProcessAlive(holder.pid()));
}

TEST(CleanE2e, DryRunSignalsNothing) {
  Workspace ws;
  TestChild holder;
  TestChild second;
  TestChild small;
  TestChild busy;
  const std::map<std::string, pid_t> pids = {{"GW_CLEAN_PID_0", holder.pid()},
                                             {"GW_CLEAN_PID_1", second.pid()},
                                             {"GW_CLEAN_PID_2", small.pid()},
                                             {"GW_CLEAN_BUSY_PID", busy.pid()}};
  GwRun run = Gw(CleanArgs("clean-idle.json", ws, {"--dry-run", "--json"}), SimOptionsIn(ws, pids));
  SCOPED_TRACE(run.Trace());
  ASSERT_FALSE(run.out.is_discarded());
  EXPECT_EQ(run.result.exit_code, 0);
  EXPECT_EQ(run.out["dry_run"], true);
  EXPECT_EQ(PlanPids(run.out, "act"), (std::set<pid_t>{holder.pid(), second.pid(), small.pid()}));
  EXPECT_EQ(Acted(run.out, busy.pid()), nullptr);  // Busy: not reclaimable.
  EXPECT_TRUE(run.out["results"].empty());
  EXPECT_TRUE(run.out["gpus"].empty());
  for (const TestChild* c : {&holder, &second, &small, &busy}) {
    EXPECT_TRUE(ProcessAlive(c->pid())) << c->pid();
  }
  EXPECT_TRUE(AuditLines(ws.audit_log()).empty());

  // Filters narrow the candidates.
  GwRun gpu1 = Gw(CleanArgs("clean-idle.json", ws, {"--dry-run", "--json", "--gpu", "1"}),
                  SimOptionsIn(ws, pids));
  ASSERT_FALSE(gpu1.out.is_discarded()) << gpu1.Trace();
  EXPECT_EQ(PlanPids(gpu1.out, "act"), (std::set<pid_t>{second.pid(), small.pid()}))
      << gpu1.Trace();
  GwRun big = Gw(CleanArgs("clean-idle.json", ws, {"--dry-run", "--json", "--min-vram", "10G"}),
                 SimOptionsIn(ws, pids));
  ASSERT_FALSE(big.out.is_discarded()) << big.Trace();
  EXPECT_EQ(PlanPids(big.out, "act"), (std::set<pid_t>{holder.pid(), second.pid()})) << big.Trace();
  GwRun one = Gw(CleanArgs("clean-idle.json", ws,
                           {"--dry-run", "--json", "--pid", std::to_string(small.pid())}),
                 SimOptionsIn(ws, pids));
  ASSERT_FALSE(one.out.is_discarded()) << one.Trace();
  EXPECT_EQ(PlanPids(one.out, "act"), std::set<pid_t>{small.pid()}) << one.Trace();

  // The text form names the plan and says that nothing was done.
  GwRun text = Gw(CleanArgs("clean-idle.json", ws, {"--dry-run"}), SimOptionsIn(ws, pids));
  SCOPED_TRACE(text.Trace());
  EXPECT_EQ(text.result.exit_code, 0);
  EXPECT_NE(Lower(text.result.out + text.result.err).find("dry run"), std::string::npos);
  EXPECT_NE(text.result.out.find(std::to_string(holder.pid())), std::string::npos);
  for (const TestChild* c : {&holder, &second, &small, &busy}) {
    EXPECT_TRUE(ProcessAlive(c->pid())) << c->pid();
  }
}

TEST(CleanE2e, NothingToCleanIsSuccess) {
  Workspace ws;
  GwRun run = Gw({"--sim", ScenarioPath("healthy-idle.json"), "clean", "--idle-for", "0s",
                  "--window", "1", "--yes", "--json", "--audit-log", ws.audit_log()},
                 SimOptionsIn(ws));
  SCOPED_TRACE(run.Trace());
  ASSERT_FALSE(run.out.is_discarded());
  EXPECT_EQ(run.result.exit_code, 0);
  EXPECT_TRUE(run.out["plan"]["act"].empty());
  EXPECT_TRUE(run.out["results"].empty());
}

TEST(CleanE2e, InteractiveAnswerNoDoesNothing) {
  Workspace ws;
  TestChild holder;
  RunOptions options = SimOptionsIn(ws, {{"GW_CLEAN_PID_0", holder.pid()}});
  PtyProcess pty(Gpuwarden(CleanArgs("clean-idle.json", ws, {})), options);
  ASSERT_TRUE(pty.started()) << pty.error();
  ASSERT_TRUE(pty.WaitForOutput("[y/N]", kRunTimeoutS)) << pty.output();
  EXPECT_NE(pty.output().find(std::to_string(holder.pid())), std::string::npos) << pty.output();
  pty.WriteLine("n");
  ASSERT_TRUE(pty.WaitForExit(kRunTimeoutS)) << pty.output();
  EXPECT_EQ(pty.exit_code(), 7) << pty.output();
  EXPECT_TRUE(ProcessAlive(holder.pid()));
  EXPECT_TRUE(AuditedSignals(ws.audit_log(), holder.pid()).empty());
}

TEST(CleanE2e, InteractiveAnswerYesProceeds) {
  Workspace ws;
  TestChild holder;
  RunOptions options = SimOptionsIn(ws, {{"GW_CLEAN_PID_0", holder.pid()}});
  PtyProcess pty(Gpuwarden(CleanArgs("clean-idle.json", ws, {})), options);
  ASSERT_TRUE(pty.started()) << pty.error();
  ASSERT_TRUE(pty.WaitForOutput("[y/N]", kRunTimeoutS)) << pty.output();
  pty.WriteLine("yes");
  ASSERT_TRUE(pty.WaitForExit(kRunTimeoutS)) << pty.output();
  EXPECT_EQ(pty.exit_code(), 0) << pty.output();
  EXPECT_EQ(holder.WaitForExit(kExitTimeoutS), 128 + SIGTERM) << pty.output();
  EXPECT_EQ(AuditedSignals(ws.audit_log(), holder.pid()), std::vector<std::string>{"SIGTERM"});
}

// Starts `sleep` with PID `pid` (root only): with clone3's set_tid, else by
// writing pid - 1 to /proc/sys/kernel/ns_last_pid and forking (which other
// processes' forks can race). Null, and *why_not, when the PID is taken or
// cannot be chosen.
std::unique_ptr<TestChild> StartWithPid(pid_t pid, std::string* why_not) {
  TestChild::Options exact;
  exact.pid = pid;
  auto child = std::make_unique<TestChild>(std::vector<std::string>{"/bin/sleep", "300"}, exact);
  if (child->pid() == pid) return child;
  if (child->start_error() == EEXIST) {
    *why_not = "PID " + std::to_string(pid) + " was taken by another process";
    return nullptr;
  }
  for (int attempt = 0; attempt < 100; ++attempt) {
    if (ProcessStateOf(pid)) {
      *why_not = "PID " + std::to_string(pid) + " was taken by another process";
      return nullptr;
    }
    int fd = open("/proc/sys/kernel/ns_last_pid", O_WRONLY | O_CLOEXEC);
    if (fd < 0) {
      *why_not = std::string("cannot open /proc/sys/kernel/ns_last_pid: ") + strerror(errno);
      return nullptr;
    }
    const std::string last = std::to_string(pid - 1);
    const bool written = write(fd, last.data(), last.size()) == static_cast<ssize_t>(last.size());
    close(fd);
    if (!written) {
      *why_not = std::string("cannot write /proc/sys/kernel/ns_last_pid: ") + strerror(errno);
      return nullptr;
    }
    child = std::make_unique<TestChild>();
    if (child->pid() == pid) return child;
  }
  *why_not = "other processes kept taking PID " + std::to_string(pid);
  return nullptr;
}

TEST(KillE2e, PidReusedBetweenPlanAndSignalIsNotSignalled) {
  if (geteuid() != 0) GTEST_SKIP() << "only root can choose the next PID (ns_last_pid)";
  Workspace ws;
  auto target = std::make_unique<TestChild>();
  const pid_t pid = target->pid();
  // stdin and stderr on the terminal (so gpuwarden asks), stdout to a file.
  const std::string json_path = ws.path() + "/out.json";
  std::vector<std::string> args =
      Gpuwarden(KillArgs("clean-idle.json", ws, {pid}, {"--json", "--grace", "2s"}));
  args.insert(args.begin(),
              {"/bin/sh", "-c", "out=\"$1\"; shift; exec \"$@\" > \"$out\"", "sh", json_path});
  PtyProcess pty(args, SimOptionsIn(ws));
  ASSERT_TRUE(pty.started()) << pty.error();
  ASSERT_TRUE(pty.WaitForOutput("[y/N]", kRunTimeoutS)) << pty.output();

  // Between the plan and the answer the target ends and its PID is reused.
  const auto planned_start = ProcessStartTicks(pid);
  ASSERT_TRUE(planned_start);
  // A process's identity is its start time in clock ticks: the impostor must
  // start in a later tick than the target, or nothing could tell them apart.
  // The whole run can take less than one tick, so wait for the clock.
  const double tick = static_cast<double>(sysconf(_SC_CLK_TCK));
  for (int i = 0; i < 1000; ++i) {
    std::ifstream uptime("/proc/uptime");
    double seconds = 0;
    if ((uptime >> seconds) && seconds * tick > static_cast<double>(*planned_start) + 1) break;
    usleep(1000);
  }
  target.reset();  // Killed and reaped.
  std::string why_not;
  std::unique_ptr<TestChild> impostor = StartWithPid(pid, &why_not);
  if (!impostor) {
    pty.WriteLine("n");
    pty.WaitForExit(kRunTimeoutS);
    GTEST_SKIP() << why_not;
  }
  ASSERT_TRUE(ProcessAlive(pid));
  ASSERT_NE(ProcessStartTicks(pid), planned_start);  // Not the process of the plan.

  pty.WriteLine("y");
  ASSERT_TRUE(pty.WaitForExit(kRunTimeoutS)) << pty.output();
  std::ifstream in(json_path);
  json out = json::parse(in, nullptr, false);
  SCOPED_TRACE("exit " + std::to_string(pty.exit_code().value_or(-1)) + "\nterminal:\n" +
               pty.output() + "\nstdout:\n" + (out.is_discarded() ? "(not JSON)" : out.dump(2)));
  ASSERT_FALSE(out.is_discarded());
  EXPECT_EQ(out["confirmed"], true);
  const json* result = ResultFor(out, pid);
  ASSERT_NE(result, nullptr);
  EXPECT_EQ((*result)["outcome"], "reused");
  EXPECT_TRUE((*result)["signals"].empty());
  // The new process was left alone.
  EXPECT_TRUE(ProcessAlive(pid));
  EXPECT_FALSE(impostor->TryReap());
  EXPECT_TRUE(AuditedSignals(ws.audit_log(), pid).empty());
  EXPECT_TRUE(pty.exit_code() == 0 || pty.exit_code() == 8 || pty.exit_code() == 9)
      << pty.exit_code().value_or(-1);
}

TEST(KillE2e, AlreadyGonePidIsReported) {
  Workspace ws;
  pid_t gone = 0;
  {
    TestChild brief({"/bin/true"});
    ASSERT_TRUE(brief.WaitForExit(kExitTimeoutS).has_value());
    gone = brief.pid();
  }
  ASSERT_FALSE(ProcessStateOf(gone)) << "PID " << gone << " was reused at once";
  GwRun run = Gw(KillArgs("clean-idle.json", ws, {gone}, {"--yes", "--json"}), SimOptionsIn(ws));
  SCOPED_TRACE(run.Trace());
  ASSERT_FALSE(run.out.is_discarded());
  EXPECT_LT(run.result.exit_code, 128);  // Not a crash.
  EXPECT_TRUE(run.result.exit_code == 0 || run.result.exit_code == 8) << run.result.exit_code;
  const json* skipped = Skipped(run.out, gone);
  const json* result = ResultFor(run.out, gone);
  const bool reported_gone = (skipped != nullptr && (*skipped)["reason_code"] == "gone") ||
                             (result != nullptr && (*result)["outcome"] == "gone");
  EXPECT_TRUE(reported_gone);
  EXPECT_TRUE(AuditedSignals(ws.audit_log(), gone).empty());
}

// ---------------------------------------------------------------------------
// Memory that does not come back.

TEST(CleanE2e, MemoryStillHeldAfterTheProcessEndedIsIncomplete) {
  Workspace ws;
  TestChild keeper;  // GPU 0: the driver keeps its memory.
  TestChild freer;   // GPU 1: freed normally.
  GwRun run =
      Gw(CleanArgs("clean-memory-held.json", ws, {"--yes", "--json", "--settle", "2s"}),
         SimOptionsIn(ws, {{"GW_CLEAN_PID_0", keeper.pid()}, {"GW_CLEAN_PID_1", freer.pid()}}));
  SCOPED_TRACE(run.Trace());
  ASSERT_FALSE(run.out.is_discarded());
  EXPECT_EQ(run.result.exit_code, 9);
  EXPECT_EQ(keeper.WaitForExit(kExitTimeoutS), 128 + SIGTERM);
  EXPECT_EQ(freer.WaitForExit(kExitTimeoutS), 128 + SIGTERM);
  for (pid_t pid : {keeper.pid(), freer.pid()}) {
    const json* result = ResultFor(run.out, pid);
    ASSERT_NE(result, nullptr) << pid;
    EXPECT_EQ((*result)["outcome"], "exited") << pid;
  }
  const json* gpu0 = GpuReport(run.out, 0);
  ASSERT_NE(gpu0, nullptr);
  EXPECT_EQ((*gpu0)["released"], false);
  EXPECT_EQ((*gpu0)["expected_bytes"], 40960 * kMiB);
  EXPECT_EQ((*gpu0)["still_held_bytes"], 40960 * kMiB);
  EXPECT_EQ((*gpu0)["used_after_bytes"], 40960 * kMiB);
  const json* gpu1 = GpuReport(run.out, 1);
  ASSERT_NE(gpu1, nullptr);
  EXPECT_EQ((*gpu1)["released"], true);
  EXPECT_EQ((*gpu1)["freed_bytes"], 20480 * kMiB);
  EXPECT_EQ((*gpu1)["still_held_bytes"], 0u);

  // The text form says so.
  Workspace ws2;
  TestChild keeper2;
  GwRun text = Gw(CleanArgs("clean-memory-held.json", ws2, {"--yes", "--settle", "1s"}),
                  SimOptionsIn(ws2, {{"GW_CLEAN_PID_0", keeper2.pid()}}));
  SCOPED_TRACE(text.Trace());
  EXPECT_EQ(text.result.exit_code, 9);
  EXPECT_NE(Lower(text.result.out + text.result.err).find("still held"), std::string::npos);
  EXPECT_EQ(keeper2.WaitForExit(kExitTimeoutS), 128 + SIGTERM);
}

TEST(CleanE2e, SettleWaitsForTheDriverToReleaseLate) {
  Workspace ws;
  TestChild holder;
  // The scenario's driver keeps the memory until t = 4 s of its timeline, which
  // starts now; the process ends well before that.
  GwRun run = Gw(CleanArgs("clean-late-release.json", ws, {"--yes", "--json", "--settle", "30s"}),
                 SimOptionsIn(ws, {{"GW_CLEAN_PID_0", holder.pid()}}));
  SCOPED_TRACE(run.Trace());
  ASSERT_FALSE(run.out.is_discarded());
  EXPECT_EQ(run.result.exit_code, 0);
  EXPECT_EQ(holder.WaitForExit(kExitTimeoutS), 128 + SIGTERM);
  const json* gpu0 = GpuReport(run.out, 0);
  ASSERT_NE(gpu0, nullptr);
  EXPECT_EQ((*gpu0)["released"], true);
  EXPECT_EQ((*gpu0)["freed_bytes"], 40960 * kMiB);
  EXPECT_EQ((*gpu0)["used_after_bytes"], 0u);
  EXPECT_EQ((*gpu0)["still_held_bytes"], 0u);
}

// ---------------------------------------------------------------------------
// Whose processes: an unprivileged user (gw-e2e) and root.

// Options for running gpuwarden as the test user, with its own writable workspace.
RunOptions UserSimOptions(const Workspace& ws, const TestUser& user,
                          const std::map<std::string, pid_t>& pids = {}) {
  return AsUser(SimOptionsIn(ws, pids), user, ws.path());
}

TestChild::Options RunAs(const TestUser& user) {
  TestChild::Options o;
  o.uid = user.uid;
  o.gid = user.gid;
  return o;
}

TEST(CleanPermissionsE2e, UserCannotKillSomeoneElsesProcess) {
  GW_REQUIRE_TEST_USER(user);
  Workspace ws;
  ws.GiveTo(user);
  TestChild roots;  // Owned by root.
  GwRun run = Gw(KillArgs("clean-idle.json", ws, {roots.pid()}, {"--yes", "--json"}),
                 UserSimOptions(ws, user, {{"GW_CLEAN_PID_0", roots.pid()}}));
  SCOPED_TRACE(run.Trace());
  ASSERT_FALSE(run.out.is_discarded());
  EXPECT_EQ(run.result.exit_code, 8);
  const json* item = Skipped(run.out, roots.pid());
  ASSERT_NE(item, nullptr);
  EXPECT_EQ((*item)["reason_code"], "not_yours");
  EXPECT_EQ(ResultFor(run.out, roots.pid()), nullptr);
  EXPECT_TRUE(ProcessAlive(roots.pid()));
  EXPECT_FALSE(roots.TryReap());
}

TEST(CleanPermissionsE2e, UserCannotAskForOtherUsers) {
  GW_REQUIRE_TEST_USER(user);
  Workspace ws;
  ws.GiveTo(user);
  TestChild roots;
  for (std::vector<std::string> extra :
       {std::vector<std::string>{"--user", "root"}, std::vector<std::string>{"--all-users"}}) {
    extra.insert(extra.end(), {"--yes", "--json"});
    GwRun run = Gw(CleanArgs("clean-idle.json", ws, extra),
                   UserSimOptions(ws, user, {{"GW_CLEAN_PID_0", roots.pid()}}));
    SCOPED_TRACE(run.Trace());
    EXPECT_EQ(run.result.exit_code, 2);
    EXPECT_FALSE(run.result.err.empty());
    EXPECT_TRUE(ProcessAlive(roots.pid()));
  }
  EXPECT_TRUE(AuditedSignals(ws.audit_log(), roots.pid()).empty());
  // The same command without the flag is fine: the flag was the problem.
  GwRun plain = Gw(CleanArgs("clean-idle.json", ws, {"--dry-run", "--json"}),
                   UserSimOptions(ws, user, {{"GW_CLEAN_PID_0", roots.pid()}}));
  EXPECT_EQ(plain.result.exit_code, 0) << plain.Trace();
}

TEST(CleanPermissionsE2e, UserStopsTheirOwnIdleHolderAndNotOthers) {
  GW_REQUIRE_TEST_USER(user);
  Workspace ws;
  ws.GiveTo(user);
  TestChild own({"/bin/sleep", "300"}, RunAs(user));
  TestChild roots;       // Root's idle holder on GPU 1...
  TestChild roots_busy;  // ...next to root's busy process there (the GPU's 93 %).
  ASSERT_TRUE(WaitUntil([&] { return ProcessUid(own.pid()) == user.uid; }, kExitTimeoutS));
  GwRun run = Gw(CleanArgs("clean-idle.json", ws, {"--yes", "--json"}),
                 UserSimOptions(ws, user,
                                {{"GW_CLEAN_PID_0", own.pid()},
                                 {"GW_CLEAN_PID_1", roots.pid()},
                                 {"GW_CLEAN_BUSY_PID", roots_busy.pid()}}));
  SCOPED_TRACE(run.Trace());
  ASSERT_FALSE(run.out.is_discarded());
  EXPECT_EQ(run.result.exit_code, 0);
  const json* mine = Acted(run.out, own.pid());
  ASSERT_NE(mine, nullptr);
  EXPECT_EQ((*mine)["uid"], user.uid);
  EXPECT_EQ((*mine)["user"], user.name);
  const json* theirs = Skipped(run.out, roots.pid());
  ASSERT_NE(theirs, nullptr);
  EXPECT_EQ((*theirs)["reason_code"], "not_yours");
  const json* result = ResultFor(run.out, own.pid());
  ASSERT_NE(result, nullptr);
  EXPECT_EQ((*result)["outcome"], "exited");
  EXPECT_EQ(own.WaitForExit(kExitTimeoutS), 128 + SIGTERM);
  EXPECT_TRUE(ProcessAlive(roots.pid()));
  EXPECT_TRUE(ProcessAlive(roots_busy.pid()));
  EXPECT_EQ(Acted(run.out, roots_busy.pid()), nullptr);
  // The audit log, written by the user, records who asked.
  std::vector<json> lines = AuditLines(ws.audit_log());
  ASSERT_FALSE(lines.empty());
  for (const json& line : lines) {
    if (line.value("event", "") == "signal") {
      EXPECT_EQ(line["caller_uid"], user.uid);
    }
  }
  const json* gpu0 = GpuReport(run.out, 0);
  ASSERT_NE(gpu0, nullptr);
  EXPECT_EQ((*gpu0)["freed_bytes"], 40960 * kMiB);
}

TEST(CleanPermissionsE2e, RootNeedsUserFlagForAnotherUsersProcess) {
  GW_REQUIRE_TEST_USER(user);
  Workspace ws;
  TestChild theirs({"/bin/sleep", "300"}, RunAs(user));
  ASSERT_TRUE(WaitUntil([&] { return ProcessUid(theirs.pid()) == user.uid; }, kExitTimeoutS));
  const std::map<std::string, pid_t> pids = {{"GW_CLEAN_PID_0", theirs.pid()}};

  GwRun refused = Gw(KillArgs("clean-idle.json", ws, {theirs.pid()}, {"--yes", "--json"}),
                     SimOptionsIn(ws, pids));
  {
    SCOPED_TRACE(refused.Trace());
    ASSERT_FALSE(refused.out.is_discarded());
    EXPECT_EQ(refused.result.exit_code, 8);
    const json* item = Skipped(refused.out, theirs.pid());
    ASSERT_NE(item, nullptr);
    EXPECT_EQ((*item)["reason_code"], "needs_user_flag");
    EXPECT_TRUE(ProcessAlive(theirs.pid()));
    EXPECT_TRUE(AuditedSignals(ws.audit_log(), theirs.pid()).empty());
  }
  // clean, by default, proposes only the caller's own processes.
  GwRun clean = Gw(CleanArgs("clean-idle.json", ws, {"--yes", "--json"}), SimOptionsIn(ws, pids));
  {
    SCOPED_TRACE(clean.Trace());
    ASSERT_FALSE(clean.out.is_discarded());
    EXPECT_EQ(Acted(clean.out, theirs.pid()), nullptr);
    const json* item = Skipped(clean.out, theirs.pid());
    ASSERT_NE(item, nullptr);
    EXPECT_EQ((*item)["reason_code"], "needs_user_flag");
    EXPECT_TRUE(ProcessAlive(theirs.pid()));
  }

  GwRun allowed =
      Gw(KillArgs("clean-idle.json", ws, {theirs.pid()}, {"--yes", "--json", "--user", user.name}),
         SimOptionsIn(ws, pids));
  SCOPED_TRACE(allowed.Trace());
  ASSERT_FALSE(allowed.out.is_discarded());
  EXPECT_EQ(allowed.result.exit_code, 0);
  const json* result = ResultFor(allowed.out, theirs.pid());
  ASSERT_NE(result, nullptr);
  EXPECT_EQ((*result)["outcome"], "exited");
  EXPECT_EQ(theirs.WaitForExit(kExitTimeoutS), 128 + SIGTERM);
  EXPECT_EQ(AuditedSignals(ws.audit_log(), theirs.pid()), std::vector<std::string>{"SIGTERM"});
}

}  // namespace
}  // namespace gw::test
