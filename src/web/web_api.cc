#include "web/web_api.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <string_view>
#include <utility>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/json_out.h"
#include "render/status_json.h"

namespace gw::web {
namespace {

using nlohmann::json;

// The steps a chart's points may stand for: round figures on a time axis.
constexpr std::array<int, 18> kSteps = {1,   2,   5,    10,   15,   30,    60,    120,   300,
                                        600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400};

std::optional<int64_t> WholeNumber(std::string_view text) {
  int64_t v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return v;
}

int64_t Floor(int64_t t, int64_t step) {
  return t >= 0 ? t / step * step : -((-t + step - 1) / step) * step;
}

}  // namespace

std::string StatusApiText(const Snapshot* latest, const diagnose::Diagnosis* diagnosis,
                          const render::WhyJsonContext& context, const PageFacts& facts) {
  json doc = {{"schema", kWebStatusSchemaName},
              {"schema_version", kWebSchemaVersion},
              {"sampling_ms", facts.sampling_ms},
              {"queue", facts.queue},
              {"version", facts.version},
              {"status", nullptr},
              {"why", nullptr}};
  if (latest != nullptr && diagnosis != nullptr) {
    doc["status"] = render::StatusJson(*latest);
    doc["why"] = render::WhyJson(*diagnosis, *latest, context);
  }
  return DumpJsonForTerminal(doc, /*pretty=*/false, kWebStatusSchemaName);
}

Result<HistoryQuery> ParseHistoryQuery(const std::map<std::string, std::string>& params,
                                       int64_t now_s) {
  auto number = [&](const char* name, int64_t fallback, int64_t lo, int64_t hi,
                    const char* what) -> Result<int64_t> {
    auto it = params.find(name);
    if (it == params.end()) return fallback;
    std::optional<int64_t> v = WholeNumber(it->second);
    if (!v || *v < lo || *v > hi) {
      return MakeError("usage", fmt::format("{}: expected {}", name, what));
    }
    return *v;
  };
  Result<int64_t> since =
      number("since_s", 3600, 1, kHistoryMaxSinceS, "whole seconds from 1 to 7776000 (90 days)");
  if (!since.ok()) return since.error();
  Result<int64_t> until =
      number("until_s", 0, 0, *since - 1, "whole seconds from 0 (now) to less than since_s");
  if (!until.ok()) return until.error();
  Result<int64_t> points = number("points", kHistoryDefaultPoints, 10, kHistoryMaxPoints,
                                  "a whole number from 10 to 2000");
  if (!points.ok()) return points.error();
  Result<int64_t> after =
      number("after_unix_s", 0, 0, int64_t{1} << 40, "a Unix time in whole seconds");
  if (!after.ok()) return after.error();
  bool users = false;
  if (auto it = params.find("users"); it != params.end()) {
    if (it->second != "0" && it->second != "1") return MakeError("usage", "users: expected 0 or 1");
    users = it->second == "1";
  }
  HistoryQuery q;
  q.from_s = now_s - *since;
  q.to_s = now_s - *until;
  q.users = users;
  q.after_s = *after;
  const int64_t wanted = (q.to_s - q.from_s + *points - 1) / *points;
  q.step_s = kSteps.back();
  for (int s : kSteps) {
    if (s >= wanted) {
      q.step_s = s;
      break;
    }
  }
  return q;
}

void HistoryWindow::Add(fleet::HistoryPoint&& p) {
  if (p.time_s < q_.from_s || p.time_s > q_.to_s) return;
  if (!q_.users) p.users.clear();
  // A coarser tier's point (1 min, 1 h) is never split: its step wins.
  const int step = std::max(q_.step_s, p.step_s);
  const int64_t at = Floor(p.time_s, step);
  if (!open_.empty() && (at != open_at_ || step != open_step_)) Close();
  if (open_.empty()) {
    open_at_ = at;
    open_step_ = step;
  }
  open_.push_back(std::move(p));
}

void HistoryWindow::Close() {
  if (open_.empty()) return;
  if (open_at_ < q_.after_s) {  // The reader has this step already.
    open_.clear();
    return;
  }
  fleet::HistoryPoint merged = open_.size() == 1 && open_.front().step_s == open_step_
                                   ? std::move(open_.front())
                                   : fleet::Downsample(open_, open_at_, open_step_);
  open_.clear();
  if (!first_) points_ += ',';
  first_ = false;
  fleet::AppendPointJson(points_, merged);
}

std::string HistoryWindow::Finish() {
  Close();
  return fmt::format(
      R"({{"schema":"{}","schema_version":{},"from_unix_s":{},"to_unix_s":{},"step_s":{},"points":[{}]}})",
      kWebHistorySchemaName, kWebSchemaVersion, q_.from_s, q_.to_s, q_.step_s, points_);
}

}  // namespace gw::web
