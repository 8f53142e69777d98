// SLURM_ALLOCATED and SLURM_OUTSIDE_ALLOCATION, and what an allocation does
// to a GPU's state and to a stated need.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "diagnose/rules.h"
#include "diagnose/test_util.h"
#include "diagnose/verdict.h"

namespace gw::diagnose {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using namespace fixtures;

SlurmJob Job(std::string id, std::string user, std::string name, std::vector<unsigned> gpus) {
  SlurmJob j;
  j.id = std::move(id);
  j.user = std::move(user);
  j.name = std::move(name);
  j.state = "RUNNING";
  j.start_time_unix_s = kT0 / 1000 - 7200;
  j.gres_indexes = gpus;
  j.gpus = std::move(gpus);
  return j;
}

// Node n2 with four GPUs: job 15 (alice, train) holds GPUs 0 and 1 and runs
// PID 4242 on GPU 0; job 16 (bob, eval) holds GPU 2 and runs nothing there.
Snapshot SlurmServer() {
  Snapshot s = HealthyServer(4);
  s.slurm.emplace();
  s.slurm->name = "n2";
  s.slurm->gpu_map = "device files";
  s.slurm->jobs = {Job("15", "alice", "train", {0, 1}), Job("16", "bob", "eval", {2})};
  AddProcess(s, {.pid = 4242, .gpu = 0, .bytes = 20 * kGiB, .sm = 80});
  s.processes[4242].owner.slurm_job_id = "15";
  s.processes[4242].owner.slurm_step = "0";
  return s;
}

TEST(SlurmAllocatedTest, NamesTheJobOfEveryAllocatedGpu) {
  const auto findings = RunOne(SlurmServer());
  ASSERT_EQ(Count(findings, "SLURM_ALLOCATED"), 3u);
  std::vector<const Finding*> by_gpu(4, nullptr);
  for (const Finding& f : findings) {
    if (f.code == "SLURM_ALLOCATED") by_gpu[f.gpus.at(0)] = &f;
  }
  ASSERT_NE(by_gpu[0], nullptr);
  EXPECT_EQ(by_gpu[0]->message,
            "GPU 0 is allocated by Slurm to job 15 (alice, train); 1 of its processes runs on it");
  EXPECT_THAT(by_gpu[0]->pids, ElementsAre(4242));
  EXPECT_EQ(by_gpu[0]->implies, Verdict::kBusy);
  ASSERT_NE(by_gpu[1], nullptr);
  EXPECT_THAT(by_gpu[1]->message, HasSubstr("job 15 (alice, train); none of its processes"));
  ASSERT_NE(by_gpu[2], nullptr);
  EXPECT_THAT(by_gpu[2]->message, HasSubstr("job 16 (bob, eval)"));
  EXPECT_EQ(by_gpu[3], nullptr);
  EXPECT_EQ(*EvidenceNumber(*by_gpu[0], "slurm_job_running"), 7200);
  bool step = false;
  for (const std::string& s : by_gpu[2]->next_steps)
    step = step || s == "See the job: scontrol show job 16";
  EXPECT_TRUE(step);
}

TEST(SlurmAllocatedTest, AnAllocatedGpuIsBusyNeverFreeAndTakesNoNeed) {
  const Snapshot s = SlurmServer();
  const Diagnosis d = Diagnose(std::span<const Snapshot>(&s, 1), {});
  ASSERT_EQ(d.gpus.size(), 4u);
  // GPU 2 is idle and empty, but it is job 16's.
  EXPECT_EQ(d.gpus[2].state, GpuState::kBusy);
  EXPECT_THAT(d.gpus[2].line, HasSubstr("allocated to Slurm job 16 (bob, eval)"));
  EXPECT_EQ(d.gpus[3].state, GpuState::kFree);
  // Three of four GPUs are jobs': the server is busy, and says why.
  EXPECT_EQ(d.server, Verdict::kBusy);
  EXPECT_THAT(d.summary, HasSubstr("resource shortage: 3/4 GPUs allocated to Slurm jobs"));
  EXPECT_THAT(d.summary, HasSubstr("1 of 4 GPUs free"));

  DiagnoseOptions o;
  o.need = NeedRequest{.gpus = 2, .bytes_per_gpu = 10 * kGiB};
  const Diagnosis need = Diagnose(std::span<const Snapshot>(&s, 1), o);
  // Only GPU 3 is Slurm's to no one: two GPUs cannot be had now.
  EXPECT_EQ(need.server, Verdict::kBusy);
  o.need = NeedRequest{.gpus = 1, .bytes_per_gpu = 10 * kGiB};
  const Diagnosis one = Diagnose(std::span<const Snapshot>(&s, 1), o);
  EXPECT_EQ(one.server, Verdict::kOk);
  const Finding* fits = Find(one.findings, "NEED_FITS");
  ASSERT_NE(fits, nullptr);
  EXPECT_THAT(fits->gpus, ElementsAre(3));
}

TEST(SlurmAllocatedTest, NothingWithoutAReadSlurmSection) {
  Snapshot s = SlurmServer();
  s.slurm->unread = "squeue: no answer within 3000 ms";
  EXPECT_EQ(Count(RunOne(s), "SLURM_ALLOCATED"), 0u);
  s.slurm.reset();
  EXPECT_EQ(Count(RunOne(s), "SLURM_ALLOCATED"), 0u);
}

TEST(SlurmOutsideAllocationTest, AnotherJobsProcessOnTheGpu) {
  Snapshot s = SlurmServer();
  // Job 15's process on GPU 2, which is job 16's.
  AddProcess(s, {.pid = 4300, .gpu = 2, .bytes = 8 * kGiB, .sm = 40});
  s.processes[4300].owner.slurm_job_id = "15";
  const auto findings = RunOne(s);
  ASSERT_EQ(Count(findings, "SLURM_OUTSIDE_ALLOCATION"), 1u);
  const Finding& f = *Find(findings, "SLURM_OUTSIDE_ALLOCATION");
  EXPECT_THAT(f.gpus, ElementsAre(2));
  EXPECT_THAT(f.pids, ElementsAre(4300));
  EXPECT_EQ(f.message,
            "PID 4300 python (alice, slurm job 15 \"train\") of Slurm job 15 uses GPU 2, which "
            "Slurm gave to job 16 (bob, eval) (Slurm gave it GPU 0,1)");
  EXPECT_EQ(f.actor, Actor::kAdmin);
}

TEST(SlurmOutsideAllocationTest, AProcessOfNoJobOnAnAllocatedGpu) {
  Snapshot s = SlurmServer();
  AddProcess(s, {.pid = 5000, .gpu = 1, .user = "carol", .comm = "python"});
  // And one of no job on the GPU no job holds: the node's own business.
  AddProcess(s, {.pid = 5001, .gpu = 3, .user = "root", .comm = "dcgm"});
  const auto findings = RunOne(s);
  ASSERT_EQ(Count(findings, "SLURM_OUTSIDE_ALLOCATION"), 1u);
  const Finding& f = *Find(findings, "SLURM_OUTSIDE_ALLOCATION");
  EXPECT_THAT(f.pids, ElementsAre(5000));
  EXPECT_EQ(f.message,
            "PID 5000 python (carol) runs outside Slurm on GPU 1, which Slurm gave to job 15 "
            "(alice, train)");
}

TEST(SlurmOutsideAllocationTest, AGuessedOrPartialMapAccusesNobody) {
  Snapshot s = SlurmServer();
  AddProcess(s, {.pid = 5000, .gpu = 1, .user = "carol", .comm = "python"});
  ASSERT_EQ(Count(RunOne(s), "SLURM_OUTSIDE_ALLOCATION"), 1u);
  s.slurm->gpu_map = "minor order";
  EXPECT_EQ(Count(RunOne(s), "SLURM_OUTSIDE_ALLOCATION"), 0u);
  s.slurm->gpu_map = "device files";
  s.slurm->notes = {"job 15: GRES index 4 matches no GPU of this server"};
  EXPECT_EQ(Count(RunOne(s), "SLURM_OUTSIDE_ALLOCATION"), 0u);
}

TEST(SlurmOutsideAllocationTest, UnknownJobIsNotOutside) {
  Snapshot s = SlurmServer();
  AddProcess(s, {.pid = 5000, .gpu = 1});
  s.processes[5000].readable = false;
  AddProcess(s, {.pid = 5002, .gpu = 2, .in_proc = false});
  EXPECT_EQ(Count(RunOne(s), "SLURM_OUTSIDE_ALLOCATION"), 0u);
}

TEST(SlurmOwnerTextTest, ProcessesNameTheirJobAndItsOwnerWhenNotTheirs) {
  Snapshot s = SlurmServer();
  // root's process in alice's job (a prolog helper, say).
  AddProcess(s,
             {.pid = 4400, .gpu = 0, .bytes = 30 * kGiB, .sm = 0, .user = "root", .age_s = 86400});
  s.processes[4400].owner.slurm_job_id = "15";
  const auto findings = RunOne(s, IdleAtOnce());
  const Finding* idle = Find(findings, "IDLE_HOLDER");
  ASSERT_NE(idle, nullptr);
  EXPECT_THAT(idle->message, HasSubstr("PID 4400 python (root, slurm job 15 \"train\" of alice)"));
}

}  // namespace
}  // namespace gw::diagnose
