// `gpuwarden why`, `health` and `events` end to end: the real binary, the
// simulated driver, real child processes (an idle holder, an orphan, a zombie)
// and real kernel-log files.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>

#include "e2e/e2e_util.h"
#include "e2e/run_process.h"
#include "e2e/scenario_expect.h"
#include "e2e/user_process.h"
#include "kmsg/xid_nvidia.h"

namespace gw::test {
namespace {

using nlohmann::json;

std::set<std::string> Codes(const json& why) {
  std::set<std::string> codes;
  for (const json& c : why["all_findings_ranked"]) codes.insert(c.get<std::string>());
  return codes;
}

// Every finding object in the why JSON, server-level and per GPU.
std::vector<json> AllFindings(const json& why) {
  std::vector<json> out;
  for (const json& f : why["findings"]) out.push_back(f);
  for (const json& g : why["gpus"]) {
    for (const json& f : g["findings"]) out.push_back(f);
  }
  return out;
}

bool HasFindingForPid(const json& why, const std::string& code, pid_t pid) {
  for (const json& f : AllFindings(why)) {
    if (f["code"] != code) continue;
    for (const json& p : f["pids"]) {
      if (p == pid) return true;
    }
  }
  return false;
}

struct WhyRun {
  RunResult result;
  json out;
};

WhyRun Why(const std::vector<std::string>& args, const RunOptions& options) {
  WhyRun run;
  run.result = RunProcess(Gpuwarden(args), options);
  run.out = json::parse(run.result.out, nullptr, false);
  return run;
}

// The verdict each shipped scenario's name promises (scenarios/README.md).
struct Promise {
  const char* scenario;
  const char* verdict;
  int exit_code;
  std::vector<std::string> must_find;
  std::vector<std::string> extra_args = {};
};

void PrintTo(const Promise& p, std::ostream* os) { *os << p.scenario; }

class ScenarioVerdict : public ::testing::TestWithParam<Promise> {};

TEST_P(ScenarioVerdict, WhyGivesTheVerdictTheScenarioPromises) {
  const Promise& p = GetParam();
  // Real processes stand in for the scenario's "env:NAME" PIDs.
  RunOptions options = SimOptions();
  std::vector<std::unique_ptr<ChildProcess>> children;
  const ExpectedServer server = LoadExpectedServer(ScenarioPath(p.scenario));
  for (const std::string& name : server.pid_env_names) {
    children.push_back(std::make_unique<ChildProcess>());
    options.env[name] = std::to_string(children.back()->pid());
  }
  std::vector<std::string> args = {
      "--sim", ScenarioPath(p.scenario), "--timeout", "1", "why", "--window", "1", "--json"};
  args.insert(args.end(), p.extra_args.begin(), p.extra_args.end());
  WhyRun run = Why(args, options);
  SCOPED_TRACE(std::string(p.scenario) + "\n" + run.result.out + run.result.err);
  ASSERT_FALSE(run.out.is_discarded());
  EXPECT_EQ(run.out["verdict"], p.verdict);
  EXPECT_EQ(run.result.exit_code, p.exit_code);
  const auto codes = Codes(run.out);
  for (const std::string& code : p.must_find) {
    EXPECT_TRUE(codes.count(code)) << "missing " << code;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Shipped, ScenarioVerdict,
    ::testing::Values(
        Promise{"healthy-idle.json", "OK", 0, {}}, Promise{"nvlink-8gpu.json", "OK", 0, {}},
        Promise{"idle-holders.json", "OK", 0, {"IDLE_HOLDER"}, {"--idle-for", "0"}},
        Promise{"bench-8gpu-64proc.json", "BUSY", 10, {"COMPUTE_SATURATED"}},
        Promise{"handle-errors.json", "FAULT", 13, {"GPU_INSUFFICIENT_POWER", "NO_PERMISSION"}},
        Promise{"no-gpus.json", "UNKNOWN", 14, {"NO_GPU_VISIBLE"}},
        Promise{"vram-exhausted.json", "BUSY", 10, {"VRAM_EXHAUSTED"}},
        Promise{"compute-saturated.json", "BUSY", 10, {"COMPUTE_SATURATED"}},
        Promise{"memory-no-process.json", "OK", 0, {"INVISIBLE_HOLDER"}},
        Promise{"xid79-fallen-off-bus.json", "FAULT", 13, {"GPU_LOST"}},
        Promise{"ecc-double-bit.json", "FAULT", 13, {"ECC_DBE_VOLATILE"}},
        Promise{"row-remap-pending.json", "DEGRADED", 12, {"ROW_REMAP_PENDING"}},
        Promise{"hot-while-idle.json", "DEGRADED", 12, {"HOT_WHILE_IDLE"}},
        Promise{"driver-hang.json", "FAULT", 13, {"DRIVER_TIMEOUT"}},
        Promise{"first-gpu-hang.json", "FAULT", 13, {"DRIVER_TIMEOUT", "COMPUTE_SATURATED"}},
        Promise{"init-hang.json", "FAULT", 13, {"DRIVER_TIMEOUT"}},
        Promise{"driver-not-loaded.json", "FAULT", 13, {"DRIVER_NOT_LOADED"}},
        Promise{"version-mismatch.json", "FAULT", 13, {"DRIVER_VERSION_MISMATCH"}},
        Promise{"pcie-link-degraded.json", "DEGRADED", 12, {"PCIE_LINK_DEGRADED"}},
        Promise{"pcie-replays.json", "DEGRADED", 12, {"PCIE_REPLAY_RATE"}},
        Promise{"nvlink-down.json", "DEGRADED", 12, {"NVLINK_DOWN"}},
        Promise{"hw-slowdown.json",
                "DEGRADED",
                12,
                {"HW_SLOWDOWN", "HW_THERMAL_SLOWDOWN", "HW_POWER_BRAKE"}},
        Promise{"retired-pages.json", "FAULT", 13, {"RETIRED_PAGES_LIMIT"}},
        Promise{"row-remap-failed.json", "FAULT", 13, {"ROW_REMAP_FAILED"}},
        Promise{"power-capped.json", "OK", 0, {"COMPUTE_SATURATED"}},
        Promise{"persistence-off.json", "OK", 0, {"PERSISTENCE_OFF"}},
        Promise{"compute-exclusive.json", "BUSY", 10, {"COMPUTE_MODE_EXCLUSIVE"}},
        Promise{"clean-idle.json", "RECLAIMABLE", 11, {"IDLE_HOLDER"}, {"--idle-for", "0"}},
        Promise{"clean-memory-held.json", "OK", 0, {"IDLE_HOLDER"}, {"--idle-for", "0"}},
        Promise{"clean-late-release.json", "OK", 0, {"IDLE_HOLDER"}, {"--idle-for", "0"}}),
    [](const ::testing::TestParamInfo<Promise>& param_info) {
      std::string name = std::filesystem::path(param_info.param.scenario).stem().string();
      for (char& c : name) {
        if (!isalnum(static_cast<unsigned char>(c))) c = '_';
      }
      return name;
    });

TEST(WhyE2e, HealthyServerHasNoWarningAtAll) {
  WhyRun run = Why({"--sim", ScenarioPath("healthy-idle.json"), "why", "--window", "1", "--json"},
                   SimOptions());
  ASSERT_FALSE(run.out.is_discarded()) << run.result.err;
  for (const json& f : AllFindings(run.out)) {
    EXPECT_EQ(f["severity"], "info") << f.dump();
  }
  // The text view answers in its first line.
  RunResult text = RunProcess(
      Gpuwarden({"--sim", ScenarioPath("healthy-idle.json"), "why", "--now"}), SimOptions());
  EXPECT_EQ(text.out.rfind("OK", 0), 0u) << text.out;
}

// config.toml's [placement] reaches `why --need`: with use_remap_pending =
// false the pending-remap GPU is left out, named with its reset, and the
// total quoted is of the GPUs placement could use.
TEST(WhyE2e, PlacementSettingLeavesAPendingRemapGpuOut) {
  TempDir dir;
  RunOptions options = SimOptions();
  const std::vector<std::string> args = {"--sim",     ScenarioPath("row-remap-pending.json"),
                                         "--timeout", "1",
                                         "why",       "--now",
                                         "--need",    "3x40G",
                                         "--json"};
  options.env["GPUWARDEN_CONFIG"] =
      dir.Write("config.toml", "[placement]\nuse_remap_pending = true\n");
  WhyRun usable = Why(args, options);
  ASSERT_FALSE(usable.out.is_discarded()) << usable.result.err;
  EXPECT_EQ(usable.out["verdict"], "OK") << usable.result.out;
  EXPECT_EQ(usable.result.exit_code, 0);

  options.env["GPUWARDEN_CONFIG"] =
      dir.Write("config.toml", "[placement]\nuse_remap_pending = false\n");
  WhyRun strict = Why(args, options);
  ASSERT_FALSE(strict.out.is_discarded()) << strict.result.err;
  EXPECT_EQ(strict.out["verdict"], "BUSY") << strict.result.out;
  json frag;
  for (const json& f : AllFindings(strict.out)) {
    if (f["code"] == "FRAGMENTED") frag = f;
  }
  ASSERT_TRUE(frag.is_object()) << strict.result.out;
  std::vector<double> excluded;
  for (const json& e : frag["evidence"]) {
    if (e["name"] == "excluded") excluded.push_back(e["number"].get<double>());
    if (e["name"] == "excluded" && e["number"] == 1) {
      EXPECT_NE(e["value"].get<std::string>().find("gpuwarden reset --plan 1"), std::string::npos)
          << e.dump();
    }
    // 0, 2 and 3 (39.2 GiB), less the margin each: never GPU 1's 79.2 GiB.
    if (e["name"] == "free_total") {
      EXPECT_LT(e["number"].get<double>(), 197.0 * (1ull << 30)) << e.dump();
    }
  }
  EXPECT_EQ(excluded, (std::vector<double>{1, 3}));

  // An invalid setting is refused, never ignored.
  options.env["GPUWARDEN_CONFIG"] =
      dir.Write("config.toml", "[placement]\nuse_remap_pending = \"no\"\n");
  RunResult bad = RunProcess(Gpuwarden(args), options);
  EXPECT_EQ(bad.exit_code, 3) << bad.err;
  EXPECT_NE(bad.err.find("use_remap_pending"), std::string::npos) << bad.err;

  // Without a need the settings file does not stop the diagnosis: the
  // protected names it would add are said not to apply.
  const RunResult plain = RunProcess(
      Gpuwarden({"--sim", ScenarioPath("row-remap-pending.json"), "why", "--now", "--json"}),
      options);
  EXPECT_NE(plain.exit_code, 3) << plain.err;
  EXPECT_FALSE(json::parse(plain.out, nullptr, false).is_discarded()) << plain.out;
  EXPECT_NE(plain.err.find("built-in protected names only"), std::string::npos) << plain.err;
}

TEST(WhyE2e, RealIdleHolderIsReclaimable) {
  ChildProcess idle;  // A real process that holds "70 GiB" and computes nothing.
  TempDir dir;
  std::string scenario = dir.Write("idle.json", R"({
    "driver": {"version": "550.90.07", "nvml_version": "12.550.90.07", "cuda_version": 12040},
    "gpus": [{"name": "NVIDIA A100-SXM4-80GB", "uuid": "GPU-aaaaaaaa-1111-2222-3333-444444444444",
              "pci_bus_id": "00000000:07:00.0", "memory": {"total_mib": 81920, "used_mib": 71680},
              "utilization": {"gpu": 0, "memory": 0}, "temperature_c": 33,
              "processes": [{"pid": "env:GW_IDLE_PID", "used_mib": 71680, "sm_pct": 0,
                             "mem_pct": 0}]}]
  })");
  RunOptions o = SimOptions();
  o.env["GW_IDLE_PID"] = std::to_string(idle.pid());
  WhyRun run = Why({"--sim", scenario, "why", "--window", "1", "--idle-for", "0", "--json"}, o);
  SCOPED_TRACE(run.result.out + run.result.err);
  ASSERT_FALSE(run.out.is_discarded());
  EXPECT_EQ(run.out["verdict"], "RECLAIMABLE");
  EXPECT_EQ(run.result.exit_code, 11);
  EXPECT_TRUE(HasFindingForPid(run.out, "IDLE_HOLDER", idle.pid()));
}

TEST(WhyE2e, RealOrphanIsFound) {
  // sh starts a background sleep and exits: the sleep is re-parented and keeps
  // its dead parent's process group — a dataloader worker of a killed run.
  RunResult started =
      RunProcess({"/bin/sh", "-c", "sleep 300 </dev/null >/dev/null 2>&1 & echo $!"});
  ASSERT_EQ(started.exit_code, 0);
  const pid_t orphan = std::stoi(started.out);
  struct Killer {
    pid_t pid;
    ~Killer() { kill(pid, SIGKILL); }
  } killer{orphan};
  TempDir dir;
  std::string scenario = dir.Write("orphan.json", R"({
    "driver": {"version": "550.90.07", "nvml_version": "12.550.90.07", "cuda_version": 12040},
    "gpus": [{"name": "NVIDIA A100-SXM4-80GB", "uuid": "GPU-bbbbbbbb-1111-2222-3333-444444444444",
              "pci_bus_id": "00000000:07:00.0", "memory": {"total_mib": 81920, "used_mib": 61440},
              "utilization": {"gpu": 0, "memory": 0}, "temperature_c": 33,
              "processes": [{"pid": "env:GW_ORPHAN_PID", "used_mib": 61440, "sm_pct": 0,
                             "mem_pct": 0}]}]
  })");
  RunOptions o = SimOptions();
  o.env["GW_ORPHAN_PID"] = std::to_string(orphan);
  WhyRun run = Why({"--sim", scenario, "why", "--now", "--json"}, o);
  SCOPED_TRACE(run.result.out + run.result.err);
  ASSERT_FALSE(run.out.is_discarded());
  EXPECT_TRUE(HasFindingForPid(run.out, "ORPHAN_HOLDER", orphan));
  EXPECT_EQ(run.out["verdict"], "RECLAIMABLE");
}

TEST(WhyE2e, RealZombieHolderPointsAtItsParent) {
  ZombieParent parent(/*timeout_s=*/10);
  const pid_t zombie = parent.zombie();
  ASSERT_GT(zombie, 0) << "no zombie appeared";
  RunOptions o = SimOptions();
  o.env["GW_ZOMBIE_PID"] = std::to_string(zombie);
  WhyRun run = Why({"--sim", ScenarioPath("zombie-holder.json"), "why", "--now", "--json"}, o);
  SCOPED_TRACE(run.result.out + run.result.err);
  ASSERT_FALSE(run.out.is_discarded());
  EXPECT_TRUE(HasFindingForPid(run.out, "ZOMBIE_HOLDER", zombie));
  // The next step names the parent, which is what can actually help.
  EXPECT_NE(run.result.out.find(std::to_string(parent.pid())), std::string::npos);
}

TEST(WhyE2e, NeedThatCannotBePlacedSaysWhy) {
  WhyRun run = Why(
      {"--sim", ScenarioPath("vram-exhausted.json"), "why", "--now", "--need", "2x24G", "--json"},
      SimOptions());
  ASSERT_FALSE(run.out.is_discarded()) << run.result.err;
  const auto codes = Codes(run.out);
  EXPECT_TRUE(codes.count("NEED_UNSATISFIABLE") || codes.count("FRAGMENTED")) << run.result.out;
  RunResult bad =
      RunProcess(Gpuwarden({"--sim", ScenarioPath("vram-exhausted.json"), "why", "--need", "lots"}),
                 SimOptions());
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("lots"), std::string::npos) << bad.err;
}

