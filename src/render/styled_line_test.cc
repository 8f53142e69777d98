#include "render/styled_line.h"

#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/text.h"
#include "core/json_out.h"

namespace gw::render {
namespace {

TEST(StyledLine, CutsPlainTextAndKeepsColourCodesWhole) {
  StyledLine l;
  l.Add("abc", Tone::kRed).Add("defgh", Tone::kGreen);
  EXPECT_EQ(l.Width(), 8);
  EXPECT_EQ(l.Render(5, false), "abcd…");
  EXPECT_EQ(l.Render(5, true), "\x1b[31mabc\x1b[0m\x1b[32md…\x1b[0m");
  EXPECT_EQ(l.Render(100, false), "abcdefgh");
  EXPECT_EQ(StyledLine().Add("x  ").Render(10, false), "x");
}

TEST(WrapWords, BreaksAtSpacesWithinTheWidths) {
  EXPECT_EQ(WrapWords("aa bb cc dd", 5), (std::vector<std::string>{"aa bb", "cc dd"}));
  EXPECT_EQ(WrapWords("aa bb cc dd", 2, 8), (std::vector<std::string>{"aa", "bb cc dd"}));
  EXPECT_EQ(WrapWords("", 10), (std::vector<std::string>{""}));
  const std::vector<std::string> cut = WrapWords("abcdefghij xy", 4);
  ASSERT_EQ(cut.size(), 2u);
  EXPECT_EQ(cut[0], "abc…");
  EXPECT_EQ(cut[1], "xy");
  for (const std::string& line : WrapWords("日本語の テキスト を 折り返す", 6)) {
    EXPECT_LE(DisplayWidth(line), 6) << line;
  }
}

TEST(DumpJsonForTerminal, EscapesTerminalControlsAndNeverThrows) {
  nlohmann::json j = {{"a", "\x7f \xc2\x85 \xe2\x80\x8f \xe2\x80\xa8 ok \xe2\x80\xa6"},
                      {"b", "\xff"}};
  const std::string out = DumpJsonForTerminal(j, false, "x");
  EXPECT_EQ(out, R"({"a":"\u007f \u0085 \u200f \u2028 ok …","b":")"
                 "\xEF\xBF\xBD\"}");
  EXPECT_EQ(nlohmann::json::parse(out)["a"],
            "\x7f \xc2\x85 \xe2\x80\x8f \xe2\x80\xa8 ok \xe2\x80\xa6");
}

}  // namespace
}  // namespace gw::render
