#include "proc/device_files.h"

#include <charconv>
#include <system_error>

namespace gw::proc {

std::string DeviceFilePrefix(std::string_view dir, std::string_view prefix) {
  while (dir.size() > 1 && dir.back() == '/') dir.remove_suffix(1);
  std::string out(dir);
  if (out != "/") out += '/';
  out += prefix;
  return out;
}

std::optional<unsigned> GpuDeviceMinor(std::string_view path, std::string_view device_dir) {
  const std::string prefix = DeviceFilePrefix(device_dir);
  if (!path.starts_with(prefix)) return std::nullopt;
  const std::string_view digits = path.substr(prefix.size());
  if (digits.empty()) return std::nullopt;
  for (char c : digits) {
    if (c < '0' || c > '9') return std::nullopt;  // nvidiactl, nvidia-uvm, nvidia-caps/...
  }
  unsigned minor = 0;
  const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), minor);
  if (ec != std::errc() || end != digits.data() + digits.size()) return std::nullopt;
  return minor;
}

}  // namespace gw::proc
