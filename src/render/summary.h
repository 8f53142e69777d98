// Facts derived from a Snapshot that both status renderers (text and JSON)
// show: who a process belongs to, per-user totals over all GPUs, and the
// processes that hold GPU device files without being listed by the driver.
// Pure functions of the Snapshot.
#ifndef GPUWARDEN_RENDER_SUMMARY_H_
#define GPUWARDEN_RENDER_SUMMARY_H_

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/snapshot.h"

namespace gw::render {

// The label a process is accounted under: the user name when known, else the
// numeric uid ("1000"), else "?" (the process is not in the Snapshot's /proc
// data, or /proc did not say). Raw text: sanitise before a terminal.
std::string UserLabel(const Snapshot& snapshot, pid_t pid);

// The host process for `pid`, or nullptr when /proc did not report it.
const HostProcess* FindHostProcess(const Snapshot& snapshot, pid_t pid);

// Per-user totals over every GPU of the Snapshot.
struct UserTotal {
  std::string user;                         // UserLabel.
  std::optional<uid_t> uid;                 // When /proc reported it.
  std::vector<pid_t> pids;                  // Distinct PIDs listed by the driver, ascending.
  std::vector<unsigned> gpu_indices;        // GPUs those run on, ascending.
  uint64_t used_memory_bytes = 0;           // Sum of the known per-(process, GPU) values.
  unsigned memory_known = 0;                // (process, GPU) entries whose memory is known,
  unsigned memory_unknown = 0;              // and those whose memory is unknown.
  std::vector<pid_t> unlisted_holder_pids;  // Device-file holders not listed, ascending.
};

// One entry per user with a GPU process or an unlisted device-file holder,
// sorted by used_memory_bytes (descending), then user.
std::vector<UserTotal> ComputeUserTotals(const Snapshot& snapshot);

// True when the driver lists `pid` on some GPU of the Snapshot, or /proc
// collection marked it as listed (a GPU filter may have removed its GPU).
bool ListedByDriver(const Snapshot& snapshot, pid_t pid);

// Host processes that hold /dev/nvidia* files but are not listed by the
// driver on any GPU, ascending by PID. These hold GPU resources (or a CUDA
// context) that NVML does not show: orphans, other PID namespaces, zombies.
std::vector<const HostProcess*> UnlistedDeviceHolders(const Snapshot& snapshot);

// Index of the GPU whose minor number matches `<snapshot.device_dir>/nvidia<N>`
// (proc::GpuDeviceMinor); nullopt for control files (nvidiactl, nvidia-uvm,
// ...), files outside the device directory and unknown minors.
std::optional<unsigned> GpuIndexForDeviceFile(const Snapshot& snapshot, std::string_view path);

// "12.4" for 12040; nullopt for nullopt.
std::optional<std::string> CudaVersionString(std::optional<int> cuda_driver_version);

}  // namespace gw::render

#endif  // GPUWARDEN_RENDER_SUMMARY_H_
