// gpuwardend's web page in a real headless Chromium (Debian's `chromium`),
// driven over the DevTools protocol on a pipe (e2e/chromium.h): one daemon
// on a simulated server and one browser for the whole binary (a
// ::testing::Environment), both on 127.0.0.1 only. The server: four GPUs
// (an H100 whose holder has a hostile command line, a free A100, an A100
// whose row remapper failed, an L40S whose utilisation and memory flip
// every few seconds on the scenario's timeline), a day of history written
// before the daemon starts, a running and a waiting job with hostile names,
// and a token. The tests read the rendered DOM and compare it with what
// `gpuwarden status --json` and `why --json` read from the same simulator.
#include <gtest/gtest.h>
#include <httplib.h>
#include <png.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/units.h"
#include "e2e/chromium.h"
#include "e2e/e2e_util.h"
#include "e2e/queue_e2e_util.h"
#include "e2e/service_process.h"
#include "e2e/user_process.h"
#include "fleet/history_store.h"
#include "queue/protocol.h"

namespace gw::test {
namespace {

using nlohmann::json;

constexpr char kToken[] = "e2e-web-token-5f0c9d2a71b3";
constexpr unsigned kLiveGpu = 3;  // Flips on the timeline.
constexpr int kPhaseS = 4;        // Each phase of the flip lasts this long.
constexpr int kLowUtil = 7, kHighUtil = 93;
constexpr uint64_t kLowMib = 2048, kHighMib = 30720;
constexpr int kWidth = 1280, kHeight = 1500;
// argv[0] of the holder on GPU 0: markup, a right-to-left override, an
// escape sequence and a byte that is not UTF-8.
const std::string kHostile =
    "<script>gwPwned=1</script><img/src/onerror=gwPwned=2>\xE2\x80\xAE\x1b[31m\xff";
constexpr char kHostileJob[] = "<b>train</b><script>gwPwned=3</script>";

// The simulated server: row-remap-failed.json (four A100s, GPU 2's row
// remapper failed) with GPU 0 an H100 and GPU 3 an L40S on a timeline.
json Scenario() {
  json s = json::parse(std::ifstream(ScenarioPath("row-remap-failed.json")));
  json& g = s["gpus"];
  g[0].erase("processes");
  g[0]["name"] = "NVIDIA H100 80GB HBM3";
  g[0]["utilization"] = {{"gpu", 70}, {"memory", 30}};
  g[3]["name"] = "NVIDIA L40S";
  g[3]["memory"] = {{"total_mib", 46068},
                    {"reserved_mib", 869},
                    {"used_mib", kLowMib},
                    {"used_from_processes", false}};
  g[3]["utilization"] = {{"gpu", kLowUtil}, {"memory", 5}};
  json timeline = json::array();
  for (int k = 0; k * kPhaseS < 2 * 3600; ++k) {
    const bool high = k % 2 == 1;
    timeline.push_back({{"at_s", k * kPhaseS},
                        {"gpu", kLiveGpu},
                        {"set",
                         {{"utilization.gpu", high ? kHighUtil : kLowUtil},
                          {"memory.used_mib", high ? kHighMib : kLowMib}}}});
  }
  s["timeline"] = std::move(timeline);
  return s;
}

// A day as the daemon would have kept it: minutes, then the last hour in
// seconds; each GPU's utilisation and memory in slow waves.
fleet::HistoryPoint Wave(int64_t t, int step, const std::vector<double>& totals) {
  fleet::HistoryPoint p;
  p.time_s = t;
  p.step_s = step;
  for (unsigned i = 0; i < totals.size(); ++i) {
    fleet::GpuPoint g;
    g.index = i;
    g.util_pct = 50 + 40 * std::sin(static_cast<double>(t) / 900 + i);
    g.mem_used_bytes = totals[i] * (0.45 + 0.35 * std::sin(static_cast<double>(t) / 2400 + 2 * i));
    g.mem_total_bytes = totals[i];
    g.power_w = 100 + 2 * g.util_pct;
    g.temp_c = 40;
    p.gpus.push_back(g);
  }
  return p;
}

class Web : public ::testing::Environment {
 public:
  void SetUp() override {
    if (access(kChromium, X_OK) != 0) {
      skip_ = "Debian's chromium is not installed (scripts/setup.sh installs it)";
      return;
    }
    dir_ = std::make_unique<TempDir>();
    chmod(dir_->path().c_str(), 0755);
    const std::string reg = dir_->path() + "/reg";
    mkdir(reg.c_str(), 01777);
    const json scenario = Scenario();
    scenario_ = dir_->Write("server.json", scenario.dump());
    std::vector<double> totals;
    for (const json& g : scenario["gpus"]) {
      uuids_.push_back(g["uuid"].get<std::string>());
      totals.push_back(static_cast<double>(
          g.contains("memory")
              ? g["memory"]["total_mib"].get<uint64_t>() * kMiB
              : scenario["defaults"]["memory"]["total_mib"].get<uint64_t>() * kMiB));
    }

    // The hostile holder: bash execs sleep under the hostile argv[0].
    holder_ = std::make_unique<TestChild>(
        std::vector<std::string>{"/bin/bash", "-c", "exec -a \"$0\" /bin/sleep 3600", kHostile},
        TestChild::Options{});
    std::ofstream(reg + "/" + std::to_string(holder_->pid())) << uuids_[0] << " 20480 60\n";

    const std::string state = dir_->path() + "/state";
    mkdir(state.c_str(), 0700);
    const int64_t now = static_cast<int64_t>(std::time(nullptr));
    {
      auto store = fleet::SqliteHistoryStore::Open(state + "/history.db");
      if (!store.ok()) {
        failure_ = "history: " + store.error().message;
        return;
      }
      const int64_t seconds_from = now - 3600;
      for (int64_t m = (now - 86400) / 60 * 60; m + 60 <= seconds_from / 60 * 60; m += 60) {
        (void)(*store)->Append(1, Wave(m, 60, totals));
      }
      for (int64_t t = seconds_from; t < now - 1; ++t)
        (void)(*store)->Append(0, Wave(t, 1, totals));
    }
    const std::string token_file = dir_->Write("token", std::string(kToken) + "\n");
    chmod(token_file.c_str(), 0600);

    sim_ = SimOptions();
    sim_.env["GPUWARDEN_SIM_PROCESS_DIR"] = reg;
    sim_.env["GPUWARDEN_SOCKET"] = std::nullopt;
    sim_start_ = std::stod(*sim_.env["GPUWARDEN_SIM_START"]);
    socket_ = dir_->path() + "/s.sock";
    if (!daemon_.Start(
            {DaemonBinary(), "--socket", socket_, "--state-dir", state, "--sim", scenario_,
             "--listen", "127.0.0.1:0", "--web-token-file", token_file, "--no-kernel-log"},
            sim_, dir_->path() + "/daemon.log")) {
      failure_ = "gpuwardend did not start";
      return;
    }
    constexpr std::string_view kListening = "the page on http://127.0.0.1:";
    if (!daemon_.WaitFor(
            [&] {
              const std::string log = daemon_.Log();
              const size_t at = log.find(kListening);
              if (at == std::string::npos) return false;
              port_ = std::atoi(log.c_str() + at + kListening.size());
              return port_ > 0;
            },
            30)) {
      failure_ = "gpuwardend did not say where it listens:\n" + daemon_.Log();
      return;
    }

    // A job that runs and one that waits (3 whole GPUs: never free here).
    for (const std::vector<std::string>& run :
         {std::vector<std::string>{"--gpus", "1", "--vram", "1G", "--name", "running-job"},
          std::vector<std::string>{"--gpus", "3", "--name", kHostileJob}}) {
      std::vector<std::string> argv = {"--socket", socket_,    "--sim",        scenario_,
                                       "run",      "--detach", "--time-limit", "10m"};
      argv.insert(argv.end(), run.begin(), run.end());
      argv.insert(argv.end(), {"--", "/bin/sleep", "600"});
      const RunResult r = RunProcess(Gpuwarden(argv), sim_);
      if (r.exit_code != 0) {
        failure_ = "gpuwarden run: " + r.err;
        return;
      }
      jobs_.push_back(r.out.substr(0, r.out.find_first_of(" \n")));
    }

    if (!browser_.Start(dir_->path(), kWidth, kHeight)) {
      failure_ = "chromium: " + browser_.why() + "\n" + browser_.Log();
      return;
    }
    // The token in the address: the daemon answers with a cookie and the page.
    if (!browser_.Call("Page.navigate", {{"url", Url("/?token=") + kToken}}) ||
        !browser_.WaitUntil("Number(document.body && document.body.dataset.updates) >= 1", 60)) {
      failure_ = "the page never rendered: " + browser_.why() + "\n" + daemon_.Log();
    }
  }

