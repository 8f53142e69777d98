// ExplainPendingJob on hand-made views: fragmentation against shortage, what
// must end, drained nodes, jobs ahead, a requeue, Slurm's "no estimate", and
// codes the catalog does not know.
#include "slurm/pending_explain.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "slurm/slurm_test_util.h"

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
  EXPECT_TRUE(
      Has(e.evidence,
          "1 job of its partition waits ahead of it for resources (a higher priority, "
          "or the same and submitted earlier): job 5 carol (priority 900, 2 gpu:a100 per node)"))
      << Joined(e.evidence);
  EXPECT_FALSE(Has(e.evidence, "job 6")) << Joined(e.evidence);
  EXPECT_TRUE(Has(e.evidence, "factors behind each priority could not be read"))
      << Joined(e.evidence);
  EXPECT_FALSE(e.priority_factors);

  // With sprio's rows, each priority is broken down.
  const std::vector<PriorityFactors> rows = {
      {5, "carol", "gpu", 900, 0, 0, 0, 0, 0, 400, 500, 0, ""},
      {9, "bob", "gpu", 100, 0, 0, 0, 0, 0, 100, 0, 0, ""}};
  WaitContext context;
  context.priorities = &rows;
  const ClusterView view = BuildClusterView(w.sinfo, w.squeue);
  const PendingExplanation f = ExplainPendingJob(me, view, w.squeue.jobs, kNow, context);
  EXPECT_TRUE(Has(f.evidence, "Its priority 100 = partition 100.")) << Joined(f.evidence);
  EXPECT_TRUE(Has(f.evidence, "job 5 carol (priority 900 = QOS 500 + partition 400, "))
      << Joined(f.evidence);
  ASSERT_TRUE(f.priority_factors);
  EXPECT_EQ(f.priority_factors->partition_factor, 100);
  EXPECT_FALSE(Has(f.evidence, "could not be read")) << Joined(f.evidence);

  // A job of several partitions: the row of its own, else any of its rows;
  // none for a job sprio does not list.
  const std::vector<PriorityFactors> two_partitions = {
      {9, "bob", "debug", 50, 0, 0, 0, 0, 0, 50, 0, 0, ""},
      {9, "bob", "gpu", 100, 0, 0, 0, 0, 0, 100, 0, 0, ""}};
  context.priorities = &two_partitions;
  EXPECT_EQ(
      ExplainPendingJob(me, view, w.squeue.jobs, kNow, context).priority_factors->partition_factor,
      100);
  Job elsewhere = me;
  elsewhere.partition = "other";
  EXPECT_EQ(ExplainPendingJob(elsewhere, view, w.squeue.jobs, kNow, context)
                .priority_factors->partition_factor,
            50);
  Job unlisted = me;
  unlisted.id = 99;
  EXPECT_FALSE(ExplainPendingJob(unlisted, view, w.squeue.jobs, kNow, context).priority_factors);
}

TEST(PendingExplain, AnEqualPriorityAheadIsTheEarlierJob) {
  World w;
  w.sinfo.nodes = {GpuNode("n1", "a100", 2, 2)};
  Job earlier = Pending(5, "Resources", 1, "a100");
  earlier.priority = 100;
  Job me = Pending(9, "Priority", 1, "a100");
  me.priority = 100;
  Job later = Pending(12, "Priority", 1, "a100");
  later.priority = 100;
  Job limited = Pending(3, "QOSMaxGRESPerUser", 1, "a100");
  limited.priority = 500;
  w.squeue.jobs = {later, me, earlier, limited};
  const PendingExplanation e = w.Explain(me);
  EXPECT_TRUE(Has(e.evidence, "1 job of its partition waits ahead of it")) << Joined(e.evidence);
  EXPECT_TRUE(Has(e.evidence, "job 5 bob")) << Joined(e.evidence);
  EXPECT_FALSE(Has(e.evidence, "job 12")) << Joined(e.evidence);
  EXPECT_FALSE(Has(e.evidence, "job 3"))
      << "held back by a limit, not ahead: " << Joined(e.evidence);
}

