#include "core/pci_address.h"

#include <fmt/format.h>

namespace gw {
namespace {

constexpr size_t kMaxDigits = 8;  // A domain is 32 bits; no group is wider.

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

bool HexAt(std::string_view s, size_t i) { return i < s.size() && HexValue(s[i]) >= 0; }

// NUL too: a buffer from the driver may be padded with it.
bool IsSpaceOrNul(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\0'; }

}  // namespace

std::string PciAddress::ToString() const {
  return fmt::format("{:08X}:{:02X}:{:02X}.{:X}", domain, bus, device, function);
}

std::string PciAddress::KernelText() const {
  return fmt::format("{:04x}:{:02x}:{:02x}", domain, bus, device);
}

std::string PciAddress::ShortText() const {
  if (domain == 0) return fmt::format("{:02X}:{:02X}.{:X}", bus, device, function);
  if (domain <= 0xffff)
    return fmt::format("{:04X}:{:02X}:{:02X}.{:X}", domain, bus, device, function);
  return ToString();
}

std::optional<PciAddressRead> ReadPciAddress(std::string_view text) {
  uint64_t groups[3] = {0, 0, 0};
  int count = 0;
  size_t i = 0;
  while (count < 3) {
    const size_t start = i;
    uint64_t value = 0;
    while (i - start < kMaxDigits && HexAt(text, i)) value = value * 16 + HexValue(text[i++]);
    if (i == start || HexAt(text, i)) return std::nullopt;  // No digit, or more than 8.
    groups[count++] = value;
    // A colon continues the address only when a digit follows: in
    // "(PCI:0000:3b:00): 79" the colon after the device ends it.
    if (count < 3 && i < text.size() && text[i] == ':' && HexAt(text, i + 1)) {
      ++i;
      continue;
    }
    break;
  }
  if (count < 2) return std::nullopt;
  uint64_t function = 0;
  if (i < text.size() && text[i] == '.' && HexAt(text, i + 1) && !HexAt(text, i + 2)) {
    function = static_cast<uint64_t>(HexValue(text[i + 1]));
    i += 2;
  }
  const bool has_domain = count == 3;
  const uint64_t bus = groups[has_domain ? 1 : 0];
  const uint64_t device = groups[has_domain ? 2 : 1];
  if (bus > 0xff || device > 0x1f || function > 7) return std::nullopt;
  PciAddressRead read;
  read.address.domain = has_domain ? static_cast<uint32_t>(groups[0]) : 0;
  read.address.bus = static_cast<uint8_t>(bus);
  read.address.device = static_cast<uint8_t>(device);
  read.address.function = static_cast<uint8_t>(function);
  read.length = i;
  read.has_domain = has_domain;
  return read;
}

std::optional<PciAddress> ParsePciAddress(std::string_view text) {
  while (!text.empty() && IsSpaceOrNul(text.front())) text.remove_prefix(1);
  while (!text.empty() && IsSpaceOrNul(text.back())) text.remove_suffix(1);
  if (text.starts_with("PCI:")) text.remove_prefix(4);
  const std::optional<PciAddressRead> read = ReadPciAddress(text);
  if (!read || read->length != text.size()) return std::nullopt;
  return read->address;
}

std::optional<PciAddress> ParsePciSlot(std::string_view text) {
  std::optional<PciAddress> a = ParsePciAddress(text);
  if (a) a->function = 0;
  return a;
}

bool SamePciSlot(std::string_view a, std::string_view b) {
  const std::optional<PciAddress> x = ParsePciSlot(a);
  return x && x == ParsePciSlot(b);
}

}  // namespace gw
