#include "fleet/history.h"

#include <algorithm>
#include <cstdint>

namespace gw::fleet {
namespace {

int64_t Floor(int64_t t, int64_t step) {
  return t >= 0 ? t / step * step : -((-t + step - 1) / step) * step;
}

}  // namespace

// Closes, from the store, the tier-`tier` point at `at` (step `step`) from
// the finer tier's points, when the last run stopped before it could.
static Status CloseFromStore(HistoryStore& store, int finer, int tier, int64_t at, int step) {
  Result<std::vector<HistoryPoint>> have = store.Read(tier, at, at + 1);
  if (!have.ok()) return have.error();
  if (!have->empty()) return Status::Ok();
  Result<std::vector<HistoryPoint>> parts = store.Read(finer, at, at + step);
  if (!parts.ok()) return parts.error();
  if (parts->empty()) return Status::Ok();
  return store.Append(tier, Downsample(*parts, at, step));
}

Status History::Load(int64_t now_s) {
  seconds_.clear();
  minute_.clear();
  hour_.clear();
  open_minute_ = Floor(now_s, 60);
  open_hour_ = Floor(now_s, 3600);
  // Every 1-s point the store still has: the last run may have stopped long
  // ago, mid-minute and mid-hour; what it left open is closed first.
  Result<std::vector<HistoryPoint>> recent = store_.Read(0, INT64_MIN, now_s + 1);
  if (!recent.ok()) return recent.error();
  if (!recent->empty() && Floor(recent->back().time_s, 60) < open_minute_) {
    const int64_t m = Floor(recent->back().time_s, 60);
    if (Status s = CloseFromStore(store_, 0, 1, m, 60); !s.ok()) return s;
    if (Floor(m, 3600) < open_hour_) {
      if (Status s = CloseFromStore(store_, 1, 2, Floor(m, 3600), 3600); !s.ok()) return s;
    }
  }
  for (HistoryPoint& p : *recent) {
    if (p.time_s < now_s - kHistoryTiers[0].keep_s) continue;
    if (p.time_s >= open_minute_) minute_.push_back(p);
    seconds_.push_back(std::move(p));
  }
  if (Status s = store_.Prune(0, now_s - kHistoryTiers[0].keep_s); !s.ok()) return s;
  Result<std::vector<HistoryPoint>> minutes = store_.Read(1, open_hour_, open_minute_);
  if (!minutes.ok()) return minutes.error();
  hour_ = std::move(*minutes);
  return Status::Ok();
}

Status History::CloseMinute() {
  Status result;
  if (!minute_.empty()) {
    HistoryPoint m = Downsample(minute_, open_minute_, 60);
    if (Status s = store_.Append(1, m); !s.ok()) result = s;
    const int64_t h = Floor(open_minute_, 3600);
    if (open_hour_ != -1 && h != open_hour_ && !hour_.empty()) {
      if (Status s = store_.Append(2, Downsample(hour_, open_hour_, 3600)); !s.ok() && result.ok())
        result = s;
      hour_.clear();
    }
    open_hour_ = h;
    hour_.push_back(std::move(m));
  }
  minute_.clear();
  const int64_t now = open_minute_ + 60;
  for (int tier = 0; tier < static_cast<int>(kHistoryTiers.size()); ++tier) {
    if (Status s = store_.Prune(tier, now - kHistoryTiers[tier].keep_s); !s.ok() && result.ok())
      result = s;
  }
  return result;
}

Status History::Add(const HistoryPoint& point) {
  if (!seconds_.empty() && point.time_s <= seconds_.back().time_s) return Status::Ok();
  Status result = store_.Append(0, point);
  const int64_t m = Floor(point.time_s, 60);
  if (open_minute_ != -1 && m != open_minute_) {
    if (Status s = CloseMinute(); !s.ok() && result.ok()) result = s;
  }
  if (open_hour_ != -1 && Floor(m, 3600) != open_hour_ && !hour_.empty()) {
    // The hour ended while no minute closed into the next one (a gap).
    if (Status s = store_.Append(2, Downsample(hour_, open_hour_, 3600)); !s.ok() && result.ok())
      result = s;
    hour_.clear();
    open_hour_ = Floor(m, 3600);
  }
  open_minute_ = m;
  minute_.push_back(point);
  seconds_.push_back(point);
  while (!seconds_.empty() && seconds_.front().time_s < point.time_s - kHistoryTiers[0].keep_s) {
    seconds_.pop_front();
  }
  return result;
}

Result<std::vector<HistoryPoint>> History::Since(int64_t from_s, int64_t now_s) {
  if (from_s >= now_s - kHistoryTiers[0].keep_s) {
    std::vector<HistoryPoint> out;
    for (const HistoryPoint& p : seconds_) {
      if (p.time_s >= from_s && p.time_s <= now_s) out.push_back(p);
    }
    return out;
  }
  const int tier = from_s >= now_s - kHistoryTiers[1].keep_s ? 1 : 2;
  Result<std::vector<HistoryPoint>> out = store_.Read(tier, from_s, now_s + 1);
  if (!out.ok()) return out;
  // The open minute (tier 1) or hour (tier 2), as far as it has come.
  if (tier == 1 && !minute_.empty()) out->push_back(Downsample(minute_, open_minute_, 60));
  if (tier == 2 && !hour_.empty()) out->push_back(Downsample(hour_, open_hour_, 3600));
  return out;
}

Result<std::vector<HistoryPoint>> History::Trail(int64_t from_s, int64_t now_s) {
  const int64_t seconds_from = seconds_.empty() ? now_s + 1 : Floor(seconds_.front().time_s, 60);
  Result<std::vector<HistoryPoint>> out = store_.Read(1, from_s, std::max(from_s, seconds_from));
  if (!out.ok()) return out;
  for (const HistoryPoint& p : seconds_) {
    if (p.time_s <= now_s) out->push_back(p);
  }
  return out;
}

std::map<std::string, UserUsage> UsageOf(const std::vector<HistoryPoint>& points) {
  std::map<std::string, UserUsage> out;
  for (const HistoryPoint& p : points) {
    for (const UserPoint& u : p.users) {
      UserUsage& t = out[u.user];
      t.gpu_seconds += u.gpus * p.step_s;
      t.idle_gpu_seconds += u.idle_gpus * p.step_s;
      t.vram_byte_seconds += u.vram_bytes * p.step_s;
      t.idle_vram_byte_seconds += u.idle_vram_bytes * p.step_s;
    }
  }
  return out;
}

}  // namespace gw::fleet
