#include "config/config.h"

#include <fmt/format.h>

#include <cstdlib>
#include <exception>
#include <string_view>

#include <toml++/toml.h>

#include "core/text.h"
#include "core/units.h"
#include "os/file_io.h"

namespace gw::config {
namespace {

// A settings file is a few hundred bytes; the cap keeps a mistaken path (a log,
// an image) from being read whole.
constexpr size_t kMaxConfigBytes = 1 << 20;
constexpr double kMaxDurationS = 86400;
constexpr size_t kMaxProtectNameBytes = 255;  // NAME_MAX: a process name is a file name.

// Everything quoted in a message may come from the file (or from the
// environment, for the path), so it is made safe to print.
std::string Quote(std::string_view text) { return "\"" + SanitizeForTerminal(text) + "\""; }

// "PATH:LINE: what" when toml++ knows the line, else "PATH: what".
Error ConfigError(const std::string& path, const toml::source_region& where,
                  std::string_view what) {
  const std::string shown = SanitizeForTerminal(path);
  if (where.begin.line > 0) {
    return MakeError("bad_input", fmt::format("{}:{}: {}", shown, where.begin.line, what));
  }
  return MakeError("bad_input", fmt::format("{}: {}", shown, what));
}

Error FileError(const std::string& path, std::string_view what) {
  return ConfigError(path, toml::source_region{}, what);
}

std::string_view TypeWithArticle(toml::node_type type) {
  switch (type) {
    case toml::node_type::table:
      return "a table";
    case toml::node_type::array:
      return "an array";
    case toml::node_type::string:
      return "a string";
    case toml::node_type::integer:
      return "an integer";
    case toml::node_type::floating_point:
      return "a floating-point number";
    case toml::node_type::boolean:
      return "a boolean";
    case toml::node_type::date:
      return "a date";
    case toml::node_type::time:
      return "a time";
    case toml::node_type::date_time:
      return "a date-time";
    case toml::node_type::none:
      break;
  }
  return "nothing";
}

// Reads the whole file; anything but a regular file is refused (a FIFO at
// once, without waiting for a writer).
Result<std::string> ReadConfigFile(const std::string& path, bool* missing) {
  Result<std::string> content = os::ReadFileBounded(path, kMaxConfigBytes, {.regular_only = true});
  *missing = !content.ok() && content.error().code == "not_found";
  if (content.ok()) return content;
  if (content.error().code == "too_large") return FileError(path, "larger than 1 MiB");
  // "PATH: PROBLEM", PATH from the environment or the command line.
  return MakeError("bad_input", SanitizeForTerminal(content.error().message));
}

// Parses a duration value of [clean] into seconds in [0, kMaxDurationS].
Result<double> ParseDurationValue(const std::string& path, std::string_view key,
                                  const toml::node& node) {
  const auto* str = node.as_string();
  if (str == nullptr) {
    return ConfigError(path, node.source(),
                       fmt::format("[clean] {}: expected a duration string such as \"10s\", got {}",
                                   key, TypeWithArticle(node.type())));
  }
  const std::string& text = str->get();
  const Result<double> seconds = ParseDuration(text);
  if (!seconds.ok()) {
    // ParseDuration reads "-5s" as malformed; say what is really wrong.
    const size_t first = text.find_first_not_of(" \t");
    if (first != std::string::npos && text[first] == '-') {
      return ConfigError(path, node.source(),
                         fmt::format("[clean] {}: {} is negative", key, Quote(text)));
    }
    if (seconds.error().code == "out_of_range") {
      return ConfigError(path, node.source(),
                         fmt::format("[clean] {}: {} is longer than 1 day", key, Quote(text)));
    }
    return ConfigError(
        path, node.source(),
        fmt::format("[clean] {}: {} is not a duration (e.g. 10s, 5m)", key, Quote(text)));
  }
  if (*seconds > kMaxDurationS) {
    return ConfigError(path, node.source(),
                       fmt::format("[clean] {}: {} is longer than 1 day", key, Quote(text)));
  }
  return *seconds;
}

Status ReadProtect(const std::string& path, const toml::node& node, CleanSettings* clean) {
  const toml::array* list = node.as_array();
  if (list == nullptr) {
    return ConfigError(path, node.source(),
                       fmt::format("[clean] protect: expected an array of process names such as "
                                   "[\"slurmd\"], got {}",
                                   TypeWithArticle(node.type())));
  }
  for (size_t i = 0; i < list->size(); ++i) {
    const toml::node& entry = *list->get(i);
    const auto* str = entry.as_string();
    if (str == nullptr) {
      return ConfigError(path, entry.source(),
                         fmt::format("[clean] protect: entry {} must be a process name string, "
                                     "got {}",
                                     i + 1, TypeWithArticle(entry.type())));
    }
    const std::string& name = str->get();
    std::string_view problem;
    if (name.empty()) {
      problem = "is empty";
    } else if (name.find('/') != std::string::npos) {
      problem = "contains '/' (give a process name, not a path)";
    } else if (name.find('\0') != std::string::npos) {
      problem = "contains a NUL byte";
    } else if (name.size() > kMaxProtectNameBytes) {
      problem = "is longer than 255 bytes";
    }
    if (!problem.empty()) {
      return ConfigError(
          path, entry.source(),
          fmt::format("[clean] protect: entry {} {} {}", i + 1, Quote(name), problem));
    }
    clean->protect.push_back(name);
  }
  return Status::Ok();
}

Status ReadAuditLog(const std::string& path, const toml::node& node, CleanSettings* clean) {
  const auto* str = node.as_string();
  if (str == nullptr) {
    return ConfigError(path, node.source(),
                       fmt::format("[clean] audit_log: expected a path string, got {}",
                                   TypeWithArticle(node.type())));
  }
  const std::string& log_path = str->get();
  // A relative path would be resolved against each caller's working
  // directory, scattering the log.
  if (log_path.empty() || log_path[0] != '/') {
    return ConfigError(
        path, node.source(),
        fmt::format("[clean] audit_log: {} is not an absolute path", Quote(log_path)));
  }
  if (log_path.find('\0') != std::string::npos) {
    return ConfigError(path, node.source(), "[clean] audit_log: the path contains a NUL byte");
  }
  clean->audit_log = log_path;
  return Status::Ok();
}

Status ReadClean(const std::string& path, const toml::table& table, CleanSettings* clean) {
  for (auto&& [key, node] : table) {
    const std::string_view name = key.str();
    Status status;
    if (name == "protect") {
      status = ReadProtect(path, node, clean);
    } else if (name == "grace" || name == "settle") {
      Result<double> seconds = ParseDurationValue(path, name, node);
      if (!seconds.ok()) return seconds.error();
      (name == "grace" ? clean->grace_s : clean->settle_s) = *seconds;
    } else if (name == "audit_log") {
      status = ReadAuditLog(path, node, clean);
    } else if (node.is_table()) {
      return ConfigError(path, key.source(),
                         fmt::format("unknown table [clean.{}]", SanitizeForTerminal(name)));
    } else {
      return ConfigError(path, key.source(),
                         fmt::format("unknown key [clean] {}", SanitizeForTerminal(name)));
    }
    if (!status.ok()) return status;
  }
  return Status::Ok();
}

Status ReadPlacement(const std::string& path, const toml::table& table,
                     PlacementSettings* placement) {
  for (auto&& [key, node] : table) {
    const std::string_view name = key.str();
    if (name == "use_remap_pending") {
      const auto* flag = node.as_boolean();
      if (flag == nullptr) {
        return ConfigError(path, node.source(),
                           fmt::format("[placement] use_remap_pending: expected true or false, "
                                       "got {}",
                                       TypeWithArticle(node.type())));
      }
      placement->use_remap_pending = flag->get();
    } else if (node.is_table()) {
      return ConfigError(path, key.source(),
                         fmt::format("unknown table [placement.{}]", SanitizeForTerminal(name)));
    } else {
      return ConfigError(path, key.source(),
                         fmt::format("unknown key [placement] {}", SanitizeForTerminal(name)));
    }
  }
  return Status::Ok();
}

Result<Config> Validate(const std::string& path, const toml::table& root) {
  Config config;
  config.path = path;
  config.found = true;
  for (auto&& [key, node] : root) {
    const std::string_view name = key.str();
    if (name == "clean") {
      const toml::table* clean = node.as_table();
      if (clean == nullptr) {
        return ConfigError(path, key.source(),
                           fmt::format("[clean] must be a table, got {}",
                                       node.is_array_of_tables() ? "an array of tables"
                                                                 : TypeWithArticle(node.type())));
      }
      const Status status = ReadClean(path, *clean, &config.clean);
      if (!status.ok()) return status.error();
    } else if (name == "placement") {
      const toml::table* placement = node.as_table();
      if (placement == nullptr) {
        return ConfigError(path, key.source(),
                           fmt::format("[placement] must be a table, got {}",
                                       node.is_array_of_tables() ? "an array of tables"
                                                                 : TypeWithArticle(node.type())));
      }
      const Status status = ReadPlacement(path, *placement, &config.placement);
      if (!status.ok()) return status.error();
    } else if (node.is_table() || node.is_array_of_tables()) {
      return ConfigError(path, key.source(),
                         fmt::format("unknown table [{}]", SanitizeForTerminal(name)));
    } else {
      return ConfigError(path, key.source(),
                         fmt::format("unknown key {} (settings belong in a table such as [clean])",
                                     SanitizeForTerminal(name)));
    }
  }
  return config;
}

}  // namespace

std::string DefaultConfigPath() {
  const char* env = std::getenv("GPUWARDEN_CONFIG");
  if (env != nullptr && *env != '\0') return env;
  return kDefaultConfigPath;
}

Result<Config> LoadConfig(const std::string& path, bool explicit_path) {
  try {
    bool missing = false;
    Result<std::string> content = ReadConfigFile(path, &missing);
    if (!content.ok()) {
      if (missing && !explicit_path) {
        Config defaults;
        defaults.path = path;
        return defaults;
      }
      return content.error();
    }
    toml::table root;
    try {
      root = toml::parse(*content, path);
    } catch (const toml::parse_error& e) {
      return ConfigError(path, e.source(), SanitizeForTerminal(e.description()));
    }
    return Validate(path, root);
  } catch (const std::exception& e) {
    // Only allocation failures are expected here; the contract is no throw.
    return FileError(path, fmt::format("cannot load: {}", e.what()));
  }
}

Result<Config> LoadDefaultConfig() {
  const char* env = std::getenv("GPUWARDEN_CONFIG");
  return LoadConfig(DefaultConfigPath(), env != nullptr && *env != '\0');
}

}  // namespace gw::config
