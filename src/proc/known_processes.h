// The processes gpuwarden knows by name: NVIDIA's daemons, the CUDA MPS
// daemons, display servers and display managers, gpuwardend and init. One
// table serves every reader: clean/kill never signal them (act/protected.h),
// why names them as holders in their own words (a display server's graphics
// context, the MPS server that holds its clients' memory), and reset --plan
// says which of them keep a GPU reset from working and how to stop each.
#ifndef GPUWARDEN_PROC_KNOWN_PROCESSES_H_
#define GPUWARDEN_PROC_KNOWN_PROCESSES_H_

#include <optional>
#include <span>
#include <string_view>

#include "core/snapshot.h"

namespace gw::proc {

enum class ProcessRole {
  kNvidiaDaemon,    // nvidia-persistenced, nvidia-powerd: the driver's own helpers.
  kDcgm,            // nv-hostengine (DCGM) and its exporter: GPU monitoring.
  kFabricManager,   // nv-fabricmanager: the NVSwitch fabric of HGX/DGX boards.
  kMpsControl,      // nvidia-cuda-mps-control: the MPS control daemon.
  kMpsServer,       // nvidia-cuda-mps-server: holds every MPS client's context.
  kDisplayServer,   // X, Wayland compositors: graphics contexts on the GPU.
  kDisplayManager,  // gdm, sddm, lightdm: start the display server.
  kGpuwarden,       // gpuwardend.
  kInit,            // systemd, init.
};

struct KnownProcess {
  std::string_view name;  // The program's name (comm is its first 15 bytes).
  ProcessRole role;
  // The systemd unit distributions install it as, "" when none is usual.
  std::string_view unit;
};

// Every known process, in a fixed order (documented in docs/cleanup.md).
std::span<const KnownProcess> KnownProcesses();

// `process` goes by `name`: its comm equals the name cut to the kernel's 15
// bytes ("nvidia-persistenced" runs as "nvidia-persiste"), or the base name
// of its argv[0] or of its executable equals it. A process can rename itself
// (comm, argv[0]) but not its executable.
bool GoesBy(const HostProcess& process, std::string_view name);

// The known process `process` goes by (GoesBy), if any: by argv[0] or its
// executable first, then by comm (where two names share their first 15
// bytes, the MPS server before the control daemon).
std::optional<KnownProcess> MatchKnownProcess(const HostProcess& process);
// The same from a name or path alone (an nvidia-smi dump's process_name).
std::optional<KnownProcess> MatchKnownName(std::string_view name_or_path);

// "display server", "MPS server", "NVIDIA persistence daemon" ...: the
// process's role in a few words, for messages.
std::string_view ProcessRoleText(ProcessRole role);

// "python" from "/usr/bin/python"; the whole string when it has no '/'.
std::string_view BaseName(std::string_view path);

}  // namespace gw::proc

#endif  // GPUWARDEN_PROC_KNOWN_PROCESSES_H_
