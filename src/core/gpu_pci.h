// Which GPU of a snapshot sits at a PCI address: the one place where a kernel
// event's address ("0000:bb:00") becomes a GPU index ("GPU 5"), for the
// diagnosis and for `gpuwarden events` alike.
//
// A GPU NVML lists with its bus id is at that slot (core/pci_address.h,
// ParsePciSlot). A GPU NVML lists without one (its handle failed: lost, no
// permission, RmInitAdapter failed) is placed only where NVML's own order
// leaves no choice: NVML numbers GPUs in PCI bus order, so when the listed
// addresses ascend with the index, the addressless GPUs between two listed
// ones take, in order, the addresses seen elsewhere (the kernel log, the
// driver's /proc/driver/nvidia/gpus) that fall between those two, if there
// are exactly as many of them as there are such GPUs. Otherwise the GPU stays
// without an address and such an address names no GPU.
#ifndef GPUWARDEN_CORE_GPU_PCI_H_
#define GPUWARDEN_CORE_GPU_PCI_H_

#include <map>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>

#include "core/pci_address.h"
#include "core/snapshot.h"

namespace gw {

struct GpuPciMap {
  std::map<PciAddress, unsigned> gpu_at;      // Slot (function 0) -> GPU index.
  std::map<unsigned, PciAddress> address_of;  // GPU index -> slot.
  // GPUs whose slot was placed by NVML's order, not read (see above).
  std::set<unsigned> placed_by_order;

  // The GPU at `bus_id` (any spelling ParsePciSlot reads), if known.
  std::optional<unsigned> GpuAt(std::string_view bus_id) const;
  std::optional<PciAddress> AddressOf(unsigned index) const;
};

// `history`: samples, the latest last (a GPU that fell off the bus may no
// longer say where it sits: an earlier sample's address counts; the latest
// wins where they differ). `seen`: addresses other sources name (kernel-log
// events of the boot the snapshot describes; the latest sample's
// driver_gpu_bus_ids is added here). Unparseable addresses are ignored.
GpuPciMap MapGpusToPci(std::span<const Snapshot> history, std::span<const std::string> seen);

// "GPU 5 (PCI 0000:bb:00)", or "GPU 5" when the slot is unknown: how a text
// names a GPU that a kernel event named by address.
std::string GpuWithPci(unsigned index, const std::optional<PciAddress>& slot);

}  // namespace gw

#endif  // GPUWARDEN_CORE_GPU_PCI_H_
