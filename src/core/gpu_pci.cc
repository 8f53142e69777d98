#include "core/gpu_pci.h"

#include <algorithm>
#include <vector>

#include <fmt/format.h>

namespace gw {

std::optional<unsigned> GpuPciMap::GpuAt(std::string_view bus_id) const {
  const std::optional<PciAddress> slot = ParsePciSlot(bus_id);
  if (!slot) return std::nullopt;
  const auto it = gpu_at.find(*slot);
  if (it == gpu_at.end()) return std::nullopt;
  return it->second;
}

std::optional<PciAddress> GpuPciMap::AddressOf(unsigned index) const {
  const auto it = address_of.find(index);
  if (it == address_of.end()) return std::nullopt;
  return it->second;
}

GpuPciMap MapGpusToPci(std::span<const Snapshot> history, std::span<const std::string> seen) {
  GpuPciMap out;
  if (history.empty()) return out;
  for (const Snapshot& s : history) {
    for (const Gpu& gpu : s.gpus) {
      if (!gpu.pci_bus_id) continue;
      const std::optional<PciAddress> slot = ParsePciSlot(*gpu.pci_bus_id);
      if (!slot) continue;
      // A later sample wins: drop what an earlier one said for either side.
      if (const auto old = out.address_of.find(gpu.index); old != out.address_of.end()) {
        out.gpu_at.erase(old->second);
      }
      if (const auto old = out.gpu_at.find(*slot); old != out.gpu_at.end()) {
        out.address_of.erase(old->second);
      }
      out.gpu_at[*slot] = gpu.index;
      out.address_of[gpu.index] = *slot;
    }
  }

  // Placing by order: only the latest sample's GPUs, in index order.
  const Snapshot& latest = history.back();
  std::vector<unsigned> indices;
  for (const Gpu& gpu : latest.gpus) indices.push_back(gpu.index);
  std::sort(indices.begin(), indices.end());
  indices.erase(std::unique(indices.begin(), indices.end()), indices.end());
  // NVML's order must hold where it can be seen: listed slots ascend with the index.
  std::optional<PciAddress> previous;
  for (unsigned index : indices) {
    const std::optional<PciAddress> slot = out.AddressOf(index);
    if (!slot) continue;
    if (previous && !(*previous < *slot)) return out;
    previous = slot;
  }
  std::set<PciAddress> candidates;
  const auto add = [&](std::string_view text) {
    const std::optional<PciAddress> slot = ParsePciSlot(text);
    if (slot && !out.gpu_at.count(*slot)) candidates.insert(*slot);
  };
  for (const std::string& bus : seen) add(bus);
  if (latest.driver_gpu_bus_ids) {
    for (const std::string& bus : *latest.driver_gpu_bus_ids) add(bus);
  }
  if (candidates.empty()) return out;

  // Each run of addressless GPUs between two listed ones (or an end).
  std::optional<PciAddress> low;
  std::vector<unsigned> run;
  const auto place = [&](const std::optional<PciAddress>& high) {
    std::vector<PciAddress> between;
    for (const PciAddress& c : candidates) {
      if ((!low || *low < c) && (!high || c < *high)) between.push_back(c);
    }
    if (!run.empty() && between.size() == run.size()) {
      for (size_t i = 0; i < run.size(); ++i) {
        out.gpu_at[between[i]] = run[i];
        out.address_of[run[i]] = between[i];
        out.placed_by_order.insert(run[i]);
      }
    }
    run.clear();
    low = high;
  };
  for (unsigned index : indices) {
    if (const std::optional<PciAddress> slot = out.AddressOf(index)) {
      place(slot);
    } else {
      run.push_back(index);
    }
  }
  place(std::nullopt);
  return out;
}

std::string GpuWithPci(unsigned index, const std::optional<PciAddress>& slot) {
  if (!slot) return fmt::format("GPU {}", index);
  return fmt::format("GPU {} (PCI {})", index, slot->KernelText());
}

}  // namespace gw
