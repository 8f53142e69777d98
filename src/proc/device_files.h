// NVIDIA device-file paths: which paths the holder scan matches, and the one
// parser of "<dev-dir>/nvidia<N>" -> minor number N. Pure: no file is read.
#ifndef GPUWARDEN_PROC_DEVICE_FILES_H_
#define GPUWARDEN_PROC_DEVICE_FILES_H_

#include <optional>
#include <string>
#include <string_view>

namespace gw::proc {

// "<dir>/<prefix>" as the kernel reports an open file's path: `dir` without
// its trailing slashes ("/dev/" and "/dev" give "/dev/nvidia"; "/" gives
// "/nvidia"). Callers match paths that start with it.
std::string DeviceFilePrefix(std::string_view dir, std::string_view prefix = "nvidia");

// The minor number of a GPU's device file: "<device_dir>/nvidia3" -> 3 (the
// GPU whose NVML minor_number is 3). nullopt for every other path: the control
// and UVM files (nvidiactl, nvidia-uvm, nvidia-modeset, nvidia-caps/...),
// paths outside `device_dir`, and digits that are not all digits or do not
// fit an unsigned int. `device_dir` is normalised as DeviceFilePrefix does.
std::optional<unsigned> GpuDeviceMinor(std::string_view path, std::string_view device_dir = "/dev");

}  // namespace gw::proc

#endif  // GPUWARDEN_PROC_DEVICE_FILES_H_
