// FaultyJobStore: a JobStore that forwards every call to another one and
// fails the writes a test chooses, as leveldb's EnvWrapper subclasses break
// a real Env. Reads always pass through; so does every write not chosen.
//
// A failed write is refused before it reaches the wrapped store, so the
// store holds what it held before (the JobStore contract), with code
// "unwritable" and a message "queue storage not writable: <cause>
// (injected)", the cause one of the real store's ("no space left on
// device", "read-only file system", "I/O error").
//
// Writes are Insert and Update (inside a Transaction too); Transaction itself
// only forwards, so a body whose write fails returns that error and rolls back.
#ifndef GPUWARDEN_QUEUE_FAULTY_JOB_STORE_H_
#define GPUWARDEN_QUEUE_FAULTY_JOB_STORE_H_

#include <cstdint>
#include <optional>
#include <string>

#include "queue/job_store.h"

namespace gw::queue {

// What the disk does to a refused write.
enum class StoreFault {
  kDiskFull,    // ENOSPC
  kReadOnly,    // EROFS: remounted read-only
  kFsyncError,  // EIO at fsync
};

// "no space left on device", "read-only file system", "I/O error".
std::string StoreFaultCause(StoreFault fault);

class FaultyJobStore final : public JobStore {
 public:
  // `base` must outlive this.
  explicit FaultyJobStore(JobStore& base) : base_(base) {}

  // The n-th write from now (1 = the next) fails with `fault`; the others
  // pass. REQUIRES: n >= 1.
  void FailNthWrite(int n, StoreFault fault = StoreFault::kDiskFull);
  // Every write fails with `fault` until Heal().
  void FailEveryWrite(StoreFault fault);
  // Writes pass again (a pending FailNthWrite is dropped too).
  void Heal();

  int writes() const { return writes_; }  // Attempted, failed ones included.
  int failed_writes() const { return failed_writes_; }

  Result<JobId> Insert(Job job) override;
  Status Update(const Job& job) override;
  Result<std::optional<Job>> Get(JobId id) override { return base_.Get(id); }
  Result<std::vector<Job>> List(const JobFilter& filter) override { return base_.List(filter); }
  Result<std::vector<Job>> Active() override { return base_.Active(); }
  Status Transaction(const std::function<Status()>& body) override {
    return base_.Transaction(body);
  }
  Result<std::map<uid_t, double>> UsageGpuSeconds(int64_t now_unix_ms,
                                                  double half_life_s) override {
    return base_.UsageGpuSeconds(now_unix_ms, half_life_s);
  }

 private:
  // Counts a write; the error it must fail with, if it must.
  std::optional<Error> NextWrite(const std::string& what);

  JobStore& base_;
  int writes_ = 0;
  int failed_writes_ = 0;
  std::optional<StoreFault> every_;
  int nth_ = 0;  // Writes left until the chosen one; 0 = none chosen.
  StoreFault nth_fault_ = StoreFault::kDiskFull;
};

}  // namespace gw::queue

#endif  // GPUWARDEN_QUEUE_FAULTY_JOB_STORE_H_
