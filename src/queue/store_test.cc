#include "queue/sqlite_job_store.h"

#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sqlite3.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace gw::queue {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

class StoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (fs::temp_directory_path() / "gw_store_test.XXXXXX").string();
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
    path_ = dir_ + "/queue.db";
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

  std::unique_ptr<SqliteJobStore> OpenOk(const std::string& path) {
    Result<std::unique_ptr<SqliteJobStore>> s = SqliteJobStore::Open(path);
    EXPECT_TRUE(s.ok()) << (s.ok() ? "" : s.error().message);
    return s.ok() ? std::move(s).value() : nullptr;
  }

  std::string dir_;
  std::string path_;
};

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void WriteAll(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << bytes;
}

mode_t FileMode(const std::string& path) {
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) return 0;
  return st.st_mode & 07777;
}

// Runs `sql` on its own raw SQLite connection; the first column of the first
// row as text ("" when none).
std::string RawQuery(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  std::string out;
  if (sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READWRITE, nullptr) == SQLITE_OK) {
    sqlite3_stmt* stmt = nullptr;
    if (sqlite3_prepare_v2(db, sql.c_str(), -1, &stmt, nullptr) == SQLITE_OK) {
      if (sqlite3_step(stmt) == SQLITE_ROW && sqlite3_column_text(stmt, 0) != nullptr) {
        out = reinterpret_cast<const char*>(sqlite3_column_text(stmt, 0));
      }
    } else {
      ADD_FAILURE() << sql << ": " << sqlite3_errmsg(db);
    }
    sqlite3_finalize(stmt);
  }
  sqlite3_close(db);
  return out;
}

// EXPLAIN QUERY PLAN's details for `sql`, joined by "; ".
std::string QueryPlan(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  std::string out;
  if (sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) == SQLITE_OK) {
    sqlite3_stmt* stmt = nullptr;
    const std::string explain = "EXPLAIN QUERY PLAN " + sql;
    if (sqlite3_prepare_v2(db, explain.c_str(), -1, &stmt, nullptr) == SQLITE_OK) {
      while (sqlite3_step(stmt) == SQLITE_ROW) {
        if (const unsigned char* detail = sqlite3_column_text(stmt, 3)) {
          out += (out.empty() ? "" : "; ") + std::string(reinterpret_cast<const char*>(detail));
        }
      }
    } else {
      ADD_FAILURE() << sql << ": " << sqlite3_errmsg(db);
    }
    sqlite3_finalize(stmt);
  }
  sqlite3_close(db);
  return out;
}

// Every byte but NUL, and sequences that are not UTF-8.
std::string AwkwardBytes() {
  std::string s;
  for (int c = 1; c < 256; ++c) s.push_back(static_cast<char>(c));
  s += "\xff\xfe\xc0\x80\xed\xa0\x80\xf8\x88\x80\x80\x80\xe2\x82";  // Invalid UTF-8.
  return s;
}

Job FullJob() {
  Job j;
  j.id = 999;  // Ignored by Insert.
  j.owner = {1001, 2002,
             "b\xc3\xb6"
             "b\xff"};
  j.spec.name = "train\xfe";
  j.spec.argv = {"/usr/bin/python3", "", "--tag=\xff\xfe", AwkwardBytes(), "last"};
  j.spec.cwd =
      "/home/b\xf6"
      "b/proj";
  j.spec.env = {"PATH=/usr/bin", "EMPTY=", "BYTES=" + AwkwardBytes(), "NOEQUALS"};
  j.spec.umask = 0077;
  j.spec.gpus = 3;
  j.spec.vram_bytes = std::numeric_limits<uint64_t>::max();
  j.spec.max_util_pct = 0;  // Known zero, not unknown.
  j.spec.priority = -7;
  j.spec.window = TimeWindow{1320, 420};
  j.spec.after = {12, 3, 7};
  j.spec.nvlink = true;
  j.spec.time_limit_s = 86400;
  j.spec.preemptible = true;
  j.state = JobState::kFailed;
  j.submit_unix_ms = 1'700'000'000'123;
  j.start_unix_ms = 1'700'000'100'456;
  j.end_unix_ms = 1'700'000'200'789;
  j.gpu_indices = {3, 0, 2};
  j.gpu_uuids = {"GPU-cc", "GPU-aa", "GPU-bb"};
  j.supervisor_pid = 4242;
  j.supervisor_start_ticks = std::numeric_limits<uint64_t>::max() - 1;  // Above INT64_MAX.
  j.pid = 4343;
  j.pid_start_ticks = 0;  // Known zero.
  j.exit_code = -1;
  j.exit_signal = 9;
  j.end_reason = "vram_limit";
  j.end_detail = "used 81 GiB \xe2\x80\x94 limit \xff";
  j.peak_vram_bytes = 87'000'000'000ull;
  j.requeues = 4;
  j.stdout_path =
      "/home/b\xf6"
      "b/out\n.log";
  j.stderr_path = "";
  return j;
}

