// BuildClusterView on captured 22.05 documents and on hand-made ones for the
// states a capture did not hold.
#include "slurm/cluster_view.h"

#include <gtest/gtest.h>

#include <string>

#include "slurm/slurm_test_util.h"

namespace gw::slurm {
namespace {

ClusterView ViewOf(const std::string& sinfo_file, const std::string& squeue_file) {
  Result<SinfoDocument> sinfo = ParseSinfoJson(ReadTestdata(sinfo_file));
  Result<SqueueDocument> squeue = ParseSqueueJson(ReadTestdata(squeue_file));
  EXPECT_TRUE(sinfo.ok() && squeue.ok());
  if (!sinfo.ok() || !squeue.ok()) return {};
  return BuildClusterView(*sinfo, *squeue);
}

const NodeView& NodeNamed(const ClusterView& v, const std::string& name) {
  for (const NodeView& n : v.nodes) {
    if (n.name == name) return n;
  }
  ADD_FAILURE() << "no node " << name;
  static const NodeView kNone;
  return kNone;
}

const GpuCounts* TypeIn(const std::vector<GpuCounts>& counts, const std::string& type) {
  for (const GpuCounts& c : counts) {
    if (c.type == type) return &c;
  }
  return nullptr;
}

TEST(ClusterView, FragmentationCaptureCountsAndHolders) {
  const ClusterView v =
      ViewOf("22.05-sinfo-pending-resources.json", "22.05-squeue-pending-resources.json");
  ASSERT_EQ(v.nodes.size(), 3u);
  const NodeView& n1 = NodeNamed(v, "n1");
  EXPECT_EQ(n1.availability, NodeAvailability::kTakesWork);
  ASSERT_TRUE(n1.gpus.has_value());
  ASSERT_EQ(n1.gpus->size(), 1u);
  EXPECT_EQ((*n1.gpus)[0].type, "a100");
  EXPECT_EQ((*n1.gpus)[0].total, 2);
  EXPECT_EQ((*n1.gpus)[0].allocated, 2);
  EXPECT_EQ((*n1.gpus)[0].free, 0);
  ASSERT_EQ(n1.holders.size(), 1u);
  EXPECT_EQ(n1.holders[0].job_id, 5);
  EXPECT_EQ(n1.holders[0].user, "root");
  EXPECT_EQ(n1.holders[0].job_name, "train-a100");
  EXPECT_EQ(n1.holders[0].count, 2);
  EXPECT_EQ(n1.holders[0].indexes, "0-1");
  EXPECT_TRUE(n1.holders[0].since_unix_s.has_value());

  const NodeView& n2 = NodeNamed(v, "n2");
  ASSERT_TRUE(n2.gpus.has_value());
  EXPECT_EQ((*n2.gpus)[0].allocated, 1);
  EXPECT_EQ((*n2.gpus)[0].free, 1);
  ASSERT_EQ(n2.holders.size(), 1u);
  EXPECT_EQ(n2.holders[0].job_id, 6);

  const GpuCounts* a100 = TypeIn(v.gpu_totals, "a100");
  ASSERT_NE(a100, nullptr);
  EXPECT_EQ(a100->total, 4);
  EXPECT_EQ(a100->allocated, 3);
  EXPECT_EQ(a100->free, 1);
  const GpuCounts* l40s = TypeIn(v.gpu_totals, "l40s");
  ASSERT_NE(l40s, nullptr);
  EXPECT_EQ(l40s->free, 2);

  // Finished jobs are neither holders nor waiting.
  ASSERT_EQ(v.pending.size(), 1u);
  EXPECT_EQ(v.pending[0].job_id, 7);
  EXPECT_EQ(v.pending[0].reason, "Resources");
  EXPECT_EQ(v.pending[0].wants, "2 gpu:a100 per node");
}

TEST(ClusterView, ADrainedNodesIdleGpusAreUnavailableNotFree) {
  const ClusterView v = ViewOf("22.05-sinfo-drained.json", "22.05-squeue-pending-resources.json");
  const NodeView& n3 = NodeNamed(v, "n3");
  EXPECT_EQ(n3.availability, NodeAvailability::kDrained);
  EXPECT_EQ(n3.state, "idle+drain");
  EXPECT_EQ(n3.reason, "gpuwarden: GPU 1 fell off the bus");
  ASSERT_TRUE(n3.gpus.has_value());
  EXPECT_EQ((*n3.gpus)[0].free, 0);
  EXPECT_EQ((*n3.gpus)[0].unavailable, 2);
  const GpuCounts* l40s = TypeIn(v.gpu_totals, "l40s");
  ASSERT_NE(l40s, nullptr);
  EXPECT_EQ(l40s->free, 0);
  EXPECT_EQ(l40s->unavailable, 2);
}

Node MakeNode(const std::string& state, std::vector<std::string> flags) {
  Node n;
  n.name = "x";
  n.state = state;
  n.state_flags = std::move(flags);
  return n;
}

TEST(ClusterView, AvailabilityFollowsStateAndFlags) {
  EXPECT_EQ(AvailabilityOf(MakeNode("IDLE", {})), NodeAvailability::kTakesWork);
  EXPECT_EQ(AvailabilityOf(MakeNode("MIXED", {})), NodeAvailability::kTakesWork);
  EXPECT_EQ(AvailabilityOf(MakeNode("ALLOCATED", {})), NodeAvailability::kTakesWork);
  EXPECT_EQ(AvailabilityOf(MakeNode("IDLE", {"DRAIN"})), NodeAvailability::kDrained);
  EXPECT_EQ(AvailabilityOf(MakeNode("MIXED", {"DRAIN"})), NodeAvailability::kDraining);
  EXPECT_EQ(AvailabilityOf(MakeNode("DOWN", {})), NodeAvailability::kDown);
  EXPECT_EQ(AvailabilityOf(MakeNode("IDLE", {"NOT_RESPONDING"})), NodeAvailability::kDown);
  EXPECT_EQ(AvailabilityOf(MakeNode("IDLE", {"POWERED_DOWN"})), NodeAvailability::kPoweredDown);
  EXPECT_EQ(AvailabilityOf(MakeNode("FUTURE", {})), NodeAvailability::kUnknown);
  Node none;
  EXPECT_EQ(AvailabilityOf(none), NodeAvailability::kUnknown);
}

TEST(ClusterView, UnknownGresStaysUnknownAndHolderFallsBackToTheRequest) {
  SinfoDocument sinfo;
  Node a = MakeNode("MIXED", {});
  a.name = "a1";  // gres not given: unknown, not zero
  Node b = MakeNode("MIXED", {});
  b.name = "a2";
  b.gres = std::vector<Gres>{{"gpu", std::nullopt, 4, std::nullopt}};
  b.gres_used = std::vector<Gres>{{"gpu", std::nullopt, 3, std::nullopt}};
  sinfo.nodes = {a, b};
  SqueueDocument squeue;
  Job j;
  j.id = 9;
  j.state = "RUNNING";
  j.nodes = "a[1-2]";
  j.gres_per_node = {{"gpu", std::nullopt, 1}};
  squeue.jobs = {j};
  Job bad;
  bad.id = 10;
  bad.state = "RUNNING";
  bad.nodes = "a[2-1]";
  squeue.jobs.push_back(bad);
  const ClusterView v = BuildClusterView(sinfo, squeue);
  EXPECT_FALSE(NodeNamed(v, "a1").gpus.has_value());
  ASSERT_EQ(NodeNamed(v, "a1").holders.size(), 1u);
  EXPECT_FALSE(NodeNamed(v, "a1").holders[0].indexes.has_value());
  ASSERT_TRUE(NodeNamed(v, "a2").gpus.has_value());
  EXPECT_EQ((*NodeNamed(v, "a2").gpus)[0].free, 1);
  ASSERT_EQ(v.gpu_totals.size(), 1u);
  EXPECT_EQ(v.gpu_totals[0].total, 4);  // a1's unknown GPUs are not counted as 0 free
  ASSERT_EQ(v.warnings.size(), 1u);
  EXPECT_NE(v.warnings[0].find("job 10"), std::string::npos);
}

TEST(ClusterView, PendingJobsByPriorityThenId) {
  SinfoDocument sinfo;
  SqueueDocument squeue;
  for (auto [id, prio] : {std::pair<int64_t, int64_t>{3, 10}, {1, 10}, {2, 50}}) {
    Job j;
    j.id = id;
    j.state = "PENDING";
    j.priority = prio;
    j.gres_per_job = {{"gpu", std::string("l40s"), 4}};
    squeue.jobs.push_back(j);
  }
  const ClusterView v = BuildClusterView(sinfo, squeue);
  ASSERT_EQ(v.pending.size(), 3u);
  EXPECT_EQ(v.pending[0].job_id, 2);
  EXPECT_EQ(v.pending[1].job_id, 1);
  EXPECT_EQ(v.pending[2].job_id, 3);
  EXPECT_EQ(v.pending[0].wants, "4 gpu:l40s in all");
}

TEST(ClusterView, LaterLayoutsGiveTheSameView) {
  for (const auto& [sinfo, squeue] :
       {std::pair<std::string, std::string>{"23.02-sinfo.json", "23.02-squeue.json"},
        {"23.11-sinfo.json", "23.11-squeue.json"}}) {
    const ClusterView v = ViewOf(sinfo, squeue);
    EXPECT_FALSE(v.nodes.empty()) << sinfo;
    EXPECT_FALSE(v.gpu_totals.empty()) << sinfo;
    for (const NodeView& n : v.nodes) {
      EXPECT_NE(n.availability, NodeAvailability::kUnknown) << sinfo << " " << n.name;
    }
  }
}

}  // namespace
}  // namespace gw::slurm
