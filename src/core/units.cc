#include "core/units.h"

#include <ctime>

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "core/text.h"

namespace gw {
namespace {

constexpr std::array<const char*, 6> kBinaryUnits = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};

char ToLower(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; }
bool IsDigit(char c) { return c >= '0' && c <= '9'; }
bool IsBlank(char c) { return c == ' ' || c == '\t'; }

std::string_view Trim(std::string_view s) {
  while (!s.empty() && IsBlank(s.front())) s.remove_prefix(1);
  while (!s.empty() && IsBlank(s.back())) s.remove_suffix(1);
  return s;
}

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = ToLower(c);
  return out;
}

// Length of the decimal number at the start of `s`: digits, optionally '.'
// and more digits. 0 when `s` does not start with a digit or the '.' has no
// digit after it (so "1." and ".5" are rejected, as are signs and exponents).
size_t ScanDecimal(std::string_view s) {
  size_t i = 0;
  while (i < s.size() && IsDigit(s[i])) ++i;
  if (i == 0) return 0;
  if (i < s.size() && s[i] == '.') {
    size_t j = i + 1;
    while (j < s.size() && IsDigit(s[j])) ++j;
    if (j == i + 1) return 0;
    i = j;
  }
  return i;
}

// Returns the multiplier (as a power of 1024) for a lower-cased size unit, or
// -1 when it is not one.
int SizeUnitPower(std::string_view unit) {
  if (unit.empty() || unit == "b") return 0;
  static constexpr std::string_view kLetters = "kmgtpe";
  if (unit.size() > 3) return -1;
  const size_t idx = kLetters.find(unit[0]);
  if (idx == std::string_view::npos) return -1;
  const std::string_view rest = unit.substr(1);
  if (!(rest.empty() || rest == "b" || rest == "ib")) return -1;
  return static_cast<int>(idx) + 1;
}

// The input and the reason (which may quote part of it) are sanitised: the
// message is one line a terminal prints as it is, whatever bytes were typed
// or sent to the daemon.
Error SizeError(std::string_view code, std::string_view text, std::string_view why) {
  return MakeError(
      std::string(code),
      fmt::format("invalid size \"{}\": {}", SanitizeForTerminal(text), SanitizeForTerminal(why)));
}

Error DurationError(std::string_view code, std::string_view text, std::string_view why) {
  return MakeError(std::string(code),
                   fmt::format("invalid duration \"{}\": {}", SanitizeForTerminal(text),
                               SanitizeForTerminal(why)));
}

}  // namespace

std::string FormatBytes(uint64_t bytes) {
  if (bytes < 1024) return fmt::format("{} B", bytes);
  size_t unit = 0;  // Index into kBinaryUnits; the unit is 1024^(unit + 1).
  while (unit + 1 < kBinaryUnits.size() && (bytes >> (10 * (unit + 2))) > 0) ++unit;
  const uint64_t unit_bytes = uint64_t{1} << (10 * (unit + 1));
  if (bytes % unit_bytes == 0) return fmt::format("{} {}", bytes / unit_bytes, kBinaryUnits[unit]);
  double value = static_cast<double>(bytes) / static_cast<double>(unit_bytes);
  // 1023.96 KiB would print as "1024.0 KiB"; step up to "1.0 MiB" instead.
  if (std::round(value * 10) / 10 >= 1024 && unit + 1 < kBinaryUnits.size()) {
    ++unit;
    value /= 1024;
  }
  return fmt::format("{:.1f} {}", value, kBinaryUnits[unit]);
}

std::string FormatMiB(uint64_t bytes) { return fmt::format("{} MiB", bytes >> 20); }

