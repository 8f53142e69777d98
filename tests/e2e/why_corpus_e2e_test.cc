// The independent corpus that judges `gpuwarden why` (issue 12): static
// `nvidia-smi -q -x` dumps and kernel logs written from NVIDIA's formats
// (tests/corpus/CASE/), each with the verdicts and states it must give
// (tests/corpus/README.md), and an expected file per shipped scenario
// (scenarios/expected/NAME.json). Every mismatch of a case is reported, with
// the case's name, not only the first.
#include <gtest/gtest.h>
#include <sys/time.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "e2e/e2e_util.h"
#include "e2e/run_process.h"
#include "e2e/scenario_expect.h"
#include "test_paths.h"

namespace gw::test {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

constexpr size_t kMinCases = 45;

std::string CorpusDir() { return gw::test::SourceDir() + "/tests/corpus"; }
std::string ScenarioExpectedDir() { return gw::test::SourceDir() + "/scenarios/expected"; }

// The case directories (those holding an expected.json), sorted.
std::vector<std::string> CorpusCases() {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(CorpusDir(), ec)) {
    if (entry.is_directory() && fs::exists(entry.path() / "expected.json")) {
      out.push_back(entry.path().filename().string());
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

json ReadJsonFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return json::value_t::discarded;
  return json::parse(in, nullptr, /*allow_exceptions=*/false);
}

std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// An expectation is a value or a list of acceptable values (where the spec
// leaves a choice; the expected file's description says why).
bool Accepts(const json& expected, const json& actual) {
  if (expected.is_array()) {
    return std::any_of(expected.begin(), expected.end(),
                       [&](const json& e) { return Accepts(e, actual); });
  }
  return expected == actual;
}

std::string Show(const json& j) { return j.is_discarded() ? std::string("<absent>") : j.dump(); }

// Mismatches of one run, reported together.
class Mismatches {
 public:
  void Check(const std::string& what, const json& expected, const json& actual) {
    if (!Accepts(expected, actual)) {
      list_.push_back(what + ": expected " + expected.dump() + ", got " + Show(actual));
    }
  }
  void Add(const std::string& text) { list_.push_back(text); }
  bool empty() const { return list_.empty(); }
  std::string Text() const {
    std::string out;
    for (const auto& m : list_) out += "  - " + m + "\n";
    return out;
  }

 private:
  std::vector<std::string> list_;
};

// Every finding object of a why document: server-level and per GPU.
std::vector<json> AllFindings(const json& why) {
  std::vector<json> out;
  if (why.contains("findings") && why["findings"].is_array()) {
    for (const json& f : why["findings"]) out.push_back(f);
  }
  if (why.contains("gpus") && why["gpus"].is_array()) {
    for (const json& g : why["gpus"]) {
      if (!g.contains("findings") || !g["findings"].is_array()) continue;
      for (const json& f : g["findings"]) out.push_back(f);
    }
  }
  return out;
}

std::set<std::string> Codes(const json& why) {
  std::set<std::string> codes;
  if (why.contains("all_findings_ranked") && why["all_findings_ranked"].is_array()) {
    for (const json& c : why["all_findings_ranked"]) {
      if (c.is_string()) codes.insert(c.get<std::string>());
    }
  }
  for (const json& f : AllFindings(why)) {
    if (f.contains("code") && f["code"].is_string()) codes.insert(f["code"].get<std::string>());
  }
  return codes;
}

std::set<std::string> Categories(const json& why) {
  std::set<std::string> out;
  for (const json& f : AllFindings(why)) {
    if (f.contains("category") && f["category"].is_string()) {
      out.insert(f["category"].get<std::string>());
    }
  }
  return out;
}

json GpuByIndex(const json& doc, int index) {
  if (!doc.contains("gpus") || !doc["gpus"].is_array()) return json::value_t::discarded;
  for (const json& g : doc["gpus"]) {
    if (g.contains("index") && g["index"].is_number_integer() && g["index"] == index) return g;
  }
  return json::value_t::discarded;
}

json Member(const json& obj, const std::string& key) {
  if (obj.is_object() && obj.contains(key)) return obj[key];
  return json::value_t::discarded;
}

std::string StringList(const std::set<std::string>& s) {
  std::string out;
  for (const auto& x : s) out += (out.empty() ? "" : ",") + x;
  return "[" + out + "]";
}

// Compares a why document (and exit code) with an expected file's why part;
// shared by the corpus and the scenarios.
void CompareWhy(const json& expected, const RunResult& run, const json& out, Mismatches& m) {
  m.Check("exit code", Member(expected, "exit"), run.exit_code);
  if (out.is_discarded() || !out.is_object()) {
    m.Add("stdout is not a JSON document: " + run.out.substr(0, 300) +
          " | stderr: " + run.err.substr(0, 300));
    return;
  }
  m.Check("schema", "gpuwarden.why", Member(out, "schema"));
  m.Check("server verdict", Member(expected, "verdict"), Member(out, "verdict"));
  if (expected.contains("gpu_count")) {
    const json gpus = Member(out, "gpus");
    m.Check("number of GPUs", Member(expected, "gpu_count"),
            gpus.is_array() ? json(gpus.size()) : json(json::value_t::discarded));
  }
  if (expected.contains("gpus")) {
    for (auto it = expected["gpus"].begin(); it != expected["gpus"].end(); ++it) {
      const int index = std::stoi(it.key());
      const json gpu = GpuByIndex(out, index);
      if (gpu.is_discarded()) {
        m.Add("GPU " + it.key() + ": not in the output");
        continue;
      }
      for (const char* key : {"verdict", "state"}) {
        if (it.value().contains(key)) {
          m.Check("GPU " + it.key() + " " + key, it.value()[key], Member(gpu, key));
        }
      }
    }
  }
  const auto codes = Codes(out);
  for (const json& c : expected.value("codes_present", json::array())) {
    if (!codes.count(c.get<std::string>())) {
      m.Add("code " + c.get<std::string>() + " missing; codes: " + StringList(codes));
    }
  }
  for (const json& c : expected.value("codes_absent", json::array())) {
    if (codes.count(c.get<std::string>())) m.Add("code " + c.get<std::string>() + " present");
  }
  const auto categories = Categories(out);
  for (const json& c : expected.value("categories_present", json::array())) {
    if (!categories.count(c.get<std::string>())) {
      m.Add("category " + c.get<std::string>() + " missing; categories: " + StringList(categories));
    }
  }
  for (const json& c : expected.value("categories_absent", json::array())) {
    if (categories.count(c.get<std::string>())) {
      m.Add("category " + c.get<std::string>() + " present; codes: " + StringList(codes));
    }
  }
  if (expected.contains("summary_contains")) {
    const json summary = Member(out, "summary");
    const std::string want = expected["summary_contains"].get<std::string>();
    if (!summary.is_string() || summary.get<std::string>().find(want) == std::string::npos) {
      m.Add("line 1 (summary) lacks \"" + want + "\": " + Show(summary));
    }
  }
  if (expected.contains("output_mentions")) {
    const std::string text = Lower(run.out);
    for (const json& want : expected["output_mentions"]) {
      if (text.find(Lower(want.get<std::string>())) == std::string::npos) {
        m.Add("the output never says \"" + want.get<std::string>() + "\"");
      }
    }
  }
  if (expected.contains("findings_mention")) {
    std::string text;
    for (const json& f : AllFindings(out)) text += f.dump() + "\n";
    text = Lower(text);
    for (const json& want : expected["findings_mention"]) {
      if (text.find(Lower(want.get<std::string>())) == std::string::npos) {
        m.Add("no finding mentions \"" + want.get<std::string>() + "\"");
      }
    }
  }
}

// ---------------------------------------------------------------------------
// The corpus.

// Keys an expected file may hold; anything else is a typo that would make a
// check silently vanish.
const std::set<std::string> kExpectedKeys = {"description",
                                             "kernel_log",
                                             "kernel_log_mtime_unix",
                                             "args",
                                             "verdict",
                                             "exit",
                                             "gpu_count",
                                             "gpus",
                                             "codes_present",
                                             "codes_absent",
                                             "categories_present",
                                             "categories_absent",
                                             "summary_contains",
                                             "findings_mention",
                                             "output_mentions",
                                             "health"};
const std::set<std::string> kVerdicts = {"OK",    "BUSY",    "RECLAIMABLE", "DEGRADED",
                                         "FAULT", "UNKNOWN", "NEVER_FITS",  "BAD_INPUT"};
const std::set<std::string> kStates = {"free",     "in_use", "busy",   "reclaimable",
                                       "degraded", "fault",  "unknown"};
const std::set<std::string> kCategories = {
    "shortage", "contention", "holder",  "configuration", "application", "engine",  "driver",
    "memory",   "bus",        "thermal", "power",         "nvlink",      "hardware"};

RunOptions CorpusOptions() {
  RunOptions o;
  // Dumps and kernel logs carry local civil times; the corpus is written in UTC.
  o.env["TZ"] = "UTC";
  o.env["GPUWARDEN_NVML_LIB"] = std::nullopt;
  o.env["CUDA_VISIBLE_DEVICES"] = std::nullopt;
  o.env["CUDA_DEVICE_ORDER"] = std::nullopt;
  return o;
}

struct CorpusRun {
  RunResult why;
  json out;
};

// The arguments after the subcommand, the kernel log copied with the mtime the
// case gives (syslog stamps carry no year: it is the one of the file's time).
std::vector<std::string> CaseArgs(const std::string& dir, const json& expected, const TempDir& tmp,
                                  bool with_extra_args = true) {
  std::vector<std::string> args = {"--from", dir + "/dump.xml"};
  if (expected.contains("kernel_log")) {
    const std::string log = tmp.path() + "/" + expected["kernel_log"].get<std::string>();
    fs::copy_file(dir + "/" + expected["kernel_log"].get<std::string>(), log,
                  fs::copy_options::overwrite_existing);
    if (expected.contains("kernel_log_mtime_unix")) {
      struct timeval times[2] = {};
      times[0].tv_sec = times[1].tv_sec = expected["kernel_log_mtime_unix"].get<long>();
      utimes(log.c_str(), times);
    }
    args.push_back("--kernel-log");
    args.push_back(log);
  }
  if (!with_extra_args) return args;
  for (const json& a : expected.value("args", json::array())) args.push_back(a.get<std::string>());
  return args;
}

// A test name from a case or scenario name ("xid79-live" -> "xid79_live").
std::string ParamName(const ::testing::TestParamInfo<std::string>& param_info) {
  std::string n = param_info.param;
  for (char& c : n) {
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  }
  return n;
}

class Corpus : public ::testing::TestWithParam<std::string> {};

TEST_P(Corpus, WhyGivesTheExpectedVerdictsStatesAndFindings) {
  const std::string name = GetParam();
  const std::string dir = CorpusDir() + "/" + name;
  const json expected = ReadJsonFile(dir + "/expected.json");
  ASSERT_TRUE(expected.is_object()) << name << ": expected.json is not a JSON object";
  TempDir tmp;
  std::vector<std::string> args = {"why"};
  for (auto& a : CaseArgs(dir, expected, tmp)) args.push_back(a);
  args.push_back("--json");
  RunResult run = RunProcess(Gpuwarden(args), CorpusOptions());
  Mismatches m;
  if (expected.value("verdict", json()) == "BAD_INPUT") {
    m.Check("exit code", Member(expected, "exit"), run.exit_code);
    json out = json::parse(run.out, nullptr, false);
    if (out.is_object() && out.contains("verdict")) {
      m.Add("a verdict was given for bad input: " + Show(out["verdict"]));
    }
  } else {
    CompareWhy(expected, run, json::parse(run.out, nullptr, false), m);
  }

  if (expected.contains("health")) {
    const json& h = expected["health"];
    std::vector<std::string> hargs = {"health"};
    // --need and --since belong to why.
    for (auto& a : CaseArgs(dir, expected, tmp, /*with_extra_args=*/false)) hargs.push_back(a);
    hargs.push_back("--json");
    RunResult health = RunProcess(Gpuwarden(hargs), CorpusOptions());
    m.Check("health exit code", Member(h, "exit"), health.exit_code);
    json hout = json::parse(health.out, nullptr, false);
    if (h.contains("health")) m.Check("health", h["health"], Member(hout, "health"));
    const json health_gpus = h.value("gpus", json::object());
    for (auto it = health_gpus.begin(); it != health_gpus.end(); ++it) {
      m.Check("health of GPU " + it.key(), it.value(),
              Member(GpuByIndex(hout, std::stoi(it.key())), "health"));
    }
  }
  EXPECT_TRUE(m.empty()) << "corpus case " << name << " (" << expected.value("description", "")
                         << ")\n"
                         << m.Text() << "why output:\n"
                         << run.out.substr(0, 4000) << run.err.substr(0, 1000);
}

INSTANTIATE_TEST_SUITE_P(Cases, Corpus, ::testing::ValuesIn(CorpusCases()), ParamName);

void CheckWords(const std::string& where, const json& value, const std::set<std::string>& words,
                Mismatches& m) {
  if (value.is_array()) {
    if (value.empty()) m.Add(where + ": an empty list of choices");
    for (const json& v : value) CheckWords(where, v, words, m);
    return;
  }
  if (!value.is_string() || !words.count(value.get<std::string>())) {
    m.Add(where + ": not a known word: " + value.dump());
  }
}

// The corpus cannot pass by being empty or by expecting nothing.
TEST(CorpusShape, AtLeast45CasesEachNamingAVerdictAndAnExitCode) {
  const auto cases = CorpusCases();
  EXPECT_GE(cases.size(), kMinCases) << "the corpus lives in " << CorpusDir();
  size_t with_kernel_log = 0;
  for (const std::string& name : cases) {
    const std::string dir = CorpusDir() + "/" + name;
    const json e = ReadJsonFile(dir + "/expected.json");
    Mismatches m;
    if (!e.is_object()) {
      ADD_FAILURE() << name << ": expected.json is not a JSON object";
      continue;
    }
    for (auto it = e.begin(); it != e.end(); ++it) {
      if (!kExpectedKeys.count(it.key())) m.Add("unknown key " + it.key());
    }
    if (!e.contains("verdict")) {
      m.Add("names no verdict");
    } else {
      CheckWords("verdict", e["verdict"], kVerdicts, m);
    }
    if (!e.contains("exit")) m.Add("names no exit code");
    if (!fs::exists(dir + "/dump.xml")) m.Add("has no dump.xml");
    if (e.contains("kernel_log")) {
      ++with_kernel_log;
      if (!fs::exists(dir + "/" + e["kernel_log"].get<std::string>())) {
        m.Add("kernel log file missing");
      }
    }
    const json gpus = e.value("gpus", json::object());
    if (e.value("verdict", json()) != "BAD_INPUT" && gpus.empty()) {
      m.Add("asserts no GPU verdict or state");
    }
    for (auto it = gpus.begin(); it != gpus.end(); ++it) {
      if (it.value().contains("state")) CheckWords("state", it.value()["state"], kStates, m);
    }
    for (const char* key : {"categories_present", "categories_absent"}) {
      for (const json& c : e.value(key, json::array())) CheckWords(key, c, kCategories, m);
    }
    EXPECT_TRUE(m.empty()) << name << ":\n" << m.Text();
  }
  EXPECT_GE(with_kernel_log, 20u) << "the kernel-log shapes need their cases";
}

// What every offline judgement must say about itself (contract: window.offline,
// gpus[].state, gpus[].room).
TEST(CorpusShape, OfflineDumpIsJudgedAsOneOfflineSampleWithStatesAndRoom) {
  const std::string dir = CorpusDir() + "/two-processes-52pct-in-use";
  ASSERT_TRUE(fs::exists(dir + "/dump.xml"));
  RunResult run =
      RunProcess(Gpuwarden({"why", "--from", dir + "/dump.xml", "--json"}), CorpusOptions());
  json out = json::parse(run.out, nullptr, false);
  ASSERT_TRUE(out.is_object()) << run.out << run.err;
  EXPECT_EQ(out["window"]["samples"], 1);
  EXPECT_EQ(Member(out["window"], "offline"), true) << out["window"].dump();
  ASSERT_EQ(out["gpus"].size(), 2u);
  const json g0 = out["gpus"][0];
  ASSERT_TRUE(g0.contains("room")) << g0.dump();
  // 81920 - 869 reserved - 30720 used MiB free; 100 - 52 % compute free.
  EXPECT_EQ(Member(g0["room"], "free_bytes"), json((81920LL - 869 - 30720) * 1024 * 1024));
  EXPECT_EQ(Member(g0["room"], "compute_free_pct"), json(48));
}

// ---------------------------------------------------------------------------
// The shipped scenarios.

std::string Stem(const std::string& path) { return fs::path(path).stem().string(); }

std::vector<std::string> ScenarioNames() {
  std::vector<std::string> out;
  for (const auto& p : ShippedScenarios()) out.push_back(Stem(p));
  return out;
}

TEST(ScenarioExpectations, EveryShippedScenarioHasAnExpectedFile) {
  const auto names = ScenarioNames();
  ASSERT_FALSE(names.empty());
  for (const std::string& name : names) {
    const json e = ReadJsonFile(ScenarioExpectedDir() + "/" + name + ".json");
    EXPECT_TRUE(e.is_object()) << "scenarios/expected/" << name << ".json missing or not JSON";
    if (!e.is_object()) continue;
    EXPECT_TRUE(e.contains("verdict") && e.contains("exit")) << name;
    EXPECT_TRUE(e.contains("gpus") || e.value("gpu_count", -1) == 0) << name << ": no GPU asserted";
  }
  // And no expected file for a scenario that is not shipped.
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(ScenarioExpectedDir(), ec)) {
    const std::string stem = entry.path().stem().string();
    EXPECT_TRUE(std::find(names.begin(), names.end(), stem) != names.end())
        << "scenarios/expected/" << entry.path().filename().string() << " has no scenario";
  }
}

class ShippedScenario : public ::testing::TestWithParam<std::string> {};

TEST_P(ShippedScenario, WhyGivesTheExpectedVerdictsAndStates) {
  const std::string name = GetParam();
  const json expected = ReadJsonFile(ScenarioExpectedDir() + "/" + name + ".json");
  ASSERT_TRUE(expected.is_object()) << "scenarios/expected/" << name << ".json";
  // Real processes stand in for the scenario's "env:NAME" PIDs (as in
  // why_e2e_test.cc's ScenarioVerdict).
  RunOptions options = CorpusOptions();
  options.env["GPUWARDEN_SIM_START"] = NowSecondsString();
  std::vector<std::unique_ptr<ChildProcess>> children;
  const ExpectedServer server = LoadExpectedServer(ScenarioPath(name + ".json"));
  for (const std::string& env_name : server.pid_env_names) {
    children.push_back(std::make_unique<ChildProcess>());
    options.env[env_name] = std::to_string(children.back()->pid());
  }
  // A one-second window unless the case names its own (a judgement that
  // needs a longer watch, e.g. a PID absent for two seconds) or one look (--now).
  const json extra = expected.value("args", json::array());
  const bool own_window = std::find(extra.begin(), extra.end(), json("--window")) != extra.end() ||
                          std::find(extra.begin(), extra.end(), json("--now")) != extra.end();
  std::vector<std::string> args = {"--sim", ScenarioPath(name + ".json"), "--timeout", "1", "why",
                                   "--json"};
  if (!own_window) args.insert(args.end(), {"--window", "1"});
  // The scenario's kernel log (a file under scenarios/), copied so that it
  // was "captured" now, as a live log is; else the machine's own log is read.
  TempDir tmp;
  if (expected.contains("kernel_log")) {
    const std::string log = tmp.path() + "/kernel.log";
    std::error_code ec;
    fs::copy_file(ScenarioPath(expected["kernel_log"].get<std::string>()), log, ec);
    ASSERT_FALSE(ec) << "scenario " << name << ": kernel_log: " << ec.message();
    args.insert(args.end(), {"--kernel-log", log});
  }
  for (const json& a : extra) args.push_back(a.get<std::string>());
  RunResult run = RunProcess(Gpuwarden(args), options);
  Mismatches m;
  CompareWhy(expected, run, json::parse(run.out, nullptr, false), m);
  EXPECT_TRUE(m.empty()) << "scenario " << name << " (" << expected.value("description", "")
                         << ")\n"
                         << m.Text() << "why output:\n"
                         << run.out.substr(0, 4000) << run.err.substr(0, 1000);
}

INSTANTIATE_TEST_SUITE_P(Shipped, ShippedScenario, ::testing::ValuesIn(ScenarioNames()), ParamName);

}  // namespace
}  // namespace gw::test
