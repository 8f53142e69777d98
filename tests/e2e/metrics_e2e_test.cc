// The daemon's /metrics against a real Prometheus (Debian's prometheus and
// promtool): gpuwardend without its queue serves a simulated server with a
// faulty GPU and real processes of two users; Prometheus scrapes it on
// 127.0.0.1 every second; the tests read back, through PromQL, what the
// simulator and `gpuwarden status --json` say. One daemon and one Prometheus
// for the whole binary (a ::testing::Environment).
#include <gtest/gtest.h>
#include <httplib.h>
#include <sys/stat.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <optional>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/units.h"
#include "e2e/e2e_util.h"
#include "e2e/queue_e2e_util.h"
#include "e2e/service_process.h"
#include "e2e/user_process.h"
#include "test_paths.h"

namespace gw::test {
namespace {

using nlohmann::json;

constexpr char kScenario[] = "row-remap-failed.json";  // GPU 2: rows can no longer be remapped.
std::string Prometheus() { return "/usr/bin/prometheus"; }
std::string Promtool() { return "/usr/bin/promtool"; }
std::string RulesPath() { return gw::test::SourceDir() + "/packaging/prometheus"; }
std::string DashboardPath() { return gw::test::SourceDir() + "/packaging/grafana/gpuwarden.json"; }
std::string MetricsDocPath() { return gw::test::SourceDir() + "/docs/metrics.md"; }

// A registered process of the simulator: a real `sleep` that the simulated
// driver lists on one GPU with `mib` of memory.
struct Holder {
  std::unique_ptr<TestChild> child;
  std::string user;
  unsigned gpu = 0;
  uint64_t mib = 0;
};

class Fleet : public ::testing::Environment {
 public:
  void SetUp() override {
    if (access(Prometheus().c_str(), X_OK) != 0 || access(Promtool().c_str(), X_OK) != 0) {
      skip_ = "Debian's prometheus is not installed (scripts/setup.sh installs it)";
      return;
    }
    dir_ = std::make_unique<TempDir>();
    chmod(dir_->path().c_str(), 0755);
    reg_ = dir_->path() + "/reg";
    mkdir(reg_.c_str(), 01777);
    chmod(reg_.c_str(), 01777);
    const json scenario = json::parse(std::ifstream(ScenarioPath(kScenario)));
    for (const json& g : scenario["gpus"]) uuids_.push_back(g["uuid"].get<std::string>());

    // Root holds a large and a small allocation on GPU 0 (the small one is
    // summed under pid="other"); the test user, when there is one, a large one
    // on GPU 1.
    AddHolder(std::nullopt, "root", 0, 30 * 1024);
    AddHolder(std::nullopt, "root", 0, 10);
    std::string why_not;
    if (std::optional<TestUser> u = EnsureTestUser(&why_not)) {
      AddHolder(*u, u->name, 1, 20 * 1024);
    } else {
      std::printf("[ note ] no second user (%s): one user's totals only\n", why_not.c_str());
    }

    // Xids for the Xid fields: two 48s on GPU 2 (0000:81:00), a 13 on GPU 1.
    kernel_log_ = dir_->Write(
        "kern.log",
        "[Fri Dec  4 06:00:01 2026] NVRM: Xid (PCI:0000:81:00): 48, pid=1234, name=python, An "
        "uncorrectable double bit error (DBE) has been detected on GPU in the framebuffer.\n"
        "[Fri Dec  4 06:00:02 2026] NVRM: Xid (PCI:0000:81:00): 48, pid=1234, name=python, An "
        "uncorrectable double bit error (DBE) has been detected on GPU in the framebuffer.\n"
        "[Fri Dec  4 06:00:03 2026] NVRM: Xid (PCI:0000:41:00): 13, pid=1300, name=python, "
        "Graphics Exception: ESR 0x404490=0x80000001\n");

    RunOptions o = SimOptions();
    o.env["GPUWARDEN_SIM_PROCESS_DIR"] = reg_;
    sim_env_ = o;
    socket_ = dir_->path() + "/s.sock";
    if (!daemon_.Start({DaemonBinary(), "--no-queue", "--socket", socket_, "--state-dir",
                        dir_->path() + "/state", "--sim", ScenarioPath(kScenario), "--listen",
                        "127.0.0.1:0", "--kernel-log", kernel_log_},
                       o, dir_->path() + "/daemon.log")) {
      failure_ = "gpuwardend did not start";
      return;
    }
    static const std::regex kListening(R"(metrics on http://127\.0\.0\.1:(\d+)/metrics)");
    std::smatch m;
    std::string log;
    if (!daemon_.WaitFor(
            [&] {
              log = daemon_.Log();
              return std::regex_search(log, m, kListening);
            },
            30)) {
      failure_ = "gpuwardend did not say where it listens:\n" + daemon_.Log();
      return;
    }
    metrics_port_ = std::stoi(m[1]);

    prometheus_port_ = FreeLoopbackPort();
    const std::string config =
        dir_->Write("prometheus.yml",
                    "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
                    "rule_files:\n  - " +
                        RulesPath() + "/gpuwarden.rules.yml\n" +
                        "scrape_configs:\n  - job_name: gpuwarden\n    static_configs:\n"
                        "      - targets: ['127.0.0.1:" +
                        std::to_string(metrics_port_) + "']\n");
    if (!prometheus_.Start({Prometheus(), "--config.file=" + config,
                            "--storage.tsdb.path=" + dir_->path() + "/tsdb",
                            "--web.listen-address=127.0.0.1:" + std::to_string(prometheus_port_),
                            "--log.level=warn"},
                           RunOptions{}, dir_->path() + "/prometheus.log")) {
      failure_ = "prometheus did not start";
      return;
    }
    // Ready once it has scraped gpuwardend at least once.
    if (!prometheus_.WaitFor(
            [&] {
              std::optional<json> r = Query("gpuwarden_build_info");
              return r && !r->empty();
            },
            90)) {
      failure_ = "prometheus never scraped gpuwardend:\n" + prometheus_.Log() + daemon_.Log();
    }
  }

