#include "fleet/history.h"

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <span>

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

History::~History() { (void)Flush(); }

Status History::Load(int64_t now_s) {
  minute_.clear();
  written_ = 0;
  hour_.clear();
  last_.reset();
  open_minute_ = Floor(now_s, 60);
  open_hour_ = Floor(now_s, 3600);
  // The last run may have stopped long ago, mid-minute and mid-hour; what it
  // left open is closed first.
  Result<std::optional<int64_t>> last = store_.LastTime(0, now_s + 1);
  if (!last.ok()) return last.error();
  if (*last && Floor(**last, 60) < open_minute_) {
    const int64_t m = Floor(**last, 60);
    if (Status s = CloseFromStore(store_, 0, 1, m, 60); !s.ok()) return s;
    if (Floor(m, 3600) < open_hour_) {
      if (Status s = CloseFromStore(store_, 1, 2, Floor(m, 3600), 3600); !s.ok()) return s;
    }
  }
  last_ = *last;
  Result<std::vector<HistoryPoint>> seconds = store_.Read(0, open_minute_, now_s + 1);
  if (!seconds.ok()) return seconds.error();
  minute_ = std::move(*seconds);
  written_ = minute_.size();
  if (Status s = store_.Prune(0, now_s - kHistoryTiers[0].keep_s); !s.ok()) return s;
  Result<std::vector<HistoryPoint>> minutes = store_.Read(1, open_hour_, open_minute_);
  if (!minutes.ok()) return minutes.error();
  hour_ = std::move(*minutes);
  return Status::Ok();
}

Status History::Flush() {
  if (written_ >= minute_.size()) return Status::Ok();
  Status s = store_.AppendAll(0, std::span<const HistoryPoint>(minute_).subspan(written_));
  if (s.ok()) written_ = minute_.size();
  return s;
}

Status History::CloseMinute() {
  Status result = Flush();  // Its last seconds; when that fails, they are lost.
  if (!minute_.empty()) {
    HistoryPoint m = Downsample(minute_, open_minute_, 60);
    if (Status s = store_.Append(1, m); !s.ok() && result.ok()) result = s;
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
  written_ = 0;
  const int64_t now = open_minute_ + 60;
  for (int tier = 0; tier < static_cast<int>(kHistoryTiers.size()); ++tier) {
    if (Status s = store_.Prune(tier, now - kHistoryTiers[tier].keep_s); !s.ok() && result.ok())
      result = s;
  }
  return result;
}

Status History::Add(const HistoryPoint& point) {
  if (last_ && point.time_s <= *last_) return Status::Ok();
  Status result;
  const int64_t m = Floor(point.time_s, 60);
  if (open_minute_ != -1 && m != open_minute_) result = CloseMinute();
  if (open_hour_ != -1 && Floor(m, 3600) != open_hour_ && !hour_.empty()) {
    // The hour ended while no minute closed into the next one (a gap).
    if (Status s = store_.Append(2, Downsample(hour_, open_hour_, 3600)); !s.ok() && result.ok())
      result = s;
    hour_.clear();
    open_hour_ = Floor(m, 3600);
  }
  open_minute_ = m;
  minute_.push_back(point);
  last_ = point.time_s;
  if (minute_.size() - written_ >= kWriteEvery) {
    if (Status s = Flush(); !s.ok() && result.ok()) result = s;
  }
  return result;
}

Status History::ForEachSecond(int64_t from_s, int64_t now_s, const HistoryStore::Visitor& visit) {
  // The store holds every 1-s point but the last ones, not written yet.
  const int64_t unwritten_from = written_ < minute_.size() ? minute_[written_].time_s : INT64_MAX;
  if (Status s = store_.ForEach(0, from_s, std::min(now_s + 1, unwritten_from), visit); !s.ok()) {
    return s;
  }
  for (size_t i = written_; i < minute_.size(); ++i) {
    if (minute_[i].time_s < from_s || minute_[i].time_s > now_s) continue;
    HistoryPoint copy = minute_[i];
    if (Status s = visit(std::move(copy)); !s.ok()) return s;
  }
  return Status::Ok();
}

Status History::ForEachSince(int64_t from_s, int64_t now_s, const HistoryStore::Visitor& visit) {
  if (from_s >= now_s - kHistoryTiers[0].keep_s) return ForEachSecond(from_s, now_s, visit);
  const int tier = from_s >= now_s - kHistoryTiers[1].keep_s ? 1 : 2;
  if (Status s = store_.ForEach(tier, from_s, now_s + 1, visit); !s.ok()) return s;
  // The open minute (tier 1) or hour (tier 2), as far as it has come.
  if (tier == 1 && !minute_.empty()) return visit(Downsample(minute_, open_minute_, 60));
  if (tier == 2 && !hour_.empty()) return visit(Downsample(hour_, open_hour_, 3600));
  return Status::Ok();
}

Result<std::vector<HistoryPoint>> History::Since(int64_t from_s, int64_t now_s) {
  std::vector<HistoryPoint> out;
  Status s = ForEachSince(from_s, now_s, [&out](HistoryPoint&& p) {
    out.push_back(std::move(p));
    return Status::Ok();
  });
  if (!s.ok()) return s.error();
  return out;
}

Result<std::vector<HistoryPoint>> History::Trail(int64_t from_s, int64_t now_s) {
  std::vector<HistoryPoint> seconds;
  Status s = ForEachSecond(now_s - kHistoryTiers[0].keep_s, now_s, [&seconds](HistoryPoint&& p) {
    seconds.push_back(std::move(p));
    return Status::Ok();
  });
  if (!s.ok()) return s.error();
  const int64_t seconds_from = seconds.empty() ? now_s + 1 : Floor(seconds.front().time_s, 60);
  Result<std::vector<HistoryPoint>> out = store_.Read(1, from_s, std::max(from_s, seconds_from));
  if (!out.ok()) return out;
  out->reserve(out->size() + seconds.size());
  std::move(seconds.begin(), seconds.end(), std::back_inserter(*out));
  return out;
}

void AddUsage(std::map<std::string, UserUsage>& usage, const HistoryPoint& p) {
  for (const UserPoint& u : p.users) {
    UserUsage& t = usage[u.user];
    t.gpu_seconds += u.gpus * p.step_s;
    t.idle_gpu_seconds += u.idle_gpus * p.step_s;
    t.vram_byte_seconds += u.vram_bytes * p.step_s;
    t.idle_vram_byte_seconds += u.idle_vram_bytes * p.step_s;
  }
}

std::map<std::string, UserUsage> UsageOf(const std::vector<HistoryPoint>& points) {
  std::map<std::string, UserUsage> out;
  for (const HistoryPoint& p : points) AddUsage(out, p);
  return out;
}

}  // namespace gw::fleet
