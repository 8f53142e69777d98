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
#include <string>
#include <string_view>

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

struct HttpReply {
  int status = 200;
  std::string content_type = "text/plain; charset=utf-8";
  std::string body;
};

// Called on a listener thread, for each request to its path: must be
// thread-safe, and must not throw (a throw is answered 500).
using HttpRoute = std::function<HttpReply()>;

class HttpListener {
 public:
  // Binds and starts serving. Errors: "io" naming the address and the cause
  // ("address already in use").
  static Result<std::unique_ptr<HttpListener>> Start(const ListenAddress& address,
                                                     std::map<std::string, HttpRoute> routes);
  virtual ~HttpListener() = default;  // Stops serving and joins the threads.
  virtual int port() const = 0;       // The bound port.
};

}  // namespace gw::fleet

#endif  // GPUWARDEN_FLEET_HTTP_LISTENER_H_