// The captured cluster with accounting (testdata/README.md): a QOS limit per
// user, an account's group limit, and a job behind a higher priority.
struct CapturedWithAccounting {
  SinfoDocument sinfo;
  SqueueDocument squeue;
  AssocMgrState limits;
  std::vector<PriorityFactors> priorities;
  CapturedWithAccounting() {
    auto n = ParseSinfoJson(ReadTestdata("22.05-sinfo-limits.json"));
    auto j = ParseSqueueJson(ReadTestdata("22.05-squeue-limits.json"));
    auto l = ParseAssocMgr(ReadTestdata("22.05-assoc-mgr-limits.txt"));
    auto p = ParseSprio(ReadTestdata("22.05-sprio.txt"));
    EXPECT_TRUE(n.ok() && j.ok() && l.ok() && p.ok());
    if (n.ok()) sinfo = *n;
    if (j.ok()) squeue = *j;
    if (l.ok()) limits = *l;
    if (p.ok()) priorities = *p;
  }
  PendingExplanation Explain(int64_t id, bool with_details = true) const {
    const ClusterView view = BuildClusterView(sinfo, squeue);
    WaitContext context;
    if (with_details) {
      context.limits = &limits;
      context.priorities = &priorities;
    } else {
      context.limits_unread = "scontrol show assoc_mgr exited with status 1: denied";
    }
    for (const Job& job : squeue.jobs) {
      if (job.id == id) return ExplainPendingJob(job, view, squeue.jobs, kNow, context);
    }
    ADD_FAILURE() << "no job " << id;
    return {};
  }
};

TEST(PendingExplain, AQosLimitPerUserNamesTheLimitItsUsageAndTheJobsUsingIt) {
  const CapturedWithAccounting c;
  const PendingExplanation e = c.Explain(17);
  EXPECT_EQ(e.code, "QOSMaxGRESPerUser");
  EXPECT_TRUE(Has(e.evidence,
                  "QOS gpu2 for user root allows 2 GPUs (MaxTRESPU gres/gpu=2); 2 in use now by "
                  "1 running job: job 15 root ("))
      << Joined(e.evidence);
  EXPECT_TRUE(Has(e.evidence, "this job asks for 1 more.")) << Joined(e.evidence);
  EXPECT_TRUE(Has(e.evidence, "It can start once 1 GPU of these is released."))
      << Joined(e.evidence);
  ASSERT_TRUE(e.limit);
  EXPECT_EQ(e.limit->holder, "QOS gpu2 for user root");
  EXPECT_EQ(e.limit->key, "MaxTRESPU");
  EXPECT_EQ(e.limit->tres, "gres/gpu");
  EXPECT_EQ(e.limit->limit, 2.0);
  EXPECT_EQ(e.limit->used, 2.0);
  EXPECT_EQ(e.limit->asks, 1.0);
  EXPECT_EQ(e.limit->running_jobs, std::vector<int64_t>{15});
}

TEST(PendingExplain, AnAccountsGroupLimitNamesTheAccount) {
  const CapturedWithAccounting c;
  const PendingExplanation e = c.Explain(18);
  EXPECT_EQ(e.code, "AssocGrpGRES");
  EXPECT_TRUE(Has(e.evidence,
                  "account lab allows 1 GPU (GrpTRES gres/gpu=1); 1 in use now by 1 running "
                  "job: job 16 root ("))
      << Joined(e.evidence);
  ASSERT_TRUE(e.limit);
  EXPECT_EQ(e.limit->running_jobs, std::vector<int64_t>{16});
  // Unread: said so, with the cause, and no figure made up.
  const PendingExplanation u = c.Explain(18, /*with_details=*/false);
  EXPECT_TRUE(Has(u.evidence,
                  "The limit and its usage could not be read: scontrol show "
                  "assoc_mgr exited with status 1: denied"))
      << Joined(u.evidence);
  EXPECT_FALSE(u.limit);
}

TEST(PendingExplain, PriorityOfTheCaptureBreaksDownTheFactors) {
  const CapturedWithAccounting c;
  const PendingExplanation e = c.Explain(20);
  EXPECT_EQ(e.code, "Priority");
  EXPECT_TRUE(Has(e.evidence, "Its priority 1000 = partition 1000.")) << Joined(e.evidence);
  EXPECT_TRUE(Has(e.evidence, "1 job of its partition waits ahead of it for resources"))
      << Joined(e.evidence);
  EXPECT_TRUE(Has(e.evidence, "job 19 root (priority 1000 = partition 1000")) << Joined(e.evidence);
  ASSERT_TRUE(e.priority_factors);
  EXPECT_EQ(e.priority_factors->job_id, 20);
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
