// Text helpers for everything that reaches a terminal or a JSON document.
//
// Text that comes from other processes (command lines, comm names, cgroup
// paths, XML dumps) is untrusted bytes: it may hold escape sequences that move
// the cursor, clear the screen or retitle the window, and it may not be UTF-8
// at all. SanitizeForTerminal is the one gate such text passes before it is
// printed; the width helpers then lay it out without splitting a character.
#ifndef GPUWARDEN_CORE_TEXT_H_
#define GPUWARDEN_CORE_TEXT_H_

#include <string>
#include <string_view>
#include <vector>

namespace gw {

// Returns `raw` made safe to print on a terminal, as one line:
//   - valid printable UTF-8 is kept unchanged (including CJK, emoji, ...);
//   - \n, \t, \r become the two characters `\n`, `\t`, `\r`;
//   - other C0 controls (U+0000-U+001F) and DEL become `\xHH` (ESC -> `\x1b`);
//   - C1 controls (U+0080-U+009F, encoded as two bytes) become `\u0080`..`\u009f`;
//   - bidirectional formatting controls (U+200E, U+200F, U+202A-U+202E,
//     U+2066-U+2069) and the line/paragraph separators U+2028/U+2029 become
//     `\uXXXX`, so a name cannot reorder or break the line it is printed on;
//   - every byte that is not part of a valid UTF-8 sequence (stray continuation
//     bytes, truncated or overlong sequences, surrogates, > U+10FFFF) becomes
//     `\xHH` (a raw 0x9b byte -> `\x9b`).
// The output is valid UTF-8 and contains no byte < 0x20, no 0x7f and no C1
// control. A backslash in the input is kept as is (the escapes are for the
// eye, not meant to be reversible).
std::string SanitizeForTerminal(std::string_view raw);

// Returns `raw` with every byte that is not part of a valid UTF-8 sequence
// replaced by U+FFFD. Valid text (controls included) is unchanged. For JSON:
// strings keep their raw text, JSON escaping handles controls.
std::string ToValidUtf8(std::string_view raw);

// Joins argv into one display line: each argument is sanitised; an argument
// that is empty or contains a space or a quote character is wrapped in single
// quotes (a `'` inside becomes `'\''`, as a POSIX shell would read it).
std::string JoinCommandLine(const std::vector<std::string>& argv);

// Number of terminal columns `text` occupies: East Asian wide and fullwidth
// characters (CJK, Hangul, fullwidth forms, most emoji) count 2, combining
// marks and zero-width characters 0, everything else 1. An invalid byte counts
// 1. Meant for sanitised text: controls count 0.
int DisplayWidth(std::string_view text);

// Returns `text` cut so that it occupies at most `columns` columns. When it
// has to cut, the result ends with `…` (one column) and never splits a UTF-8
// sequence nor a wide character. columns <= 0 returns "".
std::string TruncateToWidth(std::string_view text, int columns);

// Truncates to `columns` (as TruncateToWidth) and pads with spaces to exactly
// `columns` columns: on the right (PadRight) or on the left (PadLeft).
std::string PadRight(std::string_view text, int columns);
std::string PadLeft(std::string_view text, int columns);
// `text` padded on the right to `columns` columns, never cut: a table cell
// when the output has no width to keep to.
std::string PadRightUncut(std::string_view text, int columns);

// A renderer's width that means "no width": nothing is cut or wrapped (the
// output goes to a pipe or a file, docs/cli.md "Output").
inline constexpr int kUnlimitedWidth = 1 << 20;

// `text` with the ASCII letters a-z made upper case; every other byte (UTF-8
// sequences included) unchanged. Independent of the locale.
std::string AsciiUpper(std::string_view text);

}  // namespace gw

#endif  // GPUWARDEN_CORE_TEXT_H_
