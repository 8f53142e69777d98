#include "render/text_table.h"

#include <gtest/gtest.h>

namespace gw::render {
namespace {

TEST(TextTable, PadsByDisplayWidthAndLeavesTheLastColumnAndLineEndsBare) {
  EXPECT_EQ(TextTable({{"JOB", "USER", "WHY"}, {"12", "ålice", "Resources"}, {"7", "李", ""}}),
            "JOB  USER   WHY\n"
            "12   ålice  Resources\n"
            "7    李\n");
  EXPECT_EQ(TextTable({}), "");
  // Rows of different lengths: the short ones end early.
  EXPECT_EQ(TextTable({{"a", "bb", "c"}, {"aaa"}}), "a    bb  c\naaa\n");
}

}  // namespace
}  // namespace gw::render
