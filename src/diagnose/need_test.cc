#include <gtest/gtest.h>

#include <string>

#include "core/text.h"
#include "diagnose/rules.h"

namespace gw::diagnose {
namespace {

TEST(ParseNeedTest, Good) {
  Result<NeedRequest> n = ParseNeed("20G");
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(n->gpus, 1u);
  EXPECT_EQ(n->bytes_per_gpu, 20 * kGiB);
  EXPECT_FALSE(n->nvlink);

  n = ParseNeed("2x24G");
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(n->gpus, 2u);
  EXPECT_EQ(n->bytes_per_gpu, 24 * kGiB);

  n = ParseNeed("4x40GiB");
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(n->gpus, 4u);
  EXPECT_EQ(n->bytes_per_gpu, 40 * kGiB);

  n = ParseNeed("2X512m");
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(n->gpus, 2u);
  EXPECT_EQ(n->bytes_per_gpu, uint64_t{512} << 20);

  n = ParseNeed("8x80G+nvlink");
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(n->gpus, 8u);
  EXPECT_TRUE(n->nvlink);

  n = ParseNeed("1.5T+NVLink");
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(n->bytes_per_gpu, 1536 * kGiB);
  EXPECT_TRUE(n->nvlink);
}

TEST(ParseNeedTest, BadInputIsNamed) {
  for (const char* bad : {"", "x20G", "2x", "abc", "2y20G", "20G+nvlinks", "-1x20G", "2x-3G",
                          "two x 20G", "20G 2x"}) {
    SCOPED_TRACE(bad);
    Result<NeedRequest> n = ParseNeed(bad);
    ASSERT_FALSE(n.ok());
    EXPECT_EQ(n.error().code, "malformed");
    EXPECT_NE(n.error().message.find(std::string("\"") + bad + "\""), std::string::npos)
        << n.error().message;
  }
}

TEST(ParseNeedTest, OutOfRange) {
  for (const char* bad : {"0x20G", "2x0G", "0", "5000x1G", "99999999999999999999x1G", "1x99E"}) {
    SCOPED_TRACE(bad);
    Result<NeedRequest> n = ParseNeed(bad);
    ASSERT_FALSE(n.ok());
    EXPECT_EQ(n.error().code, "out_of_range");
    EXPECT_NE(n.error().message.find(bad), std::string::npos);
  }
}

// Found by fuzz_units: the message quoted the input raw (see units_test.cc).
TEST(ParseNeedTest, BadInputIsQuotedSanitised) {
  for (const std::string bad : {"2x\x1b[2J", "3\x7fm", "1\nx20G", "\xffx1G"}) {
    Result<NeedRequest> n = ParseNeed(bad);
    ASSERT_FALSE(n.ok()) << bad;
    EXPECT_EQ(n.error().message.find_first_of("\n\x7f\x1b\xff"), std::string::npos)
        << n.error().message;
    EXPECT_NE(n.error().message.find(SanitizeForTerminal(bad)), std::string::npos)
        << n.error().message;
  }
}

TEST(FormatNeedTest, RoundTrips) {
  for (const char* text : {"20G", "2x24G", "4x40G+nvlink", "3x1536M", "7x1000"}) {
    Result<NeedRequest> n = ParseNeed(text);
    ASSERT_TRUE(n.ok()) << text;
    EXPECT_EQ(FormatNeed(*n), text);
  }
  EXPECT_EQ(FormatNeed({.gpus = 2, .bytes_per_gpu = 80 * kGiB, .nvlink = false}), "2x80G");
}

}  // namespace
}  // namespace gw::diagnose
