// fuzz_web_request: what any client of gpuwardend's HTTP listener sends to
// the web API (web/): the /api/history query (ParseHistoryQuery, then the
// window it asks for), the token gate (CheckToken: Authorization header,
// cookie, ?token=) and, from the same bytes, the token file the daemon reads
// at start (ReadTokenFile). The input's first line is the request target
// ("/api/history?since_s=60&points=10"), its query decoded by cpp-httplib as
// the listener's is; each further line "Name: value" is a header.
// Invariants: an accepted query's window ends at or before now, starts at most
// 90 days back and has at most `points` steps of a round length; the window's
// JSON parses, with its points in order and none before after_unix_s; a
// rejected query is a "usage" error naming its parameter. The gate lets a
// request through only with the token in the Bearer header, the cookie or (not
// for the page) the query; it answers 303 only for the page with the token in
// the query, else 401 with WWW-Authenticate; no header it writes holds CR, LF
// or NUL. A token read from a file is the file's trimmed first line, 16 to
// 4096 printable ASCII bytes without ;,"\ or space; a refused file is one
// "bad_input" line naming the file.
#include <httplib.h>

#include <cctype>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "fleet/history_point.h"
#include "fleet/http_listener.h"
#include "fuzz/fuzz_check.h"
#include "web/web_api.h"
#include "web/web_auth.h"

