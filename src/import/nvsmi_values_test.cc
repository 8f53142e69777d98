#include "import/nvsmi_values.h"
#include "core/units.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <ctime>

namespace gw::import {
namespace {
TEST(NvsmiValuesTest, TrimsXmlWhiteSpaceOnly) {
  EXPECT_EQ(TrimXmlSpace("\n\t  None \r\n"), "None");
  EXPECT_EQ(TrimXmlSpace("   "), "");
  EXPECT_EQ(TrimXmlSpace("\va\v"), "\va\v");  // \v is not XML white space.
}

TEST(NvsmiValuesTest, UnsupportedWords) {
  for (const char* text : {"N/A", "[N/A]", "n/a", "Not Supported", "[Not Supported]", "None",
                           "Requested functionality has been deprecated", "", "  "}) {
    EXPECT_TRUE(IsUnsupportedText(text)) << text;
  }
  for (const char* text : {"0", "0 MiB", "Unknown Error", "GPU is lost", "NA", "Enabled"}) {
    EXPECT_FALSE(IsUnsupportedText(text)) << text;
  }
}

TEST(NvsmiValuesTest, NvmlErrorStrings) {
  auto unknown = MatchNvmlError("Unknown Error");
  ASSERT_TRUE(unknown);
  EXPECT_EQ(unknown->code, "unknown_error");
  EXPECT_EQ(unknown->nvml_return, 999);

  auto lost = MatchNvmlError("  GPU is lost. Reboot the system to recover this GPU\n");
  ASSERT_TRUE(lost);
  EXPECT_EQ(lost->code, "gpu_lost");
  EXPECT_EQ(lost->nvml_return, 15);

  auto bracketed = MatchNvmlError("[Insufficient Permissions]");
  ASSERT_TRUE(bracketed);
  EXPECT_EQ(bracketed->code, "no_permission");
  EXPECT_EQ(bracketed->nvml_return, 4);

  auto mismatch = MatchNvmlError("Driver/library version mismatch");
  ASSERT_TRUE(mismatch);
  EXPECT_EQ(mismatch->nvml_return, 18);

  EXPECT_FALSE(MatchNvmlError("N/A"));
  EXPECT_FALSE(MatchNvmlError("12 MiB"));
  EXPECT_FALSE(MatchNvmlError("GPU is lostx"));
}

TEST(NvsmiValuesTest, UnsignedWithUnit) {
  EXPECT_EQ(ParseUnsignedWithUnit("27 C", "C"), 27u);
  EXPECT_EQ(ParseUnsignedWithUnit("16x", "x"), 16u);
  EXPECT_EQ(ParseUnsignedWithUnit("0 %", "%"), 0u);
  EXPECT_EQ(ParseUnsignedWithUnit("1275 MHz", "MHz"), 1275u);
  EXPECT_EQ(ParseUnsignedWithUnit(" 42 ", ""), 42u);
  EXPECT_EQ(ParseUnsignedWithUnit("42", "%"), 42u);  // Bare number in a unit field.
  EXPECT_EQ(ParseUnsignedWithUnit("18446744073709551615", ""), UINT64_MAX);

  EXPECT_FALSE(ParseUnsignedWithUnit("27 F", "C"));
  EXPECT_FALSE(ParseUnsignedWithUnit("-1 C", "C"));
  EXPECT_FALSE(ParseUnsignedWithUnit("+1", ""));
  EXPECT_FALSE(ParseUnsignedWithUnit("1.5 %", "%"));
  EXPECT_FALSE(ParseUnsignedWithUnit("12 %", ""));
  EXPECT_FALSE(ParseUnsignedWithUnit("12  %", "%"));  // Two spaces: not nvidia-smi's layout.
  EXPECT_FALSE(ParseUnsignedWithUnit("%", "%"));
  EXPECT_FALSE(ParseUnsignedWithUnit("", ""));
  EXPECT_FALSE(ParseUnsignedWithUnit("18446744073709551616", ""));
  EXPECT_FALSE(ParseUnsignedWithUnit("0x10", ""));
}

TEST(NvsmiValuesTest, SignedWithUnit) {
  EXPECT_EQ(ParseSignedWithUnit("-7 C", "C"), -7);
  EXPECT_EQ(ParseSignedWithUnit("38 C", "C"), 38);
  EXPECT_FALSE(ParseSignedWithUnit("- 7 C", "C"));
  EXPECT_FALSE(ParseSignedWithUnit("N/A", "C"));
}

TEST(NvsmiValuesTest, DecimalWithUnit) {
  EXPECT_DOUBLE_EQ(*ParseDecimalWithUnit("67.03 W", "W"), 67.03);
  EXPECT_DOUBLE_EQ(*ParseDecimalWithUnit("500.00 W", "W"), 500.0);
  EXPECT_DOUBLE_EQ(*ParseDecimalWithUnit("70 W", "W"), 70.0);
  EXPECT_FALSE(ParseDecimalWithUnit("nan W", "W"));
  EXPECT_FALSE(ParseDecimalWithUnit("inf", "W"));
  EXPECT_FALSE(ParseDecimalWithUnit("1e3 W", "W"));
  EXPECT_FALSE(ParseDecimalWithUnit("-5.0 W", "W"));
  EXPECT_FALSE(ParseDecimalWithUnit(". W", "W"));
  EXPECT_FALSE(ParseDecimalWithUnit("1.2.3 W", "W"));
  EXPECT_FALSE(ParseDecimalWithUnit("67.03 mW", "W"));
}

TEST(NvsmiValuesTest, MemoryBytes) {
  EXPECT_EQ(ParseMemoryBytes("81920 MiB"), 81920 * kMiB);
  EXPECT_EQ(ParseMemoryBytes("0 MiB"), 0u);
  EXPECT_EQ(ParseMemoryBytes("2 GiB"), 2048 * kMiB);
  EXPECT_EQ(ParseMemoryBytes("4 KiB"), 4096u);
  EXPECT_EQ(ParseMemoryBytes("512 B"), 512u);
  EXPECT_EQ(ParseMemoryBytes("1 TiB"), uint64_t{1} << 40);
  EXPECT_FALSE(ParseMemoryBytes("81920"));  // No unit: ambiguous.
  EXPECT_FALSE(ParseMemoryBytes("81920 MB"));
  EXPECT_FALSE(ParseMemoryBytes("MiB"));
  EXPECT_FALSE(ParseMemoryBytes("-1 MiB"));
  EXPECT_FALSE(ParseMemoryBytes("17592186044416 MiB"));  // 2^44 MiB = 2^64 bytes: overflow.
}

TEST(NvsmiValuesTest, HexPstateFlag) {
  EXPECT_EQ(ParseHex("20B210DE"), 0x20B210DEu);
  EXPECT_EQ(ParseHex("0x1e"), 0x1Eu);
  EXPECT_FALSE(ParseHex("0x"));
  EXPECT_FALSE(ParseHex("20B2 10DE"));
  EXPECT_FALSE(ParseHex("G0"));

  EXPECT_EQ(ParsePstate("P0"), 0u);
  EXPECT_EQ(ParsePstate("P15"), 15u);
  EXPECT_FALSE(ParsePstate("P16"));
  EXPECT_FALSE(ParsePstate("P"));
  EXPECT_FALSE(ParsePstate("0"));

  EXPECT_EQ(ParseFlag("Enabled", "Enabled", "Disabled"), true);
  EXPECT_EQ(ParseFlag("disabled", "Enabled", "Disabled"), false);
  EXPECT_EQ(ParseFlag("Not Active", "Active", "Not Active"), false);
  EXPECT_EQ(ParseFlag("Active", "Active", "Not Active"), true);
  EXPECT_FALSE(ParseFlag("Maybe", "Yes", "No"));
}

TEST(NvsmiValuesTest, CudaVersion) {
  EXPECT_EQ(ParseCudaVersion("12.2"), 12020);
  EXPECT_EQ(ParseCudaVersion("11.7"), 11070);
  EXPECT_EQ(ParseCudaVersion("13.2"), 13020);
  EXPECT_EQ(ParseCudaVersion("10.1"), 10010);
  EXPECT_FALSE(ParseCudaVersion("12"));
  EXPECT_FALSE(ParseCudaVersion("N/A"));
  EXPECT_FALSE(ParseCudaVersion("12.x"));
  EXPECT_FALSE(ParseCudaVersion("12.100"));
}

class TimestampTest : public ::testing::Test {
 protected:
  // The dump's time is local time: pin the zone so the expectations hold anywhere.
  void SetUp() override {
    const char* tz = std::getenv("TZ");
    if (tz != nullptr) saved_tz_ = tz;
    had_tz_ = tz != nullptr;
    setenv("TZ", "UTC0", 1);
    tzset();
  }
  void TearDown() override {
    if (had_tz_) {
      setenv("TZ", saved_tz_.c_str(), 1);
    } else {
      unsetenv("TZ");
    }
    tzset();
  }

