#include "render/status_text.h"

#include <algorithm>
#include <cmath>
#include <ctime>
#include <map>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "core/pci_address.h"
#include "core/slurm_lookup.h"
#include "core/text.h"
#include "core/units.h"
#include "render/styled_line.h"
#include "render/summary.h"

namespace gw::render {
namespace {

constexpr std::string_view kNA = "N/A";

// Load thresholds as nvitop ships them (light below, heavy at or above).
constexpr unsigned kUtilLight = 10;
constexpr unsigned kUtilHeavy = 75;
constexpr unsigned kMemLight = 10;
constexpr unsigned kMemHeavy = 80;

// Adds a `width`-column bar: the filled part in `tone`, the rest dim; all
// dim when the value is unknown.
void AddBar(StyledLine& line, std::optional<double> fraction, int width, Tone tone) {
  int filled = 0;
  if (fraction.has_value()) {
    filled = static_cast<int>(std::lround(std::clamp(*fraction, 0.0, 1.0) * width));
  }
  std::string on;
  std::string off;
  for (int i = 0; i < filled; ++i) on += "█";
  for (int i = filled; i < width; ++i) off += "░";
  line.Add(std::move(on), tone).Add(std::move(off), Tone::kDim);
}

Tone LoadTone(unsigned pct, unsigned light, unsigned heavy) {
  if (pct < light) return Tone::kGreen;
  if (pct >= heavy) return Tone::kRed;
  return Tone::kYellow;
}

std::string Pct(std::optional<unsigned> v) {
  return v.has_value() ? fmt::format("{}%", *v) : std::string(kNA);
}

std::string FormatTimeUtc(int64_t unix_ms) {
  if (unix_ms <= 0) return "time N/A";  // Never set by a collector.
  const std::time_t t = static_cast<std::time_t>(unix_ms / 1000);
  std::tm tm{};
  if (gmtime_r(&t, &tm) == nullptr) return std::string(kNA);
  char buf[32];
  if (std::strftime(buf, sizeof(buf), "%Y-%m-%d %H:%M:%S UTC", &tm) == 0) return std::string(kNA);
  return buf;
}

// The bus id column (PciAddress::ShortText): "3B:00.0" on domain 0; text
// that is no PCI address is shown as it is.
std::string ShortBusId(const std::optional<std::string>& bus_id) {
  if (!bus_id.has_value()) return std::string(kNA);
  if (const std::optional<PciAddress> a = ParsePciAddress(*bus_id)) return a->ShortText();
  return SanitizeForTerminal(*bus_id);
}

std::string ErrorLabel(const ProbeError& e) {
  static const std::map<std::string, std::string, std::less<>> kLabels = {
      {"timeout", "driver not responding"},
      {"driver_not_loaded", "driver not loaded"},
      {"gpu_lost", "GPU lost"},
      {"no_permission", "no permission"},
      {"library_not_found", "NVML library not found"},
  };
  const auto it = kLabels.find(e.code);
  if (it != kLabels.end()) return it->second;
  std::string label = e.code.empty() ? e.source + " error" : e.code;
  std::replace(label.begin(), label.end(), '_', ' ');
  return SanitizeForTerminal(label);
}

std::string StateWord(const HostProcess* host, bool narrow) {
  if (host == nullptr || !host->state.has_value()) return std::string(kNA);
  switch (*host->state) {
    case ProcessState::kRunning:
      return narrow ? "R" : "run";
    case ProcessState::kSleeping:
      return narrow ? "S" : "sleep";
    case ProcessState::kDiskSleep:
      return narrow ? "D" : "D-wait";
    case ProcessState::kZombie:
      return narrow ? "Z" : "zombie";
    case ProcessState::kStopped:
      return narrow ? "T" : "stop";
    case ProcessState::kIdle:
      return narrow ? "I" : "idle";
    case ProcessState::kDead:
      return narrow ? "X" : "dead";
    case ProcessState::kOther:
      return narrow ? "?" : "other";
  }
  return std::string(kNA);
}

Tone StateTone(const HostProcess* host) {
  if (host == nullptr || !host->state.has_value()) return Tone::kPlain;
  switch (*host->state) {
    case ProcessState::kDiskSleep:  // Signals cannot reach it.
    case ProcessState::kZombie:
    case ProcessState::kDead:
      return Tone::kRed;
    case ProcessState::kStopped:
      return Tone::kYellow;
    default:
      return Tone::kPlain;
  }
}

// A Slurm job's name in a process's tag: enough to tell jobs apart.
constexpr int kSlurmNameColumns = 24;

// Column widths; narrower terminals get narrower user and state columns.
struct Layout {
  int width = 100;
  bool cut = true;  // Cells cut to their columns; false: no width (kUnlimitedWidth).
  bool narrow = false;
  int index_digits = 1;
  int name_cols = 21;
  int user_cols = 10;
  int state_cols = 6;
  int bar_cols = 20;
  int pid_cols = 5;
};

class Renderer {
 public:
  Renderer(const Snapshot& snapshot, const TextOptions& options)
      : s_(snapshot), color_(options.color), verbose_(options.verbose) {
    layout_.width = std::max(options.width, 1);
    layout_.cut = layout_.width < kUnlimitedWidth;
    layout_.narrow = layout_.width < 90;
    if (layout_.narrow) {
      layout_.user_cols = 8;
      layout_.state_cols = 3;
    }
    // The name column is as wide as the longest name, within what line 1
    // leaves after its other fields (~53 columns), and at least 12.
    int longest = 8;
    for (const Gpu& g : s_.gpus) {
      if (g.name) longest = std::max(longest, DisplayWidth(SanitizeForTerminal(*g.name)));
    }
    // PIDs right-aligned to the widest one shown (pid_max allows 7 digits).
    auto widen = [&](pid_t pid) {
      layout_.pid_cols = std::max(layout_.pid_cols, static_cast<int>(std::to_string(pid).size()));
    };
    for (const Gpu& g : s_.gpus) {
      for (const GpuProcess& gp : g.processes) widen(gp.pid);
    }
    for (const auto& [pid, p] : s_.processes) widen(pid);
    layout_.name_cols = layout_.cut ? std::clamp(layout_.width - 53, 12, std::min(longest, 40))
                                    : std::max(longest, 12);
    unsigned max_index = 0;
    for (const Gpu& g : s_.gpus) max_index = std::max(max_index, g.index);
    layout_.index_digits = static_cast<int>(std::to_string(max_index).size());
    // Line 2 without bars is ~41 columns; share the rest between two bars.
    layout_.bar_cols = std::clamp((layout_.width - 41) / 2, 0, 20);
    if (layout_.bar_cols < 4) layout_.bar_cols = 0;
  }

