#include "queue/history_ops.h"

#include <map>
#include <set>
#include <string>
#include <vector>

#include "core/text.h"
#include "fleet/trends.h"
#include "queue/protocol.h"

namespace gw::queue {
namespace {

using nlohmann::json;

// since_s: seconds back from now, more than 0 and at most a year.
Result<int64_t> SinceOf(const json& req) {
  auto it = req.find("since_s");
  if (it == req.end() || !it->is_number() || !(it->get<double>() > 0) ||
      it->get<double>() > 366.0 * 86400) {
    return MakeError("bad_request", "since_s: expected seconds, more than 0 and at most a year");
  }
  return static_cast<int64_t>(it->get<double>());
}

}  // namespace

json TrendsReply(fleet::History& history, int64_t now, const json& req) {
  int64_t lookback = 86400;
  if (auto it = req.find("lookback_s"); it != req.end()) {
    if (!it->is_number() || !(it->get<double>() > 0) || it->get<double>() > 7.0 * 86400) {
      return ErrorReply("bad_request",
                        "lookback_s: expected seconds, more than 0 and at most 7 days");
    }
    lookback = static_cast<int64_t>(it->get<double>());
  }
  Result<std::vector<fleet::HistoryPoint>> trail = history.Trail(now - lookback, now);
  if (!trail.ok()) return ErrorReply("store", trail.error().message);
  json r = OkReply();
  r["trends"] = fleet::TrendsToJson(fleet::TrendsOf(*trail, diagnose::DiagnoseOptions{}));
  return r;
}

json HistoryReply(fleet::History& history, int64_t now, const json& req) {
  Result<int64_t> since = SinceOf(req);
  if (!since.ok()) return ErrorReply("bad_request", since.error().message);
  Result<std::vector<fleet::HistoryPoint>> points = history.Since(now - *since, now);
  if (!points.ok()) return ErrorReply("store", points.error().message);
  json r = OkReply();
  r["from_unix_s"] = now - *since;
  r["to_unix_s"] = now;
  json list = json::array();
  for (const fleet::HistoryPoint& p : *points) list.push_back(fleet::PointToJson(p));
  r["points"] = std::move(list);
  return r;
}

json UsageReply(fleet::History& history, JobTable* table, int64_t now, const json& req) {
  Result<int64_t> since = SinceOf(req);
  if (!since.ok()) return ErrorReply("bad_request", since.error().message);
  const int64_t from = now - *since;
  Result<std::vector<fleet::HistoryPoint>> points = history.Since(from, now);
  if (!points.ok()) return ErrorReply("store", points.error().message);
  const std::map<std::string, fleet::UserUsage> usage = fleet::UsageOf(*points);
  std::map<std::string, uint64_t> jobs;
  if (table != nullptr) {
    JobFilter f;
    f.newest_first = true;
    Result<std::vector<Job>> list = table->List(f);
    if (!list.ok()) return ErrorReply("store", list.error().message);
    for (const Job& j : *list) {
      if (j.start_unix_ms && *j.start_unix_ms / 1000 >= from) ++jobs[j.owner.user];
    }
  }
  double covered = 0;
  for (const fleet::HistoryPoint& p : *points) covered += p.step_s;
  std::set<std::string> names;
  for (const auto& [u, x] : usage) names.insert(u);
  for (const auto& [u, n] : jobs) names.insert(u);
  json users = json::array();
  for (const std::string& u : names) {
    auto at = usage.find(u);
    const fleet::UserUsage x = at == usage.end() ? fleet::UserUsage{} : at->second;
    auto j = jobs.find(u);
    users.push_back({{"user", ToValidUtf8(u)},
                     {"gpu_hours", x.gpu_seconds / 3600},
                     {"idle_gpu_hours", x.idle_gpu_seconds / 3600},
                     {"vram_gib_hours", x.vram_byte_seconds / 3600 / (1 << 30)},
                     {"idle_vram_gib_hours", x.idle_vram_byte_seconds / 3600 / (1 << 30)},
                     {"jobs_started",
                      table == nullptr ? json(nullptr) : json(j == jobs.end() ? 0 : j->second)}});
  }
  json r = OkReply();
  r["from_unix_s"] = from;
  r["to_unix_s"] = now;
  r["covered_s"] = covered;
  r["users"] = std::move(users);
  return r;
}

}  // namespace gw::queue
