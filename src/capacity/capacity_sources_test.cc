#include "capacity/capacity_sources.h"

#include <gtest/gtest.h>

#include "os/fake_command_runner.h"

namespace gw::capacity {
namespace {

slurm::SinfoDocument ThreeNodes() {
  slurm::SinfoDocument doc;
  for (auto [name, type] : {std::pair{"n1", "a100"}, {"n2", "a100"}, {"n3", "l40s"}}) {
    slurm::Node n;
    n.name = name;
    n.gres = std::vector<slurm::Gres>{{"gpu", std::string(type), 2, std::nullopt}};
    doc.nodes.push_back(n);
  }
  return doc;
}

// sacct -X -n -P -o JobIDRaw,User,Partition,Submit,Eligible,Start,End,State,
// AllocTRES,ReqTRES,NodeList, times as Unix seconds, over [0, 10000).
constexpr char kSacct[] =
    "1|alice|gpu|0|0|100|1100|COMPLETED|cpu=1,gres/gpu=2,node=1|cpu=1,gres/gpu=2,node=1|n1\n"
    "2|bob|gpu|0|0|200|2200|COMPLETED|cpu=1,gres/gpu=2,node=1|cpu=1,gres/gpu=2,node=1|n2\n"
    "3|carol|gpu|50|50|1100|2100|COMPLETED|cpu=1,gres/gpu=2,node=1|cpu=1,gres/gpu=2|n1\n"
    "4|dave|gpu|300|300|Unknown|Unknown|PENDING||cpu=1,gres/gpu=4,node=1|None assigned\n"
    "5|erin|gpu|400|Unknown|Unknown|Unknown|PENDING||cpu=1,gres/gpu=1|None assigned\n"
    "6|fay|gpu|500|500|600|600|CANCELLED by 0||cpu=1,gres/gpu=1|None assigned\n"
    "7|gus|gpu|0|0|0|5000|COMPLETED|cpu=1,node=1|cpu=1,node=1|n3\n"
    "8|hal|gpu|5000|5000|5000|6000|COMPLETED|cpu=1,gres/gpu:a100=2,gres/gpu=2,node=1|"
    "cpu=1,gres/gpu=2|n1\n"
    "9|ivy|gpu|0|0|0|Unknown|RUNNING|cpu=1,gres/gpu=1,node=1|cpu=1,gres/gpu=1|n2\n";

TEST(CapacitySourcesTest, SacctLinesAreRead) {
  Result<std::vector<SacctJob>> jobs = ParseSacct(kSacct);
  ASSERT_TRUE(jobs.ok()) << jobs.error().message;
  ASSERT_EQ(jobs->size(), 9u);
  const SacctJob& pending = (*jobs)[3];
  EXPECT_EQ(pending.state, "PENDING");
  EXPECT_FALSE(pending.start_s);
  EXPECT_FALSE(pending.alloc_gpus);
  EXPECT_EQ(pending.req_gpus, 4);
  EXPECT_EQ((*jobs)[5].state, "CANCELLED");
  EXPECT_EQ((*jobs)[7].gpu_type, "a100");
  EXPECT_EQ((*jobs)[7].alloc_gpus, 2);
  EXPECT_FALSE((*jobs)[6].alloc_gpus);

  Result<std::vector<SacctJob>> short_line = ParseSacct("1|alice|gpu\n");
  ASSERT_FALSE(short_line.ok());
  EXPECT_EQ(short_line.error().message, "sacct line 1: expected 11 fields separated by '|', got 3");
  Result<std::vector<SacctJob>> bad_time =
      ParseSacct("1|a|gpu|2025-01-01T00:00:00|0|0|0|COMPLETED|||n1\n");
  ASSERT_FALSE(bad_time.ok());
  EXPECT_NE(bad_time.error().message.find("Submit is not Unix seconds"), std::string::npos);
}

// By hand: held GPUs [0,100) 1, [100,200) 3, [200,2100) 5, [2100,2200) 3,
// [2200,5000) 1, [5000,6000) 3, [6000,10000) 1 (job 9 holds 1 throughout):
// 20000 GPU-s. Never all six. Waits: 100, 200, 1050, 0 (job 8), 0 (job 9):
// sorted 0, 0, 100, 200, 1050 -> p50 (rank 3) 100, p90 (rank 5) 1050;
// job 4 still waits (9700 s), 5 is held, 6 gave up, 7 has no GPU.
// n1 runs jobs over [100,2100) and [5000,6000): one idle gap of 2900 s ->
// SuspendTime 48 min. One GPU is held all the time: the busiest node (n2,
// 2 x 2000 + 1 x 10000 GPU-s against n1's 6000) stays on. n3 ran nothing.
// A NodeList naming more nodes than any cluster has is refused, not spelt out
// (found by fuzz_capacity_sacct: a few hundred bytes asked for gigabytes).
TEST(CapacitySourcesTest, ANodeListPastTheLargestClusterIsRefused) {
  Result<std::vector<SacctJob>> jobs = ParseSacct(
      "1|u|gpu|0|0|0|100|COMPLETED|gres/gpu=1|gres/gpu=1|r[1-300]n[1-300]\n"
      "2|u|gpu|0|0|0|100|COMPLETED|gres/gpu=1|gres/gpu=1|n[1-65536]\n");
  ASSERT_TRUE(jobs.ok()) << jobs.error().message;
  Result<CapacityInput> in = InputFromSlurm(*jobs, ThreeNodes(), 0, 1000, 0);
  ASSERT_FALSE(in.ok());
  EXPECT_EQ(in.error().code, "malformed");
  EXPECT_NE(in.error().message.find("sacct job 1: "), std::string::npos) << in.error().message;
  EXPECT_NE(in.error().message.find("65536"), std::string::npos) << in.error().message;
  jobs->erase(jobs->begin());  // 65,536 nodes is still a cluster.
  EXPECT_TRUE(InputFromSlurm(*jobs, ThreeNodes(), 0, 1000, 0).ok());
}

TEST(CapacitySourcesTest, SlurmAccountingGivesTheFiguresComputedByHand) {
  Result<std::vector<SacctJob>> jobs = ParseSacct(kSacct);
  ASSERT_TRUE(jobs.ok());
  Result<CapacityInput> in = InputFromSlurm(*jobs, ThreeNodes(), 0, 10000, 0);
  ASSERT_TRUE(in.ok()) << in.error().message;
  EXPECT_EQ(in->jobs.size(), 8u);  // Not job 7.
  EXPECT_EQ(in->gpu_types.at("a100"), 4);
  const CapacityReport r = AnalyzeCapacity(*in);
  EXPECT_EQ(r.source, "slurm");
  EXPECT_DOUBLE_EQ(r.capacity_gpus, 6);
  EXPECT_DOUBLE_EQ(r.held_gpu_hours, 20000.0 / 3600);
  EXPECT_DOUBLE_EQ(r.capacity_gpu_hours, 60000.0 / 3600);
  EXPECT_FALSE(r.idle_held_gpu_hours) << "sacct does not know GPU utilisation";
  EXPECT_FALSE(r.memory_bound_gpu_hours);
  EXPECT_DOUBLE_EQ(r.saturated_hours, 0);
  EXPECT_EQ(r.waits->started, 5u);
  EXPECT_EQ(r.waits->p50_s, 100);
  EXPECT_EQ(r.waits->p90_s, 1050);
  EXPECT_EQ(r.waits->still_waiting, 1u);
  EXPECT_EQ(r.waits->longest_waiting_s, 9700);
  EXPECT_EQ(r.waits->chose_to_wait, 1u);
  EXPECT_EQ(r.waits->gave_up, 1u);
  // Hour 0: (100 + 300 + 9500 + 300 + 1400) / (6 x 3600) held.
  EXPECT_DOUBLE_EQ(*r.hours[0].held_fraction, 11600.0 / 21600);
  EXPECT_DOUBLE_EQ(*r.hours[2].held_fraction, 1.0 / 6);
  ASSERT_TRUE(r.off_peak);
  EXPECT_EQ(FormatHourWindow(*r.off_peak), "01:00-03:00");
  EXPECT_TRUE(r.recommendations.empty());

  ASSERT_TRUE(r.power.applies);
  EXPECT_EQ(r.power.idle_gaps, 1u);
  EXPECT_EQ(r.power.median_idle_gap_s, 2900);
  EXPECT_EQ(r.power.suspend_time_s, 2880);
  EXPECT_DOUBLE_EQ(r.power.base_load_gpus, 1);
  EXPECT_EQ(r.power.exclude_nodes, std::vector<std::string>{"n2"});
  EXPECT_EQ(r.power.idle_nodes, std::vector<std::string>{"n3"});
}

TEST(CapacitySourcesTest, ASaturatedClusterAsksForTheTypeItsJobsWaitedFor) {
  // Six GPUs held 0-3600 by three jobs; a job wanting two a100 waits
  // through it all (Eligible 0, Start 3600).
  std::string sacct;
  for (const char* node : {"n1", "n2", "n3"}) {
    sacct += std::string("1|u|gpu|0|0|0|3600|COMPLETED|gres/gpu=2|gres/gpu=2|") + node + "\n";
  }
  sacct += "4|u|gpu|0|0|3600|3700|COMPLETED|gres/gpu=2|gres/gpu=2|n1\n";
  Result<std::vector<SacctJob>> jobs = ParseSacct(sacct);
  ASSERT_TRUE(jobs.ok());
  Result<CapacityInput> in = InputFromSlurm(*jobs, ThreeNodes(), 0, 7200, 0);
  ASSERT_TRUE(in.ok());
  const CapacityReport r = AnalyzeCapacity(*in);
  EXPECT_DOUBLE_EQ(r.saturated_hours, 1);
  EXPECT_DOUBLE_EQ(r.saturated_waiting_hours, 1);
  // Hour 0 is the peak; hour 1 (2 GPUs for 100 s) is off-peak.
  ASSERT_EQ(r.recommendations.size(), 2u);
  EXPECT_EQ(r.recommendations[0].code, "add_gpus");
  EXPECT_EQ(r.recommendations[0].figures.at("gpus"), 2);
  EXPECT_EQ(r.recommendations[0].details.at("gpu_type"), "a100");
  EXPECT_EQ(r.recommendations[1].code, "off_peak");
  EXPECT_EQ(r.recommendations[1].details.at("window"), "01:00-02:00");
  EXPECT_EQ(r.power.suspend_time_s, std::nullopt) << "no idle gap between two jobs on a node";
}

TEST(CapacitySourcesTest, SacctIsAskedForAllUsersAllocationsWithUnixTimes) {
  os::FakeCommandRunner runner;
  const std::string argv =
      "sacct -a -X -n -P -S now-86400 -E now -o "
      "JobIDRaw,User,Partition,Submit,Eligible,Start,End,State,AllocTRES,ReqTRES,NodeList";
  runner.answers[argv] = {0, "1|a|gpu|0|0|1|2|COMPLETED|gres/gpu=1|gres/gpu=1|n1\n", ""};
  Result<std::vector<SacctJob>> jobs = ReadSacct(runner, 86400, 1000);
  ASSERT_TRUE(jobs.ok()) << jobs.error().message;
  EXPECT_EQ(jobs->size(), 1u);
  runner.answers[argv] = {1, "", "sacct: error: Problem talking to the database\n"};
  Result<std::vector<SacctJob>> failed = ReadSacct(runner, 86400, 1000);
  ASSERT_FALSE(failed.ok());
  EXPECT_EQ(failed.error().code, "slurm");
  EXPECT_NE(failed.error().message.find("Problem talking to the database"), std::string::npos);
}

TEST(CapacitySourcesTest, QueueJobsGiveWaitsAndPeaks) {
  const nlohmann::json jobs = nlohmann::json::parse(R"([
    {"id": 1, "user": "a", "state": "succeeded", "gpus": 1, "submit_unix_ms": 1000,
     "start_unix_ms": 61000, "end_unix_ms": 121000, "peak_vram_bytes": 25, "window": null,
     "after": []},
    {"id": 2, "user": "b", "state": "queued", "gpus": 2, "submit_unix_ms": 5000,
     "start_unix_ms": null, "end_unix_ms": null, "peak_vram_bytes": null,
     "window": "22:00-07:00", "after": []},
    {"id": 3, "user": "c", "state": "succeeded", "gpus": 0, "submit_unix_ms": 0}
  ])");
  Result<std::vector<JobRecord>> r = JobsFromQueueJson(jobs, 100);
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_EQ(r->size(), 2u);  // The job without a GPU is left out.
  EXPECT_EQ((*r)[0].eligible_s, 1);
  EXPECT_EQ((*r)[0].start_s, 61);
  EXPECT_EQ((*r)[0].peak_vram_fraction, 0.25);
  EXPECT_FALSE((*r)[0].chose_to_wait);
  EXPECT_TRUE((*r)[1].chose_to_wait);
  EXPECT_FALSE((*r)[1].start_s);
  Result<std::vector<JobRecord>> bad =
      JobsFromQueueJson(nlohmann::json::parse(R"([{"id": 1}])"), 0);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().message, "jobs: submit_unix_ms missing or of the wrong type");
}

}  // namespace
}  // namespace gw::capacity
