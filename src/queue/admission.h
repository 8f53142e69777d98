// Admission: what the daemon refuses at submit because it can never run on
// this server (error code "unsatisfiable", the message naming the flag and
// why). Declared as the shared contract says; H-client owns this file and
// its implementation (admission.cc).
#ifndef GPUWARDEN_QUEUE_ADMISSION_H_
#define GPUWARDEN_QUEUE_ADMISSION_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "core/result.h"
#include "queue/job.h"

namespace gw::queue {

struct AdmissionFacts {
  std::vector<uint64_t> gpu_total_bytes;  // Per GPU, NVML order; empty = unknown.
  std::function<bool(JobId)> job_exists;  // For --after.
};

// nullopt when the job may be queued; else why it never can.
std::optional<Error> CheckAdmission(const JobSpec& spec, const AdmissionFacts& facts);

}  // namespace gw::queue

#endif  // GPUWARDEN_QUEUE_ADMISSION_H_
