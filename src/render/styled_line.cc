#include "render/styled_line.h"

#include <algorithm>

#include "core/text.h"

namespace gw::render {
namespace {

constexpr std::string_view kEllipsis = "\xE2\x80\xA6";  // U+2026, one column.

}  // namespace

std::string_view ToneCode(Tone tone) {
  switch (tone) {
    case Tone::kPlain:
      return "";
    case Tone::kBold:
      return "\x1b[1m";
    case Tone::kDim:
      return "\x1b[2m";
    case Tone::kRed:
      return "\x1b[31m";
    case Tone::kBoldRed:
      return "\x1b[1;31m";
    case Tone::kYellow:
      return "\x1b[33m";
    case Tone::kBoldYellow:
      return "\x1b[1;33m";
    case Tone::kGreen:
      return "\x1b[32m";
    case Tone::kMagenta:
      return "\x1b[35m";
    case Tone::kCyan:
      return "\x1b[36m";
  }
  return "";
}

StyledLine& StyledLine::Add(std::string text, Tone tone) {
  spans_.emplace_back(std::move(text), tone);
  return *this;
}

int StyledLine::Width() const {
  int w = 0;
  for (const auto& span : spans_) w += DisplayWidth(span.first);
  return w;
}

std::string StyledLine::Render(int width, bool color) const {
  std::vector<std::pair<std::string, Tone>> spans = spans_;
  // Trailing padding would only make lines look wider than they are.
  while (!spans.empty()) {
    std::string& t = spans.back().first;
    while (!t.empty() && t.back() == ' ') t.pop_back();
    if (!t.empty()) break;
    spans.pop_back();
  }
  std::string plain;
  for (const auto& span : spans) plain += span.first;
  if (DisplayWidth(plain) > width) {
    // Cut the joined text once so the '…' sits where the text stops, then
    // give the kept bytes back to their spans (a span is never split inside a
    // character: TruncateToWidth cut on a character boundary).
    const std::string cut = TruncateToWidth(plain, width);
    size_t keep = cut.size() >= kEllipsis.size() ? cut.size() - kEllipsis.size() : 0;
    for (size_t i = 0; i < spans.size(); ++i) {
      std::string& t = spans[i].first;
      if (t.size() <= keep) {
        keep -= t.size();
        continue;
      }
      t.resize(keep);
      t += kEllipsis;
      spans.resize(i + 1);
      break;
    }
  }
  std::string out;
  for (const auto& [text, tone] : spans) {
    if (color && tone != Tone::kPlain && !text.empty()) {
      out += ToneCode(tone);
      out += text;
      out += "\x1b[0m";
    } else {
      out += text;
    }
  }
  return out;
}

std::vector<std::string> WrapWords(std::string_view text, int width) {
  return WrapWords(text, width, width);
}

std::vector<std::string> WrapWords(std::string_view text, int first_width, int rest_width) {
  first_width = std::max(first_width, 1);
  rest_width = std::max(rest_width, 1);
  int width = first_width;
  std::vector<std::string> lines;
  std::string current;
  int current_w = 0;
  size_t pos = 0;
  while (pos < text.size()) {
    const size_t start = text.find_first_not_of(' ', pos);
    if (start == std::string_view::npos) break;
    size_t end = text.find(' ', start);
    if (end == std::string_view::npos) end = text.size();
    std::string word(text.substr(start, end - start));
    pos = end;
    int w = DisplayWidth(word);
    if (w > width) {
      word = TruncateToWidth(word, width);
      w = DisplayWidth(word);
    }
    if (current.empty()) {
      current = std::move(word);
      current_w = w;
    } else if (current_w + 1 + w <= width) {
      current += ' ';
      current += word;
      current_w += 1 + w;
    } else {
      lines.push_back(std::move(current));
      width = rest_width;
      if (w > width) {
        word = TruncateToWidth(word, width);
        w = DisplayWidth(word);
      }
      current = std::move(word);
      current_w = w;
    }
  }
  lines.push_back(std::move(current));
  return lines;
}

Tone VerdictTone(diagnose::Verdict verdict) {
  using diagnose::Verdict;
  switch (verdict) {
    case Verdict::kOk:
      return Tone::kGreen;
    case Verdict::kBusy:
    case Verdict::kReclaimable:
      return Tone::kYellow;
    case Verdict::kNeverFits:
      return Tone::kBoldRed;
    case Verdict::kDegraded:
      return Tone::kMagenta;
    case Verdict::kFault:
      return Tone::kBoldRed;
    case Verdict::kUnknown:
      return Tone::kDim;
  }
  return Tone::kPlain;
}

}  // namespace gw::render
