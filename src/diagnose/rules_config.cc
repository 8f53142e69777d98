// Configuration rules: compute mode, MIG, persistence, and the caller's
// CUDA_VISIBLE_DEVICES / CUDA_DEVICE_ORDER.
#include <algorithm>
#include <charconv>
#include <set>

#include <fmt/format.h>

#include "core/units.h"
#include "diagnose/placement.h"
#include "diagnose/rule_context.h"

namespace gw::diagnose::internal {
namespace {

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// One CUDA_VISIBLE_DEVICES entry, resolved against the snapshot.
struct CvdEntry {
  std::string text;
  enum Kind { kIndex, kUuid, kMig, kInvalid } kind = kInvalid;
  Opt<unsigned> index;  // kIndex: the CUDA index; kUuid: the GPU's NVML index.
};

CvdEntry ParseEntry(std::string_view raw, const Snapshot& snapshot, unsigned gpu_count) {
  CvdEntry e;
  std::string_view text = Trim(raw);
  e.text = std::string(text);
  if (text.empty()) return e;
  if (text.substr(0, 4) == "MIG-") {
    e.kind = CvdEntry::kMig;
    return e;
  }
  if (text.substr(0, 4) == "GPU-") {
    // CUDA accepts any unique prefix of a GPU UUID.
    unsigned matches = 0;
    for (const Gpu& gpu : snapshot.gpus) {
      if (gpu.uuid && gpu.uuid->compare(0, text.size(), text) == 0) {
        ++matches;
        e.index = gpu.index;
      }
    }
    if (matches == 1) e.kind = CvdEntry::kUuid;
    return e;
  }
  unsigned value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec == std::errc() && end == text.data() + text.size() && value < gpu_count) {
    e.kind = CvdEntry::kIndex;
    e.index = value;
  }
  return e;
}

// Busy for a newcomer: unreachable, full (or short of the need), saturated,
// taken in exclusive mode, or prohibited.
bool BusyForNewWork(const RuleContext& ctx, size_t i) {
  const Gpu& gpu = ctx.latest().gpus[i];
  const DiagnoseOptions& o = ctx.options();
  if (gpu.unreachable || VramFull(gpu, o) || SaturatedOverWindow(ctx.Series(i), o)) return true;
  if (gpu.compute_mode == ComputeMode::kProhibited) return true;
  if (ExclusiveMode(gpu) && HasComputeProcess(gpu)) return true;
  Opt<uint64_t> free = FreeBytes(gpu);
  return o.need && free && *free < o.need->bytes_per_gpu;
}

}  // namespace

void RuleComputeMode(const RuleContext& ctx, std::vector<Finding>& out) {
  const Snapshot& latest = ctx.latest();
  for (const Gpu& gpu : latest.gpus) {
    if (gpu.unreachable || !gpu.compute_mode) continue;
    if (*gpu.compute_mode == ComputeMode::kProhibited) {
      Finding f = MakeFinding("COMPUTE_MODE_PROHIBITED", {gpu.index}, {},
                              fmt::format("GPU {} is in compute mode PROHIBITED: no process may "
                                          "use it",
                                          gpu.index),
                              1);
      f.evidence.push_back(TextEvidence("compute_mode", "PROHIBITED"));
      AddCatalogSteps(f);
      out.push_back(std::move(f));
      continue;
    }
    if (!ExclusiveMode(gpu) || !gpu.processes_known || !HasComputeProcess(gpu)) continue;
    std::vector<pid_t> pids;
    for (const GpuProcess& p : gpu.processes) {
      if (p.type != GpuProcessType::kGraphics) pids.push_back(p.pid);
    }
    const pid_t first = pids.front();
    const GpuProcess* gp = FindGpuProcess(gpu, first);
    const char* mode = *gpu.compute_mode == ComputeMode::kExclusiveThread ? "EXCLUSIVE_THREAD"
                                                                          : "EXCLUSIVE_PROCESS";
    Finding f = MakeFinding(
        "COMPUTE_MODE_EXCLUSIVE", {gpu.index}, pids,
        fmt::format("GPU {} is in compute mode {} and {} holds it: any other process gets \"all "
                    "CUDA-capable devices are busy or unavailable\"",
                    gpu.index, mode, ProcessText(latest, first, FindHost(latest, first), gp)),
        1);
    f.evidence.push_back(TextEvidence("compute_mode", mode));
    StepValues values;
    values.pid = first;
    AddCatalogSteps(f, values);
    out.push_back(std::move(f));
  }
}

