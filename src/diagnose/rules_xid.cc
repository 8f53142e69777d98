// Kernel-log rules: Xid events, judged by the class of the Xid only.
// Application Xids never make a GPU FAULT, however many there are.
#include <algorithm>
#include <charconv>
#include <map>
#include <tuple>

#include <fmt/format.h>

#include "diagnose/rule_context.h"
#include "diagnose/xid.h"

namespace gw::diagnose::internal {
namespace {

// (domain, bus, device) of "0000:3b:00", "00000000:3B:00.0" or "3b:00.0".
using PciAddress = std::tuple<unsigned, unsigned, unsigned>;

Opt<unsigned> Hex(std::string_view text) {
  unsigned value = 0;
  if (text.empty()) return std::nullopt;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value, 16);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

Opt<PciAddress> ParsePci(std::string_view text) {
  if (text.substr(0, 4) == "PCI:") text.remove_prefix(4);
  std::vector<std::string_view> parts;
  while (true) {
    size_t colon = text.find(':');
    parts.push_back(text.substr(0, colon));
    if (colon == std::string_view::npos) break;
    text.remove_prefix(colon + 1);
  }
  if (parts.size() < 2 || parts.size() > 3) return std::nullopt;
  std::string_view device = parts.back();
  device = device.substr(0, device.find('.'));
  Opt<unsigned> domain = parts.size() == 3 ? Hex(parts[0]) : Opt<unsigned>(0);
  Opt<unsigned> bus = Hex(parts[parts.size() - 2]);
  Opt<unsigned> dev = Hex(device);
  if (!domain || !bus || !dev) return std::nullopt;
  return PciAddress{*domain, *bus, *dev};
}

std::string_view CodeFor(XidClass cls) {
  switch (cls) {
    case XidClass::kApplication:
      return "XID_APPLICATION";
    case XidClass::kHardwareFatal:
      return "XID_FATAL";
    case XidClass::kHardwareWarning:
      return "XID_WARNING";
    case XidClass::kOther:
      return "XID_OTHER";
  }
  return "XID_OTHER";
}

struct XidGroup {
  std::map<unsigned, unsigned> count;  // Xid -> events.
  const KernelEvent* last = nullptr;
};

}  // namespace

void RuleXid(const RuleContext& ctx, std::vector<Finding>& out) {
  if (ctx.events().empty()) return;
  // PCI address -> GPU index, from every sample, the latest last: a GPU that
  // fell off the bus may no longer say where it sits.
  std::map<PciAddress, unsigned> gpu_at;
  std::map<std::string_view, unsigned> seen;  // Addresses are the same sample after sample.
  for (const Snapshot& s : ctx.history()) {
    for (const Gpu& gpu : s.gpus) {
      if (!gpu.pci_bus_id) continue;
      auto [it, fresh] = seen.try_emplace(*gpu.pci_bus_id, gpu.index);
      if (!fresh && it->second == gpu.index) continue;
      it->second = gpu.index;
      if (Opt<PciAddress> a = ParsePci(*gpu.pci_bus_id)) gpu_at[*a] = gpu.index;
    }
  }

  // (class, GPU index or the PCI text when no GPU matches) -> events.
  using Where = std::pair<Opt<unsigned>, std::string>;
  std::map<std::pair<XidClass, Where>, XidGroup> groups;
  for (const KernelEvent& e : ctx.events()) {
    if (e.kind != "xid" || !e.xid) continue;
    Where where{std::nullopt, e.pci_bus_id ? Safe(*e.pci_bus_id) : ""};
    if (e.pci_bus_id) {
      if (Opt<PciAddress> a = ParsePci(*e.pci_bus_id); a && gpu_at.count(*a)) {
        where = Where{gpu_at[*a], ""};
      }
    }
    XidGroup& g = groups[{ClassifyXid(*e.xid).cls, where}];
    ++g.count[*e.xid];
    if (g.last == nullptr || e.time_unix_ms >= g.last->time_unix_ms) g.last = &e;
  }

  for (const auto& [key, group] : groups) {
    const auto& [cls, where] = key;
    // The Xid that says most: the most frequent, then the highest number.
    unsigned main = 0, main_count = 0, events = 0;
    for (const auto& [xid, n] : group.count) {
      events += n;
      if (n >= main_count) {
        main = xid;
        main_count = n;
      }
    }
    const XidInfo info = ClassifyXid(main);
    const std::string subject =
        where.first ? fmt::format("GPU {}", *where.first)
                    : (where.second.empty() ? std::string("A GPU")
                                            : fmt::format("The GPU at PCI {}", where.second));
    std::string message = fmt::format("{} {} (Xid {})", subject, info.what, main);
    if (group.count.size() > 1 || main_count > 1) {
      std::vector<std::string> all;
      for (const auto& [xid, n] : group.count) all.push_back(fmt::format("{} x{}", xid, n));
      message += fmt::format("; Xids logged: {}", fmt::join(all, ", "));
    }
    std::vector<unsigned> gpus;
    if (where.first) gpus.push_back(*where.first);
    // An Xid names the failure most precisely: rank it just above the NVML
    // finding (e.g. GPU_LOST) for the same GPU.
    Finding f = MakeFinding(CodeFor(cls), gpus, {}, std::move(message),
                            (gpus.empty() ? 1.0 : static_cast<double>(gpus.size())) + 0.5);
    for (const auto& [xid, n] : group.count) {
      f.evidence.push_back(NumberEvidence(
          fmt::format("xid_{}", xid), n, "events",
          fmt::format("{} event{}: {}", n, n == 1 ? "" : "s", ClassifyXid(xid).what)));
    }
    f.evidence.push_back(NumberEvidence("events", events, "count", fmt::format("{}", events)));
    if (group.last != nullptr) {
      f.evidence.push_back(NumberEvidence("last_time",
                                          static_cast<double>(group.last->time_unix_ms), "unix_ms",
                                          Safe(group.last->text)));
    }
    AddCatalogSteps(f);
    out.push_back(std::move(f));
  }
}

}  // namespace gw::diagnose::internal
