// Building and serialising JSON documents (status, why, health, events,
// clean, the audit log): the value helpers every document uses, so that
// untrusted text always reaches a document as valid UTF-8 and an unknown value
// always as null, and the dump functions, so that printing a document can
// never fail and never drive a terminal.
#ifndef GPUWARDEN_CORE_JSON_OUT_H_
#define GPUWARDEN_CORE_JSON_OUT_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace gw {

// A JSON string holding `text` with every byte that is not valid UTF-8
// replaced by U+FFFD (gw::ToValidUtf8), for text from other processes, the
// kernel log or a file: nlohmann::json would otherwise throw at dump time.
nlohmann::json JsonText(std::string_view text);

// An array of JsonText strings, in order.
nlohmann::json JsonTextList(const std::vector<std::string>& list);

// `value` as JSON, or null when it is unknown ("unknown is not zero"). A
// string goes through JsonText.
template <typename T>
nlohmann::json JsonOrNull(const std::optional<T>& value) {
  if (!value.has_value()) return nullptr;
  return *value;
}
nlohmann::json JsonOrNull(const std::optional<std::string>& value);

// `unix_ms` (milliseconds since the epoch) as UTC ISO 8601 with milliseconds,
// "2025-01-20T10:18:26.000Z". Times before the epoch count back from it
// (-1 -> "1969-12-31T23:59:59.999Z"). nullopt outside the years 0000-9999,
// the range a four-digit year can show.
std::optional<std::string> IsoTimeUtc(int64_t unix_ms);

// `doc` dumped: pretty = 2-space indent, else one line; no trailing newline.
// Invalid UTF-8 that reached a string becomes U+FFFD; DEL, C1 controls,
// bidirectional controls and U+2028/U+2029 are written as \uXXXX escapes
// (the same string values). Never throws: on failure it returns a fixed
// document {"schema": schema, "schema_version": 1, "errors": [...]}.
std::string DumpJsonForTerminal(const nlohmann::json& doc, bool pretty, std::string_view schema);

// The fixed document DumpJsonForTerminal returns when it cannot serialise,
// for a caller whose building of the document failed (only allocation can):
// {"errors":[{"code":"internal",...}],"schema":schema,"schema_version":1}.
// Throws only std::bad_alloc.
std::string JsonErrorDocument(std::string_view schema);

// For documents written piece by piece (a large array streamed element by
// element): `value` dumped and escaped like DumpJsonForTerminal, as it would
// appear nested `depth` levels deep in a pretty document (every line after the
// first indented by 2 * depth more spaces; pretty = false: one line). Throws
// only std::bad_alloc.
std::string DumpJsonFragmentForTerminal(const nlohmann::json& value, bool pretty, int depth);

}  // namespace gw

#endif  // GPUWARDEN_CORE_JSON_OUT_H_
