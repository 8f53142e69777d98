// The queue's durable job store: one SQLite file holding every job the daemon
// has accepted, so a restarted daemon finds its queue and its running jobs.
//
// Durability: a write has reached the disk (WAL, synchronous=FULL) when the
// call that made it returns; a crash at any later moment loses nothing.
// Every Job field round-trips exactly, byte strings included (argv, env,
// paths and names may hold any byte but NUL, invalid UTF-8 too), and an
// unknown optional stays unknown.
//
// The file's descriptors are close-on-exec: a job the daemon starts never
// inherits them.
//
// Threads: a Store is one SQLite connection and is not thread-safe; use it
// from one thread at a time. Several Stores (threads or processes) may share
// a file: writers take turns, waiting up to kBusyTimeoutMs for each other.
#ifndef GPUWARDEN_QUEUE_STORE_H_
#define GPUWARDEN_QUEUE_STORE_H_

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

struct sqlite3;
struct sqlite3_stmt;

namespace gw::queue {

// Which jobs List returns. Unset fields do not filter.
struct JobFilter {
  std::optional<uid_t> uid;
  std::vector<JobState> states;  // Empty = every state.
  std::optional<size_t> limit;   // At most this many, counted in the order below.
  bool newest_first = false;     // Descending id instead of ascending.
};

// The connection's settings as SQLite reports them (not as they were asked
// for), for tests and diagnostics.
struct StorePragmas {
  std::string journal_mode;  // "wal".
  int synchronous = 0;       // 2 = FULL.
  bool foreign_keys = false;
  int busy_timeout_ms = 0;
};

class Store {
 public:
  // How long a write waits for another connection's write to finish before
  // it fails with code "store".
  static constexpr int kBusyTimeoutMs = 10'000;

  // The schema version this build writes; Open migrates older files to it.
  static int LatestSchemaVersion();

  // Opens or creates the database at `path`; its directory must exist.
  // The file is made mode 0600 (it holds users' environments); an existing
  // file with any other mode is changed to 0600. The connection runs in WAL
  // mode with synchronous=FULL, foreign keys on and kBusyTimeoutMs.
  // An older schema is migrated, each step in its own transaction. Refused,
  // its contents left byte-for-byte as they were (only the mode is fixed):
  // a schema newer than LatestSchemaVersion(), and a SQLite file that belongs
  // to another program. Errors: code "store", the message names the path;
  // the same for a file that is not SQLite at all. A damaged file may open
  // and then fail the calls that reach the damage, with the same code.
  static Result<std::unique_ptr<Store>> Open(const std::string& path);

  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;
  ~Store();  // Closes the connection; nothing is lost if it never runs.

  // Stores a new job and returns its id; `job.id` is ignored. Ids increase
  // and are never reused, not even after a restart. (Inside a Transaction
  // that then rolls back, the id was never stored and may come again: tell
  // no one an id before the transaction commits.)
  // Errors: "invalid" (a string in argv, env or gpu_uuids holds a NUL),
  // "store".
  Result<JobId> Insert(Job job);

  // Replaces the whole stored job with id `job.id`.
  // Errors: "not_found", "invalid" (as Insert), "store".
  Status Update(const Job& job);

  // The job with this id, or nullopt when there is none.
  Result<std::optional<Job>> Get(JobId id);

  // Jobs matching `filter`, by ascending id unless filter.newest_first.
  Result<std::vector<Job>> List(const JobFilter& filter);

  // Jobs not yet ended (queued, held, starting, running), by ascending id.
  Result<std::vector<Job>> Active();

  // Runs `body`; the Store's writes inside it commit together when it
  // returns ok, and none of them do when it returns an error (which is then
  // returned). Nests: an inner Transaction that fails undoes only its own
  // writes. Writes by other connections wait until the outermost one ends.
  Status Transaction(const std::function<Status()>& body);

  // Decayed GPU-seconds per user, for fair share. Each job that ran adds
  //   spec.gpus * (end - start) * 0.5^((now - end) / half_life)
  // and each job still starting or running adds spec.gpus * (now - start),
  // undecayed. Jobs that ended more than 8 half-lives ago, never started, or
  // ended without a recorded end time add nothing. Times in the future count
  // as now. Users with no counted job are absent.
  // Errors: "invalid" (half_life_s not positive and finite), "store".
  Result<std::map<uid_t, double>> UsageGpuSeconds(int64_t now_unix_ms, double half_life_s);

  // The file's schema version (LatestSchemaVersion() once Open succeeded).
  int schema_version() const { return schema_version_; }
  const std::string& path() const { return path_; }

  Result<StorePragmas> Pragmas();

 private:
  Store(std::string path, sqlite3* db);

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
};

}  // namespace gw::queue

#endif  // GPUWARDEN_QUEUE_STORE_H_
