#include "slurm/sbatch.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "core/units.h"
#include "slurm/gpu_types.h"

namespace gw::slurm {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
TEST(GpuTypes, KnownModelsSizedNamesAndTheSmallestVariant) {
  EXPECT_EQ(GpuTypeMemoryBytes("a100"), 40 * kGiB);  // 40 or 80 GB: the smaller.
  EXPECT_EQ(GpuTypeMemoryBytes("A100"), 40 * kGiB);
  EXPECT_EQ(GpuTypeMemoryBytes("a100_80g"), 80 * kGiB);
  EXPECT_EQ(GpuTypeMemoryBytes("a100-80gb"), 80 * kGiB);
  EXPECT_EQ(GpuTypeMemoryBytes("v100-32GB"), 32 * kGiB);
  EXPECT_EQ(GpuTypeMemoryBytes("l40s"), 48 * kGiB);
  EXPECT_EQ(GpuTypeMemoryBytes("h200"), 141 * kGiB);
  EXPECT_EQ(GpuTypeMemoryBytes("nvidia_h100"), 80 * kGiB);
  EXPECT_EQ(GpuTypeMemoryBytes("tesla_v100"), 16 * kGiB);
  EXPECT_EQ(GpuTypeMemoryBytes("rtx_a6000"), 48 * kGiB);
  EXPECT_EQ(GpuTypeMemoryBytes("geforce_rtx_4090"), 24 * kGiB);
  EXPECT_FALSE(GpuTypeMemoryBytes(""));
  EXPECT_FALSE(GpuTypeMemoryBytes("gpu"));
  EXPECT_FALSE(GpuTypeMemoryBytes("mystery9000"));
  EXPECT_FALSE(GpuTypeMemoryBytes("a100_0g"));
  EXPECT_FALSE(GpuTypeMemoryBytes("a100_99999g"));
}

// n1, n2: two a100 each (n2's both busy); n3: two l40s.
ClusterView TestView() {
  ClusterView v;
  auto node = [](std::string name, std::string type, int64_t total, int64_t free) {
    NodeView n;
    n.name = std::move(name);
    n.availability = NodeAvailability::kTakesWork;
    n.gpus = std::vector<GpuCounts>{{type, total, total - free, free, 0}};
    return n;
  };
  v.nodes = {node("n1", "a100", 2, 2), node("n2", "a100", 2, 0), node("n3", "l40s", 2, 1)};
  v.gpu_totals = {{"a100", 4, 2, 2, 0}, {"l40s", 2, 1, 1, 0}};
  return v;
}

SlurmSubmit Submit() {
  SlurmSubmit s;
  s.command = {"/usr/bin/python3", "train.py", "--lr", "1e-3", "a b", "$HOME"};
  s.cwd = "/home/alice/exp";
  s.script_path = "/tmp/gpuwarden-sbatch-x";
  return s;
}

TEST(PlanSbatch, TheCommandFollowsTheScriptAsArgumentsUnchanged) {
  SlurmSubmit s = Submit();
  s.gpus = 2;
  s.time_limit_s = 61;  // Slurm counts minutes: rounded up.
  s.after = {12, 13};
  const ClusterView view = TestView();
  Result<SbatchPlan> plan = PlanSbatch(s, &view);
  ASSERT_TRUE(plan.ok()) << plan.error().message;
  EXPECT_THAT(plan->argv,
              ElementsAre("sbatch", "--parsable", "--job-name=python3", "--chdir=/home/alice/exp",
                          "--export=ALL", "--time=2", "--dependency=afterok:12:13", "--nodes=1",
                          "--gres=gpu:2", "/tmp/gpuwarden-sbatch-x", "/usr/bin/python3", "train.py",
                          "--lr", "1e-3", "a b", "$HOME"));
  EXPECT_TRUE(plan->notes.empty());
}

TEST(PlanSbatch, NoGpusAsksForNone) {
  SlurmSubmit s = Submit();
  s.gpus = 0;
  s.name = "prep";
  Result<SbatchPlan> plan = PlanSbatch(s, nullptr);
  ASSERT_TRUE(plan.ok());
  EXPECT_THAT(plan->argv, ::testing::Contains("--job-name=prep"));
  for (const std::string& a : plan->argv) {
    EXPECT_EQ(a.rfind("--gres", 0), std::string::npos) << a;
    EXPECT_EQ(a.rfind("--nodes", 0), std::string::npos) << a;
  }
}

TEST(PlanSbatch, VramBecomesTheGpuTypeThatHasIt) {
  SlurmSubmit s = Submit();
  s.vram_bytes = 45 * kGiB;  // a100 counts as 40 GB, l40s has 48.
  const ClusterView view = TestView();
  Result<SbatchPlan> plan = PlanSbatch(s, &view);
  ASSERT_TRUE(plan.ok()) << plan.error().message;
  EXPECT_THAT(plan->argv, ::testing::Contains("--gres=gpu:l40s:1"));
  ASSERT_EQ(plan->notes.size(), 1u);
  EXPECT_THAT(plan->notes[0], HasSubstr("l40s"));
}

TEST(PlanSbatch, VramEveryTypeHasIsAnUntypedRequest) {
  SlurmSubmit s = Submit();
  s.vram_bytes = 20 * kGiB;
  const ClusterView view = TestView();
  Result<SbatchPlan> plan = PlanSbatch(s, &view);
  ASSERT_TRUE(plan.ok());
  EXPECT_THAT(plan->argv, ::testing::Contains("--gres=gpu:1"));
  ASSERT_EQ(plan->notes.size(), 1u);
  EXPECT_THAT(plan->notes[0], HasSubstr("every GPU type"));
}

TEST(PlanSbatch, OfSeveralFittingTypesTheOneWithTheMostFree) {
  ClusterView view = TestView();
  NodeView h = view.nodes[0];
  h.name = "n4";
  h.gpus = std::vector<GpuCounts>{{"h100", 1, 0, 1, 0}};
  view.nodes.push_back(h);
  NodeView t = h;
  t.name = "n5";
  t.gpus = std::vector<GpuCounts>{{"t4", 8, 0, 8, 0}};
  view.nodes.push_back(t);
  view.gpu_totals.push_back({"h100", 1, 0, 1, 0});
  view.gpu_totals.push_back({"t4", 8, 0, 8, 0});
  SlurmSubmit s = Submit();
  s.vram_bytes = 30 * kGiB;  // a100 (2 free), l40s (1 free), h100 (1 free); not t4.
  Result<SbatchPlan> plan = PlanSbatch(s, &view);
  ASSERT_TRUE(plan.ok()) << plan.error().message;
  EXPECT_THAT(plan->argv, ::testing::Contains("--gres=gpu:a100:1"));
  EXPECT_THAT(plan->notes[0], HasSubstr("most GPUs free"));
}

TEST(PlanSbatch, RefusesWhatNoNodeCanHoldNamingTheCluster) {
  const ClusterView view = TestView();
  SlurmSubmit s = Submit();
  s.vram_bytes = 100 * kGiB;
  Result<SbatchPlan> plan = PlanSbatch(s, &view);
  ASSERT_FALSE(plan.ok());
  EXPECT_EQ(plan.error().code, "unsatisfiable");
  EXPECT_THAT(plan.error().message, HasSubstr("--vram 100"));
  EXPECT_THAT(plan.error().message, HasSubstr("a100 40"));
  EXPECT_THAT(plan.error().message, HasSubstr("l40s 48"));

  s.vram_bytes = 45 * kGiB;
  s.gpus = 3;  // l40s has the memory, but only 2 on a node.
  plan = PlanSbatch(s, &view);
  ASSERT_FALSE(plan.ok());
  EXPECT_THAT(plan.error().message, HasSubstr("no node has 3 GPUs with that much memory"));

  s.vram_bytes.reset();
  s.gpus = 5;
  plan = PlanSbatch(s, &view);
  ASSERT_FALSE(plan.ok());
  EXPECT_THAT(plan.error().message,
              HasSubstr("--gpus 5: no node of the cluster has 5 GPUs (at most 2)"));
}

TEST(PlanSbatch, VramOnUnknownTypesIsRefusedWithTheWayOut) {
  ClusterView view;
  NodeView n;
  n.name = "n1";
  n.gpus = std::vector<GpuCounts>{{"", 4, 0, 4, 0}};
  view.nodes = {n};
  view.gpu_totals = {{"", 4, 0, 4, 0}};
  SlurmSubmit s = Submit();
  s.vram_bytes = 10 * kGiB;
  Result<SbatchPlan> plan = PlanSbatch(s, &view);
  ASSERT_FALSE(plan.ok());
  EXPECT_THAT(plan.error().message, HasSubstr("cannot tell"));
  s.vram_bytes.reset();
  plan = PlanSbatch(s, &view);  // Without --vram untyped GPUs are fine.
  ASSERT_TRUE(plan.ok());
  EXPECT_THAT(plan->argv, ::testing::Contains("--gres=gpu:1"));
}

TEST(ParseSbatchJobId, ParsableAnswersAndWhatIsNot) {
  EXPECT_EQ(ParseSbatchJobId("123\n").value(), 123);
  EXPECT_EQ(ParseSbatchJobId("77;gwtest\n").value(), 77);
  EXPECT_EQ(ParseSbatchJobId("sbatch: warning: x\n88\n").value(), 88);
  for (const char* bad : {"", "\n", "abc", "12a", "-4", "99999999999999999999"}) {
    Result<int64_t> id = ParseSbatchJobId(bad);
    ASSERT_FALSE(id.ok()) << bad;
    EXPECT_EQ(id.error().code, "malformed");
  }
}

// Found by fuzz_slurm_text (fuzz/corpus/slurm_text/regression-sbatch-job-id-zero):
// a last line of zeros was job 0, which Slurm never gives.
TEST(ParseSbatchJobId, ZeroIsNoJobId) {
  for (const char* bad : {"0\n", "000;cluster\n", "sbatch: warning: x\n0\n"}) {
    Result<int64_t> id = ParseSbatchJobId(bad);
    ASSERT_FALSE(id.ok()) << bad;
    EXPECT_EQ(id.error().code, "malformed");
  }
  EXPECT_EQ(ParseSbatchJobId("0100\n").value(), 100);
}

TEST(ParseScontrolRecord, ValuesRunToTheNextKey) {
  const auto r = ParseScontrolRecord(
      "JobId=42 JobName=my run UserId=root(0) GroupId=root(0) JobState=FAILED "
      "Reason=NonZeroExitCode "
      "Dependency=(null) ExitCode=3:0 RunTime=00:00:01 StdOut=/tmp/a b/slurm-42.out "
      "TRES=cpu=1,node=1,billing=1\n");
  EXPECT_EQ(r.at("JobId"), "42");
  EXPECT_EQ(r.at("JobName"), "my run");
  EXPECT_EQ(r.at("JobState"), "FAILED");
  EXPECT_EQ(r.at("ExitCode"), "3:0");
  EXPECT_EQ(r.at("StdOut"), "/tmp/a b/slurm-42.out");
  EXPECT_EQ(r.at("TRES"), "cpu=1,node=1,billing=1");
  EXPECT_TRUE(ParseScontrolRecord("").empty());
  EXPECT_TRUE(ParseScontrolRecord("no keys here").empty());
}

TEST(DescribeSlurmJobEnd, AsTheLocalRunEnds) {
  EXPECT_FALSE(DescribeSlurmJobEnd(1, "PENDING", "0:0"));
  EXPECT_FALSE(DescribeSlurmJobEnd(1, "RUNNING", "0:0"));
  EXPECT_FALSE(DescribeSlurmJobEnd(1, "COMPLETING", "0:0"));
  EXPECT_FALSE(DescribeSlurmJobEnd(1, "REQUEUED", "0:0"));
  EXPECT_EQ(DescribeSlurmJobEnd(1, "COMPLETED", "0:0")->exit_code, 0);
  EXPECT_EQ(DescribeSlurmJobEnd(1, "FAILED", "3:0")->exit_code, 3);
  EXPECT_EQ(DescribeSlurmJobEnd(1, "FAILED", "0:9")->exit_code, 137);
  EXPECT_EQ(DescribeSlurmJobEnd(1, "FAILED", "0:0")->exit_code, 1);
  const auto cancelled = DescribeSlurmJobEnd(7, "CANCELLED by 0", "0:15");
  ASSERT_TRUE(cancelled);
  EXPECT_EQ(cancelled->exit_code, 1);
  EXPECT_EQ(cancelled->line, "Slurm job 7 was cancelled");
  const auto timeout = DescribeSlurmJobEnd(8, "TIMEOUT", "0:0");
  EXPECT_EQ(timeout->exit_code, 1);
  EXPECT_THAT(timeout->line, HasSubstr("time limit"));
  EXPECT_EQ(DescribeSlurmJobEnd(9, "OUT_OF_MEMORY", "0:125")->exit_code, 1);
  EXPECT_EQ(DescribeSlurmJobEnd(9, "NODE_FAIL", "0:0")->exit_code, 1);
}

}  // namespace
}  // namespace gw::slurm