  // A table cell: cut to its columns on a terminal, whole when the output
  // has no width.
  std::string Cell(std::string_view text, int columns) const {
    return layout_.cut ? PadRight(text, columns) : PadRightUncut(text, columns);
  }

  std::string Render() {
    Header();
    Problems();
    SlurmNodeLine();
    if (s_.gpus.empty()) {
      Blank();
      if (s_.system.gpu_count.value_or(0) > 0) {
        Emit(StyledLine().Add(
            fmt::format("no GPU could be read (the driver reports {})", *s_.system.gpu_count),
            Tone::kBoldRed));
      } else {
        Emit(StyledLine().Add("no GPUs found", Tone::kBold));
      }
    }
    holders_ = UnlistedDeviceHolders(s_);
    for (const Gpu& gpu : s_.gpus) {
      Blank();
      GpuBlock(gpu);
    }
    HoldersSection();
    UsersSection();
    return out_;
  }

 private:
  void Emit(const StyledLine& line) {
    out_ += line.Render(layout_.width, color_);
    out_ += '\n';
  }
  void Blank() { out_ += '\n'; }

  void Header() {
    if (s_.source == SnapshotSource::kSimulated) {
      const std::string file =
          s_.source_detail.empty() ? "unknown" : SanitizeForTerminal(s_.source_detail);
      Emit(StyledLine().Add(fmt::format("SIMULATED server (scenario {}): not real GPUs", file),
                            Tone::kBoldYellow));
    } else if (s_.source == SnapshotSource::kXmlDump) {
      const std::string file =
          s_.source_detail.empty() ? "unknown" : SanitizeForTerminal(s_.source_detail);
      Emit(StyledLine().Add(fmt::format("offline: nvidia-smi dump {}", file), Tone::kCyan));
    }
    const std::string host =
        s_.host.hostname.has_value() ? SanitizeForTerminal(*s_.host.hostname) : "host N/A";
    auto opt = [](const std::optional<std::string>& v) {
      return v.has_value() ? SanitizeForTerminal(*v) : std::string(kNA);
    };
    const std::string versions = fmt::format(
        "driver {} · CUDA {} · NVML {}", opt(s_.system.driver_version),
        opt(CudaVersionString(s_.system.cuda_driver_version)), opt(s_.system.nvml_version));
    const size_t n = s_.gpus.size();
    std::string count = fmt::format("{} GPU{}", n, n == 1 ? "" : "s");
    if (s_.system.gpu_count.has_value() && *s_.system.gpu_count != n) {
      count = fmt::format("{} of {} GPUs", n, *s_.system.gpu_count);
    }
    const std::string when = FormatTimeUtc(s_.time_unix_ms);
    StyledLine one;
    one.Add(host, Tone::kBold).Add(" · " + versions + " · " + count + " · " + when);
    if (one.Width() <= layout_.width) {
      Emit(one);
    } else {
      Emit(StyledLine().Add(host, Tone::kBold).Add(" · " + count + " · " + when));
      Emit(StyledLine().Add(versions));
    }
  }

