#include "proc/known_processes.h"

#include <array>

namespace gw::proc {
namespace {

// The kernel keeps at most 15 bytes of a process name (TASK_COMM_LEN - 1).
constexpr size_t kCommLength = 15;

using R = ProcessRole;

constexpr std::array<KnownProcess, 25> kKnown = {{
    // NVIDIA's own daemons: stopping them drops state other users rely on.
    {"nvidia-persistenced", R::kNvidiaDaemon, "nvidia-persistenced.service"},
    {"nv-hostengine", R::kDcgm, "nvidia-dcgm.service"},
    {"nv-fabricmanager", R::kFabricManager, "nvidia-fabricmanager.service"},
    {"nvidia-fabricmanager", R::kFabricManager, "nvidia-fabricmanager.service"},
    // Both run as "nvidia-cuda-mps" (comm): the server, which holds GPU
    // contexts, comes first.
    {"nvidia-cuda-mps-server", R::kMpsServer, ""},  // Serves every MPS client on the GPU.
    {"nvidia-cuda-mps-control", R::kMpsControl, ""},
    {"nvidia-powerd", R::kNvidiaDaemon, "nvidia-powerd.service"},
    {"dcgm-exporter", R::kDcgm, ""},
    // Display servers and compositors.
    {"Xorg", R::kDisplayServer, "display-manager.service"},
    {"X", R::kDisplayServer, "display-manager.service"},
    {"Xwayland", R::kDisplayServer, "display-manager.service"},
    {"gnome-shell", R::kDisplayServer, "display-manager.service"},
    {"kwin_wayland", R::kDisplayServer, "display-manager.service"},
    {"kwin_x11", R::kDisplayServer, "display-manager.service"},
    {"mutter", R::kDisplayServer, "display-manager.service"},
    {"weston", R::kDisplayServer, ""},
    {"sway", R::kDisplayServer, ""},
    {"Hyprland", R::kDisplayServer, ""},
    // Display managers.
    {"gdm", R::kDisplayManager, "display-manager.service"},
    {"gdm3", R::kDisplayManager, "display-manager.service"},
    {"sddm", R::kDisplayManager, "display-manager.service"},
    {"lightdm", R::kDisplayManager, "display-manager.service"},
    // gpuwarden's own daemon and init.
    {"gpuwardend", R::kGpuwarden, "gpuwardend.service"},
    {"systemd", R::kInit, ""},
    {"init", R::kInit, ""},
}};

}  // namespace

std::span<const KnownProcess> KnownProcesses() { return kKnown; }

std::string_view BaseName(std::string_view path) {
  const size_t slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

namespace {

// The systemd unit is `name` or `name`.service.
bool UnitIs(const HostProcess& process, std::string_view name) {
  if (!process.owner.systemd_unit || name.empty()) return false;
  const std::string_view unit = *process.owner.systemd_unit;
  constexpr std::string_view kService = ".service";
  return unit == name || (unit.size() == name.size() + kService.size() && unit.starts_with(name) &&
                          unit.ends_with(kService));
}

bool ExecutableIs(const HostProcess& process, std::string_view name) {
  if (!process.exe) return false;
  return name.find('/') != std::string_view::npos ? *process.exe == name
                                                  : BaseName(*process.exe) == name;
}

// The names a process gives itself: only where its executable is unknown.
bool CallsItself(const HostProcess& process, std::string_view name) {
  if (process.exe) return false;
  if (process.comm && *process.comm == name.substr(0, kCommLength)) return true;
  return !process.cmdline.empty() && BaseName(process.cmdline[0]) == name;
}

}  // namespace

bool IsNamed(const HostProcess& process, std::string_view name) {
  return ExecutableIs(process, name) || UnitIs(process, name) || CallsItself(process, name);
}

std::optional<KnownProcess> MatchKnownProcess(const HostProcess& process) {
  for (const KnownProcess& k : kKnown) {
    if (ExecutableIs(process, k.name)) return k;
  }
  for (const KnownProcess& k : kKnown) {
    if (UnitIs(process, k.unit)) return k;
  }
  if (process.exe) return std::nullopt;
  // The full names first: comm is cut to 15 bytes, which two names can share.
  for (const KnownProcess& k : kKnown) {
    if (!process.cmdline.empty() && BaseName(process.cmdline[0]) == k.name) return k;
  }
  for (const KnownProcess& k : kKnown) {
    if (CallsItself(process, k.name)) return k;
  }
  return std::nullopt;
}

std::optional<std::string> ProtectedName(const HostProcess& process,
                                         std::span<const std::string> extra) {
  if (std::optional<KnownProcess> known = MatchKnownProcess(process)) {
    return std::string(known->name);
  }
  for (const std::string& name : extra) {
    if (IsNamed(process, name)) return name;
  }
  return std::nullopt;
}

std::optional<KnownProcess> MatchKnownName(std::string_view name_or_path) {
  const std::string_view base = BaseName(name_or_path);
  for (const KnownProcess& k : kKnown) {
    if (base == k.name) return k;
  }
  return std::nullopt;
}

std::string_view ProcessRoleText(ProcessRole role) {
  switch (role) {
    case ProcessRole::kNvidiaDaemon:
      return "NVIDIA driver daemon";
    case ProcessRole::kDcgm:
      return "DCGM";
    case ProcessRole::kFabricManager:
      return "NVIDIA Fabric Manager";
    case ProcessRole::kMpsControl:
      return "MPS control daemon";
    case ProcessRole::kMpsServer:
      return "MPS server";
    case ProcessRole::kDisplayServer:
      return "display server";
    case ProcessRole::kDisplayManager:
      return "display manager";
    case ProcessRole::kGpuwarden:
      return "gpuwarden's daemon";
    case ProcessRole::kInit:
      return "init";
  }
  return "service";
}

}  // namespace gw::proc
