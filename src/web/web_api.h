// The JSON API behind the web page (docs/json.md, "The web API"): what each
// /api/... path answers, built from the documents the CLI already renders
// (status --json, why --json, the socket's queue and history replies). Pure:
// the daemon hands in what it holds and serves the text.
#ifndef GPUWARDEN_WEB_WEB_API_H_
#define GPUWARDEN_WEB_WEB_API_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/result.h"
#include "core/snapshot.h"
#include "diagnose/verdict.h"
#include "fleet/history_point.h"
#include "render/why_json.h"

namespace gw::web {

inline constexpr char kWebStatusSchemaName[] = "gpuwarden.web.status";
inline constexpr char kWebHistorySchemaName[] = "gpuwarden.web.history";
inline constexpr int kWebSchemaVersion = 1;

// What the page needs to know of the daemon itself.
struct PageFacts {
  int64_t sampling_ms = 1000;  // How often a full look is judged: the page polls this often.
  bool queue = false;          // The daemon runs its queue (else /api/queue answers no_queue).
  std::string version;         // gpuwardend's.
};

// /api/status: {"schema": "gpuwarden.web.status", "schema_version": 1,
// "sampling_ms", "queue", "version", "status": the status document,
// "why": the why document} of the latest judged look; "status" and "why"
// are null before the first look (latest or diagnosis null). Dumped as the
// CLI dumps its documents (DumpJsonForTerminal). Never throws but bad_alloc.
std::string StatusApiText(const Snapshot* latest, const diagnose::Diagnosis* diagnosis,
                          const render::WhyJsonContext& context, const PageFacts& facts);

// A window of the history: /api/history?since_s=S&until_s=U&points=N&users=1.
struct HistoryQuery {
  int64_t from_s = 0;  // Unix seconds, both ends included.
  int64_t to_s = 0;
  int step_s = 1;      // Each point returned stands for this long (at least the tier's step).
  bool users = false;  // Keep each point's users (else "users" is []: the chart needs none).
  // Only the steps that start at or after this (a reader that holds the
  // window's older steps asks for the new ones); the step stays the window's.
  int64_t after_s = 0;
};
inline constexpr int64_t kHistoryMaxSinceS = 90 * 86400;  // The history's longest tier.
inline constexpr int kHistoryDefaultPoints = 360;
inline constexpr int kHistoryMaxPoints = 2000;
// since_s: the window's start, seconds before now (default 3600, at most 90
// days); until_s: its end, seconds before now (default 0, less than since_s);
// points: at most this many points (default 360, 10 to 2000), the step
// rounded up to 1, 2, 5, 10, 15, 30 s, 1, 2, 5, 10, 15, 30 min, 1, 2, 3, 6,
// 12 h or 1 day; users: "1" keeps the users; after_unix_s: only the steps
// from this Unix second on (within the window). Errors: "usage", naming the
// parameter and what it must be.
Result<HistoryQuery> ParseHistoryQuery(const std::map<std::string, std::string>& params,
                                       int64_t now_s);

// Gathers the history's points (oldest first, as History::ForEachSince gives
// them) into the query's steps: each step's points downsampled into one
// (fleet::Downsample: the means), points outside the window left out.
class HistoryWindow {
 public:
  explicit HistoryWindow(const HistoryQuery& query) : q_(query) {}
  void Add(fleet::HistoryPoint&& point);
  // {"schema": "gpuwarden.web.history", "schema_version": 1, "from_unix_s",
  // "to_unix_s", "step_s", "points": [point as the socket's history op
  // writes it (docs/protocol.md)]}. Call once.
  std::string Finish();

 private:
  void Close();
  HistoryQuery q_;
  std::vector<fleet::HistoryPoint> open_;  // The points of the step being gathered.
  int64_t open_at_ = 0;
  int open_step_ = 0;
  std::string points_;  // The finished points, as JSON text.
  bool first_ = true;
};

}  // namespace gw::web

#endif  // GPUWARDEN_WEB_WEB_API_H_
