// --dev-dir end to end: the real gpuwarden binary, the simulated NVML and a
// real process holding "device files" in a temporary directory. The holder
// scan finds it there, and status, why and clean all map <dev-dir>/nvidia1 to
// the GPU whose minor number is 1 (one parser, proc::GpuDeviceMinor, given
// the directory the scan used).
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "e2e/e2e_util.h"
#include "e2e/run_process.h"
#include "test_paths.h"

namespace gw::test {
namespace {

using nlohmann::json;

// memory-no-process.json: GPU 0 (minor 0) lists a process; GPU 1 (minor 1)
// has 37 GiB in use and lists none: an unlisted holder of GPU 1's device
// file is the suspect.
constexpr const char* kScenario = "memory-no-process.json";

// A process holding <dir>/nvidia1 and <dir>/nvidiactl open (fds 3 and 4),
// as a CUDA process holds the real ones.
class Holder {
 public:
  explicit Holder(const TempDir& dev)
      : gpu_file_(dev.Write("nvidia1", "")),
        ctl_file_(dev.Write("nvidiactl", "")),
        // One process holds them: sh opens them and becomes sleep (no children
        // that would inherit the descriptors and hold the files too).
        child_({"/bin/sh", "-c", "exec 3<\"$0\" 4<\"$1\"; exec sleep 600", gpu_file_, ctl_file_}) {
    dev.Write("nvidia0", "");
    for (int i = 0; i < 500 && !Holds(); ++i) usleep(10000);
  }
  pid_t pid() const { return child_.pid(); }
  const std::string& gpu_file() const { return gpu_file_; }
  bool Holds() const {
    std::error_code ec;
    const std::string fd = "/proc/" + std::to_string(child_.pid()) + "/fd/";
    return std::filesystem::read_symlink(fd + "3", ec) == gpu_file_ && !ec &&
           std::filesystem::read_symlink(fd + "4", ec) == ctl_file_ && !ec;
  }

