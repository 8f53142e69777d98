// What a job sees of its run before it starts: its environment (the GPUs,
// its VRAM budget and framework knobs) and where its program is looked up.
// Pure; the daemon's client side uses ExecCandidates too, to refuse a command
// that does not exist before it is queued.
#ifndef GPUWARDEN_QUEUE_JOB_ENVIRONMENT_H_
#define GPUWARDEN_QUEUE_JOB_ENVIRONMENT_H_

#include <cstdint>
#include <string>
#include <vector>

#include "queue/job.h"

namespace gw::queue {

// The job's environment: the submitter's `spec.env`, then
//   CUDA_VISIBLE_DEVICES   the GPU UUIDs joined by ','; "" for a 0-GPU job (no GPU)
//   CUDA_DEVICE_ORDER      PCI_BUS_ID (NVML's order, for tools that print indices)
//   GPUWARDEN_JOB_ID       the job's id
// and when spec.vram_bytes > 0 and the job has GPUs (the budget is per GPU):
//   GPUWARDEN_VRAM_LIMIT_BYTES         spec.vram_bytes
//   GPUWARDEN_VRAM_FRACTION            vram / gpu_total_bytes, rounded down to 4
//                                      decimals (at least 0.0001, at most 1), for
//                                      torch.cuda.set_per_process_memory_fraction;
//                                      only when gpu_total_bytes > 0
//   CUDA_MPS_PINNED_DEVICE_MEM_LIMIT   when mps_active: "<uuid>=<MiB>M,..." (MiB
//                                      rounded down, at least 1). Advisory: a
//                                      client can only lower the limit the MPS
//                                      server was given; enforcement is the
//                                      daemon's (set_device_pinned_mem_limit).
//   and, only when the submitter set none of the knob's variables (a user who
//   tunes a framework knows better than a default):
//   XLA_PYTHON_CLIENT_PREALLOCATE=false
//   XLA_PYTHON_CLIENT_MEM_FRACTION, XLA_CLIENT_MEM_FRACTION  the fraction (one knob,
//                                      old and new name; only with gpu_total_bytes)
//   TF_FORCE_GPU_ALLOW_GROWTH=true
// A submitter's entry for a variable the runner sets (CUDA_VISIBLE_DEVICES,
// CUDA_DEVICE_ORDER, GPUWARDEN_JOB_ID, GPUWARDEN_VRAM_*, and the MPS limit
// when it is set) is removed, so every such variable appears once. Other
// entries keep their bytes and order; the runner's come last, in the order
// above. Pure.
std::vector<std::string> BuildJobEnvironment(const JobSpec& spec, JobId id,
                                             const std::vector<std::string>& gpu_uuids,
                                             uint64_t gpu_total_bytes, bool mps_active);

// The paths execve is tried with to run `argv0`, as execvpe would but with the
// PATH of the job's environment `env` (glibc's execvpe uses the caller's): an
// argv0 containing '/' is the only candidate; otherwise each PATH element
// joined with argv0, an empty element meaning the working directory. No PATH
// in env: "/usr/local/bin:/usr/bin:/bin". Empty argv0: none. A file that is
// not a valid executable (ENOEXEC) fails; it is never handed to a shell.
std::vector<std::string> ExecCandidates(const std::string& argv0,
                                        const std::vector<std::string>& env);

}  // namespace gw::queue

#endif  // GPUWARDEN_QUEUE_JOB_ENVIRONMENT_H_