  void Problems() {
    if (s_.timed_out) {
      const std::string after =
          s_.probe_duration_ms > 0 ? fmt::format(" after {:.0f} ms", s_.probe_duration_ms) : "";
      Emit(StyledLine()
               .Add("! ", Tone::kBoldRed)
               .Add(fmt::format("probe timed out{}: values it could not read show N/A", after),
                    Tone::kBoldRed));
    }
    for (const ProbeError& e : s_.errors) {
      // Messages that already open with their label ("driver not responding: …")
      // are not prefixed twice.
      const std::string label = ErrorLabel(e);
      const std::string message = SanitizeForTerminal(e.message);
      std::string text = message.rfind(label, 0) == 0 ? message : label + ": " + message;
      if (e.gpu_index.has_value()) text += fmt::format(" (GPU {})", *e.gpu_index);
      // Wrapped, not cut: a warning names what it is about, and the name is
      // at its end (docs/cli.md, "Output").
      const std::vector<std::string> lines = WrapWords(text, layout_.width - 2, layout_.width - 2);
      for (size_t i = 0; i < lines.size(); ++i) {
        Emit(StyledLine().Add(i == 0 ? "! " : "  ", Tone::kBoldRed).Add(lines[i], Tone::kRed));
      }
      // The message names the first few; --verbose lists every one.
      if (verbose_ && !e.pids.empty()) {
        std::string all = fmt::format("PID{}", e.pids.size() == 1 ? "" : "s");
        for (size_t i = 0; i < e.pids.size(); ++i) {
          all += fmt::format("{} {}", i == 0 ? ":" : ",", e.pids[i]);
        }
        for (const std::string& line : WrapWords(all, layout_.width - 2, layout_.width - 2)) {
          Emit(StyledLine().Add("  ").Add(line, Tone::kRed));
        }
      }
    }
  }