  void TearDown() override {
    browser_.Stop();
    for (const std::string& id : jobs_) {
      RunProcess(Gpuwarden({"--socket", socket_, "cancel", id}), sim_);
    }
    daemon_.Stop();
    holder_.reset();
  }

  std::string Url(const std::string& path) const {
    return "http://127.0.0.1:" + std::to_string(port_) + path;
  }
  // The timeline's phase now: true while GPU 3 is at kHighUtil.
  int Phase() const {
    using namespace std::chrono;
    const double now = duration<double>(system_clock::now().time_since_epoch()).count();
    return static_cast<int>(std::floor((now - sim_start_) / kPhaseS));
  }

  Chromium& browser() { return browser_; }
  const std::string& skip() const { return skip_; }
  const std::string& failure() const { return failure_; }
  const std::string& scenario() const { return scenario_; }
  const RunOptions& sim() const { return sim_; }
  pid_t holder_pid() const { return holder_->pid(); }
  int port() const { return port_; }
  const TempDir& dir() const { return *dir_; }

 private:
  std::string skip_, failure_;
  std::unique_ptr<TempDir> dir_;
  std::string scenario_, socket_;
  std::vector<std::string> uuids_, jobs_;
  std::unique_ptr<TestChild> holder_;
  RunOptions sim_;
  double sim_start_ = 0;
  ServiceProcess daemon_;
  Chromium browser_;
  int port_ = 0;
};

Web* web = nullptr;

class WebE2e : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!web->skip().empty()) GTEST_SKIP() << web->skip();
    ASSERT_TRUE(web->failure().empty()) << web->failure();
  }
  json Eval(const std::string& expression) {
    std::optional<json> v = web->browser().Evaluate(expression);
    EXPECT_TRUE(v.has_value()) << expression << ": " << web->browser().why();
    return v.value_or(json());
  }
};

