// Holder rules: who holds the GPUs, and whether that capacity does any work.
// A process gets at most one of ZOMBIE_HOLDER, UNINTERRUPTIBLE_HOLDER,
// ORPHAN_HOLDER and IDLE_HOLDER per GPU, the most specific one, so that the
// memory it holds is counted once.
#include <algorithm>
#include <array>
#include <map>
#include <set>

#include <fmt/format.h>

#include "core/units.h"
#include "diagnose/rule_context.h"
#include "proc/device_files.h"

namespace gw::diagnose::internal {
namespace {

// The process's state in every sample where /proc reported it (oldest first).
struct StateWindow {
  unsigned known = 0;
  unsigned matching = 0;
  int64_t first_ms = 0;
  int64_t last_ms = 0;
};
StateWindow StateOverWindow(const RuleContext& ctx, pid_t pid, ProcessState state) {
  StateWindow w;
  for (const Snapshot& s : ctx.history()) {
    if (!s.processes_scanned) continue;
    const HostProcess* host = FindHost(s, pid);
    if (host == nullptr || !host->state) continue;
    ++w.known;
    if (*host->state != state) continue;
    if (w.matching++ == 0) w.first_ms = s.time_unix_ms;
    w.last_ms = s.time_unix_ms;
  }
  return w;
}

bool IsZombie(const RuleContext& ctx, const Holding& h) {
  if (h.host == nullptr || h.host->state != ProcessState::kZombie) return false;
  StateWindow w = StateOverWindow(ctx, h.pid, ProcessState::kZombie);
  return w.known > 0 && w.matching == w.known;
}

// D in every sample, at least two of them, stuck_min_s apart: short D states
// (disk or network I/O) are normal.
bool IsStuck(const RuleContext& ctx, const Holding& h) {
  if (h.host == nullptr || h.host->state != ProcessState::kDiskSleep) return false;
  StateWindow w = StateOverWindow(ctx, h.pid, ProcessState::kDiskSleep);
  return w.matching >= 2 && w.matching == w.known &&
         (w.last_ms - w.first_ms) / 1000.0 >= ctx.options().stuck_min_s;
}

bool IsOrphan(const RuleContext& ctx, const Holding& h) {
  if (h.host == nullptr || !LooksOrphaned(ctx.latest(), *h.host)) return false;
  if (h.host->state == ProcessState::kZombie || h.host->state == ProcessState::kDiskSleep) {
    return false;
  }
  // A process that computes is somebody's running job, whatever its parentage
  // (e.g. started with nohup from a script that has ended).
  if (h.listed != nullptr && ProcessOverWindow(ctx, h.gpu_i, h.pid, h.hint).sm_busy > 0) {
    return false;
  }
  return true;
}

// A known service (proc/known_processes.h) or a graphics context: not a job.
bool IsService(const Holding& h) {
  if (h.listed != nullptr && h.listed->type == GpuProcessType::kGraphics) return true;
  return KnownHolder(h.host, h.listed).has_value();
}

// Never reclaimable, by the one protection rule clean applies too
// (proc::ProtectedName: the executable and the systemd unit, never the name
// a process gives itself), or a graphics context.
bool IsProtected(const RuleContext& ctx, const Holding& h) {
  if (IsService(h)) return true;
  return h.host != nullptr && proc::ProtectedName(*h.host, ctx.options().protect).has_value();
}

// The idle time and where it was seen: "idle_for" (seconds), "idle_source"
// (window, process_history, gpu_history) and "idle_seen" (how long the
// source watched the holder).
void AddIdleEvidence(Finding& f, const IdleTime& idle) {
  f.evidence.push_back(NumberEvidence("idle_for", idle.idle_s, "s", IdleTimeText(idle)));
  f.evidence.push_back(TextEvidence("idle_source", std::string(IdleSourceName(idle.source))));
  f.evidence.push_back(NumberEvidence(
      "idle_seen", idle.seen_s, "s",
      fmt::format("{} ({})", FormatDuration(idle.seen_s), IdleSourceText(idle.source))));
}

void AddHeld(Finding& f, Opt<uint64_t> bytes) {
  if (bytes) {
    f.evidence.push_back(BytesEvidence(std::string(kHeldEvidence), *bytes));
  } else {
    f.evidence.push_back(TextEvidence(std::string(kHeldEvidence), "unknown"));
  }
}

// "/dev/nvidia*", in the device directory the snapshot was taken with
// (--dev-dir), which is where the holder scan matched the files.
std::string DeviceFiles(const Snapshot& s) {
  return Safe(proc::DeviceFilePrefix(s.device_dir)) + "*";
}

std::string HeldText(const RuleContext& ctx, const Holding& h, const std::vector<unsigned>& gpus) {
  if (h.listed == nullptr) {
    return fmt::format("holds {} of GPU {}", DeviceFiles(ctx.latest()), GpuList(gpus));
  }
  if (!h.bytes()) return fmt::format("holds GPU {} (memory unknown)", h.gpu);
  return fmt::format("holds {} on GPU {}", FormatBytes(*h.bytes()), h.gpu);
}

void AddProcessEvidence(const RuleContext& ctx, Finding& f, const Holding& h) {
  const HostProcess* host = h.host;
  f.evidence.push_back(TextEvidence("process", ProcessText(ctx.latest(), h.pid, host, h.listed)));
  if (host == nullptr) return;
  if (host->age_s) {
    f.evidence.push_back(NumberEvidence("age", *host->age_s, "s", FormatDuration(*host->age_s)));
  }
  if (host->ppid) {
    f.evidence.push_back(NumberEvidence(
        "parent", *host->ppid, "pid",
        fmt::format("{} ({})", *host->ppid, host->parent_comm ? Safe(*host->parent_comm) : "?")));
  }
}

// Asking someone else versus acting yourself.
void AddOwnershipStep(const RuleContext& ctx, Finding& f, const Holding& h) {
  const Opt<uid_t>& caller = ctx.options().caller_uid;
  if (!caller || h.host == nullptr || !h.host->uid || *h.host->uid == *caller) return;
  f.next_steps.push_back(
      fmt::format("It is not yours: ask {} to end it, or ask an administrator", UserText(h.host)));
}

}  // namespace

void RuleZombieHolder(const RuleContext& ctx, std::vector<Finding>& out) {
  if (!ctx.latest().processes_scanned) return;
  for (const auto& [hp, gpus] : ctx.HolderGroups()) {
    const Holding& h = *hp;
    if (!IsZombie(ctx, h)) continue;
    const HostProcess& host = *h.host;
    // A zombie has closed its files: the memory is held by a process that
    // inherited the GPU's device file (a worker forked after CUDA started,
    // still in its process group), or by the driver tearing the context down
    // (or keeping it). Reaping the zombie frees nothing.
    std::vector<pid_t> inheritors;
    if (host.pgid) {
      for (const auto& [pid, other] : ctx.latest().processes) {
        if (pid == h.pid || other.pgid != host.pgid || other.state == ProcessState::kZombie) {
          continue;
        }
        for (size_t held : HeldGpus(ctx.latest(), other)) {
          if (held == h.gpu_i) inheritors.push_back(pid);
        }
      }
    }
    const std::string holds_now =
        !inheritors.empty()
            ? fmt::format(
                  "PID{} {} of its process group {} still hold{} {}, inherited from it: "
                  "end {} to free the GPU",
                  inheritors.size() == 1 ? "" : "s", fmt::join(inheritors, ", "), *host.pgid,
                  inheritors.size() == 1 ? "s" : "", DeviceFiles(ctx.latest()),
                  inheritors.size() == 1 ? "it" : "them")
        : ctx.latest().processes_scanned
            ? std::string(
                  "no other process holds its device file: the driver is tearing its "
                  "context down, or has kept it (a reset frees it)")
            : std::string(
                  "either another process inherited its device file or the driver is "
                  "tearing its context down");
    std::string message = fmt::format(
        "{} {} but has exited (zombie): it has closed its files, so kill cannot help "
        "and reaping it frees nothing; {}",
        ProcessText(ctx.latest(), h.pid, h.host, h.listed), HeldText(ctx, h, gpus), holds_now);
    Finding f =
        MakeFinding("ZOMBIE_HOLDER", gpus, {h.pid}, std::move(message), Gib(h.bytes().value_or(0)));
    AddHeld(f, h.bytes());
    AddProcessEvidence(ctx, f, h);
    if (!inheritors.empty()) {
      f.evidence.push_back(
          TextEvidence("inherited_by", fmt::format("{}", fmt::join(inheritors, ", "))));
    }
    StepValues values;
    if (!inheritors.empty()) values.pgid = *host.pgid;
    AddCatalogSteps(f, values);
    out.push_back(std::move(f));
  }
}

void RuleUninterruptibleHolder(const RuleContext& ctx, std::vector<Finding>& out) {
  if (!ctx.latest().processes_scanned || ctx.samples() < 2) return;
  for (const auto& [hp, gpus] : ctx.HolderGroups()) {
    const Holding& h = *hp;
    if (!IsStuck(ctx, h)) continue;
    StateWindow w = StateOverWindow(ctx, h.pid, ProcessState::kDiskSleep);
    const double stuck_s = (w.last_ms - w.first_ms) / 1000.0;
    Finding f = MakeFinding(
        "UNINTERRUPTIBLE_HOLDER", gpus, {h.pid},
        fmt::format("{} {} and has been in uninterruptible sleep (D) for at least {}: signals "
                    "cannot reach it, so kill cannot free the GPU",
                    ProcessText(ctx.latest(), h.pid, h.host, h.listed), HeldText(ctx, h, gpus),
                    FormatDuration(stuck_s)),
        Gib(h.bytes().value_or(0)));
    AddHeld(f, h.bytes());
    f.evidence.push_back(
        NumberEvidence("d_state_for", stuck_s, "s",
                       fmt::format("{} ({} samples)", FormatDuration(stuck_s), w.matching)));
    AddProcessEvidence(ctx, f, h);
    AddCatalogSteps(f);
    out.push_back(std::move(f));
  }
}

void RuleOrphanHolder(const RuleContext& ctx, std::vector<Finding>& out) {
  if (!ctx.latest().processes_scanned) return;
  for (const auto& [hp, gpus] : ctx.HolderGroups()) {
    const Holding& h = *hp;
    if (IsZombie(ctx, h) || IsStuck(ctx, h) || !IsOrphan(ctx, h) || IsProtected(ctx, h)) continue;
    const HostProcess& host = *h.host;
    std::string adopter =
        *host.ppid == 1
            ? std::string("init (PID 1)")
            : fmt::format("{} (PID {})", Safe(host.parent_comm.value_or("?")), *host.ppid);
    std::string sm;
    if (h.listed != nullptr) {
      ProcessWindow pw = ProcessOverWindow(ctx, h.gpu_i, h.pid, h.hint);
      sm = pw.sm_known > 0 ? ", with no GPU work in the window"
                           : " (whether it computes is unknown)";
    }
    Finding f = MakeFinding(
        "ORPHAN_HOLDER", gpus, {h.pid},
        fmt::format("{} {}{}, but its parent is gone: it was adopted by {} while still in "
                    "process group {}, whose leader has exited; likely a worker left behind "
                    "by a killed run",
                    ProcessText(ctx.latest(), h.pid, h.host, h.listed), HeldText(ctx, h, gpus), sm,
                    adopter, *host.pgid),
        Gib(h.bytes().value_or(0)));
    AddHeld(f, h.bytes());
    AddProcessEvidence(ctx, f, h);
    f.evidence.push_back(NumberEvidence("pgid", *host.pgid, "pid", fmt::format("{}", *host.pgid)));
    AddOwnershipStep(ctx, f, h);
    StepValues values;
    values.pgid = *host.pgid;
    AddCatalogSteps(f, values);
    out.push_back(std::move(f));
  }
}

void RuleIdleHolder(const RuleContext& ctx, std::vector<Finding>& out) {
  const DiagnoseOptions& o = ctx.options();
  const Snapshot& latest = ctx.latest();
  for (const auto& [hp, gpus] : ctx.HolderGroups()) {
    const Holding& h = *hp;
    if (h.listed == nullptr || !h.bytes() || *h.bytes() < o.idle_holder_min_bytes) continue;
    // A display server, the MPS server, NVIDIA's daemons, the administrator's
    // protected names: live services whose memory is theirs to hold
    // (GRAPHICS_HOLDER, MPS_SERVER_HOLDER), never reclaimable.
    if (IsProtected(ctx, h)) continue;
    if (latest.processes_scanned && (IsZombie(ctx, h) || IsStuck(ctx, h) || IsOrphan(ctx, h))) {
      continue;
    }
    // Exiting or stuck processes are not idle: see ZOMBIE_HOLDER and UNINTERRUPTIBLE_HOLDER.
    if (h.host != nullptr &&
        (h.host->state == ProcessState::kDiskSleep || h.host->state == ProcessState::kZombie)) {
      continue;
    }
    const Opt<double> age = h.host != nullptr ? h.host->age_s : std::nullopt;
    const Opt<IdleTime> idle =
        HolderIdleTime(ctx.Activity(), o.activity_history.get(), h.gpu, h.pid,
                       h.host != nullptr ? h.host->start_ticks : std::nullopt, age);
    // Idle in the latest look, as far as it could tell.
    if (!idle || !idle->idle_now) continue;
    const bool old_enough =
        o.idle_holder_min_age_s <= 0 || (age && *age >= o.idle_holder_min_age_s);
    if (idle->idle_s >= o.idle_holder_min_idle_s && old_enough) {
      Finding f = MakeFinding(
          "IDLE_HOLDER", gpus, {h.pid},
          fmt::format("{} {} and has done no GPU work: {}{}",
                      ProcessText(ctx.latest(), h.pid, h.host, h.listed), HeldText(ctx, h, gpus),
                      IdleTimeText(*idle),
                      age ? fmt::format("; it has run for {}", FormatDuration(*age)) : ""),
          Gib(*h.bytes()));
      AddHeld(f, h.bytes());
      AddIdleEvidence(f, *idle);
      AddProcessEvidence(ctx, f, h);
      AddOwnershipStep(ctx, f, h);
      AddCatalogSteps(f);
      out.push_back(std::move(f));
      continue;
    }
    const Gpu& gpu = latest.gpus[h.gpu_i];
    if (ctx.samples() == 1 && idle->source == IdleSource::kWindow) {
      // One sample cannot prove a holder idle (a job between two steps reads
      // 0 % too), nor call its memory reclaimable: say what it shows.
      const bool gpu_idle =
          gpu.utilization_gpu_pct && *gpu.utilization_gpu_pct <= o.idle_util_max_pct;
      if (!gpu_idle) continue;
      Finding f = MakeFinding(
          "HOLDER_IDLE_ONE_SAMPLE", gpus, {h.pid},
          fmt::format("{} {} at {} % utilisation in this sample: it may be idle, which one sample "
                      "cannot tell from a job between two steps",
                      ProcessText(latest, h.pid, h.host, h.listed), HeldText(ctx, h, gpus),
                      *gpu.utilization_gpu_pct),
          Gib(*h.bytes()) / 10);
      f.evidence.push_back(BytesEvidence("held", *h.bytes()));
      f.evidence.push_back(
          NumberEvidence("utilization", *gpu.utilization_gpu_pct, "%",
                         fmt::format("{} % (one sample)", *gpu.utilization_gpu_pct)));
      AddProcessEvidence(ctx, f, h);
      AddCatalogSteps(f);
      out.push_back(std::move(f));
      continue;
    }
    // Seen idle, but not for as long as idle means: live work until shown otherwise.
    const std::string short_of =
        idle->idle_s < o.idle_holder_min_idle_s
            ? fmt::format("a holder counts as idle after {} without work",
                          FormatDuration(o.idle_holder_min_idle_s))
            : fmt::format("a holder counts as idle only once it has run {}",
                          FormatDuration(o.idle_holder_min_age_s));
    Finding f =
        MakeFinding("HOLDER_IDLE_SHORT", gpus, {h.pid},
                    fmt::format("{} {} and has done no GPU work, but only as far as seen: {}; {}",
                                ProcessText(latest, h.pid, h.host, h.listed),
                                HeldText(ctx, h, gpus), IdleTimeText(*idle), short_of),
                    Gib(*h.bytes()) / 10);
    AddHeld(f, h.bytes());
    AddIdleEvidence(f, *idle);
    AddProcessEvidence(ctx, f, h);
    AddCatalogSteps(f);
    out.push_back(std::move(f));
  }
}

// What keeps the latest look from seeing every holder of the host, though
// root looked: "" when nothing does. Before "nothing holds it" can be said,
// /proc must show every process of the host, the scan of it must have
// finished, and every PID the driver lists must be in it.
std::string BlindSpot(const RuleContext& ctx) {
  const Snapshot& latest = ctx.latest();
  if (!latest.processes_scanned) return "the processes were not scanned";
  for (const ProbeError& e : latest.errors) {
    if (e.source == "proc") return "the scan of /proc did not finish";
  }
  std::set<pid_t> foreign;
  for (const Gpu& g : latest.gpus) {
    for (const GpuProcess& p : g.processes) {
      if (latest.processes.count(p.pid) == 0) foreign.insert(p.pid);
    }
  }
  if (!foreign.empty()) {
    return fmt::format(
        "PID{} {} listed by the driver {} not in this /proc: processes of another "
        "PID namespace are present",
        foreign.size() == 1 ? "" : "s", fmt::join(foreign, ", "),
        foreign.size() == 1 ? "is" : "are");
  }
  if (!ctx.options().proc_shows_every_process) {
    return "this /proc does not show every process of the host";
  }
  return "";
}

void RuleInvisibleHolder(const RuleContext& ctx, std::vector<Finding>& out) {
  const DiagnoseOptions& o = ctx.options();
  const Snapshot& latest = ctx.latest();
  for (size_t i = 0; i < latest.gpus.size(); ++i) {
    const Gpu& gpu = latest.gpus[i];
    if (gpu.unreachable || gpu.mig_mode_current.value_or(false)) continue;
    // Every sample that could tell must agree: memory used, no process listed.
    bool invisible = true;
    unsigned seen = 0;
    for (const Gpu* g : ctx.Series(i)) {
      if (g == nullptr || !g->processes_known || !g->memory.used_bytes) continue;
      ++seen;
      if (!g->processes.empty() || *g->memory.used_bytes < o.invisible_min_bytes) {
        invisible = false;
        break;
      }
    }
    if (!invisible || seen == 0 || !gpu.processes_known || !gpu.memory.used_bytes) continue;
    const uint64_t used = *gpu.memory.used_bytes;
    // Reclaimable only when the GPU is known to do no work: utilisation known
    // and idle in every sample of a window (one sample cannot tell an idle
    // holder from a job between two steps). A GPU that computes with nothing
    // listed runs live work this view cannot see (another PID namespace, a
    // user hidden from us): never reclaimable.
    unsigned util_known = 0;
    unsigned util_max = 0;
    for (const Gpu* g : ctx.Series(i)) {
      if (g == nullptr || !g->utilization_gpu_pct) continue;
      ++util_known;
      util_max = std::max(util_max, *g->utilization_gpu_pct);
    }
    const bool computes = util_known > 0 && util_max > o.idle_util_max_pct;
    const bool provably_idle = util_known >= 2 && !computes;

    // Device-file holders the driver does not list are the first suspects.
    std::vector<pid_t> holders;
    if (latest.processes_scanned) {
      for (const auto& [pid, host] : latest.processes) {
        if (host.listed_by_driver) continue;
        for (size_t held : HeldGpus(latest, host)) {
          if (held == i) holders.push_back(pid);
        }
      }
    }
    std::string likeliest;
    if (computes) {
      likeliest = !ctx.live()
                      ? "live work the nvidia-smi that made this dump could not list (it ran in "
                        "a container: the driver lists only the caller's PID namespace)"
                  : o.in_container
                      ? "live work in another PID namespace: gpuwarden runs in a container and "
                        "the driver lists only this container's processes"
                  : !holders.empty() ? fmt::format(
                                           "live work of PID{} {}, which hold{} {} of this GPU "
                                           "without being listed",
                                           holders.size() == 1 ? "" : "s", fmt::join(holders, ", "),
                                           holders.size() == 1 ? "s" : "", DeviceFiles(latest))
                  : !o.caller_is_root
                      ? "live work of other users hidden from you (hidepid or unreadable "
                        "/proc/PID/fd); sudo gpuwarden why shows them"
                      : "live work in another PID namespace (a container or VM whose processes "
                        "the driver does not list here)";
    } else if (!ctx.live()) {
      likeliest =
          "the nvidia-smi that made this dump ran in a container (the driver lists only the "
          "caller's PID namespace), or the memory leaked in the driver";
    } else if (o.in_container) {
      likeliest =
          "processes in another PID namespace: gpuwarden runs in a container and the driver "
          "lists only this container's processes; run gpuwarden on the host";
    } else if (!holders.empty()) {
      likeliest = fmt::format("PID{} {} hold{} {} of this GPU without being listed",
                              holders.size() == 1 ? "" : "s", fmt::join(holders, ", "),
                              holders.size() == 1 ? "s" : "", DeviceFiles(latest));
    } else if (!o.caller_is_root) {
      likeliest =
          "processes of other users hidden from you (hidepid or unreadable /proc/PID/fd); run "
          "sudo gpuwarden why to see them";
    } else if (const std::string blind = BlindSpot(ctx); !blind.empty()) {
      // "Nothing holds it" needs a view of everything: say what was not seen.
      likeliest =
          fmt::format("a holder this view cannot see ({}), or memory leaked in the driver", blind);
    } else {
      likeliest =
          "memory leaked in the driver: nothing on this host holds the GPU; an administrator "
          "must reset it";
    }
    if (!provably_idle) {
      const std::string util =
          util_known == 0 ? std::string("utilisation unknown")
          : computes      ? fmt::format("the GPU computes ({} %)", util_max)
                          : fmt::format(
                                "held at {} % in this sample: it may be idle, which one sample "
                                     "cannot tell from a job between two steps",
                                util_max);
      Finding f = MakeFinding(
          "HIDDEN_USE", {gpu.index}, holders,
          fmt::format("GPU {} has {} in use by processes this view cannot list ({}); likeliest: {}",
                      gpu.index, FormatBytes(used), util, likeliest),
          Gib(used));
      f.evidence.push_back(BytesEvidence("used", used));
      f.evidence.push_back(TextEvidence("likeliest", likeliest));
      if (util_known > 0) {
        f.evidence.push_back(NumberEvidence("utilization_max", util_max, "%",
                                            fmt::format("{} % (highest of {} sample{})", util_max,
                                                        util_known, util_known == 1 ? "" : "s")));
      }
      AddCatalogSteps(f);
      out.push_back(std::move(f));
      continue;
    }
    Finding f = MakeFinding("INVISIBLE_HOLDER", {gpu.index}, holders,
                            fmt::format("GPU {} has {} in use but lists no process and does no "
                                        "work; likeliest: {}",
                                        gpu.index, FormatBytes(used), likeliest),
                            Gib(used));
    AddHeld(f, used);
    f.evidence.push_back(TextEvidence("likeliest", likeliest));
    f.evidence.push_back(
        NumberEvidence("samples", seen, "count",
                       fmt::format("no process listed in {} of {} samples", seen, ctx.samples())));
    AddCatalogSteps(f);
    out.push_back(std::move(f));
  }
}

void RuleUnlistedDeviceHolder(const RuleContext& ctx, std::vector<Finding>& out) {
  const Snapshot& latest = ctx.latest();
  if (!latest.processes_scanned) return;
  // Tools that open the device files by design (names as comm shows them,
  // which cuts at 15 characters).
  static constexpr std::array<std::string_view, 16> kTools = {"nvidia-persistenced",
                                                              "nv-hostengine",
                                                              "dcgm-exporter",
                                                              "dcgmi",
                                                              "Xorg",
                                                              "Xwayland",
                                                              "nvidia-smi",
                                                              "nvtop",
                                                              "nvitop",
                                                              "gpustat",
                                                              "gpuwarden",
                                                              "nvidia_gpu_exporter",
                                                              "gpud",
                                                              "nvidia-device-plugin",
                                                              "gnome-shell",
                                                              "nvidia-powerd"};
  auto is_tool = [&](const HostProcess& host) {
    if (!host.comm) return false;
    for (std::string_view tool : kTools) {
      if (*host.comm == tool.substr(0, 15)) return true;
    }
    return false;
  };
  for (const auto& [pid, host] : latest.processes) {
    if (host.device_files.empty() || host.listed_by_driver || ListedAnywhere(latest, pid)) {
      continue;
    }
    if (is_tool(host) || host.state == ProcessState::kZombie || LooksOrphaned(latest, host)) {
      continue;
    }
    std::vector<unsigned> gpus;
    for (size_t i : HeldGpus(latest, host)) gpus.push_back(latest.gpus[i].index);
    if (gpus.empty()) continue;
    Finding f = MakeFinding(
        "UNLISTED_DEVICE_HOLDER", gpus, {pid},
        fmt::format("{} holds the device file of GPU {} but no GPU lists it as a process",
                    ProcessText(ctx.latest(), pid, &host, nullptr), GpuList(gpus)),
        0);
    f.evidence.push_back(
        TextEvidence("device_files", fmt::format("{}", fmt::join(host.device_files, " "))));
    Holding h{0, gpus[0], pid, nullptr, 0, &host};
    AddProcessEvidence(ctx, f, h);
    AddCatalogSteps(f);
    out.push_back(std::move(f));
  }
}

namespace {

// A listed PID that no sample's /proc had: the samples that looked, and
// over how long.
struct Absence {
  unsigned looked = 0;
  int64_t first_ms = 0;
  int64_t last_ms = 0;
};
Opt<Absence> AbsentFromProc(const RuleContext& ctx, pid_t pid) {
  Absence a;
  for (const Snapshot& s : ctx.history()) {
    if (!s.processes_scanned) continue;
    if (s.processes.count(pid)) return std::nullopt;
    if (a.looked++ == 0) a.first_ms = s.time_unix_ms;
    a.last_ms = s.time_unix_ms;
  }
  return a;
}

// Whether GPU work was seen for `pid` on latest().gpus[gpu_i] over the
// window: its own SM figure above 0, or, where no figure is known, the GPU
// busy. A process that ended runs nothing.
bool WorkSeen(const RuleContext& ctx, size_t gpu_i, pid_t pid, size_t hint) {
  const ProcessWindow pw = ProcessOverWindow(ctx, gpu_i, pid, hint);
  if (pw.sm_busy > 0) return true;
  if (pw.sm_known > 0) return false;
  for (const Gpu* g : ctx.Series(gpu_i)) {
    if (g == nullptr || !g->utilization_gpu_pct ||
        *g->utilization_gpu_pct > ctx.options().idle_util_max_pct) {
      return true;
    }
  }
  return false;
}

}  // namespace

void RuleForeignPid(const RuleContext& ctx, std::vector<Finding>& out) {
  const Snapshot& latest = ctx.latest();
  if (!latest.processes_scanned) return;
  const DiagnoseOptions& o = ctx.options();
  // Where /proc shows every process of the host, a listed PID it lacks has
  // ended; watched for stuck_min_s at least and idle, its memory is a context
  // the driver has not freed (GONE_PROCESS_HOLDER). Elsewhere it is a
  // process of another PID namespace (FOREIGN_PID).
  const bool ended_when_absent = o.proc_shows_every_process && !o.in_container;
  std::set<pid_t> pids;
  std::set<unsigned> gpus;
  struct Gone {
    std::vector<unsigned> gpus;
    uint64_t bytes = 0;
    bool bytes_known = true;
    Absence absence;
  };
  std::map<pid_t, Gone> gone;
  for (size_t i = 0; i < latest.gpus.size(); ++i) {
    const Gpu& gpu = latest.gpus[i];
    for (size_t k = 0; k < gpu.processes.size(); ++k) {
      const GpuProcess& p = gpu.processes[k];
      const Opt<Absence> absence = AbsentFromProc(ctx, p.pid);
      if (!absence) continue;
      const bool watched =
          absence->looked >= 2 && (absence->last_ms - absence->first_ms) / 1000.0 >= o.stuck_min_s;
      if (ended_when_absent && watched && !WorkSeen(ctx, i, p.pid, k)) {
        Gone& g = gone[p.pid];
        g.gpus.push_back(gpu.index);
        g.absence = *absence;
        if (p.used_memory_bytes) {
          g.bytes += *p.used_memory_bytes;
        } else {
          g.bytes_known = false;
        }
        continue;
      }
      pids.insert(p.pid);
      gpus.insert(gpu.index);
    }
  }

  for (const auto& [pid, g] : gone) {
    const std::string held =
        g.bytes_known ? FormatBytes(g.bytes) + " charged" : "memory (amount unknown) charged";
    Finding f = MakeFinding(
        "GONE_PROCESS_HOLDER", g.gpus, {pid},
        fmt::format("GPU {}: {} to PID {}, which has ended: no /proc entry in {} samples over "
                    "{:.1f} s, and this /proc shows every process of the host; the driver has "
                    "not freed its context",
                    GpuList(g.gpus), held, pid, g.absence.looked,
                    (g.absence.last_ms - g.absence.first_ms) / 1000.0),
        g.bytes_known ? Gib(g.bytes) : 1.0);
    AddHeld(f, g.bytes_known ? Opt<uint64_t>(g.bytes) : std::nullopt);
    f.evidence.push_back(NumberEvidence("samples_absent", g.absence.looked, "count",
                                        fmt::format("{}", g.absence.looked)));
    AddCatalogSteps(f);
    out.push_back(std::move(f));
  }

  if (pids.empty()) return;
  const char* why =
      o.in_container      ? ": gpuwarden runs in a container and the driver reports host PIDs"
      : ended_when_absent ? ", which shows every process of the host: ending (a window of a few "
                            "seconds, `gpuwarden why`, tells a teardown from a context the driver "
                            "keeps), or, doing GPU work, outside this host's view"
                          : ": they live in another PID namespace, or exited";
  Finding f = MakeFinding(
      "FOREIGN_PID", {gpus.begin(), gpus.end()}, {pids.begin(), pids.end()},
      fmt::format("{} process{} listed on GPU {} (PID {}) {} not in this /proc{}", pids.size(),
                  pids.size() == 1 ? "" : "es", GpuList({gpus.begin(), gpus.end()}),
                  fmt::join(pids, ", "), pids.size() == 1 ? "is" : "are", why),
      0);
  f.evidence.push_back(NumberEvidence("processes", static_cast<double>(pids.size()), "count",
                                      fmt::format("{}", pids.size())));
  AddCatalogSteps(f);
  out.push_back(std::move(f));
}

// Services in their own words: a graphics context (a display server or any
// graphics application) and the MPS server, which holds the memory of every
// MPS client's context. Listed holders only; never reclaimable.
void RuleServiceHolder(const RuleContext& ctx, std::vector<Finding>& out) {
  const Snapshot& latest = ctx.latest();
  std::map<unsigned, std::vector<const Holding*>> graphics;  // GPU -> its graphics holders.
  for (const auto& [hp, gpus] : ctx.HolderGroups()) {
    const Holding& h = *hp;
    if (h.listed == nullptr) continue;
    const std::optional<proc::KnownProcess> known = KnownHolder(h.host, h.listed);
    if (known && known->role == proc::ProcessRole::kMpsServer) {
      const std::string who = ProcessText(latest, h.pid, h.host, h.listed);
      const std::string held =
          h.bytes() ? FormatBytes(*h.bytes()) : std::string("memory (amount unknown)");
      unsigned clients = 0;
      for (const GpuProcess& p : latest.gpus[h.gpu_i].processes) {
        if (p.pid != h.pid && p.type != GpuProcessType::kGraphics) ++clients;
      }
      Finding f = MakeFinding(
          "MPS_SERVER_HOLDER", gpus, {h.pid},
          fmt::format("{} is the CUDA MPS server on GPU {}: it holds {} for the contexts of its "
                      "clients ({} other compute process{} listed there); the memory is freed "
                      "when the clients end and the MPS control daemon stops the server",
                      who, h.gpu, held, clients, clients == 1 ? "" : "es"),
          0);
      AddHeld(f, h.bytes());
      AddProcessEvidence(ctx, f, h);
      AddCatalogSteps(f);
      out.push_back(std::move(f));
    } else if (h.listed->type == GpuProcessType::kGraphics ||
               (known && known->role == proc::ProcessRole::kDisplayServer)) {
      graphics[h.gpu].push_back(&h);
    }
  }
  // Graphics contexts, one finding per GPU: a desktop has several.
  for (const auto& [gpu, holders] : graphics) {
    std::vector<std::string> who;
    std::vector<pid_t> pids;
    uint64_t bytes = 0;
    bool bytes_known = true;
    for (const Holding* h : holders) {
      who.push_back(ProcessText(latest, h->pid, h->host, h->listed) +
                    (h->bytes() ? " " + FormatBytes(*h->bytes()) : ""));
      pids.push_back(h->pid);
      if (h->bytes()) {
        bytes += *h->bytes();
      } else {
        bytes_known = false;
      }
    }
    Finding f = MakeFinding(
        "GRAPHICS_HOLDER", {gpu}, pids,
        fmt::format("GPU {}: {} graphics context{} ({}) hold{} {}: a display or a graphics "
                    "application, not compute work, and not free while {} run{}",
                    gpu, holders.size(), holders.size() == 1 ? "" : "s", fmt::join(who, "; "),
                    holders.size() == 1 ? "s" : "", bytes_known ? FormatBytes(bytes) : "memory",
                    holders.size() == 1 ? "it" : "they", holders.size() == 1 ? "s" : ""),
        0);
    AddHeld(f, bytes_known ? Opt<uint64_t>(bytes) : std::nullopt);
    AddCatalogSteps(f);
    out.push_back(std::move(f));
  }
}

}  // namespace gw::diagnose::internal
