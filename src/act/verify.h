// Did the memory come back? Compares the GPUs before the clean-up with a
// snapshot taken after the targets ended. Pure.
//
// The driver frees a process's memory when the process is torn down; if the
// process is gone and the memory is not, the driver kept it (a process stuck
// in the kernel, or a driver leak) and only a GPU reset or a reboot frees it.
// Other processes may allocate or free meanwhile, so the expected usage is
// corrected by what the processes that are listed in both snapshots changed.
#ifndef GPUWARDEN_ACT_VERIFY_H_
#define GPUWARDEN_ACT_VERIFY_H_

#include <sys/types.h>

#include <cstdint>
#include <span>
#include <vector>

#include "act/execute.h"
#include "core/snapshot.h"

namespace gw::act {

struct GpuRelease {
  unsigned index = 0;
  Opt<uint64_t> used_before_bytes;
  Opt<uint64_t> used_after_bytes;
  uint64_t expected_bytes = 0;  // What the ended targets held on it (known entries).
  Opt<uint64_t> freed_bytes;    // used before - used after, when both are known (>= 0).
  uint64_t still_held_bytes = 0;
  std::vector<pid_t> still_listed;  // Ended targets the driver still lists.
  bool released = true;
};

struct ReleaseReport {
  std::vector<GpuRelease> gpus;  // GPUs an ended target held, by index.
  bool all_released() const;
};

// What is left over is "still held" only above this slack: max(64 MiB, 2 %
// of what was expected), to absorb allocator rounding and the driver's own
// bookkeeping.
ReleaseReport CompareRelease(const Snapshot& before, const Snapshot& after,
                             std::span<const TargetResult> results);

}  // namespace gw::act

#endif  // GPUWARDEN_ACT_VERIFY_H_