// What the page shows of each GPU, from its DOM.
constexpr char kCards[] = R"(Array.from(document.querySelectorAll('#gpus .card')).map((c) => ({
  index: Number(c.dataset.gpuIndex),
  name: c.querySelector('.gpu-title').dataset.name,
  title: c.querySelector('.gpu-title').textContent,
  state: c.dataset.state,
  badge: c.querySelector('.badge').textContent,
  used: c.querySelector('.mem-text').dataset.usedBytes,
  total: c.querySelector('.mem-text').dataset.totalBytes,
  memText: c.querySelector('.mem-text').textContent,
  util: c.querySelector('.util-text').dataset.util,
})))";

std::optional<json> CliDocument(const std::string& command) {
  std::vector<std::string> argv = {command, "--json", "--sim", web->scenario()};
  if (command == "why") argv.push_back("--no-history");  // This test's daemon is not asked.
  const RunResult r = RunProcess(Gpuwarden(argv), web->sim());
  json doc = json::parse(r.out, nullptr, false);
  if (doc.is_discarded()) return std::nullopt;
  return doc;
}

TEST_F(WebE2e, TheGpusNamesMemoryAndStatesAreTheSimulators) {
  std::optional<json> status = CliDocument("status");
  ASSERT_TRUE(status) << "gpuwarden status --json failed";
  const json cards = Eval(kCards);
  ASSERT_EQ(cards.size(), (*status)["gpus"].size()) << cards.dump();
  for (size_t i = 0; i < cards.size(); ++i) {
    const json& c = cards[i];
    const json& g = (*status)["gpus"][i];
    EXPECT_EQ(c["index"], g["index"]);
    EXPECT_EQ(c["name"], g["name"]);
    EXPECT_NE(c["title"].get<std::string>().find(g["name"].get<std::string>()), std::string::npos);
    EXPECT_EQ(c["total"], std::to_string(g["memory"]["total_bytes"].get<uint64_t>()));
    if (c["index"] != kLiveGpu) {
      EXPECT_EQ(c["used"], std::to_string(g["memory"]["used_bytes"].get<uint64_t>()))
          << "GPU " << c["index"];
    }
  }
  EXPECT_EQ(cards[0]["name"], "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(cards[3]["name"], "NVIDIA L40S");
  EXPECT_EQ(cards[0]["memText"], "20.0 GiB / 80.0 GiB");

  // States as `why` judges the same server; polled, since the two look at
  // different moments (the live GPU flips: left out of the states, and the
  // verdict's line, which counts it, is compared once the two agree).
  std::map<int, std::string> want, shown;
  json why;
  std::string summary, line;
  for (int tries = 0; tries < 20; ++tries) {
    std::optional<json> doc = CliDocument("why");
    ASSERT_TRUE(doc) << "gpuwarden why --json failed";
    why = *doc;
    want.clear();
    shown.clear();
    for (const json& g : why["gpus"]) {
      if (g["index"] != kLiveGpu) want[g["index"].get<int>()] = g["state"];
    }
    for (const json& c : Eval(kCards)) {
      if (c["index"] != kLiveGpu) shown[c["index"].get<int>()] = c["state"];
    }
    summary = why["summary"];
    line = Eval("document.getElementById('summary').textContent");
    if (want == shown && summary.find(line) != std::string::npos) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
  EXPECT_EQ(shown, want);
  EXPECT_EQ(shown[1], "free");
  EXPECT_TRUE(shown[2] == "fault" || shown[2] == "degraded") << shown[2];
  // The verdict and its line are why's (the line without the verdict it starts with).
  EXPECT_EQ(Eval("document.getElementById('verdict-word').textContent"), why["verdict"]);
  EXPECT_FALSE(line.empty());
  EXPECT_NE(summary.find(line), std::string::npos) << summary << " / " << line;
}

TEST_F(WebE2e, AHostileProcessOrJobNameIsShownAsText) {
  ASSERT_TRUE(web->browser().WaitUntil("document.querySelector('tr.holder[data-pid=\"" +
                                           std::to_string(web->holder_pid()) + "\"]') !== null",
                                       20));
  const std::string cmd =
      Eval("document.querySelector('tr.holder[data-pid=\"" + std::to_string(web->holder_pid()) +
           "\"] td.cmd').firstChild.textContent");
  // The markup is there as characters; the override and the escape are shown
  // as escapes; the stray byte as U+FFFD.
  EXPECT_EQ(cmd.rfind("<script>gwPwned=1</script><img/src/onerror=gwPwned=2>", 0), 0u) << cmd;
  EXPECT_NE(cmd.find("\\u202e"), std::string::npos) << cmd;
  EXPECT_NE(cmd.find("\\u001b[31m"), std::string::npos) << cmd;
  EXPECT_NE(cmd.find("\xEF\xBF\xBD"), std::string::npos) << cmd;
  // Nothing ran and nothing was made of it: one script (the page's), no image.
  EXPECT_EQ(Eval("typeof window.gwPwned"), "undefined");
  EXPECT_EQ(Eval("document.scripts.length"), 1);
  EXPECT_EQ(Eval("document.querySelectorAll('img, b').length"), 0);
  // The job name too.
  ASSERT_TRUE(
      web->browser().WaitUntil("document.querySelectorAll('#queue tr.job').length >= 2", 20));
  EXPECT_EQ(Eval("Array.from(document.querySelectorAll('#queue .job-name'))"
                 ".some((e) => e.textContent === '" +
                 std::string(kHostileJob) + "')"),
            true);
}

TEST_F(WebE2e, TheQueueShowsRunningAndWaitingJobsWithTheReason) {
  ASSERT_TRUE(
      web->browser().WaitUntil("Array.from(document.querySelectorAll('#queue tr.job')).some((r) => "
                               "r.dataset.state === 'running')",
                               30))
      << Eval("document.getElementById('queue').textContent");
  const json jobs = Eval(R"(Array.from(document.querySelectorAll('#queue tr.job')).map((r) => ({
    state: r.dataset.state, name: r.querySelector('.job-name').textContent,
    reason: r.querySelector('.reason').textContent})))");
  ASSERT_EQ(jobs.size(), 2u) << jobs.dump();
  EXPECT_EQ(jobs[0]["state"], "running");
  EXPECT_EQ(jobs[0]["name"], "running-job");
  EXPECT_EQ(jobs[1]["state"], "queued");
  EXPECT_FALSE(jobs[1]["reason"].get<std::string>().empty()) << jobs.dump();
  EXPECT_NE(Eval("document.getElementById('queue-note').textContent")
                .get<std::string>()
                .find("1 running, 1 waiting"),
            std::string::npos);
}

