#include "watch/screen.h"

#include <algorithm>
#include <type_traits>

#include "core/text.h"

namespace gw::watch {

static_assert(std::is_trivially_copyable_v<Cell>, "screens are copied as plain memory");

namespace {

// Length of the UTF-8 sequence that starts with `lead`; 1 for a byte that
// cannot start one (the sanitiser never lets such a byte through).
size_t SequenceLength(unsigned char lead) {
  if (lead < 0x80) return 1;
  if ((lead & 0xE0) == 0xC0) return 2;
  if ((lead & 0xF0) == 0xE0) return 3;
  if ((lead & 0xF8) == 0xF0) return 4;
  return 1;
}

}  // namespace

Screen::Screen(int width, int height)
    : width_(std::max(1, width)),
      height_(std::max(1, height)),
      cells_(static_cast<size_t>(width_) * static_cast<size_t>(height_)) {}

int Screen::Put(int x, int y, std::string_view text, Style style, int max_cols) {
  if (y < 0 || y >= height_ || x >= width_) return 0;
  const int limit = max_cols < 0 ? width_ : std::min(width_, x + max_cols);
  int col = x;
  size_t i = 0;
  while (i < text.size()) {
    const size_t len =
        std::min(SequenceLength(static_cast<unsigned char>(text[i])), text.size() - i);
    std::string_view ch = text.substr(i, len);
    i += len;
    const unsigned char lead = static_cast<unsigned char>(ch[0]);
    if (lead < 0x20 || lead == 0x7f) ch = "?";
    const int w = len == 1 ? 1 : DisplayWidth(ch);
    if (w == 0) {
      // A combining mark joins the character before it.
      if (col > x && col - 1 >= 0) Mut(col - 1, y).AppendGlyph(ch);
      continue;
    }
    if (col + w > limit) break;
    if (col >= 0) {
      // Never leave half of a wide character behind.
      if (Mut(col, y).glyph().empty() && col > 0) Mut(col - 1, y).SetGlyph(" ");
      const int end = col + w;
      if (end < width_ && Mut(end, y).glyph().empty()) Mut(end, y).SetGlyph(" ");
      Cell& cell = Mut(col, y);
      cell.SetGlyph(ch);
      cell.style = style;
      if (w == 2) {
        Cell& right = Mut(col + 1, y);
        right.SetGlyph("");
        right.style = style;
      }
    }
    col += w;
  }
  return col - x;
}

void Screen::SetStyle(int x, int y, int cols, Style style) {
  if (y < 0 || y >= height_) return;
  for (int c = std::max(0, x); c < std::min(width_, x + cols); ++c) Mut(c, y).style = style;
}

std::string Screen::RowText(int y) const {
  std::string out;
  if (y < 0 || y >= height_) return out;
  for (int x = 0; x < width_; ++x) out += At(x, y).glyph();
  while (!out.empty() && out.back() == ' ') out.pop_back();
  return out;
}

std::string Screen::Text() const {
  std::string out;
  for (int y = 0; y < height_; ++y) {
    out += RowText(y);
    out += '\n';
  }
  return out;
}

}  // namespace gw::watch