TEST(WhyE2e, ExplainKnownAndUnknownCodes) {
  RunResult known = RunProcess(Gpuwarden({"why", "--explain", "IDLE_HOLDER"}), SimOptions());
  EXPECT_EQ(known.exit_code, 0);
  EXPECT_NE(known.out.find("IDLE_HOLDER"), std::string::npos) << known.out;
  RunResult unknown = RunProcess(Gpuwarden({"why", "--explain", "NO_SUCH_CODE"}), SimOptions());
  EXPECT_EQ(unknown.exit_code, 2);
  EXPECT_NE(unknown.err.find("NO_SUCH_CODE"), std::string::npos) << unknown.err;
}

std::string WriteLog(const TempDir& dir, const std::string& name,
                     const std::vector<std::string>& lines) {
  std::string text;
  for (const auto& l : lines) text += l + "\n";
  return dir.Write(name, text);
}

TEST(WhyE2e, ApplicationXidsAloneNeverMakeAFault) {
  TempDir dir;
  // GPU 0 of healthy-idle.json is at 00000000:18:00.0.
  std::string log = WriteLog(
      dir, "app-xids.log",
      // Kernel time only: events of the log's one boot, current (a dated 2024 log would be
      // history today: docs/diagnosis.md, event-age rules).
      {"[ 4577.308065] NVRM: Xid (PCI:0000:18:00): 13, pid='<unknown>', "
       "name=<unknown>, Graphics SM Warp Exception on (GPC 7, TPC 7, SM 0): Illegal Instruction",
       "[ 4578.308065] NVRM: Xid (PCI:0000:18:00): 31, pid=169800, name=python, Ch "
       "00000023, intr 00000000. MMU Fault: ENGINE GRAPHICS GPCCLIENT_T1_0 faulted @ 0x7f_00000000",
       "[ 4579.308065] NVRM: Xid (PCI:0000:18:00): 43, pid=169800, name=python, Ch "
       "00000008",
       "[ 4580.308065] NVRM: Xid (PCI:0000:18:00): 45, pid=169800, name=python, Ch "
       "00000008"});
  WhyRun run = Why(
      {"--sim", ScenarioPath("healthy-idle.json"), "why", "--now", "--kernel-log", log, "--json"},
      SimOptions());
  SCOPED_TRACE(run.result.out + run.result.err);
  ASSERT_FALSE(run.out.is_discarded());
  EXPECT_NE(run.out["verdict"], "FAULT");
  EXPECT_NE(run.out["verdict"], "DEGRADED");
  EXPECT_TRUE(Codes(run.out).count("XID_APPLICATION"));
}