  void TearDown() override {
    prometheus_.Stop();
    daemon_.Stop();
    holders_.clear();
  }

  // The result vector of an instant query, nullopt when Prometheus did not answer.
  std::optional<json> Query(const std::string& promql) const {
    std::optional<json> body = QueryBody(promql);
    if (!body || body->value("status", "") != "success") return std::nullopt;
    return (*body)["data"]["result"];
  }

  // Prometheus's whole answer to an instant query ("status", "data" or
  // "errorType" and "error"), whatever its HTTP status; nullopt when it did
  // not answer in JSON.
  std::optional<json> QueryBody(const std::string& promql) const {
    httplib::Client c("127.0.0.1", prometheus_port_);
    c.set_read_timeout(10, 0);
    auto r = c.Get("/api/v1/query", httplib::Params{{"query", promql}}, httplib::Headers{});
    if (!r) return std::nullopt;
    json body = json::parse(r->body, nullptr, false);
    if (body.is_discarded() || !body.is_object()) return std::nullopt;
    return body;
  }

  // Polls `promql` until `ok` holds for its result (Prometheus scrapes every
  // second; the values settle within a few), and returns the last result.
  json QueryUntil(const std::string& promql, const std::function<bool(const json&)>& ok,
                  double timeout_s = 30) const {
    json last = json::array();
    const auto start = std::chrono::steady_clock::now();
    while (std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() <
           timeout_s) {
      if (std::optional<json> r = Query(promql)) {
        last = *r;
        if (ok(last)) break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
    return last;
  }

  std::string Scrape() const {
    httplib::Client c("127.0.0.1", metrics_port_);
    auto r = c.Get("/metrics");
    return r && r->status == 200 ? r->body : std::string();
  }

  const std::string& skip() const { return skip_; }
  const std::string& failure() const { return failure_; }
  const std::vector<Holder>& holders() const { return holders_; }
  const std::vector<std::string>& uuids() const { return uuids_; }
  const RunOptions& sim_env() const { return sim_env_; }
  const TempDir& dir() const { return *dir_; }
  const std::string& socket() const { return socket_; }

 private:
  void AddHolder(std::optional<TestUser> user, std::string name, unsigned gpu, uint64_t mib) {
    TestChild::Options co;
    if (user) {
      co.uid = user->uid;
      co.gid = user->gid;
    }
    Holder h{std::make_unique<TestChild>(std::vector<std::string>{"/bin/sleep", "3600"}, co),
             std::move(name), gpu, mib};
    std::ofstream(reg_ + "/" + std::to_string(h.child->pid())) << uuids_[gpu] << " " << mib << "\n";
    holders_.push_back(std::move(h));
  }

  std::string skip_, failure_;
  std::unique_ptr<TempDir> dir_;
  std::string reg_, kernel_log_, socket_;
  std::vector<std::string> uuids_;
  std::vector<Holder> holders_;
  RunOptions sim_env_;
  ServiceProcess daemon_, prometheus_;
  int metrics_port_ = 0, prometheus_port_ = 0;
};

Fleet* fleet = nullptr;

class MetricsE2e : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!fleet->skip().empty()) GTEST_SKIP() << fleet->skip();
    ASSERT_TRUE(fleet->failure().empty()) << fleet->failure();
  }
};

double Value(const json& sample) { return std::stod(sample["value"][1].get<std::string>()); }

// Memory used per GPU through Prometheus equals what `gpuwarden status
// --json` reads from the same simulated library at the same time.
TEST_F(MetricsE2e, MemoryUsedPerGpuIsTheSimulatorsThroughPromql) {
  const RunResult status = RunProcess(
      Gpuwarden({"status", "--json", "--sim", ScenarioPath(kScenario)}), fleet->sim_env());
  ASSERT_EQ(status.exit_code, 0) << status.err;
  const json s = json::parse(status.out);
  std::map<std::string, double> want;  // gpu index -> MiB
  for (const json& g : s["gpus"]) {
    if (g["memory"]["used_bytes"].is_number()) {
      want[std::to_string(g["index"].get<int>())] =
          static_cast<double>(g["memory"]["used_bytes"].get<uint64_t>() / kMiB);
    }
  }
  ASSERT_EQ(want.size(), fleet->uuids().size() - 0) << status.out;
  std::map<std::string, double> got;
  fleet->QueryUntil("DCGM_FI_DEV_FB_USED", [&](const json& r) {
    got.clear();
    for (const json& v : r) got[v["metric"]["gpu"]] = Value(v);
    return got == want;
  });
  EXPECT_EQ(got, want);
  // The registered holders are in it: GPU 0 holds at least root's 30 GiB + 10 MiB.
  EXPECT_GE(got["0"], 30 * 1024 + 10);
}

TEST_F(MetricsE2e, PerUserTotalsThroughPromql) {
  std::map<std::string, double> want;
  for (const Holder& h : fleet->holders()) want[h.user] += static_cast<double>(h.mib * kMiB);
  // The scenario's own processes: PIDs that do not exist here, so their user
  // is unknown ("?").
  const json scenario = json::parse(std::ifstream(ScenarioPath(kScenario)));
  for (const json& g : scenario["gpus"]) {
    for (const json& p : g.value("processes", json::array())) {
      ASSERT_FALSE(std::filesystem::exists("/proc/" + std::to_string(p["pid"].get<int>())));
      want["?"] += static_cast<double>(p["used_mib"].get<uint64_t>() * kMiB);
    }
  }
  std::map<std::string, double> got;
  fleet->QueryUntil("sum by (user) (gpuwarden_process_memory_bytes)", [&](const json& r) {
    got.clear();
    for (const json& v : r) got[v["metric"]["user"]] = Value(v);
    return got == want;
  });
  EXPECT_EQ(got, want);
  // The shipped recording rule says the same.
  std::map<std::string, double> recorded;
  fleet->QueryUntil("gpuwarden:fleet_user_memory_bytes:sum", [&](const json& r) {
    recorded.clear();
    for (const json& v : r) recorded[v["metric"]["user"]] = Value(v);
    return recorded == want;
  });
  EXPECT_EQ(recorded, want);
  // The small allocation has no series of its own.
  const json other = fleet->QueryUntil("gpuwarden_process_memory_bytes{pid=\"other\"}",
                                       [](const json& r) { return !r.empty(); });
  ASSERT_EQ(other.size(), 1u) << other.dump();
  EXPECT_EQ(Value(other[0]), static_cast<double>(10 * kMiB));
}

TEST_F(MetricsE2e, TheFaultyGpusStateAndTheAlert) {
  const json fault = fleet->QueryUntil("gpuwarden_gpu_state{state=\"fault\"} == 1",
                                       [](const json& r) { return !r.empty(); });
  ASSERT_EQ(fault.size(), 1u) << fault.dump();
  EXPECT_EQ(fault[0]["metric"]["gpu"], "2");
  EXPECT_EQ(fault[0]["metric"]["UUID"], fleet->uuids()[2]);
  const json failure = fleet->QueryUntil("DCGM_FI_DEV_ROW_REMAP_FAILURE == 1",
                                         [](const json& r) { return !r.empty(); });
  ASSERT_EQ(failure.size(), 1u);
  EXPECT_EQ(failure[0]["metric"]["gpu"], "2");
  const json verdict =
      fleet->QueryUntil("gpuwarden_server_verdict == 1", [](const json& r) { return !r.empty(); });
  ASSERT_EQ(verdict.size(), 1u);
  EXPECT_EQ(verdict[0]["metric"]["verdict"], "fault");
  // The shipped alert is on its way (pending for its 2 minutes).
  const json alert = fleet->QueryUntil("ALERTS{alertname=\"GpuwardenGpuFault\"}",
                                       [](const json& r) { return !r.empty(); });
  ASSERT_EQ(alert.size(), 1u) << alert.dump();
  EXPECT_EQ(alert[0]["metric"]["gpu"], "2");
}

TEST_F(MetricsE2e, XidsFromTheKernelLogUnderDcgmsNames) {
  std::map<std::string, double> last;
  fleet->QueryUntil("DCGM_FI_DEV_XID_ERRORS", [&](const json& r) {
    last.clear();
    for (const json& v : r) last[v["metric"]["gpu"]] = Value(v);
    return last.size() == fleet->uuids().size();
  });
  EXPECT_EQ(last, (std::map<std::string, double>{{"0", 0}, {"1", 13}, {"2", 48}, {"3", 0}}));
  const json count = fleet->QueryUntil("DCGM_EXP_XID_ERRORS_COUNT{gpu=\"2\"}",
                                       [](const json& r) { return !r.empty(); });
  ASSERT_EQ(count.size(), 1u);
  EXPECT_EQ(count[0]["metric"]["err_code"], "48");
  EXPECT_EQ(Value(count[0]), 2);
}

// Every default dcgm-exporter counter that the simulator feeds is in the
// scrape under its DCGM name, with dcgm-exporter's labels.
TEST_F(MetricsE2e, DcgmExporterDefaultCountersUnderTheirNames) {
  const std::string text = fleet->Scrape();
  ASSERT_FALSE(text.empty());
  for (const char* name :
       {"DCGM_FI_DEV_SM_CLOCK", "DCGM_FI_DEV_MEM_CLOCK", "DCGM_FI_DEV_GPU_TEMP",
        "DCGM_FI_DEV_POWER_USAGE", "DCGM_FI_DEV_PCIE_REPLAY_COUNTER", "DCGM_FI_DEV_GPU_UTIL",
        "DCGM_FI_DEV_MEM_COPY_UTIL", "DCGM_FI_DEV_XID_ERRORS", "DCGM_FI_DEV_FB_FREE",
        "DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_FB_RESERVED", "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS",
        "DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS", "DCGM_FI_DEV_ROW_REMAP_FAILURE"}) {
    const std::regex sample(std::string("\n") + name +
                            R"(\{gpu="0",UUID="GPU-[0-9a-f-]+",pci_bus_id="[0-9A-F:.]+",)"
                            R"(device="nvidia\d+",modelName="[^"]+",Hostname="[^"]*",)"
                            R"(DCGM_FI_DRIVER_VERSION="[0-9.]+"\} \S+\n)");
    EXPECT_TRUE(std::regex_search(text, sample)) << name << " missing or mislabelled";
  }
}

TEST_F(MetricsE2e, PromtoolAcceptsTheScrape) {
  const std::string text = fleet->Scrape();
  ASSERT_FALSE(text.empty());
  const std::string path = fleet->dir().Write("scrape.txt", text);
  RunOptions o;
  o.stdin_path = path;
  const RunResult r = RunProcess({Promtool(), "check", "metrics"}, o);
  // promtool's lint asks counters to end in _total: dcgm-exporter's own names
  // do not, and are kept as they are so dashboards match. Nothing else may
  // be reported.
  std::string problems;
  std::istringstream lines(r.out + r.err);
  for (std::string line; std::getline(lines, line);) {
    if (line.empty() ||
        line.find("counter metrics should have \"_total\" suffix") != std::string::npos) {
      continue;
    }
    if (line.rfind("DCGM_", 0) == 0 &&
        (line.find("_total") != std::string::npos ||
         line.find("metric name should not include type") != std::string::npos)) {
      continue;
    }
    // dcgm-exporter's label names (UUID, modelName, Hostname) are camel case;
    // kept as they are for the same reason.
    if (line.find("label names should be written in 'snake_case' not 'camelCase'") !=
        std::string::npos) {
      continue;
    }
    problems += line + "\n";
  }
  EXPECT_EQ(problems, "") << r.out << r.err;
}

// The daemon's history, through the CLI: a point a second with the memory the
// simulator reports, and each user's GPU-hours.
TEST_F(MetricsE2e, HistoryAndUsageFromTheDaemon) {
  RunResult csv;
  ASSERT_TRUE(Eventually(
      [&] {
        csv = RunProcess(Gpuwarden(
            {"--socket", fleet->socket(), "history", "--since", "1m", "--gpu", "0", "--csv"}));
        return csv.exit_code == 0 && CountLines(csv.out) >= 4;  // Header and 3 seconds.
      },
      30))
      << csv.out << csv.err;
  std::istringstream lines(csv.out);
  std::string line;
  std::getline(lines, line);
  EXPECT_EQ(line.rfind("time_unix_s,step_s,gpu,util_pct,mem_used_bytes", 0), 0u) << line;
  std::getline(lines, line);
  std::vector<std::string> cells;
  size_t start = 0;
  for (size_t comma; (comma = line.find(',', start)) != std::string::npos; start = comma + 1)
    cells.push_back(line.substr(start, comma - start));
  cells.push_back(line.substr(start));
  ASSERT_EQ(cells.size(), 9u) << line;
  EXPECT_EQ(cells[1], "1");
  EXPECT_EQ(cells[2], "0");
  EXPECT_GE(std::stod(cells[4]), static_cast<double>((30 * 1024 + 10) * kMiB)) << line;

  const RunResult text =
      RunProcess(Gpuwarden({"--socket", fleet->socket(), "history", "--since", "10m"}));
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("GPU 2  now fault"), std::string::npos) << text.out;

