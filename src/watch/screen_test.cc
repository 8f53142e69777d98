#include "watch/screen.h"

#include <gtest/gtest.h>

namespace gw::watch {
namespace {

TEST(Screen, PutWritesTextAndStopsAtTheEdge) {
  Screen s(10, 2);
  EXPECT_EQ(s.Put(2, 0, "hello world", kBold), 8);
  EXPECT_EQ(s.RowText(0), "  hello wo");
  EXPECT_EQ(s.At(2, 0).style, kBold);
  EXPECT_EQ(s.At(0, 0).style, kPlain);
  EXPECT_EQ(s.RowText(1), "");
}

TEST(Screen, MaxColsLimitsTheWrite) {
  Screen s(20, 1);
  EXPECT_EQ(s.Put(0, 0, "abcdef", kPlain, 3), 3);
  EXPECT_EQ(s.RowText(0), "abc");
}

TEST(Screen, WideCharactersTakeTwoCellsAndAreNeverSplit) {
  Screen s(5, 1);
  // Three CJK characters need 6 columns: only two fit in 5.
  EXPECT_EQ(s.Put(0, 0, "日本語"), 4);
  EXPECT_EQ(s.At(0, 0).glyph(), "日");
  EXPECT_EQ(s.At(1, 0).glyph(), "");  // Covered by 日.
  EXPECT_EQ(s.RowText(0), "日本");
  // Overwriting half of a wide character blanks its other half.
  s.Put(1, 0, "x");
  EXPECT_EQ(s.RowText(0), " x本");
}

TEST(Screen, ControlBytesNeverReachTheScreen) {
  Screen s(10, 1);
  s.Put(0, 0, "a\x1b[2Jb");
  EXPECT_EQ(s.RowText(0), "a?[2Jb");
  for (int x = 0; x < 10; ++x) EXPECT_NE(s.At(x, 0).glyph(), "\x1b");
}

TEST(Screen, RowsOutsideTheScreenAreIgnored) {
  Screen s(4, 1);
  EXPECT_EQ(s.Put(0, 1, "x"), 0);
  EXPECT_EQ(s.Put(0, -1, "x"), 0);
  EXPECT_EQ(s.Text(), "\n");
}

TEST(Screen, SetStyleChangesOnlyTheStyle) {
  Screen s(6, 1);
  s.Put(0, 0, "abcdef");
  s.SetStyle(1, 0, 2, kReverse);
  EXPECT_EQ(s.RowText(0), "abcdef");
  EXPECT_EQ(s.At(1, 0).style, kReverse);
  EXPECT_EQ(s.At(3, 0).style, kPlain);
}

}  // namespace
}  // namespace gw::watch