TEST(WhyE2e, FallenOffTheBusInTheKernelLogIsAFault) {
  TempDir dir;
  // GPU 5 of xid79-fallen-off-bus.json (00000000:BB:00.0) is lost. The Xid 79
  // line and its notice are one event.
  std::string log = WriteLog(
      dir, "xid79.log",
      {"[ 4254.197850] NVRM: GPU at PCI:0000:bb:00: GPU-0b11d014-1685-04bd-26ed-5fc0bc1c44ae",
       "[ 4254.197860] NVRM: Xid (PCI:0000:bb:00): 79, pid='<unknown>', name=<unknown>, GPU has "
       "fallen off the bus.",
       "[ 4254.197871] NVRM: GPU 0000:bb:00.0: GPU has fallen off the bus."});
  WhyRun run = Why({"--sim", ScenarioPath("xid79-fallen-off-bus.json"), "why", "--now",
                    "--kernel-log", log, "--json"},
                   SimOptions());
  SCOPED_TRACE(run.result.out + run.result.err);
  ASSERT_FALSE(run.out.is_discarded());
  EXPECT_EQ(run.out["verdict"], "FAULT");
  EXPECT_EQ(run.result.exit_code, 13);
  bool one_event = false;
  for (const json& f : AllFindings(run.out)) {
    if (f["code"] != "XID_FATAL") continue;
    EXPECT_EQ(f["category"], "bus");
    one_event = f["message"].get<std::string>().find("x2") == std::string::npos;
  }
  EXPECT_TRUE(one_event);
}

