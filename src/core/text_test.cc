#include "core/text.h"

#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace gw {
namespace {

// True when `s` holds no byte a terminal could read as (part of) a control:
// C0, DEL, and the two-byte UTF-8 forms of C1 (C2 80..C2 9F).
bool HasNoControls(const std::string& s) {
  for (size_t i = 0; i < s.size(); ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x20 || c == 0x7F) return false;
    if (c == 0xC2 && i + 1 < s.size()) {
      const auto n = static_cast<unsigned char>(s[i + 1]);
      if (n >= 0x80 && n <= 0x9F) return false;
    }
  }
  return true;
}

TEST(SanitizeForTerminal, KeepsPlainAsciiAndUtf8) {
  EXPECT_EQ(SanitizeForTerminal("python train.py --lr=3e-4"), "python train.py --lr=3e-4");
  EXPECT_EQ(SanitizeForTerminal("训练 ジョブ 학습 café ✓"), "训练 ジョブ 학습 café ✓");
  EXPECT_EQ(SanitizeForTerminal("emoji \xF0\x9F\x9A\x80"), "emoji \xF0\x9F\x9A\x80");
  EXPECT_EQ(SanitizeForTerminal(""), "");
}

TEST(SanitizeForTerminal, EscapesC0ControlsAndDel) {
  EXPECT_EQ(SanitizeForTerminal("a\nb\tc\rd"), "a\\nb\\tc\\rd");
  EXPECT_EQ(SanitizeForTerminal("\x1b[2Jevil"), "\\x1b[2Jevil");
  EXPECT_EQ(SanitizeForTerminal(std::string("a\0b", 3)), "a\\x00b");
  EXPECT_EQ(SanitizeForTerminal("\x07\x7f"), "\\x07\\x7f");
  EXPECT_EQ(SanitizeForTerminal("\x1b]0;pwned\x07"), "\\x1b]0;pwned\\x07");
}

TEST(SanitizeForTerminal, EscapesC1ControlsEncodedAsUtf8) {
  // U+009B is the 8-bit CSI: as UTF-8 (C2 9B) some terminals obey it.
  EXPECT_EQ(SanitizeForTerminal("x\xC2\x9B"
                                "2Jy"),
            "x\\u009b2Jy");
  EXPECT_EQ(SanitizeForTerminal("\xC2\x80\xC2\x9F"), "\\u0080\\u009f");
  // U+00A0 (first non-control after C1) is kept.
  EXPECT_EQ(SanitizeForTerminal("\xC2\xA0"), "\xC2\xA0");
}

TEST(SanitizeForTerminal, EscapesInvalidUtf8BytesOneByOne) {
  EXPECT_EQ(SanitizeForTerminal("\x9b"
                                "2J"),
            "\\x9b2J");                                                        // Raw 8-bit CSI.
  EXPECT_EQ(SanitizeForTerminal("ab\xff\xfe"), "ab\\xff\\xfe");                // Never valid.
  EXPECT_EQ(SanitizeForTerminal("\xC0\xAF"), "\\xc0\\xaf");                    // Overlong '/'.
  EXPECT_EQ(SanitizeForTerminal("\xED\xA0\x80"), "\\xed\\xa0\\x80");           // Surrogate.
  EXPECT_EQ(SanitizeForTerminal("\xF4\x90\x80\x80"), "\\xf4\\x90\\x80\\x80");  // > U+10FFFF.
  EXPECT_EQ(SanitizeForTerminal("\xE4\xB8"), "\\xe4\\xb8");  // Truncated at the end.
  EXPECT_EQ(SanitizeForTerminal("\xE4"
                                "A"),
            "\\xe4A");  // Resynchronises.
  EXPECT_EQ(SanitizeForTerminal("latin1 caf\xE9"), "latin1 caf\\xe9");
}

TEST(SanitizeForTerminal, EscapesBidiOverridesAndLineSeparators) {
  EXPECT_EQ(SanitizeForTerminal("a\xE2\x80\xAE"
                                "b"),
            "a\\u202eb");
  EXPECT_EQ(SanitizeForTerminal("\xE2\x81\xA6\xE2\x80\xA8"), "\\u2066\\u2028");
}

TEST(SanitizeForTerminal, OutputIsAlwaysSafeForEveryByte) {
  std::string all;
  for (int b = 0; b < 256; ++b) all += static_cast<char>(b);
  const std::string out = SanitizeForTerminal(all + all);
  EXPECT_TRUE(HasNoControls(out));
  EXPECT_EQ(ToValidUtf8(out), out);  // Valid UTF-8.
  // Every two-byte sequence as well, so no pairing slips through.
  for (int a = 0x80; a < 0x100; ++a) {
    for (int b = 0x00; b < 0x100; ++b) {
      std::string pair{static_cast<char>(a), static_cast<char>(b)};
      const std::string s = SanitizeForTerminal(pair);
      ASSERT_TRUE(HasNoControls(s)) << a << " " << b;
    }
  }
}

