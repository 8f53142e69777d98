#include "fleet/http_listener.h"

#include <gtest/gtest.h>
#include <httplib.h>

#include <atomic>
#include <string>

namespace gw::fleet {
namespace {

TEST(ListenAddress, Parses) {
  Result<ListenAddress> a = ParseListenAddress("127.0.0.1:9400");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->host, "127.0.0.1");
  EXPECT_EQ(a->port, 9400);
  a = ParseListenAddress("[::1]:9401");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->host, "::1");
  EXPECT_EQ(FormatListenAddress(*a), "[::1]:9401");
  EXPECT_TRUE(ParseListenAddress("localhost:0").ok());
  EXPECT_TRUE(ParseListenAddress("0.0.0.0:9400").ok());
}

TEST(ListenAddress, RefusesWithTheReason) {
  for (const char* bad : {"9400", "127.0.0.1", "127.0.0.1:99999", "127.0.0.1:9x", ":9400",
                          "example.com:9400", "[nope]:1", "::1:9400"}) {
    Result<ListenAddress> a = ParseListenAddress(bad);
    ASSERT_FALSE(a.ok()) << bad;
    EXPECT_EQ(a.error().code, "usage");
    EXPECT_NE(a.error().message.find(bad), std::string::npos) << a.error().message;
  }
}

TEST(HttpListener, ServesItsRoutesReadOnlyWithSecurityHeaders) {
  std::atomic<int> calls{0};
  auto l = HttpListener::Start({"127.0.0.1", 0},
                               {{"/metrics", [&](const HttpRequest&) {
                                   ++calls;
                                   return HttpReply{200, "text/plain; version=0.0.4", "up 1\n", {}};
                                 }}});
  ASSERT_TRUE(l.ok()) << l.error().message;
  httplib::Client c("127.0.0.1", (*l)->port());
  auto r = c.Get("/metrics");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->body, "up 1\n");
  EXPECT_EQ(r->get_header_value("Content-Type"), "text/plain; version=0.0.4");
  EXPECT_EQ(r->get_header_value("X-Content-Type-Options"), "nosniff");
  EXPECT_NE(r->get_header_value("Content-Security-Policy").find("default-src 'self'"),
            std::string::npos);
  auto missing = c.Get("/nope");
  ASSERT_TRUE(missing);
  EXPECT_EQ(missing->status, 404);
  auto post = c.Post("/metrics", "x", "text/plain");
  ASSERT_TRUE(post);
  EXPECT_EQ(post->status, 405);
  EXPECT_EQ(calls.load(), 1);
}

// A client that takes gzip gets the reply gzipped; one that asks only for
// brotli (as a browser also does) gets it as it is: the library's own brotli
// took 0.7 s of CPU for one /metrics page.
TEST(HttpListener, GzipsForAClientThatTakesItAndNeverBrotli) {
  std::string page;
  for (int i = 0; i < 2000; ++i)
    page += "DCGM_FI_DEV_GPU_UTIL{gpu=\"" + std::to_string(i) + "\"} 7\n";
  auto l = HttpListener::Start({"127.0.0.1", 0}, {{"/metrics", [&](const HttpRequest&) {
                                                     return HttpReply{200, "text/plain", page, {}};
                                                   }}});
  ASSERT_TRUE(l.ok()) << l.error().message;
  httplib::Client c("127.0.0.1", (*l)->port());
  c.set_decompress(false);  // See the bytes as sent.
  struct Case {
    const char* accept;
    bool gzip;
  };
  for (const Case& k :
       {Case{"br", false}, Case{"gzip, deflate, br", true}, Case{"br;q=1.0, GZIP", true},
        Case{"gzip;q=0", false}, Case{"gzip;q=0.000, br", false}, Case{"gzip;q=0.5", true},
        Case{"identity", false}}) {
    SCOPED_TRACE(k.accept);
    auto r = c.Get("/metrics", {{"Accept-Encoding", k.accept}});
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 200);
    EXPECT_EQ(r->get_header_value("Vary"), "Accept-Encoding");
    if (!k.gzip) {
      EXPECT_FALSE(r->has_header("Content-Encoding"));
      EXPECT_EQ(r->body, page);
      continue;
    }
    EXPECT_EQ(r->get_header_value("Content-Encoding"), "gzip");
    ASSERT_GE(r->body.size(), 2u);
    EXPECT_EQ(static_cast<unsigned char>(r->body[0]), 0x1f);  // gzip's magic
    EXPECT_EQ(static_cast<unsigned char>(r->body[1]), 0x8b);
    EXPECT_LT(r->body.size(), page.size() / 4);
  }
  // And the client's own decoding gets the page back.
  httplib::Client d("127.0.0.1", (*l)->port());
  auto r = d.Get("/metrics", {{"Accept-Encoding", "gzip"}});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->body, page);
  // A small reply is sent as it is.
  EXPECT_EQ(d.Get("/nope", {{"Accept-Encoding", "gzip"}})->get_header_value("Content-Encoding"),
            "");
}

TEST(HttpListener, ABusyPortIsAnErrorNamingTheAddress) {
  auto first = HttpListener::Start({"127.0.0.1", 0}, {});
  ASSERT_TRUE(first.ok());
  const int port = (*first)->port();
  auto second = HttpListener::Start({"127.0.0.1", port}, {});
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.error().code, "io");
  EXPECT_NE(second.error().message.find("127.0.0.1:" + std::to_string(port)), std::string::npos)
      << second.error().message;
}

TEST(HttpListener, StopsAtOnceAfterStarting) {
  for (int i = 0; i < 5; ++i) {
    auto l = HttpListener::Start({"127.0.0.1", 0}, {});
    ASSERT_TRUE(l.ok());
  }  // Each destructor returned: none listened for ever.
}

}  // namespace
}  // namespace gw::fleet
