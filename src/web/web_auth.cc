#include "web/web_auth.h"

#include <sys/stat.h>

#include <cerrno>
#include <fstream>
#include <string>

#include "os/errno_text.h"

namespace gw::web {
namespace {

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r'))
    s.remove_suffix(1);
  return s;
}

// The value of cookie `name` in a Cookie header ("a=1; b=2"), "" when absent.
std::string_view CookieValue(std::string_view header, std::string_view name) {
  while (!header.empty()) {
    const size_t end = header.find(';');
    std::string_view pair = Trim(header.substr(0, end));
    if (pair.size() > name.size() && pair.substr(0, name.size()) == name &&
        pair[name.size()] == '=') {
      return pair.substr(name.size() + 1);
    }
    if (end == std::string_view::npos) break;
    header.remove_prefix(end + 1);
  }
  return {};
}

fleet::HttpReply Unauthorized() {
  fleet::HttpReply r{401,
                     "text/plain; charset=utf-8",
                     "gpuwardend: a token is needed (docs/web.md): open the page with ?token=TOKEN "
                     "once, or send \"Authorization: Bearer TOKEN\"\n",
                     {{"WWW-Authenticate", "Bearer realm=\"gpuwardend\""}}};
  return r;
}

}  // namespace

Result<std::string> ReadTokenFile(const std::string& path) {
  auto bad = [&](const std::string& why) {
    return MakeError("bad_input", "token file " + path + ": " + why);
  };
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) return bad(os::ErrnoText(errno));
  if (!S_ISREG(st.st_mode)) return bad("not a regular file");
  if ((st.st_mode & 077) != 0) {
    return bad("readable or writable by group or others (chmod 600 it)");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return bad("cannot be read");
  std::string line;
  std::getline(in, line);
  const std::string token(Trim(line));
  if (token.empty()) return bad("empty (its first line is the token)");
  if (token.size() < kMinTokenBytes) {
    return bad("the token is shorter than 16 characters (e.g. openssl rand -hex 32)");
  }
  if (token.size() > kMaxTokenBytes) return bad("the token is longer than 4096 characters");
  for (char c : token) {
    if (c <= ' ' || c > '~' || c == ';' || c == ',' || c == '"' || c == '\\') {
      return bad("the token holds a character other than printable ASCII, or one of ;,\"\\");
    }
  }
  return token;
}

bool SameToken(std::string_view a, std::string_view b) {
  // Every byte of the longer is read whatever the contents; only the
  // lengths show in the time taken, and the token's length is no secret.
  const size_t n = std::max(a.size(), b.size());
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  for (size_t i = 0; i < n; ++i) {
    const unsigned char x = i < a.size() ? static_cast<unsigned char>(a[i]) : 0;
    const unsigned char y = i < b.size() ? static_cast<unsigned char>(b[i]) : 0;
    diff |= static_cast<unsigned char>(x ^ y);
  }
  return diff == 0;
}

std::optional<fleet::HttpReply> CheckToken(const fleet::HttpRequest& request,
                                           const std::string& token) {
  constexpr std::string_view kBearer = "Bearer ";
  const std::string authorization = request.Header("authorization");
  if (authorization.size() > kBearer.size() &&
      authorization.compare(0, kBearer.size(), kBearer) == 0 &&
      SameToken(Trim(std::string_view(authorization).substr(kBearer.size())), token)) {
    return std::nullopt;
  }
  const std::string cookies = request.Header("cookie");
  if (std::string_view c = CookieValue(cookies, kTokenCookie); !c.empty() && SameToken(c, token)) {
    return std::nullopt;
  }
  if (const std::string* given = request.Param("token");
      given != nullptr && SameToken(*given, token)) {
    if (request.path != "/") return std::nullopt;
    return fleet::HttpReply{303,
                            "text/plain; charset=utf-8",
                            "see /\n",
                            // Relative: under a reverse proxy's prefix the page is not at /.
                            {{"Location", "./"},
                             {"Set-Cookie", std::string(kTokenCookie) + "=" + token +
                                                "; Path=/; HttpOnly; SameSite=Strict"}}};
  }
  return Unauthorized();
}

}  // namespace gw::web
