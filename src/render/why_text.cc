#include "render/why_text.h"

#include <algorithm>
#include <set>
#include <string_view>

#include <fmt/format.h>

#include "core/text.h"
#include "core/units.h"
#include "render/styled_line.h"
#include "render/summary.h"

namespace gw::render {
namespace {

using diagnose::Diagnosis;
using diagnose::Finding;
using diagnose::Severity;

constexpr int kFindingIndent = 4;

std::string_view SeverityMarker(Severity s) {
  switch (s) {
    case Severity::kCritical:
      return "✗";
    case Severity::kWarning:
      return "!";
    case Severity::kInfo:
      return "·";
  }
  return "?";
}

Tone SeverityTone(Severity s) {
  switch (s) {
    case Severity::kCritical:
      return Tone::kBoldRed;
    case Severity::kWarning:
      return Tone::kBoldYellow;
    case Severity::kInfo:
      return Tone::kDim;
  }
  return Tone::kPlain;
}

std::string JoinNumbers(const std::vector<unsigned>& v) {
  return v.empty() ? std::string("-") : fmt::format("{}", fmt::join(v, ","));
}

class WhyRenderer {
 public:
  WhyRenderer(const Diagnosis& d, const Snapshot& s, const WhyTextOptions& o)
      : d_(d), s_(s), o_(o), width_(std::max(o.width, 1)) {}

  std::string Render() {
    Headline();
    for (const diagnose::GpuVerdict& g : d_.gpus) {
      // Wrapped, not cut: the finding codes are at the end of the line.
      EmitWrapped(SanitizeForTerminal(g.line), "  ", 4, VerdictTone(g.verdict));
    }
    Findings();
    Users();
    OverTime();
    Footer();
    return out_;
  }

 private:
  void Emit(const StyledLine& line) {
    out_ += line.Render(width_, o_.color);
    out_ += '\n';
  }
  void Blank() { out_ += '\n'; }

  // `first` prefix on the first line, `indent` spaces before the others.
  void EmitWrapped(std::string_view text, const std::string& first, int indent, Tone tone,
                   Tone prefix_tone = Tone::kPlain) {
    const std::vector<std::string> lines =
        WrapWords(text, width_ - DisplayWidth(first), width_ - indent);
    for (size_t i = 0; i < lines.size(); ++i) {
      StyledLine l;
      if (i == 0) {
        l.Add(first, prefix_tone);
      } else {
        l.Add(std::string(static_cast<size_t>(indent), ' '));
      }
      l.Add(lines[i], tone);
      Emit(l);
    }
  }

  void Headline() {
    const std::string verdict(diagnose::VerdictName(d_.server));
    std::string summary = SanitizeForTerminal(d_.summary);
    // The engine's summary starts with the verdict; say it once either way.
    if (summary.rfind(verdict, 0) != 0) {
      summary = summary.empty() ? verdict : verdict + " — " + summary;
    }
    const Tone tone = VerdictTone(d_.server);
    // The headline is never cut: continuation lines keep the whole summary.
    EmitWrapped(summary, "", 2, tone == Tone::kDim ? Tone::kDim : tone);
  }

  std::string WhoActs(const Finding& f) const {
    switch (f.actor) {
      case diagnose::Actor::kUser:
        return "you";
      case diagnose::Actor::kOwner: {
        if (f.pids.empty()) return "the owner of the processes";
        std::set<std::string> users;
        for (pid_t pid : f.pids) users.insert(SanitizeForTerminal(UserLabel(s_, pid)));
        users.erase("?");
        std::string who = users.empty() ? "the owner" : fmt::format("{}", fmt::join(users, ", "));
        return fmt::format("{} (owner of PID{} {})", who, f.pids.size() == 1 ? "" : "s",
                           fmt::join(f.pids, ", "));
      }
      case diagnose::Actor::kAdmin:
        return "the administrator (root)";
      case diagnose::Actor::kVendor:
        return "NVIDIA / the hardware vendor (support case, RMA)";
    }
    return "?";
  }

