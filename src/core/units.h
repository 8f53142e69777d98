// Sizes and durations for people: formatting for display, parsing for flags.
// Sizes are binary (1 K = 1024 bytes), as GPU memory is counted by NVML and
// nvidia-smi.
#ifndef GPUWARDEN_CORE_UNITS_H_
#define GPUWARDEN_CORE_UNITS_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "core/result.h"

namespace gw {

// Binary sizes in bytes: the one home of these constants.
inline constexpr uint64_t kKiB = uint64_t{1} << 10;
inline constexpr uint64_t kMiB = uint64_t{1} << 20;
inline constexpr uint64_t kGiB = uint64_t{1} << 30;
inline constexpr uint64_t kTiB = uint64_t{1} << 40;

// Formats a byte count with the largest binary unit that keeps the number
// >= 1: "0 B", "1023 B", "512 MiB", "79.6 GiB", "1.5 TiB". An exact multiple of
// the unit prints without decimals ("512 MiB" is exactly 512 MiB); anything
// else prints one decimal, rounded to nearest, so "1.0 GiB" means "about".
std::string FormatBytes(uint64_t bytes);

// Formats a byte count in whole MiB, rounded down as nvidia-smi does, so the
// numbers can be compared with its table: "81559 MiB", "0 MiB".
std::string FormatMiB(uint64_t bytes);

// Parses a size for a flag or a config value: a non-negative decimal number
// with an optional binary unit, case-insensitive, optional space between:
//   "1024" (bytes), "512B", "4K", "4KiB", "4KB", "512M", "20G", "20GiB",
//   "1.5T", "2P", "1E".
// "KB/MB/GB/..." are read as binary too (the flag never means powers of ten).
// A fractional result is rounded to the nearest byte. Errors (code "malformed"
// or "out_of_range") quote the input.
Result<uint64_t> ParseSize(std::string_view text);

// Formats an age or interval, rounded down, two units at most:
//   "0s", "45s", "12m", "3h 20m", "3h", "2d 4h", "2d".
// Negative values (clock skew) print "0s"; NaN or infinity print "N/A".
std::string FormatDuration(double seconds);

// "2025-01-20T11:18:26+01:00": unix_ms in the local time zone (ISO 8601).
std::string FormatLocalTime(int64_t unix_ms);

// Parses a duration into seconds: a plain number is seconds; otherwise one or
// more number+unit pairs with units s, m (minutes), h, d, w, case-insensitive,
// optionally separated by spaces: "90s", "30m", "2h", "1d", "1.5h", "1h30m",
// "2d 4h" (so FormatDuration's output parses back). Errors (code "malformed"
// or "out_of_range") quote the input.
Result<double> ParseDuration(std::string_view text);

}  // namespace gw

#endif  // GPUWARDEN_CORE_UNITS_H_