 private:
  std::string gpu_file_;
  std::string ctl_file_;
  ChildProcess child_;
};

RunOptions Options(const TempDir& work) {
  RunOptions o = SimOptions();
  // An empty settings file: one on this machine must not change the plan.
  o.env["GPUWARDEN_CONFIG"] = work.Write("config.toml", "");
  return o;
}

json RunJson(const std::vector<std::string>& args, const RunOptions& options, int want_exit,
             std::string* trace) {
  RunResult r = RunProcess(Gpuwarden(args), options);
  *trace = "exit " + std::to_string(r.exit_code) + "\nstdout:\n" + r.out + "\nstderr:\n" + r.err;
  EXPECT_EQ(r.exit_code, want_exit);
  return json::parse(r.out, nullptr, false);
}

TEST(DevDirE2e, StatusMapsTheHeldDeviceFileToItsGpu) {
  TempDir dev;
  TempDir work;
  Holder holder(dev);
  ASSERT_TRUE(holder.Holds());
  std::string trace;
  const json out = RunJson({"--dev-dir", dev.path(), "--sim", ScenarioPath(kScenario), "--timeout",
                            "5", "status", "--json"},
                           Options(work), 0, &trace);
  SCOPED_TRACE(trace);
  ASSERT_FALSE(out.is_discarded());
  const json* found = nullptr;
  for (const json& h : out["device_holders_not_listed"]) {
    if (h["pid"] == holder.pid()) found = &h;
  }
  ASSERT_NE(found, nullptr) << out["device_holders_not_listed"].dump();
  EXPECT_EQ((*found)["gpu_indices"], json::array({1}));
  // Its device files are shown as the kernel reports them, under --dev-dir.
  EXPECT_NE(found->dump().find(holder.gpu_file()), std::string::npos) << found->dump();
}

TEST(DevDirE2e, WhyBlamesTheHolderOfTheGpusDeviceFile) {
  TempDir dev;
  TempDir work;
  Holder holder(dev);
  ASSERT_TRUE(holder.Holds());
  std::string trace;
  const json out = RunJson({"--dev-dir", dev.path(), "--sim", ScenarioPath(kScenario), "--timeout",
                            "5", "why", "--window", "1", "--json"},
                           Options(work), 0, &trace);
  SCOPED_TRACE(trace);
  ASSERT_FALSE(out.is_discarded());
  // Both rules that read device files name the holder on GPU 1, and only there.
  std::set<std::string> on_gpu1;
  for (const json& g : out["gpus"]) {
    for (const json& f : g["findings"]) {
      const bool names_holder = f["pids"] == json::array({holder.pid()});
      if (g["index"] == 1 && names_holder) {
        EXPECT_EQ(f["gpus"], json::array({1})) << f.dump();
        on_gpu1.insert(f["code"].get<std::string>());
      } else {
        EXPECT_FALSE(names_holder) << f.dump();
      }
    }
  }
  EXPECT_EQ(on_gpu1, (std::set<std::string>{"INVISIBLE_HOLDER", "UNLISTED_DEVICE_HOLDER"}))
      << out["gpus"].dump();
}

TEST(DevDirE2e, CleanPlansTheHolderOnItsGpuOnly) {
  TempDir dev;
  TempDir work;
  Holder holder(dev);
  ASSERT_TRUE(holder.Holds());
  const std::string audit = work.path() + "/audit.jsonl";
  auto clean = [&](const std::string& gpu, std::string* trace) {
    return RunJson({"--dev-dir", dev.path(), "--sim", ScenarioPath(kScenario), "--timeout", "5",
                    "clean", "--dry-run", "--json", "--idle-for", "0s", "--window", "1",
                    "--audit-log", audit, "--gpu", gpu},
                   Options(work), 0, trace);
  };
  std::string trace;
  const json on_gpu1 = clean("1", &trace);
  SCOPED_TRACE(trace);
  ASSERT_FALSE(on_gpu1.is_discarded());
  const json* item = nullptr;
  for (const json& i : on_gpu1["plan"]["act"]) {
    if (i["pid"] == holder.pid()) item = &i;
  }
  ASSERT_NE(item, nullptr) << on_gpu1["plan"].dump();
  EXPECT_EQ((*item)["gpus"], json::array({1}));
  EXPECT_EQ((*item)["reason_code"], "stale_device_holder");

  std::string trace0;
  const json on_gpu0 = clean("0", &trace0);
  SCOPED_TRACE(trace0);
  ASSERT_FALSE(on_gpu0.is_discarded());
  for (const json& i : on_gpu0["plan"]["act"]) EXPECT_NE(i["pid"], holder.pid()) << i.dump();
  EXPECT_TRUE(holder.Holds());  // A dry run signals nothing.
}

// reset --plan names the process holding the GPU's device file as a job to
// end before the reset, and only on that GPU's plan.
TEST(DevDirE2e, ResetPlanNamesTheHolderOfTheGpusDeviceFile) {
  TempDir dev;
  TempDir work;
  Holder holder(dev);
  ASSERT_TRUE(holder.Holds());
  auto plan = [&](const std::string& gpu, std::string* trace) {
    return RunJson({"--dev-dir", dev.path(), "--sim", ScenarioPath(kScenario), "--timeout", "5",
                    "reset", "--plan", gpu, "--now", "--json"},
                   Options(work), 0, trace);
  };
  std::string trace;
  const json on_gpu1 = plan("1", &trace);
  SCOPED_TRACE(trace);
  ASSERT_FALSE(on_gpu1.is_discarded());
  EXPECT_EQ(on_gpu1["schema"], "gpuwarden.reset_plan");
  EXPECT_EQ(on_gpu1["gpu"]["index"], 1);
  EXPECT_TRUE(on_gpu1["live"]);
  const json& steps = on_gpu1["steps"];
  ASSERT_GE(steps.size(), 3u);
  EXPECT_EQ(steps[0]["kind"], "end_jobs");
  bool named = false;
  for (const json& h : steps[0]["holders"]) named = named || h["pid"] == holder.pid();
  EXPECT_TRUE(named) << steps[0].dump();
  EXPECT_NE(steps[0]["commands"][0].get<std::string>().find(std::to_string(holder.pid())),
            std::string::npos);
  bool reset = false;
  for (const json& st : steps) {
    if (st["kind"] == "reset") {
      reset = true;
      EXPECT_EQ(st["commands"][0], "sudo nvidia-smi -r -i 00000000:41:00.0");
    }
  }
  EXPECT_TRUE(reset);
  // GPU 0's plan does not name it.
  std::string trace0;
  const json on_gpu0 = plan("0", &trace0);
  SCOPED_TRACE(trace0);
  for (const json& st : on_gpu0["steps"]) {
    for (const json& h : st["holders"]) EXPECT_NE(h["pid"], holder.pid()) << st.dump();
  }
  EXPECT_TRUE(holder.Holds());  // A plan does nothing.
  // An unknown GPU is a usage error naming it.
  RunResult bad = RunProcess(Gpuwarden({"--dev-dir", dev.path(), "--sim", ScenarioPath(kScenario),
                                        "reset", "--plan", "9", "--now"}),
                             Options(work));
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("--plan 9"), std::string::npos) << bad.err;
}

// From a dump the plan knows the listed processes by name: the display
// server and the MPS server, each with the way to stop it; it says what a
// dump cannot tell.
TEST(DevDirE2e, ResetPlanFromADumpNamesTheDisplayAndMps) {
  TempDir work;
  const std::string dump =
      gw::test::SourceDir() + "/tests/corpus/mps-server-and-display-holders/dump.xml";
  std::string trace;
  const json plan0 =
      RunJson({"reset", "--plan", "0", "--from", dump, "--json"}, Options(work), 0, &trace);
  SCOPED_TRACE(trace);
  ASSERT_FALSE(plan0.is_discarded());
  EXPECT_FALSE(plan0["live"]);
  ASSERT_GE(plan0["steps"].size(), 1u);
  EXPECT_EQ(plan0["steps"][0]["kind"], "stop_display");
  EXPECT_EQ(plan0["steps"][0]["holders"].size(), 2u);
  EXPECT_EQ(plan0["notes"].size(), 2u);
  const json plan1 = RunJson({"reset", "--plan", "00000000:0F:00.0", "--from", dump, "--json"},
                             Options(work), 0, &trace);
  std::vector<std::string> kinds;
  for (const json& st : plan1["steps"]) kinds.push_back(st["kind"]);
  EXPECT_EQ(kinds, (std::vector<std::string>{"end_jobs", "stop_mps", "reset", "restart", "check"}))
      << plan1.dump();
}

}  // namespace
}  // namespace gw::test
