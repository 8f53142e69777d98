// `gpuwarden status` end to end: the real binary, the simulated libnvidia-ml.so.1,
// every shipped scenario, real child processes.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>

#include "e2e/e2e_util.h"
#include "e2e/run_process.h"
#include "e2e/scenario_expect.h"
#include "e2e/user_process.h"

namespace gw::test {
namespace {

using nlohmann::json;

std::string Upper(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), ::toupper);
  return s;
}

class ShippedScenario : public ::testing::TestWithParam<std::string> {};

TEST_P(ShippedScenario, StatusJsonMatchesTheScenario) {
  const ExpectedServer server = LoadExpectedServer(GetParam());

  // Real processes stand in for every "env:NAME" PID of the scenario.
  std::vector<std::unique_ptr<ChildProcess>> children;
  RunOptions options;
  std::map<std::string, pid_t> env_pids;
  for (const std::string& name : server.pid_env_names) {
    children.push_back(std::make_unique<ChildProcess>());
    env_pids[name] = children.back()->pid();
    options.env[name] = std::to_string(children.back()->pid());
  }
  options.env["GPUWARDEN_SIM_START"] = NowSecondsString();
  options.env["GPUWARDEN_NVML_LIB"] = std::nullopt;

  bool blocks = server.init_block_s > 0;
  for (const auto& g : server.gpus) blocks = blocks || g.block_s > 0;
  const std::string timeout = blocks ? "1" : "5";

  RunResult r = RunProcess(
      Gpuwarden({"--sim", GetParam(), "--timeout", timeout, "status", "--json"}), options);
  SCOPED_TRACE(server.name + "\nstderr: " + r.err);
  ASSERT_FALSE(r.timed_out);
  json out = json::parse(r.out, nullptr, false);
  ASSERT_FALSE(out.is_discarded()) << r.out;
  ASSERT_TRUE(out.contains("gpus"));
  ASSERT_TRUE(out["gpus"].is_array());

  if (server.driver_failure == "driver_not_loaded" || server.driver_failure == "version_mismatch") {
    EXPECT_EQ(r.exit_code, 4);
    EXPECT_TRUE(out["gpus"].empty());
    bool found = false;
    for (const json& e : out["errors"]) found = found || e["code"] == *server.driver_failure;
    EXPECT_TRUE(found) << out["errors"].dump();
    return;
  }
  if (server.init_block_s > 0) {
    EXPECT_EQ(r.exit_code, 5);
    EXPECT_EQ(out["timed_out"], true);
    return;
  }

  ASSERT_EQ(out["gpus"].size(), server.gpus.size());
  int expected_exit = 0;
  for (const ExpectedGpu& want : server.gpus) {
    const json& got = out["gpus"][want.index];
    SCOPED_TRACE("GPU " + std::to_string(want.index));
    EXPECT_EQ(got["index"], want.index);
    if (want.block_s > 0) {
      // The probe stops at the first wedged GPU: it must be marked, not invented.
      EXPECT_FALSE(got["unreachable"].is_null());
      expected_exit = 5;
      break;
    }
    if (want.lost || want.handle_error) {
      EXPECT_FALSE(got["unreachable"].is_null()) << got.dump();
      if (expected_exit == 0) expected_exit = 6;
      continue;
    }
    EXPECT_TRUE(got["unreachable"].is_null()) << got["unreachable"].dump();
    if (want.name) {
      EXPECT_EQ(got["name"], *want.name);
    }
    if (want.uuid) {
      EXPECT_EQ(got["uuid"], *want.uuid);
    }
    if (want.pci_bus_id) {
      EXPECT_EQ(Upper(got["pci_bus_id"].get<std::string>()), Upper(*want.pci_bus_id));
    }
    auto expect_number = [&](const json& v, const std::optional<uint64_t>& w, const char* what) {
      if (w) {
        EXPECT_EQ(v, *w) << what;
      } else {
        EXPECT_TRUE(v.is_null()) << what << " must be null when the scenario does not give it";
      }
    };
    expect_number(got["memory"]["total_bytes"], want.total_bytes, "memory.total_bytes");
    expect_number(got["memory"]["used_bytes"], want.used_bytes, "memory.used_bytes");
    expect_number(got["memory"]["free_bytes"], want.free_bytes, "memory.free_bytes");
    if (want.utilization_pct) {
      EXPECT_EQ(got["utilization_pct"], *want.utilization_pct);
    } else {
      EXPECT_TRUE(got["utilization_pct"].is_null());
    }

    std::map<long long, std::optional<uint64_t>> want_processes;
    for (const ExpectedProcess& p : want.processes) {
      long long pid = p.pid_spec.rfind("env:", 0) == 0 ? env_pids.at(p.pid_spec.substr(4))
                                                       : std::stoll(p.pid_spec);
      want_processes[pid] = p.used_bytes;
    }
    std::map<long long, std::optional<uint64_t>> got_processes;
    for (const json& p : got["processes"]) {
      if (p.value("listed_by_driver", true) == false) continue;  // Device-file-only holders.
      got_processes[p["pid"].get<long long>()] =
          p["used_memory_bytes"].is_null()
              ? std::nullopt
              : std::optional<uint64_t>(p["used_memory_bytes"].get<uint64_t>());
    }
    EXPECT_EQ(got_processes, want_processes);
  }
  EXPECT_EQ(r.exit_code, expected_exit);
}

