#include "act/reset_plan.h"

#include <algorithm>
#include <map>
#include <set>

#include <fmt/format.h>

#include "core/text.h"
#include "core/units.h"
#include "proc/device_files.h"
#include "proc/known_processes.h"

namespace gw::act {
namespace {

using proc::ProcessRole;

// "PID 4242 python (alice)": the name from /proc, else the dump's process
// name; sanitised.
std::string HolderText(pid_t pid, const HostProcess* host, const GpuProcess* listed) {
  std::string name = "?";
  if (host != nullptr && host->comm && !host->comm->empty()) {
    name = *host->comm;
  } else if (host != nullptr && !host->cmdline.empty()) {
    name = std::string(proc::BaseName(host->cmdline[0]));
  } else if (listed != nullptr && listed->name) {
    name = std::string(proc::BaseName(*listed->name));
  }
  std::string user;
  if (host != nullptr && host->user) {
    user = *host->user;
  } else if (host != nullptr && host->uid) {
    user = fmt::format("uid {}", *host->uid);
  }
  return SanitizeForTerminal(user.empty() ? fmt::format("PID {} {}", pid, name)
                                          : fmt::format("PID {} {} ({})", pid, name, user));
}

// The step each known role's process belongs to, and how to stop it.
struct RoleStep {
  ResetStepKind kind;
  const char* title;
  const char* why;
};

std::optional<RoleStep> StepOf(ProcessRole role) {
  switch (role) {
    case ProcessRole::kDisplayServer:
    case ProcessRole::kDisplayManager:
      return RoleStep{ResetStepKind::kStopDisplay, "Stop the display",
                      "a display server keeps a graphics context on the GPU"};
    case ProcessRole::kMpsServer:
    case ProcessRole::kMpsControl:
      return RoleStep{ResetStepKind::kStopMps, "Stop CUDA MPS",
                      "the MPS server holds the contexts of its clients; the control daemon "
                      "starts it again on the next client"};
    case ProcessRole::kDcgm:
    case ProcessRole::kGpuwarden:
      return RoleStep{ResetStepKind::kStopMonitors, "Stop the monitors",
                      "a monitor holds the GPU open through NVML"};
    case ProcessRole::kNvidiaDaemon:
      return RoleStep{ResetStepKind::kStopDriverDaemons, "Stop NVIDIA's driver daemons",
                      "nvidia-persistenced keeps every GPU's device file open"};
    case ProcessRole::kFabricManager:
      return RoleStep{ResetStepKind::kStopFabricManager, "Stop Fabric Manager",
                      "Fabric Manager holds the NVSwitch fabric the GPU is part of"};
    case ProcessRole::kInit:
      return std::nullopt;
  }
  return std::nullopt;
}

// How to stop a known process, and how to start it again.
std::pair<std::string, std::string> StopAndStart(const proc::KnownProcess& k) {
  if (k.role == ProcessRole::kMpsServer || k.role == ProcessRole::kMpsControl) {
    return {"echo quit | nvidia-cuda-mps-control   (as the MPS daemon's owner)",
            "nvidia-cuda-mps-control -d   (as before)"};
  }
  if (!k.unit.empty()) {
    return {fmt::format("sudo systemctl stop {}", k.unit),
            fmt::format("sudo systemctl start {}", k.unit)};
  }
  return {fmt::format("stop {} the way it was started (no usual systemd unit)", k.name),
          fmt::format("start {} again", k.name)};
}

bool HoldsGpu(const Snapshot& s, const HostProcess& host, const Gpu& gpu) {
  for (const std::string& file : host.device_files) {
    if (gpu.minor_number && proc::GpuDeviceMinor(file, s.device_dir) == gpu.minor_number) {
      return true;
    }
  }
  return false;
}

bool IsLost(const Gpu& gpu, std::span<const diagnose::Finding> findings) {
  if (gpu.unreachable && gpu.unreachable->code == "gpu_lost") return true;
  for (const diagnose::Finding& f : findings) {
    if (std::find(f.gpus.begin(), f.gpus.end(), gpu.index) == f.gpus.end()) continue;
    if (f.code == "GPU_LOST") return true;
    if (f.code != "XID_FATAL") continue;
    for (const diagnose::Evidence& e : f.evidence) {
      if (e.name == "xid_79") return true;
    }
  }
  return false;
}

}  // namespace

std::string_view ResetStepKindName(ResetStepKind kind) {
  switch (kind) {
    case ResetStepKind::kEndJobs:
      return "end_jobs";
    case ResetStepKind::kWaitTeardown:
      return "ended_processes";
    case ResetStepKind::kStuck:
      return "stuck_processes";
    case ResetStepKind::kStopDisplay:
      return "stop_display";
    case ResetStepKind::kStopMps:
      return "stop_mps";
    case ResetStepKind::kStopMonitors:
      return "stop_monitors";
    case ResetStepKind::kStopDriverDaemons:
      return "stop_driver_daemons";
    case ResetStepKind::kStopFabricManager:
      return "stop_fabric_manager";
    case ResetStepKind::kUnloadModule:
      return "unload_nvidia_drm";
    case ResetStepKind::kReset:
      return "reset";
    case ResetStepKind::kRestart:
      return "restart";
    case ResetStepKind::kCheck:
      return "check";
  }
  return "end_jobs";
}

ResetPlan PlanReset(const Snapshot& latest, size_t gpu_pos,
                    std::span<const diagnose::Finding> findings,
                    const std::optional<std::vector<proc::LoadedModule>>& modules,
                    bool proc_shows_every_process) {
  const Gpu& gpu = latest.gpus[gpu_pos];
  ResetPlan plan;
  plan.gpu = gpu.index;
  plan.name = SanitizeForTerminal(gpu.name.value_or(""));
  plan.pci_bus_id = SanitizeForTerminal(gpu.pci_bus_id.value_or(""));
  plan.uuid = SanitizeForTerminal(gpu.uuid.value_or(""));
  plan.live = latest.source != SnapshotSource::kXmlDump && latest.processes_scanned;

  if (IsLost(gpu, findings)) {
    plan.reset_can_help = false;
    plan.blockers.push_back(
        fmt::format("GPU {} has fallen off the bus (lost): a reset cannot reach it; drain the node "
                    "and reboot it, and power-cycle it if the GPU does not come back",
                    gpu.index));
  }

  std::map<ResetStepKind, ResetStep> steps;
  std::vector<std::pair<ResetStepKind, std::string>> restarts;
  std::set<std::string> restart_seen;
  auto step = [&](ResetStepKind kind, std::string title, std::string why) -> ResetStep& {
    auto [it, fresh] = steps.try_emplace(kind);
    if (fresh) {
      it->second.kind = kind;
      it->second.title = std::move(title);
      it->second.why = std::move(why);
    }
    return it->second;
  };

  // Puts a holder in its step: a known service's (with how to stop and start
  // it again), the processes no signal can end, or the jobs.
  auto place = [&](ResetHolder holder, const HostProcess* host,
                   const std::optional<proc::KnownProcess>& known) {
    if (const std::optional<RoleStep> role = known ? StepOf(known->role) : std::nullopt) {
      ResetStep& s = step(role->kind, role->title, role->why);
      s.holders.push_back(std::move(holder));
      auto [stop, start] = StopAndStart(*known);
      if (std::find(s.commands.begin(), s.commands.end(), stop) == s.commands.end()) {
        s.commands.push_back(stop);
      }
      if (restart_seen.insert(start).second) restarts.emplace_back(role->kind, start);
      return;
    }
    if (host != nullptr &&
        (host->state == ProcessState::kDiskSleep || host->state == ProcessState::kZombie)) {
      holder.text += host->state == ProcessState::kZombie ? ", a zombie" : ", in D state";
      step(ResetStepKind::kStuck, "Processes no signal can end",
           "a process in uninterruptible sleep (D) is inside the kernel, often the driver, and a "
           "zombie waits for its parent; while one holds the GPU the reset fails: if it does not "
           "end, reboot")
          .holders.push_back(std::move(holder));
      return;
    }
    step(ResetStepKind::kEndJobs, fmt::format("End the jobs on GPU {}", gpu.index),
         "nvidia-smi -r refuses a GPU that any process uses")
        .holders.push_back(std::move(holder));
  };

  // The processes the driver lists on the GPU.
  std::set<pid_t> seen;
  for (const GpuProcess& p : gpu.processes) {
    seen.insert(p.pid);
    const auto host_it = latest.processes.find(p.pid);
    const HostProcess* host = host_it == latest.processes.end() ? nullptr : &host_it->second;
    ResetHolder holder{p.pid, HolderText(p.pid, host, &p), p.used_memory_bytes};
    if (host == nullptr && plan.live && proc_shows_every_process) {
      step(ResetStepKind::kWaitTeardown, "Contexts of processes that have ended",
           "the driver still charges memory to processes that no longer exist; nothing can "
           "end them, and the reset frees their contexts")
          .holders.push_back(std::move(holder));
      continue;
    }
    std::optional<proc::KnownProcess> known =
        host != nullptr ? proc::MatchKnownProcess(*host) : std::nullopt;
    if (!known && p.name) known = proc::MatchKnownName(*p.name);
    place(std::move(holder), host, known);
  }

  // Live: every other holder of the GPU's device file, and the services that
  // hold any NVIDIA device (nvidia-persistenced opens them all; DCGM, Fabric
  // Manager and MPS reach the GPU through the control device).
  if (plan.live) {
    for (const auto& [pid, host] : latest.processes) {
      if (seen.count(pid) || host.device_files.empty()) continue;
      const std::optional<proc::KnownProcess> known = proc::MatchKnownProcess(host);
      if (known && StepOf(known->role)) {
        place({pid, HolderText(pid, &host, nullptr), std::nullopt}, &host, known);
      } else if (HoldsGpu(latest, host, gpu)) {
        place({pid, HolderText(pid, &host, nullptr) + ", holds its device file", std::nullopt},
              &host, std::nullopt);
      }
    }
  }

  if (auto it = steps.find(ResetStepKind::kEndJobs); it != steps.end()) {
    std::vector<std::string> pids;
    for (const ResetHolder& h : it->second.holders) pids.push_back(fmt::format("{}", h.pid));
    it->second.commands.push_back(
        fmt::format("gpuwarden kill {}   (your own; root for others', or ask their owners)",
                    fmt::join(pids, " ")));
  }

  if (modules) {
    for (const proc::LoadedModule& m : *modules) {
      if (m.name != "nvidia_drm") continue;
      ResetStep& s =
          step(ResetStepKind::kUnloadModule, "Unload nvidia_drm",
               fmt::format("nvidia_drm is loaded (used {} time{}{}): the kernel's "
                           "display driver can hold the GPU",
                           m.used_by, m.used_by == 1 ? "" : "s",
                           m.users.empty() ? "" : ", by " + SanitizeForTerminal(m.users)));
      s.commands.push_back("sudo modprobe -r nvidia_drm   (after the display has stopped)");
      restarts.emplace_back(ResetStepKind::kUnloadModule, "sudo modprobe nvidia_drm");
    }
  } else {
    plan.notes.push_back(plan.live ? "the loaded kernel modules could not be read "
                                     "(/proc/modules): check lsmod | grep nvidia_drm"
                                   : "a dump does not say which kernel modules are loaded: "
                                     "check lsmod | grep nvidia_drm on the server");
  }
  if (!plan.live) {
    plan.notes.push_back(
        "from a dump: only the processes the driver lists are known; services that hold the "
        "device files (nvidia-persistenced, DCGM, Fabric Manager) can only be seen on the "
        "server: run gpuwarden reset --plan there");
  }

  for (auto& [kind, s] : steps) plan.steps.push_back(std::move(s));
  if (plan.reset_can_help) {
    ResetStep reset;
    reset.kind = ResetStepKind::kReset;
    reset.title = fmt::format("Reset GPU {}", gpu.index);
    reset.why = "with nothing holding it, the driver can reset the GPU";
    reset.commands.push_back(
        fmt::format("sudo nvidia-smi -r -i {}",
                    plan.pci_bus_id.empty() ? fmt::format("{}", gpu.index) : plan.pci_bus_id));
    plan.steps.push_back(std::move(reset));
  } else {
    ResetStep reboot;
    reboot.kind = ResetStepKind::kReset;
    reboot.title = "Reboot the node (a reset cannot help)";
    reboot.why = plan.blockers.front();
    reboot.commands.push_back("sudo systemctl reboot   (after draining the node's work)");
    plan.steps.push_back(std::move(reboot));
  }
  if (!restarts.empty() && plan.reset_can_help) {
    // In reverse order of the stops: the module, then the daemons, then the
    // monitors, MPS and the display.
    std::stable_sort(restarts.begin(), restarts.end(),
                     [](const auto& a, const auto& b) { return a.first > b.first; });
    ResetStep restart;
    restart.kind = ResetStepKind::kRestart;
    restart.title = "Start again what was stopped, in this order";
    restart.why = "the services the other users rely on";
    for (auto& [kind, command] : restarts) restart.commands.push_back(std::move(command));
    plan.steps.push_back(std::move(restart));
  }
  ResetStep check;
  check.kind = ResetStepKind::kCheck;
  check.title = "Check the GPU";
  check.why = "a reset that did not clear the fault is a reason for a reboot or an RMA";
  check.commands.push_back(fmt::format("gpuwarden status --gpu {}; gpuwarden why", gpu.index));
  check.commands.push_back(
      fmt::format("dcgmi diag -r 1 -i {}   (where DCGM is installed)", gpu.index));
  plan.steps.push_back(std::move(check));
  return plan;
}

}  // namespace gw::act
