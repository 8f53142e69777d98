#include "web/web_assets.h"

#include <gtest/gtest.h>

#include <map>
#include <string>

namespace gw::web {
namespace {

std::map<std::string, const WebAsset*> ByPath() {
  std::map<std::string, const WebAsset*> out;
  for (const WebAsset& a : WebAssets()) out[std::string(a.path)] = &a;
  return out;
}

TEST(WebAssets, ThePageItsScriptAndStyleAreEmbedded) {
  auto assets = ByPath();
  ASSERT_TRUE(assets.count("/index.html"));
  ASSERT_TRUE(assets.count("/app.js"));
  ASSERT_TRUE(assets.count("/app.css"));
  EXPECT_EQ(assets["/index.html"]->content_type, "text/html; charset=utf-8");
  EXPECT_EQ(assets["/app.js"]->content_type, "text/javascript; charset=utf-8");
  EXPECT_EQ(assets["/app.css"]->content_type, "text/css; charset=utf-8");
  for (const auto& [path, a] : assets) {
    EXPECT_FALSE(a->body.empty()) << path;
    EXPECT_EQ(a->body.find('\0'), std::string_view::npos) << path;
  }
}

// The CSP (default-src 'self', no 'unsafe-inline') would block what these
// look for; the test says so before a browser does.
TEST(WebAssets, ThePageHasNoInlineScriptOrStyleAndLoadsNothingFromElsewhere) {
  const std::string html(ByPath()["/index.html"]->body);
  int scripts = 0;
  for (size_t at = html.find("<script"); at != std::string::npos;
       at = html.find("<script", at + 1)) {
    ++scripts;
    const std::string tag = html.substr(at, html.find('>', at) - at + 1);
    // A file of the page's own, relative (a reverse proxy's prefix holds),
    // and nothing between the tags.
    EXPECT_NE(tag.find("src=\"app.js\""), std::string::npos) << tag;
    EXPECT_EQ(html.compare(at + tag.size(), 9, "</script>"), 0) << tag;
  }
  EXPECT_EQ(scripts, 1);
  EXPECT_EQ(html.find("<SCRIPT"), std::string::npos);
  EXPECT_EQ(html.find("<style"), std::string::npos);
  EXPECT_EQ(html.find(" style="), std::string::npos);
  EXPECT_EQ(html.find(" on"), std::string::npos);  // No onclick= and the like.
  EXPECT_EQ(html.find("http://"), std::string::npos);
  EXPECT_EQ(html.find("https://"), std::string::npos);
  EXPECT_EQ(html.find("=\"/"), std::string::npos);  // No absolute path: see above.
}

TEST(WebAssets, TheScriptNeverTurnsDataIntoMarkup) {
  std::string js(ByPath()["/app.js"]->body);
  // The SVG namespace is a name, not an address the page loads.
  const std::string svg_ns = "'http://www.w3.org/2000/svg'";
  ASSERT_NE(js.find(svg_ns), std::string::npos);
  js.erase(js.find(svg_ns), svg_ns.size());
  for (const char* banned :
       {"innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "new Function",
        "http://", "https://", "setAttribute('on", "setAttribute('href", "setAttribute('style"}) {
    EXPECT_EQ(js.find(banned), std::string::npos) << banned;
  }
  EXPECT_NE(js.find("textContent"), std::string::npos);
}

}  // namespace
}  // namespace gw::web
