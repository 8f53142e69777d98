// Serialising JSON documents (why, health, events, clean, the audit log) so
// that printing them can never fail and never drive a terminal.
#ifndef GPUWARDEN_CORE_JSON_OUT_H_
#define GPUWARDEN_CORE_JSON_OUT_H_

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace gw {

// `doc` dumped: pretty = 2-space indent, else one line; no trailing newline.
// Invalid UTF-8 that reached a string becomes U+FFFD; DEL, C1 controls,
// bidirectional controls and U+2028/U+2029 are written as \uXXXX escapes
// (the same string values). Never throws: on failure it returns a fixed
// document {"schema": schema, "schema_version": 1, "errors": [...]}.
std::string DumpJsonForTerminal(const nlohmann::json& doc, bool pretty, std::string_view schema);

// For documents written piece by piece (a large array streamed element by
// element): `value` dumped and escaped like DumpJsonForTerminal, as it would
// appear nested `depth` levels deep in a pretty document (every line after the
// first indented by 2 * depth more spaces; pretty = false: one line). Throws
// only std::bad_alloc.
std::string DumpJsonFragmentForTerminal(const nlohmann::json& value, bool pretty, int depth);

}  // namespace gw

#endif  // GPUWARDEN_CORE_JSON_OUT_H_
