#include "core/pci_address.h"

#include <optional>
#include <string>

#include <gtest/gtest.h>

namespace gw {
namespace {

constexpr PciAddress k3b{0, 0x3b, 0, 0};

TEST(ParsePciAddress, EveryFormTheSourcesWriteIsTheSameAddress) {
  for (const char* text : {
           "00000000:3B:00.0",  // NVML, nvidia-smi.
           "0000:3b:00.0",      // NVML legacy, lspci -D, sysfs.
           "PCI:0000:3b:00",    // NVRM: Xid (PCI:0000:3b:00): ...
           "0000:3b:00",        // NVRM: GPU at PCI:0000:3b:00: ...
           "3b:00",             // Very old drivers.
           "3b:00.0",           // lspci.
           "0:3b:0",            // Fewer digits.
       }) {
    const std::optional<PciAddress> a = ParsePciAddress(text);
    ASSERT_TRUE(a.has_value()) << text;
    EXPECT_EQ(*a, k3b) << text;
  }
}

TEST(ParsePciAddress, ReadsEveryField) {
  const std::optional<PciAddress> a = ParsePciAddress("0001:4c:1f.7");
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ(a->domain, 1u);
  EXPECT_EQ(a->bus, 0x4c);
  EXPECT_EQ(a->device, 0x1f);
  EXPECT_EQ(a->function, 7);
}

TEST(ParsePciAddress, CaseDoesNotMatter) {
  EXPECT_EQ(ParsePciAddress("0000:AB:1E.0"), ParsePciAddress("0000:ab:1e.0"));
  EXPECT_EQ(ParsePciAddress("dEaDbEeF:aB:00.0")->domain, 0xdeadbeefu);
}

TEST(ParsePciAddress, DomainWidthsFromNoneToEightDigits) {
  EXPECT_EQ(ParsePciAddress("3b:00.0")->domain, 0u);
  EXPECT_EQ(ParsePciAddress("1:3b:00.0")->domain, 1u);
  EXPECT_EQ(ParsePciAddress("0001:3b:00.0")->domain, 1u);
  EXPECT_EQ(ParsePciAddress("00000001:3b:00.0")->domain, 1u);
  EXPECT_EQ(ParsePciAddress("ffffffff:3b:00.0")->domain, 0xffffffffu);
  EXPECT_EQ(ParsePciAddress("000000001:3b:00.0"), std::nullopt);  // Nine digits.
  EXPECT_EQ(ParsePciAddress("100000000:3b:00.0"), std::nullopt);
}

TEST(ParsePciAddress, WhitespaceAndPaddingAroundAreAllowed) {
  EXPECT_EQ(ParsePciAddress("  00000000:3B:00.0\n"), k3b);
  EXPECT_EQ(ParsePciAddress(std::string("00000000:3B:00.0\0\0", 18)), k3b);
  EXPECT_EQ(ParsePciAddress(" PCI:0000:3b:00 "), k3b);
}

TEST(ParsePciAddress, RefusesWhatIsNotAnAddress) {
  for (const char* text : {
           "",
           "PCI:",
           "3b",             // One group.
           "0000:3b:00:00",  // Four groups.
           "0000:3b:00.0x",  // Trailing text.
           "0000:3b:00.",    // A dot without a function.
           "0000:3b:00.12",  // A two-digit function.
           "0000:3b:00.8",   // Function > 7.
           "0000:100:00.0",  // Bus > 0xff.
           "0000:3b:20.0",   // Device > 0x1f.
           "0000:3g:00.0",   // Not hex.
           "0000::00.0",     // An empty group.
           ":3b:00.0",
           "0x0:3b:00.0",
           "-1:3b:00.0",
           "pci:0000:3b:00",  // The prefix is NVRM's, in its case.
           "GPU-5d1f0c3a",
           "fast",
       }) {
    EXPECT_EQ(ParsePciAddress(text), std::nullopt) << text;
  }
}

TEST(ParsePciAddress, NormalisesToNvmlsSpelling) {
  auto nvml = [](std::string_view text) -> std::optional<std::string> {
    const std::optional<PciAddress> a = ParsePciAddress(text);
    if (!a) return std::nullopt;
    return a->ToString();
  };
  EXPECT_EQ(nvml("0000:3b:00"), "00000000:3B:00.0");
  EXPECT_EQ(nvml("PCI:0000:3b:00"), "00000000:3B:00.0");
  EXPECT_EQ(nvml("0000:5d:00.0"), "00000000:5D:00.0");
  EXPECT_EQ(nvml("00000000:3B:00.0"), "00000000:3B:00.0");
  EXPECT_EQ(nvml("0019:01:00"), "00000019:01:00.0");
  EXPECT_EQ(nvml("0006:00"), "00000000:06:00.0");
  EXPECT_EQ(nvml("0000:10:1c.3"), "00000000:10:1C.3");
  EXPECT_FALSE(nvml("0000:3b"));      // Domain:bus only is bus:device 0x3b > 0x1f.
  EXPECT_FALSE(nvml("0000:100:00"));  // Bus > 0xff.
  EXPECT_FALSE(nvml("0000:3b:20"));   // Device > 0x1f.
  EXPECT_FALSE(nvml("10de:1c82"));    // A PCI ID, not an address.
  EXPECT_FALSE(nvml("zz:00"));
  EXPECT_FALSE(nvml(""));
  EXPECT_FALSE(nvml("0000:3b:00 trailing"));
}

TEST(ReadPciAddress, StopsWhereTheAddressEnds) {
  // NVRM: Xid (PCI:0000:3b:00): 79, ... - the colon before " 79" is not part of it.
  const std::string_view line = "0000:3b:00): 79, pid=1";
  const std::optional<PciAddressRead> r = ReadPciAddress(line);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->address, k3b);
  EXPECT_EQ(r->length, 10u);
  EXPECT_TRUE(r->has_domain);

