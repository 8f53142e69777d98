// History: the daemon's memory of the last 90 days, in three tiers:
//   tier 0: a point a second, kept an hour (also in memory, for the page and `why`);
//   tier 1: a point a minute (the mean of its seconds), kept 7 days;
//   tier 2: a point an hour (the mean of its minutes), kept 90 days.
// On disk that is at most 3,600 + 10,080 + 2,160 points (docs/metrics.md
// gives the bytes). The points reach the store as they are made; a restart
// loads the last hour and the open minute and hour back.
#ifndef GPUWARDEN_FLEET_HISTORY_H_
#define GPUWARDEN_FLEET_HISTORY_H_

#include <array>
#include <cstdint>
#include <deque>
#include <map>
#include <string>
#include <vector>

#include "core/result.h"
#include "fleet/history_point.h"
#include "fleet/history_store.h"

namespace gw::fleet {

struct HistoryTier {
  int step_s;
  int64_t keep_s;
};
inline constexpr std::array<HistoryTier, 3> kHistoryTiers = {
    {{1, 3600}, {60, 7 * 86400}, {3600, 90 * 86400}}};

class History {
 public:
  explicit History(HistoryStore& store) : store_(store) {}

  // Reads back what the store holds of the last hour and of the open minute
  // and hour, as of now_s.
  Status Load(int64_t now_s);

  // Adds a 1-second point (times must not go backwards: an older one is
  // ignored). A minute that has ended becomes a tier-1 point, an hour a
  // tier-2 point, and points past their tier's age are dropped. An error
  // from the store is returned; the point is kept in memory all the same.
  Status Add(const HistoryPoint& point);

  // The points from from_s until now_s, from the finest tier that reaches
  // back that far (its step is in each point), oldest first.
  Result<std::vector<HistoryPoint>> Since(int64_t from_s, int64_t now_s);

  // The last hour, a point a second.
  const std::deque<HistoryPoint>& recent() const { return seconds_; }

  // The trail that ends now, for the trends (fleet/trends.h): the 1-minute
  // points from from_s up to the minute of the oldest 1-second point, then
  // every 1-second point, oldest first and not overlapping. Reads tier 1 of
  // the store (the open minute is in the 1-second points).
  Result<std::vector<HistoryPoint>> Trail(int64_t from_s, int64_t now_s);

 private:
  Status CloseMinute();

  HistoryStore& store_;
  std::deque<HistoryPoint> seconds_;
  std::vector<HistoryPoint> minute_;  // 1-s points of the open minute.
  std::vector<HistoryPoint> hour_;    // 1-min points of the open hour.
  int64_t open_minute_ = -1;
  int64_t open_hour_ = -1;
};

// What each user held over `points`: sums over time.
struct UserUsage {
  double gpu_seconds = 0;       // GPUs held (with processes on them) × time.
  double idle_gpu_seconds = 0;  // Of it, GPUs where every process of the user sat idle.
  double vram_byte_seconds = 0;
  double idle_vram_byte_seconds = 0;
};
std::map<std::string, UserUsage> UsageOf(const std::vector<HistoryPoint>& points);

}  // namespace gw::fleet

#endif  // GPUWARDEN_FLEET_HISTORY_H_