// The share of the PNG's pixels far from `bg`, and of those near `ink`.
struct Ink {
  double drawn = 0;
  double util = 0;
};
std::optional<Ink> InkOf(const std::string& png_bytes, const int bg[3], const int util[3]) {
  png_image image{};
  image.version = PNG_IMAGE_VERSION;
  if (!png_image_begin_read_from_memory(&image, png_bytes.data(), png_bytes.size())) {
    return std::nullopt;
  }
  image.format = PNG_FORMAT_RGB;
  std::vector<unsigned char> px(PNG_IMAGE_SIZE(image));
  if (!png_image_finish_read(&image, nullptr, px.data(), 0, nullptr)) return std::nullopt;
  size_t drawn = 0, near_util = 0;
  const size_t n = px.size() / 3;
  for (size_t i = 0; i < n; ++i) {
    int far = 0, close = 0;
    for (int c = 0; c < 3; ++c) {
      far = std::max(far, std::abs(px[3 * i + c] - bg[c]));
      close = std::max(close, std::abs(px[3 * i + c] - util[c]));
    }
    drawn += far > 24;
    near_util += close < 40;
  }
  return Ink{static_cast<double>(drawn) / n, static_cast<double>(near_util) / n};
}

std::string Screenshot(const json& clip = nullptr) {
  json params = {{"format", "png"}};
  if (!clip.is_null()) params["clip"] = clip;
  std::optional<json> shot = web->browser().Call("Page.captureScreenshot", params);
  EXPECT_TRUE(shot) << web->browser().why();
  if (!shot) return std::string();
  return queue::Base64Decode((*shot)["data"].get<std::string>()).value_or(std::string());
}