  const RunResult usage =
      RunProcess(Gpuwarden({"--socket", fleet->socket(), "usage", "--since", "1h", "--json"}));
  ASSERT_EQ(usage.exit_code, 0) << usage.err;
  const json u = json::parse(usage.out);
  std::map<std::string, json> by_user;
  for (const json& x : u["users"]) by_user[x["user"]] = x;
  ASSERT_TRUE(by_user.count("root")) << usage.out;
  EXPECT_GT(by_user["root"]["gpu_hours"].get<double>(), 0);
  // GiB-hours over GPU-hours: the mean memory held while holding, 30 GiB + 10 MiB.
  EXPECT_NEAR(
      by_user["root"]["vram_gib_hours"].get<double>() / by_user["root"]["gpu_hours"].get<double>(),
      30 + 10.0 / 1024, 0.01);
  EXPECT_TRUE(by_user["root"]["jobs_started"].is_null());  // No queue: unknown, not 0.

  // capacity over the same history: the GPU-hours held are the users' (each
  // holds GPUs of their own here), so they lie between usage's sums before
  // and after it; no queue, so no waits.
  auto users_gpu_hours = [](const RunResult& r) {
    double sum = 0;
    const json doc = json::parse(r.out);
    for (const json& x : doc["users"]) sum += x["gpu_hours"].get<double>();
    return sum;
  };
  const RunResult capacity =
      RunProcess(Gpuwarden({"--socket", fleet->socket(), "capacity", "--since", "1h", "--json"}));
  ASSERT_EQ(capacity.exit_code, 0) << capacity.err;
  const RunResult after =
      RunProcess(Gpuwarden({"--socket", fleet->socket(), "usage", "--since", "1h", "--json"}));
  ASSERT_EQ(after.exit_code, 0) << after.err;
  const json c = json::parse(capacity.out);
  EXPECT_EQ(c["source"], "history");
  EXPECT_GE(c["capacity_gpus"].get<double>(), 1);
  EXPECT_GE(c["held_gpu_hours"].get<double>(), users_gpu_hours(usage) - 1e-9) << capacity.out;
  EXPECT_LE(c["held_gpu_hours"].get<double>(), users_gpu_hours(after) + 1e-9) << after.out;
  EXPECT_GT(c["held_gpu_hours"].get<double>(), 0);
  EXPECT_TRUE(c["idle_held_gpu_hours"].is_number()) << capacity.out;
  EXPECT_TRUE(c["waits"].is_null()) << "no queue: waits unknown, not none";
  EXPECT_TRUE(c["power_saving"].is_null());
  // The queue's commands say there is none.
  const RunResult queue = RunProcess(Gpuwarden({"--socket", fleet->socket(), "queue"}));
  EXPECT_EQ(queue.exit_code, 16);
  EXPECT_NE(queue.err.find("--no-queue"), std::string::npos) << queue.err;
}