// Field by field, so a failure names the field. Keep in step with job.h.
void ExpectSameJob(const Job& a, const Job& b) {
  EXPECT_EQ(a.id, b.id);
  EXPECT_EQ(a.owner.uid, b.owner.uid);
  EXPECT_EQ(a.owner.gid, b.owner.gid);
  EXPECT_EQ(a.owner.user, b.owner.user);
  EXPECT_EQ(a.spec.name, b.spec.name);
  EXPECT_EQ(a.spec.argv, b.spec.argv);
  EXPECT_EQ(a.spec.cwd, b.spec.cwd);
  EXPECT_EQ(a.spec.env, b.spec.env);
  EXPECT_EQ(a.spec.umask, b.spec.umask);
  EXPECT_EQ(a.spec.gpus, b.spec.gpus);
  EXPECT_EQ(a.spec.vram_bytes, b.spec.vram_bytes);
  EXPECT_EQ(a.spec.max_util_pct, b.spec.max_util_pct);
  EXPECT_EQ(a.spec.priority, b.spec.priority);
  EXPECT_EQ(a.spec.window.has_value(), b.spec.window.has_value());
  if (a.spec.window && b.spec.window) {
    EXPECT_EQ(a.spec.window->start_min, b.spec.window->start_min);
    EXPECT_EQ(a.spec.window->end_min, b.spec.window->end_min);
  }
  EXPECT_EQ(a.spec.after, b.spec.after);
  EXPECT_EQ(a.spec.nvlink, b.spec.nvlink);
  EXPECT_EQ(a.spec.time_limit_s, b.spec.time_limit_s);
  EXPECT_EQ(a.spec.preemptible, b.spec.preemptible);
  EXPECT_EQ(a.state, b.state);
  EXPECT_EQ(a.submit_unix_ms, b.submit_unix_ms);
  EXPECT_EQ(a.start_unix_ms, b.start_unix_ms);
  EXPECT_EQ(a.end_unix_ms, b.end_unix_ms);
  EXPECT_EQ(a.gpu_indices, b.gpu_indices);
  EXPECT_EQ(a.gpu_uuids, b.gpu_uuids);
  EXPECT_EQ(a.supervisor_pid, b.supervisor_pid);
  EXPECT_EQ(a.supervisor_start_ticks, b.supervisor_start_ticks);
  EXPECT_EQ(a.pid, b.pid);
  EXPECT_EQ(a.pid_start_ticks, b.pid_start_ticks);
  EXPECT_EQ(a.exit_code, b.exit_code);
  EXPECT_EQ(a.exit_signal, b.exit_signal);
  EXPECT_EQ(a.end_reason, b.end_reason);
  EXPECT_EQ(a.end_detail, b.end_detail);
  EXPECT_EQ(a.peak_vram_bytes, b.peak_vram_bytes);
  EXPECT_EQ(a.requeues, b.requeues);
  EXPECT_EQ(a.stdout_path, b.stdout_path);
  EXPECT_EQ(a.stderr_path, b.stderr_path);
}

Job SimpleJob(uid_t uid, JobState state) {
  Job j;
  j.owner = {uid, uid, "u" + std::to_string(uid)};
  j.spec.argv = {"sleep", "1"};
  j.state = state;
  return j;
}

std::vector<JobId> Ids(const std::vector<Job>& jobs) {
  std::vector<JobId> ids;
  for (const Job& j : jobs) ids.push_back(j.id);
  return ids;
}

TEST_F(StoreTest, FullyPopulatedJobRoundTrips) {
  Job expected = FullJob();
  {
    auto store = OpenOk(path_);
    ASSERT_NE(store, nullptr);
    Result<JobId> id = store->Insert(expected);
    ASSERT_TRUE(id.ok()) << id.error().message;
    EXPECT_EQ(*id, 1);
    expected.id = *id;
    Result<std::optional<Job>> got = store->Get(*id);
    ASSERT_TRUE(got.ok()) << got.error().message;
    ASSERT_TRUE(got->has_value());
    ExpectSameJob(**got, expected);
  }
  // And from the file, by a new connection.
  auto store = OpenOk(path_);
  ASSERT_NE(store, nullptr);
  Result<std::optional<Job>> got = store->Get(expected.id);
  ASSERT_TRUE(got.ok() && got->has_value());
  ExpectSameJob(**got, expected);
}

TEST_F(StoreTest, MinimalJobRoundTripsWithUnknownsStillUnknown) {
  auto store = OpenOk(path_);
  ASSERT_NE(store, nullptr);
  Job expected;  // Defaults: every optional empty, every list empty.
  Result<JobId> id = store->Insert(expected);
  ASSERT_TRUE(id.ok()) << id.error().message;
  expected.id = *id;
  Result<std::optional<Job>> got = store->Get(*id);
  ASSERT_TRUE(got.ok() && got->has_value());
  ExpectSameJob(**got, expected);
  EXPECT_FALSE((*got)->spec.max_util_pct.has_value());
  EXPECT_FALSE((*got)->spec.window.has_value());
  EXPECT_FALSE((*got)->spec.time_limit_s.has_value());
  EXPECT_FALSE((*got)->start_unix_ms.has_value());
  EXPECT_FALSE((*got)->exit_code.has_value());
  EXPECT_FALSE((*got)->peak_vram_bytes.has_value());
  EXPECT_EQ((*got)->spec.umask, 022u);
  EXPECT_EQ((*got)->spec.gpus, 1u);
}

TEST_F(StoreTest, EmptyListAndListOfOneEmptyStringDiffer) {
  auto store = OpenOk(path_);
  ASSERT_NE(store, nullptr);
  Job none = SimpleJob(1, JobState::kQueued);
  none.spec.argv = {};
  Job one_empty = SimpleJob(1, JobState::kQueued);
  one_empty.spec.argv = {""};
  one_empty.spec.env = {"", ""};
  const JobId a = store->Insert(none).value();
  const JobId b = store->Insert(one_empty).value();
  EXPECT_EQ(store->Get(a).value()->spec.argv, std::vector<std::string>{});
  EXPECT_EQ(store->Get(b).value()->spec.argv, std::vector<std::string>{""});
  EXPECT_EQ(store->Get(b).value()->spec.env, (std::vector<std::string>{"", ""}));
}

TEST_F(StoreTest, ByteStringsAreStoredAsBlobsNotText) {
  auto store = OpenOk(path_);
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(store->Insert(FullJob()).ok());
  for (const char* column :
       {"argv", "env", "cwd", "name", "user", "gpu_uuids", "end_detail", "stdout_path"}) {
    EXPECT_EQ(RawQuery(path_, std::string("SELECT typeof(") + column + ") FROM jobs"), "blob")
        << column;
  }
}

