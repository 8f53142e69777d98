#include "slurm/node_jobs.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "os/fake_command_runner.h"
#include "slurm/slurm_test_util.h"

namespace gw::slurm {
namespace {

using ::testing::HasSubstr;

using ScriptedRunner = os::FakeCommandRunner;

constexpr char kSqueue[] =
    "squeue --json --nodelist=n2 --states=RUNNING,SUSPENDED,STOPPED,COMPLETING";

// The captures of the test cluster (testdata/README.md): on n2, job
// "train" holds IDX 0 and "eval" IDX 1, a CPU-only job runs beside them;
// "span" runs on n1 and n3 with one GPU each.
ScriptedRunner ClusterRunner() {
  ScriptedRunner r;
  r.answers["scontrol -o show node n2"] = {0, ReadTestdata("22.05-scontrol-node-n2.txt"), ""};
  r.answers[kSqueue] = {0, ReadTestdata("22.05-squeue-node-jobs.json"), ""};
  r.answers["slurmd -G -N n2"] = {0, "", ReadTestdata("22.05-slurmd-G-n2.txt")};
  return r;
}

Gpu GpuWithMinor(unsigned index, unsigned minor) {
  Gpu g;
  g.index = index;
  g.minor_number = minor;
  return g;
}

TEST(ParseGresIndexes, ReadsRangesAndLists) {
  EXPECT_EQ(*ParseGresIndexes("0-1"), (std::vector<unsigned>{0, 1}));
  EXPECT_EQ(*ParseGresIndexes("3,0-1"), (std::vector<unsigned>{0, 1, 3}));
  EXPECT_EQ(*ParseGresIndexes("7"), (std::vector<unsigned>{7}));
  for (const char* bad : {"", "x", "1-", "2-1", "[0]", "0,,1"}) {
    auto r = ParseGresIndexes(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_THAT(r.error().message, HasSubstr("GRES index list")) << bad;
  }
}

TEST(ParseSlurmdGres, ExpandsARangeRecordIntoOneDevicePerIndex) {
  auto devices = ParseSlurmdGres(ReadTestdata("22.05-slurmd-G-n2.txt"));
  ASSERT_TRUE(devices.ok()) << devices.error().message;
  ASSERT_EQ(devices->size(), 2u);
  EXPECT_EQ((*devices)[0].name, "gpu");
  EXPECT_EQ((*devices)[0].type, "a100");
  EXPECT_EQ((*devices)[0].index, 0u);
  EXPECT_TRUE((*devices)[0].file.ends_with("/n2/nvidia0")) << (*devices)[0].file;
  EXPECT_EQ((*devices)[1].index, 1u);
  EXPECT_TRUE((*devices)[1].file.ends_with("/n2/nvidia1")) << (*devices)[1].file;
}

// One record per device (AutoDetect=nvml, or one File per gres.conf line):
// Index= is the file's number, not the GRES index; the GRES index is the
// device's place in slurmd's list. A GRES without devices prints no Index or
// File at all.
TEST(ParseSlurmdGres, OneRecordPerDeviceAndRecordsWithoutFiles) {
  auto devices = ParseSlurmdGres(
      "slurmd: Gres Name=gpu Type=h100 Count=1 Index=2 ID=7696487 File=/dev/nvidia2 "
      "Cores=0-31 CoreCnt=64 Links=-1,18\n"
      "slurmd: debug:  something else\n"
      "slurmd: Gres Name=gpu Type=h100 Count=1 Index=3 ID=7696487 File=/dev/nvidia3 "
      "Cores=0-31 CoreCnt=64 Links=18,-1\n"
      "slurmd: Gres Name=license Type=(null) Count=10737418240 ID=1 (null)\n");
  ASSERT_TRUE(devices.ok()) << devices.error().message;
  ASSERT_EQ(devices->size(), 2u);
  EXPECT_EQ((*devices)[0].index, 0u);
  EXPECT_EQ((*devices)[0].file, "/dev/nvidia2");
  EXPECT_EQ((*devices)[1].index, 1u);
  EXPECT_EQ((*devices)[1].file, "/dev/nvidia3");
  EXPECT_TRUE(ParseSlurmdGres("").value().empty());
}

TEST(ParseSlurmdGres, ABrokenRecordNamesItsLine) {
  auto range =
      ParseSlurmdGres("slurmd: hello\nGres Name=gpu Count=2 Index=1 File=/dev/nvidia[1-0]\n");
  ASSERT_FALSE(range.ok());
  EXPECT_THAT(range.error().message, HasSubstr("slurmd -G, line 2: File"));
}

TEST(ReadNodeJobs, TheJobsOfTheNodeAndSlurmdsDevices) {
  ScriptedRunner runner = ClusterRunner();
  auto look = ReadNodeJobs(runner, "n2");
  ASSERT_TRUE(look.ok()) << look.error().message;
  // "span" runs on n1 and n3, not here; the CPU-only job does run here.
  std::vector<std::string> names;
  for (const Job& j : look->jobs) names.push_back(j.name.value_or("?"));
  EXPECT_EQ(names, (std::vector<std::string>{"train", "eval", "cpu only"}));
  ASSERT_TRUE(look->devices.has_value()) << look->devices_unread;
  EXPECT_EQ(look->devices->size(), 2u);
}

TEST(ReadNodeJobs, AnUnknownNodeIsNotANode) {
  ScriptedRunner runner;
  runner.answers["scontrol -o show node n9"] = {1, "", ReadTestdata("22.05-scontrol-node-n9.txt")};
  auto look = ReadNodeJobs(runner, "n9");
  ASSERT_FALSE(look.ok());
  EXPECT_EQ(look.error().code, "not_a_node");
  EXPECT_THAT(look.error().message, HasSubstr("Slurm has no node n9"));
  // Only the node was asked about.
  EXPECT_EQ(runner.ran.size(), 1u);
}

TEST(ReadNodeJobs, ClientFailuresNameTheCommand) {
  ScriptedRunner runner = ClusterRunner();
  runner.answers[kSqueue] = {1, "", "squeue: error: Unable to contact slurm controller\n"};
  auto look = ReadNodeJobs(runner, "n2");
  ASSERT_FALSE(look.ok());
  EXPECT_EQ(look.error().code, "slurm");
  EXPECT_THAT(look.error().message, HasSubstr("squeue --json exited with status 1"));
  runner.answers[kSqueue] = {0, "{\"jobs\": 3}", ""};
  look = ReadNodeJobs(runner, "n2");
  ASSERT_FALSE(look.ok());
  EXPECT_EQ(look.error().code, "malformed");
}

TEST(ReadNodeJobs, SlurmdFromSbinAndItsFailureIsANote) {
  ScriptedRunner runner = ClusterRunner();
  auto answer = runner.answers["slurmd -G -N n2"];
  runner.answers.erase("slurmd -G -N n2");
  runner.answers["/usr/sbin/slurmd -G -N n2"] = answer;
  auto look = ReadNodeJobs(runner, "n2");
  ASSERT_TRUE(look.ok());
  EXPECT_TRUE(look->devices.has_value());

  runner.answers.erase("/usr/sbin/slurmd -G -N n2");
  look = ReadNodeJobs(runner, "n2");
  ASSERT_TRUE(look.ok());
  EXPECT_FALSE(look->devices.has_value());
  EXPECT_THAT(look->devices_unread, HasSubstr("not found"));
}

// The GPUs' minor numbers are not their indexes: GPU 0 is /dev/nvidia1.
Snapshot TwoSwappedGpus() {
  Snapshot s;
  s.gpus = {GpuWithMinor(0, 1), GpuWithMinor(1, 0)};
  return s;
}

TEST(MapNodeJobs, IndexesBecomeGpusThroughTheirDeviceFiles) {
  ScriptedRunner runner = ClusterRunner();
  auto look = ReadNodeJobs(runner, "n2");
  ASSERT_TRUE(look.ok());
  const SlurmNode node = MapNodeJobs(*look, TwoSwappedGpus());
  EXPECT_EQ(node.name, "n2");
  EXPECT_EQ(node.gpu_map, "device files");
  EXPECT_TRUE(node.notes.empty());
  ASSERT_EQ(node.jobs.size(), 3u);
  EXPECT_EQ(node.jobs[0].name, "train");
  EXPECT_EQ(node.jobs[0].user, "root");
  EXPECT_EQ(node.jobs[0].state, "RUNNING");
  EXPECT_TRUE(node.jobs[0].start_time_unix_s.has_value());
  EXPECT_EQ(node.jobs[0].gres_indexes, std::vector<unsigned>{0});
  EXPECT_EQ(node.jobs[0].gpus, std::vector<unsigned>{1});  // /dev/nvidia0 is GPU 1
  EXPECT_EQ(node.jobs[1].gres_indexes, std::vector<unsigned>{1});
  EXPECT_EQ(node.jobs[1].gpus, std::vector<unsigned>{0});
  EXPECT_TRUE(node.jobs[2].gres_indexes.empty());
}

TEST(MapNodeJobs, WithoutSlurmdIndexKIsTheKthGpuByMinorNumber) {
  ScriptedRunner runner = ClusterRunner();
  auto look = ReadNodeJobs(runner, "n2");
  ASSERT_TRUE(look.ok());
  look->devices.reset();
  look->devices_unread = "slurmd: not found";
  const SlurmNode node = MapNodeJobs(*look, TwoSwappedGpus());
  EXPECT_EQ(node.gpu_map, "minor order");
  ASSERT_EQ(node.notes.size(), 1u);
  EXPECT_THAT(node.notes[0], HasSubstr("slurmd: not found"));
  EXPECT_EQ(node.jobs[0].gpus, std::vector<unsigned>{1});  // IDX 0: the lowest minor, GPU 1
  EXPECT_EQ(node.jobs[1].gpus, std::vector<unsigned>{0});
}

TEST(MapNodeJobs, AnIndexWithoutAGpuHereIsNamed) {
  ScriptedRunner runner = ClusterRunner();
  auto look = ReadNodeJobs(runner, "n2");
  ASSERT_TRUE(look.ok());
  Snapshot one;
  one.gpus = {GpuWithMinor(0, 0)};
  const SlurmNode node = MapNodeJobs(*look, one);
  EXPECT_EQ(node.jobs[0].gpus, std::vector<unsigned>{0});
  EXPECT_TRUE(node.jobs[1].gpus.empty());
  ASSERT_EQ(node.notes.size(), 1u);
  EXPECT_THAT(node.notes[0], HasSubstr("GRES index 1 matches no GPU of this server"));
}

TEST(HoldsNodeResources, RunningSuspendedAndCompletingJobsHoldTheirGpus) {
  Job j;
  for (const char* state : {"RUNNING", "SUSPENDED", "COMPLETING"}) {
    j.state = state;
    EXPECT_TRUE(HoldsNodeResources(j)) << state;
  }
  j.state = "COMPLETED";
  j.state_flags = {"COMPLETING"};  // v0.0.40's job_state array
  EXPECT_TRUE(HoldsNodeResources(j));
  j.state_flags.clear();
  EXPECT_FALSE(HoldsNodeResources(j));
  j.state = "PENDING";
  EXPECT_FALSE(HoldsNodeResources(j));
}

}  // namespace
}  // namespace gw::slurm
