// The optional token of gpuwardend's HTTP listener (--web-token-file): who
// may read the page, its API and /metrics when the listener is reachable by
// more than the host's own users. Pure but for reading the file.
#ifndef GPUWARDEN_WEB_WEB_AUTH_H_
#define GPUWARDEN_WEB_WEB_AUTH_H_

#include <optional>
#include <string>
#include <string_view>

#include "core/result.h"
#include "fleet/http_listener.h"

namespace gw::web {

inline constexpr char kTokenCookie[] = "gpuwarden_token";
inline constexpr size_t kMinTokenBytes = 16;
inline constexpr size_t kMaxTokenBytes = 4096;

// The token: the file's first line without surrounding blanks. Errors
// ("bad_input", naming the file): missing or unreadable, readable by group
// or others (the token would be no secret), empty, shorter than 16 or
// longer than 4096 bytes, or holding a space, a byte outside printable
// ASCII or one of ;,"\ (it must fit a header and a cookie as it is).
Result<std::string> ReadTokenFile(const std::string& path);

// a == b in a time that depends on their lengths only, not on where they differ.
bool SameToken(std::string_view a, std::string_view b);

// The listener's gate (fleet::HttpGate) for `token`: a request carrying it in
// "Authorization: Bearer TOKEN" or the gpuwarden_token cookie passes; a
// request for the page with ?token=TOKEN is sent back to the page without
// it (303 to "./") and given the cookie (HttpOnly, SameSite=Strict), so the page's
// own requests carry it and the token leaves the address bar; anything else
// is 401 with "WWW-Authenticate: Bearer".
std::optional<fleet::HttpReply> CheckToken(const fleet::HttpRequest& request,
                                           const std::string& token);

}  // namespace gw::web

#endif  // GPUWARDEN_WEB_WEB_AUTH_H_
