#include "kmsg/log_prefix.h"

#include <ctime>

#include <limits>

namespace gw::kmsg {
namespace {

// A read position in a short string; every helper leaves `i` unchanged when
// it fails.
struct Cursor {
  std::string_view s;
  size_t i = 0;

  bool AtEnd() const { return i >= s.size(); }
  char Peek() const { return i < s.size() ? s[i] : '\0'; }
  void SkipSpaces() {
    while (i < s.size() && (s[i] == ' ' || s[i] == '\t')) ++i;
  }
  bool Eat(char c) {
    if (Peek() != c) return false;
    ++i;
    return true;
  }
  // Reads 1..max_digits decimal digits (exactly `max_digits` when exact). A
  // number too large for int64_t is no number: a /dev/kmsg header's fields
  // may have 20 digits, and a line can say anything.
  bool Number(int max_digits, int64_t* out, bool exact = false, int* ndigits = nullptr) {
    size_t j = i;
    int64_t v = 0;
    int n = 0;
    while (j < s.size() && n < max_digits && s[j] >= '0' && s[j] <= '9') {
      const int digit = s[j] - '0';
      if (v > (std::numeric_limits<int64_t>::max() - digit) / 10) return false;
      v = v * 10 + digit;
      ++j;
      ++n;
    }
    if (n == 0 || (exact && n != max_digits)) return false;
    i = j;
    *out = v;
    if (ndigits) *ndigits = n;
    return true;
  }
};

int MonthFromName(std::string_view m) {
  static constexpr std::string_view kMonths[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                                 "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
  for (int k = 0; k < 12; ++k) {
    if (m == kMonths[k]) return k + 1;
  }
  return 0;
}

// Days since 1970-01-01 of a proleptic Gregorian date (the well-known
// era-based civil-to-days computation).
int64_t DaysFromCivil(int64_t y, int m, int d) {
  y -= m <= 2;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const int64_t yoe = y - era * 400;
  const int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + doe - 719468;
}

bool ValidCivil(int64_t month, int64_t day, int64_t hour, int64_t minute, int64_t second) {
  return month >= 1 && month <= 12 && day >= 1 && day <= 31 && hour >= 0 && hour <= 23 &&
         minute >= 0 && minute <= 59 && second >= 0 && second <= 60;
}

// "HH:MM:SS" with an optional fraction ('.' or ','); fraction -> millis.
bool ReadClock(Cursor& c, int64_t* h, int64_t* m, int64_t* sec, int* millis) {
  Cursor t = c;
  if (!t.Number(2, h) || !t.Eat(':') || !t.Number(2, m, true) || !t.Eat(':') ||
      !t.Number(2, sec, true)) {
    return false;
  }
  *millis = 0;
  if (t.Peek() == '.' || t.Peek() == ',') {
    Cursor f = t;
    ++f.i;
    int64_t frac = 0;
    int n = 0;
    if (f.Number(9, &frac, false, &n)) {
      while (n > 3) {
        frac /= 10;
        --n;
      }
      while (n < 3) {
        frac *= 10;
        ++n;
      }
      *millis = static_cast<int>(frac);
      t = f;
      while (!t.AtEnd() && t.Peek() >= '0' && t.Peek() <= '9') ++t.i;  // Digits past 9.
    }
  }
  c = t;
  return true;
}

// "[ 1234.567890]" -> seconds.
bool ReadMonotonic(Cursor& c, double* out) {
  Cursor t = c;
  if (!t.Eat('[')) return false;
  t.SkipSpaces();
  int64_t whole = 0, frac = 0;
  int nfrac = 0;
  // dmesg always prints a fraction; "[123]" is a pid, not a time.
  if (!t.Number(12, &whole) || !t.Eat('.') || !t.Number(9, &frac, false, &nfrac)) return false;
  if (!t.Eat(']')) return false;
  double f = static_cast<double>(frac);
  for (int k = 0; k < nfrac; ++k) f /= 10.0;
  *out = static_cast<double>(whole) + f;
  c = t;
  return true;
}

// "Fri Aug 30 11:43:09 2024" (inside dmesg -T brackets).
bool ReadCtime(Cursor& c, LocalTimeConverter& local, int64_t* out) {
  Cursor t = c;
  if (t.i + 4 > t.s.size()) return false;
  t.i += 3;  // Weekday.
  if (!t.Eat(' ')) return false;
  t.SkipSpaces();
  if (t.i + 3 > t.s.size()) return false;
  const int month = MonthFromName(t.s.substr(t.i, 3));
  if (month == 0) return false;
  t.i += 3;
  t.SkipSpaces();
  int64_t day, h, m, s, year;
  int millis;
  if (!t.Number(2, &day)) return false;
  t.SkipSpaces();
  if (!ReadClock(t, &h, &m, &s, &millis)) return false;
  t.SkipSpaces();
  if (!t.Number(4, &year, true)) return false;
  if (!ValidCivil(month, day, h, m, s)) return false;
  auto ms = local.ToUnixMs(static_cast<int>(year), month, static_cast<int>(day),
                           static_cast<int>(h), static_cast<int>(m), static_cast<int>(s), millis);
  if (!ms) return false;
  *out = *ms;
  c = t;
  return true;
}

// "2024-08-30T11:43:09.123456+00:00" (zone: Z, +hh:mm, +hhmm, or none = local).
bool ReadIso(Cursor& c, LocalTimeConverter& local, int64_t* out) {
  Cursor t = c;
  int64_t y, mo, d, h, m, s;
  int millis;
  if (!t.Number(4, &y, true) || !t.Eat('-') || !t.Number(2, &mo, true) || !t.Eat('-') ||
      !t.Number(2, &d, true)) {
    return false;
  }
  if (!t.Eat('T') && !t.Eat(' ')) return false;
  if (!ReadClock(t, &h, &m, &s, &millis)) return false;
  if (!ValidCivil(mo, d, h, m, s)) return false;
  const char z = t.Peek();
  if (z == 'Z' || z == '+' || z == '-') {
    int64_t offset_min = 0;
    if (z == 'Z') {
      ++t.i;
    } else {
      Cursor u = t;
      ++u.i;
      int64_t oh = 0, om = 0;
      if (!u.Number(2, &oh, true)) return false;
      u.Eat(':');
      if (!u.Number(2, &om, true)) return false;
      offset_min = (oh * 60 + om) * (z == '-' ? -1 : 1);
      t = u;
    }
    const int64_t days = DaysFromCivil(y, static_cast<int>(mo), static_cast<int>(d));
    *out = ((days * 24 + h) * 60 + m - offset_min) * 60'000 + s * 1000 + millis;
  } else {
    auto ms = local.ToUnixMs(static_cast<int>(y), static_cast<int>(mo), static_cast<int>(d),
                             static_cast<int>(h), static_cast<int>(m), static_cast<int>(s), millis);
    if (!ms) return false;
    *out = *ms;
  }
  c = t;
  return true;
}

// "Aug 30 11:43:09" / "Aug  3 11:43:09.123456" (no year: inferred).
bool ReadSyslogShort(Cursor& c, const PrefixContext& ctx, LocalTimeConverter& local, int64_t* out) {
  Cursor t = c;
  if (t.i + 3 > t.s.size()) return false;
  const int month = MonthFromName(t.s.substr(t.i, 3));
  if (month == 0) return false;
  t.i += 3;
  if (!t.Eat(' ')) return false;
  t.SkipSpaces();
  int64_t day, h, m, s;
  int millis;
  if (!t.Number(2, &day)) return false;
  if (!t.Eat(' ')) return false;
  if (!ReadClock(t, &h, &m, &s, &millis)) return false;
  if (!ValidCivil(month, day, h, m, s)) return false;
  const time_t ref_s = static_cast<time_t>(ctx.reference_unix_ms / 1000);
  struct tm ref_tm {};
  if (localtime_r(&ref_s, &ref_tm) == nullptr) return false;
  const int year = ref_tm.tm_year + 1900;
  auto at = [&](int yy) {
    return local.ToUnixMs(yy, month, static_cast<int>(day), static_cast<int>(h),
                          static_cast<int>(m), static_cast<int>(s), millis);
  };
  auto ms = at(year);
  // A stamp more than a day after "now" is from the previous year (a log that
  // spans New Year, read in January).
  if (ms && *ms > ctx.reference_unix_ms + 86'400'000) ms = at(year - 1);
  if (!ms) return false;
  *out = *ms;
  c = t;
  return true;
}

// journalctl -o short-unix: "1772289000.250000 host kernel: ". Seconds since
// the epoch with a fraction (a bare integer is too easily something else),
// between 2000 and 2100.
bool ReadEpochSeconds(Cursor& c, int64_t* out) {
  Cursor t = c;
  int64_t whole = 0, frac = 0;
  int nfrac = 0;
  if (!t.Number(11, &whole) || !t.Eat('.') || !t.Number(9, &frac, false, &nfrac)) return false;
  if (t.Peek() != ' ') return false;
  constexpr int64_t kYear2000 = 946'684'800, kYear2100 = 4'102'444'800;
  if (whole < kYear2000 || whole >= kYear2100) return false;
  while (nfrac < 3) {
    frac *= 10;
    ++nfrac;
  }
  while (nfrac > 3) {
    frac /= 10;
    --nfrac;
  }
  *out = whole * 1000 + frac;
  c = t;
  return true;
}

// After a syslog-style time: "host tag: " then maybe "[ 1234.5] ". A tag other
// than kernel means the line was logged by a program, not the kernel.
void ReadHostTag(Cursor& c, LinePrefix* p) {
  c.SkipSpaces();
  if (c.AtEnd()) return;
  const std::string_view rest = c.s.substr(c.i);
  const size_t host_end = rest.find(' ');
  if (host_end == std::string_view::npos) {
    // "host" alone (or "tag:" alone): only "kernel:" counts as the kernel.
    p->from_kernel = rest.substr(0, 6) == "kernel";
    c.i = c.s.size();
    return;
  }
  std::string_view tag = rest.substr(host_end + 1);
  while (!tag.empty() && tag.front() == ' ') tag.remove_prefix(1);
  p->from_kernel = tag.empty() || tag.substr(0, 6) == "kernel";
  const size_t colon = rest.find(':', host_end);
  c.i = colon == std::string_view::npos ? c.s.size() : c.i + colon + 1;
}

}  // namespace

std::optional<int64_t> LocalTimeConverter::ToUnixMs(int year, int month, int day, int hour,
                                                    int minute, int second, int millis) {
  if (year != c_year_ || month != c_month_ || day != c_day_ || hour != c_hour_) {
    struct tm tm {};
    tm.tm_year = year - 1900;
    tm.tm_mon = month - 1;
    tm.tm_mday = day;
    tm.tm_hour = hour;
    tm.tm_isdst = -1;
    const time_t t = mktime(&tm);
    if (t == static_cast<time_t>(-1) && !(year == 1969 && month == 12 && day == 31)) {
      return std::nullopt;
    }
    c_year_ = year;
    c_month_ = month;
    c_day_ = day;
    c_hour_ = hour;
    c_hour_start_s_ = static_cast<int64_t>(t);
  }
  return (c_hour_start_s_ + minute * 60 + second) * 1000 + millis;
}

std::optional<int64_t> ParseKmsgHeaderUsec(std::string_view header) {
  Cursor c{header};
  int64_t pri, seq, usec;
  if (!c.Number(10, &pri) || !c.Eat(',') || !c.Number(20, &seq) || !c.Eat(',') ||
      !c.Number(20, &usec)) {
    return std::nullopt;
  }
  if (!c.AtEnd() && c.Peek() != ',') return std::nullopt;
  return usec;
}

LinePrefix ParseLinePrefix(std::string_view prefix, const PrefixContext& ctx,
                           LocalTimeConverter& local) {
  LinePrefix p;
  Cursor c{prefix};
  c.SkipSpaces();
  // "<6>" raw syslog level (dmesg -r).
  if (c.Peek() == '<') {
    Cursor t = c;
    ++t.i;
    int64_t level;
    if (t.Number(3, &level) && t.Eat('>')) c = t;
  }
  // /dev/kmsg record: "6,1000,123456789,-;".
  if (!prefix.empty() && prefix.back() == ';') {
    const std::string_view header = prefix.substr(c.i, prefix.size() - 1 - c.i);
    if (auto usec = ParseKmsgHeaderUsec(header)) {
      p.monotonic_s = static_cast<double>(*usec) / 1e6;
      if (ctx.boot_time_unix_ms) {
        p.time_unix_ms = *ctx.boot_time_unix_ms + *usec / 1000;
        p.time_from_boot_start = true;
      }
      return p;
    }
  }
  int64_t wall = 0;
  double mono = 0;
  if (c.Peek() == '[') {
    Cursor t = c;
    if (ReadMonotonic(t, &mono)) {
      p.monotonic_s = mono;
      c = t;
      ReadHostTag(c, &p);  // journalctl -o short-monotonic: "[ 12.3] host kernel: ".
    } else {
      ++t.i;
      if (ReadCtime(t, local, &wall) && t.Eat(']')) {
        p.time_unix_ms = wall;
        c = t;
      }
    }
  } else if (ReadIso(c, local, &wall) || ReadSyslogShort(c, ctx, local, &wall) ||
             ReadEpochSeconds(c, &wall)) {
    p.time_unix_ms = wall;
    ReadHostTag(c, &p);
  } else {
    // Unknown or absent time: "kernel: " alone, or "kern  :warn  : " (dmesg -x).
    const size_t k = prefix.find("kernel:", c.i);
    if (k != std::string_view::npos) c.i = k + 7;
  }
  // "kernel: [ 1234.567890] " after a syslog time, or a dmesg stamp after a
  // level column.
  if (!p.monotonic_s) {
    const size_t b = prefix.find('[', c.i);
    if (b != std::string_view::npos) {
      Cursor t{prefix, b};
      if (ReadMonotonic(t, &mono)) p.monotonic_s = mono;
    }
  }
  if (!p.time_unix_ms && p.monotonic_s && ctx.boot_time_unix_ms) {
    p.time_unix_ms = *ctx.boot_time_unix_ms + static_cast<int64_t>(*p.monotonic_s * 1000.0);
    p.time_from_boot_start = true;
  }
  return p;
}

}  // namespace gw::kmsg