  void GpuBlock(const Gpu& gpu) {
    // Line 1: identity and sensors.
    StyledLine l1;
    l1.Add(PadRight(fmt::format("GPU {}", gpu.index), 4 + layout_.index_digits), Tone::kBold);
    l1.Add("  ");
    l1.Add(Cell(gpu.name ? SanitizeForTerminal(*gpu.name) : "name N/A", layout_.name_cols));
    l1.Add("  ").Add(PadRight(ShortBusId(gpu.pci_bus_id), 7));
    l1.Add("  ");
    if (gpu.temperature_c.has_value()) {
      const bool hot = gpu.temperature_slowdown_c.has_value() &&
                       *gpu.temperature_c >= *gpu.temperature_slowdown_c - 5;
      l1.Add(PadLeft(fmt::format("{}°C", *gpu.temperature_c), 5), hot ? Tone::kRed : Tone::kPlain);
    } else {
      l1.Add("temp N/A");
    }
    l1.Add("  ").Add(PadRight("fan " + Pct(gpu.fan_speed_pct), 8));
    l1.Add("  ").Add(gpu.pstate ? fmt::format("P{:<2}", *gpu.pstate) : "pstate N/A");
    l1.Add("  ").Add(PowerText(gpu));
    Emit(l1);

    // Line 2: memory and utilisation bars.
    StyledLine l2;
    std::optional<unsigned> mem_pct;
    std::optional<double> mem_frac;
    if (gpu.memory.used_bytes && gpu.memory.total_bytes && *gpu.memory.total_bytes > 0) {
      mem_frac = static_cast<double>(*gpu.memory.used_bytes) /
                 static_cast<double>(*gpu.memory.total_bytes);
      mem_pct = static_cast<unsigned>(std::lround(std::clamp(*mem_frac, 0.0, 1.0) * 100));
    }
    const Tone mem_tone = mem_pct ? LoadTone(*mem_pct, kMemLight, kMemHeavy) : Tone::kDim;
    l2.Add("  VRAM ");
    if (layout_.bar_cols > 0) {
      AddBar(l2, mem_frac, layout_.bar_cols, mem_tone);
      l2.Add(" ");
    }
    l2.Add(PadRight(MemoryText(gpu.memory), 15)).Add(" ");
    l2.Add(PadLeft(Pct(mem_pct), 4), mem_pct ? mem_tone : Tone::kPlain);
    std::optional<double> util_frac;
    if (gpu.utilization_gpu_pct) util_frac = *gpu.utilization_gpu_pct / 100.0;
    const Tone util_tone = gpu.utilization_gpu_pct
                               ? LoadTone(*gpu.utilization_gpu_pct, kUtilLight, kUtilHeavy)
                               : Tone::kDim;
    l2.Add("   UTIL ");
    if (layout_.bar_cols > 0) {
      AddBar(l2, util_frac, layout_.bar_cols, util_tone);
      l2.Add(" ");
    }
    l2.Add(PadLeft(Pct(gpu.utilization_gpu_pct), 4),
           gpu.utilization_gpu_pct ? util_tone : Tone::kPlain);
    Emit(l2);

    Markers(gpu);
    SlurmJobs(gpu);
    Processes(gpu);
    GpuHolders(gpu);
  }

  // "  SLURM job 15 (alice, train) · RUNNING 2h 03m · IDX 0": who Slurm gave
  // the GPU to.
  void SlurmJobs(const Gpu& gpu) {
    for (const SlurmJob* job : SlurmJobsOnGpu(s_, gpu.index)) {
      std::string text = DescribeSlurmJob(*job);
      if (job->state) text += " · " + SanitizeForTerminal(*job->state);
      if (job->start_time_unix_s && *job->start_time_unix_s * 1000 <= s_.time_unix_ms) {
        text += " " + FormatDuration(
                          static_cast<double>(s_.time_unix_ms / 1000 - *job->start_time_unix_s));
      }
      auto at = std::find(job->gpus.begin(), job->gpus.end(), gpu.index);
      const size_t k = static_cast<size_t>(at - job->gpus.begin());
      if (at != job->gpus.end() && k < job->gres_indexes.size()) {
        text += fmt::format(" · IDX {}", job->gres_indexes[k]);
      }
      Emit(StyledLine().Add("  SLURM ", Tone::kCyan).Add(text));
    }
  }

  // The node's line under the header: its name and jobs, or why Slurm could
  // not be read, and what could not be matched.
  void SlurmNodeLine() {
    if (!s_.slurm) return;
    const SlurmNode& node = *s_.slurm;
    const std::string name = SanitizeForTerminal(node.name);
    if (node.unread) {
      Emit(StyledLine()
               .Add("! ", Tone::kBoldYellow)
               .Add(fmt::format("Slurm node {}: which jobs hold the GPUs is unknown: {}", name,
                                SanitizeForTerminal(*node.unread)),
                    Tone::kYellow));
      return;
    }
    size_t with_gpus = 0;
    for (const SlurmJob& j : node.jobs) with_gpus += j.gpus.empty() ? 0 : 1;
    Emit(
        StyledLine().Add(fmt::format("Slurm node {} · {} job{} running · {} with GPUs here", name,
                                     node.jobs.size(), node.jobs.size() == 1 ? "" : "s", with_gpus),
                         Tone::kCyan));
    for (const std::string& note : node.notes) {
      Emit(StyledLine().Add("! ", Tone::kBoldYellow).Add(SanitizeForTerminal(note), Tone::kYellow));
    }
  }

  static std::string PowerText(const Gpu& gpu) {
    if (!gpu.power_draw_w && !gpu.power_limit_w) return "power N/A";
    const auto w = [](const std::optional<double>& v) {
      return v ? fmt::format("{:.0f}", *v) : std::string(kNA);
    };
    const std::string text = fmt::format("{} / {} W", w(gpu.power_draw_w), w(gpu.power_limit_w));
    return gpu.power_draw_w && gpu.power_limit_w ? text : "power " + text;
  }

