// HttpListener: the daemon's HTTP side (cpp-httplib), on threads of its own
// so a slow or hostile client never stalls the daemon's loop. Serves GET and
// HEAD on the routes it is given; every other method is 405, every other path
// 404. Every response carries the security headers (no sniffing, no framing,
// no referrer, a CSP that allows nothing but this origin).
//
// Bound to the address it is given; the default everywhere is 127.0.0.1.
#ifndef GPUWARDEN_FLEET_HTTP_LISTENER_H_
#define GPUWARDEN_FLEET_HTTP_LISTENER_H_

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/result.h"

namespace gw::fleet {

inline constexpr char kDefaultListen[] = "127.0.0.1:9400";

struct ListenAddress {
  std::string host;  // A literal IPv4 or IPv6 address, or "localhost".
  int port = 0;      // 0: any free port (tests).
};

// "127.0.0.1:9400", "[::1]:9400", "0.0.0.0:9400", "localhost:9400".
// Errors: "usage", naming the text and what is wrong with it.
Result<ListenAddress> ParseListenAddress(std::string_view text);
std::string FormatListenAddress(const ListenAddress& address);  // As parsed; "[::1]:9400".

// What a route sees of a request. HEAD is answered as GET without the body.
struct HttpRequest {
  std::string path;
  std::map<std::string, std::string> params;  // The query's; a repeated name keeps its first value.
  std::map<std::string, std::string> headers;  // Names lower-case; a repeated one keeps its first.
  // The header's value, "" when absent; `name` lower-case.
  std::string Header(const std::string& name) const;
  // The query parameter's value, null when absent.
  const std::string* Param(const std::string& name) const;
};

struct HttpReply {
  int status = 200;
  std::string content_type = "text/plain; charset=utf-8";
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;  // Added to the security headers.
};

// Called on a listener thread, for each request to its path: must be
// thread-safe, and must not throw (a throw is answered 500).
using HttpRoute = std::function<HttpReply(const HttpRequest&)>;
// Called before the route (and for unknown paths): a reply to give instead
// (401, a redirect), or nullopt to serve the request. Same rules as a route.
using HttpGate = std::function<std::optional<HttpReply>(const HttpRequest&)>;

class HttpListener {
 public:
  // Binds and starts serving. Errors: "io" naming the address and the cause
  // ("address already in use").
  static Result<std::unique_ptr<HttpListener>> Start(const ListenAddress& address,
                                                     std::map<std::string, HttpRoute> routes,
                                                     HttpGate gate = nullptr);
  virtual ~HttpListener() = default;  // Stops serving and joins the threads.
  virtual int port() const = 0;       // The bound port.
};

}  // namespace gw::fleet

#endif  // GPUWARDEN_FLEET_HTTP_LISTENER_H_
