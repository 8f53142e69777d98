// `gpuwarden reset --plan GPU`: what keeps `nvidia-smi -r` from resetting a
// GPU on this machine, and the order to clear it: the jobs on the GPU, the
// display, CUDA MPS, DCGM and gpuwardend, nvidia-persistenced, Fabric
// Manager, a loaded nvidia_drm; then the reset, the restarts in reverse, and
// the check. gpuwarden prints the plan and never performs it. Pure: from a
// snapshot (live, or a dump, where only the driver's process list is
// known), the diagnosis's findings and the loaded kernel modules.
#ifndef GPUWARDEN_ACT_RESET_PLAN_H_
#define GPUWARDEN_ACT_RESET_PLAN_H_

#include <sys/types.h>

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/snapshot.h"
#include "diagnose/finding.h"
#include "proc/proc_parse.h"

namespace gw::act {

enum class ResetStepKind {
  kEndJobs,            // Processes on the GPU that are nobody's service.
  kWaitTeardown,       // Contexts of processes that have ended: the reset frees them.
  kStuck,              // D-state or zombie holders: no signal ends them.
  kStopDisplay,        // Display servers and managers.
  kStopMps,            // The CUDA MPS control daemon and its servers.
  kStopMonitors,       // DCGM's host engine and exporter, gpuwardend.
  kStopDriverDaemons,  // nvidia-persistenced, nvidia-powerd.
  kStopFabricManager,  // nv-fabricmanager.
  kUnloadModule,       // nvidia_drm.
  kReset,              // sudo nvidia-smi -r -i GPU.
  kRestart,            // What was stopped, in reverse order.
  kCheck,              // gpuwarden why; dcgmi diag.
};
std::string_view ResetStepKindName(ResetStepKind kind);  // "end_jobs", ...

struct ResetHolder {
  pid_t pid = 0;
  std::string text;               // "PID 4242 python (alice)": sanitised.
  std::optional<uint64_t> bytes;  // On this GPU, when the driver lists it.
};

struct ResetStep {
  ResetStepKind kind = ResetStepKind::kEndJobs;
  std::string title;                  // "End the jobs on GPU 1"
  std::vector<ResetHolder> holders;   // The processes the step is about.
  std::vector<std::string> commands;  // What to run, in order (shown, never run).
  std::string why;                    // One sentence: why it is in the way.
};

struct ResetPlan {
  unsigned gpu = 0;
  std::string name;  // "NVIDIA A100-SXM4-80GB", "" when unknown.
  std::string pci_bus_id;
  std::string uuid;
  bool live = true;  // From this machine now, not a dump.
  // A reset cannot help: the GPU fell off the bus, or NVIDIA asks for a
  // node reboot. The steps then say how to get there.
  bool reset_can_help = true;
  std::vector<std::string> blockers;  // Why not, when !reset_can_help.
  std::vector<ResetStep> steps;       // In the order to take them.
  std::vector<std::string> notes;     // What the plan could not tell, and why.
};

// REQUIRES: gpu_pos < latest.gpus.size(). `findings` are the diagnosis's
// (about every GPU; those about other GPUs are ignored). `modules` is
// nullopt where /proc/modules was not read (a dump).
// `proc_shows_every_process`: a listed PID /proc lacks has ended
// (diagnose::DiagnoseOptions).
ResetPlan PlanReset(const Snapshot& latest, size_t gpu_pos,
                    std::span<const diagnose::Finding> findings,
                    const std::optional<std::vector<proc::LoadedModule>>& modules,
                    bool proc_shows_every_process);

}  // namespace gw::act

#endif  // GPUWARDEN_ACT_RESET_PLAN_H_
