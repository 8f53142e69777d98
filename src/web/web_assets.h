// The page's static files (web/ in the source tree), embedded at build time
// by cmake/embed_files.cmake: the daemon needs nothing at run time, and what
// it serves is what was built and tested.
#ifndef GPUWARDEN_WEB_WEB_ASSETS_H_
#define GPUWARDEN_WEB_WEB_ASSETS_H_

#include <span>
#include <string_view>

namespace gw::web {

struct WebAsset {
  std::string_view path;          // The URL path: "/index.html", "/app.js".
  std::string_view content_type;  // "text/javascript; charset=utf-8".
  std::string_view body;
};

// Every file of web/, in the order CMake listed them.
std::span<const WebAsset> WebAssets();

}  // namespace gw::web

#endif  // GPUWARDEN_WEB_WEB_ASSETS_H_
