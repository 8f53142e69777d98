// Processes that clean/kill never signal, whoever asks: the driver's and the
// fabric's daemons, display servers, gpuwarden's own daemon, init, and the
// caller's own chain of processes. Pure: decides from a HostProcess.
#ifndef GPUWARDEN_ACT_PROTECTED_H_
#define GPUWARDEN_ACT_PROTECTED_H_

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/snapshot.h"

namespace gw::act {

// The built-in names (documented in docs/cleanup.md): NVIDIA's persistence,
// DCGM host engine, fabric manager and MPS daemons, X and Wayland display
// servers and compositors, display managers, and gpuwardend.
const std::vector<std::string>& DefaultProtectedNames();

class ProtectedList {
 public:
  // The defaults plus `extra` (from the config file and --protect).
  explicit ProtectedList(const std::vector<std::string>& extra = {});

  // The protected name this process goes by, if any. A process matches when
  // its comm, the base name of argv[0] or the base name of its executable
  // equals a protected name; comm is compared with the name cut to the
  // kernel's 15 characters ("nvidia-persistenced" runs as
  // "nvidia-persiste").
  std::optional<std::string> Match(const HostProcess& process) const;

 private:
  std::vector<std::string> names_;
};

// "python" from "/usr/bin/python"; the whole string when it has no '/'.
std::string_view BaseName(std::string_view path);

}  // namespace gw::act

#endif  // GPUWARDEN_ACT_PROTECTED_H_
