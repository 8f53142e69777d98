// PciAddress: where a GPU sits on the PCI bus, the one key by which the
// kernel log, NVML, nvidia-smi dumps, /proc/driver/nvidia and a user's
// --gpu selector are matched to each other. Each source spells it its own
// way; all of them parse to the same value:
//   NVML, nvidia-smi        "00000000:3B:00.0"  (8-digit domain, upper case)
//   NVML legacy, lspci -D,  "0000:3b:00.0"      (4-digit domain)
//   sysfs, /proc/driver/nvidia/gpus
//   kernel log (NVRM)       "PCI:0000:3b:00", "0000:3b:00" (no function)
//   very old drivers, lspci "3b:00", "3b:00.0"  (no domain: domain 0)
#ifndef GPUWARDEN_CORE_PCI_ADDRESS_H_
#define GPUWARDEN_CORE_PCI_ADDRESS_H_

#include <compare>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace gw {

struct PciAddress {
  uint32_t domain = 0;
  uint8_t bus = 0;       // 0x00-0xff.
  uint8_t device = 0;    // 0x00-0x1f.
  uint8_t function = 0;  // 0-7; 0 when the text gave none.

  friend auto operator<=>(const PciAddress&, const PciAddress&) = default;

  // NVML's spelling, the one every bus id in a Snapshot or a KernelEvent is
  // normalised to: "00000000:3B:00.0".
  std::string ToString() const;

  // The kernel's spelling, without the function: "0000:3b:00".
  std::string KernelText() const;

  // For a table column: "3B:00.0" when the domain is 0 (as on almost every
  // machine), "0001:3B:00.0" when it fits lspci's 4 digits, else ToString().
  std::string ShortText() const;
};

// A PCI address read from the start of a text.
struct PciAddressRead {
  PciAddress address;
  size_t length = 0;        // Bytes of the text the address took.
  bool has_domain = false;  // false for "3b:00.0": no domain written (0 assumed).
};

// Reads "[domain:]bus:device[.function]" at the start of `text`: hex digits
// of either case, 1-8 per group; bus <= 0xff, device <= 0x1f, function 0-7.
// A ".f" is part of the address only as a single hex digit (".12" is not, and
// the address ends before the dot). Nothing is skipped before the address.
// nullopt when `text` does not start with one, or a group has more than 8
// digits, or a value is out of range.
std::optional<PciAddressRead> ReadPciAddress(std::string_view text);

// The whole of `text` as a PCI address: surrounding whitespace and a leading
// "PCI:" (as NVRM writes it) are allowed, nothing else around it.
std::optional<PciAddress> ParsePciAddress(std::string_view text);

// The one way two sources' spellings of a GPU's address are matched: the slot
// (domain, bus, device) of `text` as ParsePciAddress reads it, with the
// function set to 0. The kernel log names a GPU without its function
// ("0000:bb:00"), NVML and dumps with it ("00000000:BB:00.0"); a GPU is
// function 0 of its slot. nullopt when `text` is not an address.
std::optional<PciAddress> ParsePciSlot(std::string_view text);

// Whether `a` and `b` name the same slot (ParsePciSlot), in any of the
// spellings above. False when either is not an address.
bool SamePciSlot(std::string_view a, std::string_view b);

}  // namespace gw

#endif  // GPUWARDEN_CORE_PCI_ADDRESS_H_
