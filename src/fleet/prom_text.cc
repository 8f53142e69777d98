#include "fleet/prom_text.h"

#include <cmath>

#include <fmt/format.h>

#include "core/text.h"

namespace gw::fleet {
namespace {

bool NameChar(char c, bool first, bool colon) {
  if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_') return true;
  if (colon && c == ':') return true;
  return !first && c >= '0' && c <= '9';
}

bool IsName(std::string_view name, bool colon) {
  if (name.empty()) return false;
  for (size_t i = 0; i < name.size(); ++i) {
    if (!NameChar(name[i], i == 0, colon)) return false;
  }
  return true;
}

std::string Number(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  return fmt::format("{}", v);
}

}  // namespace

std::string_view MetricTypeName(MetricType type) {
  switch (type) {
    case MetricType::kGauge:
      return "gauge";
    case MetricType::kCounter:
      return "counter";
    case MetricType::kHistogram:
      return "histogram";
  }
  return "untyped";
}

bool IsMetricName(std::string_view name) { return IsName(name, true); }
bool IsLabelName(std::string_view name) { return IsName(name, false); }

std::string LabelValue(std::string_view raw) {
  const std::string clean = TruncateToWidth(SanitizeForTerminal(raw), kMaxLabelColumns);
  std::string out;
  out.reserve(clean.size());
  for (char c : clean) {
    if (c == '\\' || c == '"') out.push_back('\\');
    out.push_back(c);  // No newline survives SanitizeForTerminal.
  }
  return out;
}

void PromText::Family(std::string_view name, MetricType type, std::string_view help) {
  name_ = std::string(name);
  header_ = fmt::format("# HELP {} {}\n# TYPE {} {}\n", name, help, name, MetricTypeName(type));
}

void PromText::Sample(const Labels& labels, double value, std::string_view suffix) {
  out_ += header_;
  header_.clear();
  out_ += name_;
  out_ += suffix;
  if (!labels.empty()) {
    out_.push_back('{');
    for (size_t i = 0; i < labels.size(); ++i) {
      if (i > 0) out_.push_back(',');
      out_ += labels[i].first;
      out_ += "=\"";
      out_ += LabelValue(labels[i].second);
      out_.push_back('"');
    }
    out_.push_back('}');
  }
  out_.push_back(' ');
  out_ += Number(value);
  out_.push_back('\n');
}

std::string PromText::Take() {
  header_.clear();
  name_.clear();
  return std::exchange(out_, std::string());
}

}  // namespace gw::fleet
