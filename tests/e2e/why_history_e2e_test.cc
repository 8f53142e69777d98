// `why` with gpuwardend's history: a real daemon on a simulated server whose
// history.db already holds three hours (written with the daemon's own store,
// as a daemon that ran them would have left it), asked by the real `why`
// over the daemon's socket. Since when GPU 0 has sat held and idle and GPU 1
// full, the queue over the last hour, and what is not used: another server's
// history, --no-history, no daemon at all.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cmath>
#include <ctime>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "e2e/e2e_util.h"
#include "e2e/queue_e2e_util.h"
#include "e2e/service_process.h"
#include "fleet/history_point.h"
#include "fleet/history_store.h"

namespace gw::test {
namespace {

using nlohmann::json;

constexpr double kGiB = 1024.0 * 1024 * 1024;
constexpr double kTotal = 81920.0 * 1024 * 1024;  // The scenario's 80 GiB GPUs.

// GPU 0: 70 GiB held by a process that computes nothing; GPU 1: 79 GiB of
// working memory at 95 %.
constexpr char kScenario[] = R"({
  "driver": {"version": "550.90.07", "nvml_version": "12.550.90.07", "cuda_version": 12040},
  "gpus": [
    {"name": "NVIDIA A100-SXM4-80GB", "uuid": "GPU-aaaaaaaa-1111-2222-3333-444444444444",
     "pci_bus_id": "00000000:07:00.0", "memory": {"total_mib": 81920, "used_mib": 71680},
     "utilization": {"gpu": 0, "memory": 0}, "temperature_c": 33,
     "processes": [{"pid": "env:GW_IDLE_PID", "used_mib": 71680, "sm_pct": 0, "mem_pct": 0}]},
    {"name": "NVIDIA A100-SXM4-80GB", "uuid": "GPU-aaaaaaaa-1111-2222-3333-555555555555",
     "pci_bus_id": "00000000:0B:00.0", "memory": {"total_mib": 81920, "used_mib": 80896},
     "utilization": {"gpu": 95, "memory": 60}, "temperature_c": 61,
     "processes": [{"pid": "env:GW_WORK_PID", "used_mib": 80896, "sm_pct": 95, "mem_pct": 60}]}
  ]
})";

fleet::HistoryPoint Point(int64_t t, int step, bool gpu0_idle, bool gpu1_full, double queued) {
  fleet::HistoryPoint p;
  p.time_s = t;
  p.step_s = step;
  fleet::GpuPoint g0;
  g0.index = 0;
  g0.util_pct = gpu0_idle ? 0 : 80;
  g0.mem_used_bytes = 70 * kGiB;
  g0.mem_total_bytes = kTotal;
  fleet::GpuPoint g1;
  g1.index = 1;
  g1.util_pct = 95;
  g1.mem_used_bytes = gpu1_full ? 79 * kGiB : 40 * kGiB;
  g1.mem_total_bytes = kTotal;
  p.gpus = {g0, g1};
  p.queued = queued;
  p.running = 0;
  return p;
}

// A simulated server with gpuwardend beside it: the scenario in a readable
// directory, the daemon on its own socket and state directory.
class DaemonBesideE2e : public ::testing::Test {
 protected:
  // Writes `scenario` and sets the options every run shares.
  void Prepare(const char* scenario) {
    chmod(dir_.path().c_str(), 0755);
    scenario_ = dir_.Write("server.json", scenario);
    options_ = SimOptions();
    options_.env["GPUWARDEN_SOCKET"] = std::nullopt;
    state_ = dir_.path() + "/state";
    ASSERT_EQ(mkdir(state_.c_str(), 0700), 0);
  }

  // Starts gpuwardend (a look every 20 ms) and waits for its socket.
  void StartDaemon() {
    socket_ = dir_.path() + "/s.sock";
    ASSERT_TRUE(daemon_.Start({DaemonBinary(), "--socket", socket_, "--state-dir", state_, "--sim",
                               scenario_, "--poll-ms", "20"},
                              options_, dir_.path() + "/daemon.log"));
    ASSERT_TRUE(daemon_.WaitFor([&] { return access(socket_.c_str(), F_OK) == 0; }, 30))
        << daemon_.Log();
  }