TEST(WhyE2e, AGpuThatReadsNormallyAfterFallingOffTheBusIsRecovered) {
  TempDir dir;
  // GPU 1 of healthy-idle.json (00000000:3B:00.0) answers NVML normally.
  std::string log =
      WriteLog(dir, "xid79.log",
               {"[ 1234.500000] NVRM: Xid (PCI:0000:3b:00): 79, GPU has fallen off the bus.",
                "[ 1234.500010] NVRM: GPU 0000:3b:00.0: GPU has fallen off the bus."});
  WhyRun run = Why(
      {"--sim", ScenarioPath("healthy-idle.json"), "why", "--now", "--kernel-log", log, "--json"},
      SimOptions());
  SCOPED_TRACE(run.result.out + run.result.err);
  ASSERT_FALSE(run.out.is_discarded());
  EXPECT_NE(run.out["verdict"], "FAULT");
  EXPECT_TRUE(Codes(run.out).count("XID_RECOVERED"));
  EXPECT_FALSE(Codes(run.out).count("XID_FATAL"));
}

TEST(WhyE2e, AGpuTheKernelSawThatTheDumpLacksIsAServerFault) {
  const std::string dump =
      SharedSamplesDir() + "/03_nvidia-smi-q-x_Tesla-T4_515.105.01_dtd-v11.xml";
  if (!std::filesystem::exists(dump)) {
    GTEST_SKIP() << "real captures live in ../shared/research/samples and were not found";
  }
  TempDir dir;
  std::string log = WriteLog(
      dir, "rminit.log",
      {"[  903.610907] NVRM: GPU 0000:98:00.0: RmInitAdapter failed! (0x62:0x65:1792)",
       "[  903.611884] NVRM: GPU 0000:98:00.0: rm_init_adapter failed, device minor number 1"});
  WhyRun run = Why({"why", "--from", dump, "--kernel-log", log, "--json"}, SimOptions());
  SCOPED_TRACE(run.result.out + run.result.err);
  ASSERT_FALSE(run.out.is_discarded());
  EXPECT_EQ(run.out["verdict"], "FAULT");
  EXPECT_EQ(run.result.exit_code, 13);
  EXPECT_TRUE(Codes(run.out).count("GPU_MISSING"));
}

