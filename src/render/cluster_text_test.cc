// The cluster view's renderers: unknown stays unknown, text from Slurm is
// sanitised, the JSON keeps raw text and nulls.
#include "render/cluster_text.h"

#include <gtest/gtest.h>

#include <string>

namespace gw::render {
namespace {

using slurm::ClusterView;
using slurm::GpuCounts;
using slurm::NodeAvailability;
using slurm::NodeView;

ClusterView SmallView() {
  ClusterView v;
  v.meta.release = "22.05.8";
  NodeView known;
  known.name = "n1";
  known.state = "mixed";
  known.availability = NodeAvailability::kTakesWork;
  known.gpus = std::vector<GpuCounts>{{"a100", 2, 1, 1, 0}};
  slurm::GpuHolder h;
  h.job_id = 42;
  h.user = "alice";
  h.job_name = "evil\x1b]0;title\x07";
  h.type = "a100";
  h.count = 1;
  h.indexes = "1";
  h.since_unix_s = 1000;
  known.holders = {h};
  NodeView unknown;
  unknown.name = "n2";
  unknown.state = "idle";
  unknown.availability = NodeAvailability::kTakesWork;
  NodeView down;
  down.name = "n3";
  down.state = "down+not_responding";
  down.availability = NodeAvailability::kDown;
  down.reason = "Not responding";
  down.gpus = std::vector<GpuCounts>{{"", 4, 0, 0, 4}};
  v.nodes = {known, unknown, down};
  v.gpu_totals = {{"a100", 2, 1, 1, 0}, {"", 4, 0, 0, 4}};
  slurm::PendingJobView p;
  p.job_id = 43;
  p.user = "bob";
  p.reason = "Priority";
  p.wants = "4 gpu in all";
  p.expected_start_unix_s = 1000 + 7200;
  v.pending = {p};
  return v;
}

TEST(ClusterText, CountsHoldersReasonsAndWaitingJobs) {
  const std::string text = RenderClusterText(SmallView(), 1000 + 180);
  EXPECT_NE(
      text.find("Slurm 22.05.8 — 3 nodes; GPUs: 6 in all, 1 allocated, 1 free, 4 unavailable"),
      std::string::npos)
      << text;
  EXPECT_NE(text.find("job 42 alice \"evil\\x1b]0;title\\x07\" 1×a100 [1] for 3m"),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find('\x1b'), std::string::npos);
  EXPECT_EQ(text.find('\x07'), std::string::npos);
  EXPECT_NE(text.find("— (down)"), std::string::npos) << text;
  EXPECT_NE(text.find("n3 down: Not responding"), std::string::npos) << text;
  EXPECT_NE(text.find("Slurm expects it to start in 1h 57m"), std::string::npos) << text;
}

TEST(ClusterText, UnknownGresIsAQuestionMarkNotZero) {
  const std::string text = RenderClusterText(SmallView(), 1000);
  std::string n2_line;
  for (size_t at = 0; at < text.size();) {
    const size_t end = text.find('\n', at);
    const std::string line = text.substr(at, end - at);
    if (line.rfind("n2 ", 0) == 0) n2_line = line;
    at = end == std::string::npos ? text.size() : end + 1;
  }
  ASSERT_FALSE(n2_line.empty()) << text;
  EXPECT_NE(n2_line.find('?'), std::string::npos) << n2_line;
  EXPECT_EQ(n2_line.find('0'), std::string::npos) << n2_line;
}

TEST(ClusterJson, RawTextAndNulls) {
  const nlohmann::json doc = ClusterJson(SmallView());
  EXPECT_EQ(doc["schema"], kClusterSchemaName);
  EXPECT_EQ(doc["nodes"][0]["holders"][0]["job_name"], "evil\x1b]0;title\x07");
  EXPECT_TRUE(doc["nodes"][1]["gpus"].is_null());
  EXPECT_TRUE(doc["nodes"][2]["gpus"][0]["type"].is_null());
  EXPECT_EQ(doc["nodes"][2]["availability"], "down");
  EXPECT_EQ(doc["pending"][0]["expected_start_unix_s"], 8200);
  EXPECT_TRUE(doc["pending"][0]["description"].is_null());
}

}  // namespace
}  // namespace gw::render