TEST_F(StoreTest, NulInAListIsRefusedAndNothingIsStored) {
  auto store = OpenOk(path_);
  ASSERT_NE(store, nullptr);
  Job j = SimpleJob(1, JobState::kQueued);
  j.spec.env = {"A=1", std::string("B=x\0y", 5)};
  Result<JobId> id = store->Insert(j);
  ASSERT_FALSE(id.ok());
  EXPECT_EQ(id.error().code, "invalid");
  EXPECT_THAT(id.error().message, HasSubstr("env"));
  EXPECT_TRUE(store->List({}).value().empty());

  // Update is checked the same way, and the stored job stays as it was.
  const JobId good = store->Insert(SimpleJob(1, JobState::kQueued)).value();
  j.id = good;
  Status s = store->Update(j);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().code, "invalid");
  EXPECT_EQ(store->Get(good).value()->spec.env, std::vector<std::string>{});
}

TEST_F(StoreTest, IdsIncreaseAndAreNeverReusedAcrossReopens) {
  {
    auto store = OpenOk(path_);
    ASSERT_NE(store, nullptr);
    EXPECT_EQ(store->Insert(SimpleJob(1, JobState::kQueued)).value(), 1);
    EXPECT_EQ(store->Insert(SimpleJob(1, JobState::kQueued)).value(), 2);
    EXPECT_EQ(store->Insert(SimpleJob(1, JobState::kQueued)).value(), 3);
  }
  {
    auto store = OpenOk(path_);
    ASSERT_NE(store, nullptr);
    EXPECT_EQ(store->Insert(SimpleJob(1, JobState::kQueued)).value(), 4);
  }
  // Even once the newest rows are gone (a future purge), their ids stay used.
  RawQuery(path_, "DELETE FROM jobs WHERE id >= 3");
  EXPECT_EQ(RawQuery(path_, "SELECT count(*) FROM jobs"), "2");
  auto store = OpenOk(path_);
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(store->Insert(SimpleJob(1, JobState::kQueued)).value(), 5);
}

TEST_F(StoreTest, UpdateReplacesTheWholeRow) {
  auto store = OpenOk(path_);
  ASSERT_NE(store, nullptr);
  Job full = FullJob();
  full.id = store->Insert(full).value();
  const JobId other = store->Insert(SimpleJob(5, JobState::kQueued)).value();

  // Back to a minimal job: the optionals go back to unknown, lists empty.
  Job minimal;
  minimal.id = full.id;
  ASSERT_TRUE(store->Update(minimal).ok());
  ExpectSameJob(*store->Get(full.id).value(), minimal);

  // And to the full one again.
  ASSERT_TRUE(store->Update(full).ok());
  ExpectSameJob(*store->Get(full.id).value(), full);

  // The other row is untouched.
  EXPECT_EQ(store->Get(other).value()->owner.uid, 5u);
}

TEST_F(StoreTest, UpdateOfAMissingJobIsNotFound) {
  auto store = OpenOk(path_);
  ASSERT_NE(store, nullptr);
  Job j = SimpleJob(1, JobState::kQueued);
  j.id = 77;
  Status s = store->Update(j);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().code, "not_found");
  EXPECT_THAT(s.error().message, HasSubstr("77"));
  EXPECT_TRUE(store->List({}).value().empty());
}

TEST_F(StoreTest, GetOfAMissingJobIsNullopt) {
  auto store = OpenOk(path_);
  ASSERT_NE(store, nullptr);
  Result<std::optional<Job>> got = store->Get(1);
  ASSERT_TRUE(got.ok());
  EXPECT_FALSE(got->has_value());
}

TEST_F(StoreTest, ListFiltersByUidStateAndLimitInEitherOrder) {
  auto store = OpenOk(path_);
  ASSERT_NE(store, nullptr);
  // ids 1..6
  ASSERT_TRUE(store->Insert(SimpleJob(100, JobState::kQueued)).ok());     // 1
  ASSERT_TRUE(store->Insert(SimpleJob(200, JobState::kRunning)).ok());    // 2
  ASSERT_TRUE(store->Insert(SimpleJob(100, JobState::kSucceeded)).ok());  // 3
  ASSERT_TRUE(store->Insert(SimpleJob(100, JobState::kRunning)).ok());    // 4
  ASSERT_TRUE(store->Insert(SimpleJob(200, JobState::kHeld)).ok());       // 5
  ASSERT_TRUE(store->Insert(SimpleJob(100, JobState::kCancelled)).ok());  // 6

  EXPECT_EQ(Ids(store->List({}).value()), (std::vector<JobId>{1, 2, 3, 4, 5, 6}));
  JobFilter f;
  f.newest_first = true;
  EXPECT_EQ(Ids(store->List(f).value()), (std::vector<JobId>{6, 5, 4, 3, 2, 1}));

  f = {};
  f.uid = 100;
  EXPECT_EQ(Ids(store->List(f).value()), (std::vector<JobId>{1, 3, 4, 6}));
  f.states = {JobState::kRunning, JobState::kQueued};
  EXPECT_EQ(Ids(store->List(f).value()), (std::vector<JobId>{1, 4}));
  f.uid.reset();
  EXPECT_EQ(Ids(store->List(f).value()), (std::vector<JobId>{1, 2, 4}));
  f.limit = 2;
  EXPECT_EQ(Ids(store->List(f).value()), (std::vector<JobId>{1, 2}));
  f.newest_first = true;
  EXPECT_EQ(Ids(store->List(f).value()), (std::vector<JobId>{4, 2}));
  f.limit = 0;
  EXPECT_TRUE(store->List(f).value().empty());
  f.limit = std::numeric_limits<size_t>::max();  // Not wrapped to "no limit" by accident.
  EXPECT_EQ(Ids(store->List(f).value()), (std::vector<JobId>{4, 2, 1}));
  f = {};
  f.uid = 300;
  EXPECT_TRUE(store->List(f).value().empty());
}

