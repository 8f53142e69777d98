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
#include <string>
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

// `process` is `name` by what the kernel says of it: its executable is
// named so (base name, or the whole path when `name` is a path), or it runs
// in the systemd unit `name` (or `name`.service), which systemd sets, not the
// process. A process can rename itself (comm, argv[0]: `exec -a Xorg sleep`)
// but not its executable or its unit, so those names count only when the
// executable cannot be read (another user's process, to a caller without
// root, who can act on none of them anyway): then comm (the name cut to the
// kernel's 15 bytes) or argv[0]'s base name stand in.
bool IsNamed(const HostProcess& process, std::string_view name);

// The known process `process` is (IsNamed, for the table's names and
// units), if any: by its executable first, then by its unit; by the names it
// gives itself only when its executable cannot be read (where two names
// share their first 15 bytes, the MPS server before the control daemon).
std::optional<KnownProcess> MatchKnownProcess(const HostProcess& process);
// Why clean, kill, watch, the policy and `why` leave `process` alone: the
// known process it is (MatchKnownProcess), or the first of `extra` (the
// administrator's names: config `protect`, --protect) it IsNamed. The one
// protection rule; nullopt when none applies.
std::optional<std::string> ProtectedName(const HostProcess& process,
                                         std::span<const std::string> extra);

// The same from a name or path alone (an nvidia-smi dump's process_name).
std::optional<KnownProcess> MatchKnownName(std::string_view name_or_path);

// "display server", "MPS server", "NVIDIA persistence daemon" ...: the
// process's role in a few words, for messages.
std::string_view ProcessRoleText(ProcessRole role);

// "python" from "/usr/bin/python"; the whole string when it has no '/'.
std::string_view BaseName(std::string_view path);

}  // namespace gw::proc

#endif  // GPUWARDEN_PROC_KNOWN_PROCESSES_H_
