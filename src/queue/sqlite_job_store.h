// SqliteJobStore: the real JobStore (job_store.h), one SQLite file holding
// every job the daemon has accepted, so a restarted daemon finds its queue
// and its running jobs.
//
// Durability: a write has reached the disk (WAL, synchronous=FULL) when the
// call that made it returns; a crash at any later moment loses nothing.
// Every Job field round-trips exactly, byte strings included (argv, env,
// paths and names may hold any byte but NUL, invalid UTF-8 too), and an
// unknown optional stays unknown.
//
// Write failures the disk causes (SQLITE_FULL, SQLITE_READONLY, SQLITE_IOERR*,
// SQLITE_CANTOPEN, or errno ENOSPC / EDQUOT / EROFS / EIO / EFBIG behind any
// other code) are code "unwritable" (kStoreUnwritable), message
// "queue storage not writable: <cause> (<path>: <what>)", the cause from the
// OS error ("no space left on device", "read-only file system", "I/O error",
// "disk quota exceeded", "file too large"). The connection stays usable
// after one: the failed statement changed nothing, and the next write is
// tried afresh once the disk recovers.
//
// The file's descriptors are close-on-exec: a job the daemon starts never
// inherits them.
//
// Threads: a SqliteJobStore is one SQLite connection and is not thread-safe;
// use it from one thread at a time. Several stores (threads or processes) may
// share a file: writers take turns, waiting up to kBusyTimeoutMs for each
// other.
#ifndef GPUWARDEN_QUEUE_SQLITE_JOB_STORE_H_
#define GPUWARDEN_QUEUE_SQLITE_JOB_STORE_H_

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/result.h"
#include "queue/job.h"
#include "queue/job_store.h"

struct sqlite3;
struct sqlite3_stmt;

namespace gw::queue {

// The connection's settings as SQLite reports them (not as they were asked
// for), for tests and diagnostics.
struct StorePragmas {
  std::string journal_mode;  // "wal".
  int synchronous = 0;       // 2 = FULL.
  bool foreign_keys = false;
  int busy_timeout_ms = 0;
  int wal_autocheckpoint_pages = 0;  // kWalCheckpointPages.
};

// The cause of a write failure the disk made, for the "unwritable" message:
// from the OS error `system_errno` when it is one of the disk's, else from
// the SQLite result code (primary or extended); nullopt when neither names a
// disk problem. Pure.
std::optional<std::string> UnwritableCause(int sqlite_code, int system_errno);

class SqliteJobStore final : public JobStore {
 public:
  // How long a write waits for another connection's write to finish before
  // it fails with code "store".
  static constexpr int kBusyTimeoutMs = 10'000;
  static constexpr int kWalCheckpointPages = 100;

  // The schema version this build writes; Open migrates older files to it.
  static int LatestSchemaVersion();

  // Opens or creates the database at `path`; its directory must exist.
  // The file is made mode 0600 (it holds users' environments); an existing
  // file with any other mode is changed to 0600. The connection runs in WAL
  // mode with synchronous=FULL, foreign keys on, kBusyTimeoutMs and a checkpoint
  // every kWalCheckpointPages.
  // An older schema is migrated, each step in its own transaction. Refused,
  // its contents left byte-for-byte as they were (only the mode is fixed):
  // a schema newer than LatestSchemaVersion(), and a SQLite file that belongs
  // to another program. Errors: code "store", the message names the path;
  // the same for a file that is not SQLite at all. A damaged file may open
  // and then fail the calls that reach the damage, with the same code.
  static Result<std::unique_ptr<SqliteJobStore>> Open(const std::string& path);

  SqliteJobStore(const SqliteJobStore&) = delete;
  SqliteJobStore& operator=(const SqliteJobStore&) = delete;
  ~SqliteJobStore() override;  // Closes the connection; nothing is lost if it never runs.

  // Stores a new job and returns its id; `job.id` is ignored. Ids increase
  // and are never reused, not even after a restart. (Inside a Transaction
  // that then rolls back, the id was never stored and may come again: tell
  // no one an id before the transaction commits.)
  // Errors: "invalid" (a string in argv, env or gpu_uuids holds a NUL),
  // "unwritable", "store".
  Result<JobId> Insert(Job job) override;

  // Replaces the whole stored job with id `job.id`.
  // Errors: "not_found", "invalid" (as Insert), "unwritable", "store".
  Status Update(const Job& job) override;

  // The job with this id, or nullopt when there is none.
  Result<std::optional<Job>> Get(JobId id) override;

  // Jobs matching `filter`, by ascending id unless filter.newest_first.
  Result<std::vector<Job>> List(const JobFilter& filter) override;

  // Jobs not yet ended (queued, held, starting, running), by ascending id.
  Result<std::vector<Job>> Active() override;

  // Runs `body`; the Store's writes inside it commit together when it
  // returns ok, and none of them do when it returns an error (which is then
  // returned). Nests: an inner Transaction that fails undoes only its own
  // writes. Writes by other connections wait until the outermost one ends.
  Status Transaction(const std::function<Status()>& body) override;

  // Decayed GPU-seconds per user, for fair share. Each job that ran adds
  //   spec.gpus * (end - start) * 0.5^((now - end) / half_life)
  // and each job still starting or running adds spec.gpus * (now - start),
  // undecayed. Jobs that ended more than 8 half-lives ago, never started, or
  // ended without a recorded end time add nothing. Times in the future count
  // as now. Users with no counted job are absent.
  // Errors: "invalid" (half_life_s not positive and finite), "store".
  Result<std::map<uid_t, double>> UsageGpuSeconds(int64_t now_unix_ms, double half_life_s) override;

  // The file's schema version (LatestSchemaVersion() once Open succeeded).
  int schema_version() const { return schema_version_; }
  const std::string& path() const { return path_; }

  Result<StorePragmas> Pragmas();

 private:
  SqliteJobStore(std::string path, sqlite3* db);

  Status Migrate();
  Status Exec(const char* sql, const char* what);
  Error SqlError(const std::string& what) const;
  Result<sqlite3_stmt*> Cached(sqlite3_stmt** slot, const std::string& sql);
  Result<std::vector<Job>> Query(sqlite3_stmt* stmt);

  std::string path_;
  sqlite3* db_ = nullptr;
  int schema_version_ = 0;
  int transaction_depth_ = 0;  // Nested Transaction calls in progress.
  sqlite3_stmt* insert_ = nullptr;
  sqlite3_stmt* update_ = nullptr;
  sqlite3_stmt* get_ = nullptr;
  sqlite3_stmt* usage_ = nullptr;
};

}  // namespace gw::queue

#endif  // GPUWARDEN_QUEUE_SQLITE_JOB_STORE_H_