void Keep(const std::string& name, const std::string& bytes) {
  if (const char* dir = std::getenv("GW_WEB_REPORT_DIR")) {
    std::ofstream(std::string(dir) + "/" + name, std::ios::binary) << bytes;
  }
}

TEST_F(WebE2e, TheHistoryChartIsDrawn) {
  // The hour written before the daemon started: 360 ten-second points.
  ASSERT_TRUE(
      web->browser().WaitUntil("Array.from(document.querySelectorAll('#gpus .chart svg'))"
                               ".every((s) => Number(s.dataset.points) >= 300)",
                               30))
      << Eval(
             "Array.from(document.querySelectorAll('#gpus .chart svg')).map((s) => "
             "s.dataset.points)")
             .dump();
  const json box = Eval(R"((() => {
    const s = document.querySelector('#gpus .card .chart svg');
    s.scrollIntoView();
    const r = s.getBoundingClientRect();
    const rgb = (c) => c.match(/\d+/g).slice(0, 3).map(Number);
    return {x: r.x + window.scrollX, y: r.y + window.scrollY, width: r.width, height: r.height,
            bg: rgb(getComputedStyle(s).backgroundColor),
            util: rgb(getComputedStyle(s.querySelector('.util')).stroke)};
  })())");
  ASSERT_TRUE(box.is_object()) << box.dump();
  const int bg[3] = {box["bg"][0], box["bg"][1], box["bg"][2]};
  const int util[3] = {box["util"][0], box["util"][1], box["util"][2]};
  const std::string png = Screenshot({{"x", box["x"]},
                                      {"y", box["y"]},
                                      {"width", box["width"]},
                                      {"height", box["height"]},
                                      {"scale", 1}});
  std::optional<Ink> ink = InkOf(png, bg, util);
  ASSERT_TRUE(ink) << "the screenshot is not a PNG";
  // The memory area covers about half the chart; the utilisation line is thin.
  EXPECT_GT(ink->drawn, 0.15) << "the chart looks blank";
  EXPECT_GT(ink->util, 0.003) << "no utilisation line";

  // The whole page, for docs/web.md: not an error page.
  EXPECT_EQ(Eval("document.body.dataset.state"), "ready");
  Eval("window.scrollTo(0, 0)");
  Keep("web-desktop.png", Screenshot());
}