// The shipped Grafana dashboard (packaging/grafana/gpuwarden.json): every
// panel query, with Grafana's variables filled in, runs on the real
// Prometheus that scrapes the daemon.
struct PanelQuery {
  std::string panel;
  std::string ref;
  std::string expr;
};

json Dashboard() {
  std::ifstream in(DashboardPath());
  return json::parse(in, nullptr, /*allow_exceptions=*/false);
}

// Every target with an expression, rows' nested panels included.
void CollectQueries(const json& panels, std::vector<PanelQuery>& out) {
  for (const json& p : panels) {
    if (p.contains("panels")) CollectQueries(p["panels"], out);
    for (const json& t : p.value("targets", json::array())) {
      if (t.contains("expr")) {
        out.push_back({p.value("title", ""), t.value("refId", ""), t["expr"].get<std::string>()});
      }
    }
  }
}

// The panel titled `title`, rows' nested panels included; null when none is.
const json* FindPanel(const json& panels, const std::string& title) {
  for (const json& p : panels) {
    if (p.value("title", "") == title) return &p;
    if (p.contains("panels")) {
      if (const json* inner = FindPanel(p["panels"], title)) return inner;
    }
  }
  return nullptr;
}

// `text` as a PromQL regular expression matching it alone (the way Grafana
// formats a variable for =~): metacharacters escaped, the backslash doubled
// for the string literal.
std::string RegexLiteral(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (std::string_view(R"(\.+*?()|[]{}^$)").find(c) != std::string_view::npos) out += "\\\\";
    out.push_back(c);
  }
  return out;
}