TEST(WhyE2e, OfflineDumpAndKernelLogAreJudgedTogether) {
  const std::string dump =
      SharedSamplesDir() + "/03_nvidia-smi-q-x_Tesla-T4_515.105.01_dtd-v11.xml";
  const std::string log = SharedSamplesDir() + "/kernel-log_xid119-gsp-timeout_H100_dmesg.log";
  if (!std::filesystem::exists(dump) || !std::filesystem::exists(log)) {
    GTEST_SKIP() << "real captures live in ../shared/research/samples and were not found";
  }
  WhyRun run = Why({"why", "--from", dump, "--kernel-log", log, "--json"}, SimOptions());
  SCOPED_TRACE(run.result.out + run.result.err);
  ASSERT_FALSE(run.out.is_discarded());
  EXPECT_EQ(run.out["window"]["samples"], 1);
  EXPECT_FALSE(run.out["kernel_log"]["sources"].empty());
  // The GSP timeouts are on another machine's GPU: server-level evidence, not invented GPUs.
  EXPECT_EQ(run.out["gpus"].size(), 1u);
}

TEST(HealthE2e, QuietWhenHealthyAndCodesForDegradedAndFailed) {
  RunResult healthy = RunProcess(
      Gpuwarden({"--sim", ScenarioPath("healthy-idle.json"), "health", "--now"}), SimOptions());
  EXPECT_EQ(healthy.exit_code, 0) << healthy.out << healthy.err;
  EXPECT_TRUE(healthy.out.empty()) << healthy.out;

  // A busy server is healthy hardware: health says nothing.
  RunResult busy = RunProcess(
      Gpuwarden({"--sim", ScenarioPath("vram-exhausted.json"), "health", "--now"}), SimOptions());
  EXPECT_EQ(busy.exit_code, 0) << busy.out;

  RunResult degraded =
      RunProcess(Gpuwarden({"--sim", ScenarioPath("row-remap-pending.json"), "health", "--now"}),
                 SimOptions());
  EXPECT_EQ(degraded.exit_code, 12) << degraded.out;
  EXPECT_FALSE(degraded.out.empty());

  RunResult failed =
      RunProcess(Gpuwarden({"--sim", ScenarioPath("xid79-fallen-off-bus.json"), "health", "--now"}),
                 SimOptions());
  EXPECT_EQ(failed.exit_code, 13) << failed.out;
  EXPECT_NE(failed.out.find("GPU 5"), std::string::npos) << failed.out;

  RunResult json_run = RunProcess(
      Gpuwarden({"--sim", ScenarioPath("xid79-fallen-off-bus.json"), "health", "--now", "--json"}),
      SimOptions());
  json out = json::parse(json_run.out, nullptr, false);
  ASSERT_FALSE(out.is_discarded()) << json_run.out;
  EXPECT_EQ(out["health"], "failed");
}

