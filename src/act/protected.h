// Processes that clean/kill never signal, whoever asks: the driver's and the
// fabric's daemons, display servers, gpuwarden's own daemon, init, and the
// administrator's names. Pure: decides from a HostProcess, by the one rule of
// proc::ProtectedName (its executable and systemd unit, never the name a
// process gives itself), which `why` applies too.
#ifndef GPUWARDEN_ACT_PROTECTED_H_
#define GPUWARDEN_ACT_PROTECTED_H_

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/snapshot.h"

namespace gw::act {

// Every process of proc/known_processes.h (NVIDIA's persistence, DCGM host
// engine, fabric manager and MPS daemons, X and Wayland display servers and
// compositors, display managers, gpuwardend and init; documented in
// docs/cleanup.md), plus the administrator's names.
class ProtectedList {
 public:
  // The defaults plus `extra` (from the config file and --protect).
  explicit ProtectedList(const std::vector<std::string>& extra = {});

  // The protected name this process is (proc::ProtectedName), if any.
  std::optional<std::string> Match(const HostProcess& process) const;

 private:
  std::vector<std::string> extra_;
};

}  // namespace gw::act

#endif  // GPUWARDEN_ACT_PROTECTED_H_