  TempDir dir_;
  RunOptions options_;
  std::string scenario_;
  std::string state_;
  std::string socket_;
  ServiceProcess daemon_;
};

class WhyHistoryE2e : public DaemonBesideE2e {
 protected:
  void SetUp() override {
    Prepare(kScenario);
    options_.env["GW_IDLE_PID"] = std::to_string(idle_.pid());
    options_.env["GW_WORK_PID"] = std::to_string(work_.pid());

    // Three hours as a daemon leaves them: minutes, then the last 100 s a
    // second. GPU 0 worked until 2h 50m ago and has sat idle since; GPU 1
    // has been full for the last two hours; 3 jobs waited a minute ago.
    now_ = static_cast<int64_t>(std::time(nullptr));
    const int64_t seconds_from = now_ - 100;
    const int64_t first_minute = (now_ - 3 * 3600) / 60 * 60;
    idle_since_ = first_minute + 10 * 60;
    full_since_ = (now_ - 2 * 3600) / 60 * 60;
    {
      auto store = fleet::SqliteHistoryStore::Open(state_ + "/history.db");
      ASSERT_TRUE(store.ok()) << store.error().message;
      for (int64_t m = first_minute; m + 60 <= seconds_from / 60 * 60; m += 60) {
        ASSERT_TRUE((*store)->Append(1, Point(m, 60, m >= idle_since_, m >= full_since_, 1)).ok());
      }
      for (int64_t t = seconds_from; t < now_; ++t) {
        ASSERT_TRUE((*store)->Append(0, Point(t, 1, true, true, 3)).ok());
      }
    }
    StartDaemon();
  }

  RunResult Why(std::vector<std::string> args, const std::string& scenario) {
    std::vector<std::string> argv = {"--sim",    scenario, "--socket",   socket_, "why",
                                     "--window", "1",      "--idle-for", "0"};
    argv.insert(argv.end(), args.begin(), args.end());
    return RunProcess(Gpuwarden(argv), options_);
  }

  // The evidence `name` of the first `code` finding about a GPU.
  static const json* Evidence(const json& doc, const std::string& code, const std::string& name) {
    for (const json& g : doc["gpus"]) {
      for (const json& f : g["findings"]) {
        if (f["code"] != code) continue;
        for (const json& e : f["evidence"]) {
          if (e["name"] == name) return &e;
        }
      }
    }
    return nullptr;
  }

  ChildProcess idle_;
  ChildProcess work_;
  int64_t now_ = 0;
  int64_t idle_since_ = 0;
  int64_t full_since_ = 0;
};

