#include "import/nvsmi_values.h"

#include <charconv>
#include <cmath>
#include <ctime>
#include <limits>
#include <system_error>

namespace gw::import {
namespace {

bool IsXmlSpace(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }

char AsciiLower(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; }

bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (AsciiLower(a[i]) != AsciiLower(b[i])) return false;
  }
  return true;
}

bool StartsWithIgnoreCase(std::string_view text, std::string_view prefix) {
  return text.size() >= prefix.size() && EqualsIgnoreCase(text.substr(0, prefix.size()), prefix);
}

// CSV output wraps these words in brackets ("[N/A]"); accept both forms everywhere.
std::string_view StripBrackets(std::string_view text) {
  if (text.size() >= 2 && text.front() == '[' && text.back() == ']') {
    return TrimXmlSpace(text.substr(1, text.size() - 2));
  }
  return text;
}

// Splits "<number><sep><unit>" and checks the unit. Returns the number part, or
// nullopt when the unit is wrong. An empty `unit` demands a bare number.
std::optional<std::string_view> NumberPart(std::string_view text, std::string_view unit) {
  text = TrimXmlSpace(text);
  if (!unit.empty() && text.size() > unit.size() &&
      text.substr(text.size() - unit.size()) == unit) {
    std::string_view number = text.substr(0, text.size() - unit.size());
    // At most one space between the number and the unit.
    if (!number.empty() && number.back() == ' ') number.remove_suffix(1);
    if (number.empty() || IsXmlSpace(number.back())) return std::nullopt;
    return number;
  }
  return text;
}

struct ErrorWord {
  std::string_view text;
  std::string_view code;
  int nvml_return;
};

// nvmlErrorString() texts (facts file §A.5); the ones confirmed in real nvidia-smi
// output are "GPU is lost", "Unknown Error", "Not Found", "Insufficient Permissions".
constexpr ErrorWord kErrorWords[] = {
    {"Uninitialized", "uninitialized", 1},
    {"Invalid Argument", "invalid_argument", 2},
    {"Insufficient Permissions", "no_permission", 4},
    {"Not Found", "not_found", 6},
    {"Insufficient Size", "insufficient_size", 7},
    {"Insufficient External Power", "insufficient_power", 8},
    {"Driver Not Loaded", "driver_not_loaded", 9},
    {"Timeout", "timeout", 10},
    {"Interrupt Request Issue", "irq_issue", 11},
    {"NVML Shared Library Not Found", "library_not_found", 12},
    {"Function Not Found", "function_not_found", 13},
    {"Corrupted infoROM", "corrupted_inforom", 14},
    {"GPU is lost", "gpu_lost", 15},
    {"GPU requires reset", "reset_required", 16},
    {"Operating System Error", "operating_system", 17},
    {"RM has detected an NVML/RM version mismatch", "lib_rm_version_mismatch", 18},
    {"Driver/library version mismatch", "lib_rm_version_mismatch", 18},
    {"In use", "in_use", 19},
    {"Insufficient Memory", "memory", 20},
    {"No data", "no_data", 21},
    {"Insufficient Resources", "insufficient_resources", 23},
    {"Argument Version Mismatch", "argument_version_mismatch", 25},
    {"Not Ready", "not_ready", 27},
    {"GPU not found", "gpu_not_found", 28},
    {"Invalid State", "invalid_state", 29},
    {"Unknown Error", "unknown_error", 999},
};

constexpr std::string_view kUnsupportedWords[] = {
    "N/A",
    "Not Supported",
    "Not Available",
    "None",
    "Requested functionality has been deprecated",
    "Deprecated",
};

template <typename T>
std::optional<T> ParseInteger(std::string_view number) {
  T value{};
  const char* first = number.data();
  const char* last = number.data() + number.size();
  // from_chars accepts '-' for signed types only; reject '+' and spaces by design.
  auto [ptr, ec] = std::from_chars(first, last, value);
  if (ec != std::errc() || ptr != last || number.empty()) return std::nullopt;
  return value;
}

}  // namespace

