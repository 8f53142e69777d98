// The trends of gpuwardend's history (diagnose/trends.h): the runs of "held
// and idle" and "memory full" that reach the newest point, GPU by GPU, and
// the queue's length over the last hour; and their form on the socket and
// in `why --json` (docs/json.md "trends").
#ifndef GPUWARDEN_FLEET_TRENDS_H_
#define GPUWARDEN_FLEET_TRENDS_H_

#include <span>

#include <nlohmann/json.hpp>

#include "core/result.h"
#include "diagnose/rules.h"
#include "diagnose/trends.h"
#include "fleet/history_point.h"

namespace gw::fleet {

// From `points` (oldest first, steps may mix: 1-min points, then 1-s ones,
// not overlapping; History::Trail gives them so). A run breaks at a point
// that does not show the state, at an unknown reading, and at a gap longer
// than three steps (the daemon was not running), where it is marked open.
// Runs shorter than diagnose::kTrendMinRunS are left out. The queue trend
// reads the points of the last hour before the newest one. No points: a
// Trends with nothing in it (as_of 0). Pure.
diagnose::Trends TrendsOf(std::span<const HistoryPoint> points,
                          const diagnose::DiagnoseOptions& options);

nlohmann::json TrendsToJson(const diagnose::Trends& trends);
// Errors: "malformed", naming the field.
Result<diagnose::Trends> TrendsFromJson(const nlohmann::json& j);

}  // namespace gw::fleet

#endif  // GPUWARDEN_FLEET_TRENDS_H_
