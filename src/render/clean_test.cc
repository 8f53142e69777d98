#include "render/clean.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "core/units.h"

namespace gw::render {
namespace {

using nlohmann::json;
act::PlanItem Item(pid_t pid, act::Reason reason, std::string detail) {
  act::PlanItem i;
  i.pid = pid;
  i.start_ticks = 5000;
  i.uid = 1001;
  i.user = "alice";
  i.comm = "python";
  i.cmdline = {"python", "train.py", "--name", "evil\x1b[2J\xff"};
  i.gpus = {0, 1};
  i.vram_bytes = 20 * kGiB;
  i.sm_pct = 0;
  i.age_s = 7200;
  i.state = ProcessState::kSleeping;
  i.reason = reason;
  i.detail = std::move(detail);
  return i;
}

act::Plan SamplePlan() {
  act::Plan plan;
  plan.act = {Item(4242, act::Reason::kIdleHolder, "holds GPU memory and did no GPU work")};
  act::PlanItem bob = Item(5000, act::Reason::kNotYours, "owned by bob: ask bob");
  bob.user = "bob";
  bob.vram_bytes.reset();
  plan.skip = {bob};
  plan.notes = {"add --tree to stop the whole run"};
  return plan;
}

TEST(CleanText, PlanShowsBothListsWithReasonsAndSafeText) {
  const std::string text = RenderPlanText(SamplePlan(), CleanRenderOptions{});
  EXPECT_NE(text.find("Will stop 1 process (SIGTERM, then SIGKILL after 10.0 s):"),
            std::string::npos);
  EXPECT_NE(text.find("4242"), std::string::npos);
  EXPECT_NE(text.find(FormatBytes(20 * kGiB)), std::string::npos);
  EXPECT_NE(text.find("0,1"), std::string::npos);
  EXPECT_NE(text.find("2h"), std::string::npos);
  EXPECT_NE(text.find("idle holder: holds GPU memory"), std::string::npos);
  EXPECT_NE(text.find("Will not touch:"), std::string::npos);
  EXPECT_NE(text.find("not yours: owned by bob"), std::string::npos);
  EXPECT_NE(text.find("Note: add --tree"), std::string::npos);
  EXPECT_EQ(text.find('\x1b'), std::string::npos);  // Hostile argv is sanitised.
  EXPECT_NE(text.find("\\x1b"), std::string::npos);
}

TEST(CleanText, EmptyPlanSaysSo) {
  act::Plan plan;
  EXPECT_NE(RenderPlanText(plan, {}).find("Nothing to clean"), std::string::npos);
  plan.mode = act::PlanMode::kKill;
  EXPECT_EQ(RenderPlanText(plan, {}), "Nothing to stop.\n");
}

TEST(CleanText, ResultLines) {
  act::TargetResult r;
  r.item = Item(4242, act::Reason::kIdleHolder, "");
  r.outcome = act::Outcome::kExited;
  r.signals = {SIGTERM};
  r.seconds = 0.4;
  EXPECT_EQ(RenderResultLine(r), "PID 4242 (python): exited 0.4 s after SIGTERM");
  r.outcome = act::Outcome::kKilled;
  r.signals = {SIGINT, SIGKILL};
  r.seconds = 10.02;
  EXPECT_EQ(RenderResultLine(r),
            "PID 4242 (python): ignored SIGINT; killed with SIGKILL, gone 10.0 s after the first "
            "signal");
  r.outcome = act::Outcome::kReused;
  r.detail = "the PID now belongs to another process, started later";
  EXPECT_EQ(RenderResultLine(r),
            "PID 4242 (python): not signalled: the PID now belongs to another process, started "
            "later");
}

TEST(CleanText, ReleaseFreedAndStillHeld) {
  act::ReleaseReport rel;
  act::GpuRelease freed;
  freed.index = 0;
  freed.used_before_bytes = 70 * kGiB;
  freed.used_after_bytes = 50 * kGiB;
  freed.freed_bytes = 20 * kGiB;
  act::GpuRelease held;
  held.index = 1;
  held.used_before_bytes = 18 * kGiB;
  held.used_after_bytes = 18 * kGiB;
  held.freed_bytes = 0;
  held.still_held_bytes = 18 * kGiB;
  held.released = false;
  rel.gpus = {freed, held};
  const std::string text = RenderReleaseText(rel, 5.0);
  EXPECT_NE(text.find("GPU 0: " + FormatBytes(20 * kGiB) + " freed (" + FormatBytes(70 * kGiB) +
                      " → " + FormatBytes(50 * kGiB) + " used)"),
            std::string::npos);
  EXPECT_NE(text.find("GPU 1: the processes ended, but " + FormatBytes(18 * kGiB) +
                      " is still held after 5.0 s"),
            std::string::npos);
  EXPECT_NE(text.find("reset GPU 1"), std::string::npos);
  EXPECT_NE(text.find("gpuwarden never does"), std::string::npos);
}

TEST(CleanJson, Document) {
  act::Plan plan = SamplePlan();
  act::ExecuteReport report;
  act::TargetResult r;
  r.item = plan.act[0];
  r.outcome = act::Outcome::kKilled;
  r.signals = {SIGTERM, SIGKILL};
  r.seconds = 10.1;
  report.results = {r};
  act::ReleaseReport rel;
  act::GpuRelease g;
  g.index = 0;
  g.used_before_bytes = 20 * kGiB;
  g.used_after_bytes = 0;
  g.expected_bytes = 20 * kGiB;
  g.freed_bytes = 20 * kGiB;
  rel.gpus = {g};
  CleanDocument doc;
  doc.command = "clean";
  doc.confirmed = true;
  doc.plan = &plan;
  doc.report = &report;
  doc.release = &rel;
  doc.audit_log_path = "/tmp/a.log";
  doc.audit_errors = {"audit log /tmp/a.log: disk full"};
  const json j = json::parse(RenderCleanJson(doc));
  EXPECT_EQ(j["schema"], "gpuwarden.clean");
  EXPECT_EQ(j["schema_version"], 1);
  EXPECT_EQ(j["command"], "clean");
  EXPECT_EQ(j["confirmed"], true);
  EXPECT_EQ(j["signal"], "SIGTERM");
  const json& item = j["plan"]["act"][0];
  EXPECT_EQ(item["pid"], 4242);
  EXPECT_EQ(item["start_ticks"], 5000);
  EXPECT_EQ(item["gpus"], json::array({0, 1}));
  EXPECT_EQ(item["state"], "sleeping");
  EXPECT_EQ(item["role"], "holder");
  EXPECT_EQ(item["reason_code"], "idle_holder");
  EXPECT_TRUE(item["because_of"].is_null());
  EXPECT_EQ(j["plan"]["skip"][0]["reason_code"], "not_yours");
  EXPECT_TRUE(j["plan"]["skip"][0]["vram_bytes"].is_null());
  EXPECT_EQ(j["results"][0]["outcome"], "killed");
  EXPECT_EQ(j["results"][0]["signals"], json::array({"SIGTERM", "SIGKILL"}));
  EXPECT_EQ(j["gpus"][0]["freed_bytes"], 20 * kGiB);
  EXPECT_EQ(j["gpus"][0]["released"], true);
  EXPECT_EQ(j["audit_log"]["path"], "/tmp/a.log");
  EXPECT_EQ(j["audit_log"]["errors"].size(), 1u);
  // Nothing done: empty results and gpus, not missing.
  CleanDocument none;
  none.command = "kill";
  none.plan = &plan;
  const json k = json::parse(RenderCleanJson(none));
  EXPECT_TRUE(k["results"].empty());
  EXPECT_TRUE(k["gpus"].empty());
  EXPECT_EQ(k["confirmed"], false);
}

}  // namespace
}  // namespace gw::render
