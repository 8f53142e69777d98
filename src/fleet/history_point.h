// HistoryPoint: what the daemon keeps of one moment (docs/metrics.md,
// "History"): per GPU its utilisation, memory, power, temperature and state;
// per user what they held and how much of it sat idle; the queue's length.
// A point of a coarser tier (1 min, 1 h) is the mean of the finer points it
// covers, so sums over time (GPU-hours, byte-hours) stay the same in every
// tier. Unknown values are NaN in memory and null in JSON, never 0.
#ifndef GPUWARDEN_FLEET_HISTORY_POINT_H_
#define GPUWARDEN_FLEET_HISTORY_POINT_H_

#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/result.h"
#include "core/snapshot.h"
#include "diagnose/verdict.h"
#include "fleet/fleet_view.h"

namespace gw::fleet {

inline constexpr double kUnknown = std::numeric_limits<double>::quiet_NaN();

struct GpuPoint {
  unsigned index = 0;
  double util_pct = kUnknown;
  double mem_used_bytes = kUnknown;
  double mem_total_bytes = kUnknown;
  double power_w = kUnknown;
  double temp_c = kUnknown;
  // diagnose::GpuState as a number; over a coarse point, the worst state seen
  // (the order of GpuState: free < in use < busy < reclaimable < degraded <
  // fault < unknown). Unset: not judged.
  std::optional<int> state;
};

struct UserPoint {
  std::string user;
  double gpus = 0;        // GPUs on which the user holds processes (a mean over a coarse point).
  double idle_gpus = 0;   // Of them, GPUs where all of the user's processes sit idle.
  double vram_bytes = 0;  // GPU memory held, all GPUs.
  double idle_vram_bytes = 0;
};

struct HistoryPoint {
  int64_t time_s = 0;            // Unix seconds: the moment, or the start of the minute or hour.
  int step_s = 1;                // The time the point stands for: 1, 60 or 3600.
  std::vector<GpuPoint> gpus;    // By index.
  std::vector<UserPoint> users;  // By user.
  double queued = kUnknown;      // Jobs waiting (queued, held), when the daemon runs its queue.
  double running = kUnknown;
};

// One 1-second point from a full look and its diagnosis. Pure.
HistoryPoint PointOf(const Snapshot& latest, const diagnose::Diagnosis& diagnosis,
                     const std::optional<QueueStats>& queue);

// `points` (all within [time_s, time_s + step_s)) as one point of `step_s`:
// each GPU value the mean of the points that knew it, each user's the
// time-weighted mean over the whole step (a user absent from a point, or a
// second with no point, held nothing), so user sums over time are kept.
// Empty input: a point with no GPUs and no users.
HistoryPoint Downsample(std::span<const HistoryPoint> points, int64_t time_s, int step_s);

nlohmann::json PointToJson(const HistoryPoint& p);
// Errors: "malformed", naming the field.
Result<HistoryPoint> PointFromJson(const nlohmann::json& j);

// `p` as JSON text appended to `out`, written directly (no document): the same
// JSON values as PointToJson(p), keys in the same order, user names as valid
// UTF-8. For replies of thousands of points, written point by point.
void AppendPointJson(std::string& out, const HistoryPoint& p);

// The compact form the history store keeps (docs/metrics.md, "History"):
// little-endian, doubles bit for bit, about 0.9 KB for 8 GPUs and 12 users
// against 2.1 KB of JSON, and read back without parsing text.
//   u8 version (1), i64 time_s, i32 step_s, f64 queued, f64 running,
//   u16 GPUs, each: u32 index, f64 util_pct, mem_used_bytes, mem_total_bytes,
//     power_w, temp_c, i8 state (-1: unset),
//   u16 users, each: u16 name length, the name's bytes, f64 gpus, idle_gpus,
//     vram_bytes, idle_vram_bytes.
// A point with more than 65,535 GPUs or users, or a name longer than 65,535
// bytes, keeps the first 65,535.
void AppendPointBinary(std::string& out, const HistoryPoint& p);
// Errors: "malformed": a short, overlong or unknown-version record, or a
// state out of range.
Result<HistoryPoint> PointFromBinary(std::string_view bytes);

}  // namespace gw::fleet

#endif  // GPUWARDEN_FLEET_HISTORY_POINT_H_
