// gpuwarden's settings file: a small TOML file, /etc/gpuwarden/config.toml by
// default, written by the administrator. It holds the [clean] table (safety
// settings of `gpuwarden clean` / `gpuwarden kill`) and the [placement] table
// (which degraded GPUs `why --need` and the queue may still place work on).
//
// Validation is strict on purpose: an unknown table or key, a wrong type or an
// out-of-range value is an error, never ignored, so that a typo cannot
// silently weaken a safety setting ("graec" instead of "grace" must not fall
// back to the default grace period).
#ifndef GPUWARDEN_CONFIG_CONFIG_H_
#define GPUWARDEN_CONFIG_CONFIG_H_

#include <optional>
#include <string>
#include <vector>

#include "core/result.h"

namespace gw::config {

// The file's default location; $GPUWARDEN_CONFIG overrides it.
inline constexpr const char* kDefaultConfigPath = "/etc/gpuwarden/config.toml";

// The [clean] table. Unset values are std::nullopt: the command picks its own
// default.
struct CleanSettings {
  // Extra protected process names (`protect = ["slurmd", ...]`), in file order,
  // duplicates kept. Each is non-empty, has no '/' and no NUL byte, and is at
  // most 255 bytes.
  std::vector<std::string> protect;
  // `grace = "10s"`: seconds, 0 <= grace_s <= 86400.
  std::optional<double> grace_s;
  // `settle = "5s"`: seconds, 0 <= settle_s <= 86400.
  std::optional<double> settle_s;
  // `audit_log = "/path"`: an absolute path without NUL bytes.
  std::optional<std::string> audit_log;
};

// The [placement] table: read by `why --need` (diagnose::DiagnoseOptions) and
// gpuwardend's queue (queue::JobTableOptions) alike, so that both give one
// answer. Unset values are std::nullopt: diagnose::PlacementHealth's default.
struct PlacementSettings {
  // `use_remap_pending = true|false`: a GPU whose only health problem is a
  // pending row remap takes new work (default true).
  std::optional<bool> use_remap_pending;
};

struct Config {
  std::string path;    // The file read ("" when none was).
  bool found = false;  // False: the default file does not exist; defaults apply.
  CleanSettings clean;
  PlacementSettings placement;
};

// The path to read: $GPUWARDEN_CONFIG when set and non-empty, else
// kDefaultConfigPath.
std::string DefaultConfigPath();

// Reads and validates the TOML file at `path`.
//
// A missing file (ENOENT) is not an error when explicit_path is false: the
// result is a default Config with path = `path` and found = false. When
// explicit_path is true (the user named the file) it is an error.
//
// Accepted content: an empty file, a [clean] table with the keys `protect`
// (array of strings), `grace`, `settle` (duration strings for ParseDuration,
// core/units.h, between 0 and 1 day) and `audit_log` (string), and a
// [placement] table with the key `use_remap_pending` (boolean).
//
// Errors have code "bad_input" and a one-line message that starts with the
// file and, when the problem has a place, its line:
//   "/etc/gpuwarden/config.toml:3: [clean] grace: \"ten\" is not a duration (e.g. 10s, 5m)"
//   "/etc/gpuwarden/config.toml:4: unknown key [clean] graec"
//   "/etc/gpuwarden/config.toml:1: unknown table [qeue]"
//   "/etc/gpuwarden/config.toml: cannot read: Permission denied"
// Values quoted from the file are sanitised for the terminal. The path must
// name a regular file (a directory, FIFO or device is an error; a FIFO is
// never waited on) of at most 1 MiB.
// Never throws.
Result<Config> LoadConfig(const std::string& path, bool explicit_path);

// LoadConfig of DefaultConfigPath(): explicit (a missing file is an error)
// when $GPUWARDEN_CONFIG names it, optional otherwise. What every command
// that reads the settings file calls.
Result<Config> LoadDefaultConfig();

}  // namespace gw::config

#endif  // GPUWARDEN_CONFIG_CONFIG_H_
