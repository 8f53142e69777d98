#include "web/web_auth.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

namespace gw::web {
namespace {

constexpr char kToken[] = "0123456789abcdef0123";

fleet::HttpRequest Request(std::string path) {
  fleet::HttpRequest r;
  r.path = std::move(path);
  return r;
}

TEST(SameToken, ComparesWholeStrings) {
  EXPECT_TRUE(SameToken("abc", "abc"));
  EXPECT_FALSE(SameToken("abc", "abd"));
  EXPECT_FALSE(SameToken("abc", "abcd"));
  EXPECT_FALSE(SameToken("", "a"));
  EXPECT_FALSE(SameToken(std::string_view("a\0b", 3), "a"));
}

TEST(CheckToken, PassesABearerOrTheCookie) {
  fleet::HttpRequest r = Request("/api/status");
  r.headers["authorization"] = std::string("Bearer ") + kToken;
  EXPECT_FALSE(CheckToken(r, kToken).has_value());
  r = Request("/metrics");
  r.headers["cookie"] = std::string("theme=dark; gpuwarden_token=") + kToken + "; x=1";
  EXPECT_FALSE(CheckToken(r, kToken).has_value());
}

TEST(CheckToken, RefusesAWrongOrMissingToken) {
  for (const char* header :
       {"", "Bearer ", "Bearer 0123456789abcdef012", "Basic abc", "bearer 0123456789abcdef0123x"}) {
    fleet::HttpRequest r = Request("/api/status");
    if (*header != '\0') r.headers["authorization"] = header;
    r.headers["cookie"] = "gpuwarden_token=nope; other_gpuwarden_token=0123456789abcdef0123";
    std::optional<fleet::HttpReply> reply = CheckToken(r, kToken);
    ASSERT_TRUE(reply.has_value()) << header;
    EXPECT_EQ(reply->status, 401);
    ASSERT_EQ(reply->headers.size(), 1u);
    EXPECT_EQ(reply->headers[0].first, "WWW-Authenticate");
    // The reply never echoes what was sent.
    EXPECT_EQ(reply->body.find("nope"), std::string::npos);
  }
}

TEST(CheckToken, TheTokenInTheAddressBecomesACookie) {
  fleet::HttpRequest r = Request("/");
  r.params["token"] = kToken;
  std::optional<fleet::HttpReply> reply = CheckToken(r, kToken);
  ASSERT_TRUE(reply.has_value());
  EXPECT_EQ(reply->status, 303);
  std::map<std::string, std::string> h(reply->headers.begin(), reply->headers.end());
  EXPECT_EQ(h["Location"], "./");
  EXPECT_EQ(h["Set-Cookie"],
            std::string("gpuwarden_token=") + kToken + "; Path=/; HttpOnly; SameSite=Strict");
  // Elsewhere (a scraper's URL) it passes as it is.
  r.path = "/metrics";
  EXPECT_FALSE(CheckToken(r, kToken).has_value());
  r.params["token"] = "wrong-wrong-wrong-wrong";
  EXPECT_EQ(CheckToken(r, kToken)->status, 401);
}

class TokenFile : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/gw-token-XXXXXX";
    dir_ = mkdtemp(tmpl);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string Write(const std::string& text, mode_t mode) {
    const std::string p = dir_ + "/token";
    std::filesystem::remove(p);
    std::ofstream(p) << text;
    chmod(p.c_str(), mode);
    return p;
  }
  std::string dir_;
};

TEST_F(TokenFile, ReadsTheFirstLineTrimmed) {
  Result<std::string> t = ReadTokenFile(Write(std::string("  ") + kToken + " \r\nsecond\n", 0600));
  ASSERT_TRUE(t.ok()) << t.error().message;
  EXPECT_EQ(*t, kToken);
}

TEST_F(TokenFile, RefusesWhatIsNoSecretNamingTheFile) {
  struct Case {
    std::string text;
    mode_t mode;
    const char* why;
  };
  for (const Case& c : {Case{kToken, 0644, "group or others"}, Case{"", 0600, "empty"},
                        Case{"short", 0600, "shorter than 16"},
                        Case{"0123456789 abcdef0123", 0600, "printable ASCII"},
                        Case{"0123456789abcdef;0123", 0600, "printable ASCII"},
                        Case{std::string(4097, 'a'), 0600, "longer than 4096"}}) {
    const std::string p = Write(c.text, c.mode);
    Result<std::string> t = ReadTokenFile(p);
    ASSERT_FALSE(t.ok()) << c.text;
    EXPECT_EQ(t.error().code, "bad_input");
    EXPECT_NE(t.error().message.find(p), std::string::npos) << t.error().message;
    EXPECT_NE(t.error().message.find(c.why), std::string::npos) << t.error().message;
  }
  Result<std::string> t = ReadTokenFile(dir_ + "/missing");
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.error().message.find("missing"), std::string::npos);
}

}  // namespace
}  // namespace gw::web
