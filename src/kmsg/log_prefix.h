// The part of a kernel-log line before the message: the timestamp forms of
// dmesg, dmesg -T, syslog/journald "short", ISO-8601 (rsyslog, dmesg
// --time-format iso, journalctl -o short-iso), epoch seconds (journalctl -o
// short-unix) and /dev/kmsg records.
#ifndef GPUWARDEN_KMSG_LOG_PREFIX_H_
#define GPUWARDEN_KMSG_LOG_PREFIX_H_

#include <cstdint>
#include <optional>
#include <string_view>

namespace gw::kmsg {

// What the prefix of a line said.
struct LinePrefix {
  std::optional<int64_t> time_unix_ms;  // Wall time, read or derived from monotonic.
  std::optional<double> monotonic_s;    // `[ 1234.567890]` or a /dev/kmsg usec field.
  // time_unix_ms is PrefixContext::boot_time_unix_ms + monotonic_s: the line
  // gave only its kernel time.
  bool time_from_boot_start = false;
  // False when the prefix names a syslog tag other than "kernel" (a user-space
  // program that logged the same words): such a line is not a kernel message.
  bool from_kernel = true;
};

// Converts local civil times (what dmesg -T and syslog print) to Unix time,
// using the process time zone (TZ). Caches the last hour, so a run of lines
// from the same hour costs one mktime.
class LocalTimeConverter {
 public:
  // Returns ms since the epoch; nullopt for an impossible date.
  std::optional<int64_t> ToUnixMs(int year, int month, int day, int hour, int minute, int second,
                                  int millis);

 private:
  int c_year_ = -1, c_month_ = -1, c_day_ = -1, c_hour_ = -1;
  int64_t c_hour_start_s_ = 0;
};

// Context a prefix needs to yield a wall time.
struct PrefixContext {
  // Wall time of the boot the line comes from: monotonic-only prefixes (dmesg,
  // /dev/kmsg) become wall times only when it is known.
  std::optional<int64_t> boot_time_unix_ms;
  // "Now" for the text (e.g. a file's mtime): syslog stamps carry no year; the
  // year is the one that puts the stamp at or before this moment (+1 day).
  int64_t reference_unix_ms = 0;
};

// Parses `prefix` (the bytes of a line before the message). Never fails: an
// unrecognised prefix yields no times. A leading `<N>` syslog level is skipped.
LinePrefix ParseLinePrefix(std::string_view prefix, const PrefixContext& ctx,
                           LocalTimeConverter& local);

// Parses the header of a /dev/kmsg record ("pri,seq,usec,flags[,...]").
// Returns the usec field; nullopt when it is not such a header.
std::optional<int64_t> ParseKmsgHeaderUsec(std::string_view header);

}  // namespace gw::kmsg

#endif  // GPUWARDEN_KMSG_LOG_PREFIX_H_