std::string_view TrimXmlSpace(std::string_view text) {
  while (!text.empty() && IsXmlSpace(text.front())) text.remove_prefix(1);
  while (!text.empty() && IsXmlSpace(text.back())) text.remove_suffix(1);
  return text;
}

bool IsUnsupportedText(std::string_view text) {
  text = StripBrackets(TrimXmlSpace(text));
  if (text.empty()) return true;
  for (std::string_view word : kUnsupportedWords) {
    if (EqualsIgnoreCase(text, word)) return true;
  }
  return false;
}

std::optional<NvmlErrorText> MatchNvmlError(std::string_view text) {
  text = StripBrackets(TrimXmlSpace(text));
  for (const ErrorWord& word : kErrorWords) {
    if (EqualsIgnoreCase(text, word.text)) return NvmlErrorText{word.code, word.nvml_return};
  }
  // nvidia-smi appends advice to the lost-GPU string: "GPU is lost. Reboot the system ...".
  if (StartsWithIgnoreCase(text, "GPU is lost.")) return NvmlErrorText{"gpu_lost", 15};
  return std::nullopt;
}

std::optional<uint64_t> ParseUnsignedWithUnit(std::string_view text, std::string_view unit) {
  auto number = NumberPart(text, unit);
  if (!number || number->empty() || number->front() == '-') return std::nullopt;
  return ParseInteger<uint64_t>(*number);
}

std::optional<int64_t> ParseSignedWithUnit(std::string_view text, std::string_view unit) {
  auto number = NumberPart(text, unit);
  if (!number) return std::nullopt;
  return ParseInteger<int64_t>(*number);
}

std::optional<double> ParseDecimalWithUnit(std::string_view text, std::string_view unit) {
  auto number = NumberPart(text, unit);
  if (!number || number->empty()) return std::nullopt;
  // Only digits with at most one '.', so that "inf", "nan", "1e5" and "-3" stay unknown.
  bool seen_dot = false;
  bool seen_digit = false;
  for (char c : *number) {
    if (c == '.' && !seen_dot) {
      seen_dot = true;
    } else if (c >= '0' && c <= '9') {
      seen_digit = true;
    } else {
      return std::nullopt;
    }
  }
  if (!seen_digit) return std::nullopt;
  double value = 0;
  auto [ptr, ec] = std::from_chars(number->data(), number->data() + number->size(), value,
                                   std::chars_format::fixed);
  if (ec != std::errc() || ptr != number->data() + number->size() || !std::isfinite(value)) {
    return std::nullopt;
  }
  return value;
}

std::optional<uint64_t> ParseMemoryBytes(std::string_view text) {
  struct Unit {
    std::string_view name;
    uint64_t factor;
  };
  static constexpr Unit kUnits[] = {
      {"TiB", uint64_t{1} << 40},
      {"GiB", uint64_t{1} << 30},
      {"MiB", uint64_t{1} << 20},
      {"KiB", uint64_t{1} << 10},
      {"B", 1},
  };
  text = TrimXmlSpace(text);
  for (const Unit& unit : kUnits) {
    if (text.size() <= unit.name.size() ||
        text.substr(text.size() - unit.name.size()) != unit.name) {
      continue;
    }
    auto count = ParseUnsignedWithUnit(text, unit.name);
    if (!count) return std::nullopt;
    uint64_t bytes = 0;
    if (__builtin_mul_overflow(*count, unit.factor, &bytes)) return std::nullopt;
    return bytes;
  }
  return std::nullopt;
}

std::optional<uint64_t> ParseHex(std::string_view text) {
  text = TrimXmlSpace(text);
  if (text.size() > 2 && text[0] == '0' && (text[1] == 'x' || text[1] == 'X')) {
    text.remove_prefix(2);
  }
  if (text.empty()) return std::nullopt;
  uint64_t value = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value, 16);
  if (ec != std::errc() || ptr != text.data() + text.size()) return std::nullopt;
  return value;
}

std::optional<unsigned> ParsePstate(std::string_view text) {
  text = TrimXmlSpace(text);
  if (text.size() < 2 || text[0] != 'P') return std::nullopt;
  auto n = ParseInteger<unsigned>(text.substr(1));
  if (!n || *n > 15) return std::nullopt;
  return n;
}

