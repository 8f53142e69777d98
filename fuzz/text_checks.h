// The checker's own judgement of text that reaches a terminal: shared by the
// fuzz targets and the hostile-text table (tests/hostile_text_test.cc). It
// decodes UTF-8 itself, so that the code under test (gw::SanitizeForTerminal)
// never judges its own output.
#ifndef GPUWARDEN_FUZZ_TEXT_CHECKS_H_
#define GPUWARDEN_FUZZ_TEXT_CHECKS_H_

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

namespace gw::fuzz {

// Decodes the UTF-8 sequence at `s[i]` strictly (no overlong forms, no
// surrogates, nothing above U+10FFFF); returns its length, 0 when invalid.
inline size_t DecodeUtf8(std::string_view s, size_t i, uint32_t* cp) {
  const auto b = [&](size_t k) { return static_cast<uint8_t>(s[k]); };
  const uint8_t c = b(i);
  size_t len;
  uint32_t v;
  if (c < 0x80) {
    *cp = c;
    return 1;
  } else if (c >= 0xc2 && c <= 0xdf) {
    len = 2, v = c & 0x1f;
  } else if (c >= 0xe0 && c <= 0xef) {
    len = 3, v = c & 0x0f;
  } else if (c >= 0xf0 && c <= 0xf4) {
    len = 4, v = c & 0x07;
  } else {
    return 0;
  }
  if (i + len > s.size()) return 0;
  for (size_t k = 1; k < len; ++k) {
    if ((b(i + k) & 0xc0) != 0x80) return 0;
    v = (v << 6) | (b(i + k) & 0x3f);
  }
  if ((len == 3 && v < 0x800) || (len == 4 && v < 0x10000) || v > 0x10ffff ||
      (v >= 0xd800 && v <= 0xdfff)) {
    return 0;
  }
  *cp = v;
  return len;
}

// What makes `text` unsafe on a terminal, "" when nothing does: invalid
// UTF-8, a C0 control other than '\n' (and '\t' when `allow_tab`), DEL, a C1
// control, a bidirectional control or a line/paragraph separator. `*at` gets
// the offending byte's offset.
inline std::string UnsafeCharacter(std::string_view text, bool allow_tab, size_t* at) {
  for (size_t i = 0; i < text.size();) {
    uint32_t cp = 0;
    const size_t len = DecodeUtf8(text, i, &cp);
    *at = i;
    if (len == 0) return "invalid UTF-8";
    const bool control = (cp < 0x20 && cp != '\n' && !(allow_tab && cp == '\t')) || cp == 0x7f ||
                         (cp >= 0x80 && cp <= 0x9f);
    const bool bidi = cp == 0x200e || cp == 0x200f || (cp >= 0x202a && cp <= 0x202e) ||
                      (cp >= 0x2066 && cp <= 0x2069) || cp == 0x2028 || cp == 0x2029;
    if (control || bidi) {
      char hex[16];
      snprintf(hex, sizeof hex, "U+%04X", static_cast<unsigned>(cp));
      return hex;
    }
    i += len;
  }
  return "";
}

}  // namespace gw::fuzz

#endif  // GPUWARDEN_FUZZ_TEXT_CHECKS_H_
