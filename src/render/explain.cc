#include "render/explain.h"

#include <algorithm>
#include <utility>

#include <fmt/format.h>

#include "core/edit_distance.h"
#include "core/text.h"
#include "diagnose/catalog.h"
#include "render/styled_line.h"

namespace gw::render {
namespace {

using diagnose::Actor;

std::string_view WhoActs(Actor a) {
  switch (a) {
    case Actor::kUser:
      return "you (the user asking)";
    case Actor::kOwner:
      return "the owner of the processes named";
    case Actor::kAdmin:
      return "the administrator (root)";
    case Actor::kVendor:
      return "NVIDIA / the hardware vendor (support case, RMA)";
  }
  return "?";
}

// Paragraphs of the catalog text (separated by blank lines).
std::vector<std::string_view> Paragraphs(std::string_view text) {
  std::vector<std::string_view> out;
  size_t pos = 0;
  while (pos <= text.size()) {
    const size_t end = text.find("\n\n", pos);
    std::string_view p = text.substr(pos, end == std::string_view::npos ? text.npos : end - pos);
    if (!p.empty()) out.push_back(p);
    if (end == std::string_view::npos) break;
    pos = end + 2;
  }
  return out;
}

}  // namespace

std::vector<std::string> CloseCodes(std::string_view code, size_t max) {
  const std::string want = AsciiUpper(code);
  std::vector<std::pair<size_t, std::string>> scored;
  for (const diagnose::FindingSpec& spec : diagnose::AllSpecs()) {
    const std::string_view c = spec.code;
    size_t score = EditDistance(want, c);
    const bool contains = !want.empty() && (c.find(want) != std::string_view::npos ||
                                            want.find(c) != std::string::npos);
    if (contains) score = std::min<size_t>(score, 1);
    const size_t limit = std::max<size_t>(2, want.size() / 3);
    if (score <= limit) scored.emplace_back(score, std::string(c));
  }
  std::stable_sort(scored.begin(), scored.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<std::string> out;
  for (size_t i = 0; i < scored.size() && i < max; ++i) out.push_back(scored[i].second);
  return out;
}

Result<std::string> RenderExplain(std::string_view code, bool color) {
  const diagnose::FindingSpec* spec = diagnose::FindSpec(AsciiUpper(code));
  if (spec == nullptr) {
    std::string message = fmt::format("unknown finding code '{}'", SanitizeForTerminal(code));
    const std::vector<std::string> close = CloseCodes(code);
    if (!close.empty()) {
      message += fmt::format("; did you mean {}?", fmt::join(close, ", "));
    } else {
      message += fmt::format(" ({} codes are known; docs/diagnosis.md lists them)",
                             diagnose::AllSpecs().size());
    }
    return MakeError("not_found", std::move(message));
  }
  std::string out;
  const auto emit = [&](const StyledLine& l) {
    out += l.Render(kExplainWidth, color);
    out += '\n';
  };
  const auto wrap = [&](std::string_view text, const std::string& indent) {
    for (const std::string& line :
         WrapWords(text, kExplainWidth - static_cast<int>(indent.size()))) {
      emit(StyledLine().Add(indent + line));
    }
  };
  // The headline wraps like the rest; the code is never cut.
  const std::string code_text(spec->code);
  const std::vector<std::string> head =
      WrapWords(code_text + " — " + std::string(spec->title), kExplainWidth - 2);
  for (size_t i = 0; i < head.size(); ++i) {
    StyledLine l;
    if (i == 0 && head[i].rfind(code_text, 0) == 0) {
      l.Add(code_text, Tone::kBold).Add(head[i].substr(code_text.size()));
    } else {
      l.Add((i == 0 ? "" : "  ") + head[i]);
    }
    emit(l);
  }
  const std::string verdict(diagnose::VerdictName(spec->implies));
  emit(StyledLine()
           .Add(fmt::format("severity {} · category {} · verdict ",
                            diagnose::SeverityName(spec->severity),
                            spec->category_source == diagnose::CategorySource::kXidCause
                                ? std::string("by the Xid's cause")
                                : std::string(diagnose::CategoryName(spec->category))))
           .Add(verdict, VerdictTone(spec->implies)));
  wrap(fmt::format("who acts: {}", WhoActs(spec->actor)), "");
  const std::vector<std::string_view> paragraphs = Paragraphs(spec->explanation);
  if (!paragraphs.empty()) {
    out += '\n';
    emit(StyledLine().Add("What triggers it:", Tone::kBold));
    wrap(paragraphs.front(), "  ");
  }
  const std::vector<std::string> steps = diagnose::SplitSteps(spec->next_steps);
  if (!steps.empty()) {
    out += '\n';
    emit(StyledLine().Add("What to do:", Tone::kBold));
    for (const std::string& step : steps) {
      const std::vector<std::string> lines = WrapWords(step, kExplainWidth - 4);
      for (size_t i = 0; i < lines.size(); ++i) {
        emit(StyledLine().Add(i == 0 ? "  - " : "    ").Add(lines[i], Tone::kCyan));
      }
    }
  }
  if (paragraphs.size() > 1) {
    out += '\n';
    emit(StyledLine().Add("Explanation:", Tone::kBold));
    for (size_t i = 1; i < paragraphs.size(); ++i) {
      if (i > 1) out += '\n';
      wrap(paragraphs[i], "  ");
    }
  }
  return out;
}

}  // namespace gw::render