  // "62.1/79.6 GiB" when both share a unit, else "512 MiB/79.6 GiB".
  static std::string MemoryText(const MemoryInfo& m) {
    if (!m.used_bytes && !m.total_bytes) return std::string(kNA);
    const std::string used = m.used_bytes ? FormatBytes(*m.used_bytes) : std::string(kNA);
    const std::string total = m.total_bytes ? FormatBytes(*m.total_bytes) : std::string(kNA);
    const size_t us = used.rfind(' ');
    const size_t ts = total.rfind(' ');
    if (us != std::string::npos && ts != std::string::npos && used.substr(us) == total.substr(ts)) {
      return used.substr(0, us) + "/" + total;
    }
    return used + "/" + total;
  }

  void Markers(const Gpu& gpu) {
    if (gpu.unreachable.has_value()) {
      const ProbeError& e = *gpu.unreachable;
      const std::string what = e.code == "gpu_lost"
                                   ? "LOST"
                                   : fmt::format("UNREACHABLE ({})", SanitizeForTerminal(e.code));
      Emit(StyledLine()
               .Add("  ! ", Tone::kBoldRed)
               .Add(what + ": " + SanitizeForTerminal(e.message), Tone::kBoldRed));
    }
    StyledLine l;
    bool any = false;
    auto add = [&](std::string text, Tone tone) {
      l.Add(any ? " · " : "  ");
      l.Add(std::move(text), tone);
      any = true;
    };
    if (gpu.mig_mode_current == true) add("MIG on", Tone::kCyan);
    if (gpu.mig_mode_pending.has_value() && gpu.mig_mode_pending != gpu.mig_mode_current) {
      add(fmt::format("MIG {} after reset", *gpu.mig_mode_pending ? "on" : "off"), Tone::kYellow);
    }
    if (gpu.compute_mode == ComputeMode::kExclusiveProcess) {
      add("compute mode: exclusive process", Tone::kCyan);
    } else if (gpu.compute_mode == ComputeMode::kExclusiveThread) {
      add("compute mode: exclusive thread", Tone::kCyan);
    } else if (gpu.compute_mode == ComputeMode::kProhibited) {
      add("compute mode: prohibited", Tone::kYellow);
    }
    if (gpu.ecc.volatile_uncorrected.value_or(0) > 0) {
      add(fmt::format("ECC: {} uncorrectable errors", *gpu.ecc.volatile_uncorrected), Tone::kRed);
    }
    if (gpu.remapped_rows.failure == true) add("row remapping FAILED", Tone::kRed);
    if (gpu.remapped_rows.pending == true) add("row remap pending (reset GPU)", Tone::kYellow);
    if (gpu.retired_pages.pending == true) add("page retirement pending", Tone::kYellow);
    if (gpu.clock_event_reasons.has_value()) {
      namespace ce = clock_event;
      const uint64_t r = *gpu.clock_event_reasons;
      std::vector<std::string> why;
      if (r & (ce::kHwThermalSlowdown | ce::kSwThermalSlowdown)) why.push_back("thermal");
      if (r & ce::kHwPowerBrakeSlowdown) why.push_back("power brake");
      if ((r & ce::kHwSlowdown) && !(r & (ce::kHwThermalSlowdown | ce::kHwPowerBrakeSlowdown))) {
        why.push_back("hardware");
      }
      if (!why.empty())
        add("clocks slowed: " + fmt::format("{}", fmt::join(why, ", ")), Tone::kYellow);
    }
    if (any) Emit(l);
  }

  // Text for the command column: owner tags, then the command line.
  std::string CommandText(const GpuProcess& gp, const HostProcess* host) const {
    std::string tags;
    auto tag = [&](const std::string& t) { tags += "[" + t + "] "; };
    if (gp.type == GpuProcessType::kGraphics) tag("G");
    if (gp.type == GpuProcessType::kComputeAndGraphics) tag("C+G");
    if (gp.gpu_instance_id.has_value()) {
      tag(fmt::format(
          "GI {} CI {}", *gp.gpu_instance_id,
          gp.compute_instance_id ? std::to_string(*gp.compute_instance_id) : std::string(kNA)));
    }
    if (host != nullptr) tags += OwnerTags(*host);
    return tags + CommandOf(gp.name, host);
  }