TEST(EventsE2e, ListsExplainsAndAttributesNvrmEvents) {
  TempDir dir;
  std::string log = WriteLog(
      dir, "mixed.log",
      {"[  12.000000] usb 1-1: new high-speed USB device number 2 using xhci_hcd",
       "[ 100.500000] NVRM: Xid (PCI:0000:19:00): 79, pid=1234, name=python, GPU has fallen off "
       "the bus.",
       "[ 101.000000] EXT4-fs (sda1): mounted filesystem",
       "[ 102.000000] NVRM: Xid (PCI:0000:3b:00): 13, pid=4242, name=\x1b[2Jevil, Graphics "
       "Exception",
       "\x01\x02\xff garbage line"});
  RunResult r = RunProcess(Gpuwarden({"events", "--kernel-log", log, "--json"}), SimOptions());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  json out = json::parse(r.out, nullptr, false);
  ASSERT_FALSE(out.is_discarded()) << r.out;
  std::map<unsigned, json> by_xid;
  for (const json& e : out["events"]) {
    if (e.contains("xid") && !e["xid"].is_null()) by_xid[e["xid"].get<unsigned>()] = e;
  }
  ASSERT_TRUE(by_xid.count(79)) << r.out;
  ASSERT_TRUE(by_xid.count(13)) << r.out;
  EXPECT_EQ(by_xid[79]["xid_info"]["hardware"], true);
  EXPECT_EQ(by_xid[13]["xid_info"]["hardware"], false);

  RunResult text = RunProcess(Gpuwarden({"events", "--kernel-log", log}), SimOptions());
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("79"), std::string::npos);
  EXPECT_EQ(text.out.find('\x1b'), std::string::npos) << "raw ESC reached the terminal";

  RunResult missing =
      RunProcess(Gpuwarden({"events", "--kernel-log", dir.path() + "/nope.log"}), SimOptions());
  EXPECT_EQ(missing.exit_code, 3);
  EXPECT_NE(missing.err.find("nope.log"), std::string::npos) << missing.err;
}