void RuleMig(const RuleContext& ctx, std::vector<Finding>& out) {
  for (const Gpu& gpu : ctx.latest().gpus) {
    if (!gpu.mig_mode_current.value_or(false)) continue;
    Finding f = MakeFinding("MIG_ENABLED", {gpu.index}, {},
                            fmt::format("GPU {} is in MIG mode: programs get an instance, not the "
                                        "whole GPU, and all instances may be taken",
                                        gpu.index),
                            1);
    f.evidence.push_back(TextEvidence("mig_mode", "enabled"));
    if (gpu.mig_mode_pending && !*gpu.mig_mode_pending) {
      f.evidence.push_back(TextEvidence("mig_mode_pending", "disabled after the next GPU reset"));
    }
    AddCatalogSteps(f);
    out.push_back(std::move(f));
  }
}

void RulePersistence(const RuleContext& ctx, std::vector<Finding>& out) {
  std::vector<unsigned> off;
  for (const Gpu& gpu : ctx.latest().gpus) {
    if (!gpu.unreachable && gpu.persistence_mode == false) off.push_back(gpu.index);
  }
  if (off.empty()) return;
  Finding f = MakeFinding("PERSISTENCE_OFF", off, {},
                          fmt::format("Persistence mode is off on GPU {}", GpuList(off)),
                          static_cast<double>(off.size()));
  f.evidence.push_back(
      NumberEvidence("gpus", static_cast<double>(off.size()), "count",
                     fmt::format("{} of {}", off.size(), ctx.latest().gpus.size())));
  AddCatalogSteps(f);
  out.push_back(std::move(f));
}

