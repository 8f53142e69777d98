// `gpuwarden history` and `gpuwarden usage` as text and CSV: pure functions of
// the daemon's replies (fleet::HistoryPoint, docs/protocol.md "usage").
#ifndef GPUWARDEN_RENDER_HISTORY_TEXT_H_
#define GPUWARDEN_RENDER_HISTORY_TEXT_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "fleet/history_point.h"

namespace gw::render {

// A sparkline of `values` (NaN: unknown, shown as a space) squeezed into
// `columns` cells, each the mean of the values it covers, on a scale from
// `low` to `high`: ▁▂▃▄▅▆▇█.
std::string Sparkline(const std::vector<double>& values, int columns, double low, double high);

// Per GPU (all, or `gpu`): utilisation and memory over time as sparklines,
// with min / mean / max and the latest value, and the span they cover.
std::string HistoryText(const std::vector<fleet::HistoryPoint>& points, std::optional<unsigned> gpu,
                        int columns);

// One line per point and GPU: time_unix_s,step_s,gpu,util_pct,mem_used_bytes,
// mem_total_bytes,power_w,temp_c,state (unknown: empty).
std::string HistoryCsv(const std::vector<fleet::HistoryPoint>& points, std::optional<unsigned> gpu);

// The "usage" reply as a table, most GPU-hours first.
std::string UsageText(const nlohmann::json& usage_reply);

}  // namespace gw::render

#endif  // GPUWARDEN_RENDER_HISTORY_TEXT_H_
