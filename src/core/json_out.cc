#include "core/json_out.h"

#include <fmt/format.h>

#include <chrono>

#include "core/text.h"

namespace gw {
namespace {

// The years 0000-9999 in ms since the epoch, checked before the calendar
// arithmetic so that no input can overflow it.
constexpr int64_t kMinIsoMs = -62167219200000;
constexpr int64_t kMaxIsoMs = 253402300799999;

bool NeedsEscape(char32_t cp) {
  return cp == 0x7F || (cp >= 0x80 && cp <= 0x9F) || cp == 0x200E || cp == 0x200F ||
         (cp >= 0x202A && cp <= 0x202E) || (cp >= 0x2066 && cp <= 0x2069) || cp == 0x2028 ||
         cp == 0x2029;
}

// `in` is valid UTF-8 (dump() with the replace handler guarantees it). Bytes
// >= 0x80 and DEL only occur inside JSON strings, where \uXXXX denotes the
// same code point, so the escaped text decodes to the same document.
std::string EscapeForTerminal(const std::string& in) {
  std::string out;
  out.reserve(in.size());
  size_t i = 0;
  while (i < in.size()) {
    // Plain ASCII (all of a typical document) is copied in runs.
    size_t run = i;
    while (run < in.size() && static_cast<unsigned char>(in[run]) < 0x7F) ++run;
    if (run > i) {
      out.append(in, i, run - i);
      i = run;
      if (i == in.size()) break;
    }
    const auto lead = static_cast<unsigned char>(in[i]);
    size_t len = 1;
    char32_t cp = lead;
    if (lead >= 0xF0) {
      len = 4;
      cp = lead & 0x07u;
    } else if (lead >= 0xE0) {
      len = 3;
      cp = lead & 0x0Fu;
    } else if (lead >= 0xC0) {
      len = 2;
      cp = lead & 0x1Fu;
    }
    if (i + len > in.size()) len = 1;  // Not reachable with valid input.
    for (size_t k = 1; k < len; ++k)
      cp = (cp << 6) | (static_cast<unsigned char>(in[i + k]) & 0x3Fu);
    if (len > 1 || lead == 0x7F) {
      if (NeedsEscape(cp)) {
        out += fmt::format("\\u{:04x}", static_cast<unsigned>(cp));
        i += len;
        continue;
      }
    }
    out.append(in, i, len);
    i += len;
  }
  return out;
}

}  // namespace

nlohmann::json JsonText(std::string_view text) { return ToValidUtf8(text); }

nlohmann::json JsonTextList(const std::vector<std::string>& list) {
  nlohmann::json out = nlohmann::json::array();
  for (const std::string& s : list) out.push_back(JsonText(s));
  return out;
}

nlohmann::json JsonOrNull(const std::optional<std::string>& value) {
  if (!value.has_value()) return nullptr;
  return JsonText(*value);
}

std::optional<std::string> IsoTimeUtc(int64_t unix_ms) {
  if (unix_ms < kMinIsoMs || unix_ms > kMaxIsoMs) return std::nullopt;
  // std::chrono's civil calendar rather than gmtime_r: no time_t range or
  // errno to handle, and floor<days> counts times before the epoch back from
  // it without the sign arithmetic a seconds/milliseconds split needs.
  using namespace std::chrono;
  const sys_time<milliseconds> time{milliseconds{unix_ms}};
  const sys_days day = floor<days>(time);
  const year_month_day ymd{day};
  const hh_mm_ss<milliseconds> hms{time - day};
  return fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z", static_cast<int>(ymd.year()),
                     static_cast<unsigned>(ymd.month()), static_cast<unsigned>(ymd.day()),
                     hms.hours().count(), hms.minutes().count(), hms.seconds().count(),
                     hms.subseconds().count());
}

std::string DumpJsonFragmentForTerminal(const nlohmann::json& value, bool pretty, int depth) {
  std::string text = EscapeForTerminal(
      value.dump(pretty ? 2 : -1, ' ', false, nlohmann::json::error_handler_t::replace));
  if (!pretty || depth <= 0) return text;
  // A newline in dump() output is always structural: strings escape theirs.
  const std::string indent(static_cast<size_t>(depth) * 2, ' ');
  std::string out;
  out.reserve(text.size() + text.size() / 8);
  size_t start = 0;
  for (size_t nl = text.find('\n'); nl != std::string::npos; nl = text.find('\n', start)) {
    out.append(text, start, nl + 1 - start);
    out += indent;
    start = nl + 1;
  }
  out.append(text, start, std::string::npos);
  return out;
}

std::string JsonErrorDocument(std::string_view schema) {
  return fmt::format(
      R"({{"errors":[{{"code":"internal","message":"could not serialise the document",)"
      R"("source":"render"}}],"schema":"{}","schema_version":1}})",
      schema);
}

std::string DumpJsonForTerminal(const nlohmann::json& doc, bool pretty, std::string_view schema) {
  try {
    return EscapeForTerminal(
        doc.dump(pretty ? 2 : -1, ' ', false, nlohmann::json::error_handler_t::replace));
  } catch (...) {
    // Only allocation can fail here; a short fixed document keeps the output JSON.
    return JsonErrorDocument(schema);
  }
}

}  // namespace gw