std::string ScenarioTestName(const ::testing::TestParamInfo<std::string>& info) {
  std::string stem = std::filesystem::path(info.param).stem().string();
  for (char& c : stem) {
    if (!isalnum(static_cast<unsigned char>(c))) c = '_';
  }
  return stem;
}

INSTANTIATE_TEST_SUITE_P(Scenarios, ShippedScenario, ::testing::ValuesIn(ShippedScenarios()),
                         ScenarioTestName);

TEST(StatusE2e, DriverHangExitsWithinDeadlinePlusOneSecond) {
  RunOptions options;
  options.env["GPUWARDEN_SIM_START"] = NowSecondsString();
  options.env["GPUWARDEN_NVML_LIB"] = std::nullopt;
  RunResult r = RunProcess(
      Gpuwarden({"--sim", ScenarioPath("driver-hang.json"), "--timeout", "1", "status"}), options);
  ASSERT_FALSE(r.timed_out);
  EXPECT_EQ(r.exit_code, 5);
  EXPECT_LT(r.seconds, 1.0 + 1.0);
  EXPECT_NE((r.out + r.err).find("not responding"), std::string::npos) << r.out << r.err;
}

TEST(StatusE2e, TextViewShowsEveryGpuAndSaysItIsSimulated) {
  RunOptions options;
  options.env["GPUWARDEN_NVML_LIB"] = std::nullopt;
  RunResult r =
      RunProcess(Gpuwarden({"--sim", ScenarioPath("healthy-idle.json"), "status"}), options);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("SIMULATED"), std::string::npos) << r.out;
  const ExpectedServer server = LoadExpectedServer(ScenarioPath("healthy-idle.json"));
  for (const auto& g : server.gpus) {
    ASSERT_TRUE(g.name.has_value());
    EXPECT_NE(r.out.find(*g.name), std::string::npos) << *g.name;
  }
  // Not a terminal: no colour codes at all.
  EXPECT_EQ(r.out.find('\x1b'), std::string::npos);
}

TEST(StatusE2e, ColorAlwaysColoursAndNoColorIsHonouredInAuto) {
  RunOptions options;
  options.env["GPUWARDEN_NVML_LIB"] = std::nullopt;
  RunResult coloured = RunProcess(
      Gpuwarden({"--color", "always", "--sim", ScenarioPath("vram-exhausted.json"), "status"}),
      options);
  EXPECT_NE(coloured.out.find('\x1b'), std::string::npos);
  options.env["NO_COLOR"] = "1";
  RunResult plain =
      RunProcess(Gpuwarden({"--sim", ScenarioPath("vram-exhausted.json"), "status"}), options);
  EXPECT_EQ(plain.out.find('\x1b'), std::string::npos);
}

