#include "core/text.h"

#include <algorithm>
#include <cstdint>
#include <iterator>

#include <fmt/format.h>

namespace gw {
namespace {

struct Decoded {
  char32_t code_point = 0;
  size_t length = 1;  // Bytes consumed; 1 for an invalid byte.
  bool valid = false;
};

bool IsContinuation(unsigned char c) { return (c & 0xC0) == 0x80; }

// Decodes one UTF-8 sequence at text[pos] following RFC 3629 strictly: no
// overlong forms, no surrogates, nothing above U+10FFFF. Anything else is one
// invalid byte, so the caller can escape it and resynchronise on the next.
Decoded DecodeAt(std::string_view text, size_t pos) {
  const auto b0 = static_cast<unsigned char>(text[pos]);
  if (b0 < 0x80) return {b0, 1, true};
  size_t need = 0;
  unsigned char lo = 0x80;
  unsigned char hi = 0xBF;
  char32_t cp = 0;
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    need = 1;
    cp = b0 & 0x1F;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    need = 2;
    cp = b0 & 0x0F;
    if (b0 == 0xE0) lo = 0xA0;  // Overlong below U+0800.
    if (b0 == 0xED) hi = 0x9F;  // UTF-16 surrogates.
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    need = 3;
    cp = b0 & 0x07;
    if (b0 == 0xF0) lo = 0x90;  // Overlong below U+10000.
    if (b0 == 0xF4) hi = 0x8F;  // Above U+10FFFF.
  } else {
    return {};
  }
  if (pos + need >= text.size()) return {};  // Truncated at the end.
  for (size_t k = 1; k <= need; ++k) {
    const auto b = static_cast<unsigned char>(text[pos + k]);
    if (k == 1 ? (b < lo || b > hi) : !IsContinuation(b)) return {};
    cp = (cp << 6) | (b & 0x3F);
  }
  return {cp, need + 1, true};
}

bool IsBidiOrSeparator(char32_t cp) {
  return cp == 0x200E || cp == 0x200F || (cp >= 0x202A && cp <= 0x202E) ||
         (cp >= 0x2066 && cp <= 0x2069) || cp == 0x2028 || cp == 0x2029;
}

bool IsZeroWidth(char32_t cp) {
  return (cp >= 0x0300 && cp <= 0x036F) ||  // Combining diacritical marks.
         (cp >= 0x0483 && cp <= 0x0489) || (cp >= 0x0591 && cp <= 0x05BD) ||
         (cp >= 0x0610 && cp <= 0x061A) || (cp >= 0x064B && cp <= 0x065F) ||
         (cp >= 0x1AB0 && cp <= 0x1AFF) || (cp >= 0x1DC0 && cp <= 0x1DFF) ||
         (cp >= 0x200B && cp <= 0x200F) ||  // Zero-width space, joiners, marks.
         (cp >= 0x20D0 && cp <= 0x20FF) ||  // Combining marks for symbols.
         (cp >= 0xFE00 && cp <= 0xFE0F) ||  // Variation selectors.
         (cp >= 0xFE20 && cp <= 0xFE2F) || cp == 0xFEFF || (cp >= 0xE0100 && cp <= 0xE01EF);
}

// East Asian Wide (W) and Fullwidth (F) blocks, coarse but covering what
// shows up in process names: CJK, Hangul, kana, fullwidth forms, emoji.
bool IsWide(char32_t cp) {
  return (cp >= 0x1100 && cp <= 0x115F) ||  // Hangul Jamo initials.
         cp == 0x2329 || cp == 0x232A ||
         (cp >= 0x2E80 && cp <= 0x303E) ||  // CJK radicals .. CJK symbols.
         (cp >= 0x3041 && cp <= 0x33FF) ||  // Kana, Bopomofo, CJK compat.
         (cp >= 0x3400 && cp <= 0x4DBF) ||  // CJK extension A.
         (cp >= 0x4E00 && cp <= 0x9FFF) ||  // CJK unified ideographs.
         (cp >= 0xA000 && cp <= 0xA4CF) ||  // Yi.
         (cp >= 0xA960 && cp <= 0xA97F) ||  // Hangul Jamo extended A.
         (cp >= 0xAC00 && cp <= 0xD7A3) ||  // Hangul syllables.
         (cp >= 0xF900 && cp <= 0xFAFF) ||  // CJK compatibility ideographs.
         (cp >= 0xFE10 && cp <= 0xFE19) ||  // Vertical forms.
         (cp >= 0xFE30 && cp <= 0xFE6F) ||  // CJK compatibility forms.
         (cp >= 0xFF00 && cp <= 0xFF60) ||  // Fullwidth forms.
         (cp >= 0xFFE0 && cp <= 0xFFE6) ||
         (cp >= 0x1F300 && cp <= 0x1F64F) ||  // Pictographs, emoticons.
         (cp >= 0x1F680 && cp <= 0x1F6FF) ||  // Transport and map symbols.
         (cp >= 0x1F900 && cp <= 0x1F9FF) ||  // Supplemental pictographs.
         (cp >= 0x1FA70 && cp <= 0x1FAFF) ||  // Symbols and pictographs ext. A.
         (cp >= 0x20000 && cp <= 0x2FFFD) ||  // CJK extensions B..F.
         (cp >= 0x30000 && cp <= 0x3FFFD);
}

int CodePointWidth(char32_t cp) {
  if (cp < 0x20 || (cp >= 0x7F && cp < 0xA0)) return 0;
  if (IsZeroWidth(cp)) return 0;
  return IsWide(cp) ? 2 : 1;
}

// Width of one unit at text[pos] (a valid sequence or one invalid byte).
int UnitWidth(const Decoded& d) { return d.valid ? CodePointWidth(d.code_point) : 1; }

bool NeedsQuoting(std::string_view arg) {
  return arg.empty() || arg.find_first_of(" '\"") != std::string_view::npos;
}

}  // namespace

