// Health rules from NVML: reachability, the driver, memory errors, PCIe,
// NVLink, temperature and clock-event reasons.
#include <algorithm>
#include <array>
#include <map>
#include <set>

#include <fmt/format.h>

#include "core/units.h"
#include "diagnose/rule_context.h"

namespace gw::diagnose::internal {
namespace {

// The finding code for a ProbeError code; empty for errors that are not
// findings (a single unsupported field, ...).
std::string_view CodeForError(const ProbeError& e) {
  if (e.code == "timeout") return e.source == "proc" ? "PROC_SCAN_TIMEOUT" : "DRIVER_TIMEOUT";
  if (e.code == "gpu_lost") return "GPU_LOST";
  if (e.code == "driver_not_loaded") return "DRIVER_NOT_LOADED";
  if (e.code == "version_mismatch") return "DRIVER_VERSION_MISMATCH";
  if (e.code == "library_not_found") return "NVML_NOT_FOUND";
  if (e.code == "no_permission") return "NO_PERMISSION";
  if (e.code == "reset_required") return "GPU_RESET_REQUIRED";
  if (e.code == "insufficient_power") return "GPU_INSUFFICIENT_POWER";
  if (e.code == "corrupted_inforom") return "INFOROM_CORRUPTED";
  return {};
}

std::string_view CodeForUnreachable(const ProbeError& e) {
  std::string_view code = CodeForError(e);
  if (code.empty() || code == "NVML_NOT_FOUND" || code == "PROC_SCAN_TIMEOUT") {
    return "GPU_UNREACHABLE";
  }
  return code;
}

// `slot`: where GPU `gpu` sits, when known, so that a lost GPU reads as the
// one the kernel log names by address.
std::string MessageFor(std::string_view code, Opt<unsigned> gpu, const Opt<PciAddress>& slot,
                       const ProbeError& e) {
  const std::string detail = Safe(e.message);
  const std::string where = gpu ? fmt::format("GPU {}", *gpu) : std::string("The driver");
  if (code == "GPU_LOST") {
    return fmt::format("{} is lost: it fell off the bus ({})", GpuWithPci(*gpu, slot), detail);
  }
  if (code == "GPU_UNREACHABLE") {
    return fmt::format("{} cannot be reached: {}", GpuWithPci(*gpu, slot), detail);
  }
  if (code == "DRIVER_TIMEOUT") {
    return fmt::format("{} did not answer in time: the driver is not responding ({})", where,
                       detail);
  }
  if (code == "NO_PERMISSION") {
    return fmt::format("{}: no permission to read it ({})", gpu ? where : "NVML", detail);
  }
  if (code == "GPU_RESET_REQUIRED") return fmt::format("{} needs a reset ({})", where, detail);
  if (code == "GPU_INSUFFICIENT_POWER") {
    return fmt::format("{} lacks external power ({})", where, detail);
  }
  if (code == "INFOROM_CORRUPTED") return fmt::format("{}: InfoROM corrupted ({})", where, detail);
  return detail;
}

struct Key {
  std::string_view code;
  Opt<unsigned> gpu;
  bool operator<(const Key& o) const { return code != o.code ? code < o.code : gpu < o.gpu; }
};

Opt<uint64_t> Sum(Opt<uint64_t> a, Opt<uint64_t> b) {
  if (!a && !b) return std::nullopt;
  return a.value_or(0) + b.value_or(0);
}

// Bits of the clock-event mask set in every sample where it is known (0 when
// it is known in none).
uint64_t SustainedEvents(std::span<const Gpu* const> series, unsigned* known) {
  uint64_t all = ~uint64_t{0};
  *known = 0;
  for (const Gpu* g : series) {
    if (g == nullptr || !g->clock_event_reasons) continue;
    all &= *g->clock_event_reasons;
    ++*known;
  }
  return *known ? all : 0;
}

std::string ClocksText(const Gpu& gpu) {
  const Opt<unsigned> now = gpu.clocks.sm_mhz ? gpu.clocks.sm_mhz : gpu.clocks.graphics_mhz;
  const Opt<unsigned> max =
      gpu.clocks.max_sm_mhz ? gpu.clocks.max_sm_mhz : gpu.clocks.max_graphics_mhz;
  if (now && max) return fmt::format("{} of {} MHz", *now, *max);
  if (now) return fmt::format("{} MHz", *now);
  return "unknown";
}

void AddThermalEvidence(Finding& f, const Gpu& gpu) {
  if (gpu.temperature_c) {
    f.evidence.push_back(NumberEvidence("temperature", *gpu.temperature_c, "C",
                                        fmt::format("{} C", *gpu.temperature_c)));
  }
  if (gpu.temperature_slowdown_c) {
    f.evidence.push_back(NumberEvidence("slowdown_temperature", *gpu.temperature_slowdown_c, "C",
                                        fmt::format("{} C", *gpu.temperature_slowdown_c)));
  }
  if (gpu.power_draw_w) {
    std::string text = gpu.power_limit_w ? fmt::format("{:.0f} W of {:.0f} W", *gpu.power_draw_w,
                                                       *gpu.power_limit_w)
                                         : fmt::format("{:.0f} W", *gpu.power_draw_w);
    f.evidence.push_back(NumberEvidence("power", *gpu.power_draw_w, "W", text));
  }
  if (gpu.fan_speed_pct) {
    f.evidence.push_back(
        NumberEvidence("fan", *gpu.fan_speed_pct, "%", fmt::format("{} %", *gpu.fan_speed_pct)));
  }
}

// DCGM's expected PCIe replays per lane per minute, from a bit error rate of
// 1e-12 at each generation's line rate.
double ReplaysPerLaneMinute(unsigned gen) {
  static constexpr std::array<double, 6> kRate = {0.15, 0.3, 0.48, 0.96, 1.92, 3.84};
  if (gen == 0) return kRate[0];
  return kRate[std::min<size_t>(gen, kRate.size()) - 1];
}

}  // namespace

void RuleProbeErrors(const RuleContext& ctx, std::vector<Finding>& out) {
  const Snapshot& latest = ctx.latest();
  std::map<Key, const ProbeError*> found;
  for (const Gpu& gpu : latest.gpus) {
    if (gpu.unreachable)
      found.emplace(Key{CodeForUnreachable(*gpu.unreachable), gpu.index}, &*gpu.unreachable);
  }
  for (const ProbeError& e : latest.errors) {
    std::string_view code = CodeForError(e);
    if (code.empty()) continue;
    // GPU_LOST names a GPU; without one it is a driver-wide failure.
    if (code == "GPU_LOST" && !e.gpu_index) code = "GPU_UNREACHABLE";
    if (code == "GPU_UNREACHABLE" && !e.gpu_index) continue;
    found.emplace(Key{code, e.gpu_index}, &e);
  }
  // A GPU that is lost or unreachable needs no second finding for the same failure.
  std::set<unsigned> down;
  for (const auto& [key, e] : found) {
    if (key.gpu && (key.code == "GPU_LOST" || key.code == "GPU_UNREACHABLE")) down.insert(*key.gpu);
  }
  // Driver timeouts earlier in the window count too: a driver that hangs now
  // and then is not healthy.
  unsigned timeout_samples = 0;
  for (const Snapshot& s : ctx.history()) {
    const bool timed_out = std::any_of(s.errors.begin(), s.errors.end(), [](const ProbeError& e) {
      return e.code == "timeout" && e.source != "proc";
    });
    if (!timed_out) continue;
    ++timeout_samples;
    if (&s != &latest) {
      for (const ProbeError& e : s.errors) {
        if (e.code == "timeout" && e.source != "proc") {
          found.emplace(Key{"DRIVER_TIMEOUT", e.gpu_index}, &e);
        }
      }
    }
  }

  for (const auto& [key, e] : found) {
    if (key.gpu && down.count(*key.gpu) && key.code != "GPU_LOST" &&
        key.code != "GPU_UNREACHABLE") {
      continue;
    }
    std::vector<unsigned> gpus;
    if (key.gpu) gpus.push_back(*key.gpu);
    const bool gpu_down = key.gpu && (key.code == "GPU_LOST" || key.code == "GPU_UNREACHABLE");
    const Opt<PciAddress> slot = gpu_down ? ctx.Incidents().gpus.AddressOf(*key.gpu) : std::nullopt;
    std::string message = MessageFor(key.code, key.gpu, slot, *e);
    // The kernel's account of the same GPU (an Xid 79 by its address), so
    // that this finding and the Xid finding read as one GPU's failure.
    const XidIncident* logged = gpu_down ? KernelIncidentOf(ctx.Incidents(), *key.gpu) : nullptr;
    if (logged != nullptr) {
      message += fmt::format("; the kernel logged Xid {} for the same GPU{}", logged->xid,
                             slot ? fmt::format(" (PCI {})", slot->KernelText()) : "");
    }
    Finding f =
        MakeFinding(key.code, gpus, {}, std::move(message),
                    key.gpu ? 1.0 : static_cast<double>(std::max<size_t>(1, latest.gpus.size())));
    f.evidence.push_back(TextEvidence("error", Safe(e->message)));
    if (slot) f.evidence.push_back(PciEvidence(ctx.Incidents().gpus, *key.gpu, *slot));
    if (logged != nullptr) {
      f.evidence.push_back(TextEvidence("kernel_event", Safe(logged->event->raw)));
    }
    if (e->nvml_return) {
      f.evidence.push_back(NumberEvidence("nvml_return", *e->nvml_return, "code",
                                          fmt::format("{}", *e->nvml_return)));
    }
    if (key.code == "DRIVER_TIMEOUT") {
      f.evidence.push_back(NumberEvidence(
          "samples", timeout_samples, "count",
          fmt::format("timed out in {} of {} samples", timeout_samples, ctx.samples())));
    }
    AddCatalogSteps(f);
    out.push_back(std::move(f));
  }
}

void RuleNoGpu(const RuleContext& ctx, std::vector<Finding>& out) {
  const Snapshot& latest = ctx.latest();
  if (!latest.gpus.empty() || latest.system.gpu_count != 0u) return;
  Finding f = MakeFinding("NO_GPU_VISIBLE", {}, {}, "NVML works but reports no GPU", 1);
  if (latest.system.driver_version) {
    f.evidence.push_back(TextEvidence("driver", Safe(*latest.system.driver_version)));
  }
  AddCatalogSteps(f);
  out.push_back(std::move(f));
}

void RuleEcc(const RuleContext& ctx, std::vector<Finding>& out) {
  const Snapshot& latest = ctx.latest();
  for (size_t i = 0; i < latest.gpus.size(); ++i) {
    const Gpu& gpu = latest.gpus[i];
    const EccInfo& ecc = gpu.ecc;
    const Opt<uint64_t> dbe = ecc.volatile_uncorrected;
    if (!dbe || *dbe == 0) continue;
    // Judged with the rest of the memory's evidence (memory_health.h): the
    // counters alone do not say whether the GPU contained the error.
    const MemoryHealth& memory = ctx.Memory(i);
    auto add_memory = [&](Finding& f) {
      f.evidence.push_back(TextEvidence("memory_health", memory.summary));
    };
    if (memory.contained && memory.contained_by_counters) {
      // Only SRAM errors, below NVIDIA's threshold: contained by the GPU. The
      // application that hit them must restart; the GPU serves the others and
      // is reset when convenient.
      Finding f = MakeFinding(
          "ECC_SRAM_CONTAINED", {gpu.index}, {},
          fmt::format("GPU {} had {} uncorrectable SRAM ECC error{} since the driver loaded, "
                      "contained by the GPU (no DRAM error)",
                      gpu.index, *ecc.volatile_sram_uncorrected,
                      *ecc.volatile_sram_uncorrected == 1 ? "" : "s"),
          1);
      f.evidence.push_back(NumberEvidence(
          "volatile_sram_uncorrected", static_cast<double>(*ecc.volatile_sram_uncorrected), "count",
          fmt::format("{}", *ecc.volatile_sram_uncorrected)));
      f.evidence.push_back(NumberEvidence("volatile_dram_uncorrected", 0, "count", "0"));
      add_memory(f);
      AddCatalogSteps(f);
      out.push_back(std::move(f));
      continue;
    }
    auto add_counts = [&](Finding& f) {
      f.evidence.push_back(NumberEvidence("volatile_uncorrected", static_cast<double>(*dbe),
                                          "count", fmt::format("{}", *dbe)));
      if (ecc.aggregate_uncorrected) {
        f.evidence.push_back(NumberEvidence(
            "aggregate_uncorrected", static_cast<double>(*ecc.aggregate_uncorrected), "count",
            fmt::format("{} over the GPU's life", *ecc.aggregate_uncorrected)));
      }
      add_memory(f);
    };
    if (memory.contained) {
      // The kernel log says the GPU contained it (Xid 94, "RST: No") and
      // nothing says otherwise: NVIDIA's resolution is to restart the
      // application; the GPU keeps serving the others.
      const unsigned contained = memory.xids.count(94) ? memory.xids.at(94) : 0;
      Finding f = MakeFinding(
          "ECC_DBE_CONTAINED", {gpu.index}, {},
          fmt::format("GPU {} had {} uncorrectable ECC error{} since the driver loaded, contained "
                      "by the GPU (Xid 94 x{}, no uncontained error): it serves on",
                      gpu.index, *dbe, *dbe == 1 ? "" : "s", contained),
          1);
      add_counts(f);
      AddCatalogSteps(f);
      out.push_back(std::move(f));
      continue;
    }
    Finding f = MakeFinding(
        "ECC_DBE_VOLATILE", {gpu.index}, {},
        fmt::format("GPU {} had {} uncorrectable ECC error{} since the driver loaded{}", gpu.index,
                    *dbe, *dbe == 1 ? "" : "s",
                    memory.uncontained ? ", not contained (the kernel log says so)"
                                       : ", none shown contained (no Xid 94 in the kernel log)"),
        1);
    add_counts(f);
    AddCatalogSteps(f);
    out.push_back(std::move(f));
  }
}

void RuleRetiredPages(const RuleContext& ctx, std::vector<Finding>& out) {
  const DiagnoseOptions& o = ctx.options();
  for (const Gpu& gpu : ctx.latest().gpus) {
    const RetiredPages& r = gpu.retired_pages;
    const Opt<uint64_t> total = Sum(r.single_bit, r.double_bit);
    const MemoryHealth& memory = ctx.Memory(static_cast<size_t>(&gpu - ctx.latest().gpus.data()));
    auto evidence = [&](Finding& f) {
      f.evidence.push_back(TextEvidence("memory_health", memory.summary));
      if (r.single_bit) {
        f.evidence.push_back(NumberEvidence("single_bit", static_cast<double>(*r.single_bit),
                                            "pages", fmt::format("{}", *r.single_bit)));
      }
      if (r.double_bit) {
        f.evidence.push_back(NumberEvidence("double_bit", static_cast<double>(*r.double_bit),
                                            "pages", fmt::format("{}", *r.double_bit)));
      }
    };
    if (total && *total >= o.retired_pages_limit) {
      Finding f = MakeFinding("RETIRED_PAGES_LIMIT", {gpu.index}, {},
                              fmt::format("GPU {} has retired {} memory pages (limit {})",
                                          gpu.index, *total, o.retired_pages_limit),
                              1);
      evidence(f);
      AddCatalogSteps(f);
      out.push_back(std::move(f));
    } else if (r.double_bit && *r.double_bit > o.retired_pages_dbe_limit) {
      Finding f = MakeFinding("RETIRED_PAGES_DBE", {gpu.index}, {},
                              fmt::format("GPU {} has retired {} pages for double-bit errors "
                                          "(more than {})",
                                          gpu.index, *r.double_bit, o.retired_pages_dbe_limit),
                              1);
      evidence(f);
      AddCatalogSteps(f);
      out.push_back(std::move(f));
    }
    if (r.pending.value_or(false)) {
      Finding f = MakeFinding(
          "RETIRED_PAGES_PENDING", {gpu.index}, {},
          fmt::format("GPU {} has a page retirement waiting for a reset", gpu.index), 1);
      evidence(f);
      AddCatalogSteps(f);
      out.push_back(std::move(f));
    }
  }
}

void RuleRowRemap(const RuleContext& ctx, std::vector<Finding>& out) {
  const DiagnoseOptions& o = ctx.options();
  for (const Gpu& gpu : ctx.latest().gpus) {
    const RemappedRows& r = gpu.remapped_rows;
    const MemoryHealth& memory = ctx.Memory(static_cast<size_t>(&gpu - ctx.latest().gpus.data()));
    auto evidence = [&](Finding& f) {
      f.evidence.push_back(TextEvidence("memory_health", memory.summary));
      if (r.correctable) {
        f.evidence.push_back(NumberEvidence("correctable", static_cast<double>(*r.correctable),
                                            "rows", fmt::format("{}", *r.correctable)));
      }
      if (r.uncorrectable) {
        f.evidence.push_back(NumberEvidence("uncorrectable", static_cast<double>(*r.uncorrectable),
                                            "rows", fmt::format("{}", *r.uncorrectable)));
      }
    };
    bool broken = false;
    if (r.failure.value_or(false)) {
      Finding f = MakeFinding("ROW_REMAP_FAILED", {gpu.index}, {},
                              fmt::format("GPU {}: row remapping failed; its memory can no longer "
                                          "repair itself",
                                          gpu.index),
                              1);
      evidence(f);
      AddCatalogSteps(f);
      out.push_back(std::move(f));
      broken = true;
    }
    if (r.uncorrectable && *r.uncorrectable >= o.row_remap_uncorrectable_limit) {
      Finding f =
          MakeFinding("ROW_REMAP_LIMIT", {gpu.index}, {},
                      fmt::format("GPU {} has remapped {} rows for uncorrectable errors "
                                  "(limit {})",
                                  gpu.index, *r.uncorrectable, o.row_remap_uncorrectable_limit),
                      1);
      evidence(f);
      AddCatalogSteps(f);
      out.push_back(std::move(f));
      broken = true;
    }
    if (!broken && r.pending.value_or(false)) {
      Finding f =
          MakeFinding("ROW_REMAP_PENDING", {gpu.index}, {},
                      fmt::format("GPU {} has a row remap waiting for a GPU reset", gpu.index), 1);
      evidence(f);
      AddCatalogSteps(f);
      out.push_back(std::move(f));
    }
  }
}

void RulePcieLink(const RuleContext& ctx, std::vector<Finding>& out) {
  const DiagnoseOptions& o = ctx.options();
  const Snapshot& latest = ctx.latest();
  for (size_t i = 0; i < latest.gpus.size(); ++i) {
    const Gpu* worst = nullptr;
    unsigned loaded = 0;
    bool always_low = true;
    for (const Gpu* g : ctx.Series(i)) {
      if (g == nullptr || !g->utilization_gpu_pct ||
          *g->utilization_gpu_pct < o.pcie_load_util_pct) {
        continue;
      }
      const PcieInfo& p = g->pcie;
      const bool gen_known = p.link_gen_current && p.link_gen_max;
      const bool width_known = p.link_width_current && p.link_width_max;
      if (!gen_known && !width_known) continue;
      ++loaded;
      const bool low = (gen_known && *p.link_gen_current < *p.link_gen_max) ||
                       (width_known && *p.link_width_current < *p.link_width_max);
      if (!low) {
        always_low = false;
        break;
      }
      worst = g;
    }
    if (loaded == 0 || !always_low || worst == nullptr) continue;
    const PcieInfo& p = worst->pcie;
    auto link = [](Opt<unsigned> gen, Opt<unsigned> width) {
      return fmt::format("Gen{} x{}", gen ? fmt::format("{}", *gen) : "?",
                         width ? fmt::format("{}", *width) : "?");
    };
    const std::string now = link(p.link_gen_current, p.link_width_current);
    const std::string max = link(p.link_gen_max, p.link_width_max);
    Finding f = MakeFinding(
        "PCIE_LINK_DEGRADED", {latest.gpus[i].index}, {},
        fmt::format("GPU {}'s PCIe link runs at {} under load ({} %), below its maximum {}",
                    latest.gpus[i].index, now, *worst->utilization_gpu_pct, max),
        1);
    f.evidence.push_back(TextEvidence("link", now));
    f.evidence.push_back(TextEvidence("link_max", max));
    f.evidence.push_back(NumberEvidence(
        "loaded_samples", loaded, "count",
        fmt::format("{} loaded sample{}, all below the maximum", loaded, loaded == 1 ? "" : "s")));
    AddCatalogSteps(f);
    out.push_back(std::move(f));
  }
}

void RulePcieReplay(const RuleContext& ctx, std::vector<Finding>& out) {
  const DiagnoseOptions& o = ctx.options();
  const Snapshot& latest = ctx.latest();
  if (ctx.samples() < 2) return;
  for (size_t i = 0; i < latest.gpus.size(); ++i) {
    auto series = ctx.Series(i);
    const Gpu* first = nullptr;
    const Gpu* last = nullptr;
    int64_t first_ms = 0, last_ms = 0;
    unsigned gen = 0, width = 0;
    for (size_t s = 0; s < series.size(); ++s) {
      const Gpu* g = series[s];
      if (g == nullptr) continue;
      gen = std::max(gen, g->pcie.link_gen_current.value_or(g->pcie.link_gen_max.value_or(0)));
      width =
          std::max(width, g->pcie.link_width_current.value_or(g->pcie.link_width_max.value_or(0)));
      if (!g->pcie.replay_counter) continue;
      if (first == nullptr) {
        first = g;
        first_ms = ctx.history()[s].time_unix_ms;
      }
      last = g;
      last_ms = ctx.history()[s].time_unix_ms;
    }
    if (first == nullptr || first == last || gen == 0 || width == 0 || last_ms <= first_ms) {
      continue;
    }
    const uint64_t a = *first->pcie.replay_counter, b = *last->pcie.replay_counter;
    if (b < a) continue;  // Counter reset (driver reload): no rate to judge.
    const uint64_t delta = b - a;
    const double minutes = (last_ms - first_ms) / 60000.0;
    const double expected = ReplaysPerLaneMinute(gen) * width * minutes;
    if (delta < o.pcie_replay_min_count || static_cast<double>(delta) <= expected) continue;
    Finding f = MakeFinding(
        "PCIE_REPLAY_RATE", {latest.gpus[i].index}, {},
        fmt::format("GPU {}'s PCIe replay counter rose by {} in {}, above the {:.1f} expected "
                    "for Gen{} x{}",
                    latest.gpus[i].index, delta, FormatDuration(minutes * 60), expected, gen,
                    width),
        1);
    f.evidence.push_back(NumberEvidence("replays", static_cast<double>(delta), "count",
                                        fmt::format("{} (from {} to {})", delta, a, b)));
    f.evidence.push_back(
        NumberEvidence("expected", expected, "count", fmt::format("{:.2f}", expected)));
    AddCatalogSteps(f);
    out.push_back(std::move(f));
  }
}

void RuleNvlink(const RuleContext& ctx, std::vector<Finding>& out) {
  const Snapshot& latest = ctx.latest();
  // Active links per GPU, and the usual count per model.
  std::map<std::string, std::map<unsigned, unsigned>> counts_by_model;  // model -> count -> GPUs
  std::vector<Opt<unsigned>> active(latest.gpus.size());
  for (size_t i = 0; i < latest.gpus.size(); ++i) {
    const Gpu& gpu = latest.gpus[i];
    if (gpu.unreachable || gpu.nvlinks.empty()) continue;
    unsigned n = 0;
    bool all_known = true;
    for (const NvLinkState& l : gpu.nvlinks) {
      if (!l.active) all_known = false;
      if (l.active.value_or(false)) ++n;
    }
    if (!all_known) continue;
    active[i] = n;
    if (gpu.name) ++counts_by_model[*gpu.name][n];
  }
  for (size_t i = 0; i < latest.gpus.size(); ++i) {
    const Gpu& gpu = latest.gpus[i];
    if (gpu.unreachable) continue;
    // Links that were active earlier in the window and are not now.
    std::vector<unsigned> went_down;
    for (const NvLinkState& l : gpu.nvlinks) {
      if (l.active != false) continue;
      for (const Gpu* g : ctx.Series(i)) {
        if (g == nullptr || g == &gpu) continue;
        auto earlier = std::find_if(g->nvlinks.begin(), g->nvlinks.end(),
                                    [&](const NvLinkState& e) { return e.link == l.link; });
        if (earlier != g->nvlinks.end() && earlier->active == true) {
          went_down.push_back(l.link);
          break;
        }
      }
    }
    // Fewer active links than the other GPUs of the model (but not none: a
    // card without a bridge has none by design).
    Opt<unsigned> usual;
    if (active[i] && gpu.name) {
      const auto& counts = counts_by_model[*gpu.name];
      unsigned best_gpus = 0;
      for (const auto& [count, gpus] : counts) {
        if (gpus >= best_gpus) {
          best_gpus = gpus;
          usual = count;
        }
      }
      if (best_gpus < 2) usual.reset();
    }
    const bool fewer = usual && *active[i] > 0 && *active[i] < *usual;
    if (went_down.empty() && !fewer) continue;
    std::string message =
        !went_down.empty()
            ? fmt::format("GPU {}: NVLink {} went down during the window", gpu.index,
                          fmt::join(went_down, ", "))
            : fmt::format("GPU {} has {} active NVLinks; the other GPUs of its model have {}",
                          gpu.index, *active[i], *usual);
    Finding f = MakeFinding("NVLINK_DOWN", {gpu.index}, {}, std::move(message), 1);
    if (active[i]) {
      f.evidence.push_back(NumberEvidence("active_links", *active[i], "count",
                                          fmt::format("{} of {}", *active[i], gpu.nvlinks.size())));
    }
    if (usual) {
      f.evidence.push_back(
          NumberEvidence("usual_active_links", *usual, "count", fmt::format("{}", *usual)));
    }
    AddCatalogSteps(f);
    out.push_back(std::move(f));
  }
}

void RuleIdleThermal(const RuleContext& ctx, std::vector<Finding>& out) {
  const DiagnoseOptions& o = ctx.options();
  const Snapshot& latest = ctx.latest();
  for (size_t i = 0; i < latest.gpus.size(); ++i) {
    const Gpu& gpu = latest.gpus[i];
    if (gpu.unreachable) continue;
    // Both need the latest sample hot or racing: a cheap test before the window.
    const bool hot_now = gpu.temperature_c && *gpu.temperature_c >= o.hot_idle_temp_c;
    const bool racing_now = gpu.fan_speed_pct && *gpu.fan_speed_pct >= o.fan_idle_high_pct;
    if (!hot_now && !racing_now) continue;
    unsigned idle = 0, hot = 0, temps = 0, fans = 0, racing = 0;
    bool busy = false;
    Opt<int> first_temp, last_temp;
    Opt<unsigned> last_fan;
    for (const Gpu* g : ctx.Series(i)) {
      if (g == nullptr) continue;
      if (g->utilization_gpu_pct) {
        if (*g->utilization_gpu_pct > o.idle_util_max_pct) busy = true;
        ++idle;
      }
      for (const GpuProcess& p : g->processes) {
        if (p.sm_util_pct.value_or(0) > 0) busy = true;
      }
      if (g->temperature_c) {
        ++temps;
        if (*g->temperature_c >= o.hot_idle_temp_c) ++hot;
        if (!first_temp) first_temp = g->temperature_c;
        last_temp = g->temperature_c;
      }
      if (g->fan_speed_pct) {
        ++fans;
        if (*g->fan_speed_pct >= o.fan_idle_high_pct) ++racing;
        last_fan = g->fan_speed_pct;
      }
    }
    if (busy || idle == 0) continue;
    // Cooling down after a job that just ended: not a fault.
    if (first_temp && last_temp && *first_temp - *last_temp > o.cooling_drop_c) continue;
    if (temps > 0 && hot == temps) {
      Finding f =
          MakeFinding("HOT_WHILE_IDLE", {gpu.index}, {},
                      fmt::format("GPU {} is at {} C while idle ({} % utilisation)", gpu.index,
                                  *last_temp, gpu.utilization_gpu_pct.value_or(0)),
                      1);
      AddThermalEvidence(f, gpu);
      AddCatalogSteps(f);
      out.push_back(std::move(f));
    }
    // A fan is judged over time: one reading of a racing fan on an idle GPU
    // looks the same as a fan an administrator set by hand.
    if (fans > 1 && racing == fans) {
      Finding f = MakeFinding(
          "FAN_HIGH_WHILE_IDLE", {gpu.index}, {},
          fmt::format("GPU {}'s fan runs at {} % while the GPU is idle", gpu.index, *last_fan), 1);
      AddThermalEvidence(f, gpu);
      AddCatalogSteps(f);
      out.push_back(std::move(f));
    }
  }
}

// A power limit below this fraction of the default was lowered on purpose
// (boards differ from their default by a few watts at most).
constexpr double kLoweredPowerLimitFraction = 0.95;

void RuleClockEvents(const RuleContext& ctx, std::vector<Finding>& out) {
  const Snapshot& latest = ctx.latest();
  for (size_t i = 0; i < latest.gpus.size(); ++i) {
    const Gpu& gpu = latest.gpus[i];
    if (gpu.unreachable) continue;
    unsigned known = 0;
    const uint64_t all = SustainedEvents(ctx.Series(i), &known);
    if (all == 0) continue;
    const std::string in =
        known == 1 ? std::string("in the one sample") : fmt::format("in all {} samples", known);
    auto emit = [&](std::string_view code, std::string what) {
      Finding f = MakeFinding(
          code, {gpu.index}, {},
          fmt::format("GPU {}: {} {} (clocks {})", gpu.index, what, in, ClocksText(gpu)), 1);
      f.evidence.push_back(NumberEvidence("clock_event_reasons", static_cast<double>(all),
                                          "bitmask", fmt::format("0x{:x}", all)));
      AddThermalEvidence(f, gpu);
      AddCatalogSteps(f);
      out.push_back(std::move(f));
    };
    const bool thermal = all & clock_event::kHwThermalSlowdown;
    const bool brake = all & clock_event::kHwPowerBrakeSlowdown;
    if (thermal) emit("HW_THERMAL_SLOWDOWN", "hardware thermal slowdown engaged");
    if (brake) emit("HW_POWER_BRAKE", "external power brake engaged");
    if ((all & clock_event::kHwSlowdown) && !thermal && !brake) {
      emit("HW_SLOWDOWN", "hardware slowdown engaged");
    }
    if (all & clock_event::kSwThermalSlowdown) {
      emit("SW_THERMAL_SLOWDOWN", "the driver slows the clocks for temperature");
    }
    // Drawing up to the power limit under load is the GPU working as designed;
    // it is a finding only when the limit was lowered below the board's default.
    if ((all & clock_event::kSwPowerCap) && gpu.power_limit_w && gpu.power_default_limit_w &&
        *gpu.power_limit_w < kLoweredPowerLimitFraction * *gpu.power_default_limit_w) {
      emit(
          "POWER_CAPPED",
          fmt::format("clocks held at a power limit of {:.0f} W, lowered from the default {:.0f} W",
                      *gpu.power_limit_w, *gpu.power_default_limit_w));
    }
  }
}

}  // namespace gw::diagnose::internal