// A process whose command line carries terminal escape codes and newlines must
// reach the screen as visible, inert text.
TEST(StatusE2e, HostileCommandLineIsSanitised) {
  ChildProcess hostile({"/bin/sh", "-c", "while :; do sleep 1; done",
                        "\x1b[2J\x1b]0;owned\x07"
                        "EVIL\nroot 1 fake-line"});
  TempDir dir;
  std::string scenario = dir.Write("hostile.json", R"({
    "name": "hostile",
    "driver": {"version": "550.90.07", "nvml_version": "12.550.90.07", "cuda_version": 12040},
    "gpus": [{"name": "NVIDIA H100 80GB HBM3", "uuid": "GPU-11111111-2222-3333-4444-555555555555",
              "pci_bus_id": "00000000:19:00.0", "memory": {"total_mib": 81559, "used_mib": 1000},
              "utilization": {"gpu": 5, "memory": 1},
              "processes": [{"pid": "env:GW_HOSTILE_PID", "used_mib": 1000, "sm_pct": 5, "mem_pct": 2}]}]
  })");
  RunOptions options;
  options.env["GW_HOSTILE_PID"] = std::to_string(hostile.pid());
  options.env["GPUWARDEN_NVML_LIB"] = std::nullopt;
  options.env["COLUMNS"] = "200";
  // Give sh a moment to exist as itself in /proc (it is exec'd right after fork).
  for (int i = 0; i < 100; ++i) {
    const std::string s = ReadFileOrEmpty("/proc/" + std::to_string(hostile.pid()) + "/cmdline");
    if (s.find("EVIL") != std::string::npos) break;
    usleep(10000);
  }
  RunResult r = RunProcess(Gpuwarden({"--sim", scenario, "status"}), options);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.find('\x1b'), std::string::npos) << "raw ESC reached the terminal";
  EXPECT_EQ(r.out.find('\x07'), std::string::npos) << "raw BEL reached the terminal";
  EXPECT_NE(r.out.find("EVIL"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\\x1b"), std::string::npos) << "escape shown visibly:\n" << r.out;
  // The embedded newline must not start a line of its own.
  EXPECT_EQ(r.out.find("\nroot 1 fake-line"), std::string::npos) << r.out;

  RunResult j = RunProcess(Gpuwarden({"--sim", scenario, "status", "--json"}), options);
  ASSERT_EQ(j.exit_code, 0) << j.err;
  json out = json::parse(j.out);
  ASSERT_EQ(out["gpus"][0]["processes"].size(), 1u);
  EXPECT_EQ(out["gpus"][0]["processes"][0]["pid"], hostile.pid());
}

TEST(StatusE2e, GpuAndUserFilters) {
  RunOptions options;
  options.env["GPUWARDEN_NVML_LIB"] = std::nullopt;
  RunResult one = RunProcess(
      Gpuwarden({"--sim", ScenarioPath("vram-exhausted.json"), "status", "--json", "--gpu", "1"}),
      options);
  ASSERT_EQ(one.exit_code, 0) << one.err;
  json out = json::parse(one.out);
  ASSERT_EQ(out["gpus"].size(), 1u);
  EXPECT_EQ(out["gpus"][0]["index"], 1);

  RunResult nobody = RunProcess(Gpuwarden({"--sim", ScenarioPath("vram-exhausted.json"), "status",
                                           "--json", "--user", "no-such-user-here"}),
                                options);
  ASSERT_EQ(nobody.exit_code, 0) << nobody.err;
  json none = json::parse(nobody.out);
  for (const json& g : none["gpus"]) EXPECT_TRUE(g["processes"].empty()) << g.dump();

  RunResult bad = RunProcess(
      Gpuwarden({"--sim", ScenarioPath("vram-exhausted.json"), "status", "--gpu", "99"}), options);
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("99"), std::string::npos) << bad.err;
}

// The device-file view: a process holding an NVIDIA device file open that the
// driver does not list is shown and marked.
TEST(StatusE2e, DeviceFileHolderNotListedByTheDriverIsShown) {
  TempDir dev;
  std::string device = dev.Write("nvidia0", "");
  dev.Write("nvidiactl", "");
  // The holder keeps the "device" open on fd 3 while it sleeps.
  ChildProcess holder({"/bin/sh", "-c", "exec 3<\"$0\"; while :; do sleep 1; done", device});
  for (int i = 0; i < 100; ++i) {
    std::error_code ec;
    auto target =
        std::filesystem::read_symlink("/proc/" + std::to_string(holder.pid()) + "/fd/3", ec);
    if (!ec && target == device) break;
    usleep(10000);
  }
  RunOptions options;
  options.env["GPUWARDEN_NVML_LIB"] = std::nullopt;
  RunResult r = RunProcess(Gpuwarden({"--dev-dir", dev.path(), "--sim",
                                      ScenarioPath("memory-no-process.json"), "status", "--json"}),
                           options);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  json out = json::parse(r.out);
  std::string dump = out.dump();
  EXPECT_NE(dump.find(std::to_string(holder.pid())), std::string::npos)
      << "holder pid missing: " << dump;
  EXPECT_NE(dump.find(device), std::string::npos) << dump;
}

}  // namespace
}  // namespace gw::test
