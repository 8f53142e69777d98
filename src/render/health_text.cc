#include "render/health_text.h"

#include <algorithm>
#include <cctype>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "core/text.h"
#include "diagnose/health.h"
#include "render/styled_line.h"

namespace gw::render {
namespace {

using diagnose::GpuHealth;
using diagnose::Health;
using diagnose::HealthOfVerdict;
using diagnose::HealthReport;

// Log lines are not cut.
constexpr int kNoWidth = 1 << 20;

std::string_view LevelWord(Health h) {
  switch (h) {
    case Health::kFailed:
      return "FAULT";
    case Health::kDegraded:
      return "DEGRADED";
    case Health::kUnknown:
      return "UNKNOWN";
    case Health::kHealthy:
      return "OK";
  }
  return "UNKNOWN";
}

Tone LevelTone(Health h) {
  switch (h) {
    case Health::kFailed:
      return Tone::kBoldRed;
    case Health::kDegraded:
      return Tone::kMagenta;
    case Health::kUnknown:
      return Tone::kDim;
    case Health::kHealthy:
      return Tone::kGreen;
  }
  return Tone::kPlain;
}

// The codes of `findings`, each once, in order.
std::string CodesText(const std::vector<const diagnose::Finding*>& findings) {
  std::vector<std::string> codes;
  for (const diagnose::Finding* f : findings) {
    std::string code = SanitizeForTerminal(f->code);
    if (std::find(codes.begin(), codes.end(), code) == codes.end()) codes.push_back(code);
  }
  return codes.empty() ? std::string() : fmt::format(" [{}]", fmt::join(codes, ", "));
}

// "message — step; step [CODE, CODE]" from the worst finding and the others;
// for a GPU that could not be read and no finding says more, why it could not.
std::string Detail(const std::vector<const diagnose::Finding*>& findings, Health level,
                   Opt<unsigned> index, const std::string& unread_reason) {
  // Findings are ranked, the worst first: the first at the level explains it.
  const auto it = std::find_if(findings.begin(), findings.end(), [&](const diagnose::Finding* f) {
    return HealthOfVerdict(f->implies) == level;
  });
  if (it == findings.end()) {
    const std::string text = unread_reason.empty()
                                 ? std::string("no data (the probe did not reach this GPU)")
                                 : "not read: " + SanitizeForTerminal(unread_reason);
    return text + CodesText(findings);
  }
  const diagnose::Finding* top = *it;
  std::string text = SanitizeForTerminal(top->message);
  if (index) text = diagnose::MessageWithoutSubject(std::move(text), *index);
  std::vector<std::string> steps;
  for (size_t i = 0; i < top->next_steps.size() && i < 2; ++i) {
    steps.push_back(SanitizeForTerminal(top->next_steps[i]));
  }
  if (!steps.empty()) text += fmt::format(" — {}", fmt::join(steps, "; "));
  return text + CodesText(findings);
}

// The worst finding's message at `level`, its subject dropped, with the codes.
std::string ShortDetail(const std::vector<const diagnose::Finding*>& findings, Health level,
                        Opt<unsigned> index, const std::string& unread_reason) {
  const auto it = std::find_if(findings.begin(), findings.end(), [&](const diagnose::Finding* f) {
    return HealthOfVerdict(f->implies) == level;
  });
  if (it == findings.end()) {
    return (unread_reason.empty() ? std::string("no data")
                                  : "not read: " + SanitizeForTerminal(unread_reason)) +
           CodesText(findings);
  }
  std::string text = SanitizeForTerminal((*it)->message);
  if (index) text = diagnose::MessageWithoutSubject(std::move(text), *index);
  return text + CodesText(findings);
}

}  // namespace

std::string RenderHealthReason(const diagnose::Diagnosis& diagnosis, const Snapshot& latest,
                               int max_columns) {
  const HealthReport report = diagnose::AssessHealth(diagnosis.findings, latest);
  const GpuHealth* worst = nullptr;
  size_t others = 0;
  for (const GpuHealth& g : report.gpus) {
    if (g.health == Health::kHealthy) continue;
    if (worst == nullptr || g.health > worst->health) worst = &g;
    ++others;
  }
  std::string line;
  if (worst != nullptr && worst->health >= report.overall) {
    line = fmt::format(
        "GPU {} {}: {}", worst->index, LevelWord(worst->health),
        ShortDetail(worst->findings, worst->health, worst->index, worst->unread_reason));
    if (others > 1) line += fmt::format(" (+{} more GPU{})", others - 1, others == 2 ? "" : "s");
  } else {
    for (const diagnose::Finding* f : report.server) {
      const Health h = HealthOfVerdict(f->implies);
      if (h != report.overall) continue;
      line = fmt::format("node {}: {}", LevelWord(h), ShortDetail({f}, h, std::nullopt, ""));
      break;
    }
    if (line.empty() && report.overall != Health::kHealthy) {
      line = fmt::format("node {}: {}", LevelWord(report.overall),
                         diagnosis.summary.empty() ? std::string("nothing could be looked at")
                                                   : SanitizeForTerminal(diagnosis.summary));
    }
  }
  return TruncateToWidth(line, max_columns);
}

std::string RenderHealthText(const diagnose::Diagnosis& diagnosis, const Snapshot& latest,
                             bool verbose, bool color) {
  const HealthReport report = diagnose::AssessHealth(diagnosis.findings, latest);
  std::string out;
  const auto emit = [&](const StyledLine& l) {
    out += l.Render(kNoWidth, color);
    out += '\n';
  };
  unsigned healthy = 0;
  for (const GpuHealth& g : report.gpus) {
    if (g.health == Health::kHealthy) {
      ++healthy;
      continue;
    }
    StyledLine l;
    l.Add(fmt::format("GPU {} {} ", g.index,
                      g.pci_bus_id ? SanitizeForTerminal(*g.pci_bus_id) : std::string("N/A")));
    l.Add(std::string(LevelWord(g.health)) + ":", LevelTone(g.health));
    l.Add(" ");
    l.Add(Detail(g.findings, g.health, g.index, g.unread_reason));
    emit(l);
  }
  for (const diagnose::Finding* f : report.server) {
    const Health h = HealthOfVerdict(f->implies);
    if (h == Health::kHealthy && !verbose) continue;  // Notes (XID_APPLICATION, ...).
    emit(StyledLine()
             .Add("node ")
             .Add(std::string(LevelWord(h)) + ":", LevelTone(h))
             .Add(" " + Detail({f}, h, std::nullopt, "")));
  }
  if (report.overall == Health::kUnknown && out.empty()) {
    emit(StyledLine()
             .Add("node ")
             .Add("UNKNOWN:", LevelTone(Health::kUnknown))
             .Add(" " + (diagnosis.summary.empty() ? std::string("nothing could be looked at")
                                                   : SanitizeForTerminal(diagnosis.summary))));
  }
  if (verbose && !report.gpus.empty()) {
    const size_t n = report.gpus.size();
    if (healthy == n) {
      emit(StyledLine().Add(fmt::format("healthy: {} GPU{}", n, n == 1 ? "" : "s")));
    } else {
      emit(StyledLine().Add(fmt::format("healthy: {} of {} GPUs", healthy, n)));
    }
  }
  return out;
}

}  // namespace gw::render