std::string SanitizeForTerminal(std::string_view raw) {
  std::string out;
  out.reserve(raw.size());
  size_t pos = 0;
  while (pos < raw.size()) {
    const Decoded d = DecodeAt(raw, pos);
    if (!d.valid) {
      fmt::format_to(std::back_inserter(out), "\\x{:02x}", static_cast<unsigned char>(raw[pos]));
      pos += 1;
      continue;
    }
    const char32_t cp = d.code_point;
    if (cp == '\n') {
      out += "\\n";
    } else if (cp == '\t') {
      out += "\\t";
    } else if (cp == '\r') {
      out += "\\r";
    } else if (cp < 0x20 || cp == 0x7F) {
      fmt::format_to(std::back_inserter(out), "\\x{:02x}", static_cast<unsigned>(cp));
    } else if ((cp >= 0x80 && cp <= 0x9F) || IsBidiOrSeparator(cp)) {
      fmt::format_to(std::back_inserter(out), "\\u{:04x}", static_cast<unsigned>(cp));
    } else {
      out.append(raw.substr(pos, d.length));
    }
    pos += d.length;
  }
  return out;
}

std::string ToValidUtf8(std::string_view raw) {
  std::string out;
  out.reserve(raw.size());
  size_t pos = 0;
  while (pos < raw.size()) {
    const Decoded d = DecodeAt(raw, pos);
    if (d.valid) {
      out.append(raw.substr(pos, d.length));
    } else {
      out += "\xEF\xBF\xBD";  // U+FFFD REPLACEMENT CHARACTER.
    }
    pos += d.length;
  }
  return out;
}

std::string JoinCommandLine(const std::vector<std::string>& argv) {
  std::string out;
  for (size_t i = 0; i < argv.size(); ++i) {
    if (i > 0) out += ' ';
    std::string arg = SanitizeForTerminal(argv[i]);
    if (!NeedsQuoting(arg)) {
      out += arg;
      continue;
    }
    out += '\'';
    for (char c : arg) {
      if (c == '\'') {
        out += "'\\''";
      } else {
        out += c;
      }
    }
    out += '\'';
  }
  return out;
}

int DisplayWidth(std::string_view text) {
  int width = 0;
  size_t pos = 0;
  while (pos < text.size()) {
    const Decoded d = DecodeAt(text, pos);
    width += UnitWidth(d);
    pos += d.length;
  }
  return width;
}

std::string TruncateToWidth(std::string_view text, int columns) {
  if (columns <= 0) return "";
  if (DisplayWidth(text) <= columns) return std::string(text);
  // Keep whole units while they fit in columns - 1, leaving one for the '…'.
  const int budget = columns - 1;
  int used = 0;
  size_t pos = 0;
  while (pos < text.size()) {
    const Decoded d = DecodeAt(text, pos);
    const int w = UnitWidth(d);
    if (used + w > budget) break;
    used += w;
    pos += d.length;
  }
  std::string out(text.substr(0, pos));
  out += "\xE2\x80\xA6";  // U+2026 HORIZONTAL ELLIPSIS.
  return out;
}

std::string PadRight(std::string_view text, int columns) {
  std::string out = TruncateToWidth(text, columns);
  const int pad = columns - DisplayWidth(out);
  if (pad > 0) out.append(static_cast<size_t>(pad), ' ');
  return out;
}

std::string PadRightUncut(std::string_view text, int columns) {
  std::string out(text);
  const int pad = columns - DisplayWidth(out);
  if (pad > 0) out.append(static_cast<size_t>(pad), ' ');
  return out;
}

std::string PadLeft(std::string_view text, int columns) {
  std::string out = TruncateToWidth(text, columns);
  const int pad = columns - DisplayWidth(out);
  if (pad > 0) out.insert(0, static_cast<size_t>(pad), ' ');
  return out;
}

std::string AsciiUpper(std::string_view text) {
  std::string out(text);
  for (char& c : out) {
    if (c >= 'a' && c <= 'z') c = static_cast<char>(c - 'a' + 'A');
  }
  return out;
}

}  // namespace gw