// One kernel-log line per code of NVIDIA's catalog through `events --json`:
// each event carries NVIDIA's row, and its action, verdict and category
// agree with NVIDIA's immediate resolution.
TEST(EventsE2e, EveryCataloguedXidAgreesWithNvidiasResolution) {
  using kmsg::NvidiaResolution;
  TempDir dir;
  std::vector<std::string> lines;
  for (const kmsg::NvidiaXid& row : kmsg::NvidiaXidCatalog()) {
    lines.push_back(
        fmt::format("[ {}.000000] NVRM: Xid (PCI:0000:3b:00): {}, pid=4242, "
                    "name=python3, event {}",
                    100 + row.code, row.code, row.mnemonic));
  }
  const std::string log = WriteLog(dir, "every-xid.log", lines);
  RunResult r = RunProcess(Gpuwarden({"events", "--kernel-log", log, "--json"}), SimOptions());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json out = json::parse(r.out, nullptr, false);
  ASSERT_FALSE(out.is_discarded()) << r.out;
  std::map<unsigned, json> info;
  for (const json& e : out["events"]) {
    if (e.value("xid", json()).is_number()) info[e["xid"].get<unsigned>()] = e["xid_info"];
  }
  ASSERT_EQ(info.size(), kmsg::NvidiaXidCatalog().size());
  const std::set<unsigned> application = {13, 31, 43, 45, 68, 109};
  for (const kmsg::NvidiaXid& row : kmsg::NvidiaXidCatalog()) {
    SCOPED_TRACE(row.code);
    const json& x = info[row.code];
    ASSERT_TRUE(x.is_object());
    EXPECT_EQ(x["known"], true);
    EXPECT_EQ(x["mnemonic"], std::string(row.mnemonic));
    EXPECT_EQ(x["nvidia"]["immediate"], std::string(kmsg::NvidiaResolutionToken(row.immediate)));
    EXPECT_EQ(x["nvidia"]["investigatory"], std::string(row.investigatory));
    EXPECT_EQ(x["nvidia"]["unused"], row.description == "Unused");
    const std::string action = x["action"];
    const std::string impact = x["impact"];
    switch (row.immediate) {
      case NvidiaResolution::kRestartApp:
      case NvidiaResolution::kCheckUvm:
        EXPECT_EQ(action, "restart_app");
        EXPECT_NE(impact, "fault");
        break;
      case NvidiaResolution::kIgnore:
        EXPECT_EQ(action, "ignore");
        EXPECT_EQ(impact, "none");
        break;
      case NvidiaResolution::kResetGpu:
        EXPECT_EQ(action, "reset_gpu");
        EXPECT_EQ(impact, "fault");
        break;
      case NvidiaResolution::kRestartBareMetal:
      case NvidiaResolution::kRestartVm:
        EXPECT_EQ(action, "reboot_node");
        EXPECT_EQ(impact, "fault");
        break;
      case NvidiaResolution::kCheckMechanicals:
        EXPECT_EQ(action, "check_mechanicals");
        EXPECT_EQ(impact, "fault");
        break;
      case NvidiaResolution::kContactSupport:
        EXPECT_EQ(action, "contact_support");
        EXPECT_EQ(impact, "degraded");
        break;
      case NvidiaResolution::kUpdateSwFw:
        EXPECT_EQ(action, "update_software");
        break;
      case NvidiaResolution::kWorkflowXid48:
        EXPECT_EQ(action, "drain");
        EXPECT_EQ(impact, "fault");
        break;
      default:
        break;
    }
    // Whose fault: the device plugin's application set, and nothing else;
    // "hardware" only for a 154 with no Xid before it to say more.
    EXPECT_EQ(x["category"] == "application", application.count(row.code) == 1) << x.dump();
    if (row.code != 154) {
      EXPECT_NE(x["category"], "hardware") << x.dump();
    }
  }
}

// The lost GPU of the simulated server (GPU 5: NVML gives it no address) and
// a plain dmesg log's Xid 79 at the kernel's 0000:bb:00: `events` and `why`
// both name GPU 5 with its address.
TEST(EventsE2e, AnXidOfALostGpuIsBoundToItsIndex) {
  TempDir dir;
  const std::string log = WriteLog(
      dir, "dmesg.log",
      {"[12877.612345] NVRM: Xid (PCI:0000:bb:00): 79, pid='<unknown>', name=<unknown>, GPU has "
       "fallen off the bus."});
  const std::string scenario = ScenarioPath("xid79-fallen-off-bus.json");
  RunResult r = RunProcess(Gpuwarden({"--sim", scenario, "events", "--kernel-log", log, "--json"}),
                           SimOptions());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json out = json::parse(r.out, nullptr, false);
  ASSERT_FALSE(out.is_discarded()) << r.out;
  ASSERT_EQ(out["events"].size(), 1u) << r.out;
  EXPECT_EQ(out["events"][0]["gpu_index"], 5) << r.out;
  EXPECT_EQ(out["events"][0]["gpu_placed_by_order"], true) << r.out;

  RunResult text =
      RunProcess(Gpuwarden({"--sim", scenario, "events", "--kernel-log", log}), SimOptions());
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("  GPU 5 (PCI 0000:bb:00)  Xid 79 "), std::string::npos) << text.out;

  RunResult why = RunProcess(Gpuwarden({"--sim", scenario, "--timeout", "1", "why", "--window", "1",
                                        "--kernel-log", log, "--json"}),
                             SimOptions());
  const json w = json::parse(why.out, nullptr, false);
  ASSERT_FALSE(w.is_discarded()) << why.out;
  EXPECT_NE(why.out.find("GPU 5 (PCI 0000:bb:00) fell off the bus (Xid 79)"), std::string::npos)
      << why.out;
  EXPECT_NE(why.out.find("GPU 5 (PCI 0000:bb:00) is lost"), std::string::npos) << why.out;
  EXPECT_NE(why.out.find("the kernel logged Xid 79 for the same GPU"), std::string::npos)
      << why.out;
  EXPECT_EQ(why.out.find("The GPU at PCI"), std::string::npos) << why.out;
}

