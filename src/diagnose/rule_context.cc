#include "diagnose/rule_context.h"

#include <algorithm>
#include <array>

#include <fmt/format.h>

#include "core/slurm_lookup.h"
#include "core/text.h"
#include "core/units.h"
#include "proc/device_files.h"

namespace gw::diagnose::internal {
namespace {

bool SameGpu(const Gpu& a, const Gpu& b) {
  if (a.uuid && b.uuid) return *a.uuid == *b.uuid;
  return a.index == b.index;
}

// Processes that adopt orphans: init, the per-user systemd manager, and the
// small inits of containers. A process whose parent is one of these and that
// is not a daemon lost its real parent.
bool IsReaper(const HostProcess& host) {
  if (host.ppid && *host.ppid == 1) return true;
  if (!host.parent_comm) return false;
  static constexpr std::array<std::string_view, 5> kReapers = {"systemd", "init", "tini",
                                                               "dumb-init", "catatonit"};
  const std::string& parent = *host.parent_comm;
  if (std::find(kReapers.begin(), kReapers.end(), parent) != kReapers.end()) return true;
  return parent.rfind("containerd-shim", 0) == 0;
}

}  // namespace

RuleContext::RuleContext(std::span<const Snapshot> history, const DiagnoseOptions& options,
                         std::span<const kmsg::KernelEvent> events)
    : history_(history), options_(options), events_(events) {
  window_s_ =
      std::max<double>(0, (history.back().time_unix_ms - history.front().time_unix_ms) / 1000.0);
  const Snapshot& last = history.back();
  series_.resize(last.gpus.size());
  sm_reliable_.resize(last.gpus.size());
  for (size_t i = 0; i < last.gpus.size(); ++i) {
    const Gpu& gpu = last.gpus[i];
    auto& series = series_[i];
    series.reserve(history.size());
    for (size_t s = 0; s + 1 < history.size(); ++s) {
      const Gpu* match = nullptr;
      const auto& gpus = history[s].gpus;
      // Same position first: GPU lists rarely change between samples.
      if (i < gpus.size() && SameGpu(gpus[i], gpu)) {
        match = &gpus[i];
      } else {
        for (const Gpu& candidate : gpus) {
          if (SameGpu(candidate, gpu)) {
            match = &candidate;
            break;
          }
        }
      }
      series.push_back(match);
    }
    series.push_back(&gpu);

    auto& reliable = sm_reliable_[i];
    reliable.resize(series.size(), 1);
    for (size_t s = 0; s < series.size(); ++s) {
      const Gpu* g = series[s];
      if (g == nullptr || !g->utilization_gpu_pct ||
          *g->utilization_gpu_pct <= options.idle_util_max_pct) {
        continue;
      }
      bool any_busy =
          std::any_of(g->processes.begin(), g->processes.end(),
                      [](const GpuProcess& p) { return p.sm_util_pct.value_or(0) > 0; });
      reliable[s] = any_busy ? 1 : 0;
    }
  }
}

std::vector<size_t> HeldGpus(const Snapshot& snapshot, const HostProcess& host) {
  std::vector<size_t> out;
  for (const std::string& file : host.device_files) {
    Opt<unsigned> minor = proc::GpuDeviceMinor(file, snapshot.device_dir);
    if (!minor) continue;
    for (size_t i = 0; i < snapshot.gpus.size(); ++i) {
      if (snapshot.gpus[i].minor_number == minor &&
          std::find(out.begin(), out.end(), i) == out.end()) {
        out.push_back(i);
      }
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

bool ListedAnywhere(const Snapshot& snapshot, pid_t pid) {
  for (const Gpu& gpu : snapshot.gpus) {
    for (const GpuProcess& p : gpu.processes) {
      if (p.pid == pid) return true;
    }
  }
  return false;
}

const std::vector<Holding>& RuleContext::Holdings() const {
  if (holdings_) return *holdings_;
  const Snapshot& last = latest();
  std::vector<Holding> out;
  size_t listed = 0;
  for (const Gpu& gpu : last.gpus) listed += gpu.processes.size();
  out.reserve(listed);
  for (size_t i = 0; i < last.gpus.size(); ++i) {
    const Gpu& gpu = last.gpus[i];
    for (size_t k = 0; k < gpu.processes.size(); ++k) {
      const GpuProcess& p = gpu.processes[k];
      out.push_back({i, gpu.index, p.pid, &p, k, FindHost(last, p.pid)});
    }
  }
  if (last.processes_scanned) {
    for (const auto& [pid, host] : last.processes) {
      if (host.device_files.empty() || host.listed_by_driver || ListedAnywhere(last, pid)) {
        continue;
      }
      for (size_t i : HeldGpus(last, host)) {
        out.push_back({i, last.gpus[i].index, pid, nullptr, 0, &host});
      }
    }
  }
  holdings_ = std::move(out);
  return *holdings_;
}

const std::vector<HolderGroup>& RuleContext::HolderGroups() const {
  if (holder_groups_) return *holder_groups_;
  std::vector<HolderGroup> out;
  out.reserve(Holdings().size());
  for (const Holding& h : Holdings()) {
    if (h.listed == nullptr && !out.empty() && out.back().h->listed == nullptr &&
        out.back().h->pid == h.pid) {
      out.back().gpus.push_back(h.gpu);
      continue;
    }
    out.push_back({&h, {h.gpu}});
  }
  holder_groups_ = std::move(out);
  return *holder_groups_;
}

const GpuProcess* FindGpuProcess(const Gpu& gpu, pid_t pid, size_t hint) {
  if (hint < gpu.processes.size() && gpu.processes[hint].pid == pid) return &gpu.processes[hint];
  for (const GpuProcess& p : gpu.processes) {
    if (p.pid == pid) return &p;
  }
  return nullptr;
}

ProcessWindow ProcessOverWindow(const RuleContext& ctx, size_t gpu_i, pid_t pid, size_t hint) {
  ProcessWindow w;
  auto series = ctx.Series(gpu_i);
  for (size_t s = 0; s < series.size(); ++s) {
    if (series[s] == nullptr) continue;
    const GpuProcess* p = FindGpuProcess(*series[s], pid, hint);
    if (p == nullptr) continue;
    ++w.present;
    if (!p->sm_util_pct || !ctx.ProcessSmReliable(gpu_i, s)) continue;
    ++w.sm_known;
    if (*p->sm_util_pct > 0) ++w.sm_busy;
    w.sm_max = std::max(w.sm_max, *p->sm_util_pct);
  }
  return w;
}

const HostProcess* FindHost(const Snapshot& snapshot, pid_t pid) {
  auto it = snapshot.processes.find(pid);
  return it == snapshot.processes.end() ? nullptr : &it->second;
}

std::string Safe(std::string_view raw) {
  const bool plain =
      std::all_of(raw.begin(), raw.end(), [](char c) { return c >= 0x20 && c < 0x7f; });
  return plain ? std::string(raw) : SanitizeForTerminal(raw);
}

std::string UserText(const HostProcess* host) {
  if (host == nullptr) return "?";
  if (host->user) return Safe(*host->user);
  if (host->uid) return fmt::format("uid {}", *host->uid);
  return "?";
}

std::string NameText(const HostProcess* host, const GpuProcess* gpu_process) {
  if (host != nullptr && host->comm && !host->comm->empty()) {
    return Safe(*host->comm);
  }
  if (host != nullptr && !host->cmdline.empty() && !proc::BaseName(host->cmdline[0]).empty()) {
    return Safe(proc::BaseName(host->cmdline[0]));
  }
  if (gpu_process != nullptr && gpu_process->name && !proc::BaseName(*gpu_process->name).empty()) {
    return Safe(proc::BaseName(*gpu_process->name));
  }
  return "?";
}

std::optional<proc::KnownProcess> KnownHolder(const HostProcess* host,
                                              const GpuProcess* gpu_process) {
  if (host != nullptr) {
    if (auto known = proc::MatchKnownProcess(*host)) return known;
  }
  if (gpu_process != nullptr && gpu_process->name) return proc::MatchKnownName(*gpu_process->name);
  return std::nullopt;
}

std::string OwnerText(const Snapshot& snapshot, const HostProcess* host) {
  std::string text = UserText(host);
  if (host == nullptr) return text;
  const ProcessOwner& owner = host->owner;
  if (owner.slurm_job_id) {
    text += ", slurm job " + Safe(*owner.slurm_job_id);
    const SlurmJob* job = FindSlurmJob(snapshot, *owner.slurm_job_id);
    if (job != nullptr && job->name && !job->name->empty()) {
      text += " \"" + TruncateToWidth(Safe(*job->name), 40) + "\"";
    }
    if (job != nullptr && job->user && (!host->user || *host->user != *job->user)) {
      text += " of " + Safe(*job->user);
    }
  } else if (owner.container_runtime) {
    text += ", " + Safe(*owner.container_runtime);
    if (owner.container_id) text += " " + Safe(owner.container_id->substr(0, 12));
  } else if (owner.systemd_unit) {
    const std::string& unit = *owner.systemd_unit;
    const bool service = unit.size() > 8 && unit.compare(unit.size() - 8, 8, ".service") == 0;
    if (service && unit.rfind("user@", 0) != 0) text += ", " + Safe(unit);
  }
  return text;
}

std::string ProcessText(const Snapshot& snapshot, pid_t pid, const HostProcess* host,
                        const GpuProcess* gpu_process) {
  const std::optional<proc::KnownProcess> known = KnownHolder(host, gpu_process);
  return fmt::format("PID {} {} ({}{}{})", pid, NameText(host, gpu_process),
                     OwnerText(snapshot, host), known ? ", " : "",
                     known ? proc::ProcessRoleText(known->role) : "");
}

std::string Pct(double value) { return fmt::format("{:.1f} %", value); }

std::string GpuList(const std::vector<unsigned>& gpus) {
  return fmt::format("{}", fmt::join(gpus, ","));
}

double Gib(uint64_t bytes) { return static_cast<double>(bytes) / static_cast<double>(kGiB); }

Evidence TextEvidence(std::string name, std::string value) {
  return Evidence{std::move(name), std::move(value), std::nullopt, ""};
}

Evidence BytesEvidence(std::string name, uint64_t bytes) {
  return Evidence{std::move(name), FormatBytes(bytes), static_cast<double>(bytes), "bytes"};
}

Evidence NumberEvidence(std::string name, double number, std::string unit, std::string value) {
  return Evidence{std::move(name), std::move(value), number, std::move(unit)};
}

Evidence PciEvidence(const GpuPciMap& map, unsigned gpu, const PciAddress& slot) {
  if (!map.placed_by_order.count(gpu)) return TextEvidence("pci_bus_id", slot.KernelText());
  return TextEvidence("pci_bus_id",
                      fmt::format("{} (NVML lists GPU {} without its address; the only one its "
                                  "place in NVML's PCI order allows)",
                                  slot.KernelText(), gpu));
}

Finding MakeFinding(std::string_view code, std::vector<unsigned> gpus, std::vector<pid_t> pids,
                    std::string message, double impact) {
  Finding f;
  f.code = std::string(code);
  if (const FindingSpec* spec = FindSpec(code)) {
    f.severity = spec->severity;
    f.category = spec->category;
    f.implies = spec->implies;
    f.actor = spec->actor;
  }
  std::sort(gpus.begin(), gpus.end());
  gpus.erase(std::unique(gpus.begin(), gpus.end()), gpus.end());
  std::sort(pids.begin(), pids.end());
  pids.erase(std::unique(pids.begin(), pids.end()), pids.end());
  f.gpus = std::move(gpus);
  f.pids = std::move(pids);
  f.message = std::move(message);
  f.impact = impact;
  return f;
}

void AddCatalogSteps(Finding& finding, StepValues values) {
  const FindingSpec* spec = FindSpec(finding.code);
  if (spec == nullptr) return;
  if (!values.gpu && !finding.gpus.empty()) values.gpu = GpuList(finding.gpus);
  if (!values.pid && finding.pids.size() == 1) values.pid = finding.pids[0];
  for (std::string& step : ExpandSteps(*spec, values))
    finding.next_steps.push_back(std::move(step));
}

Opt<uint64_t> FreeBytes(const Gpu& gpu) {
  if (gpu.memory.free_bytes) return gpu.memory.free_bytes;
  if (gpu.memory.total_bytes && gpu.memory.used_bytes &&
      *gpu.memory.used_bytes + gpu.memory.reserved_bytes.value_or(0) <= *gpu.memory.total_bytes) {
    return *gpu.memory.total_bytes - *gpu.memory.used_bytes - gpu.memory.reserved_bytes.value_or(0);
  }
  return std::nullopt;
}

Opt<double> UsedPct(const Gpu& gpu) {
  if (!gpu.memory.total_bytes || !gpu.memory.used_bytes || *gpu.memory.total_bytes == 0) {
    return std::nullopt;
  }
  return 100.0 * static_cast<double>(*gpu.memory.used_bytes) /
         static_cast<double>(*gpu.memory.total_bytes);
}

uint64_t FullMarkFreeBytes(uint64_t total_bytes, const DiagnoseOptions& options) {
  const auto relative =
      static_cast<uint64_t>(static_cast<double>(total_bytes) * options.vram_full_free_pct / 100.0);
  return std::min(total_bytes, std::max(relative, options.vram_full_min_free_bytes));
}

bool VramFull(const Gpu& gpu, const DiagnoseOptions& options) {
  const Opt<uint64_t> free = FreeBytes(gpu);
  if (!free || !gpu.memory.total_bytes || *gpu.memory.total_bytes == 0) return false;
  return *free < FullMarkFreeBytes(*gpu.memory.total_bytes, options);
}

bool MemoryEssentiallyFree(const Gpu& gpu, const DiagnoseOptions& options) {
  if (!gpu.memory.used_bytes || !gpu.memory.total_bytes) return false;
  const auto relative = static_cast<uint64_t>(static_cast<double>(*gpu.memory.total_bytes) *
                                              options.free_used_pct / 100.0);
  return *gpu.memory.used_bytes <= std::max(relative, options.free_used_min_bytes);
}

bool SaturatedOverWindow(std::span<const Gpu* const> series, const DiagnoseOptions& options) {
  unsigned known = 0;
  for (const Gpu* g : series) {
    if (g == nullptr || !g->utilization_gpu_pct) continue;
    if (*g->utilization_gpu_pct < options.saturated_util_pct) return false;
    ++known;
  }
  return known > 0;
}

bool UsageUnread(const Gpu& gpu) {
  return !gpu.memory.total_bytes && !gpu.memory.used_bytes && !gpu.utilization_gpu_pct;
}

std::string UnreadReason(const Gpu& gpu, const Snapshot& snapshot) {
  const bool nothing = UsageUnread(gpu) && !gpu.temperature_c && !gpu.power_draw_w;
  if (nothing) {
    // Never tried, and why: each GPU is read on a thread of its own, so a GPU
    // with nothing read and no call of its own that hung (that would make it
    // unreachable) was not asked at all.
    for (const ProbeError& e : snapshot.errors) {
      if (e.source == "probe" && e.code == "thread_failed" && e.gpu_index == gpu.index) {
        return "not tried: no thread could be started to read it";
      }
    }
    if (snapshot.timed_out) {
      constexpr std::string_view kPrefix = "driver not responding: ";
      for (const ProbeError& e : snapshot.errors) {
        // A call about no GPU (loading, init, the count) that did not return.
        if (e.code != "timeout" || e.source != "nvml" || e.gpu_index) continue;
        std::string_view call = e.message;
        if (call.substr(0, kPrefix.size()) == kPrefix) call.remove_prefix(kPrefix.size());
        return fmt::format("not tried: {}", call);
      }
      return "not tried: the probe's deadline passed before its reading began";
    }
    return "NVML answered nothing about it";
  }
  if (UsageUnread(gpu)) return "NVML gave neither its memory nor its utilisation";
  if (!gpu.memory.total_bytes || !gpu.memory.used_bytes) return "NVML did not give its memory";
  return "NVML did not give its utilisation";
}

const ActivityLog& RuleContext::Activity() const {
  if (!activity_) {
    ActivityLog log;
    for (const Snapshot& look : history_) ObserveLook(log, look, options_);
    activity_ = std::move(log);
  }
  return *activity_;
}

const XidIncidents& RuleContext::Incidents() const {
  if (!incidents_) incidents_ = BuildXidIncidents(history_, events_, options_.events);
  return *incidents_;
}

const MemoryHealth& RuleContext::Memory(size_t i) const {
  if (!memory_) {
    const XidIncidents& incidents = Incidents();
    std::vector<MemoryHealth> all;
    all.reserve(latest().gpus.size());
    for (const Gpu& gpu : latest().gpus) {
      std::vector<const XidIncident*> on_gpu;
      for (const XidIncident& inc : incidents.list) {
        if (inc.current() && inc.where.gpu == gpu.index) on_gpu.push_back(&inc);
      }
      all.push_back(JudgeMemory(gpu, on_gpu, options_));
    }
    memory_ = std::move(all);
  }
  return (*memory_)[i];
}

bool About(const Finding& finding, unsigned gpu) {
  return std::find(finding.gpus.begin(), finding.gpus.end(), gpu) != finding.gpus.end();
}

bool ExclusiveMode(const Gpu& gpu) {
  return gpu.compute_mode && (*gpu.compute_mode == ComputeMode::kExclusiveProcess ||
                              *gpu.compute_mode == ComputeMode::kExclusiveThread);
}

bool HasComputeProcess(const Gpu& gpu) {
  return std::any_of(gpu.processes.begin(), gpu.processes.end(),
                     [](const GpuProcess& p) { return p.type != GpuProcessType::kGraphics; });
}

bool LooksOrphaned(const Snapshot& snapshot, const HostProcess& host) {
  if (!host.ppid || !host.pgid) return false;
  if (!IsReaper(host)) return false;
  // A daemon or a job started with its own group leads it (pgid == pid) or
  // leads its session (sid == pid); a worker of a killed run does neither.
  if (*host.pgid == host.pid) return false;
  if (host.sid && *host.sid == host.pid) return false;
  // The group's leader is still alive: whoever started the group is there.
  if (snapshot.processes.count(*host.pgid)) return false;
  return true;
}

}  // namespace gw::diagnose::internal
