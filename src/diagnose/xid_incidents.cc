#include "diagnose/xid_incidents.h"

#include <algorithm>
#include <string_view>

namespace gw::diagnose::internal {

Where XidIncidents::WhereOf(const kmsg::KernelEvent& e) const {
  Where w;
  if (!e.pci_bus_id) return w;
  w.pci = ParsePciSlot(*e.pci_bus_id);
  if (w.pci) w.gpu = gpus.GpuAt(*e.pci_bus_id);
  return w;
}

const XidIncident* KernelIncidentOf(const XidIncidents& incidents, unsigned gpu) {
  const XidIncident* last = nullptr;
  const XidIncident* fell = nullptr;
  for (const XidIncident& inc : incidents.list) {
    if (inc.where.gpu != gpu || (!inc.current() && !inc.age.running_boot)) continue;
    last = &inc;
    if (inc.xid == 79) fell = &inc;
  }
  return fell != nullptr ? fell : last;
}

XidIncidents BuildXidIncidents(std::span<const Snapshot> history,
                               std::span<const kmsg::KernelEvent> events,
                               const kmsg::EventAgeOptions& options) {
  XidIncidents out;
  out.ages = kmsg::AgeEvents(events, options, history.back().time_unix_ms);
  // Addresses the kernel named in the boot the samples describe may place a
  // GPU NVML lists without its address (a lost GPU); older ones say nothing
  // of where today's GPUs sit.
  std::vector<std::string> named;
  for (size_t i = 0; i < events.size(); ++i) {
    const bool this_boot = out.ages[i].age == kmsg::EventAge::kCurrent || out.ages[i].running_boot;
    if (this_boot && events[i].pci_bus_id) named.push_back(*events[i].pci_bus_id);
  }
  out.gpus = MapGpusToPci(history, named);

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
