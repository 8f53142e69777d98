#include "fleet/fleet_view.h"

#include "core/pci_address.h"

namespace gw::fleet {

void WaitHistogram::Add(double seconds) {
  if (!(seconds >= 0)) seconds = 0;  // NaN and clock steps count as no wait.
  size_t i = 0;
  while (i < kWaitBucketsS.size() && seconds > kWaitBucketsS[i]) ++i;
  if (i < buckets.size()) ++buckets[i];
  ++count;
  sum_s += seconds;
}

std::map<unsigned, XidTally> TallyXids(const Snapshot& latest,
                                       std::span<const kmsg::KernelEvent> events,
                                       const std::string& boot) {
  std::map<unsigned, XidTally> out;
  // The kernel names a GPU without the PCI function: match on the rest.
  auto key = [](const std::string& text) -> std::optional<PciAddress> {
    std::optional<PciAddress> a = ParsePciAddress(text);
    if (a) a->function = 0;
    return a;
  };
  std::map<PciAddress, unsigned> by_bus;
  for (const Gpu& g : latest.gpus) {
    if (!g.pci_bus_id) continue;
    if (std::optional<PciAddress> a = key(*g.pci_bus_id)) by_bus[*a] = g.index;
  }
  for (const kmsg::KernelEvent& e : events) {
    if (e.kind != kmsg::kKindXid || !e.xid || !e.pci_bus_id || e.boot_id != boot) continue;
    const std::optional<PciAddress> a = key(*e.pci_bus_id);
    auto it = a ? by_bus.find(*a) : by_bus.end();
    if (it == by_bus.end()) continue;
    XidTally& t = out[it->second];
    t.last = *e.xid;
    ++t.counts[*e.xid];
  }
  return out;
}

}  // namespace gw::fleet