// Grafana's variables replaced by what it would send for this scenario: the
// host and all its GPUs selected, 20 processes, Grafana's intervals.
std::string Substitute(std::string expr, const std::map<std::string, std::string>& values) {
  // Longest names first, so that a name that begins another ($__interval,
  // $__interval_ms) never eats the longer one.
  std::vector<std::pair<std::string, std::string>> by_length(values.begin(), values.end());
  std::sort(by_length.begin(), by_length.end(),
            [](const auto& a, const auto& b) { return a.first.size() > b.first.size(); });
  for (const auto& [name, value] : by_length) {
    for (const std::string& form : {"${" + name + "}", "$" + name}) {
      for (size_t at; (at = expr.find(form)) != std::string::npos;)
        expr.replace(at, form.size(), value);
    }
  }
  return expr;
}

// The metric names a PromQL expression reads: identifiers outside strings,
// label matchers, ranges, label lists and Grafana's variables, that are
// neither keywords nor function calls.
std::set<std::string> MetricNamesIn(std::string expr) {
  static const std::regex kVariables(R"(\$\{?[a-zA-Z_][a-zA-Z0-9_]*\}?)");
  static const std::regex kStrings(R"re("(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*')re");
  static const std::regex kBraces(R"(\{[^}]*\}|\[[^\]]*\])");
  static const std::regex kLabelLists(
      R"(\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\))");
  static const std::regex kIdentifier(R"(([a-zA-Z_:][a-zA-Z0-9_:]*)(\s*\()?)");
  static const std::set<std::string> kKeywords = {
      "and",        "or",          "unless", "by",     "without", "on", "ignoring",
      "group_left", "group_right", "bool",   "offset", "inf",     "nan"};
  expr = std::regex_replace(expr, kVariables, " ");
  expr = std::regex_replace(expr, kStrings, " ");
  expr = std::regex_replace(expr, kBraces, " ");
  expr = std::regex_replace(expr, kLabelLists, " ");
  std::set<std::string> out;
  for (auto it = std::sregex_iterator(expr.begin(), expr.end(), kIdentifier);
       it != std::sregex_iterator(); ++it) {
    const std::smatch& m = *it;
    if (m[2].matched) continue;  // A function.
    const size_t at = static_cast<size_t>(m.position(0));
    if (at > 0 && (std::isalnum(static_cast<unsigned char>(expr[at - 1])) || expr[at - 1] == '.')) {
      continue;  // Inside a number (1e3, 0.5).
    }
    if (!kKeywords.count(m[1].str())) out.insert(m[1].str());
  }
  return out;
}

// Sample names ("_bucket" and the like included) and family names of a scrape,
// and every label name used.
struct ScrapeNames {
  std::set<std::string> samples;
  std::set<std::string> families;
  std::set<std::string> labels;
};

ScrapeNames NamesOf(const std::string& text) {
  static const std::regex kType(R"(^# TYPE ([a-zA-Z_:][a-zA-Z0-9_:]*) )");
  static const std::regex kSample(R"(^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{.*\})? \S+$)");
  static const std::regex kLabel(R"re(([a-zA-Z_][a-zA-Z0-9_]*)="(?:[^"\\]|\\.)*")re");
  ScrapeNames out;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    std::smatch m;
    if (std::regex_search(line, m, kType)) {
      out.families.insert(m[1]);
    } else if (std::regex_match(line, m, kSample)) {
      out.samples.insert(m[1]);
      const std::string labels = m[2];
      for (auto it = std::sregex_iterator(labels.begin(), labels.end(), kLabel);
           it != std::sregex_iterator(); ++it) {
        out.labels.insert((*it)[1]);
      }
    }
  }
  return out;
}

// A scrape with everything this scenario produces: the first full look
// judged and the kernel log read.
std::string FullScrape() {
  std::string text;
  Eventually(
      [&] {
        text = fleet->Scrape();
        return text.find("\ngpuwarden_findings{") != std::string::npos &&
               text.find("\nDCGM_EXP_XID_ERRORS_COUNT{") != std::string::npos;
      },
      30);
  return text;
}

// Metrics that the dashboard reads but that this scenario cannot produce.
const std::map<std::string, std::string>& NotInThisScenario() {
  static const auto* kNot = new std::map<std::string, std::string>{
      {"gpuwarden_queue_jobs", "the daemon runs with --no-queue"},
      {"gpuwarden_queue_oldest_wait_seconds", "the daemon runs with --no-queue"},
      {"gpuwarden_queue_starts_total", "the daemon runs with --no-queue"},
      {"gpuwarden_queue_ended_total", "the daemon runs with --no-queue"},
      {"gpuwarden_queue_wait_seconds_bucket", "the daemon runs with --no-queue"},
      {"gpuwarden_queue_wait_seconds_sum", "the daemon runs with --no-queue"},
      {"gpuwarden_queue_wait_seconds_count", "the daemon runs with --no-queue"},
      {"gpuwarden_queue_degraded", "the daemon runs with --no-queue"},
  };
  return *kNot;
}

TEST_F(MetricsE2e, GrafanaDashboardQueriesRunOnPrometheus) {
  const json dashboard = Dashboard();
  ASSERT_FALSE(dashboard.is_discarded()) << DashboardPath() << " is not JSON";
  // Importable: a Prometheus input, and a data source variable the panels use.
  ASSERT_TRUE(dashboard.contains("__inputs"));
  EXPECT_EQ(dashboard["__inputs"][0]["name"], "DS_PROMETHEUS");
  EXPECT_EQ(dashboard["__inputs"][0]["pluginId"], "prometheus");
  std::map<std::string, json> variables;
  for (const json& v : dashboard["templating"]["list"]) variables[v["name"].get<std::string>()] = v;
  ASSERT_TRUE(variables.count("datasource") && variables.count("Hostname") &&
              variables.count("gpu"));
  EXPECT_EQ(variables["datasource"]["type"], "datasource");
  EXPECT_EQ(variables["datasource"]["current"]["value"], "${DS_PROMETHEUS}");

  std::vector<PanelQuery> queries;
  CollectQueries(dashboard["panels"], queries);
  ASSERT_GE(queries.size(), 20u);

  const json gpus = fleet->QueryUntil(
      "gpuwarden_gpu_unreachable", [](const json& r) { return r.size() == fleet->uuids().size(); });
  ASSERT_EQ(gpus.size(), fleet->uuids().size()) << gpus.dump();
  const std::string hostname = gpus[0]["metric"].value("Hostname", "");
  std::string all_gpus;
  for (size_t i = 0; i < fleet->uuids().size(); ++i) all_gpus += (i ? "|" : "") + std::to_string(i);
  const std::map<std::string, std::string> values = {{"Hostname", RegexLiteral(hostname)},
                                                     {"gpu", "(" + all_gpus + ")"},
                                                     {"top", "20"},
                                                     {"__rate_interval", "1m"},
                                                     {"__interval", "15s"},
                                                     {"__range", "1h"}};

  // The query variables: label_values(SELECTOR, LABEL) must list this host
  // and its GPUs.
  static const std::regex kLabelValues(R"(^label_values\((.*),\s*([a-zA-Z_]+)\)$)");
  for (const auto& [name, v] : variables) {
    if (v["type"] != "query") continue;
    std::smatch m;
    const std::string q = Substitute(v["query"].get<std::string>(), values);
    ASSERT_TRUE(std::regex_match(q, m, kLabelValues)) << name << ": " << q;
    const json r = fleet->QueryUntil(m[1], [](const json& x) { return !x.empty(); });
    std::set<std::string> listed;
    for (const json& sample : r) listed.insert(sample["metric"].value(m[2].str(), ""));
    if (name == "Hostname") {
      EXPECT_EQ(listed, std::set<std::string>{hostname}) << q;
    } else if (name == "gpu") {
      EXPECT_EQ(listed.size(), fleet->uuids().size()) << q;
    }
  }

  // Panels that stay empty here, and why.
  const std::map<std::string, std::string> empty_here = {{"Jobs by state", "--no-queue"},
                                                         {"Longest wait now", "--no-queue"},
                                                         {"Starts and ends", "--no-queue"},
                                                         {"Wait before start", "--no-queue"},
                                                         {"Queue storage", "--no-queue"}};
  std::set<std::string> panels_seen;
  for (const PanelQuery& q : queries) {
    panels_seen.insert(q.panel);
    const std::string expr = Substitute(q.expr, values);
    SCOPED_TRACE(q.panel + " / " + q.ref + ": " + expr);
    EXPECT_EQ(expr.find('$'), std::string::npos) << "a variable left unsubstituted";
    EXPECT_FALSE(q.panel.empty());
    // Every query is tried, so that one run names every broken panel.
    const std::optional<json> body = fleet->QueryBody(expr);
    if (!body.has_value()) {
      ADD_FAILURE() << "Prometheus did not answer";
      continue;
    }
    if (body->value("status", "") != "success") {
      ADD_FAILURE() << "Prometheus refused the query: " << body->dump().substr(0, 1000);
      continue;
    }
    if (empty_here.count(q.panel)) {
      EXPECT_TRUE((*body)["data"]["result"].empty())
          << "expected no data (" << empty_here.at(q.panel)
          << "): " << body->dump().substr(0, 1000);
      continue;
    }
    const json r = fleet->QueryUntil(expr, [](const json& x) { return !x.empty(); });
    EXPECT_FALSE(r.empty()) << "no data";
  }
  for (const auto& [panel, why] : empty_here) EXPECT_TRUE(panels_seen.count(panel)) << panel;

  // The state panels turn each one-hot family into a number that their value
  // mappings name: through them, each GPU (and the server) reads the state or
  // verdict that the family says.
  const std::vector<std::array<std::string, 3>> coded = {
      {"GPU state", "gpuwarden_gpu_state == 1", "state"},
      {"GPU verdict", "gpuwarden_gpu_verdict == 1", "verdict"},
      {"Server verdict", "gpuwarden_server_verdict == 1", "verdict"}};
  for (const auto& [title, truth, label] : coded) {
    const json* panel = FindPanel(dashboard["panels"], title);
    ASSERT_NE(panel, nullptr) << title;
    const json& names = (*panel)["fieldConfig"]["defaults"]["mappings"][0]["options"];
    std::map<std::string, std::string> want, got;
    for (const json& sample : fleet->Query(truth).value_or(json::array())) {
      want[sample["metric"].value("gpu", "server")] = sample["metric"][label];
    }
    const std::string expr = Substitute((*panel)["targets"][0]["expr"], values);
    for (const json& sample : fleet->Query(expr).value_or(json::array())) {
      const std::string code = sample["value"][1];
      got[sample["metric"].value("gpu", "server")] =
          names.contains(code) ? names[code]["text"].get<std::string>() : "unmapped " + code;
    }
    EXPECT_FALSE(want.empty()) << truth;
    EXPECT_EQ(got, want) << title << ": " << expr;
  }
}

// The dashboard reads only metrics that gpuwardend emits: each one is in the
// scrape, or listed above as one this scenario cannot produce (and then not
// in the scrape); each is documented.
TEST_F(MetricsE2e, GrafanaDashboardReadsOnlyEmittedMetrics) {
  const json dashboard = Dashboard();
  ASSERT_FALSE(dashboard.is_discarded());
  std::vector<PanelQuery> queries;
  CollectQueries(dashboard["panels"], queries);
  for (const json& v : dashboard["templating"]["list"]) {
    if (v["type"] == "query") {
      queries.push_back({v["name"].get<std::string>(), "variable", v["query"].get<std::string>()});
    }
  }
  const ScrapeNames scraped = NamesOf(FullScrape());
  ASSERT_TRUE(scraped.samples.count("gpuwarden_gpu_state"));
  const std::string doc = ReadFileOrEmpty(MetricsDocPath());
  ASSERT_FALSE(doc.empty()) << MetricsDocPath();
  std::set<std::string> used;
  for (const PanelQuery& q : queries) {
    std::string expr = q.expr;
    // label_values(SELECTOR, LABEL): Grafana's, not PromQL; the selector is.
    static const std::regex kLabelValues(R"(^label_values\((.*),\s*[a-zA-Z_]+\)$)");
    std::smatch m;
    if (std::regex_match(expr, m, kLabelValues)) expr = m[1];
    const std::set<std::string> names = MetricNamesIn(expr);
    EXPECT_FALSE(names.empty()) << q.panel << ": " << q.expr;
    for (const std::string& name : names) {
      used.insert(name);
      EXPECT_TRUE(scraped.samples.count(name) || NotInThisScenario().count(name))
          << q.panel << " reads " << name << ", which gpuwardend does not emit";
    }
  }
  EXPECT_TRUE(used.count("DCGM_FI_DEV_GPU_UTIL"));
  EXPECT_TRUE(used.count("gpuwarden_process_memory_bytes"));
  for (const std::string& name : used) {
    std::string family = name;
    for (const char* suffix : {"_bucket", "_sum", "_count"}) {
      const std::string sfx(suffix);
      if (NotInThisScenario().count(name) && family.size() > sfx.size() &&
          family.compare(family.size() - sfx.size(), sfx.size(), sfx) == 0) {
        family.resize(family.size() - sfx.size());
      }
    }
    EXPECT_NE(doc.find("`" + family + "`"), std::string::npos)
        << name << " is not in docs/metrics.md";
  }
  for (const auto& [name, why] : NotInThisScenario()) {
    EXPECT_FALSE(scraped.samples.count(name))
        << name << " is in the scrape after all (" << why << ")";
  }
}

// docs/metrics.md names every metric family and label of the scrape, so the
// documentation cannot fall behind the renderer.
TEST_F(MetricsE2e, EveryScrapedMetricAndLabelIsDocumented) {
  const ScrapeNames scraped = NamesOf(FullScrape());
  ASSERT_GE(scraped.families.size(), 30u);
  const std::string doc = ReadFileOrEmpty(MetricsDocPath());
  ASSERT_FALSE(doc.empty()) << MetricsDocPath();
  for (const std::string& family : scraped.families) {
    EXPECT_NE(doc.find("`" + family + "`"), std::string::npos)
        << family << " is emitted but not documented in docs/metrics.md";
  }
  for (const std::string& label : scraped.labels) {
    EXPECT_NE(doc.find("`" + label + "`"), std::string::npos)
        << "label " << label << " is emitted but not documented in docs/metrics.md";
  }
}

TEST_F(MetricsE2e, ShippedRulesPassPromtool) {
  const RunResult check =
      RunProcess({Promtool(), "check", "rules", RulesPath() + "/gpuwarden.rules.yml"});
  EXPECT_EQ(check.exit_code, 0) << check.out << check.err;
  const RunResult test =
      RunProcess({Promtool(), "test", "rules", RulesPath() + "/gpuwarden.rules.test.yml"});
  EXPECT_EQ(test.exit_code, 0) << test.out << test.err;
}

}  // namespace
}  // namespace gw::test

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  gw::test::fleet = new gw::test::Fleet;
  ::testing::AddGlobalTestEnvironment(gw::test::fleet);  // Owned by gtest.
  return RUN_ALL_TESTS();
}
