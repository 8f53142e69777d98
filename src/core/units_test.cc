#include "core/units.h"

#include <cstdint>
#include <limits>

#include <gtest/gtest.h>

#include "core/text.h"

namespace gw {
namespace {
TEST(FormatBytes, SmallValuesAreExact) {
  EXPECT_EQ(FormatBytes(0), "0 B");
  EXPECT_EQ(FormatBytes(1), "1 B");
  EXPECT_EQ(FormatBytes(1023), "1023 B");
}

TEST(FormatBytes, ExactMultiplesHaveNoDecimals) {
  EXPECT_EQ(FormatBytes(kKiB), "1 KiB");
  EXPECT_EQ(FormatBytes(512 * kMiB), "512 MiB");
  EXPECT_EQ(FormatBytes(80 * kGiB), "80 GiB");
  EXPECT_EQ(FormatBytes(3 * kTiB), "3 TiB");
}

TEST(FormatBytes, OtherValuesHaveOneRoundedDecimal) {
  EXPECT_EQ(FormatBytes(81559 * kMiB), "79.6 GiB");  // An H100's framebuffer.
  EXPECT_EQ(FormatBytes(kGiB + 1), "1.0 GiB");
  EXPECT_EQ(FormatBytes(1536 * kMiB), "1.5 GiB");
  EXPECT_EQ(FormatBytes(1500), "1.5 KiB");
  EXPECT_EQ(FormatBytes(kMiB - 1), "1.0 MiB");  // Not "1024.0 KiB".
  EXPECT_EQ(FormatBytes(std::numeric_limits<uint64_t>::max()), "16.0 EiB");
}

TEST(FormatMiB, RoundsDownLikeNvidiaSmi) {
  EXPECT_EQ(FormatMiB(0), "0 MiB");
  EXPECT_EQ(FormatMiB(81559 * kMiB), "81559 MiB");
  EXPECT_EQ(FormatMiB(2 * kMiB - 1), "1 MiB");
}

TEST(ParseSize, AcceptsNumbersWithBinaryUnits) {
  EXPECT_EQ(ParseSize("1024").value(), 1024u);
  EXPECT_EQ(ParseSize("0").value(), 0u);
  EXPECT_EQ(ParseSize("512B").value(), 512u);
  EXPECT_EQ(ParseSize("4K").value(), 4 * kKiB);
  EXPECT_EQ(ParseSize("4kib").value(), 4 * kKiB);
  EXPECT_EQ(ParseSize("512M").value(), 512 * kMiB);
  EXPECT_EQ(ParseSize("20G").value(), 20 * kGiB);
  EXPECT_EQ(ParseSize("20GiB").value(), 20 * kGiB);
  EXPECT_EQ(ParseSize("20GB").value(), 20 * kGiB);  // Binary too, on purpose.
  EXPECT_EQ(ParseSize(" 20 g ").value(), 20 * kGiB);
  EXPECT_EQ(ParseSize("1.5T").value(), kTiB + kTiB / 2);
  EXPECT_EQ(ParseSize("0.5K").value(), 512u);
  EXPECT_EQ(ParseSize("1.0001K").value(), 1024u);  // 1024.1024 -> nearest byte.
  EXPECT_EQ(ParseSize("16E").ok(), false);
  EXPECT_EQ(ParseSize("15E").value(), 15 * (kTiB * 1024 * 1024));
}

TEST(ParseSize, ErrorsNameTheInput) {
  for (const char* bad :
       {"", "G", "-5G", "20X", "20 GiBs", "1.G", ".5G", "1e3", "20G extra", "0x10", "nan", "inf"}) {
    auto r = ParseSize(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.error().code, "malformed") << bad;
    EXPECT_NE(r.error().message.find(std::string("\"") + bad + "\""), std::string::npos)
        << r.error().message;
  }
  auto big = ParseSize("99999999999999999999");
  ASSERT_FALSE(big.ok());
  EXPECT_EQ(big.error().code, "out_of_range");
  EXPECT_EQ(ParseSize("17179869184G").error().code, "out_of_range");
}

TEST(ParseSize, UnknownUnitIsNamed) {
  auto r = ParseSize("20X");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("unknown unit \"x\""), std::string::npos) << r.error().message;
}

TEST(FormatDuration, UsesAtMostTwoUnits) {
  EXPECT_EQ(FormatDuration(0), "0s");
  EXPECT_EQ(FormatDuration(0.9), "0s");
  EXPECT_EQ(FormatDuration(45), "45s");
  EXPECT_EQ(FormatDuration(59.99), "59s");
  EXPECT_EQ(FormatDuration(60), "1m");
  EXPECT_EQ(FormatDuration(12 * 60 + 59), "12m");
  EXPECT_EQ(FormatDuration(3600), "1h");
  EXPECT_EQ(FormatDuration(3 * 3600 + 20 * 60 + 5), "3h 20m");
  EXPECT_EQ(FormatDuration(86400), "1d");
  EXPECT_EQ(FormatDuration(2 * 86400 + 4 * 3600 + 59 * 60), "2d 4h");
  EXPECT_EQ(FormatDuration(400 * 86400.0), "400d");
}

TEST(FormatDuration, NegativeIsZeroAndNonFiniteIsNA) {
  EXPECT_EQ(FormatDuration(-5), "0s");
  EXPECT_EQ(FormatDuration(std::numeric_limits<double>::quiet_NaN()), "N/A");
  EXPECT_EQ(FormatDuration(std::numeric_limits<double>::infinity()), "N/A");
  EXPECT_FALSE(FormatDuration(1e300).empty());
}

TEST(ParseDuration, AcceptsUnitsAndCompounds) {
  EXPECT_DOUBLE_EQ(ParseDuration("90s").value(), 90);
  EXPECT_DOUBLE_EQ(ParseDuration("90").value(), 90);
  EXPECT_DOUBLE_EQ(ParseDuration("30m").value(), 1800);
  EXPECT_DOUBLE_EQ(ParseDuration("2h").value(), 7200);
  EXPECT_DOUBLE_EQ(ParseDuration("1d").value(), 86400);
  EXPECT_DOUBLE_EQ(ParseDuration("1w").value(), 7 * 86400);
  EXPECT_DOUBLE_EQ(ParseDuration("1.5h").value(), 5400);
  EXPECT_DOUBLE_EQ(ParseDuration("0.5s").value(), 0.5);
  EXPECT_DOUBLE_EQ(ParseDuration("1h30m").value(), 5400);
  EXPECT_DOUBLE_EQ(ParseDuration("2d 4h").value(), 2 * 86400 + 4 * 3600);
  EXPECT_DOUBLE_EQ(ParseDuration(" 2H ").value(), 7200);
}

TEST(ParseDuration, RoundTripsFormatDuration) {
  for (double s : {0.0, 45.0, 720.0, 12000.0, 187200.0}) {
    EXPECT_DOUBLE_EQ(ParseDuration(FormatDuration(s)).value(), s) << FormatDuration(s);
  }
}

TEST(ParseDuration, ErrorsNameTheInput) {
  for (const char* bad : {"", "m", "-5m", "5x", "5 min", "1h 30", "1e3s", "nan", "inf", "1..5h"}) {
    auto r = ParseDuration(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.error().code, "malformed") << bad;
    EXPECT_NE(r.error().message.find(std::string("\"") + bad + "\""), std::string::npos)
        << r.error().message;
  }
  auto r = ParseDuration("99999999999999999999d");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, "out_of_range");
}

// Found by fuzz_units (fuzz/corpus/units/regression-del-byte-in-unit): the message quoted the
// input's bytes raw, so a control byte in a flag or a request reached the terminal.
TEST(ParseSizeAndDuration, ErrorsQuoteTheInputSanitised) {
  for (const std::string bad : {"3\x7fm", "1\nfake line", "2\x1b[2J", "5\xff"}) {
    const Result<uint64_t> size = ParseSize(bad);
    const Result<double> duration = ParseDuration(bad);
    ASSERT_FALSE(size.ok() || duration.ok()) << bad;
    for (const std::string& message : {size.error().message, duration.error().message}) {
      EXPECT_EQ(message.find_first_of("\n\x7f\x1b\xff"), std::string::npos) << message;
      EXPECT_NE(message.find(SanitizeForTerminal(bad)), std::string::npos) << message;
    }
  }
}

}  // namespace
}  // namespace gw
