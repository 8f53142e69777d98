// JobStore: the seam between the daemon and the durable record of its jobs.
// The daemon only ever talks to this interface; SqliteJobStore
// (sqlite_job_store.h) is the real one, FaultyJobStore (faulty_job_store.h)
// wraps any store and fails the writes a test chooses.
//
// Contract every implementation keeps:
//   - A write has reached the disk when the call that made it returns ok; a
//     crash at any later moment loses nothing. A write that returns an error
//     changed nothing (the store holds what it held before the call).
//   - Every Job field round-trips exactly, byte strings included.
//   - Errors: "invalid" (the caller's data cannot be stored: a NUL in a
//     string), "not_found" (Update of an id never inserted), "unwritable"
//     (the disk refused the write: full, read-only, I/O error, quota; the
//     message is for a person and starts "queue storage not writable: "
//     followed by the cause, e.g. "no space left on device"), "store"
//     (anything else; the message names the file). Retrying an "unwritable"
//     write later may succeed once the disk recovers.
//   - Not thread-safe: one thread at a time.
#ifndef GPUWARDEN_QUEUE_JOB_STORE_H_
#define GPUWARDEN_QUEUE_JOB_STORE_H_

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/result.h"
#include "queue/job.h"

namespace gw::queue {

// Which jobs List returns. Unset fields do not filter.
struct JobFilter {
  std::optional<uid_t> uid;
  std::vector<JobState> states;  // Empty = every state.
  std::optional<size_t> limit;   // At most this many, counted in the order below.
  bool newest_first = false;     // Descending id instead of ascending.
};

// The error code of a write the disk refused (see above).
inline constexpr const char* kStoreUnwritable = "unwritable";

class JobStore {
 public:
  virtual ~JobStore() = default;

  // Stores a new job and returns its id; `job.id` is ignored. Ids increase
  // and are never reused, not even after a restart. (Inside a Transaction
  // that then rolls back, the id was never stored and may come again: tell
  // no one an id before the transaction commits.)
  virtual Result<JobId> Insert(Job job) = 0;

  // Replaces the whole stored job with id `job.id`.
  virtual Status Update(const Job& job) = 0;

  // The job with this id, or nullopt when there is none.
  virtual Result<std::optional<Job>> Get(JobId id) = 0;

  // Jobs matching `filter`, by ascending id unless filter.newest_first.
  virtual Result<std::vector<Job>> List(const JobFilter& filter) = 0;

  // Jobs not yet ended (queued, held, starting, running), by ascending id.
  virtual Result<std::vector<Job>> Active() = 0;

  // Runs `body`; the writes inside it commit together when it returns ok,
  // and none of them do when it returns an error (which is then returned) or
  // when the commit itself fails. Nests: an inner Transaction that fails
  // undoes only its own writes.
  virtual Status Transaction(const std::function<Status()>& body) = 0;

  // Decayed GPU-seconds per user, for fair share. Each job that ran adds
  //   spec.gpus * (end - start) * 0.5^((now - end) / half_life)
  // and each job still starting or running adds spec.gpus * (now - start),
  // undecayed. Jobs that ended more than 8 half-lives ago, never started, or
  // ended without a recorded end time add nothing. Times in the future count
  // as now. Users with no counted job are absent.
  // Errors: "invalid" (half_life_s not positive and finite), "store".
  virtual Result<std::map<uid_t, double>> UsageGpuSeconds(int64_t now_unix_ms,
                                                          double half_life_s) = 0;
};

}  // namespace gw::queue

#endif  // GPUWARDEN_QUEUE_JOB_STORE_H_