  std::string OwnerTags(const HostProcess& host) const {
    std::string tags;
    const ProcessOwner& o = host.owner;
    if (o.container_runtime.has_value() || o.container_id.has_value()) {
      std::string t = o.container_runtime ? SanitizeForTerminal(*o.container_runtime) : "container";
      if (o.container_id.has_value()) t += " " + SanitizeForTerminal(o.container_id->substr(0, 12));
      tags += "[" + t + "] ";
    }
    if (o.slurm_job_id.has_value()) {
      // "[slurm 15.0 train]", "[slurm 15.0 train of alice]" when the job is
      // another user's: its name and user from the node's jobs.
      std::string t = "slurm " + SanitizeForTerminal(*o.slurm_job_id);
      if (o.slurm_step) t += "." + SanitizeForTerminal(*o.slurm_step);
      if (const SlurmJob* job = FindSlurmJob(s_, *o.slurm_job_id)) {
        if (job->name && !job->name->empty()) {
          t += " " + TruncateToWidth(SanitizeForTerminal(*job->name), kSlurmNameColumns);
        }
        if (job->user && host.user != job->user) t += " of " + SanitizeForTerminal(*job->user);
      }
      tags += "[" + t + "] ";
    }
    // Services say who started a process; login sessions (session-N.scope,
    // user@N.service) say nothing the user column does not.
    if (o.systemd_unit.has_value() && o.systemd_unit->ends_with(".service") &&
        !o.systemd_unit->starts_with("user@")) {
      tags += "[" + SanitizeForTerminal(*o.systemd_unit) + "] ";
    }
    return tags;
  }

  std::string CommandOf(const std::optional<std::string>& driver_name,
                        const HostProcess* host) const {
    if (host != nullptr && host->readable) {
      if (!host->cmdline.empty()) return JoinCommandLine(host->cmdline);
      // Kernel threads and zombies have no argv; ps shows them as [comm].
      if (host->comm.has_value()) return "[" + SanitizeForTerminal(*host->comm) + "]";
    }
    if (driver_name.has_value()) return SanitizeForTerminal(*driver_name);
    if (!s_.processes_scanned) return std::string(kNA);
    if (host == nullptr) return "? (not in /proc)";
    return host->readable ? std::string(kNA) : "? (unreadable in /proc)";
  }

  std::string UserText(pid_t pid) const {
    if (!s_.processes_scanned && FindHostProcess(s_, pid) == nullptr) return std::string(kNA);
    return SanitizeForTerminal(UserLabel(s_, pid));
  }

  std::string AgeText(const HostProcess* host) const {
    return host != nullptr && host->age_s ? FormatDuration(*host->age_s) : std::string(kNA);
  }

  void Processes(const Gpu& gpu) {
    const std::string indent = layout_.narrow ? "  " : "    ";
    if (!gpu.processes_known) {
      Emit(StyledLine().Add(indent + "processes: N/A (the driver's list could not be read)",
                            Tone::kYellow));
      return;
    }
    if (gpu.processes.empty()) {
      Emit(StyledLine().Add(indent + "no processes", Tone::kDim));
      return;
    }
    std::vector<const GpuProcess*> procs;
    for (const GpuProcess& gp : gpu.processes) procs.push_back(&gp);
    std::stable_sort(procs.begin(), procs.end(), [](const GpuProcess* a, const GpuProcess* b) {
      // Biggest memory first; unknown memory after every known value.
      const bool ka = a->used_memory_bytes.has_value();
      const bool kb = b->used_memory_bytes.has_value();
      if (ka != kb) return ka;
      if (ka && *a->used_memory_bytes != *b->used_memory_bytes) {
        return *a->used_memory_bytes > *b->used_memory_bytes;
      }
      return a->pid < b->pid;
    });
    for (const GpuProcess* gp : procs) {
      const HostProcess* host = FindHostProcess(s_, gp->pid);
      StyledLine l;
      l.Add(indent).Add(PadLeft(std::to_string(gp->pid), layout_.pid_cols)).Add("  ");
      l.Add(Cell(UserText(gp->pid), layout_.user_cols)).Add("  ");
      l.Add(PadLeft(gp->used_memory_bytes ? FormatBytes(*gp->used_memory_bytes) : std::string(kNA),
                    9))
          .Add("  ");
      l.Add(PadRight("SM " + Pct(gp->sm_util_pct), 7)).Add("  ");
      l.Add(PadLeft(AgeText(host), 6)).Add("  ");
      l.Add(PadRight(StateWord(host, layout_.narrow), layout_.state_cols), StateTone(host));
      l.Add("  ").Add(CommandText(*gp, host));
      Emit(l);
    }
  }

