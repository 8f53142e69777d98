#include "fleet/http_listener.h"

#include <arpa/inet.h>
#include <httplib.h>
#include <zlib.h>

#include <atomic>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <memory>
#include <string_view>
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

// Replies at least this large are gzipped for a client that takes gzip.
constexpr size_t kGzipMinBytes = 1024;

// The client takes gzip: a "gzip" coding in Accept-Encoding without q=0.
bool AcceptsGzip(std::string_view header) {
  while (!header.empty()) {
    const size_t comma = header.find(',');
    std::string_view item = header.substr(0, comma);
    header = comma == std::string_view::npos ? std::string_view{} : header.substr(comma + 1);
    std::string lower;
    for (char c : item) {
      if (c != ' ' && c != '\t')
        lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    }
    const size_t semi = lower.find(';');
    if (lower.substr(0, semi) != "gzip") continue;
    if (semi == std::string::npos) return true;
    const std::string_view params = std::string_view(lower).substr(semi);
    const size_t q = params.find(";q=");
    if (q == std::string_view::npos) return true;
    std::string_view value = params.substr(q + 3);
    value = value.substr(0, value.find(';'));
    // q=0, q=0.0, q=0.000: refused; any weight with a digit other than 0: taken.
    return value.find_first_of("123456789") != std::string_view::npos;
  }
  return false;
}

// `body` gzipped at zlib's default level (a scrape's 240 KB in ~3 ms), or
// nothing if zlib fails.
std::optional<std::string> Gzip(const std::string& body) {
  z_stream z{};
  // 15 + 16: a gzip header and trailer rather than zlib's.
  if (deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
    return std::nullopt;
  }
  std::string out(deflateBound(&z, body.size()), '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(body.data()));
  z.avail_in = static_cast<uInt>(body.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  const int rc = deflate(&z, Z_FINISH);
  const size_t written = out.size() - z.avail_out;
  deflateEnd(&z);
  if (rc != Z_STREAM_END) return std::nullopt;
  out.resize(written);
  return out;
}

// Sets the reply's body as it is to be sent. Through a content provider of
// known length: that is the one kind of reply cpp-httplib never encodes
// itself, and Debian's build would answer "Accept-Encoding: br" (every
// browser) with brotli at its slowest setting, 0.7 s of CPU for one /metrics
// page. Gzip, which Prometheus asks for, is done here instead.
void SetBody(const httplib::Request& req, httplib::Response& res, std::string body,
             const std::string& content_type) {
  res.set_header("Vary", "Accept-Encoding");
  if (body.size() >= kGzipMinBytes && AcceptsGzip(req.get_header_value("Accept-Encoding"))) {
    if (std::optional<std::string> packed = Gzip(body)) {
      body = std::move(*packed);
      res.set_header("Content-Encoding", "gzip");
    }
  }
  auto shared = std::make_shared<const std::string>(std::move(body));
  res.set_content_provider(shared->size(), content_type,
                           [shared](size_t offset, size_t length, httplib::DataSink& sink) {
                             return sink.write(shared->data() + offset, length);
                           });
}

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
        [](const httplib::Request& req, httplib::Response& res, std::exception_ptr) {
          res.status = 500;
          SetBody(req, res, "internal error\n", "text/plain; charset=utf-8");
        });
    auto serve = [this](const httplib::Request& req, httplib::Response& res) {
      const HttpRequest request = RequestOf(req);
      std::optional<HttpReply> r;
      if (gate_) r = gate_(request);
      if (!r) {
        auto it = routes_.find(req.path);
        if (it == routes_.end()) {
          res.status = 404;
          SetBody(req, res, "not found; try / or /metrics\n", "text/plain; charset=utf-8");
          return;
        }
        r = it->second(request);
      }
      res.status = r->status;
      for (auto& [name, value] : r->headers) res.set_header(name, value);
      SetBody(req, res, std::move(r->body), r->content_type);
    };
    server_.Get(".*", serve);
    auto refuse = [](const httplib::Request& req, httplib::Response& res) {
      res.status = 405;
      res.set_header("Allow", "GET, HEAD");
      SetBody(req, res, "read-only: GET and HEAD only\n", "text/plain; charset=utf-8");
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