TEST_F(StoreTest, ActiveIsEveryJobNotYetEndedInIdOrder) {
  auto store = OpenOk(path_);
  ASSERT_NE(store, nullptr);
  for (JobState s : {JobState::kSucceeded, JobState::kRunning, JobState::kQueued, JobState::kFailed,
                     JobState::kStarting, JobState::kCancelled, JobState::kHeld, JobState::kLost}) {
    ASSERT_TRUE(store->Insert(SimpleJob(1, s)).ok());
  }
  Result<std::vector<Job>> active = store->Active();
  ASSERT_TRUE(active.ok());
  EXPECT_EQ(Ids(*active), (std::vector<JobId>{2, 3, 5, 7}));
  EXPECT_EQ((*active)[0].state, JobState::kRunning);
  EXPECT_EQ((*active)[1].state, JobState::kQueued);
  EXPECT_EQ((*active)[2].state, JobState::kStarting);
  EXPECT_EQ((*active)[3].state, JobState::kHeld);
}

TEST_F(StoreTest, TransactionCommitsAllWritesTogether) {
  auto store = OpenOk(path_);
  auto reader = OpenOk(path_);
  ASSERT_NE(store, nullptr);
  ASSERT_NE(reader, nullptr);
  Job first = SimpleJob(1, JobState::kQueued);
  first.id = store->Insert(first).value();

  Status s = store->Transaction([&]() -> Status {
    first.state = JobState::kRunning;
    if (Status u = store->Update(first); !u.ok()) return u;
    if (Result<JobId> id = store->Insert(SimpleJob(2, JobState::kQueued)); !id.ok()) {
      return id.error();
    }
    // Not yet visible to another connection: all or nothing.
    EXPECT_EQ(reader->List({}).value().size(), 1u);
    EXPECT_EQ(reader->Get(first.id).value()->state, JobState::kQueued);
    return Status::Ok();
  });
  ASSERT_TRUE(s.ok()) << s.error().message;
  EXPECT_EQ(reader->List({}).value().size(), 2u);
  EXPECT_EQ(reader->Get(first.id).value()->state, JobState::kRunning);
}

TEST_F(StoreTest, TransactionRollsBackWhenTheBodyFails) {
  auto store = OpenOk(path_);
  ASSERT_NE(store, nullptr);
  Job first = SimpleJob(1, JobState::kQueued);
  first.id = store->Insert(first).value();

  Status s = store->Transaction([&]() -> Status {
    first.state = JobState::kRunning;
    EXPECT_TRUE(store->Update(first).ok());
    EXPECT_TRUE(store->Insert(SimpleJob(2, JobState::kQueued)).ok());
    Job missing = SimpleJob(3, JobState::kQueued);
    missing.id = 999;
    return store->Update(missing);  // not_found: the whole pass is undone.
  });
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().code, "not_found");
  EXPECT_EQ(store->List({}).value().size(), 1u);
  EXPECT_EQ(store->Get(first.id).value()->state, JobState::kQueued);

  // The store is usable afterwards, in and out of transactions.
  EXPECT_TRUE(store->Transaction([&] { return store->Update(first); }).ok());
  EXPECT_EQ(store->Get(first.id).value()->state, JobState::kRunning);
}

TEST_F(StoreTest, NestedTransactionFailureUndoesOnlyItsOwnWrites) {
  auto store = OpenOk(path_);
  ASSERT_NE(store, nullptr);
  Status s = store->Transaction([&]() -> Status {
    EXPECT_TRUE(store->Insert(SimpleJob(1, JobState::kQueued)).ok());
    Status inner = store->Transaction([&]() -> Status {
      EXPECT_TRUE(store->Insert(SimpleJob(2, JobState::kQueued)).ok());
      return MakeError("test", "inner fails");
    });
    EXPECT_FALSE(inner.ok());
    Status inner_ok = store->Transaction([&]() -> Status {
      return store->Insert(SimpleJob(3, JobState::kQueued)).ok() ? Status::Ok()
                                                                 : MakeError("test", "insert");
    });
    EXPECT_TRUE(inner_ok.ok());
    return Status::Ok();
  });
  ASSERT_TRUE(s.ok()) << s.error().message;
  Result<std::vector<Job>> jobs = store->List({});
  ASSERT_TRUE(jobs.ok());
  std::vector<uid_t> uids;
  for (const Job& j : *jobs) uids.push_back(j.owner.uid);
  EXPECT_EQ(uids, (std::vector<uid_t>{1, 3}));
}

TEST_F(StoreTest, ACommittedInsertSurvivesAProcessThatDiesWithoutClosing) {
  Job expected = FullJob();
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    // The child opens, inserts and dies at once: no destructor, no close, no
    // checkpoint. Whatever Insert promised must already be on disk.
    Result<std::unique_ptr<SqliteJobStore>> s = SqliteJobStore::Open(path_);
    if (!s.ok()) _exit(2);
    if (!(*s)->Insert(expected).ok()) _exit(3);
    _exit(0);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  ASSERT_EQ(WEXITSTATUS(status), 0);
  // It really died mid-flight: its write-ahead log was never checkpointed away.
  ASSERT_TRUE(fs::exists(path_ + "-wal"));
  EXPECT_GT(fs::file_size(path_ + "-wal"), 0u);

  auto store = OpenOk(path_);
  ASSERT_NE(store, nullptr);
  Result<std::optional<Job>> got = store->Get(1);
  ASSERT_TRUE(got.ok() && got->has_value());
  expected.id = 1;
  ExpectSameJob(**got, expected);
}

TEST_F(StoreTest, DestroyingWithoutCloseAndReopeningKeepsEverything) {
  auto store = OpenOk(path_);
  ASSERT_NE(store, nullptr);
  const JobId id = store->Insert(SimpleJob(7, JobState::kRunning)).value();
  store.reset();
  store = OpenOk(path_);
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(store->Get(id).value().has_value());
  EXPECT_EQ(store->Get(id).value()->owner.uid, 7u);
}