  void OneFinding(const Finding& f) {
    const std::string first =
        fmt::format("{} {}  ", SeverityMarker(f.severity), SanitizeForTerminal(f.code));
    EmitWrapped(SanitizeForTerminal(f.message), first, 2, Tone::kPlain, SeverityTone(f.severity));
    const std::string pad(kFindingIndent, ' ');
    for (const diagnose::Evidence& e : f.evidence) {
      const std::string name = SanitizeForTerminal(e.name) + ": ";
      EmitWrapped(SanitizeForTerminal(e.value), pad + name, kFindingIndent + DisplayWidth(name),
                  Tone::kPlain, Tone::kDim);
    }
    const size_t steps =
        o_.verbose ? f.next_steps.size() : std::min(f.next_steps.size(), kWhyCompactSteps);
    for (size_t i = 0; i < steps; ++i) {
      const std::string prefix = pad + (i == 0 ? "next: " : "      ");
      EmitWrapped(SanitizeForTerminal(f.next_steps[i]), prefix, kFindingIndent + 8, Tone::kCyan,
                  Tone::kBold);
    }
    if (steps < f.next_steps.size()) {
      const size_t more = f.next_steps.size() - steps;
      Emit(StyledLine().Add(
          pad + fmt::format("      (+{} more step{}: --verbose)", more, more == 1 ? "" : "s"),
          Tone::kDim));
    }
    EmitWrapped(WhoActs(f), pad + "who acts: ", kFindingIndent + 10, Tone::kPlain, Tone::kDim);
  }

  void Findings() {
    if (d_.findings.empty()) return;
    Blank();
    const size_t shown =
        o_.verbose ? d_.findings.size() : std::min(d_.findings.size(), kWhyCompactFindings);
    Emit(StyledLine().Add(shown == d_.findings.size()
                              ? fmt::format("Findings ({}):", d_.findings.size())
                              : fmt::format("Findings (top {} of {}):", shown, d_.findings.size()),
                          Tone::kBold));
    for (size_t i = 0; i < shown; ++i) OneFinding(d_.findings[i]);
    if (shown < d_.findings.size()) {
      std::vector<std::string> rest;
      for (size_t i = shown; i < d_.findings.size(); ++i) {
        rest.push_back(SanitizeForTerminal(d_.findings[i].code));
      }
      EmitWrapped(fmt::format("{}; --verbose shows them", fmt::join(rest, ", ")),
                  fmt::format("  +{} more: ", rest.size()), 4, Tone::kDim, Tone::kDim);
    }
  }

  void Users() {
    if (d_.users.empty()) return;
    Blank();
    int user_cols = 4;
    for (const diagnose::UserHolding& u : d_.users) {
      user_cols = std::max(user_cols, DisplayWidth(SanitizeForTerminal(u.user)));
    }
    const bool cut = width_ < kUnlimitedWidth;  // No width: every cell whole.
    if (cut) user_cols = std::min(user_cols, 16);
    auto cell = [cut](std::string_view text, int columns) {
      return cut ? PadRight(text, columns) : PadRightUncut(text, columns);
    };
    Emit(StyledLine().Add("Holdings:", Tone::kBold));
    Emit(StyledLine().Add("  " + PadRight("USER", user_cols) + "  " + PadRight("GPUS", 9) + "  " +
                              PadLeft("VRAM", 10) + "  " + PadLeft("IDLE", 10) + "  PIDS",
                          Tone::kDim));
    for (const diagnose::UserHolding& u : d_.users) {
      const bool none_known = u.vram_bytes == 0 && u.memory_unknown > 0;
      std::string vram = none_known ? "N/A" : FormatBytes(u.vram_bytes);
      std::string idle = none_known ? "N/A" : FormatBytes(u.idle_vram_bytes);
      StyledLine l;
      l.Add("  " + cell(SanitizeForTerminal(u.user), user_cols) + "  ");
      l.Add(cell(JoinNumbers(u.gpus), 9) + "  " + PadLeft(vram, 10) + "  ");
      l.Add(PadLeft(idle, 10), u.idle_vram_bytes > 0 ? Tone::kYellow : Tone::kPlain);
      l.Add(fmt::format("  {}", fmt::join(u.pids, ",")));
      if (u.memory_unknown > 0 && !none_known) {
        l.Add(fmt::format("  (+{} of unknown size)", u.memory_unknown), Tone::kDim);
      }
      Emit(l);
    }
  }

