// Serialising the diagnosis documents (why, health, events) so that printing
// them can never fail and never drive a terminal.
#ifndef GPUWARDEN_RENDER_JSON_OUT_H_
#define GPUWARDEN_RENDER_JSON_OUT_H_

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace gw::render {

// `doc` dumped: pretty = 2-space indent, else one line; no trailing newline.
// Invalid UTF-8 that reached a string becomes U+FFFD; DEL, C1 controls,
// bidirectional controls and U+2028/U+2029 are written as \uXXXX escapes
// (the same string values). Never throws: on failure it returns a fixed
// document {"schema": schema, "schema_version": 1, "errors": [...]}.
std::string DumpJsonForTerminal(const nlohmann::json& doc, bool pretty, std::string_view schema);

}  // namespace gw::render

#endif  // GPUWARDEN_RENDER_JSON_OUT_H_