void RuleCudaVisibleDevices(const RuleContext& ctx, std::vector<Finding>& out) {
  const DiagnoseOptions& o = ctx.options();
  if (!ctx.live() || !o.cuda_visible_devices) return;
  const Snapshot& latest = ctx.latest();
  if (latest.gpus.empty()) return;  // Nothing known to check against.
  const unsigned gpu_count =
      latest.system.gpu_count.value_or(static_cast<unsigned>(latest.gpus.size()));
  const std::string shown = Safe(*o.cuda_visible_devices);

  // CUDA reads the list up to the first invalid entry and drops the rest.
  std::vector<CvdEntry> valid;
  std::vector<std::string> dropped;
  bool mig = false;
  std::string_view rest = *o.cuda_visible_devices;
  bool stopped = false;
  while (true) {
    size_t comma = rest.find(',');
    std::string_view raw = rest.substr(0, comma);
    if (!stopped) {
      CvdEntry e = ParseEntry(raw, latest, gpu_count);
      if (e.kind == CvdEntry::kInvalid) {
        stopped = true;
        dropped.push_back(Safe(raw));
      } else {
        mig = mig || e.kind == CvdEntry::kMig;
        valid.push_back(std::move(e));
      }
    } else {
      dropped.push_back(Safe(raw));
    }
    if (comma == std::string_view::npos) break;
    rest.remove_prefix(comma + 1);
  }

  if (valid.empty()) {
    Finding f = MakeFinding(
        "CUDA_VISIBLE_DEVICES_NONE", {}, {},
        fmt::format("CUDA_VISIBLE_DEVICES=\"{}\" selects no GPU: CUDA programs see no device",
                    shown),
        1);
    f.evidence.push_back(TextEvidence("CUDA_VISIBLE_DEVICES", shown));
    f.evidence.push_back(
        NumberEvidence("gpus", gpu_count, "count", fmt::format("{} on this server", gpu_count)));
    AddCatalogSteps(f);
    out.push_back(std::move(f));
    return;
  }
  if (!dropped.empty()) {
    Finding f = MakeFinding(
        "CUDA_VISIBLE_DEVICES_INVALID", {}, {},
        fmt::format("CUDA_VISIBLE_DEVICES=\"{}\": \"{}\" is not a GPU of this server, so CUDA "
                    "ignores it and everything after it ({})",
                    shown, dropped.front(), fmt::join(dropped, ",")),
        static_cast<double>(dropped.size()));
    f.evidence.push_back(TextEvidence("CUDA_VISIBLE_DEVICES", shown));
    f.evidence.push_back(NumberEvidence("gpus", gpu_count, "count",
                                        fmt::format("{} on this server (indices 0-{})", gpu_count,
                                                    gpu_count == 0 ? 0 : gpu_count - 1)));
    AddCatalogSteps(f);
    out.push_back(std::move(f));
  }

  // Index order: CUDA's default FASTEST_FIRST equals the PCI order that
  // nvidia-smi uses only when all GPUs are the same model.
  const bool pci_order = o.cuda_device_order && *o.cuda_device_order == "PCI_BUS_ID";
  std::set<std::string> models;
  bool names_known = true;
  for (const Gpu& gpu : latest.gpus) {
    if (gpu.name) {
      models.insert(*gpu.name);
    } else {
      names_known = false;
    }
  }
  const bool has_index = std::any_of(valid.begin(), valid.end(),
                                     [](const CvdEntry& e) { return e.kind == CvdEntry::kIndex; });
  const bool order_differs = !pci_order && models.size() > 1;
  if (has_index && order_differs) {
    Finding f = MakeFinding(
        "CUDA_VISIBLE_DEVICES_ORDER", {}, {},
        fmt::format("CUDA_VISIBLE_DEVICES=\"{}\" uses indices, but without "
                    "CUDA_DEVICE_ORDER=PCI_BUS_ID CUDA numbers these {} GPU models fastest "
                    "first, not as nvidia-smi does",
                    shown, models.size()),
        1);
    f.evidence.push_back(TextEvidence("CUDA_DEVICE_ORDER",
                                      o.cuda_device_order ? Safe(*o.cuda_device_order) : "unset"));
    AddCatalogSteps(f);
    out.push_back(std::move(f));
  }

  // Selected GPUs all busy while others are free? Only when every entry maps
  // to a known GPU.
  const bool index_mappable = pci_order || (names_known && models.size() <= 1);
  if (mig || (has_index && !index_mappable)) return;
  std::set<unsigned> selected;
  for (const CvdEntry& e : valid) selected.insert(*e.index);
  std::vector<unsigned> busy_selected, free_others;
  for (size_t i = 0; i < latest.gpus.size(); ++i) {
    const Gpu& gpu = latest.gpus[i];
    const bool busy = BusyForNewWork(ctx, i);
    if (selected.count(gpu.index)) {
      if (!busy) return;  // At least one selected GPU is free: nothing to say.
      busy_selected.push_back(gpu.index);
    } else if (!busy && gpu.memory.total_bytes && FreeBytes(gpu)) {
      free_others.push_back(gpu.index);
    }
  }
  if (busy_selected.empty() || free_others.empty()) return;
  Finding f = MakeFinding(
      "CUDA_VISIBLE_DEVICES_BUSY", busy_selected, {},
      fmt::format("CUDA_VISIBLE_DEVICES=\"{}\" selects only busy GPU {}, while GPU {} {} free",
                  shown, GpuList(busy_selected), GpuList(free_others),
                  free_others.size() == 1 ? "is" : "are"),
      static_cast<double>(busy_selected.size()));
  f.evidence.push_back(TextEvidence("CUDA_VISIBLE_DEVICES", shown));
  f.evidence.push_back(TextEvidence("free_gpus", GpuList(free_others)));
  StepValues values;
  values.gpus = GpuList(free_others);
  AddCatalogSteps(f, values);
  out.push_back(std::move(f));
}

}  // namespace gw::diagnose::internal