// The chart's window widened to 7 days and panned back, from the history
// written before the daemon started (a day of minutes, an hour of seconds).
TEST_F(WebE2e, TheChartWidensAndPansBackInTime) {
  const std::string points =
      "Math.min(...Array.from(document.querySelectorAll('#gpus .chart svg'))"
      ".map((s) => Number(s.dataset.points)))";
  const std::string label = "document.getElementById('range-label').textContent";
  Eval("document.querySelector('.range button[data-span=\"604800\"]').click()");
  // A day of 1-min points in 30-min steps: 48.
  ASSERT_TRUE(web->browser().WaitUntil(
      label + ".startsWith('The last 7 d') && " + points + " >= 45 && " + points + " <= 60", 20))
      << Eval(label) << " " << Eval(points);
  Eval("document.querySelector('.range button[data-span=\"3600\"]').click()");
  ASSERT_TRUE(web->browser().WaitUntil(label + ".startsWith('The last 1 h')", 20));
  Eval("document.getElementById('pan-back').click()");
  // The hour before the last: its 1-min points.
  ASSERT_TRUE(web->browser().WaitUntil(
      label + ".includes('ending 1 h 0 min ago') && " + points + " >= 55 && " + points + " <= 61",
      20))
      << Eval(label) << " " << Eval(points);
  EXPECT_EQ(Eval("document.querySelector('#gpus .chart-axis').lastChild.textContent === 'now'"),
            false);
  Eval("document.getElementById('pan-now').click()");
  ASSERT_TRUE(
      web->browser().WaitUntil(label + ".startsWith('The last 1 h') && " + points + " >= 300", 20));
}

