// Reading the text values of an `nvidia-smi -q -x` dump: "81920 MiB", "27 C",
// "67.03 W", "16x", "P0", "Enabled", "N/A", "Unknown Error", ...
//
// Pure functions, no XML: nvsmi_xml.cc walks the document and hands each
// element's text here. Every parser returns std::nullopt for text it does not
// fully understand; it never guesses a number out of partial text.
#ifndef GPUWARDEN_IMPORT_NVSMI_VALUES_H_
#define GPUWARDEN_IMPORT_NVSMI_VALUES_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace gw::import {

// Text without the leading and trailing XML white space (space, tab, CR, LF).
std::string_view TrimXmlSpace(std::string_view text);

// True for the words nvidia-smi prints where a value is not supported or not
// applicable: "N/A", "[N/A]", "Not Supported", "[Not Supported]", "Not Available",
// "None", "Requested functionality has been deprecated", "Deprecated" (case-insensitive)
// and the empty string. Such a value is unknown but nothing is wrong.
bool IsUnsupportedText(std::string_view text);

// An NVML error string printed in place of a value (nvmlErrorString()).
struct NvmlErrorText {
  std::string_view code;  // Stable word for ProbeError::code: "gpu_lost", "unknown_error", ...
  int nvml_return;        // The nvmlReturn_t the string belongs to.
};

// Recognises the NVML error strings (case-insensitive, optionally in brackets as
// in CSV output): "Unknown Error" -> {"unknown_error", 999}, "GPU is lost" (also
// with nvidia-smi's "... Reboot the system to recover this GPU" tail) ->
// {"gpu_lost", 15}, "Insufficient Permissions" -> {"no_permission", 4}, ...
// Returns nullopt for anything else.
std::optional<NvmlErrorText> MatchNvmlError(std::string_view text);

// A decimal unsigned integer followed by `unit`: "27 C" with unit "C", "16x" with
// unit "x", "0" with unit "". One space (or none) may separate number and unit; a
// bare number is accepted for a unit-bearing field too (the unit of a field is
// fixed). Anything else (a sign, a fraction, another unit, trailing text,
// overflow) -> nullopt.
std::optional<uint64_t> ParseUnsignedWithUnit(std::string_view text, std::string_view unit);

// As ParseUnsignedWithUnit, for a value that may be negative ("-7 C").
std::optional<int64_t> ParseSignedWithUnit(std::string_view text, std::string_view unit);

// A non-negative decimal number with optional fraction, then `unit`: "67.03 W".
std::optional<double> ParseDecimalWithUnit(std::string_view text, std::string_view unit);

// A memory size with a binary unit, to bytes: "81920 MiB" -> 85899345920. Units
// B, KiB, MiB, GiB, TiB (as nvidia-smi prints them). A bare number (no unit) is
// ambiguous and -> nullopt, as is a product that overflows 64 bits.
std::optional<uint64_t> ParseMemoryBytes(std::string_view text);

// A hexadecimal number with or without "0x": "20B210DE" -> 0x20B210DE.
std::optional<uint64_t> ParseHex(std::string_view text);

// "P0".."P15" -> 0..15.
std::optional<unsigned> ParsePstate(std::string_view text);

// `yes` / `no` (case-insensitive) -> true / false; anything else -> nullopt.
std::optional<bool> ParseFlag(std::string_view text, std::string_view yes, std::string_view no);

// nvidia-smi's CUDA version "12.2" -> 12020 (major * 1000 + minor * 10, the form
// of cuDriverGetVersion / nvmlSystemGetCudaDriverVersion).
std::optional<int> ParseCudaVersion(std::string_view text);

// nvidia-smi's <timestamp>, "Fri Aug  4 11:44:30 2023" (ctime layout, English
// names), to Unix milliseconds. The dump carries no time zone: the time is read
// as local time of the machine reading the file (mktime, TZ applies), which is
// exact when the dump was written on this machine and otherwise shows the wall
// clock time the file states. Invalid text -> nullopt.
std::optional<int64_t> ParseTimestampLocal(std::string_view text);

// File-derived text made safe for an error message: printable ASCII kept, any
// other byte written as \xHH, cut to `max_bytes` input bytes (then "...").
// Messages are printed raw by the CLI, so nothing from the file may reach the
// terminal unescaped.
std::string EscapeForMessage(std::string_view text, size_t max_bytes = 60);

// EscapeForMessage in double quotes.
std::string QuoteForMessage(std::string_view text, size_t max_bytes = 60);

}  // namespace gw::import

#endif  // GPUWARDEN_IMPORT_NVSMI_VALUES_H_
