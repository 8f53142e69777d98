// Other projects' NVML clients against the simulated library: Debian's nvtop
// (C, dlopen) in a real terminal (tmux) and gpustat over pynvml (Python,
// ctypes), each run on every shipped scenario, and what they show compared
// with the scenario itself (scenario_expect.h). The clients are Debian's
// packages unpacked into bench/.peers by scripts/setup.sh (bench/fetch_peers.sh),
// never installed; LD_LIBRARY_PATH and PYTHONPATH point them at the simulator.
//
// Every scenario is frozen at its base state (GPUWARDEN_SIM_START a day ahead;
// no shipped scenario changes at t <= 0, so that is what scenario_expect.h
// reads) with blocking off, and every "env:" PID is a live child of this test.
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "core/units.h"
#include "e2e/e2e_util.h"
#include "e2e/run_process.h"
#include "e2e/scenario_expect.h"
#include "gtest/gtest.h"
#include "test_paths.h"

namespace gw::test {
namespace {

using nlohmann::json;
std::string PeersDir() { return gw::test::SourceDir() + "/bench/.peers"; }
std::string PeersRoot() { return PeersDir() + "/root"; }
std::string NvtopBinary() { return PeersRoot() + "/usr/bin/nvtop"; }
std::string GpustatScript() { return PeersRoot() + "/usr/bin/gpustat"; }

// Skips (naming the reason setup.sh recorded) when the mirror could not be
// reached; fails when the clients are simply absent.
#define GW_REQUIRE_PEER(path)                                                                \
  do {                                                                                       \
    if (access((path).c_str(), X_OK) != 0) {                                                 \
      std::ifstream why(PeersDir() + "/unreachable");                                        \
      std::string reason((std::istreambuf_iterator<char>(why)), {});                         \
      if (!reason.empty()) GTEST_SKIP() << "peer clients not fetched: " << reason;           \
      FAIL() << (path) << " is missing: scripts/setup.sh fetches it (bench/fetch_peers.sh)"; \
    }                                                                                        \
  } while (0)

// One live child for each "env:" PID name, shared by every scenario.
class PidPool {
 public:
  // The environment that gives each of `names` a distinct live PID.
  std::map<std::string, std::optional<std::string>> For(const std::set<std::string>& names) {
    while (children_.size() < names.size()) {
      children_.push_back(
          std::make_unique<ChildProcess>(std::vector<std::string>{"/bin/sleep", "600"}));
    }
    std::map<std::string, std::optional<std::string>> env;
    size_t i = 0;
    for (const std::string& n : names) env[n] = std::to_string(children_[i++]->pid());
    return env;
  }
  // The PID given to `spec` ("4242" or "env:NAME") in For's order.
  static std::optional<long> Resolve(const std::string& spec,
                                     const std::map<std::string, std::optional<std::string>>& env) {
    if (spec.rfind("env:", 0) != 0) return std::stol(spec);
    auto it = env.find(spec.substr(4));
    if (it == env.end() || !it->second) return std::nullopt;
    return std::stol(*it->second);
  }