TEST_F(StoreTest, AWriteIsVisibleToAnotherConnectionAsSoonAsItReturns) {
  auto writer = OpenOk(path_);
  auto early = OpenOk(path_);  // Opened before the write.
  ASSERT_NE(writer, nullptr);
  ASSERT_NE(early, nullptr);
  ASSERT_TRUE(early->List({}).value().empty());
  const JobId id = writer->Insert(SimpleJob(9, JobState::kQueued)).value();
  auto late = OpenOk(path_);  // Opened after.
  ASSERT_NE(late, nullptr);
  EXPECT_TRUE(early->Get(id).value().has_value());
  EXPECT_TRUE(late->Get(id).value().has_value());
  EXPECT_EQ(RawQuery(path_, "SELECT count(*) FROM jobs"), "1");
}

TEST_F(StoreTest, ConnectionUsesWalSynchronousFullForeignKeysAndBusyTimeout) {
  auto store = OpenOk(path_);
  ASSERT_NE(store, nullptr);
  Result<StorePragmas> p = store->Pragmas();
  ASSERT_TRUE(p.ok()) << p.error().message;
  EXPECT_EQ(p->journal_mode, "wal");
  EXPECT_EQ(p->synchronous, 2);  // FULL.
  EXPECT_TRUE(p->foreign_keys);
  EXPECT_EQ(p->busy_timeout_ms, SqliteJobStore::kBusyTimeoutMs);
  EXPECT_EQ(p->wal_autocheckpoint_pages, SqliteJobStore::kWalCheckpointPages);
  // WAL is a property of the file: another connection sees it too.
  EXPECT_EQ(RawQuery(path_, "PRAGMA journal_mode"), "wal");
}

TEST_F(StoreTest, SchemaVersionIsTheLatestAndMarkedInTheFile) {
  auto store = OpenOk(path_);
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(store->schema_version(), SqliteJobStore::LatestSchemaVersion());
  EXPECT_GE(SqliteJobStore::LatestSchemaVersion(), 1);
  EXPECT_EQ(RawQuery(path_, "PRAGMA user_version"),
            std::to_string(SqliteJobStore::LatestSchemaVersion()));
  EXPECT_EQ(RawQuery(path_, "PRAGMA application_id"), std::to_string(0x47575144));
  // The indexes the daemon's queries need.
  EXPECT_EQ(RawQuery(path_,
                     "SELECT count(*) FROM sqlite_schema WHERE type = 'index' AND "
                     "name IN ('jobs_by_state', 'jobs_by_end')"),
            "2");
  // A waiting job is not in jobs_by_end: a submit writes one index page less.
  EXPECT_EQ(RawQuery(path_,
                     "SELECT sql LIKE '%WHERE end_unix_ms IS NOT NULL%' FROM sqlite_schema "
                     "WHERE name = 'jobs_by_end'"),
            "1");
  store.reset();
  store = OpenOk(path_);  // Reopening an up-to-date file changes nothing.
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(store->schema_version(), SqliteJobStore::LatestSchemaVersion());
}

TEST_F(StoreTest, AVersion1FileIsMigratedWithItsJobs) {
  JobId id = 0;
  {
    auto store = OpenOk(path_);
    ASSERT_NE(store, nullptr);
    Job ended = SimpleJob(1, JobState::kSucceeded);
    ended.end_unix_ms = 5000;
    Result<JobId> inserted = store->Insert(ended);
    ASSERT_TRUE(inserted.ok()) << inserted.error().message;
    id = *inserted;
  }
  // Back to schema 1's indexes, as a file written by an older daemon.
  RawQuery(path_, "DROP INDEX jobs_by_end");
  RawQuery(path_, "CREATE INDEX jobs_by_uid ON jobs(uid)");
  RawQuery(path_, "CREATE INDEX jobs_by_end ON jobs(end_unix_ms)");
  RawQuery(path_, "PRAGMA user_version = 1");
  ASSERT_EQ(RawQuery(path_, "PRAGMA user_version"), "1");

  auto store = OpenOk(path_);
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(store->schema_version(), SqliteJobStore::LatestSchemaVersion());
  EXPECT_EQ(RawQuery(path_, "SELECT count(*) FROM sqlite_schema WHERE name = 'jobs_by_uid'"), "0");
  EXPECT_EQ(RawQuery(path_,
                     "SELECT sql LIKE '%WHERE end_unix_ms IS NOT NULL%' FROM sqlite_schema "
                     "WHERE name = 'jobs_by_end'"),
            "1");
  Result<std::optional<Job>> job = store->Get(id);
  ASSERT_TRUE(job.ok()) << job.error().message;
  ASSERT_TRUE(job->has_value());
  EXPECT_EQ((*job)->end_unix_ms, std::optional<int64_t>(5000));
  // The usage query's ended half still reads through the (partial) index.
  EXPECT_THAT(
      QueryPlan(path_,
                "SELECT uid FROM jobs WHERE end_unix_ms >= ?1 AND start_unix_ms IS NOT NULL"),
      HasSubstr("jobs_by_end"));
}

TEST_F(StoreTest, NewFilesAreMode0600WhateverTheUmask) {
  const mode_t old = umask(0);
  auto store = OpenOk(path_);
  umask(old);
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(store->Insert(SimpleJob(1, JobState::kQueued)).ok());
  EXPECT_EQ(FileMode(path_), 0600u);
  ASSERT_TRUE(fs::exists(path_ + "-wal"));
  EXPECT_EQ(FileMode(path_ + "-wal"), 0600u);
  EXPECT_EQ(FileMode(path_ + "-shm"), 0600u);
}

