// The screen model of `gpuwarden watch`: a grid of cells, each one character
// (UTF-8) with a style. The layout (layout.h) fills a Screen as a pure
// function of what it shows; the ncurses backend (curses_backend.h) only
// paints it, and tests read it back as text. No terminal is involved here.
#ifndef GPUWARDEN_WATCH_SCREEN_H_
#define GPUWARDEN_WATCH_SCREEN_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace gw::watch {

enum class Color : uint8_t { kDefault, kRed, kGreen, kYellow, kBlue, kMagenta, kCyan };

// How a cell looks. Colour is a hint: on a monochrome terminal, or with
// NO_COLOR, only the attributes are shown, so nothing may be told by colour
// alone (markers and words carry the meaning).
struct Style {
  Color fg = Color::kDefault;
  bool bold = false;
  bool dim = false;
  bool reverse = false;
  bool operator==(const Style&) const = default;
};

inline constexpr Style kPlain{};
inline constexpr Style kBold{Color::kDefault, true};
inline constexpr Style kDim{Color::kDefault, false, true};
inline constexpr Style kReverse{Color::kDefault, false, false, true};
inline constexpr Style Fg(Color c, bool bold = false) { return Style{c, bold}; }

// Trivially copyable, so that a whole screen is built, compared and copied
// as plain memory (a 200x60 screen is 12,000 cells, redrawn every second).
struct Cell {
  static constexpr size_t kMaxBytes = 14;
  // One character as UTF-8 (combining marks included, up to kMaxBytes);
  // "" for the second column of a wide character, which the character to
  // its left covers.
  std::string_view glyph() const { return {bytes_.data(), len_}; }
  void SetGlyph(std::string_view g) {
    len_ = static_cast<uint8_t>(g.size() < kMaxBytes ? g.size() : kMaxBytes);
    for (size_t i = 0; i < len_; ++i) bytes_[i] = g[i];
  }
  // Appends a combining mark when it fits.
  void AppendGlyph(std::string_view g) {
    if (len_ + g.size() > kMaxBytes) return;
    for (char c : g) bytes_[len_++] = c;
  }
  Style style;
  bool operator==(const Cell& o) const {
    return len_ == o.len_ && style == o.style && glyph() == o.glyph();
  }

 private:
  std::array<char, kMaxBytes> bytes_{' '};
  uint8_t len_ = 1;
};

class Screen {
 public:
  // width and height below 1 are taken as 1.
  Screen(int width, int height);

  int width() const { return width_; }
  int height() const { return height_; }

  // Writes `text` from column x of row y, one character per cell (two for a
  // wide one), and stops at column x + max_cols (max_cols < 0: the right
  // edge) without splitting a wide character; returns the columns written.
  // `text` must be safe for a terminal (sanitised: no control characters);
  // a control byte that slips through is written as '?'. Out-of-range rows
  // write nothing.
  int Put(int x, int y, std::string_view text, Style style = kPlain, int max_cols = -1);

  // Sets the style of `cols` cells from (x, y) without changing the text.
  void SetStyle(int x, int y, int cols, Style style);

  const Cell& At(int x, int y) const { return cells_[static_cast<size_t>(y * width_ + x)]; }

  // Row y as text: the glyphs in order, trailing spaces removed.
  std::string RowText(int y) const;
  // Every row, each followed by '\n'.
  std::string Text() const;

  bool operator==(const Screen&) const = default;

 private:
  Cell& Mut(int x, int y) { return cells_[static_cast<size_t>(y * width_ + x)]; }

  int width_;
  int height_;
  std::vector<Cell> cells_;
};

}  // namespace gw::watch

#endif  // GPUWARDEN_WATCH_SCREEN_H_