 private:
  std::vector<std::unique_ptr<ChildProcess>> children_;
};

PidPool& Pids() {
  static PidPool pool;
  return pool;
}

struct ScenarioRun {
  std::string file;
  ExpectedServer server;
  std::map<std::string, std::optional<std::string>> env;  // Client environment changes.
};

std::vector<ScenarioRun> AllScenarios(const std::string& config_home) {
  std::string start = std::to_string(
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count() +
      86400);
  std::vector<ScenarioRun> runs;
  for (const std::string& file : ShippedScenarios()) {
    ScenarioRun r;
    r.file = file;
    r.server = LoadExpectedServer(file);
    r.env = Pids().For(r.server.pid_env_names);
    r.env["LD_LIBRARY_PATH"] = std::filesystem::path(SimLibrary()).parent_path().string();
    r.env["PYTHONPATH"] = PeersRoot() + "/usr/lib/python3/dist-packages";
    r.env["GPUWARDEN_SIM_SCENARIO"] = file;
    r.env["GPUWARDEN_SIM_START"] = start;
    r.env["GPUWARDEN_SIM_BLOCK_SCALE"] = "0";
    r.env["GPUWARDEN_SIM_PROCESS_DIR"] = std::nullopt;
    r.env["XDG_CONFIG_HOME"] = config_home;
#ifdef GW_ASAN_RUNTIME
    // Under -DGW_SANITIZE=ON the simulator carries ASan: its runtime goes
    // first into the clients, which keep their own leaks to themselves.
    r.env["LD_PRELOAD"] = GW_ASAN_RUNTIME;
    r.env["ASAN_OPTIONS"] = "detect_leaks=0:abort_on_error=1";
#endif
    runs.push_back(std::move(r));
  }
  return runs;
}

bool ProcessExists(long pid) {
  struct stat st;
  return pid > 0 && stat(("/proc/" + std::to_string(pid)).c_str(), &st) == 0;
}

// NVML would answer a handle lookup for this GPU.
bool HandleWorks(const ExpectedGpu& g) { return !g.lost && !g.handle_error; }

std::optional<uint64_t> UsedV1(const ExpectedGpu& g) {
  // nvmlDeviceGetMemoryInfo (v1) counts the reservation as used.
  if (!g.used_bytes || !g.total_bytes) return std::nullopt;
  return *g.used_bytes + g.reserved_bytes.value_or(0);
}

// ---- gpustat ----

// The NVML error text (nvmlErrorString, as pynvml raises it) that stops
// gpustat on `s`, or "" when it can show it: a driver that fails init, then
// the first GPU whose handle, name or UUID NVML does not give (gpustat reads
// those without a fallback).
std::string GpustatStopper(const ExpectedServer& s) {
  if (s.driver_failure && *s.driver_failure == "driver_not_loaded") return "Driver Not Loaded";
  if (s.driver_failure && *s.driver_failure == "version_mismatch") {
    return "RM has detected an NVML/RM version mismatch";
  }
  if (s.driver_failure) return "";
  const std::map<std::string, std::string> handle_errors = {
      {"no_permission", "Insufficient Permissions"},
      {"insufficient_power", "Insufficient External Power"},
      {"irq_issue", "Interrupt Request Issue"},
      {"unknown", "Unknown Error"}};
  for (const ExpectedGpu& g : s.gpus) {
    if (g.lost) return "GPU is lost";
    if (g.handle_error) return handle_errors.at(*g.handle_error);
    if (!g.name || !g.uuid) return "Not Supported";
  }
  return "";
}

// What gpustat --json must print for `s`, built from the scenario: null where
// NVML answers NOT_SUPPORTED; processes are those whose PID lives (gpustat
// drops the others through psutil).
json GpustatExpectation(const ScenarioRun& run) {
  const ExpectedServer& s = run.server;
  json gpus = json::array();
  if (s.driver_failure) return gpus;  // no_gpus: init succeeds, no GPU.
  for (const ExpectedGpu& g : s.gpus) {
    json e;
    e["index"] = g.index;
    e["name"] = *g.name;
    e["uuid"] = *g.uuid;
    e["temperature.gpu"] = g.temperature_c ? json(*g.temperature_c) : json(nullptr);
    e["utilization.gpu"] = g.utilization_rates_gpu ? json(*g.utilization_rates_gpu) : json();
    e["utilization.enc"] = g.encoder_pct ? json(*g.encoder_pct) : json();
    e["utilization.dec"] = g.decoder_pct ? json(*g.decoder_pct) : json();
    e["power.draw"] = g.power_mw ? json(*g.power_mw / 1000) : json(nullptr);
    e["enforced.power.limit"] = g.power_limit_mw ? json(*g.power_limit_mw / 1000) : json();
    std::optional<uint64_t> used = UsedV1(g);
    e["memory.used"] = used ? json(*used / kMiB) : json(nullptr);
    e["memory.total"] = used ? json(*g.total_bytes / kMiB) : json(nullptr);
    if (!g.has_processes) {
      e["processes"] = nullptr;
    } else {
      json procs = json::array();
      std::set<long> seen;
      for (const ExpectedProcess& p : g.processes) {
        if (p.type == "mps") continue;
        std::optional<long> pid = PidPool::Resolve(p.pid_spec, run.env);
        if (!pid || !ProcessExists(*pid) || !seen.insert(*pid).second) continue;
        // gpustat prints None for 0 bytes as for "not available".
        uint64_t bytes = p.used_bytes.value_or(0);
        procs.push_back({{"pid", *pid}, {"gpu_memory_usage", bytes ? json(bytes / kMiB) : json()}});
      }
      e["processes"] = procs;
    }
    gpus.push_back(e);
  }
  return gpus;
}

// The fields of gpustat's JSON that the expectation names, in the same shape.
json GpustatShown(const json& doc) {
  json gpus = json::array();
  for (const json& g : doc.at("gpus")) {
    json e;
    for (const char* k :
         {"index", "name", "uuid", "temperature.gpu", "utilization.gpu", "utilization.enc",
          "utilization.dec", "power.draw", "enforced.power.limit", "memory.used", "memory.total"}) {
      e[k] = g.at(k);
    }
    if (g.at("processes").is_null()) {
      e["processes"] = nullptr;
    } else {
      json procs = json::array();
      for (const json& p : g.at("processes")) {
        procs.push_back({{"pid", p.at("pid")}, {"gpu_memory_usage", p.at("gpu_memory_usage")}});
      }
      std::sort(procs.begin(), procs.end(),
                [](const json& a, const json& b) { return a["pid"] < b["pid"]; });
      e["processes"] = procs;
    }
    gpus.push_back(e);
  }
  return gpus;
}

TEST(PeersE2eTest, GpustatShowsEveryScenarioAsWritten) {
  GW_REQUIRE_PEER(GpustatScript());
  TempDir config;
  std::vector<ScenarioRun> runs = AllScenarios(config.path());
  ASSERT_GT(runs.size(), 30u);
  // gpustat sleeps 0.1 s per GPU that lists processes: run several at a time.
  std::vector<std::thread> workers;
  std::vector<RunResult> out(runs.size());
  std::atomic<size_t> next{0};
  for (int w = 0; w < 8; ++w) {
    workers.emplace_back([&] {
      for (size_t i = next++; i < runs.size(); i = next++) {
        RunOptions o;
        o.env = runs[i].env;
        o.timeout_s = 60;
        out[i] = RunProcess({"/usr/bin/python3", GpustatScript(), "--json"}, o);
      }
    });
  }
  for (std::thread& t : workers) t.join();

  size_t gpus_compared = 0;
  size_t processes_compared = 0;
  for (size_t i = 0; i < runs.size(); ++i) {
    const std::string name = std::filesystem::path(runs[i].file).filename().string();
    SCOPED_TRACE(name);
    const RunResult& r = out[i];
    ASSERT_FALSE(r.timed_out);
    if (std::string stopper = GpustatStopper(runs[i].server); !stopper.empty()) {
      // NVML's error stops gpustat, which says so; --debug names the error.
      EXPECT_NE(r.exit_code, 0);
      EXPECT_NE(r.err.find("Error on querying NVIDIA devices"), std::string::npos) << r.err;
      RunOptions o;
      o.env = runs[i].env;
      RunResult debug = RunProcess({"/usr/bin/python3", GpustatScript(), "--json", "--debug"}, o);
      EXPECT_NE((debug.out + debug.err).find(stopper), std::string::npos) << stopper << "\n"
                                                                          << debug.out << debug.err;
      continue;
    }
    json want = GpustatExpectation(runs[i]);
    json doc = json::parse(r.out, nullptr, false);
    ASSERT_FALSE(doc.is_discarded()) << r.out << r.err;
    if (runs[i].server.driver_version) {
      EXPECT_EQ(doc.value("driver_version", ""), *runs[i].server.driver_version);
    }
    for (json& g : want) {
      ++gpus_compared;
      processes_compared += g["processes"].is_array() ? g["processes"].size() : 0;
      std::sort(g["processes"].begin(), g["processes"].end(),
                [](const json& a, const json& b) { return a["pid"] < b["pid"]; });
    }
    EXPECT_EQ(GpustatShown(doc).dump(1), want.dump(1));
  }
  // Not a comparison of nothing: the demo, clean and bench scenarios list live processes.
  EXPECT_GT(gpus_compared, 100u);
  EXPECT_GT(processes_compared, 256u);
}

// ---- nvtop ----

// One GPU as nvtop draws it (strings as on screen; "N/A" when unknown).
struct NvtopGpu {
  std::string name, rx, tx, temperature, power, power_limit, utilization, used, total;
  bool operator==(const NvtopGpu&) const = default;
};
struct NvtopProcess {
  long pid = 0;
  int device = 0;
  std::string memory;
  bool operator<(const NvtopProcess& o) const {
    return std::tie(pid, device, memory) < std::tie(o.pid, o.device, o.memory);
  }
  bool operator==(const NvtopProcess&) const = default;
};
struct NvtopScreen {
  bool no_gpu = false;  // "No GPU to monitor."
  std::vector<NvtopGpu> gpus;
  std::vector<NvtopProcess> processes;  // Sorted.
  bool operator==(const NvtopScreen&) const = default;
};

std::string Describe(const NvtopScreen& s) {
  std::ostringstream os;
  if (s.no_gpu) os << "No GPU to monitor\n";
  for (size_t i = 0; i < s.gpus.size(); ++i) {
    const NvtopGpu& g = s.gpus[i];
    os << "Device " << i << " [" << g.name << "] RX " << g.rx << " TX " << g.tx << " TEMP "
       << g.temperature << " POW " << g.power << " / " << g.power_limit << " GPU " << g.utilization
       << " MEM " << g.used << "/" << g.total << "\n";
  }
  for (const NvtopProcess& p : s.processes) {
    os << "  pid " << p.pid << " dev " << p.device << " mem " << p.memory << "\n";
  }
  return os.str();
}

// Memory as nvtop prints it: used and total with three decimals, both in the
// largest binary unit that the total reaches.
std::pair<std::string, std::string> NvtopMemory(uint64_t used, uint64_t total) {
  const char* units[] = {"B", "Ki", "Mi", "Gi", "Ti", "Pi"};
  int u = 0;
  double scale = 1;
  while (static_cast<double>(total) / scale >= 1024 && u < 5) {
    scale *= 1024;
    ++u;
  }
  auto print = [&](uint64_t bytes) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.3f%s", static_cast<double>(bytes) / scale, units[u]);
    return std::string(buf);
  };
  return {print(used), print(total)};
}

// PCIe throughput as nvtop prints it (print_pcie_at_scale): KiB/s and up,
// dividing by 1024 while the value reaches 1000, with 4 significant digits.
std::string NvtopPcie(const std::optional<unsigned>& kb_s) {
  if (!kb_s) return "N/A";
  const char* units[] = {"Ki", "Mi", "Gi", "Ti"};
  double v = *kb_s;
  int u = 0;
  while (u < 3 && v >= 1000.) {
    v /= 1024.;
    ++u;
  }
  char buf[64];
  std::snprintf(buf, sizeof buf,
                v >= 100.  ? "%.1f %sB/s"
                : v >= 10. ? "%.2f %sB/s"
                           : "%.3f %sB/s",
                v, units[u]);
  return buf;
}

std::string Num(const std::optional<unsigned>& v) { return v ? std::to_string(*v) : "N/A"; }

// What nvtop must draw for `run`: the GPUs whose handle and PCI info NVML
// gives (nvtop skips the others and numbers the rest from 0), every listed
// process with its memory in MiB.
NvtopScreen NvtopExpectation(const ScenarioRun& run) {
  NvtopScreen s;
  const ExpectedServer& server = run.server;
  if (!server.driver_failure || *server.driver_failure == "no_gpus") {
    for (const ExpectedGpu& g : server.gpus) {
      if (!HandleWorks(g) || !g.pci_complete) continue;
      int device = static_cast<int>(s.gpus.size());
      NvtopGpu n;
      n.name = g.name.value_or("N/A");
      n.rx = NvtopPcie(g.pcie_rx_kb_s);
      n.tx = NvtopPcie(g.pcie_tx_kb_s);
      n.temperature = g.temperature_c ? std::to_string(*g.temperature_c) : "N/A";
      n.power = g.power_mw ? std::to_string(*g.power_mw / 1000) : "N/A";
      n.power_limit = g.power_limit_mw ? std::to_string(*g.power_limit_mw / 1000) : "N/A";
      std::optional<uint64_t> used = UsedV1(g);
      if (used)
        std::tie(n.used, n.total) = NvtopMemory(*used, *g.total_bytes);
      else
        n.used = n.total = "N/A";
      std::set<long> seen;
      std::optional<unsigned> from_processes;
      // A GPU none of whose processes has a sample gives nvtop nothing to sum.
      const bool any_sample = std::any_of(g.processes.begin(), g.processes.end(),
                                          [](const ExpectedProcess& p) { return p.sm_pct; });
      for (const ExpectedProcess& p : g.processes) {
        if (p.type == "mps") continue;
        std::optional<long> pid = PidPool::Resolve(p.pid_spec, run.env);
        if (!pid || !seen.insert(*pid).second) continue;
        s.processes.push_back(
            {*pid, device,
             p.used_bytes ? std::to_string(*p.used_bytes / kMiB) + "MiB" : std::string("N/A")});
        if (any_sample) {
          from_processes = std::min(100u, from_processes.value_or(0) + p.sm_pct.value_or(0));
        }
      }
      // nvtop 3.0.1 (gpuinfo_fix_dynamic_info_from_process_info) shows the sum
      // of the processes' samples (0 for a process without one, at most 100)
      // unless the GPU's own utilization is within 10 points of it; with no
      // sample at all it keeps the GPU's own figure ("N/A" when NVML has none).
      std::optional<unsigned> util = g.utilization_rates_gpu;
      if (from_processes &&
          (!util || *util + 10 < *from_processes || *util > *from_processes + 10)) {
        util = from_processes;
      }
      n.utilization = Num(util);
      s.gpus.push_back(n);
    }
  }
  s.no_gpu = s.gpus.empty();
  std::sort(s.processes.begin(), s.processes.end());
  return s;
}

// Reads nvtop's screen: device headers, their two value lines, the process table.
NvtopScreen ParseNvtop(const std::string& screen) {
  static const std::regex kHeader(
      R"(Device (\d+) \[([^\]]*)\].*?RX: (N/A|[\d.]+ \S+B/s) TX: (N/A|[\d.]+ \S+B/s))");
  static const std::regex kValues(R"(TEMP\s+(\S+?)°C.*?POW\s+(\S+) / (\S+) W)");
  // "GPU[||  42%]", or "GPU[   N/A]" where the GPU reports no utilisation.
  static const std::regex kBars(R"(GPU\[[| ]*(\S+?)%?\] MEM\[[| ]*([^/\]]+)/([^\]]+)\])");
  static const std::regex kProcess(R"(^\s*(\d+)\s+\S+\s+(\d+)\s+\S+\s+\S+\s+(\S+))");
  NvtopScreen s;
  s.no_gpu = screen.find("No GPU to monitor") != std::string::npos;
  std::vector<std::string> lines;
  std::istringstream in(screen);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  bool in_table = false;
  for (size_t i = 0; i < lines.size(); ++i) {
    if (lines[i].find("PID USER DEV") != std::string::npos) {
      in_table = true;
      continue;
    }
    std::smatch m;
    if (in_table) {
      if (std::regex_search(lines[i], m, kProcess)) {
        s.processes.push_back({std::stol(m[1]), std::stoi(m[2]), m[3]});
      }
      continue;
    }
    // A row of devices: the header line, then values, then bars, side by side.
    auto headers = std::sregex_iterator(lines[i].begin(), lines[i].end(), kHeader);
    if (headers == std::sregex_iterator() || i + 2 >= lines.size()) continue;
    std::vector<NvtopGpu> row;
    for (auto it = headers; it != std::sregex_iterator(); ++it) {
      size_t index = std::stoul((*it)[1]);
      if (s.gpus.size() + row.size() != index) return s;  // Out of order: not drawn yet.
      NvtopGpu g;
      g.name = (*it)[2];
      g.rx = (*it)[3];
      g.tx = (*it)[4];
      row.push_back(g);
    }
    size_t k = 0;
    for (auto it = std::sregex_iterator(lines[i + 1].begin(), lines[i + 1].end(), kValues);
         it != std::sregex_iterator() && k < row.size(); ++it, ++k) {
      row[k].temperature = (*it)[1];
      row[k].power = (*it)[2];
      row[k].power_limit = (*it)[3];
    }
    k = 0;
    for (auto it = std::sregex_iterator(lines[i + 2].begin(), lines[i + 2].end(), kBars);
         it != std::sregex_iterator() && k < row.size(); ++it, ++k) {
      row[k].utilization = (*it)[1];
      row[k].used = (*it)[2];
      row[k].total = (*it)[3];
    }
    s.gpus.insert(s.gpus.end(), row.begin(), row.end());
    i += 2;
  }
  std::sort(s.processes.begin(), s.processes.end());
  return s;
}

// A private tmux server whose windows each run one client.
class Tmux {
 public:
  // The server's socket lives in a directory of its own, removed with it.
  Tmux() : socket_(dir_.path() + "/tmux") {
    Run({"new-session", "-d", "-s", "peers", "-x", "220", "-y", "320", "/bin/sleep", "600"});
    Run({"set-option", "-g", "default-size", "220x320"});
  }
  ~Tmux() { Run({"kill-server"}); }
  void NewWindow(const std::string& name,
                 const std::map<std::string, std::optional<std::string>>& env,
                 const std::vector<std::string>& argv) {
    std::vector<std::string> args = {"new-window", "-d", "-t", "peers", "-n", name};
    for (const auto& [k, v] : env) {
      if (v) args.insert(args.end(), {"-e", k + "=" + *v});
    }
    // Variables to remove are unset by env(1) inside the window.
    std::vector<std::string> cmd = {"/usr/bin/env"};
    for (const auto& [k, v] : env) {
      if (!v) cmd.insert(cmd.end(), {"-u", k});
    }
    // A client that exits at once ("No GPU to monitor.") leaves its words on
    // the screen, and the window open, through a shell that waits after it.
    cmd.insert(cmd.end(),
               {"/bin/sh", "-c", "\"$0\" \"$@\"; echo \"[exit status $?]\"; exec sleep 600"});
    cmd.insert(cmd.end(), argv.begin(), argv.end());
    args.insert(args.end(), cmd.begin(), cmd.end());
    RunResult r = Run(args);
    EXPECT_EQ(r.exit_code, 0) << r.err;
  }
  std::string Capture(const std::string& window) {
    return Run({"capture-pane", "-p", "-t", "peers:" + window}).out;
  }