TEST_F(StoreTest, TheFilesDescriptorsAreNotInheritedByJobs) {
  // The daemon forks and execs jobs; the store holds other users'
  // environments, so its descriptors must close on exec.
  auto store = OpenOk(path_);
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(store->Insert(SimpleJob(1, JobState::kQueued)).ok());
  int seen = 0;
  for (const fs::directory_entry& e : fs::directory_iterator("/proc/self/fd")) {
    std::error_code ec;
    const fs::path target = fs::read_symlink(e.path(), ec);
    if (ec || target.string().rfind(path_, 0) != 0) continue;
    const int fd = std::stoi(e.path().filename().string());
    const int flags = fcntl(fd, F_GETFD);
    ASSERT_GE(flags, 0);
    EXPECT_TRUE(flags & FD_CLOEXEC) << target;
    ++seen;
  }
  EXPECT_GE(seen, 2);  // The database and its write-ahead log, at least.
}

TEST_F(StoreTest, AnExistingWorldReadableStoreIsMade0600) {
  { ASSERT_NE(OpenOk(path_), nullptr); }
  ASSERT_EQ(chmod(path_.c_str(), 0644), 0);
  auto store = OpenOk(path_);
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(FileMode(path_), 0600u);
  EXPECT_EQ(FileMode(path_ + "-wal"), 0600u);
}

TEST_F(StoreTest, ANewerSchemaIsRefusedAndTheFileLeftUntouched) {
  {
    auto store = OpenOk(path_);
    ASSERT_NE(store, nullptr);
    ASSERT_TRUE(store->Insert(FullJob()).ok());
  }
  const int newer = SqliteJobStore::LatestSchemaVersion() + 1;
  RawQuery(path_, "PRAGMA user_version = " + std::to_string(newer));
  ASSERT_EQ(RawQuery(path_, "PRAGMA user_version"), std::to_string(newer));
  ASSERT_FALSE(fs::exists(path_ + "-wal"));  // Every connection closed cleanly.
  const std::string before = ReadAll(path_);
  ASSERT_FALSE(before.empty());

  Result<std::unique_ptr<SqliteJobStore>> s = SqliteJobStore::Open(path_);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().code, "store");
  EXPECT_THAT(s.error().message, HasSubstr(path_));
  EXPECT_THAT(s.error().message, HasSubstr("newer"));
  EXPECT_THAT(s.error().message, HasSubstr("version " + std::to_string(newer)));
  EXPECT_EQ(ReadAll(path_), before);
  EXPECT_FALSE(fs::exists(path_ + "-wal"));
}

TEST_F(StoreTest, AnotherProgramsDatabaseIsRefusedAndLeftUntouched) {
  {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(path_.c_str(), &db), SQLITE_OK);
    ASSERT_EQ(
        sqlite3_exec(db, "CREATE TABLE photos(id INTEGER, data BLOB)", nullptr, nullptr, nullptr),
        SQLITE_OK);
    sqlite3_close(db);
  }
  chmod(path_.c_str(), 0600);
  const std::string before = ReadAll(path_);
  Result<std::unique_ptr<SqliteJobStore>> s = SqliteJobStore::Open(path_);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().code, "store");
  EXPECT_THAT(s.error().message, HasSubstr(path_));
  EXPECT_THAT(s.error().message, HasSubstr("another program"));
  EXPECT_EQ(ReadAll(path_), before);
}

TEST_F(StoreTest, ANonSqliteFileIsAnErrorNamingThePath) {
  std::string garbage;
  for (int i = 0; i < 4096; ++i) garbage += "this is not a database\n";
  WriteAll(path_, garbage);
  Result<std::unique_ptr<SqliteJobStore>> s = SqliteJobStore::Open(path_);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().code, "store");
  EXPECT_THAT(s.error().message, HasSubstr(path_));
  EXPECT_THAT(s.error().message, HasSubstr("not a database"));
  EXPECT_EQ(ReadAll(path_), garbage);
}

TEST_F(StoreTest, ADamagedStoreGivesErrorsNamingThePathNotACrash) {
  {
    auto store = OpenOk(path_);
    ASSERT_NE(store, nullptr);
    for (int i = 0; i < 200; ++i) ASSERT_TRUE(store->Insert(FullJob()).ok());
  }
  // Overwrite everything after the first page (the header stays valid).
  std::string bytes = ReadAll(path_);
  ASSERT_GT(bytes.size(), 8192u);
  for (size_t i = 4096; i < bytes.size(); ++i) bytes[i] = static_cast<char>((i * 131) & 0xff);
  WriteAll(path_, bytes);

  Result<std::unique_ptr<SqliteJobStore>> s = SqliteJobStore::Open(path_);
  if (!s.ok()) {
    EXPECT_EQ(s.error().code, "store");
    EXPECT_THAT(s.error().message, HasSubstr(path_));
    return;
  }
  Result<std::vector<Job>> jobs = (*s)->List({});
  ASSERT_FALSE(jobs.ok());
  EXPECT_EQ(jobs.error().code, "store");
  EXPECT_THAT(jobs.error().message, HasSubstr(path_));
}

TEST_F(StoreTest, AMissingDirectoryIsAnErrorNamingThePath) {
  const std::string path = dir_ + "/no/such/dir/queue.db";
  Result<std::unique_ptr<SqliteJobStore>> s = SqliteJobStore::Open(path);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().code, "store");
  EXPECT_THAT(s.error().message, HasSubstr(path));
}