  // One line per GPU naming unlisted holders of its device file.
  void GpuHolders(const Gpu& gpu) {
    std::vector<std::string> who;
    std::string file;
    for (const HostProcess* p : holders_) {
      for (const std::string& f : p->device_files) {
        if (GpuIndexForDeviceFile(s_, f) == gpu.index) {
          who.push_back(fmt::format("{} ({})", p->pid, SanitizeForTerminal(UserLabel(s_, p->pid))));
          file = SanitizeForTerminal(f);
          break;
        }
      }
    }
    if (who.empty()) return;
    const std::string indent = layout_.narrow ? "  " : "    ";
    Emit(StyledLine()
             .Add(indent + "! ", Tone::kBoldYellow)
             .Add(fmt::format("{} held by {} process{} not listed by the driver: {}", file,
                              who.size(), who.size() == 1 ? "" : "es", fmt::join(who, ", ")),
                  Tone::kYellow));
  }

  void HoldersSection() {
    if (holders_.empty()) return;
    Blank();
    Emit(StyledLine().Add("Not listed by the driver, but holding GPU device files:",
                          Tone::kBoldYellow));
    const std::string indent = layout_.narrow ? "  " : "    ";
    for (const HostProcess* p : holders_) {
      std::vector<std::string> files;
      for (const std::string& f : p->device_files) {
        std::string_view v = f;
        if (v.starts_with("/dev/")) v.remove_prefix(5);
        files.push_back(SanitizeForTerminal(v));
      }
      StyledLine l;
      l.Add(indent).Add(PadLeft(std::to_string(p->pid), layout_.pid_cols)).Add("  ");
      l.Add(Cell(SanitizeForTerminal(UserLabel(s_, p->pid)), layout_.user_cols)).Add("  ");
      l.Add(PadLeft(AgeText(p), 6)).Add("  ");
      l.Add(PadRight(StateWord(p, layout_.narrow), layout_.state_cols), StateTone(p));
      l.Add("  ").Add(fmt::format("holds {}", fmt::join(files, ",")), Tone::kYellow);
      l.Add("  ").Add(OwnerTags(*p) + CommandOf(std::nullopt, p));
      Emit(l);
    }
  }

  void UsersSection() {
    // Offline (an XML dump) nobody's owner is known: a table of "?" says nothing.
    if (!s_.processes_scanned) return;
    const std::vector<UserTotal> totals = ComputeUserTotals(s_);
    if (totals.empty()) return;
    Blank();
    const int user_cols = std::max(layout_.user_cols, 12);
    Emit(StyledLine().Add(PadRight("USER", user_cols) + "  " + PadLeft("PROCS", 5) + "  " +
                              PadRight("GPUS", 12) + "  " + PadLeft("VRAM", 10),
                          Tone::kBold));
    for (const UserTotal& t : totals) {
      std::string vram = std::string(kNA);
      if (t.memory_known > 0) {
        vram = (t.memory_unknown > 0 ? "≥" : "") + FormatBytes(t.used_memory_bytes);
      }
      std::string gpus =
          t.gpu_indices.empty() ? "-" : fmt::format("{}", fmt::join(t.gpu_indices, ","));
      StyledLine l;
      l.Add(Cell(SanitizeForTerminal(t.user), user_cols)).Add("  ");
      l.Add(PadLeft(std::to_string(t.pids.size()), 5)).Add("  ");
      l.Add(Cell(gpus, 12)).Add("  ").Add(PadLeft(vram, 10));
      if (!t.unlisted_holder_pids.empty()) {
        l.Add(fmt::format("  +{} unlisted holder{}", t.unlisted_holder_pids.size(),
                          t.unlisted_holder_pids.size() == 1 ? "" : "s"),
              Tone::kYellow);
      }
      Emit(l);
    }
  }

  const Snapshot& s_;
  bool color_;
  bool verbose_;
  Layout layout_;
  std::vector<const HostProcess*> holders_;
  std::string out_;
};

}  // namespace

std::string RenderStatusText(const Snapshot& snapshot, const TextOptions& options) {
  return Renderer(snapshot, options).Render();
}

}  // namespace gw::render
