#include "render/capacity_text.h"

#include <gtest/gtest.h>

namespace gw::render {
namespace {

capacity::CapacityReport SlurmReport() {
  capacity::CapacityReport r;
  r.source = "slurm";
  r.from_s = 0;
  r.to_s = 7200;
  r.observed_hours = 2;
  r.capacity_gpus = 6;
  r.capacity_gpu_hours = 12;
  r.held_gpu_hours = 3;
  r.unheld_gpu_hours = 9;
  r.waits = capacity::WaitStats{};
  r.waits->started = 2;
  r.waits->p50_s = 30;
  r.waits->p90_s = 90;
  r.hours[0].observed_s = 3600;
  r.hours[0].held_fraction = 0.5;
  r.peak_hours = {};
  r.power.applies = true;
  r.power.suspend_time_s = 900;
  r.power.median_idle_gap_s = 910;
  r.power.idle_gaps = 3;
  r.power.exclude_nodes = {"n1", "n2"};
  r.power.base_load_gpus = 3;
  r.recommendations.push_back({"add_gpus", "add 1 GPU (a100): \x1b[31mred", {{"gpus", 1}}, {}});
  return r;
}

TEST(CapacityTextTest, UnknownIsNullAndPowerSavingIsProposed) {
  const nlohmann::json j = CapacityJson(SlurmReport());
  EXPECT_EQ(j["schema"], "gpuwarden.capacity");
  EXPECT_TRUE(j["idle_held_gpu_hours"].is_null());
  EXPECT_TRUE(j["memory_bound_gpu_hours"].is_null());
  EXPECT_EQ(j["waits"]["p90_s"], 90);
  EXPECT_TRUE(j["waits"]["max_s"].is_null());
  EXPECT_EQ(j["hours"].size(), 24u);
  EXPECT_EQ(j["hours"][0]["held_share"], 0.5);
  EXPECT_TRUE(j["hours"][1]["held_share"].is_null());
  EXPECT_EQ(j["power_saving"]["suspend_time_s"], 900);
  EXPECT_EQ(j["power_saving"]["suspend_exc_nodes"], nlohmann::json({"n1", "n2"}));
  EXPECT_EQ(j["recommendations"][0]["figures"]["gpus"], 1);
}

TEST(CapacityTextTest, TextSaysWhatIsUnknownAndProposesSlurmConfLines) {
  const std::string text = RenderCapacityText(SlurmReport());
  EXPECT_NE(text.find("held idle     unknown (Slurm's accounting does not record GPU utilisation)"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("p50 30s  p90 1m  p99 N/A"), std::string::npos) << text;
  EXPECT_NE(text.find("SuspendTime=900"), std::string::npos) << text;
  EXPECT_NE(text.find("SuspendExcNodes=n1,n2"), std::string::npos) << text;
  EXPECT_NE(text.find("ResumeProgram=/etc/gpuwarden/slurm/resume"), std::string::npos) << text;
  EXPECT_EQ(text.find('\x1b'), std::string::npos) << "recommendation text is sanitised";
}

}  // namespace
}  // namespace gw::render
