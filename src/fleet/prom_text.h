// PromText: writes the Prometheus text exposition format (version 0.0.4), the
// one place where metric names, label values and numbers are spelled for a
// scrape.
//
// Contract:
//   - Families are written whole: Family() opens one (its # HELP and # TYPE
//     lines), every Sample() until the next Family() belongs to it. A family
//     that gets no sample writes nothing at all, so an unknown value is a
//     missing series, never a 0.
//   - Label values are untrusted text (process names, users, job names): each
//     passes gw::SanitizeForTerminal (no control, bidirectional or invalid
//     UTF-8 byte survives), is cut at kMaxLabelColumns display columns, and is
//     then escaped as the format asks (\\, \", \n).
//   - Numbers print in the shortest form that reads back exactly; NaN and the
//     infinities as the format spells them.
#ifndef GPUWARDEN_FLEET_PROM_TEXT_H_
#define GPUWARDEN_FLEET_PROM_TEXT_H_

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace gw::fleet {

enum class MetricType { kGauge, kCounter, kHistogram };
std::string_view MetricTypeName(MetricType type);  // "gauge", "counter", "histogram"

// Name, value; in the order written.
using Labels = std::vector<std::pair<std::string_view, std::string>>;

inline constexpr int kMaxLabelColumns = 128;

// `raw` as a label value, quotes not included: sanitised, cut, escaped.
std::string LabelValue(std::string_view raw);

// A valid metric or label name: [a-zA-Z_:][a-zA-Z0-9_:]* (label names without ':').
bool IsMetricName(std::string_view name);
bool IsLabelName(std::string_view name);

class PromText {
 public:
  // REQUIRES: IsMetricName(name); `help` is one line of our own text.
  void Family(std::string_view name, MetricType type, std::string_view help);
  // A sample of the open family; `suffix` is appended to its name
  // ("_bucket", "_sum", "_count" for histograms).
  void Sample(const Labels& labels, double value, std::string_view suffix = {});
  // The text so far; the writer is empty afterwards.
  std::string Take();

 private:
  std::string out_;
  std::string name_;
  std::string header_;  // The open family's # lines, written with its first sample.
};

}  // namespace gw::fleet

#endif  // GPUWARDEN_FLEET_PROM_TEXT_H_
