// The Slurm test cluster itself (tests/e2e/slurm_cluster.h), started once for
// this binary: three nodes, six fake GPUs, jobs that run and jobs that wait,
// read through gw_slurm's parsers of `sinfo --json` / `squeue --json`.
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/result.h"
#include "e2e/slurm_cluster.h"
#include "slurm/slurm_json.h"

namespace gw::test {
namespace {

[[maybe_unused]] ::testing::Environment* const kSlurm =
    ::testing::AddGlobalTestEnvironment(new SlurmEnvironment());

constexpr double kJobTimeoutS = 60;

class SlurmE2eTest : public ::testing::Test {
 protected:
  // Every test leaves the cluster as it found it: no job, every node idle.
  void TearDown() override {
    if (SlurmCluster* cluster = SlurmEnvironment::Cluster()) {
      std::string error;
      EXPECT_TRUE(cluster->CancelAllAndWait(&error)) << error << "\n" << cluster->LogTails();
    }
  }
};

Result<slurm::SqueueDocument> Squeue(const SlurmCluster& cluster) {
  RunResult r = cluster.Run({"squeue", "--json"});
  if (r.exit_code != 0)
    return MakeError("squeue",
                     "squeue --json exited " + std::to_string(r.exit_code) + ": " + r.err);
  return slurm::ParseSqueueJson(r.out);
}

Result<slurm::SinfoDocument> Sinfo(const SlurmCluster& cluster) {
  RunResult r = cluster.Run({"sinfo", "--json"});
  if (r.exit_code != 0)
    return MakeError("sinfo", "sinfo --json exited " + std::to_string(r.exit_code) + ": " + r.err);
  return slurm::ParseSinfoJson(r.out);
}

// Polls squeue until job `id` satisfies `pred`; the job as last seen, or
// nullopt when it never did (then *seen describes the last look).
std::optional<slurm::Job> WaitForJob(const SlurmCluster& cluster, int64_t id,
                                     const std::function<bool(const slurm::Job&)>& pred,
                                     std::string* seen) {
  std::optional<slurm::Job> found;
  WaitUntil(
      [&] {
        auto doc = Squeue(cluster);
        if (!doc) {
          *seen = doc.error().message;
          return false;
        }
        for (const slurm::Job& j : doc->jobs) {
          if (j.id != id) continue;
          *seen = "job " + std::to_string(id) + " " + j.state.value_or("?") + " reason " +
                  j.reason.value_or("?") + " nodes " + j.nodes.value_or("-");
          if (pred(j)) {
            found = j;
            return true;
          }
          return false;
        }
        *seen = "job " + std::to_string(id) + " not in squeue";
        return false;
      },
      kJobTimeoutS, 0.1);
  return found;
}

bool Running(const slurm::Job& j) { return j.state == "RUNNING"; }

int64_t GpuCount(const std::optional<std::vector<slurm::Gres>>& list) {
  int64_t n = 0;
  for (const auto& g : list.value_or(std::vector<slurm::Gres>{})) {
    if (g.name == "gpu") n += g.count;
  }
  return n;
}

TEST_F(SlurmE2eTest, ClusterHasThreeNodesAndSixGpus) {
  GW_REQUIRE_SLURM_CLUSTER(cluster);
  auto doc = Sinfo(cluster);
  ASSERT_TRUE(doc) << doc.error().message;
  EXPECT_EQ(doc->meta.layout, slurm::JsonLayout::kV0038);
  EXPECT_EQ(doc->meta.major, 22);
  ASSERT_EQ(doc->nodes.size(), 3u);
  int64_t total = 0;
  for (const slurm::Node& n : doc->nodes) {
    EXPECT_EQ(n.state, "IDLE") << n.name;
    EXPECT_TRUE(n.state_flags.empty()) << n.name;
    ASSERT_TRUE(n.gres.has_value()) << n.name;
    ASSERT_EQ(n.gres->size(), 1u) << n.name;
    EXPECT_EQ((*n.gres)[0].type, n.name == "n3" ? "l40s" : "a100") << n.name;
    EXPECT_EQ((*n.gres)[0].count, 2) << n.name;
    EXPECT_EQ(GpuCount(n.gres_used), 0) << n.name;
    total += GpuCount(n.gres);
  }
  EXPECT_EQ(total, 6);
  // The daemons registered the GPUs from the mknod'd devices named in gres.conf.
  RunResult show = cluster.Run({"scontrol", "-d", "show", "node", "n3"});
  ASSERT_EQ(show.exit_code, 0) << show.err;
  EXPECT_NE(show.out.find("Gres=gpu:l40s:2"), std::string::npos) << show.out;
}

TEST_F(SlurmE2eTest, TwoA100JobRunsOnAnA100Node) {
  GW_REQUIRE_SLURM_CLUSTER(cluster);
  std::string error;
  auto id = cluster.Submit({"--job-name=two-a100", "--gres=gpu:a100:2"}, "sleep 30", &error);
  ASSERT_TRUE(id) << error;
  std::string seen;
  auto job = WaitForJob(cluster, *id, Running, &seen);
  ASSERT_TRUE(job) << seen << "\n" << cluster.LogTails();
  ASSERT_TRUE(job->nodes.has_value());
  EXPECT_TRUE(*job->nodes == "n1" || *job->nodes == "n2") << *job->nodes;
  EXPECT_EQ(job->name, "two-a100");
  ASSERT_EQ(job->gres_per_node.size(), 1u);
  EXPECT_EQ(job->gres_per_node[0].type, "a100");
  EXPECT_EQ(job->gres_per_node[0].count, 2);
  ASSERT_EQ(job->gres_detail.size(), 1u);
  ASSERT_EQ(job->gres_detail[0].size(), 1u);
  EXPECT_EQ(job->gres_detail[0][0].count, 2);
  EXPECT_EQ(job->gres_detail[0][0].indexes, "0-1");
  EXPECT_TRUE(job->start_time.has_value());
  // sinfo agrees: both GPUs of that node are in use.
  auto nodes = Sinfo(cluster);
  ASSERT_TRUE(nodes) << nodes.error().message;
  for (const slurm::Node& n : nodes->nodes) {
    EXPECT_EQ(GpuCount(n.gres_used), n.name == *job->nodes ? 2 : 0) << n.name;
  }
}

// Two a100 are free in total, one on each node: a job that needs both on one
// node waits for Resources (Slurm's word for fragmentation).
TEST_F(SlurmE2eTest, FragmentedA100sLeaveATwoGpuJobPendingOnResources) {
  GW_REQUIRE_SLURM_CLUSTER(cluster);
  std::string error;
  std::vector<int64_t> holders;
  for (const char* node : {"n1", "n2"}) {
    auto id = cluster.Submit(
        {"--job-name=hold-one", std::string("--nodelist=") + node, "--gres=gpu:a100:1"}, "sleep 60",
        &error);
    ASSERT_TRUE(id) << error;
    holders.push_back(*id);
  }
  for (int64_t id : holders) {
    std::string seen;
    ASSERT_TRUE(WaitForJob(cluster, id, Running, &seen)) << seen << "\n" << cluster.LogTails();
  }
  auto waiting = cluster.Submit({"--job-name=needs-two", "--nodes=1", "--gres=gpu:a100:2"},
                                "sleep 30", &error);
  ASSERT_TRUE(waiting) << error;
  std::string seen;
  auto job = WaitForJob(
      cluster, *waiting,
      [](const slurm::Job& j) { return j.state == "PENDING" && j.reason == "Resources"; }, &seen);
  ASSERT_TRUE(job) << seen;
  EXPECT_EQ(job->nodes, std::nullopt);
  EXPECT_TRUE(job->gres_detail.empty());
  auto nodes = Sinfo(cluster);
  ASSERT_TRUE(nodes) << nodes.error().message;
  int64_t free_a100 = 0;
  for (const slurm::Node& n : nodes->nodes) {
    if (n.name == "n3") continue;
    EXPECT_EQ(GpuCount(n.gres_used), 1) << n.name;
    free_a100 += GpuCount(n.gres) - GpuCount(n.gres_used);
  }
  EXPECT_EQ(free_a100, 2);
}

// No node has three a100: Slurm refuses such a job at submit instead of
// letting it wait.
TEST_F(SlurmE2eTest, ThreeA100OnOneNodeIsRefusedAtSubmit) {
  GW_REQUIRE_SLURM_CLUSTER(cluster);
  std::string error;
  auto id = cluster.Submit({"--nodes=1", "--gres=gpu:a100:3"}, "sleep 30", &error);
  EXPECT_FALSE(id);
  EXPECT_NE(error.find("Requested node configuration is not available"), std::string::npos)
      << error;
}

}  // namespace
}  // namespace gw::test