TEST_F(WhyHistoryE2e, SaysSinceWhenAGpuSatIdleOrFullAndHowTheQueueMoved) {
  const RunResult r = Why({"--json"}, scenario_);
  SCOPED_TRACE(r.out + r.err + daemon_.Log());
  const json doc = json::parse(r.out, nullptr, /*allow_exceptions=*/false);
  ASSERT_FALSE(doc.is_discarded());
  ASSERT_TRUE(doc["trends"].is_object()) << doc["trends_note"];
  const json& t = doc["trends"];
  EXPECT_LE(t["covered_from_unix_s"].get<int64_t>(), now_ - 3 * 3600 + 60);
  std::map<unsigned, json> gpus;
  for (const json& g : t["gpus"]) gpus[g["index"].get<unsigned>()] = g;
  ASSERT_TRUE(gpus.count(0) && gpus.count(1)) << t.dump();
  EXPECT_EQ(gpus[0]["idle_held"]["since_unix_s"], idle_since_);
  EXPECT_EQ(gpus[0]["idle_held"]["open_start"], false);
  EXPECT_TRUE(gpus[0]["memory_full"].is_null());  // 70 of 80 GiB.
  EXPECT_EQ(gpus[1]["memory_full"]["since_unix_s"], full_since_);
  EXPECT_TRUE(gpus[1]["idle_held"].is_null());  // It works.
  // Waiting jobs: 3 a minute ago, none in the daemon's own looks since.
  ASSERT_TRUE(t["queue"].is_object()) << t.dump();
  EXPECT_EQ(t["queue"]["waiting_then"], 3);
  EXPECT_EQ(t["queue"]["waiting_now"], 0);

  // The holder's idle time reaches back through the GPU's run, but never
  // past the process's own start: it is seconds old.
  const json* idle = Evidence(doc, "IDLE_HOLDER", "idle_for");
  ASSERT_NE(idle, nullptr);
  EXPECT_LT((*idle)["number"].get<double>(), 120);
  EXPECT_EQ((*idle)["unit"], "s");
  EXPECT_NE((*idle)["value"].get<std::string>().find("all its life"), std::string::npos) << *idle;
  EXPECT_EQ((*Evidence(doc, "IDLE_HOLDER", "idle_source"))["value"], "gpu_history");
  const json* full = Evidence(doc, "VRAM_EXHAUSTED", "full_for");
  ASSERT_NE(full, nullptr);
  EXPECT_NEAR((*full)["number"].get<double>(), static_cast<double>(now_ - full_since_), 30);

  // And the text says it in words.
  const RunResult text = Why({}, scenario_);
  EXPECT_NE(text.out.find("Over time (gpuwardend's history):"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("GPU 0 held and idle for 2h 5"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("GPU 1 memory full for 2h"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("the queue shrank from 3 to 0 waiting jobs in the last "),
            std::string::npos)
      << text.out;
}

TEST_F(WhyHistoryE2e, AnotherServersHistoryNoHistoryAndNoDaemonSayNothing) {
  // A why of another (simulated) server beside this daemon: its history is of
  // other GPUs, and says so instead of lending its numbers.
  const RunResult other = Why({"--json"}, ScenarioPath("healthy-idle.json"));
  json doc = json::parse(other.out, nullptr, false);
  ASSERT_FALSE(doc.is_discarded()) << other.err;
  EXPECT_TRUE(doc["trends"].is_null());
  EXPECT_NE(doc["trends_note"].get<std::string>().find("other GPUs"), std::string::npos)
      << doc["trends_note"];

  const RunResult off = Why({"--json", "--no-history"}, scenario_);
  doc = json::parse(off.out, nullptr, false);
  ASSERT_FALSE(doc.is_discarded()) << off.err;
  EXPECT_TRUE(doc["trends"].is_null());
  EXPECT_EQ((*Evidence(doc, "IDLE_HOLDER", "idle_source"))["value"], "window");

  std::vector<std::string> argv = {"--sim", scenario_, "--socket",   dir_.path() + "/none.sock",
                                   "why",   "--now",   "--idle-for", "0",
                                   "--json"};
  const RunResult none = RunProcess(Gpuwarden(argv), options_);
  doc = json::parse(none.out, nullptr, false);
  ASSERT_FALSE(doc.is_discarded()) << none.err;
  EXPECT_TRUE(doc["trends"].is_null());
  EXPECT_TRUE(doc["trends_note"].is_null());  // No daemon is no news.
  EXPECT_EQ(none.err.find("history"), std::string::npos) << none.err;
}

// A run that pauses: GPU 0's holder computes at 95 % until t = 3 s, then sits
// at 0 % (a checkpoint). gpuwardend watched it work; `why` and `clean` judge
// its idle time from that, never from its age, and never act on less.
constexpr char kPauseScenario[] = R"({
  "driver": {"version": "550.90.07", "nvml_version": "12.550.90.07", "cuda_version": 12040},
  "gpus": [
    {"name": "NVIDIA A100-SXM4-80GB", "uuid": "GPU-bbbbbbbb-1111-2222-3333-444444444444",
     "pci_bus_id": "00000000:07:00.0", "memory": {"total_mib": 81920, "used_mib": 40960},
     "utilization": {"gpu": 95, "memory": 40}, "temperature_c": 50,
     "processes": [{"pid": "env:GW_RUN_PID", "used_mib": 40960, "sm_pct": 95, "mem_pct": 40}]}
  ],
  "timeline": [
    {"at_s": 3, "gpu": 0, "set": {"utilization.gpu": 0, "utilization.memory": 0,
     "processes": [{"pid": "env:GW_RUN_PID", "used_mib": 40960, "sm_pct": 0, "mem_pct": 0}]}}
  ]
})";

class IdleTimeE2e : public DaemonBesideE2e {
 protected:
  void SetUp() override {
    Prepare(kPauseScenario);
    options_.env["GW_RUN_PID"] = std::to_string(run_.pid());
    start_ = static_cast<double>(std::time(nullptr));
    options_.env["GPUWARDEN_SIM_START"] = std::to_string(start_);
    StartDaemon();
  }

  // Waits until `s` seconds after t = 0.
  void WaitUntil(double s) const {
    while (static_cast<double>(std::time(nullptr)) < start_ + s) usleep(100'000);
  }

  json Run(std::vector<std::string> args) {
    std::vector<std::string> argv = {"--sim", scenario_, "--socket", socket_};
    argv.insert(argv.end(), args.begin(), args.end());
    const RunResult r = RunProcess(Gpuwarden(argv), options_);
    json doc = json::parse(r.out, nullptr, /*allow_exceptions=*/false);
    EXPECT_FALSE(doc.is_discarded()) << r.out << r.err << daemon_.Log();
    return doc;
  }

  static const json* Finding(const json& doc, const std::string& code) {
    for (const json& g : doc["gpus"]) {
      for (const json& f : g["findings"]) {
        if (f["code"] == code) return &f;
      }
    }
    return nullptr;
  }

  static std::string EvidenceValue(const json& finding, const std::string& name) {
    for (const json& e : finding["evidence"]) {
      if (e["name"] == name) return e["value"].get<std::string>();
    }
    return "";
  }

  ChildProcess run_;
  double start_ = 0;
};

TEST_F(IdleTimeE2e, APausedRunIsNotIdleAndCleanDoesNotActOnIt) {
  WaitUntil(5);  // Working until t = 3 s (seen by the daemon), paused since.
  // Asked for 30 s of idleness: the window alone (1 s, all at 0 %) cannot
  // say, and the daemon saw it work seconds ago.
  json doc = Run({"why", "--window", "1", "--idle-for", "30s", "--json"});
  EXPECT_EQ(Finding(doc, "IDLE_HOLDER"), nullptr) << doc.dump();
  const json* short_idle = Finding(doc, "HOLDER_IDLE_SHORT");
  ASSERT_NE(short_idle, nullptr) << doc.dump();
  EXPECT_EQ(EvidenceValue(*short_idle, "idle_source"), "process_history");
  double idle_s = -1;
  for (const json& e : (*short_idle)["evidence"]) {
    if (e["name"] == "idle_for") idle_s = e["number"].get<double>();
  }
  EXPECT_GT(idle_s, 0.5);
  EXPECT_LT(idle_s, 20);  // Not its age: it worked until t = 3 s.
  EXPECT_NE(doc["summary"].get<std::string>().find("OK"), std::string::npos) << doc["summary"];

  // clean plans nothing for it, by the same judgement.
  // --no-tree: the test's child shares the test runner's process group.
  json plan =
      Run({"clean", "--dry-run", "--no-tree", "--json", "--window", "1", "--idle-for", "30s"});
  ASSERT_TRUE(plan["plan"]["act"].is_array()) << plan.dump();
  EXPECT_TRUE(plan["plan"]["act"].empty()) << plan.dump();

  // Idle for a few seconds by the daemon's own looks: with --idle-for 1s it is
  // idle, and said so by its source.
  doc = Run({"why", "--now", "--idle-for", "1s", "--json"});
  const json* idle = Finding(doc, "IDLE_HOLDER");
  ASSERT_NE(idle, nullptr) << doc.dump();
  EXPECT_EQ(EvidenceValue(*idle, "idle_source"), "process_history");
  EXPECT_NE(EvidenceValue(*idle, "idle_for").find("gpuwardend's per-process history"),
            std::string::npos);
  plan = Run({"clean", "--dry-run", "--no-tree", "--json", "--now", "--idle-for", "1s"});
  ASSERT_EQ(plan["plan"]["act"].size(), 1u) << plan.dump();
  EXPECT_NE(plan["plan"]["act"][0]["reason"].get<std::string>().find("per-process history"),
            std::string::npos)
      << plan.dump();
}

}  // namespace
}  // namespace gw::test
