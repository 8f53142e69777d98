// Layout helpers shared by the text renderers (status, why, health, events,
// explain): a line of styled spans that is cut to a width without counting or
// splitting colour codes, word wrapping by display width, and the colour of a
// verdict.
#ifndef GPUWARDEN_RENDER_STYLED_LINE_H_
#define GPUWARDEN_RENDER_STYLED_LINE_H_

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "diagnose/finding.h"

namespace gw::render {

enum class Tone {
  kPlain,
  kBold,
  kDim,
  kRed,
  kBoldRed,
  kYellow,
  kBoldYellow,
  kGreen,
  kMagenta,
  kCyan
};

// The ANSI SGR sequence that starts `tone`; "" for kPlain.
std::string_view ToneCode(Tone tone);

// One output line as styled spans. Spans hold text that is already safe for a
// terminal (sanitised); Render cuts the plain text to `width` columns (ending
// in '…') and adds colour codes only when `color` is true, so the codes never
// count towards the width and no ESC byte appears without colour.
class StyledLine {
 public:
  StyledLine& Add(std::string text, Tone tone = Tone::kPlain);
  int Width() const;
  // Without a trailing newline; trailing spaces removed.
  std::string Render(int width, bool color) const;

 private:
  std::vector<std::pair<std::string, Tone>> spans_;
};

// Splits `text` (safe for a terminal, one paragraph) into lines of at most
// `width` columns at spaces. A word wider than `width` is cut with '…'.
// Empty text gives one empty line. width < 1 is treated as 1.
std::vector<std::string> WrapWords(std::string_view text, int width);

// The same with a different width for the first line (a hanging indent:
// first line after a prefix, the others after an indent).
std::vector<std::string> WrapWords(std::string_view text, int first_width, int rest_width);

// The colour of a verdict: OK green, BUSY / RECLAIMABLE yellow, DEGRADED
// magenta, FAULT red, UNKNOWN dim.
Tone VerdictTone(diagnose::Verdict verdict);

}  // namespace gw::render

#endif  // GPUWARDEN_RENDER_STYLED_LINE_H_