std::optional<bool> ParseFlag(std::string_view text, std::string_view yes, std::string_view no) {
  text = TrimXmlSpace(text);
  if (EqualsIgnoreCase(text, yes)) return true;
  if (EqualsIgnoreCase(text, no)) return false;
  return std::nullopt;
}

std::optional<int> ParseCudaVersion(std::string_view text) {
  text = TrimXmlSpace(text);
  size_t dot = text.find('.');
  if (dot == std::string_view::npos) return std::nullopt;
  auto major = ParseInteger<unsigned>(text.substr(0, dot));
  auto minor = ParseInteger<unsigned>(text.substr(dot + 1));
  if (!major || !minor || *major > 1000 || *minor > 99) return std::nullopt;
  return static_cast<int>(*major * 1000 + *minor * 10);
}

std::optional<int64_t> ParseTimestampLocal(std::string_view text) {
  // "Www Mmm dd hh:mm:ss yyyy"; the day is space-padded, so split on runs of spaces.
  std::string_view fields[5];
  size_t count = 0;
  text = TrimXmlSpace(text);
  while (!text.empty()) {
    if (count == 5) return std::nullopt;
    size_t end = 0;
    while (end < text.size() && !IsXmlSpace(text[end])) ++end;
    fields[count++] = text.substr(0, end);
    text = TrimXmlSpace(text.substr(end));
  }
  if (count != 5) return std::nullopt;

  static constexpr std::string_view kDays[] = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};
  static constexpr std::string_view kMonths[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                                 "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
  bool day_ok = false;
  for (std::string_view day : kDays) day_ok = day_ok || fields[0] == day;
  int month = -1;
  for (int i = 0; i < 12; ++i) {
    if (fields[1] == kMonths[i]) month = i;
  }
  std::string_view hms = fields[3];
  if (!day_ok || month < 0 || hms.size() != 8 || hms[2] != ':' || hms[5] != ':') {
    return std::nullopt;
  }
  auto mday = ParseInteger<int>(fields[2]);
  auto hour = ParseInteger<int>(hms.substr(0, 2));
  auto minute = ParseInteger<int>(hms.substr(3, 2));
  auto second = ParseInteger<int>(hms.substr(6, 2));
  auto year = ParseInteger<int>(fields[4]);
  if (!mday || !hour || !minute || !second || !year || *mday < 1 || *mday > 31 || *hour > 23 ||
      *minute > 59 || *second > 60 || *year < 1970 || *year > 9999) {
    return std::nullopt;
  }
  std::tm tm{};
  tm.tm_year = *year - 1900;
  tm.tm_mon = month;
  tm.tm_mday = *mday;
  tm.tm_hour = *hour;
  tm.tm_min = *minute;
  tm.tm_sec = *second;
  tm.tm_isdst = -1;  // Let the zone rules decide, as the dump does not say.
  std::time_t t = std::mktime(&tm);
  if (t == static_cast<std::time_t>(-1)) return std::nullopt;
  // mktime normalises "Feb 31" into March; such a date was not a real timestamp.
  if (tm.tm_mday != *mday || tm.tm_mon != month) return std::nullopt;
  return static_cast<int64_t>(t) * 1000;
}

std::string EscapeForMessage(std::string_view text, size_t max_bytes) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  size_t shown = text.size() < max_bytes ? text.size() : max_bytes;
  for (size_t i = 0; i < shown; ++i) {
    auto byte = static_cast<unsigned char>(text[i]);
    if (byte >= 0x20 && byte < 0x7f) {
      out += static_cast<char>(byte);
    } else {
      out += "\\x";
      out += kHex[byte >> 4];
      out += kHex[byte & 0xf];
    }
  }
  if (shown < text.size()) out += "...";
  return out;
}

std::string QuoteForMessage(std::string_view text, size_t max_bytes) {
  return "\"" + EscapeForMessage(text, max_bytes) + "\"";
}

}  // namespace gw::import