TEST_F(WebE2e, ItUpdatesWithoutAReloadAsTheTimelineMoves) {
  // A mark on this document: a reload would lose it.
  Eval("window.gwMark = 'same-document'");
  const json first = Eval(
      "({updates: Number(document.body.dataset.updates), "
      "navigations: performance.getEntriesByType('navigation').length})");
  auto live = [&] { return Eval(kCards)[kLiveGpu]; };
  // Both phases seen, each with the timeline's utilisation and memory. A
  // look that spans a phase's start may read one value of each phase (the
  // driver is asked one value at a time): such a mix is the timeline's too,
  // and shows for a look, so it is allowed; anything else is not.
  const std::string low = std::to_string(kLowUtil), high = std::to_string(kHighUtil);
  const std::string low_used = std::to_string(kLowMib * kMiB);
  const std::string high_used = std::to_string(kHighMib * kMiB);
  std::set<std::string> seen;
  int mixed = 0;
  const auto start = std::chrono::steady_clock::now();
  while (seen.size() < 2 &&
         std::chrono::steady_clock::now() - start < std::chrono::seconds(6 * kPhaseS)) {
    const json c = live();
    const std::string util = c["util"], used = c["used"];
    if ((util == low && used == low_used) || (util == high && used == high_used)) {
      seen.insert(util);
    } else if ((util == low || util == high) && (used == low_used || used == high_used)) {
      ++mixed;
    } else {
      ADD_FAILURE() << "GPU 3 shows " << c.dump() << ", not a value of its timeline";
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
  }
  EXPECT_LE(mixed, 12) << "a mix of two phases shown for longer than a few looks";
  EXPECT_EQ(seen.size(), 2u) << "the page did not follow the timeline";
  EXPECT_EQ(Eval("window.gwMark"), "same-document");
  EXPECT_EQ(Eval("performance.getEntriesByType('navigation').length"), first["navigations"]);
  EXPECT_GT(Eval("Number(document.body.dataset.updates)").get<int>(), first["updates"].get<int>());
}

// Live, the chart asks only for its new steps (after_unix_s) and keeps the
// rest of its hour: still every step, the newest one recent.
TEST_F(WebE2e, TheLiveChartTakesOnlyItsNewSteps) {
  ASSERT_TRUE(web->browser().WaitUntil(
      "performance.getEntriesByType('resource').some((r) => r.name.includes('after_unix_s'))", 30));
  ASSERT_TRUE(
      web->browser().WaitUntil("Array.from(document.querySelectorAll('#gpus .chart svg'))"
                               ".every((s) => Number(s.dataset.points) >= 300)",
                               20));
  const json newest = Eval(
      "(() => { const e = performance.getEntriesByType('resource')"
      ".filter((r) => r.name.includes('after_unix_s')); return e[e.length - 1].encodedBodySize; "
      "})()");
  EXPECT_LT(newest.get<double>(), 20000) << "an update carries more than its new steps";
}

TEST_F(WebE2e, ItStaysUsableOnAPhone) {
  ASSERT_TRUE(web->browser().Call(
      "Emulation.setDeviceMetricsOverride",
      {{"width", 390}, {"height", 844}, {"deviceScaleFactor", 2}, {"mobile", true}}));
  ASSERT_TRUE(web->browser().WaitUntil("window.innerWidth === 390", 10));
  // Nothing wider than the screen: no sideways scrolling of the page.
  EXPECT_LE(Eval("document.documentElement.scrollWidth").get<int>(), 390);
  const json widths = Eval(
      "Array.from(document.querySelectorAll('#gpus .card'))"
      ".map((c) => c.getBoundingClientRect().width)");
  for (const json& w : widths) EXPECT_LE(w.get<double>(), 390);
  Eval("window.scrollTo(0, 0)");
  Keep("web-phone.png", Screenshot());
  ASSERT_TRUE(web->browser().Call("Emulation.clearDeviceMetricsOverride", json::object()));
}

TEST_F(WebE2e, OnlyReadsNeedsTheTokenAndSendsTheSecurityHeaders) {
  httplib::Client c("127.0.0.1", web->port());
  for (const char* path : {"/", "/api/status", "/metrics", "/app.js"}) {
    auto r = c.Get(path);
    ASSERT_TRUE(r) << path;
    EXPECT_EQ(r->status, 401) << path;
  }
  const httplib::Headers auth = {{"Authorization", std::string("Bearer ") + kToken}};
  auto page = c.Get("/", auth);
  ASSERT_TRUE(page);
  EXPECT_EQ(page->status, 200);
  EXPECT_EQ(page->get_header_value("X-Content-Type-Options"), "nosniff");
  const std::string csp = page->get_header_value("Content-Security-Policy");
  EXPECT_NE(csp.find("default-src 'self'"), std::string::npos) << csp;
  EXPECT_EQ(csp.find("unsafe-inline"), std::string::npos) << csp;
  auto status = c.Get("/api/status", auth);
  ASSERT_TRUE(status);
  const json doc = json::parse(status->body);
  EXPECT_EQ(doc["schema"], "gpuwarden.web.status");
  EXPECT_EQ(doc["status"]["schema"], "gpuwarden.status");
  EXPECT_EQ(doc["why"]["schema"], "gpuwarden.why");
  // The history's trends, as `why` gives them: of this server, up to now.
  ASSERT_TRUE(doc["why"]["trends"].is_object()) << doc["why"].dump();
  EXPECT_GT(doc["why"]["trends"]["as_of_unix_s"].get<int64_t>(), std::time(nullptr) - 120);
  auto bad = c.Get("/api/history?since_s=0", auth);
  ASSERT_TRUE(bad);
  EXPECT_EQ(bad->status, 400);
  EXPECT_NE(bad->body.find("since_s"), std::string::npos);
  auto post = c.Post("/api/status", auth, "{}", "application/json");
  ASSERT_TRUE(post);
  EXPECT_EQ(post->status, 405);
  auto metrics = c.Get("/metrics", auth);
  ASSERT_TRUE(metrics);
  EXPECT_EQ(metrics->status, 200);
}

// Last: it loads the page again. The page's weight and how long it takes to
// show the server, printed for docs/benchmarks.md (GW_WEB_REPORT_DIR keeps
// them and the screenshots).
TEST_F(WebE2e, WeightAndTimeToFirstRender) {
  ASSERT_TRUE(web->browser().Call("Page.navigate", {{"url", web->Url("/")}}));
  ASSERT_TRUE(
      web->browser().WaitUntil("performance.getEntriesByName('gw-first-chart').length === 1", 30));
  const json m = Eval(R"((() => {
    const nav = performance.getEntriesByType('navigation')[0];
    const res = performance.getEntriesByType('resource');
    // The first fetch of each: what a fresh load costs.
    const first = (re) => res.find((r) => re.test(r.name)) || {};
    const size = (re) => first(re).encodedBodySize || 0;
    const raw = (re) => first(re).decodedBodySize || 0;
    const fcp = performance.getEntriesByName('first-contentful-paint')[0];
    return {html: nav.encodedBodySize, js: size(/app\.js$/), css: size(/app\.css$/),
            icon: size(/favicon/), status: size(/api\/status/), queue: size(/api\/queue/),
            history: size(/api\/history/),
            raw: nav.decodedBodySize + raw(/app\.js$/) + raw(/app\.css$/) + raw(/favicon/),
            raw_data: raw(/api\/status/) + raw(/api\/queue/) + raw(/api\/history/),
            fcp_ms: fcp ? fcp.startTime : null,
            first_render_ms: performance.getEntriesByName('gw-first-render')[0].startTime,
            first_chart_ms: performance.getEntriesByName('gw-first-chart')[0].startTime,
            status_ms: first(/api\/status/).duration, history_ms: first(/api\/history/).duration};
  })())");
  ASSERT_TRUE(m.is_object()) << m.dump();
  const double statics = m["html"].get<double>() + m["js"].get<double>() + m["css"].get<double>() +
                         m["icon"].get<double>();
  std::printf(
      "[ web ] page as sent: html %d B, app.js %d B, app.css %d B, favicon %d B: "
      "%.1f KiB (%.1f KiB unpacked)\n",
      m["html"].get<int>(), m["js"].get<int>(), m["css"].get<int>(), m["icon"].get<int>(),
      statics / 1024, m["raw"].get<double>() / 1024);
  std::printf(
      "[ web ] data at load as sent: /api/status %d B, /api/queue %d B, /api/history %d B "
      "(%.1f KiB unpacked)\n",
      m["status"].get<int>(), m["queue"].get<int>(), m["history"].get<int>(),
      m["raw_data"].get<double>() / 1024);
  std::printf(
      "[ web ] first contentful paint %.0f ms, the server shown %.0f ms, its charts "
      "%.0f ms (/api/status answered in %.0f ms, /api/history in %.0f ms)\n",
      m["fcp_ms"].is_null() ? -1.0 : m["fcp_ms"].get<double>(), m["first_render_ms"].get<double>(),
      m["first_chart_ms"].get<double>(), m["status_ms"].get<double>(),
      m["history_ms"].get<double>());
  Keep("web-measure.json", m.dump(2));
  EXPECT_LT(m["raw"].get<double>(), 100 * 1024) << "the page grew past 100 KiB";
}