TEST_F(StoreTest, ManyConnectionsInsertingAtOnceGetDistinctIds) {
  // The daemon uses one connection; this shows that busy handling is right
  // when there are more (a second daemon refused late, a repair tool), from
  // creating the file onwards.
  constexpr int kThreads = 50;
  constexpr int kPerThread = 10;
  std::vector<std::vector<JobId>> ids(kThreads);
  std::vector<std::string> errors(kThreads);
  std::atomic<int> ready{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      ++ready;
      while (ready.load() < kThreads) std::this_thread::yield();
      Result<std::unique_ptr<SqliteJobStore>> s = SqliteJobStore::Open(path_);
      if (!s.ok()) {
        errors[t] = s.error().message;
        return;
      }
      for (int i = 0; i < kPerThread; ++i) {
        Result<JobId> id = (*s)->Insert(SimpleJob(static_cast<uid_t>(t), JobState::kQueued));
        if (!id.ok()) {
          errors[t] = id.error().message;
          return;
        }
        ids[t].push_back(*id);
      }
    });
  }
  for (std::thread& th : threads) th.join();
  std::set<JobId> all;
  for (int t = 0; t < kThreads; ++t) {
    EXPECT_EQ(errors[t], "") << "thread " << t;
    all.insert(ids[t].begin(), ids[t].end());
    // Each connection's own ids increase.
    EXPECT_TRUE(std::is_sorted(ids[t].begin(), ids[t].end()));
  }
  EXPECT_EQ(all.size(), static_cast<size_t>(kThreads * kPerThread));
  auto store = OpenOk(path_);
  ASSERT_NE(store, nullptr);
  Result<std::vector<Job>> jobs = store->List({});
  ASSERT_TRUE(jobs.ok());
  EXPECT_EQ(jobs->size(), static_cast<size_t>(kThreads * kPerThread));
  EXPECT_EQ(*all.begin(), 1);
  EXPECT_EQ(*all.rbegin(), kThreads * kPerThread);
}

// Usage: now = 1'000'000'000 s; half-life 3600 s.
constexpr int64_t kNow = 1'000'000'000'000;
constexpr double kHalfLife = 3600;

Job RanJob(uid_t uid, unsigned gpus, std::optional<int64_t> start_ms, std::optional<int64_t> end_ms,
           JobState state) {
  Job j = SimpleJob(uid, state);
  j.spec.gpus = gpus;
  j.start_unix_ms = start_ms;
  j.end_unix_ms = end_ms;
  return j;
}