// A dmesg file carries kernel times only. Its boots cannot be placed on the
// wall clock unless the running kernel's own log holds its lines (it cannot
// here: the log's NVRM lines are made up), so no wall time is invented: the
// earlier boot is "another boot", the last one "not matched". A line that
// carries its wall time keeps it. (Placing a file of the running boot is
// shown by EventsText.AKernelTimeOfTheRunningBootIsShownAtItsWallTime, with
// a fake boot start.)
TEST(EventsE2e, KernelTimesOfAnotherBootGetNoInventedWallTime) {
  TempDir dir;
  const std::string log = WriteLog(
      dir, "dmesg.log",
      {"[    0.000000] Linux version 6.1.0-18-amd64 (debian-kernel@lists.debian.org)",
       "[  100.250000] NVRM: Xid (PCI:0000:3b:00): 48, pid=1, name=a, An uncorrectable double "
       "bit error",
       "[    0.000000] Linux version 6.1.0-18-amd64 (debian-kernel@lists.debian.org)",
       "[12877.612345] NVRM: Xid (PCI:0000:3b:00): 13, pid=4242, name=python, Graphics "
       "Exception"});
  RunResult r = RunProcess(Gpuwarden({"events", "--kernel-log", log}), SimOptions());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("\nboot+100.2s (another boot; no wall-clock time)  "), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("\nboot+12877.6s (boot not matched to this one; no wall-clock time)  "),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("  times: boot+N s: seconds since that boot."), std::string::npos) << r.out;

  RunResult j = RunProcess(Gpuwarden({"events", "--kernel-log", log, "--json"}), SimOptions());
  ASSERT_EQ(j.exit_code, 0) << j.err;
  const json out = json::parse(j.out, nullptr, false);
  ASSERT_FALSE(out.is_discarded()) << j.out;
  std::map<unsigned, json> by_xid;
  for (const json& e : out["events"]) {
    if (e.value("xid", json()).is_number()) by_xid[e["xid"].get<unsigned>()] = e;
  }
  ASSERT_EQ(by_xid.size(), 2u) << j.out;
  EXPECT_EQ(by_xid[48]["time_source"], "other_boot");
  EXPECT_EQ(by_xid[13]["time_source"], "unmatched_boot");
  EXPECT_EQ(by_xid[13]["monotonic_s"], 12877.612345);
  EXPECT_TRUE(by_xid[13]["time_unix_ms"].is_null());
  EXPECT_TRUE(by_xid[13]["time_utc"].is_null());

  // `dmesg --time-format iso`: the line's own wall time, in UTC in the JSON.
  const std::string iso =
      WriteLog(dir, "iso.log",
               {"2026-11-23T22:17:22,612345+00:00 NVRM: Xid (PCI:0000:3b:00): 79, pid='<unknown>', "
                "name=<unknown>, GPU has fallen off the bus."});
  RunResult k = RunProcess(Gpuwarden({"events", "--kernel-log", iso, "--json"}), SimOptions());
  ASSERT_EQ(k.exit_code, 0) << k.err;
  const json iso_out = json::parse(k.out, nullptr, false);
  ASSERT_FALSE(iso_out.is_discarded()) << k.out;
  ASSERT_EQ(iso_out["events"].size(), 1u) << k.out;
  EXPECT_EQ(iso_out["events"][0]["time_source"], "log");
  EXPECT_EQ(iso_out["events"][0]["time_utc"], "2026-11-23T22:17:22.612Z");
}

TEST(EventsE2e, RealGspTimeoutCapture) {
  const std::string log = SharedSamplesDir() + "/kernel-log_xid119-gsp-timeout_H100_dmesg.log";
  if (!std::filesystem::exists(log)) {
    GTEST_SKIP() << "real captures live in ../shared/research/samples and were not found";
  }
  RunResult r = RunProcess(Gpuwarden({"events", "--kernel-log", log, "--json"}), SimOptions());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  json out = json::parse(r.out);
  unsigned xid119 = 0;
  for (const json& e : out["events"]) {
    if (e.value("xid", json()) == 119) ++xid119;
  }
  EXPECT_GE(xid119, 3u) << r.out;
}

}  // namespace
}  // namespace gw::test
