#include "core/slurm_lookup.h"

#include <gtest/gtest.h>

namespace gw {
namespace {

Snapshot WithJobs() {
  Snapshot s;
  s.slurm.emplace();
  s.slurm->name = "n2";
  SlurmJob a;
  a.id = "15";
  a.user = "alice";
  a.name = "train\x1b[31m";
  a.gres_indexes = {0, 1};
  a.gpus = {1, 0};
  SlurmJob b;
  b.id = "16";
  b.gres_indexes = {2};
  b.gpus = {2};
  s.slurm->jobs = {a, b};
  return s;
}

TEST(SlurmLookup, FindsJobsByIdAndByGpu) {
  const Snapshot s = WithJobs();
  ASSERT_NE(FindSlurmJob(s, "16"), nullptr);
  EXPECT_EQ(FindSlurmJob(s, "16")->gpus, std::vector<unsigned>{2});
  EXPECT_EQ(FindSlurmJob(s, "17"), nullptr);
  ASSERT_EQ(SlurmJobsOnGpu(s, 0).size(), 1u);
  EXPECT_EQ(SlurmJobsOnGpu(s, 0)[0]->id, "15");
  EXPECT_TRUE(SlurmJobsOnGpu(s, 3).empty());
  EXPECT_TRUE(SlurmAllocationsKnown(s));
}

TEST(SlurmLookup, AnUnreadSectionKnowsNoJob) {
  Snapshot s = WithJobs();
  s.slurm->unread = "squeue: no answer within 3000 ms";
  EXPECT_FALSE(SlurmAllocationsKnown(s));
  EXPECT_EQ(FindSlurmJob(s, "15"), nullptr);
  EXPECT_TRUE(SlurmJobsOnGpu(s, 0).empty());
  EXPECT_FALSE(SlurmAllocationsKnown(Snapshot{}));
}

TEST(SlurmLookup, DescribesAJobSanitisedAndShort) {
  const Snapshot s = WithJobs();
  const std::string a = DescribeSlurmJob(*FindSlurmJob(s, "15"));
  EXPECT_EQ(a.find('\x1b'), std::string::npos) << a;
  EXPECT_TRUE(a.starts_with("job 15 (alice, train")) << a;
  EXPECT_EQ(DescribeSlurmJob(*FindSlurmJob(s, "16")), "job 16");
  SlurmJob long_name;
  long_name.id = "9";
  long_name.name = std::string(300, 'x');
  EXPECT_LE(DescribeSlurmJob(long_name).size(), 60u);
}

}  // namespace
}  // namespace gw
