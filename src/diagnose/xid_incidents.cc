#include "diagnose/xid_incidents.h"

#include <algorithm>
#include <string_view>

namespace gw::diagnose::internal {

Opt<PciAddress> ParseSlot(std::string_view text) {
  Opt<PciAddress> a = ParsePciAddress(text);
  if (a) a->function = 0;
  return a;
}

Where XidIncidents::WhereOf(const kmsg::KernelEvent& e) const {
  Where w;
  if (!e.pci_bus_id) return w;
  if (Opt<PciAddress> a = ParseSlot(*e.pci_bus_id)) {
    if (auto it = gpu_at.find(*a); it != gpu_at.end()) {
      w.gpu = it->second;
    } else {
      w.pci = *a;
    }
  }
  return w;
}

XidIncidents BuildXidIncidents(std::span<const Snapshot> history,
                               std::span<const kmsg::KernelEvent> events,
                               const kmsg::EventAgeOptions& options) {
  XidIncidents out;
  std::map<std::string_view, unsigned> seen;  // Addresses are the same sample after sample.
  for (const Snapshot& s : history) {
    for (const Gpu& gpu : s.gpus) {
      if (!gpu.pci_bus_id) continue;
      auto [it, fresh] = seen.try_emplace(*gpu.pci_bus_id, gpu.index);
      if (!fresh && it->second == gpu.index) continue;
      it->second = gpu.index;
      if (Opt<PciAddress> a = ParseSlot(*gpu.pci_bus_id)) out.gpu_at[*a] = gpu.index;
    }
  }
  out.ages = kmsg::AgeEvents(events, options, history.back().time_unix_ms);

  // A notice printed with an Xid 79 is that Xid's, not a second fall.
  for (size_t i = 0; i < events.size(); ++i) {
    const kmsg::KernelEvent& e = events[i];
    if (out.ages[i].age == kmsg::EventAge::kOutOfRange) continue;
    XidIncident inc;
    inc.event = &e;
    inc.age = out.ages[i];
    inc.where = out.WhereOf(e);
    if (e.kind == kmsg::kKindXid && e.xid) {
      inc.xid = *e.xid;
      // Xid 45 "caused by previous Xid N" is judged as N (AssessXid): the
      // driver cleaning up after N, not an application fault.
      inc.assessment = kmsg::AssessXid(e);
    } else if (e.kind == kmsg::kKindFallenOffBus) {
      bool part_of_xid = false;
      for (size_t j = i >= 3 ? i - 3 : 0; j < std::min(events.size(), i + 4) && !part_of_xid; ++j) {
        part_of_xid = j != i && kmsg::SameFallOffTheBus(events[j], e, j > i ? j - i : i - j);
      }
      if (part_of_xid) continue;
      kmsg::KernelEvent as79;
      as79.xid = 79;
      as79.kind = kmsg::kKindXid;
      inc.xid = 79;
      inc.assessment = kmsg::AssessXid(as79);
    } else {
      continue;
    }
    out.list.push_back(std::move(inc));
  }

  // Xid 154 says the recovery action changed because of an error: its
  // category is that of the last Xid before it on the same GPU.
  for (size_t i = 0; i < out.list.size(); ++i) {
    XidIncident& inc = out.list[i];
    if (inc.xid != 154 || inc.assessment.cause != kmsg::CauseClass::kInformational) continue;
    for (size_t j = i; j-- > 0;) {
      const XidIncident& before = out.list[j];
      if (before.xid == 154 || before.event->boot_id != inc.event->boot_id ||
          !(before.where == inc.where)) {
        continue;
      }
      inc.assessment.cause = before.assessment.cause;
      break;
    }
  }
  return out;
}

}  // namespace gw::diagnose::internal
