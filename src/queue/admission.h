// Admission: what the daemon refuses at submit because it can never run on
// this server, so that such a job is not accepted to wait forever (Slurm
// refuses the same way). Pure: the daemon passes in what it knows about the
// server and the queue.
//
// Refused (error code "unsatisfiable", the message names the flag and why):
//   --gpus N        more GPUs than the server has
//                   ("--gpus 3: this server has 2 GPUs");
//   --vram SIZE     more than any GPU can ever give: its total less the
//                   driver's reservation, less the margin kept free
//                   ("--vram 100 GiB: no GPU here has that much (the largest
//                   has 79.4 GiB usable; 512 MiB is kept free on each)"),
//                   or, with --gpus N, more than N GPUs can give
//                   ("--gpus 2 --vram 60 GiB: only 1 GPU here has 60 GiB");
//   --after JOB     a job that does not exist ("--after 9999: no such job").
// These are the permanent cases of the policy's wait reasons "never_fits"
// and "dependency" (policy.h), and the GPU ones are the placement core's
// "never" (placement::Server::WhyNever), so that `why --need` and the queue
// say the same. Everything that may change while the job waits (free
// memory, health, utilisation, windows, per-user limits, the topology) is
// left to the policy. A GPU whose total is unknown counts as big enough, as
// in the policy: a refusal must be certain. The client checks
// separately that the command exists (ExecCandidates, runner.h), since only
// it sees the caller's files.
#ifndef GPUWARDEN_QUEUE_ADMISSION_H_
#define GPUWARDEN_QUEUE_ADMISSION_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "core/result.h"
#include "placement/placement.h"
#include "queue/job.h"

namespace gw::queue {

struct AdmissionFacts {
  // The GPUs as the placement core sees them (only their totals and the
  // driver's reservations matter here). Empty = the GPUs are unknown (no
  // NVML yet): no GPU check is made.
  std::vector<placement::Candidate> gpus;
  uint64_t margin_bytes = placement::kDefaultMarginBytes;  // The policy's margin.
  // Whether a job id exists (any state), for --after. Unset: not checked.
  std::function<bool(JobId)> job_exists;
};

// nullopt when the job may be queued; else the first reason it never can.
std::optional<Error> CheckAdmission(const JobSpec& spec, const AdmissionFacts& facts);

}  // namespace gw::queue

#endif  // GPUWARDEN_QUEUE_ADMISSION_H_