  void OverTime() {
    if (o_.trends == nullptr) return;
    const diagnose::Trends& t = *o_.trends;
    std::vector<std::pair<std::string, Tone>> lines;
    for (const diagnose::GpuTrend& g : t.gpus) {
      if (g.idle_held) {
        lines.emplace_back(fmt::format("GPU {} held and idle {}", g.index,
                                       diagnose::RunText(*g.idle_held, t.as_of_unix_s)),
                           Tone::kYellow);
      }
      if (g.memory_full) {
        lines.emplace_back(fmt::format("GPU {} memory full {}", g.index,
                                       diagnose::RunText(*g.memory_full, t.as_of_unix_s)),
                           Tone::kPlain);
      }
    }
    // A queue that stayed empty says nothing worth a line.
    if (t.queue && t.queue->peak > 0) {
      lines.emplace_back(QueueText(*t.queue, t.as_of_unix_s), Tone::kPlain);
    }
    if (lines.empty()) return;
    Blank();
    Emit(StyledLine().Add("Over time", Tone::kBold).Add(" (gpuwardend's history):", Tone::kDim));
    for (const auto& [text, tone] : lines) EmitWrapped(text, "  ", 4, tone);
  }

  // "the queue grew from 3 to 19 waiting jobs in the last 1h (peak 21)".
  static std::string QueueText(const diagnose::QueueTrend& q, int64_t as_of) {
    const std::string span = FormatDuration(static_cast<double>(as_of - q.then_unix_s));
    const auto n = [](double v) { return fmt::format("{:.0f}", v); };
    const std::string peak =
        q.peak > std::max(q.waiting_now, q.waiting_then) ? " (peak " + n(q.peak) + ")" : "";
    if (q.waiting_now == q.waiting_then) {
      return fmt::format("the queue held {} waiting {} through the last {}{}", n(q.waiting_now),
                         q.waiting_now == 1 ? "job" : "jobs", span, peak);
    }
    return fmt::format("the queue {} from {} to {} waiting {} in the last {}{}",
                       q.waiting_now > q.waiting_then ? "grew" : "shrank", n(q.waiting_then),
                       n(q.waiting_now), q.waiting_now == 1 ? "job" : "jobs", span, peak);
  }

  void Footer() {
    std::vector<std::string> parts;
    if (s_.source == SnapshotSource::kXmlDump) {
      parts.push_back("offline: nvidia-smi dump " + (s_.source_detail.empty()
                                                         ? std::string("(unnamed)")
                                                         : SanitizeForTerminal(s_.source_detail)));
      parts.push_back("judged from its one sample (idleness needs a window: not claimed)");
    } else {
      if (s_.source == SnapshotSource::kSimulated) {
        parts.push_back("SIMULATED server (scenario " +
                        (s_.source_detail.empty() ? std::string("unknown")
                                                  : SanitizeForTerminal(s_.source_detail)) +
                        ")");
      }
      if (o_.samples <= 1) {
        parts.push_back("judged from 1 sample");
      } else {
        parts.push_back(
            fmt::format("judged from {} samples over {:.1f} s", o_.samples, o_.window_s));
      }
    }
    if (o_.kernel_log_sources.empty()) {
      parts.push_back(o_.kernel_log_note.empty() ? std::string("kernel log not read")
                                                 : SanitizeForTerminal(o_.kernel_log_note));
    } else {
      std::vector<std::string> sources;
      for (const std::string& src : o_.kernel_log_sources)
        sources.push_back(SanitizeForTerminal(src));
      parts.push_back(fmt::format("kernel log: {}", fmt::join(sources, ", ")));
    }
    if (o_.trends != nullptr && o_.trends->as_of_unix_s > 0) {
      parts.push_back("history: gpuwardend's, the last " +
                      FormatDuration(static_cast<double>(o_.trends->as_of_unix_s -
                                                         o_.trends->covered_from_unix_s)));
    } else if (!o_.trends_note.empty()) {
      parts.push_back(SanitizeForTerminal(o_.trends_note));
    }
    Blank();
    EmitWrapped(fmt::format("{}", fmt::join(parts, " · ")), "", 0, Tone::kDim);
  }

  const Diagnosis& d_;
  const Snapshot& s_;
  const WhyTextOptions& o_;
  const int width_;
  std::string out_;
};

}  // namespace

std::string RenderWhyText(const Diagnosis& diagnosis, const Snapshot& latest,
                          const WhyTextOptions& options) {
  return WhyRenderer(diagnosis, latest, options).Render();
}

}  // namespace gw::render
