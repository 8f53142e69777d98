// ParseSprio on the real 22.05 capture and on bad input; DescribeFactors.
#include "slurm/sprio.h"

#include <gtest/gtest.h>

#include <string>

#include "slurm/slurm_test_util.h"

namespace gw::slurm {
namespace {

TEST(Sprio, ReadsTheCapture) {
  auto rows = ParseSprio(ReadTestdata("22.05-sprio.txt"));
  ASSERT_TRUE(rows.ok()) << rows.error().message;
  ASSERT_EQ(rows->size(), 4u);
  const PriorityFactors& first = (*rows)[0];
  EXPECT_EQ(first.job_id, 17);
  EXPECT_EQ(first.user, "root");
  EXPECT_EQ(first.partition, "gpu");
  EXPECT_EQ(first.priority, 1000);
  EXPECT_EQ(first.partition_factor, 1000);
  EXPECT_EQ(first.qos, 0);
  EXPECT_EQ(first.tres, "");
  EXPECT_EQ(DescribeFactors(first), "partition 1000");
  EXPECT_EQ(rows->back().job_id, 20);
}

TEST(Sprio, FactorsLargestFirstNiceSubtracted) {
  auto rows = ParseSprio(
      "8|alice|gpu|11000|0|12.5|0|0|0|1000|10000|0|\n"
      "9|bob|high|900|0|0|0|0|0|1000|0|100|gres/gpu=5,cpu=1\n"
      "10|carol|gpu|1|0|0|0|0|0|0|0|0|(null)\n");
  ASSERT_TRUE(rows.ok()) << rows.error().message;
  ASSERT_EQ(rows->size(), 3u);
  EXPECT_EQ(DescribeFactors((*rows)[0]), "QOS 10000 + partition 1000 + age 12.50");
  EXPECT_EQ(DescribeFactors((*rows)[1]), "partition 1000 + TRES (gres/gpu=5,cpu=1) − nice 100");
  EXPECT_EQ(DescribeFactors((*rows)[2]), "every factor is 0");
  EXPECT_EQ((*rows)[2].tres, "");
}

TEST(Sprio, MalformedLinesAreNamed) {
  struct Case {
    const char* text;
    const char* expect;
  };
  const Case cases[] = {
      {"8|alice|gpu|11000\n", "4 fields, expected 13"},
      {"x|alice|gpu|1|0|0|0|0|0|0|0|0|\n", "\"x\" is not a job id"},
      {"8|alice|gpu|lots|0|0|0|0|0|0|0|0|\n", "\"lots\" is not a number"},
      {"8|a|gpu|1|0|0|0|0|0|0|0|0|\n9|b|gpu|1|0|0|0|0|nan|0|0|0|\n", "line 2"},
  };
  for (const Case& c : cases) {
    auto rows = ParseSprio(c.text);
    ASSERT_FALSE(rows.ok()) << c.text;
    EXPECT_EQ(rows.error().code, "malformed");
    EXPECT_NE(rows.error().message.find(c.expect), std::string::npos)
        << c.text << " -> " << rows.error().message;
  }
  auto empty = ParseSprio("\n  \n");
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(empty->empty());
}

TEST(Sprio, Figures) {
  EXPECT_EQ(FormatFigure(1000), "1000");
  EXPECT_EQ(FormatFigure(0.6), "0.60");
  EXPECT_EQ(FormatFigure(-3), "-3");
}

}  // namespace
}  // namespace gw::slurm
