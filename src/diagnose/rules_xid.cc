// Kernel-log rules. Every Xid is judged by the one catalog (kmsg/xid_catalog.h):
// its cause gives the finding's category, NVIDIA's action and the error's
// containment its verdict. Only current events judge (kmsg/event_age.h);
// older ones are listed as history. A GPU that fell off the bus and reads
// normally now is recovered. A GPU the kernel saw that no sample lists is
// missing: a server fault.
#include "diagnose/rules_xid.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <set>
#include <tuple>

#include <fmt/format.h>

#include "core/pci_address.h"
#include "diagnose/rule_context.h"
#include "kmsg/event_age.h"
#include "kmsg/nvrm_parser.h"
#include "proc/device_files.h"

namespace gw::diagnose {

Category XidCategory(kmsg::CauseClass cause) {
  switch (cause) {
    case kmsg::CauseClass::kApplication:
      return Category::kApplication;
    case kmsg::CauseClass::kEngine:
      return Category::kEngine;
    case kmsg::CauseClass::kDriver:
    case kmsg::CauseClass::kFirmware:
    case kmsg::CauseClass::kUnknown:
      return Category::kDriver;
    case kmsg::CauseClass::kMemory:
      return Category::kMemory;
    case kmsg::CauseClass::kBus:
      return Category::kBus;
    case kmsg::CauseClass::kThermalPower:
      return Category::kPower;
    case kmsg::CauseClass::kNvlink:
      return Category::kNvlink;
    case kmsg::CauseClass::kInformational:
      return Category::kHardware;
  }
  return Category::kDriver;
}

std::string_view XidFindingCode(kmsg::CauseClass cause, kmsg::XidImpact impact) {
  switch (impact) {
    case kmsg::XidImpact::kFault:
      return "XID_FATAL";
    case kmsg::XidImpact::kDegraded:
      return "XID_WARNING";
    case kmsg::XidImpact::kNone:
      return cause == kmsg::CauseClass::kApplication ? "XID_APPLICATION" : "XID_OTHER";
  }
  return "XID_WARNING";
}

namespace internal {
namespace {

using kmsg::KernelEvent;

struct Group {
  std::map<unsigned, unsigned> count;  // Xid -> incidents.
  const XidIncident* last = nullptr;
  const XidIncident* worst = nullptr;  // Sets the category of a history group.
  std::set<kmsg::HistoryReason> reasons;
};

// The kernel names a GPU by address; the user knows it by index: both, so
// this finding and NVML's about the same GPU (GPU_LOST) read as one GPU.
std::string Subject(const Where& w) {
  if (w.gpu) return GpuWithPci(*w.gpu, w.pci);
  if (w.pci) {
    return fmt::format("The GPU at PCI {} (no GPU listed has that address)", w.pci->KernelText());
  }
  return "A GPU";
}

// "fell off the bus (Xid 79)", ": double-bit ECC error (Xid 48)".
std::string What(unsigned xid, const kmsg::XidInfo& info) {
  if (xid == 79) return " fell off the bus (Xid 79)";
  return fmt::format(": {} (Xid {})", info.name, xid);
}

std::string ActorPrefix(kmsg::Actor a) {
  switch (a) {
    case kmsg::Actor::kUser:
      return "";
    case kmsg::Actor::kAdmin:
      return "admin: ";
    case kmsg::Actor::kVendor:
      return "vendor: ";
  }
  return "admin: ";
}

int ImpactRank(kmsg::XidImpact i) {
  return i == kmsg::XidImpact::kFault ? 2 : i == kmsg::XidImpact::kDegraded ? 1 : 0;
}

// The GPU answers NVML (or the dump) with real values.
bool ReadsNormally(const Gpu& gpu) {
  return !gpu.unreachable && (gpu.memory.total_bytes || gpu.utilization_gpu_pct);
}

bool NvmlCouldNotList(const Snapshot& s) {
  if (!s.gpus.empty()) return false;
  return std::any_of(s.errors.begin(), s.errors.end(), [](const ProbeError& e) {
    return (e.source == "nvml" || e.source == "probe") && !e.gpu_index;
  });
}

std::string Counts(const std::map<unsigned, unsigned>& count) {
  std::vector<std::string> all;
  for (const auto& [xid, n] : count) all.push_back(fmt::format("{} x{}", xid, n));
  return fmt::format("{}", fmt::join(all, ", "));
}

void AddEventEvidence(Finding& f, const Group& g) {
  unsigned events = 0;
  for (const auto& [xid, n] : g.count) {
    events += n;
    f.evidence.push_back(NumberEvidence(
        fmt::format("xid_{}", xid), n, "events",
        fmt::format("{} event{}: {}", n, n == 1 ? "" : "s", kmsg::LookupXid(xid).name)));
  }
  f.evidence.push_back(NumberEvidence("events", events, "count", fmt::format("{}", events)));
  if (g.last == nullptr) return;
  const KernelEvent& e = *g.last->event;
  if (e.time_unix_ms) {
    f.evidence.push_back(
        NumberEvidence("last_time", static_cast<double>(*e.time_unix_ms), "unix_ms", Safe(e.raw)));
  } else {
    f.evidence.push_back(TextEvidence("last_event", Safe(e.raw)));
  }
}

}  // namespace

void RuleXid(const RuleContext& ctx, std::vector<Finding>& out) {
  const std::span<const KernelEvent> events = ctx.events();
  const Snapshot& latest = ctx.latest();
  const XidIncidents& incidents = ctx.Incidents();
  const std::map<PciAddress, unsigned>& gpu_at = incidents.gpus.gpu_at;
  const std::vector<kmsg::AgedEvent>& ages = incidents.ages;
  // The position of GPU `index` in latest.gpus, or kNoGpu.
  constexpr size_t kNoGpu = SIZE_MAX;
  auto gpu_position = [&](const Opt<unsigned>& index) {
    for (size_t i = 0; index && i < latest.gpus.size(); ++i) {
      if (latest.gpus[i].index == *index) return i;
    }
    return kNoGpu;
  };

  // Current incidents by finding code and place; history by place.
  std::map<std::tuple<std::string_view, Category, Where>, Group> current;
  std::map<Where, Group> history;
  for (const XidIncident& inc : incidents.list) {
    const Where& w = inc.where;
    if (inc.age.age == kmsg::EventAge::kHistory) {
      Group& g = history[w];
      ++g.count[inc.xid];
      g.last = &inc;
      g.reasons.insert(inc.age.reason);
      if (g.worst == nullptr ||
          ImpactRank(inc.assessment.impact) > ImpactRank(g.worst->assessment.impact)) {
        g.worst = &inc;
      }
      continue;
    }
    const size_t gpu_i = gpu_position(w.gpu);
    kmsg::XidImpact impact = inc.assessment.impact;
    // A double-bit report is judged with the GPU's memory (memory_health.h):
    // contained by the GPU (Xid 94, SRAM only), the GPU serves on.
    if (gpu_i != kNoGpu && IsDoubleBitReport(inc.assessment.attributed_xid) &&
        impact == kmsg::XidImpact::kFault && ctx.Memory(gpu_i).contained) {
      impact = kmsg::XidImpact::kDegraded;
    }
    std::string_view code = XidFindingCode(inc.assessment.cause, impact);
    if (inc.xid == 79 && gpu_i != kNoGpu && ReadsNormally(latest.gpus[gpu_i])) {
      code = "XID_RECOVERED";
    }
    Group& g = current[{code, XidCategory(inc.assessment.cause), w}];
    ++g.count[inc.xid];
    g.last = &inc;
  }

  for (const auto& [key, group] : current) {
    const auto& [code, category, where] = key;
    // The Xid that says most: the most frequent, then the highest number.
    unsigned main = 0, main_count = 0;
    for (const auto& [xid, n] : group.count) {
      if (n >= main_count) {
        main = xid;
        main_count = n;
      }
    }
    const kmsg::XidInfo info = kmsg::LookupXid(main);
    std::string message = Subject(where) + What(main, info);
    if (code == "XID_RECOVERED") {
      message += ctx.live() ? " earlier; NVML reads it normally now: recovered"
                            : " earlier; the dump reads it normally: recovered";
    }
    if (group.count.size() > 1 || main_count > 1) {
      message += fmt::format("; Xids logged: {}", Counts(group.count));
    }
    std::vector<unsigned> gpus;
    if (where.gpu) gpus.push_back(*where.gpu);
    // An Xid names the failure most precisely: rank it just above the NVML
    // finding (e.g. GPU_LOST) for the same GPU.
    Finding f = MakeFinding(code, gpus, {}, std::move(message),
                            (gpus.empty() ? 1.0 : static_cast<double>(gpus.size())) + 0.5);
    f.category = category;
    if (code != "XID_RECOVERED") {
      f.next_steps.push_back(fmt::format("{}NVIDIA's action for Xid {}: {}",
                                         ActorPrefix(info.actor), main, info.advice));
    }
    f.evidence.push_back(TextEvidence(
        "nvidia_action",
        fmt::format("{} ({})", kmsg::XidActionName(info.action), kmsg::ActorName(info.actor))));
    if (where.gpu && where.pci) {
      f.evidence.push_back(PciEvidence(incidents.gpus, *where.gpu, *where.pci));
    }
    // NVML's account of the same GPU (GPU_LOST, GPU_UNREACHABLE): one failure.
    if (const size_t gpu_i = gpu_position(where.gpu);
        gpu_i != kNoGpu && latest.gpus[gpu_i].unreachable) {
      f.evidence.push_back(TextEvidence("nvml", Safe(latest.gpus[gpu_i].unreachable->message)));
    }
    AddEventEvidence(f, group);
    if (const size_t gpu_i = gpu_position(where.gpu);
        category == Category::kMemory && gpu_i != kNoGpu) {
      const MemoryHealth& memory = ctx.Memory(gpu_i);
      if (!memory.summary.empty()) {
        f.evidence.push_back(TextEvidence("memory_health", memory.summary));
      }
    }
    AddCatalogSteps(f);
    out.push_back(std::move(f));
  }

  for (const auto& [where, group] : history) {
    std::vector<std::string> why;
    for (kmsg::HistoryReason r : group.reasons) {
      why.push_back(kmsg::HistoryReasonText(r, ctx.options().events));
    }
    const bool one = group.count.size() == 1 && group.count.begin()->second == 1;
    std::string message = fmt::format(
        "{} logged {} ({}; history, not the GPU's state now)", Subject(where),
        one ? fmt::format("Xid {}", group.count.begin()->first) : "Xids " + Counts(group.count),
        fmt::join(why, ", "));
    std::vector<unsigned> gpus;
    if (where.gpu) gpus.push_back(*where.gpu);
    Finding f = MakeFinding("XID_HISTORY", gpus, {}, std::move(message), 0.1);
    f.category = XidCategory(group.worst->assessment.cause);
    AddEventEvidence(f, group);
    AddCatalogSteps(f);
    out.push_back(std::move(f));
  }

  // GPUs the kernel saw in this boot that no sample lists.
  if (NvmlCouldNotList(latest)) return;
  const bool every_gpu_placed =
      std::all_of(latest.gpus.begin(), latest.gpus.end(), [&](const Gpu& g) {
        return std::any_of(gpu_at.begin(), gpu_at.end(),
                           [&](const auto& kv) { return kv.second == g.index; });
      });
  if (!every_gpu_placed) return;  // A GPU without an address could be the one.
  std::map<PciAddress, std::vector<std::string>> missing;  // -> what the kernel said.
  std::set<PciAddress> failed;  // The kernel said it failed: init, or fell off the bus.
  auto saw = [&](const Opt<std::string>& bus, std::string what, bool says_failed = false) {
    if (!bus) return;
    const Opt<PciAddress> a = ParsePciSlot(*bus);
    if (!a || gpu_at.count(*a)) return;
    if (says_failed) failed.insert(*a);
    std::vector<std::string>& said = missing[*a];
    if (std::find(said.begin(), said.end(), what) == said.end()) said.push_back(std::move(what));
  };
  std::set<unsigned> missing_minors;
  const bool minors_known =
      !latest.gpus.empty() && std::all_of(latest.gpus.begin(), latest.gpus.end(),
                                          [](const Gpu& g) { return g.minor_number.has_value(); });
  for (size_t i = 0; i < events.size(); ++i) {
    // Old events of the running boot still say the GPU was there and was never re-probed.
    if (ages[i].age != kmsg::EventAge::kCurrent && !ages[i].running_boot) continue;
    const KernelEvent& e = events[i];
    if (e.kind == kmsg::kKindRmInitAdapterFailed) {
      if (e.pci_bus_id) {
        saw(e.pci_bus_id,
            e.minor_number
                ? fmt::format("RmInitAdapter failed, device minor number {}", *e.minor_number)
                : std::string("RmInitAdapter failed"),
            /*says_failed=*/true);
      } else if (e.minor_number && minors_known &&
                 std::none_of(latest.gpus.begin(), latest.gpus.end(),
                              [&](const Gpu& g) { return g.minor_number == e.minor_number; })) {
        missing_minors.insert(*e.minor_number);
      }
    } else if (e.kind == kmsg::kKindFallenOffBus) {
      saw(e.pci_bus_id, "fell off the bus", /*says_failed=*/true);
    } else if (e.kind == kmsg::kKindXid && e.xid) {
      saw(e.pci_bus_id, fmt::format("Xid {}", *e.xid));
    }
  }
  if (latest.driver_gpu_bus_ids) {
    for (const std::string& bus : *latest.driver_gpu_bus_ids) {
      saw(bus, "listed in /proc/driver/nvidia/gpus");
    }
  }
  // A dump taken with -i lists some of the GPUs NVML counts (attached_gpus):
  // a GPU it leaves out is not missing for that alone, only when the kernel
  // said it failed, or when the kernel saw more GPUs than NVML counts.
  const unsigned counted = latest.system.gpu_count.value_or(0);
  if (counted > latest.gpus.size() && latest.gpus.size() + missing.size() <= counted) {
    std::erase_if(missing, [&](const auto& kv) { return !failed.count(kv.first); });
  }
  const std::string lister = ctx.live() ? "NVML does not list it" : "the dump does not list it";
  for (const auto& [pci, said] : missing) {
    Finding f = MakeFinding("GPU_MISSING", {}, {},
                            fmt::format("The GPU at PCI {} is missing: the kernel saw it ({}) but "
                                        "{}",
                                        pci.KernelText(), fmt::join(said, "; "), lister),
                            1.5);
    f.evidence.push_back(TextEvidence("pci_bus_id", pci.KernelText()));
    AddCatalogSteps(f);
    out.push_back(std::move(f));
  }
  for (unsigned minor : missing_minors) {
    Finding f = MakeFinding(
        "GPU_MISSING", {}, {},
        fmt::format("The GPU with device minor number {} ({}{}) is missing: the kernel "
                    "saw it (RmInitAdapter failed) but {}",
                    minor, Safe(proc::DeviceFilePrefix(latest.device_dir)), minor, lister),
        1.5);
    f.evidence.push_back(NumberEvidence("minor_number", minor, "count", fmt::format("{}", minor)));
    AddCatalogSteps(f);
    out.push_back(std::move(f));
  }

  // `The NVIDIA probe routine failed for N device(s).` of the current driver
  // load: N GPUs the driver could not take. Those not already named above
  // (by bus id or minor number) are missing without an address.
  unsigned probe_failed = 0;
  for (size_t i = 0; i < events.size(); ++i) {
    if (ages[i].age != kmsg::EventAge::kCurrent) continue;
    if (Opt<unsigned> n = kmsg::ProbeFailedDevices(events[i])) probe_failed = *n;
  }
  const size_t named = missing.size() + missing_minors.size();
  if (probe_failed > named) {
    const unsigned unnamed = probe_failed - static_cast<unsigned>(named);
    Finding f = MakeFinding(
        "GPU_MISSING", {}, {},
        fmt::format("{} GPU{} missing: the driver's probe failed for {} device{} in its current "
                    "load, and {}{}",
                    unnamed, unnamed == 1 ? " is" : "s are", probe_failed,
                    probe_failed == 1 ? "" : "s",
                    ctx.live() ? "NVML does not list " : "the dump does not list ",
                    unnamed == 1 ? "it" : "them"),
        1.5);
    f.evidence.push_back(NumberEvidence("probe_failed_devices", probe_failed, "count",
                                        fmt::format("{}", probe_failed)));
    AddCatalogSteps(f);
    out.push_back(std::move(f));
  }
}

}  // namespace internal
}  // namespace gw::diagnose
