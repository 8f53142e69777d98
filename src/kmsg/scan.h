// The hot loop of the kernel-log reader: finding the few lines that matter in
// a large buffer without looking at every line.
#ifndef GPUWARDEN_KMSG_SCAN_H_
#define GPUWARDEN_KMSG_SCAN_H_

#include <cstddef>
#include <string_view>

namespace gw::kmsg::internal {

// Returns the offset of the first occurrence, at or after `from`, of "NVRM",
// "Linux version", "-- Boot " or "-- Reboot --" (journalctl's lines between
// boots) in `text`; text.size() when there is none. Runs at memory
// speed (SIMD on x86-64, memmem elsewhere); never reads outside `text`.
size_t FindCandidate(std::string_view text, size_t from);

}  // namespace gw::kmsg::internal

#endif  // GPUWARDEN_KMSG_SCAN_H_
