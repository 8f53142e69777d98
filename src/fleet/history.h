// History: the daemon's memory of the last 90 days, in three tiers:
//   tier 0: a point a second, kept an hour;
//   tier 1: a point a minute (the mean of its seconds), kept 7 days;
//   tier 2: a point an hour (the mean of its minutes), kept 90 days.
// On disk that is at most 3,600 + 10,080 + 2,160 points (docs/metrics.md
// gives the bytes). In memory only the open minute's 1-s points and the open
// hour's 1-min points are kept (at most 60 of each, whatever the history's
// length); a query reads the rest from the store, point by point.
//
// The 1-s points reach the store kWriteEvery at a time, in one transaction
// (and when their minute closes, and when the History is destroyed): a crash
// loses at most the last kWriteEvery - 1 seconds. A restart loads the open
// minute and hour back and closes what the last run left open.
#ifndef GPUWARDEN_FLEET_HISTORY_H_
#define GPUWARDEN_FLEET_HISTORY_H_

#include <array>
#include <cstdint>
#include <map>
#include <optional>
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
  // 1-s points written to the store together.
  static constexpr size_t kWriteEvery = 10;

  explicit History(HistoryStore& store) : store_(store) {}
  // Writes the 1-s points not written yet (an error is lost: call Flush to see it).
  ~History();
  History(const History&) = delete;
  History& operator=(const History&) = delete;

  // Reads back what the store holds of the open minute and hour, as of now_s,
  // and closes the minute and hour the last run left open.
  Status Load(int64_t now_s);

  // Adds a 1-second point (times must not go backwards: an older one is
  // ignored). A minute that has ended becomes a tier-1 point, an hour a
  // tier-2 point, and points past their tier's age are dropped. An error
  // from the store is returned; the point is kept in memory all the same
  // (until its minute closes), and written again with the next ones.
  Status Add(const HistoryPoint& point);

  // Writes the 1-s points not written yet.
  Status Flush();

  // The points from from_s until now_s, from the finest tier that reaches
  // back that far (its step is in each point), oldest first.
  Result<std::vector<HistoryPoint>> Since(int64_t from_s, int64_t now_s);
  // The same points, one at a time, without gathering them: a 7-day query
  // holds one point at a time. Stops at the first error `visit` returns.
  Status ForEachSince(int64_t from_s, int64_t now_s, const HistoryStore::Visitor& visit);

  // The trail that ends now, for the trends (fleet/trends.h): the 1-minute
  // points from from_s up to the minute of the oldest 1-second point of the
  // last hour, then every 1-second point of the last hour, oldest first and
  // not overlapping. Reads tiers 0 and 1 of the store (the open minute is in
  // the 1-second points).
  Result<std::vector<HistoryPoint>> Trail(int64_t from_s, int64_t now_s);

 private:
  Status CloseMinute();
  // The 1-s points with from_s <= time <= now_s: the store's, then those not
  // written yet.
  Status ForEachSecond(int64_t from_s, int64_t now_s, const HistoryStore::Visitor& visit);

  HistoryStore& store_;
  std::vector<HistoryPoint> minute_;  // 1-s points of the open minute.
  size_t written_ = 0;                // Of them, the first written_ are in the store.
  std::vector<HistoryPoint> hour_;    // 1-min points of the open hour.
  std::optional<int64_t> last_;       // The newest 1-s point's time.
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
// Adds what each user held over `point` to `usage`.
void AddUsage(std::map<std::string, UserUsage>& usage, const HistoryPoint& point);

}  // namespace gw::fleet

#endif  // GPUWARDEN_FLEET_HISTORY_H_
