// Issue 12, classes 9, 10 and 11 end to end: the real gpuwarden against the
// simulator and real files. What could not be read is never healthy; the hung
// GPU is the one blamed; an unreadable kernel log is bad input, not "no
// events"; the window's wait is explained on a terminal and nowhere else.
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "e2e/e2e_util.h"
#include "e2e/pty_process.h"
#include "e2e/run_process.h"

namespace gw::test {
namespace {

using nlohmann::json;

json Parse(const RunResult& r) {
  json j = json::parse(r.out, nullptr, false);
  EXPECT_FALSE(j.is_discarded()) << r.out << r.err;
  return j;
}

// handle-errors.json without GPU 2's power fault: the only problem left is
// GPU 1, which this user may not open.
std::string OnlyNoPermission(const TempDir& dir) {
  json s = json::parse(std::ifstream(ScenarioPath("handle-errors.json")));
  s["gpus"][2].erase("handle_error");
  return dir.Write("no-permission.json", s.dump());
}

// --- Class 9: health that passes what it could not read ----------------------

TEST(HealthUnreadE2e, AGpuThatCannotBeOpenedIsUnknownNotHealthy) {
  TempDir dir;
  const std::string scenario = OnlyNoPermission(dir);
  RunResult text = RunProcess(Gpuwarden({"--sim", scenario, "health", "--now"}), SimOptions());
  EXPECT_EQ(text.exit_code, 14) << text.out << text.err;
  EXPECT_NE(text.out.find("GPU 1 "), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("UNKNOWN"), std::string::npos) << text.out;

  RunResult j =
      RunProcess(Gpuwarden({"--sim", scenario, "health", "--now", "--json"}), SimOptions());
  EXPECT_EQ(j.exit_code, 14) << j.err;
  const json out = Parse(j);
  EXPECT_EQ(out["health"], "unknown");
  EXPECT_EQ(out["gpus"][1]["health"], "unknown");
  EXPECT_EQ(out["gpus"][1]["unread"], true);
  EXPECT_EQ(out["unread_gpus"], json::array({1}));
  EXPECT_EQ(out["gpus"][0]["health"], "healthy");
}

TEST(HealthUnreadE2e, ShippedHandleErrorsIsFaultAndListsTheUnreadGpus) {
  RunResult r = RunProcess(
      Gpuwarden({"--sim", ScenarioPath("handle-errors.json"), "health", "--now", "--json"}),
      SimOptions());
  EXPECT_GE(r.exit_code, 12) << r.out << r.err;
  EXPECT_LE(r.exit_code, 14);
  EXPECT_EQ(r.exit_code, 13);  // GPU 2 lacks power: worse than unknown.
  const json out = Parse(r);
  EXPECT_EQ(out["health"], "failed");
  EXPECT_EQ(out["gpus"][1]["health"], "unknown");
  EXPECT_EQ(out["gpus"][2]["health"], "failed");
  EXPECT_EQ(out["unread_gpus"], json::array({1, 2}));
  RunResult text = RunProcess(
      Gpuwarden({"--sim", ScenarioPath("handle-errors.json"), "health", "--now"}), SimOptions());
  EXPECT_NE(text.out.find("GPU 1 N/A UNKNOWN"), std::string::npos) << text.out;
}

// The hung GPU is GPU 2 (index 2 in the scenario), not the one after it; no
// /proc timeout is invented because NVML used the deadline. GPU 3, after the
// hung one, is read on a thread of its own: judged, not left unknown.
TEST(HealthUnreadE2e, DriverHangBlamesGpu2Only) {
  RunResult r = RunProcess(Gpuwarden({"--sim", ScenarioPath("driver-hang.json"), "--timeout", "1",
                                      "why", "--window", "1", "--json"}),
                           SimOptions());
  EXPECT_EQ(r.exit_code, 13) << r.out << r.err;
  const json out = Parse(r);
  ASSERT_EQ(out["gpus"].size(), 4u) << r.out;
  std::set<unsigned> timed_out;
  std::vector<json> all = out["findings"].get<std::vector<json>>();
  for (const json& g : out["gpus"]) {
    for (const json& f : g["findings"]) all.push_back(f);
  }
  for (const json& f : all) {
    EXPECT_NE(f["code"], "PROC_SCAN_TIMEOUT") << f.dump();
    if (f["code"] == "DRIVER_TIMEOUT") {
      for (const json& gpu : f["gpus"]) timed_out.insert(gpu.get<unsigned>());
    }
  }
  EXPECT_EQ(timed_out, std::set<unsigned>{2}) << r.out;
  EXPECT_EQ(out["gpus"][2]["verdict"], "FAULT");
  EXPECT_EQ(out["gpus"][3]["verdict"], "OK") << out["gpus"][3].dump();
  EXPECT_EQ(out["summary"].get<std::string>().find("GPU 3"), std::string::npos) << out["summary"];

  RunResult health = RunProcess(Gpuwarden({"--sim", ScenarioPath("driver-hang.json"), "--timeout",
                                           "1", "health", "--now", "--json"}),
                                SimOptions());
  EXPECT_EQ(health.exit_code, 13) << health.out << health.err;
  const json h = Parse(health);
  EXPECT_EQ(h["gpus"][2]["health"], "failed");
  EXPECT_EQ(h["gpus"][3]["health"], "healthy");
  EXPECT_EQ(h["gpus"][1]["health"], "healthy");
}

// --- Class 10: unreadable input read as all-clear ----------------------------

std::string Noise(size_t n) {
  std::string out(n, '\0');
  uint32_t x = 88172645u;
  for (char& c : out) {
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    c = static_cast<char>(x & 0xff);
  }
  return out;
}

// `text` compressed by gzip(1).
std::string Gzip(const TempDir& dir, const std::string& text) {
  const std::string plain = dir.Write("plain.txt", text);
  RunResult r = RunProcess({"/bin/sh", "-c", "gzip -c '" + plain + "'"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return r.out;
}

void ExpectBadInput(const RunResult& r, const std::string& path, const std::string& problem) {
  EXPECT_EQ(r.exit_code, 3) << r.out << r.err;
  EXPECT_NE(r.err.find(path), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(problem), std::string::npos) << r.err;
  EXPECT_EQ(r.out.find("no NVRM events"), std::string::npos) << r.out;
}

TEST(KernelLogInputE2e, BinaryOrTruncatedFilesAreBadInputEverywhere) {
  TempDir dir;
  const std::string binary = dir.Write("dmesg.bin", Noise(20000));
  std::string log;
  for (int i = 0; i < 5000; ++i) {
    log +=
        "[ 100.500000] NVRM: Xid (PCI:0000:19:00): 79, pid=1234, name=python, GPU has fallen "
        "off the bus.\n";
  }
  const std::string gz = Gzip(dir, log);
  const std::string truncated = dir.Write("kern.log.2.gz", gz.substr(0, gz.size() / 2));

  ExpectBadInput(RunProcess(Gpuwarden({"events", "--kernel-log", binary}), SimOptions()), binary,
                 "binary");
  ExpectBadInput(RunProcess(Gpuwarden({"events", "--kernel-log", binary, "--json"}), SimOptions()),
                 binary, "binary");
  ExpectBadInput(RunProcess(Gpuwarden({"events", "--kernel-log", truncated}), SimOptions()),
                 truncated, "ends early");
  ExpectBadInput(RunProcess(Gpuwarden({"--sim", ScenarioPath("healthy-idle.json"), "why", "--now",
                                       "--kernel-log", binary}),
                            SimOptions()),
                 binary, "binary");
  ExpectBadInput(RunProcess(Gpuwarden({"--sim", ScenarioPath("healthy-idle.json"), "health",
                                       "--now", "--kernel-log", truncated}),
                            SimOptions()),
                 truncated, "ends early");

  // The same log, whole, still reads.
  const std::string whole = dir.Write("kern.log.1.gz", gz);
  RunResult ok = RunProcess(Gpuwarden({"events", "--kernel-log", whole}), SimOptions());
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
  EXPECT_NE(ok.out.find("79"), std::string::npos) << ok.out;
}

// --- Class 11: silent waiting --------------------------------------------------

TEST(SamplingNoticeE2e, OnATerminalTheWaitIsExplainedThenCleared) {
  PtyProcess why(Gpuwarden({"--sim", ScenarioPath("healthy-idle.json"), "why", "--window", "1"}),
                 SimOptions());
  ASSERT_TRUE(why.started()) << why.error();
  ASSERT_TRUE(why.WaitForExit(30));
  EXPECT_EQ(why.exit_code(), 0) << why.output();
  const std::string& out = why.output();
  const size_t notice = out.find("GPUs for 1 s… (--now for one look)");
  ASSERT_NE(notice, std::string::npos) << out;
  EXPECT_NE(out.find("sampling "), std::string::npos) << out;
  // Cleared before the answer: the verdict comes after the last erase.
  const size_t erased = out.rfind("\r\x1b[K");
  ASSERT_NE(erased, std::string::npos) << out;
  EXPECT_GT(erased, notice);
  const size_t answer = out.find("OK");
  EXPECT_GT(answer, erased) << out;
}

TEST(SamplingNoticeE2e, NeverInAPipeOrInJson) {
  RunResult piped =
      RunProcess(Gpuwarden({"--sim", ScenarioPath("healthy-idle.json"), "why", "--window", "1"}),
                 SimOptions());
  EXPECT_EQ(piped.exit_code, 0) << piped.err;
  EXPECT_EQ(piped.err.find("sampling"), std::string::npos) << piped.err;
  EXPECT_EQ((piped.out + piped.err).find('\x1b'), std::string::npos);

  PtyProcess json_run(
      Gpuwarden({"--sim", ScenarioPath("healthy-idle.json"), "why", "--window", "1", "--json"}),
      SimOptions());
  ASSERT_TRUE(json_run.started()) << json_run.error();
  ASSERT_TRUE(json_run.WaitForExit(30));
  EXPECT_EQ(json_run.output().find("sampling"), std::string::npos) << json_run.output();
}

}  // namespace
}  // namespace gw::test
