#include "act/protected.h"

#include <algorithm>

namespace gw::act {
namespace {

// The kernel keeps at most 15 bytes of a process name (TASK_COMM_LEN - 1).
constexpr size_t kCommLength = 15;

}  // namespace

const std::vector<std::string>& DefaultProtectedNames() {
  static const std::vector<std::string> kNames = {
      // NVIDIA's own daemons: stopping them drops state other users rely on.
      "nvidia-persistenced",
      "nv-hostengine",  // DCGM
      "nv-fabricmanager",
      "nvidia-fabricmanager",
      "nvidia-cuda-mps-control",
      "nvidia-cuda-mps-server",  // Serves every MPS client on the GPU.
      "nvidia-powerd",
      "dcgm-exporter",
      // Display servers, compositors and display managers.
      "Xorg",
      "X",
      "Xwayland",
      "gnome-shell",
      "kwin_wayland",
      "kwin_x11",
      "mutter",
      "weston",
      "sway",
      "Hyprland",
      "gdm",
      "gdm3",
      "sddm",
      "lightdm",
      // gpuwarden's own daemon and init.
      "gpuwardend",
      "systemd",
      "init",
  };
  return kNames;
}

std::string_view BaseName(std::string_view path) {
  const size_t slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

ProtectedList::ProtectedList(const std::vector<std::string>& extra)
    : names_(DefaultProtectedNames()) {
  for (const std::string& name : extra) {
    if (!name.empty() && std::find(names_.begin(), names_.end(), name) == names_.end()) {
      names_.push_back(name);
    }
  }
}

std::optional<std::string> ProtectedList::Match(const HostProcess& process) const {
  for (const std::string& name : names_) {
    if (process.comm && *process.comm == std::string_view(name).substr(0, kCommLength)) {
      return name;
    }
    if (!process.cmdline.empty() && BaseName(process.cmdline[0]) == name) return name;
    if (process.exe && BaseName(*process.exe) == name) return name;
  }
  return std::nullopt;
}

}  // namespace gw::act
