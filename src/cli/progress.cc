#include "cli/progress.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <fmt/format.h>

namespace gw::cli {
namespace {

// Back to the line's start, and erase to its end.
constexpr std::string_view kEraseLine = "\r\x1b[K";

std::string Seconds(int64_t ms) {
  if (ms % 1000 == 0) return fmt::format("{}", ms / 1000);
  return fmt::format("{:.1f}", static_cast<double>(ms) / 1000.0);
}

}  // namespace

bool StderrTerminal::IsTerminal() const {
  if (isatty(STDERR_FILENO) != 1) return false;
  const char* term = std::getenv("TERM");
  return term == nullptr || std::strcmp(term, "dumb") != 0;
}

void StderrTerminal::Write(std::string_view text) {
  std::fwrite(text.data(), 1, text.size(), stderr);
  std::fflush(stderr);
}

std::string SamplingText(const collect::WindowProgress& progress) {
  std::string what = progress.samples == 0 || progress.gpus == 0
                         ? std::string("the GPUs")
                         : fmt::format("{} GPU{}", progress.gpus, progress.gpus == 1 ? "" : "s");
  return fmt::format("sampling {} for {} s… (--now for one look)", what,
                     Seconds(progress.window_ms));
}

SamplingNotice::SamplingNotice(StatusTerminal& terminal, bool enabled)
    : terminal_(terminal), enabled_(enabled && terminal.IsTerminal()) {}

SamplingNotice::~SamplingNotice() { Clear(); }

void SamplingNotice::Update(const collect::WindowProgress& progress) {
  if (!enabled_ || progress.window_ms <= 0) return;
  std::string text = SamplingText(progress);
  if (shown_ && text == last_) return;
  terminal_.Write(std::string(kEraseLine) + text);
  last_ = std::move(text);
  shown_ = true;
}

void SamplingNotice::Clear() {
  if (!shown_) return;
  terminal_.Write(kEraseLine);
  shown_ = false;
  last_.clear();
}

}  // namespace gw::cli