 private:
  std::string saved_tz_;
  bool had_tz_ = false;
};

TEST_F(TimestampTest, CtimeLayout) {
  // date -u -d '2023-08-04 11:44:30' +%s = 1691149470
  EXPECT_EQ(ParseTimestampLocal("Fri Aug  4 11:44:30 2023"), int64_t{1691149470} * 1000);
  EXPECT_EQ(ParseTimestampLocal("Mon Apr 24 16:22:39 2023"), int64_t{1682353359} * 1000);
  EXPECT_EQ(ParseTimestampLocal("Thu Jan  1 00:00:00 1970"), 0);
}

TEST_F(TimestampTest, FollowsTheLocalZone) {
  setenv("TZ", "UTC-2", 1);  // POSIX sign: two hours east of UTC.
  tzset();
  EXPECT_EQ(ParseTimestampLocal("Fri Aug  4 11:44:30 2023"), int64_t{1691149470 - 7200} * 1000);
}

TEST_F(TimestampTest, RejectsOtherText) {
  EXPECT_FALSE(ParseTimestampLocal(""));
  EXPECT_FALSE(ParseTimestampLocal("N/A"));
  EXPECT_FALSE(ParseTimestampLocal("2024/06/20 21:24:53.799"));
  EXPECT_FALSE(ParseTimestampLocal("Fri Aug  4 11:44:30"));
  EXPECT_FALSE(ParseTimestampLocal("Fri Aug  4 11:44:30 2023 extra"));
  EXPECT_FALSE(ParseTimestampLocal("Fri Foo  4 11:44:30 2023"));
  EXPECT_FALSE(ParseTimestampLocal("Fri Feb 31 11:44:30 2023"));
  EXPECT_FALSE(ParseTimestampLocal("Fri Aug  4 24:44:30 2023"));
  EXPECT_FALSE(ParseTimestampLocal("Fri Aug  4 1:44:30 2023"));
}

TEST(NvsmiValuesTest, QuoteForMessageEscapesEverythingButPrintableAscii) {
  EXPECT_EQ(QuoteForMessage("GPU is lost"), "\"GPU is lost\"");
  EXPECT_EQ(QuoteForMessage("a\x1b[2J\n\xc3\xa9"), "\"a\\x1b[2J\\x0a\\xc3\\xa9\"");
  EXPECT_EQ(QuoteForMessage("abcdef", 3), "\"abc...\"");
  EXPECT_EQ(EscapeForMessage("00000000:01:00.0\x07"), "00000000:01:00.0\\x07");
}

}  // namespace
}  // namespace gw::import
