// The stride guard for NVML's running-process lists.
//
// nvmlDeviceGet{Compute,Graphics}RunningProcesses_v3 is declared to fill
// 24-byte nvmlProcessInfo_t entries, but R535-era drivers write a larger entry
// (32 bytes: a trailing usedGpuCcProtectedMemory) through the same symbol
// without a version change. Decoding those with a 24-byte stride yields
// scrambled PIDs. The caller therefore hands the driver a buffer filled with a
// sentinel byte and room for kMaxProcessInfoStride bytes per entry; these pure
// functions measure how far the driver wrote, derive the stride from that and
// the count it returned, and decode with that stride. The leading fields keep
// their offsets in every layout seen (pid @0, usedGpuMemory @8,
// gpuInstanceId @16, computeInstanceId @20).
#ifndef GPUWARDEN_NVML_PROCESS_INFO_H_
#define GPUWARDEN_NVML_PROCESS_INFO_H_

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "core/result.h"

namespace gw::nvml {

// The byte the buffer is filled with before the call.
inline constexpr uint8_t kProcessInfoSentinel = 0xA5;
// Room reserved per entry; strides up to this are decodable.
inline constexpr size_t kMaxProcessInfoStride = 64;
// The declared size of nvmlProcessInfo_t.
inline constexpr size_t kMinProcessInfoStride = 24;

// One entry's fields, raw as the driver wrote them.
struct RawProcessInfo {
  uint32_t pid = 0;
  uint64_t used_gpu_memory = 0;  // ~0ULL = not available.
  uint32_t gpu_instance_id = 0;  // 0xFFFFFFFF = not MIG.
  uint32_t compute_instance_id = 0;
};

struct DecodedProcessInfos {
  size_t stride = 0;  // Bytes per entry the driver used.
  std::vector<RawProcessInfo> entries;
};

// One past the last byte of `buffer` that differs from `sentinel` (0 if none).
size_t MeasureWrittenExtent(std::span<const uint8_t> buffer, uint8_t sentinel);

// The stride implied by `extent` bytes written for `count` entries: the
// smallest multiple of 8, at least kMinProcessInfoStride, with
// count * stride >= extent. The last entry's trailing bytes may equal the
// sentinel or be left unwritten, so the extent is rounded up, not divided.
// REQUIRES: count > 0.
size_t DeriveProcessInfoStride(size_t extent, unsigned count);

// A PID as Linux can issue it: 1 .. 4194304 (PID_MAX_LIMIT).
bool IsPlausiblePid(uint32_t pid);

// Decodes `count` entries from `buffer` (filled with `sentinel` before the
// driver wrote into it). Tries the derived stride first, then 24 and 32; the
// first stride under which every entry fits the buffer and has a plausible PID
// wins. Error "nvml_layout" when nothing was written or no stride validates.
Result<DecodedProcessInfos> DecodeProcessInfoBuffer(std::span<const uint8_t> buffer, unsigned count,
                                                    uint8_t sentinel);

}  // namespace gw::nvml

#endif  // GPUWARDEN_NVML_PROCESS_INFO_H_