TEST_F(StoreTest, UsageDecaysByHalfLife) {
  auto store = OpenOk(path_);
  ASSERT_NE(store, nullptr);
  // Ended just now: 2 GPUs x 100 s, full weight.
  ASSERT_TRUE(store->Insert(RanJob(1, 2, kNow - 100'000, kNow, JobState::kSucceeded)).ok());
  // Ended one half-life ago: 1 GPU x 1000 s, half weight.
  ASSERT_TRUE(
      store->Insert(RanJob(2, 1, kNow - 3'600'000 - 1'000'000, kNow - 3'600'000, JobState::kFailed))
          .ok());
  // Ended three half-lives ago: 4 GPUs x 10 s, weight 1/8.
  ASSERT_TRUE(store
                  ->Insert(RanJob(2, 4, kNow - 3 * 3'600'000 - 10'000, kNow - 3 * 3'600'000,
                                  JobState::kCancelled))
                  .ok());
  // Running: 3 GPUs since 60 s ago, undecayed.
  ASSERT_TRUE(store->Insert(RanJob(3, 3, kNow - 60'000, std::nullopt, JobState::kRunning)).ok());
  // Exactly eight half-lives ago still counts; just beyond does not.
  ASSERT_TRUE(store
                  ->Insert(RanJob(4, 1, kNow - 8 * 3'600'000 - 256'000, kNow - 8 * 3'600'000,
                                  JobState::kSucceeded))
                  .ok());
  ASSERT_TRUE(store
                  ->Insert(RanJob(5, 8, kNow - 9 * 3'600'000, kNow - 8 * 3'600'000 - 1,
                                  JobState::kSucceeded))
                  .ok());

  Result<std::map<uid_t, double>> usage = store->UsageGpuSeconds(kNow, kHalfLife);
  ASSERT_TRUE(usage.ok()) << usage.error().message;
  EXPECT_DOUBLE_EQ(usage->at(1), 200.0);
  EXPECT_DOUBLE_EQ(usage->at(2), 500.0 + 40.0 / 8);
  EXPECT_DOUBLE_EQ(usage->at(3), 180.0);
  EXPECT_DOUBLE_EQ(usage->at(4), 1.0);  // 256 s / 2^8.
  EXPECT_EQ(usage->count(5), 0u);
  EXPECT_EQ(usage->size(), 4u);
}

TEST_F(StoreTest, UsageIgnoresJobsThatNeverRanOrHaveNoEndAndClampsTheFuture) {
  auto store = OpenOk(path_);
  ASSERT_NE(store, nullptr);
  // Queued, and cancelled before starting: nothing.
  ASSERT_TRUE(store->Insert(RanJob(1, 2, std::nullopt, std::nullopt, JobState::kQueued)).ok());
  ASSERT_TRUE(store->Insert(RanJob(1, 2, std::nullopt, kNow, JobState::kCancelled)).ok());
  // Lost with no end time recorded: charging it until forever would be wrong.
  ASSERT_TRUE(store->Insert(RanJob(2, 2, kNow - 1000, std::nullopt, JobState::kLost)).ok());
  // Ends "in the future" (a clock step): counts up to now, full weight.
  ASSERT_TRUE(store->Insert(RanJob(3, 1, kNow - 10'000, kNow + 50'000, JobState::kSucceeded)).ok());
  // Starts in the future while running: nothing yet, but the user is known.
  ASSERT_TRUE(store->Insert(RanJob(4, 1, kNow + 10'000, std::nullopt, JobState::kStarting)).ok());
  // No GPUs: no GPU-seconds.
  ASSERT_TRUE(store->Insert(RanJob(5, 0, kNow - 10'000, kNow, JobState::kSucceeded)).ok());

  Result<std::map<uid_t, double>> usage = store->UsageGpuSeconds(kNow, kHalfLife);
  ASSERT_TRUE(usage.ok()) << usage.error().message;
  EXPECT_EQ(usage->count(1), 0u);
  EXPECT_EQ(usage->count(2), 0u);
  EXPECT_DOUBLE_EQ(usage->at(3), 10.0);
  EXPECT_DOUBLE_EQ(usage->at(4), 0.0);
  EXPECT_DOUBLE_EQ(usage->at(5), 0.0);
}

TEST_F(StoreTest, UsageNeedsAPositiveHalfLife) {
  auto store = OpenOk(path_);
  ASSERT_NE(store, nullptr);
  for (double h : {0.0, -1.0, std::nan(""), std::numeric_limits<double>::infinity()}) {
    Result<std::map<uid_t, double>> usage = store->UsageGpuSeconds(kNow, h);
    ASSERT_FALSE(usage.ok()) << h;
    EXPECT_EQ(usage.error().code, "invalid");
  }
  // A huge half-life reaches back to the epoch without overflowing.
  ASSERT_TRUE(store->Insert(RanJob(1, 1, 0, 1000, JobState::kSucceeded)).ok());
  Result<std::map<uid_t, double>> usage = store->UsageGpuSeconds(kNow, 1e300);
  ASSERT_TRUE(usage.ok());
  EXPECT_DOUBLE_EQ(usage->at(1), 1.0);
}

TEST(UnwritableCause, NamesTheDiskProblemFromErrnoThenFromTheSqliteCode) {
  EXPECT_EQ(UnwritableCause(SQLITE_FULL, ENOSPC), "no space left on device");
  EXPECT_EQ(UnwritableCause(SQLITE_FULL, 0), "no space left on device");
  EXPECT_EQ(UnwritableCause(SQLITE_IOERR_WRITE, EDQUOT), "disk quota exceeded");
  EXPECT_EQ(UnwritableCause(SQLITE_IOERR_FSYNC, EIO), "I/O error");
  EXPECT_EQ(UnwritableCause(SQLITE_IOERR_FSYNC, 0), "I/O error");
  EXPECT_EQ(UnwritableCause(SQLITE_READONLY_DBMOVED, 0), "read-only file system");
  EXPECT_EQ(UnwritableCause(SQLITE_IOERR_WRITE, EROFS), "read-only file system");
  EXPECT_EQ(UnwritableCause(SQLITE_IOERR_WRITE, EFBIG), "file too large");
  EXPECT_EQ(UnwritableCause(SQLITE_CANTOPEN, 0), "cannot open the file");
  EXPECT_EQ(UnwritableCause(SQLITE_CONSTRAINT, 0), std::nullopt);
  EXPECT_EQ(UnwritableCause(SQLITE_BUSY, 0), std::nullopt);
}

// Lowers this process's file-size limit (RLIMIT_FSIZE) for its lifetime, so
// that a write past `bytes` fails with EFBIG (SIGXFSZ ignored meanwhile):
// a disk that refuses to grow a file, without root.
class FileSizeLimit {
 public:
  explicit FileSizeLimit(rlim_t bytes) {
    getrlimit(RLIMIT_FSIZE, &old_);
    old_handler_ = signal(SIGXFSZ, SIG_IGN);
    rlimit lowered = old_;
    lowered.rlim_cur = bytes;
    ok_ = setrlimit(RLIMIT_FSIZE, &lowered) == 0;
  }
  ~FileSizeLimit() {
    setrlimit(RLIMIT_FSIZE, &old_);
    signal(SIGXFSZ, old_handler_);
  }
  bool ok() const { return ok_; }

 private:
  rlimit old_{};
  sighandler_t old_handler_ = SIG_DFL;
  bool ok_ = false;
};

uintmax_t SizeOr0(const std::string& path) {
  std::error_code ec;
  const uintmax_t n = fs::file_size(path, ec);
  return ec ? 0 : n;
}

TEST_F(StoreTest, AWriteTheDiskRefusesIsUnwritableChangesNothingAndTheNextOneWorks) {
  std::unique_ptr<SqliteJobStore> store = OpenOk(path_);
  ASSERT_NE(store, nullptr);
  Job small = FullJob();
  Result<JobId> first = store->Insert(small);
  ASSERT_TRUE(first.ok());
  Job big = FullJob();
  big.spec.env.push_back("BIG=" + std::string(4 << 20, 'x'));  // Must grow the WAL.
  {
    const uintmax_t largest = std::max({SizeOr0(path_), SizeOr0(path_ + "-wal"), uintmax_t{1}});
    FileSizeLimit limit(static_cast<rlim_t>(largest + 65536));
    ASSERT_TRUE(limit.ok());
    Result<JobId> refused = store->Insert(big);
    ASSERT_FALSE(refused.ok());
    EXPECT_EQ(refused.error().code, kStoreUnwritable);
    EXPECT_THAT(refused.error().message,
                ::testing::StartsWith("queue storage not writable: file too large"));
    EXPECT_THAT(refused.error().message, HasSubstr(path_));
    // An update of the same size fails the same way and leaves the row alone.
    Job grown = small;
    grown.id = *first;
    grown.spec.env = big.spec.env;
    Status st = store->Update(grown);
    ASSERT_FALSE(st.ok());
    EXPECT_EQ(st.error().code, kStoreUnwritable);
  }
  // The disk "recovered": the same connection writes again.
  Result<std::vector<Job>> before = store->List({});
  ASSERT_TRUE(before.ok());
  ASSERT_EQ(before->size(), 1u);
  EXPECT_EQ(before->front().spec.env, small.spec.env);
  Result<JobId> again = store->Insert(big);
  ASSERT_TRUE(again.ok()) << again.error().message;
  EXPECT_GT(*again, *first);
  Result<std::optional<Job>> got = store->Get(*again);
  ASSERT_TRUE(got.ok() && *got);
  EXPECT_EQ((*got)->spec.env, big.spec.env);
  // And a fresh connection sees both: nothing half-written stayed behind.
  store.reset();
  std::unique_ptr<SqliteJobStore> reopened = OpenOk(path_);
  ASSERT_NE(reopened, nullptr);
  Result<std::vector<Job>> all = reopened->List({});
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(all->size(), 2u);
}

}  // namespace
}  // namespace gw::queue