 private:
  RunResult Run(std::vector<std::string> args) {
    args.insert(args.begin(), {"/usr/bin/tmux", "-S", socket_, "-f", "/dev/null"});
    RunOptions o;
    o.timeout_s = 10;
    return RunProcess(args, o);
  }
  TempDir dir_;
  std::string socket_;
};

TEST(PeersE2eTest, NvtopShowsEveryScenarioAsWritten) {
  GW_REQUIRE_PEER(NvtopBinary());
  ASSERT_EQ(access("/usr/bin/tmux", X_OK), 0) << "tmux is installed by scripts/setup.sh";
  TempDir config;
  std::vector<ScenarioRun> runs = AllScenarios(config.path());
  ASSERT_GT(runs.size(), 30u);
  Tmux tmux;
  for (size_t i = 0; i < runs.size(); ++i) {
    runs[i].env["TERM"] = "tmux-256color";
    tmux.NewWindow("s" + std::to_string(i), runs[i].env, {NvtopBinary(), "-C", "-p"});
  }
  // Poll each screen until it shows the scenario (nvtop's first frames may
  // lack values it has not read yet), within one deadline for all.
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  size_t gpus_compared = 0;
  size_t processes_compared = 0;
  for (size_t i = 0; i < runs.size(); ++i) {
    const std::string name = std::filesystem::path(runs[i].file).filename().string();
    SCOPED_TRACE(name);
    NvtopScreen want = NvtopExpectation(runs[i]);
    std::string screen;
    NvtopScreen shown;
    while (true) {
      screen = tmux.Capture("s" + std::to_string(i));
      shown = ParseNvtop(screen);
      if (shown == want || std::chrono::steady_clock::now() > deadline) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    EXPECT_EQ(Describe(shown), Describe(want)) << screen;
    gpus_compared += want.gpus.size();
    processes_compared += want.processes.size();
  }
  EXPECT_GT(gpus_compared, 100u);
  EXPECT_GT(processes_compared, 256u);
}

}  // namespace
}  // namespace gw::test