// Bad input at start: one line naming the input, a documented exit code,
// and no daemon left behind. Needs no browser.
TEST(WebOptions, ABadTokenFileOrListenValueStopsTheDaemonAtStart) {
  TempDir dir;
  const std::string open_token = dir.Write("open.token", std::string(kToken) + "\n");
  chmod(open_token.c_str(), 0644);
  const std::string short_token = dir.Write("short.token", "abc\n");
  chmod(short_token.c_str(), 0600);
  struct Case {
    std::vector<std::string> args;
    int exit_code;
    std::string names;
  };
  for (const Case& c : std::vector<Case>{
           {{"--listen", "127.0.0.1:0", "--web-token-file", open_token}, 3, open_token},
           {{"--listen", "127.0.0.1:0", "--web-token-file", short_token}, 3, "shorter than 16"},
           {{"--listen", "127.0.0.1:0", "--web-token-file", dir.path() + "/none"}, 3, "/none"},
           {{"--web-token-file", open_token}, 2, "needs --listen"},
           {{"--listen", "gpu01:9400"}, 2, "gpu01:9400"}}) {
    std::vector<std::string> argv = {
        DaemonBinary(),        "--socket", dir.path() + "/s.sock",           "--state-dir",
        dir.path() + "/state", "--sim",    ScenarioPath("healthy-idle.json")};
    argv.insert(argv.end(), c.args.begin(), c.args.end());
    const RunResult r = RunProcess(argv, SimOptions());
    EXPECT_EQ(r.exit_code, c.exit_code) << r.err;
    EXPECT_EQ(CountLines(r.err), 1u) << r.err;
    EXPECT_NE(r.err.find(c.names), std::string::npos) << r.err;
  }
}

}  // namespace
}  // namespace gw::test

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  gw::test::web = new gw::test::Web();
  ::testing::AddGlobalTestEnvironment(gw::test::web);
  return RUN_ALL_TESTS();
}
