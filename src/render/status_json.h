// `gpuwarden status --json`: the Snapshot as a documented, versioned JSON
// document (schema "gpuwarden.status", schema_version 1; see docs/json.md).
#ifndef GPUWARDEN_RENDER_STATUS_JSON_H_
#define GPUWARDEN_RENDER_STATUS_JSON_H_

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "core/snapshot.h"

namespace gw::render {

inline constexpr char kStatusSchemaName[] = "gpuwarden.status";
inline constexpr int kStatusSchemaVersion = 1;

// The status document as a JSON value. Unknown values are null, never 0.
// Strings carry the raw text from the system (not sanitised for a
// terminal); bytes that are not valid UTF-8 are replaced by U+FFFD, so the
// value can always be dumped. Never throws.
nlohmann::json StatusJson(const Snapshot& snapshot);

// A process state as status --json (and clean --json) spell it: "running",
// "sleeping", "disk_sleep", "zombie", "stopped", "idle", "dead", "other".
std::string_view ProcessStateName(ProcessState state);

// StatusJson serialised: pretty = 2-space indent, else one line; no trailing
// newline. Besides standard JSON escaping, DEL, C1 controls (U+0080-U+009F),
// bidirectional controls and U+2028/U+2029 are written as \uXXXX escapes (the
// same string values), so printing the document cannot drive a terminal.
// Never throws.
std::string RenderStatusJson(const Snapshot& snapshot, bool pretty);

}  // namespace gw::render

#endif  // GPUWARDEN_RENDER_STATUS_JSON_H_