TEST(ToValidUtf8, ReplacesOnlyInvalidBytes) {
  EXPECT_EQ(ToValidUtf8("ok \x1b 训练"), "ok \x1b 训练");
  EXPECT_EQ(ToValidUtf8("a\xff"
                        "b"),
            "a\xEF\xBF\xBD"
            "b");
  EXPECT_EQ(ToValidUtf8("\xE4\xB8"), "\xEF\xBF\xBD\xEF\xBF\xBD");
}

TEST(JoinCommandLine, QuotesArgumentsWithSpacesAndSanitises) {
  EXPECT_EQ(JoinCommandLine({}), "");
  EXPECT_EQ(JoinCommandLine({"python", "train.py", "--lr", "0.1"}), "python train.py --lr 0.1");
  EXPECT_EQ(JoinCommandLine({"bash", "-c", "echo hi"}), "bash -c 'echo hi'");
  EXPECT_EQ(JoinCommandLine({"a", ""}), "a ''");
  EXPECT_EQ(JoinCommandLine({"it's"}), "'it'\\''s'");
  EXPECT_EQ(JoinCommandLine({"x\x1b[2J", "a\nb"}), "x\\x1b[2J a\\nb");
}

TEST(DisplayWidth, CountsWideAndZeroWidthCharacters) {
  EXPECT_EQ(DisplayWidth(""), 0);
  EXPECT_EQ(DisplayWidth("abc"), 3);
  EXPECT_EQ(DisplayWidth("训练"), 4);
  EXPECT_EQ(DisplayWidth("ｆｕｌｌ"), 8);  // Fullwidth forms.
  EXPECT_EQ(DisplayWidth("한국어"), 6);
  EXPECT_EQ(DisplayWidth("e\xCC\x81"), 1);  // e + combining acute.
  EXPECT_EQ(DisplayWidth("café"), 4);
  EXPECT_EQ(DisplayWidth("\xF0\x9F\x9A\x80"), 2);  // Rocket emoji.
  EXPECT_EQ(DisplayWidth("…"), 1);
  EXPECT_EQ(DisplayWidth("█░"), 2);
  EXPECT_EQ(DisplayWidth("\xff"), 1);  // An invalid byte still takes a cell.
}

TEST(TruncateToWidth, KeepsShortTextAndCutsLongTextWithEllipsis) {
  EXPECT_EQ(TruncateToWidth("hello", 5), "hello");
  EXPECT_EQ(TruncateToWidth("hello", 10), "hello");
  EXPECT_EQ(TruncateToWidth("hello world", 5), "hell…");
  EXPECT_EQ(TruncateToWidth("hello", 1), "…");
  EXPECT_EQ(TruncateToWidth("hello", 0), "");
  EXPECT_EQ(TruncateToWidth("hello", -3), "");
}

TEST(TruncateToWidth, NeverSplitsUtf8OrWideCharacters) {
  // Each CJK character is 3 bytes and 2 columns.
  const std::string cjk = "训练模型任务";
  for (int cols = 0; cols <= 14; ++cols) {
    const std::string t = TruncateToWidth(cjk, cols);
    EXPECT_LE(DisplayWidth(t), cols) << cols;
    EXPECT_EQ(ToValidUtf8(t), t) << "split a sequence at " << cols;
  }
  EXPECT_EQ(TruncateToWidth(cjk, 5), "训练…");
  EXPECT_EQ(TruncateToWidth(cjk, 6), "训练…");  // 3 chars = 6 cols won't fit with '…'.
  EXPECT_EQ(TruncateToWidth(cjk, 12), cjk);
  EXPECT_EQ(TruncateToWidth("café latte", 4), "caf…");
}

TEST(Pad, PadsToExactWidthByDisplayColumns) {
  EXPECT_EQ(PadRight("ab", 4), "ab  ");
  EXPECT_EQ(PadLeft("ab", 4), "  ab");
  EXPECT_EQ(PadRight("训", 4), "训  ");
  EXPECT_EQ(PadLeft("abcdef", 4), "abc…");
  EXPECT_EQ(DisplayWidth(PadRight("训练模型", 5)), 5);
}

TEST(AsciiUpper, RaisesOnlyAsciiLetters) {
  EXPECT_EQ(AsciiUpper("idle_holder xid-79"), "IDLE_HOLDER XID-79");
  EXPECT_EQ(AsciiUpper("caf\xC3\xA9 \xCE\xB1"), "CAF\xC3\xA9 \xCE\xB1");  // UTF-8 unchanged.
  EXPECT_EQ(AsciiUpper(""), "");
}

}  // namespace
}  // namespace gw
