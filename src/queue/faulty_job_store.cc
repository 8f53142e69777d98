#include "queue/faulty_job_store.h"

#include <fmt/format.h>

namespace gw::queue {

std::string StoreFaultCause(StoreFault fault) {
  switch (fault) {
    case StoreFault::kDiskFull:
      return "no space left on device";
    case StoreFault::kReadOnly:
      return "read-only file system";
    case StoreFault::kFsyncError:
      return "I/O error";
  }
  return "I/O error";
}

void FaultyJobStore::FailNthWrite(int n, StoreFault fault) {
  nth_ = n < 1 ? 1 : n;
  nth_fault_ = fault;
}

void FaultyJobStore::FailEveryWrite(StoreFault fault) { every_ = fault; }

void FaultyJobStore::Heal() {
  every_.reset();
  nth_ = 0;
}

std::optional<Error> FaultyJobStore::NextWrite(const std::string& what) {
  ++writes_;
  std::optional<StoreFault> fault = every_;
  if (nth_ > 0 && --nth_ == 0 && !fault) fault = nth_fault_;
  if (!fault) return std::nullopt;
  ++failed_writes_;
  return MakeError(kStoreUnwritable, fmt::format("queue storage not writable: {} (injected: {})",
                                                 StoreFaultCause(*fault), what));
}

Result<JobId> FaultyJobStore::Insert(Job job) {
  if (std::optional<Error> e = NextWrite("inserting a job")) return *e;
  return base_.Insert(std::move(job));
}

Status FaultyJobStore::Update(const Job& job) {
  if (std::optional<Error> e = NextWrite(fmt::format("updating job {}", job.id))) return *e;
  return base_.Update(job);
}

}  // namespace gw::queue
