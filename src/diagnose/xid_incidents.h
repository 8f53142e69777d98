// Internal to the rules: the kernel log's Xids as incidents, each placed on a
// GPU of the history and aged once, for every rule that reads them (the Xid
// rule, the memory-health judgement). Not a public API.
#ifndef GPUWARDEN_DIAGNOSE_XID_INCIDENTS_H_
#define GPUWARDEN_DIAGNOSE_XID_INCIDENTS_H_

#include <map>
#include <span>
#include <vector>

#include "core/gpu_pci.h"
#include "core/pci_address.h"
#include "core/snapshot.h"
#include "kmsg/event_age.h"
#include "kmsg/kernel_event.h"
#include "kmsg/xid_catalog.h"

namespace gw::diagnose::internal {

// Where an incident happened: a GPU index (with its slot when known, as
// "GPU 5 (PCI 0000:bb:00)"), else the PCI address no GPU of the samples has
// (`gpu` empty), else nothing (no address in the log).
struct Where {
  Opt<unsigned> gpu;
  Opt<PciAddress> pci;
  auto operator<=>(const Where&) const = default;
};

// One incident: an Xid line (with the fell-off-the-bus notice printed with an
// Xid 79 folded into it), or a notice standing alone, which counts as Xid 79.
struct XidIncident {
  const kmsg::KernelEvent* event = nullptr;
  unsigned xid = 0;
  kmsg::XidAssessment assessment;
  kmsg::AgedEvent age;
  Where where;
  bool current() const { return age.age == kmsg::EventAge::kCurrent; }
};

// The incidents of a history's kernel log, and what placed them.
struct XidIncidents {
  // PCI slot <-> GPU index (core/gpu_pci.h), from every sample, the latest
  // last (a GPU that fell off the bus may no longer say where it sits), and
  // the addresses the current boot's events name.
  GpuPciMap gpus;
  // The age of every event (the same positions as the events).
  std::vector<kmsg::AgedEvent> ages;
  // Incidents in log order; events out of range (--since, the age limit) are left out.
  // An Xid 154 takes the cause of the last Xid before it on its GPU in its boot
  // (a GSP timeout's 154 is the driver's), informational only when none is known.
  std::vector<XidIncident> list;

  Where WhereOf(const kmsg::KernelEvent& e) const;
};

// What the kernel said of GPU `gpu` in the boot the samples describe (current
// incidents, or older ones of the running boot): its last Xid 79 (or
// fell-off-the-bus notice), else its last incident of any Xid; nullptr when
// none.
const XidIncident* KernelIncidentOf(const XidIncidents& incidents, unsigned gpu);

// Incidents are placed by PCI slot (core/pci_address.h, ParsePciSlot).
// REQUIRES: !history.empty(). `events` outlive the result.
XidIncidents BuildXidIncidents(std::span<const Snapshot> history,
                               std::span<const kmsg::KernelEvent> events,
                               const kmsg::EventAgeOptions& options);

}  // namespace gw::diagnose::internal

#endif  // GPUWARDEN_DIAGNOSE_XID_INCIDENTS_H_
