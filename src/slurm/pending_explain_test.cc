// ExplainPendingJob on hand-made views: fragmentation against shortage, what
// must end, drained nodes, jobs ahead, a requeue, Slurm's "no estimate", and
// codes the catalog does not know.
#include "slurm/pending_explain.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace gw::slurm {
namespace {

constexpr int64_t kNow = 1'800'000'000;

Node GpuNode(const std::string& name, const std::string& type, int64_t total, int64_t used,
             const std::string& state = "MIXED", std::vector<std::string> flags = {}) {
  Node n;
  n.name = name;
  n.state = state;
  n.state_flags = std::move(flags);
  n.gres = std::vector<Gres>{{"gpu", type, total, std::nullopt}};
  n.gres_used = std::vector<Gres>{{"gpu", type, used, std::nullopt}};
  n.partitions = {"gpu"};
  return n;
}

Job Running(int64_t id, const std::string& node, const std::string& type, int64_t count) {
  Job j;
  j.id = id;
  j.user = "alice";
  j.name = "train";
  j.state = "RUNNING";
  j.nodes = node;
  j.gres_detail = {{{"gpu", type, count, std::string("0")}}};
  j.start_time = kNow - 600;
  return j;
}

Job Pending(int64_t id, const std::string& reason, int64_t per_node, const std::string& type) {
  Job j;
  j.id = id;
  j.user = "bob";
  j.name = "big";
  j.state = "PENDING";
  j.reason = reason;
  j.partition = "gpu";
  j.node_count = 1;
  if (per_node > 0) j.gres_per_node = {{"gpu", type, per_node}};
  return j;
}

struct World {
  SinfoDocument sinfo;
  SqueueDocument squeue;
  PendingExplanation Explain(const Job& job) const {
    const ClusterView view = BuildClusterView(sinfo, squeue);
    return ExplainPendingJob(job, view, squeue.jobs, kNow);
  }
};

bool Has(const std::vector<std::string>& lines, const std::string& part) {
  for (const std::string& l : lines) {
    if (l.find(part) != std::string::npos) return true;
  }
  return false;
}

std::string Joined(const std::vector<std::string>& lines) {
  std::string s;
  for (const std::string& l : lines) s += l + "\n";
  return s;
}

TEST(PendingExplain, FreeGpusSpreadOverNodesIsFragmentation) {
  World w;
  w.sinfo.nodes = {GpuNode("n1", "a100", 4, 2), GpuNode("n2", "a100", 4, 2),
                   GpuNode("n3", "a100", 4, 4, "ALLOCATED")};
  w.squeue.jobs = {Running(1, "n1", "a100", 2), Running(2, "n2", "a100", 2),
                   Running(3, "n3", "a100", 4)};
  const PendingExplanation e = w.Explain(Pending(9, "Resources", 4, "a100"));
  ASSERT_NE(e.reason, nullptr);
  EXPECT_TRUE(Has(e.evidence,
                  "Fragmentation: it needs 4 a100 GPUs on one node; 4 a100 GPUs are "
                  "free in all, but at most 2 on any one node (n1 2 of 4, n2 2 of 4, "
                  "n3 0 of 4 free)."))
      << Joined(e.evidence);
  ASSERT_EQ(e.must_end.size(), 3u) << Joined(e.must_end);
  EXPECT_EQ(e.must_end[0].rfind("n1: 2 a100 GPUs more must be freed; held by job 1 alice", 0), 0u)
      << e.must_end[0];
  EXPECT_EQ(e.must_end[2].rfind("n3: 4 a100 GPUs more must be freed; held by job 3", 0), 0u)
      << e.must_end[2];
}

TEST(PendingExplain, TooFewFreeGpusIsAShortageNotFragmentation) {
  World w;
  w.sinfo.nodes = {GpuNode("n1", "a100", 2, 2), GpuNode("n2", "a100", 2, 1)};
  const PendingExplanation e = w.Explain(Pending(9, "Resources", 2, "a100"));
  EXPECT_FALSE(Has(e.evidence, "Fragmentation")) << Joined(e.evidence);
  EXPECT_TRUE(Has(e.evidence,
                  "It needs 2 a100 GPUs on one node; 1 a100 GPU is free (n2 1 of 2, "
                  "n1 0 of 2 free)."))
      << Joined(e.evidence);
}

TEST(PendingExplain, ALargeClusterIsSummedUpNotListed) {
  World w;
  for (int i = 0; i < 30; ++i) {
    const std::string name = "g" + std::to_string(100 + i);
    w.sinfo.nodes.push_back(GpuNode(name, "h100", 8, i == 0 ? 4 : 7));
    w.squeue.jobs.push_back(Running(1000 + i, name, "h100", i == 0 ? 4 : 7));
  }
  const PendingExplanation e = w.Explain(Pending(9, "Resources", 8, "h100"));
  EXPECT_TRUE(Has(e.evidence, "(g100 4 of 8, g101 1 of 8,")) << Joined(e.evidence);
  EXPECT_TRUE(Has(e.evidence, ", and 22 nodes with fewer free).")) << Joined(e.evidence);
  ASSERT_EQ(e.must_end.size(), 9u) << Joined(e.must_end);
  EXPECT_EQ(e.must_end[0].rfind("g100: 4 h100 GPUs more must be freed", 0), 0u) << e.must_end[0];
  EXPECT_EQ(e.must_end[8], "… and 22 more nodes where more must be freed");
}

TEST(PendingExplain, DrainedNodesAreNotCountedAndAreNamed) {
  World w;
  w.sinfo.nodes = {GpuNode("n1", "a100", 2, 2), GpuNode("n2", "a100", 2, 0, "IDLE", {"DRAIN"})};
  w.sinfo.nodes[1].reason = "gpuwarden: GPU 0 FAULT";
  const PendingExplanation e = w.Explain(Pending(9, "Resources", 2, "a100"));
  EXPECT_TRUE(Has(e.evidence, "0 a100 GPUs are free (n1 0 of 2 free)")) << Joined(e.evidence);
  EXPECT_TRUE(Has(e.evidence,
                  "Not counted, the node does not take work: n2 (drained: gpuwarden: "
                  "GPU 0 FAULT, 2 a100 GPUs)."))
      << Joined(e.evidence);
  const PendingExplanation nodes = w.Explain(Pending(10, "ReqNodeNotAvail", 1, "a100"));
  EXPECT_TRUE(Has(nodes.evidence,
                  "n2 is drained: gpuwarden: GPU 0 FAULT (drained by gpuwarden's "
                  "health check)."))
      << Joined(nodes.evidence);
}

TEST(PendingExplain, PriorityNamesTheJobsAheadInItsPartition) {
  World w;
  w.sinfo.nodes = {GpuNode("n1", "a100", 2, 2)};
  Job ahead = Pending(5, "Resources", 2, "a100");
  ahead.priority = 900;
  ahead.user = "carol";
  Job other_partition = Pending(6, "Resources", 2, "a100");
  other_partition.priority = 950;
  other_partition.partition = "debug";
  Job me = Pending(9, "Priority", 1, "a100");
  me.priority = 100;
  w.squeue.jobs = {ahead, other_partition, me};
  const PendingExplanation e = w.Explain(me);
  EXPECT_TRUE(Has(e.evidence,
                  "1 job of its partition waits ahead of it with a higher priority: "
                  "job 5 carol (priority 900, 2 gpu:a100 per node)"))
      << Joined(e.evidence);
  EXPECT_FALSE(Has(e.evidence, "job 6")) << Joined(e.evidence);
}

TEST(PendingExplain, ARequeueAndItsEligibleTime) {
  World w;
  Job j = Pending(9, "BeginTime", 1, "a100");
  j.restarts = 1;
  j.eligible_time = kNow + 90;
  const PendingExplanation e = w.Explain(j);
  EXPECT_TRUE(Has(e.evidence, "It was requeued 1 time (preempted")) << Joined(e.evidence);
  EXPECT_TRUE(Has(e.evidence, "It may start in 1m.")) << Joined(e.evidence);
}

TEST(PendingExplain, AYearAwayIsNoEstimateAndANearStartIsOne) {
  World w;
  Job j = Pending(9, "Resources", 1, "a100");
  j.start_time = kNow + 365LL * 24 * 3600;
  PendingExplanation e = w.Explain(j);
  EXPECT_FALSE(e.expected_start_unix_s.has_value());
  EXPECT_NE(e.no_estimate_why.find("no time limit"), std::string::npos);
  j.start_time = kNow + 3600;
  e = w.Explain(j);
  EXPECT_EQ(e.expected_start_unix_s, kNow + 3600);
}

TEST(PendingExplain, ACodeOfALaterSlurmIsKeptVerbatim) {
  World w;
  const PendingExplanation e = w.Explain(Pending(9, "NvidiaImexChannels", 0, ""));
  EXPECT_EQ(e.code, "NvidiaImexChannels");
  EXPECT_EQ(e.reason, nullptr);
  Job running = Running(3, "n1", "a100", 1);
  EXPECT_EQ(w.Explain(running).state, "RUNNING");
}

}  // namespace
}  // namespace gw::slurm
