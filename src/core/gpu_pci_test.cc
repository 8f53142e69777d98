#include "core/gpu_pci.h"

#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

namespace gw {
namespace {

TEST(SamePciSlot, TheKernelsShortFormIsNvmlsLongForm) {
  EXPECT_TRUE(SamePciSlot("0000:bb:00", "00000000:BB:00.0"));
  EXPECT_TRUE(SamePciSlot("PCI:0000:bb:00", "0000:BB:00.0"));
  EXPECT_TRUE(SamePciSlot("bb:00", "00000000:BB:00.0"));
  EXPECT_FALSE(SamePciSlot("0000:bb:00", "00000000:CB:00.0"));
  EXPECT_FALSE(SamePciSlot("0001:bb:00", "00000000:BB:00.0"));  // Another domain.
  EXPECT_FALSE(SamePciSlot("not an address", "not an address"));
  const std::optional<PciAddress> slot = ParsePciSlot("00000000:BB:00.1");
  ASSERT_TRUE(slot);
  EXPECT_EQ(slot->function, 0u);
  EXPECT_EQ(slot->KernelText(), "0000:bb:00");
}

Gpu At(unsigned index, std::optional<std::string> bus) {
  Gpu g;
  g.index = index;
  g.pci_bus_id = std::move(bus);
  return g;
}

Snapshot EightGpusFiveLost(bool five_listed_with_address) {
  Snapshot s;
  const char* buses[] = {"19", "3B", "4C", "5D", "9B", "BB", "CB", "DB"};
  for (unsigned i = 0; i < 8; ++i) {
    s.gpus.push_back(At(i, fmt::format("00000000:{}:00.0", buses[i])));
  }
  s.gpus[5].unreachable = ProbeError{"nvml", "gpu_lost", "GPU is lost", 5, 15};
  if (!five_listed_with_address) s.gpus[5].pci_bus_id.reset();
  return s;
}

TEST(MapGpusToPci, ALostGpuListedWithItsBusIdIsFoundByTheKernelsSpelling) {
  const std::vector<Snapshot> history = {EightGpusFiveLost(true)};
  const GpuPciMap map = MapGpusToPci(history, {});
  EXPECT_EQ(map.GpuAt("0000:bb:00"), 5u);
  EXPECT_EQ(map.GpuAt("PCI:0000:bb:00"), 5u);
  EXPECT_EQ(map.GpuAt("00000000:BB:00.0"), 5u);
  EXPECT_FALSE(map.GpuAt("0000:ee:00"));
  EXPECT_TRUE(map.placed_by_order.empty());
  EXPECT_EQ(GpuWithPci(5, map.AddressOf(5)), "GPU 5 (PCI 0000:bb:00)");
}

TEST(MapGpusToPci, ALostGpuWithoutAddressTakesTheOnlyAddressItsPlaceAllows) {
  const std::vector<Snapshot> history = {EightGpusFiveLost(false)};
  const std::vector<std::string> seen = {"00000000:BB:00.0"};
  const GpuPciMap map = MapGpusToPci(history, seen);
  EXPECT_EQ(map.GpuAt("0000:bb:00"), 5u);
  EXPECT_TRUE(map.placed_by_order.count(5));
  // No address seen: nothing to place.
  EXPECT_FALSE(MapGpusToPci(history, {}).AddressOf(5));
}

TEST(MapGpusToPci, NothingIsPlacedWhereNvmlsOrderLeavesAChoice) {
  const std::vector<Snapshot> history = {EightGpusFiveLost(false)};
  // Outside GPU 5's place (between 9B and CB): another GPU, not GPU 5.
  EXPECT_FALSE(MapGpusToPci(history, std::vector<std::string>{"0000:ee:00"}).AddressOf(5));
  // Two addresses for one place.
  EXPECT_FALSE(
      MapGpusToPci(history, std::vector<std::string>{"0000:bb:00", "0000:bc:00"}).AddressOf(5));
  // Listed addresses out of PCI order: NVML's order cannot be relied on.
  Snapshot shuffled = EightGpusFiveLost(false);
  std::swap(shuffled.gpus[0].pci_bus_id, shuffled.gpus[1].pci_bus_id);
  const std::vector<Snapshot> h2 = {shuffled};
  EXPECT_FALSE(MapGpusToPci(h2, std::vector<std::string>{"0000:bb:00"}).AddressOf(5));
}

TEST(MapGpusToPci, TheDriversListCounts) {
  Snapshot s = EightGpusFiveLost(false);
  s.driver_gpu_bus_ids = std::vector<std::string>{"0000:bb:00.0"};
  const std::vector<Snapshot> history = {s};
  EXPECT_EQ(MapGpusToPci(history, {}).GpuAt("0000:bb:00"), 5u);
}

TEST(MapGpusToPci, AnEarlierSampleSaysWhereAGpuSat) {
  std::vector<Snapshot> history = {EightGpusFiveLost(true), EightGpusFiveLost(false)};
  const GpuPciMap map = MapGpusToPci(history, {});
  EXPECT_EQ(map.GpuAt("0000:bb:00"), 5u);
  EXPECT_TRUE(map.placed_by_order.empty());
}

}  // namespace
}  // namespace gw