  const std::optional<PciAddressRead> colon = ReadPciAddress("0000:3b:00: GPU-1234");
  ASSERT_TRUE(colon.has_value());
  EXPECT_EQ(colon->length, 10u);
  EXPECT_EQ(colon->address, k3b);

  const std::optional<PciAddressRead> fn = ReadPciAddress("0000:3b:00.1 rest");
  ASSERT_TRUE(fn.has_value());
  EXPECT_EQ(fn->length, 12u);
  EXPECT_EQ(fn->address.function, 1);

  // ".12" is no function: the address ends before the dot.
  const std::optional<PciAddressRead> two = ReadPciAddress("0000:3b:00.12");
  ASSERT_TRUE(two.has_value());
  EXPECT_EQ(two->length, 10u);
  EXPECT_EQ(two->address.function, 0);
}

TEST(ReadPciAddress, SaysWhetherADomainWasWritten) {
  EXPECT_FALSE(ReadPciAddress("3b:00.0")->has_domain);
  EXPECT_TRUE(ReadPciAddress("0:3b:00.0")->has_domain);
}

TEST(ReadPciAddress, SkipsNothingBeforeTheAddress) {
  EXPECT_EQ(ReadPciAddress(" 0000:3b:00"), std::nullopt);
  EXPECT_EQ(ReadPciAddress("PCI:0000:3b:00"), std::nullopt);
  EXPECT_EQ(ReadPciAddress("x"), std::nullopt);
  EXPECT_EQ(ReadPciAddress(""), std::nullopt);
}

TEST(PciAddress, ComparesByDomainBusDeviceFunction) {
  EXPECT_LT(ParsePciAddress("0000:3b:00.0"), ParsePciAddress("0000:3b:00.1"));
  EXPECT_LT(ParsePciAddress("0000:3b:1f.7"), ParsePciAddress("0000:3c:00.0"));
  EXPECT_LT(ParsePciAddress("0000:ff:00.0"), ParsePciAddress("0001:00:00.0"));
  EXPECT_NE(ParsePciAddress("0000:3b:00.0"), ParsePciAddress("0001:3b:00.0"));
}

TEST(PciAddress, WritesNvmlTheKernelsAndTheShortForm) {
  const PciAddress a = *ParsePciAddress("PCI:0000:3b:00");
  EXPECT_EQ(a.ToString(), "00000000:3B:00.0");
  EXPECT_EQ(a.KernelText(), "0000:3b:00");
  EXPECT_EQ(a.ShortText(), "3B:00.0");

  const PciAddress b = *ParsePciAddress("00000001:4c:1f.7");
  EXPECT_EQ(b.ToString(), "00000001:4C:1F.7");
  EXPECT_EQ(b.KernelText(), "0001:4c:1f");
  EXPECT_EQ(b.ShortText(), "0001:4C:1F.7");

  const PciAddress c = *ParsePciAddress("ABCDEF01:02:03.4");
  EXPECT_EQ(c.ToString(), "ABCDEF01:02:03.4");
  EXPECT_EQ(c.KernelText(), "abcdef01:02:03");
  EXPECT_EQ(c.ShortText(), "ABCDEF01:02:03.4");

  // What it writes, it reads back.
  for (const PciAddress& p : {a, b, c}) {
    EXPECT_EQ(ParsePciAddress(p.ToString()), p);
    EXPECT_EQ(ParsePciAddress(p.ShortText()).value_or(PciAddress{}).bus, p.bus);
  }
}

}  // namespace
}  // namespace gw
