#include "cli/terminal.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace gw::cli {

bool ShouldUseColor(ColorChoice choice) {
  switch (choice) {
    case ColorChoice::kAlways:
      return true;
    case ColorChoice::kNever:
      return false;
    case ColorChoice::kAuto:
      break;
  }
  const char* no_color = std::getenv("NO_COLOR");
  if (no_color != nullptr && no_color[0] != '\0') return false;
  const char* term = std::getenv("TERM");
  if (term != nullptr && std::strcmp(term, "dumb") == 0) return false;
  return isatty(STDOUT_FILENO) == 1;
}

namespace {

// The terminal's columns, else COLUMNS (40 to 1000), else `fallback`.
int WidthOr(int fallback) {
  winsize ws{};
  if (isatty(STDOUT_FILENO) == 1 && ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0) {
    return ws.ws_col;
  }
  if (const char* columns = std::getenv("COLUMNS")) {
    int n = std::atoi(columns);
    if (n >= 40 && n <= 1000) return n;
  }
  return fallback;
}

}  // namespace

int OutputWidth() { return WidthOr(kUnlimitedWidth); }

int ChartWidth() { return WidthOr(100); }

int Fail(int code, const std::string& message) {
  std::fprintf(stderr, "gpuwarden: %s\n", message.c_str());
  return code;
}

void Print(const std::string& text) {
  std::fwrite(text.data(), 1, text.size(), stdout);
  if (!text.empty() && text.back() != '\n') std::fputc('\n', stdout);
}

}  // namespace gw::cli
