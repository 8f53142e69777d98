#include "render/why_json.h"

#include <string>

#include <gtest/gtest.h>

#include "render/test_diagnoses.h"

namespace gw::render {
namespace {

using nlohmann::json;
using testing::BusyBox;
using testing::BusyDiagnosis;

WhyJsonContext WhyContext() {
  WhyJsonContext c;
  c.samples = 5;
  c.window_s = 4.5;
  c.kernel_log_sources = {"kmsg"};
  return c;
}

TEST(WhyJson, TopLevelShape) {
  Snapshot s = BusyBox();
  s.errors.push_back({"nvml", "gpu_lost", "GPU 3 is lost", 3u, 15});
  const json j = WhyJson(BusyDiagnosis(), s, WhyContext());
  EXPECT_EQ(j["schema"], "gpuwarden.why");
  EXPECT_EQ(j["schema_version"], 1);
  EXPECT_EQ(j["verdict"], "FAULT");
  EXPECT_EQ(j["summary"], BusyDiagnosis().summary);
  EXPECT_EQ(j["window"], (json{{"samples", 5}, {"seconds", 4.5}, {"offline", false}}));
  EXPECT_EQ(j["kernel_log"]["sources"], json::array({"kmsg"}));
  EXPECT_TRUE(j["need"].is_null());
  ASSERT_EQ(j["errors"].size(), 1u);
  EXPECT_EQ(j["errors"][0], (json{{"source", "nvml"},
                                  {"code", "gpu_lost"},
                                  {"message", "GPU 3 is lost"},
                                  {"gpu_index", 3},
                                  {"nvml_return", 15},
                                  {"pids", json::array()}}));
  EXPECT_EQ(j["all_findings_ranked"], json::array({"XID_FATAL", "GPU_LOST", "VRAM_EXHAUSTED",
                                                   "IDLE_HOLDER", "PERSISTENCE_OFF"}));
  // Server-level findings only: those without a GPU.
  ASSERT_EQ(j["findings"].size(), 1u);
  EXPECT_EQ(j["findings"][0]["code"], "PERSISTENCE_OFF");
  ASSERT_EQ(j["users"].size(), 2u);
  EXPECT_EQ(j["users"][1], (json{{"user", "bob"},
                                 {"uid", 1001},
                                 {"gpus", {0}},
                                 {"pids", {1002}},
                                 {"vram_bytes", 10737418240ull},
                                 {"idle_vram_bytes", 10737418240ull},
                                 {"memory_unknown", 0}}));
}

TEST(WhyJson, TrendsWhenTheDaemonsHistoryWasReadElseNullWithTheReason) {
  json j = WhyJson(BusyDiagnosis(), BusyBox(), WhyContext());
  EXPECT_TRUE(j["trends"].is_null());
  EXPECT_TRUE(j["trends_note"].is_null());

  diagnose::Trends t;
  t.as_of_unix_s = 1'800'000'000;
  t.covered_from_unix_s = t.as_of_unix_s - 600;
  t.gpus.push_back({1, diagnose::TrendRun{t.as_of_unix_s - 300, true}, std::nullopt});
  WhyJsonContext c = WhyContext();
  c.trends = &t;
  j = WhyJson(BusyDiagnosis(), BusyBox(), c);
  EXPECT_EQ(j["trends"]["gpus"][0]["idle_held"],
            (json{{"since_unix_s", t.as_of_unix_s - 300}, {"for_s", 300}, {"open_start", true}}));
  EXPECT_TRUE(j["trends"]["queue"].is_null());

  c.trends = nullptr;
  c.trends_note = "gpuwardend's history not read: \xff";
  j = WhyJson(BusyDiagnosis(), BusyBox(), c);
  EXPECT_TRUE(j["trends"].is_null());
  EXPECT_EQ(j["trends_note"], "gpuwardend's history not read: \uFFFD");  // Valid UTF-8.
}

TEST(WhyJson, GpusCarryIdentityVerdictAndTheirFindings) {
  const json j = WhyJson(BusyDiagnosis(), BusyBox(), WhyContext());
  ASSERT_EQ(j["gpus"].size(), 4u);
  const json& g0 = j["gpus"][0];
  EXPECT_EQ(g0["index"], 0);
  EXPECT_EQ(g0["pci_bus_id"], "00000000:19:00.0");
  EXPECT_EQ(g0["name"], "NVIDIA H100 80GB HBM3");
  EXPECT_TRUE(g0["uuid"].is_string());
  EXPECT_EQ(g0["verdict"], "BUSY");
  EXPECT_EQ(g0["reclaimable_bytes"], 10737418240ull);
  ASSERT_EQ(g0["findings"].size(), 2u);
  const json& vram = g0["findings"][0];
  EXPECT_EQ(vram["code"], "VRAM_EXHAUSTED");
  EXPECT_EQ(vram["category"], "shortage");
  EXPECT_EQ(vram["severity"], "warning");
  EXPECT_EQ(vram["implies"], "BUSY");
  EXPECT_EQ(vram["actor"], "user");
  EXPECT_EQ(vram["gpus"], json::array({0}));
  EXPECT_EQ(vram["pids"], json::array());
  EXPECT_EQ(vram["next_steps"][0], "gpuwarden status --gpu 0");
  EXPECT_EQ(vram["evidence"][0]["name"], "used");
  EXPECT_EQ(vram["evidence"][0]["unit"], "bytes");
  EXPECT_EQ(g0["findings"][1]["pids"], json::array({1002}));
  EXPECT_EQ(j["gpus"][3]["verdict"], "FAULT");
  EXPECT_EQ(j["gpus"][3]["findings"][0]["code"], "XID_FATAL");
  EXPECT_TRUE(j["gpus"][1]["findings"].empty());
}

TEST(WhyJson, UnknownIsNull) {
  diagnose::Diagnosis d = BusyDiagnosis();
  d.gpus.push_back({9,
                    diagnose::Verdict::kUnknown,
                    "GPU 9 UNKNOWN — no data",
                    {},
                    0,
                    diagnose::GpuState::kUnknown,
                    std::nullopt,
                    std::nullopt});
  d.users[0].vram_bytes = 0;
  d.users[0].memory_unknown = 1;
  Snapshot s = BusyBox();
  s.time_unix_ms = 0;
  s.host.hostname.reset();
  WhyJsonContext c = WhyContext();
  c.kernel_log_sources.clear();
  const json j = WhyJson(d, s, c);
  const json& g9 = j["gpus"][4];
  EXPECT_TRUE(g9["pci_bus_id"].is_null());
  EXPECT_TRUE(g9["uuid"].is_null());
  EXPECT_TRUE(g9["name"].is_null());
  EXPECT_TRUE(j["users"][0]["vram_bytes"].is_null());
  EXPECT_TRUE(j["time_unix_ms"].is_null());
  EXPECT_TRUE(j["hostname"].is_null());
  EXPECT_EQ(j["kernel_log"]["sources"], json::array());
  EXPECT_EQ(j["kernel_log"]["read"], false);
  // Evidence without a number or unit.
  const json& bus = j["gpus"][3]["findings"][0]["evidence"][1];
  EXPECT_EQ(bus["name"], "bus");
  EXPECT_TRUE(bus["number"].is_null());
  EXPECT_TRUE(bus["unit"].is_null());
}

TEST(WhyJson, NeedIsEchoed) {
  WhyJsonContext c = WhyContext();
  c.need = "2x24G";
  EXPECT_EQ(WhyJson(BusyDiagnosis(), BusyBox(), c)["need"], "2x24G");
}

TEST(WhyJson, InvalidUtf8AndControlsNeverBreakTheDocument) {
  diagnose::Diagnosis d = BusyDiagnosis();
  d.findings[0].message = "bad \xff\xfe bytes \x1b[2J \xc2\x9b \xe2\x80\xae";
  d.summary = "\xc3";
  d.users[0].user = "\x80user";
  WhyJsonContext c = WhyContext();
  c.kernel_log_sources = {"/var/log/\xff"};
  std::string out;
  ASSERT_NO_THROW(out = RenderWhyJson(d, BusyBox(), c, true));
  EXPECT_EQ(out.find('\x1b'), std::string::npos);
  EXPECT_EQ(out.find("\xc2\x9b"), std::string::npos);
  EXPECT_EQ(out.find("\xe2\x80\xae"), std::string::npos);
  EXPECT_NE(out.find("\\u009b"), std::string::npos);
  EXPECT_NE(out.find("\\u202e"), std::string::npos);
  const json back = json::parse(out);
  EXPECT_EQ(back["findings"].size(), 1u);
  EXPECT_EQ(back["gpus"][3]["findings"][0]["message"],
            "bad \xEF\xBF\xBD\xEF\xBF\xBD bytes \x1b[2J \xc2\x9b \xe2\x80\xae");
  EXPECT_EQ(back["summary"], "\xEF\xBF\xBD");
  EXPECT_EQ(out.back(), '}');
  const std::string compact = RenderWhyJson(d, BusyBox(), c, false);
  EXPECT_EQ(compact.find('\n'), std::string::npos);
  EXPECT_EQ(json::parse(compact), back);
}

}  // namespace
}  // namespace gw::render
