#include "fleet/http_listener.h"

#include <arpa/inet.h>
#include <httplib.h>

#include <atomic>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <thread>
#include <utility>

#include <fmt/format.h>

#include "os/errno_text.h"

namespace gw::fleet {
namespace {

// A thread serves one connection for as long as it is kept alive, and a
// browser keeps up to six open to one server: with two threads the page's
// third request (and a scrape) waited up to kKeepAliveS for a thread. Eight
// threads take a browser's connections and a scrape; more clients wait.
constexpr size_t kThreads = 8;
constexpr time_t kTimeoutS = 5;
// An idle kept-alive connection gives its thread back this fast (the page
// asks again every second, so its own connections stay in use).
constexpr time_t kKeepAliveS = 2;
constexpr size_t kMaxRequestBytes = 64 * 1024;  // GET only: nothing legitimate is larger.

bool IsIp(const std::string& host, int family) {
  unsigned char buf[sizeof(in6_addr)];
  return inet_pton(family, host.c_str(), buf) == 1;
}

class HttpListenerImpl final : public HttpListener {
 public:
  HttpListenerImpl(std::map<std::string, HttpRoute> routes, HttpGate gate)
      : routes_(std::move(routes)), gate_(std::move(gate)) {}
  ~HttpListenerImpl() override {
    // stop() reaches a server that is listening; one whose thread has not
    // begun to listen yet would miss it and listen for ever: wait for either.
    for (int i = 0; i < 2000 && !done_ && !server_.is_running(); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    server_.stop();
    if (thread_.joinable()) thread_.join();
  }

  Status Start(const ListenAddress& a) {
    server_.new_task_queue = [] { return new httplib::ThreadPool(kThreads); };
    server_.set_read_timeout(kTimeoutS, 0);
    server_.set_write_timeout(kTimeoutS, 0);
    server_.set_keep_alive_timeout(kKeepAliveS);
    server_.set_payload_max_length(kMaxRequestBytes);
    // SO_REUSEADDR (a restart binds at once over connections in TIME_WAIT)
    // and not the library's default SO_REUSEPORT, which lets a second daemon
    // bind the same port and take half the scrapes without a word.
    server_.set_socket_options([](int sock) {
      const int yes = 1;
      setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
    });
    server_.set_default_headers({
        {"X-Content-Type-Options", "nosniff"},
        {"X-Frame-Options", "DENY"},
        {"Referrer-Policy", "no-referrer"},
        {"Content-Security-Policy",
         "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
         "object-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'none'"},
        {"Cache-Control", "no-store"},
    });
    server_.set_exception_handler(
        [](const httplib::Request&, httplib::Response& res, std::exception_ptr) {
          res.status = 500;
          res.set_content("internal error\n", "text/plain; charset=utf-8");
        });
    auto serve = [this](const httplib::Request& req, httplib::Response& res) {
      const HttpRequest request = RequestOf(req);
      std::optional<HttpReply> r;
      if (gate_) r = gate_(request);
      if (!r) {
        auto it = routes_.find(req.path);
        if (it == routes_.end()) {
          res.status = 404;
          res.set_content("not found; try / or /metrics\n", "text/plain; charset=utf-8");
          return;
        }
        r = it->second(request);
      }
      res.status = r->status;
      for (auto& [name, value] : r->headers) res.set_header(name, value);
      res.set_content(std::move(r->body), r->content_type);
    };
    server_.Get(".*", serve);
    auto refuse = [](const httplib::Request&, httplib::Response& res) {
      res.status = 405;
      res.set_header("Allow", "GET, HEAD");
      res.set_content("read-only: GET and HEAD only\n", "text/plain; charset=utf-8");
    };
    server_.Post(".*", refuse);
    server_.Put(".*", refuse);
    server_.Patch(".*", refuse);
    server_.Delete(".*", refuse);
    server_.Options(".*", refuse);

    const std::string host = a.host == "localhost" ? "127.0.0.1" : a.host;
    server_.set_address_family(IsIp(host, AF_INET6) ? AF_INET6 : AF_INET);
    errno = 0;
    if (a.port == 0) {
      port_ = server_.bind_to_any_port(host);
      if (port_ < 0) port_ = 0;
    } else if (server_.bind_to_port(host, a.port)) {
      port_ = a.port;
    }
    if (port_ == 0) {
      const int err = errno;
      return MakeError("io", fmt::format("cannot listen on {}: {}", FormatListenAddress(a),
                                         err != 0 ? os::ErrnoText(err) : "bind failed"));
    }
    thread_ = std::thread([this] {
      server_.listen_after_bind();
      done_ = true;
    });
    return Status::Ok();
  }

  int port() const override { return port_; }

 private:
  static HttpRequest RequestOf(const httplib::Request& req) {
    HttpRequest r;
    r.path = req.path;
    for (const auto& [name, value] : req.params) r.params.emplace(name, value);
    for (const auto& [name, value] : req.headers) {
      std::string lower = name;
      for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      r.headers.emplace(std::move(lower), value);
    }
    return r;
  }

  std::map<std::string, HttpRoute> routes_;
  HttpGate gate_;
  httplib::Server server_;
  std::thread thread_;
  std::atomic<bool> done_{false};
  int port_ = 0;
};

}  // namespace

std::string HttpRequest::Header(const std::string& name) const {
  auto it = headers.find(name);
  return it == headers.end() ? std::string() : it->second;
}

const std::string* HttpRequest::Param(const std::string& name) const {
  auto it = params.find(name);
  return it == params.end() ? nullptr : &it->second;
}

Result<ListenAddress> ParseListenAddress(std::string_view text) {
  auto bad = [&](std::string_view why) {
    return MakeError("usage",
                     fmt::format("listen address \"{}\": {} (e.g. {})", text, why, kDefaultListen));
  };
  const size_t colon = text.rfind(':');
  if (colon == std::string_view::npos) return bad("no port");
  std::string host(text.substr(0, colon));
  const std::string_view port_text = text.substr(colon + 1);
  int port = -1;
  auto [end, ec] = std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
  if (ec != std::errc() || end != port_text.data() + port_text.size() || port < 0 || port > 65535) {
    return bad("the port is not a number from 0 to 65535");
  }
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
    if (!IsIp(host, AF_INET6)) return bad("not an IPv6 address in brackets");
  } else if (host != "localhost" && !IsIp(host, AF_INET)) {
    return bad(host.empty() ? "no host (0.0.0.0 listens everywhere; say so)"
                            : "the host is not an IP address or localhost");
  }
  return ListenAddress{host, port};
}

std::string FormatListenAddress(const ListenAddress& a) {
  return a.host.find(':') != std::string::npos ? fmt::format("[{}]:{}", a.host, a.port)
                                               : fmt::format("{}:{}", a.host, a.port);
}

Result<std::unique_ptr<HttpListener>> HttpListener::Start(const ListenAddress& address,
                                                          std::map<std::string, HttpRoute> routes,
                                                          HttpGate gate) {
  auto l = std::make_unique<HttpListenerImpl>(std::move(routes), std::move(gate));
  if (Status s = l->Start(address); !s.ok()) return s.error();
  return std::unique_ptr<HttpListener>(std::move(l));
}

}  // namespace gw::fleet