Result<uint64_t> ParseSize(std::string_view text) {
  const std::string_view s = Trim(text);
  if (s.empty()) return SizeError("malformed", text, "empty; expected e.g. 20G, 512MiB or 1024");
  const size_t num_len = ScanDecimal(s);
  if (num_len == 0) {
    return SizeError("malformed", text,
                     "expected a non-negative number with an optional unit, e.g. 20G or 512MiB");
  }
  const std::string unit = Lower(Trim(s.substr(num_len)));
  const int power = SizeUnitPower(unit);
  if (power < 0) {
    return SizeError("malformed", text,
                     fmt::format("unknown unit \"{}\" (use B, K, M, G, T, P or E, optionally "
                                 "followed by iB)",
                                 unit));
  }
  const std::string_view number = s.substr(0, num_len);
  const size_t dot = number.find('.');
  const std::string_view int_part = number.substr(0, dot);
  std::string_view frac_part =
      dot == std::string_view::npos ? std::string_view() : number.substr(dot + 1);
  // Digits past the 18th cannot change the result by a whole byte at any
  // unit up to EiB, and keeping 18 keeps 10^18 * 2^60 inside 128 bits.
  if (frac_part.size() > 18) frac_part = frac_part.substr(0, 18);

  using U128 = unsigned __int128;
  constexpr U128 kMax = std::numeric_limits<uint64_t>::max();
  const U128 multiplier = U128{1} << (10 * power);
  U128 whole = 0;
  for (char c : int_part) {
    whole = whole * 10 + static_cast<unsigned>(c - '0');
    if (whole > kMax) return SizeError("out_of_range", text, "larger than 16 EiB");
  }
  U128 frac = 0;
  U128 scale = 1;
  for (char c : frac_part) {
    frac = frac * 10 + static_cast<unsigned>(c - '0');
    scale *= 10;
  }
  const U128 total = whole * multiplier + (frac * multiplier + scale / 2) / scale;
  if (total > kMax) return SizeError("out_of_range", text, "larger than 16 EiB");
  return static_cast<uint64_t>(total);
}

std::string FormatDuration(double seconds) {
  if (!std::isfinite(seconds)) return "N/A";
  if (seconds < 0) seconds = 0;
  // Past ~3 million years the exact number stops mattering; keep the cast defined.
  const double capped = std::min(seconds, 1e14);
  const auto total = static_cast<uint64_t>(std::floor(capped));
  if (total < 60) return fmt::format("{}s", total);
  if (total < 3600) return fmt::format("{}m", total / 60);
  if (total < 86400) {
    const uint64_t h = total / 3600;
    const uint64_t m = (total % 3600) / 60;
    return m == 0 ? fmt::format("{}h", h) : fmt::format("{}h {}m", h, m);
  }
  const uint64_t d = total / 86400;
  const uint64_t h = (total % 86400) / 3600;
  return h == 0 ? fmt::format("{}d", d) : fmt::format("{}d {}h", d, h);
}

Result<double> ParseDuration(std::string_view text) {
  std::string_view s = Trim(text);
  if (s.empty()) return DurationError("malformed", text, "empty; expected e.g. 90s, 30m, 2h or 1d");
  double total = 0;
  bool first = true;
  while (!s.empty()) {
    const size_t num_len = ScanDecimal(s);
    if (num_len == 0) {
      return DurationError("malformed", text,
                           "expected a non-negative number with a unit s, m, h, d or w, e.g. 30m");
    }
    double value = 0;
    const auto [end, ec] = std::from_chars(s.data(), s.data() + num_len, value);
    if (ec != std::errc() || end != s.data() + num_len || !std::isfinite(value)) {
      return DurationError("out_of_range", text, "number too large");
    }
    s = Trim(s.substr(num_len));
    size_t unit_len = 0;
    while (unit_len < s.size() && !IsDigit(s[unit_len]) && !IsBlank(s[unit_len])) ++unit_len;
    const std::string unit = Lower(s.substr(0, unit_len));
    s = Trim(s.substr(unit_len));
    double factor = 0;
    if (unit.empty()) {
      // A bare number is seconds, but only on its own: "1h 30" is a typo.
      if (!first || !s.empty()) {
        return DurationError("malformed", text, "every number after the first needs a unit");
      }
      factor = 1;
    } else if (unit == "s") {
      factor = 1;
    } else if (unit == "m") {
      factor = 60;
    } else if (unit == "h") {
      factor = 3600;
    } else if (unit == "d") {
      factor = 86400;
    } else if (unit == "w") {
      factor = 7 * 86400;
    } else {
      return DurationError("malformed", text,
                           fmt::format("unknown unit \"{}\" (use s, m, h, d or w)", unit));
    }
    total += value * factor;
    first = false;
  }
  // A thousand years is beyond any timeout or age this tool deals with.
  if (!std::isfinite(total) || total > 1000.0 * 365 * 86400) {
    return DurationError("out_of_range", text, "longer than 1000 years");
  }
  return total;
}

std::string FormatLocalTime(int64_t unix_ms) {
  const std::time_t t = static_cast<std::time_t>(unix_ms / 1000);
  std::tm tm{};
  if (localtime_r(&t, &tm) == nullptr) return "time N/A";
  char buf[40];
  if (std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%S%z", &tm) == 0) return "time N/A";
  std::string s = buf;
  // strftime's %z is "+0100"; ISO 8601 extended format wants "+01:00".
  if (s.size() >= 5 && (s[s.size() - 5] == '+' || s[s.size() - 5] == '-')) {
    s = s.substr(0, s.size() - 2) + ":" + s.substr(s.size() - 2);
  }
  return s;
}

}  // namespace gw
