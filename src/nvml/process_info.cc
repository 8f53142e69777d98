#include "nvml/process_info.h"

#include <algorithm>
#include <cstring>

#include <fmt/format.h>

namespace gw::nvml {
namespace {

template <typename T>
T LoadAt(std::span<const uint8_t> buffer, size_t offset) {
  T value;
  std::memcpy(&value, buffer.data() + offset, sizeof(T));
  return value;
}

// Decodes with `stride`, or returns false if an entry does not fit or has an
// implausible PID.
bool TryDecode(std::span<const uint8_t> buffer, unsigned count, size_t stride,
               std::vector<RawProcessInfo>& out) {
  out.clear();
  if (count == 0) return true;
  if ((count - 1) * stride + kMinProcessInfoStride > buffer.size()) return false;
  out.reserve(count);
  for (unsigned i = 0; i < count; ++i) {
    const size_t base = i * stride;
    RawProcessInfo entry;
    entry.pid = LoadAt<uint32_t>(buffer, base + 0);
    entry.used_gpu_memory = LoadAt<uint64_t>(buffer, base + 8);
    entry.gpu_instance_id = LoadAt<uint32_t>(buffer, base + 16);
    entry.compute_instance_id = LoadAt<uint32_t>(buffer, base + 20);
    if (!IsPlausiblePid(entry.pid)) return false;
    out.push_back(entry);
  }
  return true;
}

}  // namespace

size_t MeasureWrittenExtent(std::span<const uint8_t> buffer, uint8_t sentinel) {
  size_t end = buffer.size();
  while (end > 0 && buffer[end - 1] == sentinel) --end;
  return end;
}

size_t DeriveProcessInfoStride(size_t extent, unsigned count) {
  size_t per_entry = (extent + count - 1) / count;
  size_t stride = (per_entry + 7) / 8 * 8;
  return std::max(stride, kMinProcessInfoStride);
}

bool IsPlausiblePid(uint32_t pid) { return pid >= 1 && pid <= 4194304; }

Result<DecodedProcessInfos> DecodeProcessInfoBuffer(std::span<const uint8_t> buffer, unsigned count,
                                                    uint8_t sentinel) {
  DecodedProcessInfos decoded;
  if (count == 0) {
    decoded.stride = kMinProcessInfoStride;
    return decoded;
  }
  const size_t extent = MeasureWrittenExtent(buffer, sentinel);
  if (extent == 0) {
    return MakeError("nvml_layout",
                     fmt::format("the driver reported {} processes but wrote nothing", count));
  }
  const size_t derived = DeriveProcessInfoStride(extent, count);
  for (size_t stride : {derived, kMinProcessInfoStride, size_t{32}}) {
    if (stride > kMaxProcessInfoStride) continue;
    if (TryDecode(buffer, count, stride, decoded.entries)) {
      decoded.stride = stride;
      return decoded;
    }
  }
  return MakeError("nvml_layout",
                   fmt::format("process list layout not understood: {} entries in {} bytes "
                               "decode to no valid PIDs with a stride of {}, 24 or 32",
                               count, extent, derived));
}

}  // namespace gw::nvml
