#include "web/web_api.h"

#include <gtest/gtest.h>

#include <string>

#include <nlohmann/json.hpp>

#include "render/status_json.h"
#include "render/test_diagnoses.h"
#include "render/test_snapshots.h"

namespace gw::web {
namespace {

using nlohmann::json;

TEST(StatusApi, HoldsTheCliDocumentsUnchanged) {
  const Snapshot s = render::testing::BusyBox();
  const diagnose::Diagnosis d = render::testing::BusyDiagnosis();
  render::WhyJsonContext ctx;
  ctx.samples = 8;
  const json doc = json::parse(StatusApiText(&s, &d, ctx, PageFacts{1000, true, "1.2.3"}));
  EXPECT_EQ(doc["schema"], "gpuwarden.web.status");
  EXPECT_EQ(doc["schema_version"], 1);
  EXPECT_EQ(doc["sampling_ms"], 1000);
  EXPECT_EQ(doc["queue"], true);
  EXPECT_EQ(doc["version"], "1.2.3");
  // One home for each fact: the status and why documents as the CLI writes them.
  EXPECT_EQ(doc["status"], render::StatusJson(s));
  EXPECT_EQ(doc["why"], render::WhyJson(d, s, ctx));
  EXPECT_EQ(doc["why"]["verdict"], "FAULT");
}

TEST(StatusApi, NullBeforeTheFirstLook) {
  const json doc = json::parse(StatusApiText(nullptr, nullptr, {}, PageFacts{}));
  EXPECT_TRUE(doc["status"].is_null());
  EXPECT_TRUE(doc["why"].is_null());
  EXPECT_EQ(doc["queue"], false);
}

TEST(StatusApi, HostileTextStaysDataAndValidUtf8) {
  const Snapshot s = render::testing::Hostile();
  const diagnose::Diagnosis d = render::testing::BusyDiagnosis();
  const std::string text = StatusApiText(&s, &d, {}, PageFacts{});
  // Parses (valid UTF-8), and no raw control or bidi character reaches the page.
  const json doc = json::parse(text);
  EXPECT_EQ(text.find('\x1b'), std::string::npos);
  EXPECT_EQ(text.find("\xE2\x80\xAE"), std::string::npos);
  EXPECT_NE(text.find("\\u202e"), std::string::npos);
  bool found = false;
  for (const json& g : doc["status"]["gpus"]) {
    for (const json& p : g["processes"]) {
      if (p["pid"] == 1001) {
        found = true;
        EXPECT_EQ(p["argv"][3], "rtl\u202egpj.exe");  // The same string value, escaped.
      }
    }
  }
  EXPECT_TRUE(found);
}

std::map<std::string, std::string> Params(
    std::initializer_list<std::pair<const std::string, std::string>> p) {
  return p;
}

TEST(HistoryQuery, DefaultsToTheLastHourInTenSecondSteps) {
  Result<HistoryQuery> q = ParseHistoryQuery({}, 100000);
  ASSERT_TRUE(q.ok()) << q.error().message;
  EXPECT_EQ(q->from_s, 100000 - 3600);
  EXPECT_EQ(q->to_s, 100000);
  EXPECT_EQ(q->step_s, 10);  // 3600 s / 360 points.
  EXPECT_FALSE(q->users);
}

TEST(HistoryQuery, PansAndRoundsTheStep) {
  Result<HistoryQuery> q = ParseHistoryQuery(
      Params({{"since_s", "1209600"}, {"until_s", "604800"}, {"users", "1"}}), 2000000);
  ASSERT_TRUE(q.ok()) << q.error().message;
  EXPECT_EQ(q->from_s, 2000000 - 1209600);
  EXPECT_EQ(q->to_s, 2000000 - 604800);
  EXPECT_EQ(q->step_s, 1800);  // 7 days / 360 = 1680 s, rounded up to 30 min.
  EXPECT_TRUE(q->users);
  q = ParseHistoryQuery(Params({{"since_s", "60"}, {"points", "2000"}}), 100);
  ASSERT_TRUE(q.ok());
  EXPECT_EQ(q->step_s, 1);
}

TEST(HistoryQuery, RefusesNamingTheParameter) {
  for (auto [name, value] :
       std::vector<std::pair<std::string, std::string>>{{"since_s", "0"},
                                                        {"since_s", "-5"},
                                                        {"since_s", "1e3"},
                                                        {"since_s", "99999999"},
                                                        {"until_s", "3600"},
                                                        {"points", "5"},
                                                        {"points", "x"},
                                                        {"users", "yes"}}) {
    Result<HistoryQuery> q = ParseHistoryQuery({{name, value}}, 100000);
    ASSERT_FALSE(q.ok()) << name << "=" << value;
    EXPECT_EQ(q.error().code, "usage");
    EXPECT_EQ(q.error().message.rfind(name + ":", 0), 0u) << q.error().message;
  }
}

fleet::HistoryPoint Point(int64_t t, double util, int step = 1) {
  fleet::HistoryPoint p;
  p.time_s = t;
  p.step_s = step;
  fleet::GpuPoint g;
  g.index = 0;
  g.util_pct = util;
  g.mem_used_bytes = 10;
  g.mem_total_bytes = 100;
  p.gpus.push_back(g);
  p.users.push_back({"ann", 1, 0, 10, 0});
  return p;
}

TEST(HistoryWindow, AveragesEachStepAndDropsWhatIsOutside) {
  HistoryQuery q{1000, 1019, 10, false};
  HistoryWindow w(q);
  w.Add(Point(999, 50));  // Before the window.
  for (int64_t t = 1000; t < 1020; ++t) w.Add(Point(t, t < 1010 ? 20 : 60));
  w.Add(Point(1020, 90));  // After it.
  const json doc = json::parse(w.Finish());
  EXPECT_EQ(doc["schema"], "gpuwarden.web.history");
  EXPECT_EQ(doc["step_s"], 10);
  EXPECT_EQ(doc["from_unix_s"], 1000);
  EXPECT_EQ(doc["to_unix_s"], 1019);
  ASSERT_EQ(doc["points"].size(), 2u);
  EXPECT_EQ(doc["points"][0]["time_unix_s"], 1000);
  EXPECT_EQ(doc["points"][0]["step_s"], 10);
  EXPECT_DOUBLE_EQ(doc["points"][0]["gpus"][0]["util_pct"].get<double>(), 20);
  EXPECT_DOUBLE_EQ(doc["points"][1]["gpus"][0]["util_pct"].get<double>(), 60);
  EXPECT_TRUE(doc["points"][0]["users"].empty());  // Asked without users.
}

TEST(HistoryWindow, KeepsACoarserTiersPointsWhole) {
  HistoryWindow w(HistoryQuery{0, 600, 10, true});
  w.Add(Point(0, 10, 60));
  w.Add(Point(60, 30, 60));
  const json doc = json::parse(w.Finish());
  ASSERT_EQ(doc["points"].size(), 2u);
  EXPECT_EQ(doc["points"][1]["step_s"], 60);
  EXPECT_EQ(doc["points"][1]["users"].size(), 1u);
}

TEST(HistoryWindow, AfterGivesOnlyTheNewStepsInTheWindowsStep) {
  Result<HistoryQuery> q =
      ParseHistoryQuery(Params({{"since_s", "3600"}, {"after_unix_s", "3580"}}), 3600);
  ASSERT_TRUE(q.ok()) << q.error().message;
  EXPECT_EQ(q->step_s, 10);
  HistoryWindow w(*q);
  for (int64_t t = 0; t < 3600; ++t) w.Add(Point(t, 50));
  const json doc = json::parse(w.Finish());
  ASSERT_EQ(doc["points"].size(), 2u);  // 3580 and 3590; 3570 started before.
  EXPECT_EQ(doc["points"][0]["time_unix_s"], 3580);
  EXPECT_EQ(doc["points"][1]["time_unix_s"], 3590);
  EXPECT_EQ(doc["from_unix_s"], 0);
  EXPECT_FALSE(ParseHistoryQuery(Params({{"after_unix_s", "-1"}}), 3600).ok());
}

TEST(HistoryWindow, EmptyIsAnEmptyList) {
  const json doc = json::parse(HistoryWindow(HistoryQuery{0, 10, 1, false}).Finish());
  EXPECT_TRUE(doc["points"].is_array());
  EXPECT_TRUE(doc["points"].empty());
}

}  // namespace
}  // namespace gw::web