namespace {

using namespace gw;

constexpr int64_t kNow = 1'800'000'000;
// The token the gate is built with; the dictionary holds it so that the
// fuzzer can send it.
constexpr char kToken[] = "f00dfacecafe1234beef";

// The request as the listener hands it to its gate and routes
// (fleet::HttpRequest): cpp-httplib's query decoding, the first of a repeated
// name kept, header names in lower case.
fleet::HttpRequest RequestOf(std::string_view text) {
  fleet::HttpRequest r;
  const size_t eol = text.find('\n');
  const std::string target(text.substr(0, eol));
  const size_t q = target.find('?');
  r.path = target.substr(0, q);
  if (q != std::string::npos) {
    httplib::Params params;
    httplib::detail::parse_query_text(target.substr(q + 1), params);
    for (const auto& [name, value] : params) r.params.emplace(name, value);
  }
  std::string_view rest = eol == std::string_view::npos ? std::string_view() : text.substr(eol + 1);
  while (!rest.empty()) {
    const size_t end = rest.find('\n');
    const std::string_view line = rest.substr(0, end);
    rest = end == std::string_view::npos ? std::string_view() : rest.substr(end + 1);
    const size_t colon = line.find(':');
    if (colon == std::string_view::npos) continue;
    std::string name(line.substr(0, colon));
    for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    std::string_view value = line.substr(colon + 1);
    while (!value.empty() && value.front() == ' ') value.remove_prefix(1);
    r.headers.emplace(std::move(name), std::string(value));
  }
  return r;
}

void CheckHistoryQuery(const fleet::HttpRequest& r) {
  Result<web::HistoryQuery> q = web::ParseHistoryQuery(r.params, kNow);
  if (!q.ok()) {
    GW_FUZZ_CHECK(q.error().code == "usage", q.error().code);
    const std::string& m = q.error().message;
    bool named = false;
    for (std::string_view p : {"since_s:", "until_s:", "points:", "after_unix_s:", "users:"}) {
      named = named || m.rfind(p, 0) == 0;
    }
    GW_FUZZ_CHECK(named, m);
    GW_FUZZ_CHECK(m.find('\n') == std::string::npos, m);
    return;
  }
  GW_FUZZ_CHECK(q->from_s < q->to_s && q->to_s <= kNow, std::to_string(q->from_s));
  GW_FUZZ_CHECK(kNow - q->from_s <= web::kHistoryMaxSinceS, std::to_string(q->from_s));
  GW_FUZZ_CHECK(q->step_s >= 1 && 86400 % q->step_s == 0, std::to_string(q->step_s));
  const std::string* points = r.Param("points");
  const int64_t most = points != nullptr ? std::stoll(*points) : web::kHistoryDefaultPoints;
  // A window longer than `most` days has more steps of a day than asked for.
  if (q->step_s < 86400) {
    GW_FUZZ_CHECK((q->to_s - q->from_s) / q->step_s <= most, std::to_string(q->step_s));
  }

  // The window over 1-s points spread across it and just outside it (at most
  // 6: the window's JSON is parsed back, and parsing is most of a run).
  web::HistoryWindow window(*q);
  const int64_t stride = std::max<int64_t>(1, (q->to_s - q->from_s) / 3);
  for (int64_t t = q->from_s - stride; t <= q->to_s + stride; t += stride) {
    fleet::HistoryPoint p;
    p.time_s = t;
    p.gpus.push_back(fleet::GpuPoint{0, 50, 1e9, 8e10, 300, 60, 1});
    p.users.push_back(fleet::UserPoint{"u", 1, 0, 1e9, 0});
    window.Add(std::move(p));
  }
  const std::string text = window.Finish();
  const nlohmann::json doc = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  GW_FUZZ_CHECK(!doc.is_discarded(), "the history window's JSON does not parse");
  GW_FUZZ_CHECK(doc.at("step_s").get<int64_t>() == q->step_s, text.substr(0, 200));
  int64_t last = INT64_MIN;
  for (const nlohmann::json& p : doc.at("points")) {
    const int64_t t = p.at("time_unix_s").get<int64_t>();
    GW_FUZZ_CHECK(t > last, "points out of order");
    GW_FUZZ_CHECK(t >= q->after_s, std::to_string(t));
    GW_FUZZ_CHECK(t <= q->to_s, std::to_string(t));
    GW_FUZZ_CHECK(q->users || p.at("users").empty(), "users kept though not asked for");
    last = t;
  }
}

bool Clean(std::string_view s) { return s.find_first_of(std::string_view("\r\n\0", 3)) == s.npos; }

void CheckGate(const fleet::HttpRequest& r) {
  const std::optional<fleet::HttpReply> reply = web::CheckToken(r, kToken);
  const std::string* given = r.Param("token");
  const bool in_query = given != nullptr && *given == kToken;
  if (!reply) {
    const bool carried = r.Header("authorization").find(kToken) != std::string::npos ||
                         r.Header("cookie").find(kToken) != std::string::npos ||
                         (in_query && r.path != "/");
    GW_FUZZ_CHECK(carried, "let through without the token");
    return;
  }
  GW_FUZZ_CHECK(reply->status == 303 || reply->status == 401, std::to_string(reply->status));
  GW_FUZZ_CHECK(reply->status != 303 || (in_query && r.path == "/"), r.path);
  bool challenge = false;
  for (const auto& [name, value] : reply->headers) {
    GW_FUZZ_CHECK(Clean(name) && Clean(value), name);
    challenge = challenge || name == "WWW-Authenticate";
  }
  GW_FUZZ_CHECK(reply->status != 401 || challenge, "401 without WWW-Authenticate");
}

void CheckTokenFile(std::string_view bytes) {
  const std::string& path = fuzz::WriteTempFile(bytes, "token");
  Result<std::string> token = web::ReadTokenFile(path);
  if (!token.ok()) {
    fuzz::CheckError(token.error(), {"bad_input"}, path, "token file");
    return;
  }
  GW_FUZZ_CHECK(token->size() >= web::kMinTokenBytes && token->size() <= web::kMaxTokenBytes,
                std::to_string(token->size()));
  for (char c : *token) {
    GW_FUZZ_CHECK(c > ' ' && c <= '~' && std::string_view(";,\"\\").find(c) == std::string::npos,
                  std::to_string(static_cast<unsigned char>(c)));
  }
  const std::string_view first = bytes.substr(0, bytes.find('\n'));
  GW_FUZZ_CHECK(first.find(*token) != std::string_view::npos, "not the first line's");
  GW_FUZZ_CHECK(
      web::SameToken(*token, std::string(first.substr(first.find(*token), token->size()))),
      "SameToken");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text = fuzz::AsText(data, size);
  const fleet::HttpRequest request = RequestOf(text);
  CheckHistoryQuery(request);
  CheckGate(request);
  CheckTokenFile(text);
  // SameToken is ==, whatever the lengths.
  const std::string_view a = text.substr(0, size / 2), b = text.substr(size / 2);
  GW_FUZZ_CHECK(web::SameToken(a, b) == (a == b), "SameToken");
  return 0;
}
