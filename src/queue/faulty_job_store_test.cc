#include "queue/faulty_job_store.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <memory>

#include "queue/sqlite_job_store.h"

namespace gw::queue {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

class FaultyJobStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (std::filesystem::temp_directory_path() / "gw_faulty_store.XXXXXX").string();
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
    auto s = SqliteJobStore::Open(dir_ + "/queue.db");
    ASSERT_TRUE(s.ok()) << s.error().message;
    real_ = std::move(*s);
    faulty_ = std::make_unique<FaultyJobStore>(*real_);
  }
  void TearDown() override {
    faulty_.reset();
    real_.reset();
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  static Job Queued() {
    Job j;
    j.owner = {1000, 1000, "ann"};
    j.spec.argv = {"/bin/true"};
    j.spec.cwd = "/";
    return j;
  }

  std::string dir_;
  std::unique_ptr<SqliteJobStore> real_;
  std::unique_ptr<FaultyJobStore> faulty_;
};

TEST_F(FaultyJobStoreTest, TheNthWriteFailsAndChangesNothingTheOthersPass) {
  faulty_->FailNthWrite(2, StoreFault::kDiskFull);
  Result<JobId> a = faulty_->Insert(Queued());
  ASSERT_TRUE(a.ok());
  Job changed = Queued();
  changed.id = *a;
  changed.state = JobState::kHeld;
  Status second = faulty_->Update(changed);
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.error().code, kStoreUnwritable);
  EXPECT_THAT(second.error().message, StartsWith("queue storage not writable: no space left"));
  Result<std::optional<Job>> got = real_->Get(*a);
  ASSERT_TRUE(got.ok() && *got);
  EXPECT_EQ((*got)->state, JobState::kQueued);  // The refused write never reached it.
  EXPECT_TRUE(faulty_->Update(changed).ok());   // The third passes.
  EXPECT_EQ(faulty_->writes(), 3);
  EXPECT_EQ(faulty_->failed_writes(), 1);
}

TEST_F(FaultyJobStoreTest, EveryWriteFailsWithTheChosenCauseUntilHealed) {
  for (StoreFault f : {StoreFault::kReadOnly, StoreFault::kFsyncError}) {
    faulty_->FailEveryWrite(f);
    for (int i = 0; i < 3; ++i) {
      Result<JobId> r = faulty_->Insert(Queued());
      ASSERT_FALSE(r.ok());
      EXPECT_EQ(r.error().code, kStoreUnwritable);
      EXPECT_THAT(r.error().message, HasSubstr(StoreFaultCause(f)));
    }
    // Reads still work while writes fail.
    Result<std::vector<Job>> all = faulty_->List({});
    ASSERT_TRUE(all.ok());
    EXPECT_TRUE(all->empty());
  }
  EXPECT_EQ(StoreFaultCause(StoreFault::kReadOnly), "read-only file system");
  EXPECT_EQ(StoreFaultCause(StoreFault::kFsyncError), "I/O error");
  faulty_->Heal();
  Result<JobId> r = faulty_->Insert(Queued());
  ASSERT_TRUE(r.ok());
  Result<std::vector<Job>> all = real_->Active();
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(all->size(), 1u);
}

TEST_F(FaultyJobStoreTest, AFailedWriteInsideATransactionRollsBackTheOthers) {
  faulty_->FailNthWrite(2, StoreFault::kFsyncError);
  Status s = faulty_->Transaction([&]() -> Status {
    Result<JobId> a = faulty_->Insert(Queued());
    if (!a.ok()) return a.error();
    Result<JobId> b = faulty_->Insert(Queued());
    if (!b.ok()) return b.error();
    return Status::Ok();
  });
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().code, kStoreUnwritable);
  Result<std::vector<Job>> all = real_->List({});
  ASSERT_TRUE(all.ok());
  EXPECT_TRUE(all->empty());
}

}  // namespace
}  // namespace gw::queue
