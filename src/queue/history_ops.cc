#include "queue/history_ops.h"

#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "core/text.h"
#include "fleet/trends.h"
#include "queue/protocol.h"
#include "queue/socket_server.h"

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

json TrendsReply(fleet::History& history, int64_t now, const json& req,
                 const diagnose::ActivityHistory* activity) {
  int64_t lookback = 86400;
  if (auto it = req.find("lookback_s"); it != req.end()) {
    if (!it->is_number() || !(it->get<double>() > 0) || it->get<double>() > 7.0 * 86400) {
      return ErrorReply("bad_request",
                        "lookback_s: expected seconds, more than 0 and at most 7 days");
    }
    lookback = static_cast<int64_t>(it->get<double>());
  }
  json r = OkReply();
  {
    // A day of minutes and an hour of seconds (up to 7 days: ~14,000 points,
    // ~20 MB) for the time of the call.
    Result<std::vector<fleet::HistoryPoint>> trail = history.Trail(now - lookback, now);
    if (!trail.ok()) return ErrorReply("store", trail.error().message);
    diagnose::Trends trends = fleet::TrendsOf(*trail, diagnose::DiagnoseOptions{});
    if (activity != nullptr) {
      trends.holders = activity->holders;
      trends.holders_as_of_ms = activity->as_of_ms;
    }
    r["trends"] = fleet::TrendsToJson(trends);
  }
  ReturnFreedMemory();
  return r;
}

json HistoryReply(fleet::History& history, int64_t now, const json& req) {
  Result<int64_t> since = SinceOf(req);
  if (!since.ok()) return ErrorReply("bad_request", since.error().message);
  // The reply's own members, to write the points into their list.
  json head = OkReply();
  head["from_unix_s"] = now - *since;
  head["to_unix_s"] = now;
  head["points"] = json::array();
  const std::string frame = head.dump();
  constexpr std::string_view kList = R"("points":[)";
  const size_t at = frame.find(kList) + kList.size();  // Only numbers and true before it.
  // The points as JSON text, written one by one as they are read, in pieces
  // of about kPieceBytes: a week of minutes is 10,080 points, ~24 MB of text
  // (~10 times that as a document), and no piece is ever copied or grown.
  constexpr size_t kPieceBytes = 1 << 20;
  std::vector<std::string> pieces;
  std::string piece;
  piece.reserve(kPieceBytes + 16384);
  piece.append(frame, 0, at);
  bool first = true;
  Status s = history.ForEachSince(now - *since, now, [&](fleet::HistoryPoint&& p) {
    if (piece.size() >= kPieceBytes) {
      pieces.push_back(std::move(piece));
      piece = std::string();
      piece.reserve(kPieceBytes + 16384);
    }
    if (!first) piece += ',';
    first = false;
    fleet::AppendPointJson(piece, p);
    return Status::Ok();
  });
  if (!s.ok()) return ErrorReply("store", s.error().message);
  piece.append(frame, at);
  pieces.push_back(std::move(piece));
  return RawReply(std::move(pieces));
}

json UsageReply(fleet::History& history, JobTable* table, int64_t now, const json& req) {
  Result<int64_t> since = SinceOf(req);
  if (!since.ok()) return ErrorReply("bad_request", since.error().message);
  const int64_t from = now - *since;
  // Summed as the points are read: no point is kept.
  std::map<std::string, fleet::UserUsage> usage;
  double covered = 0;
  Status s = history.ForEachSince(from, now, [&](fleet::HistoryPoint&& p) {
    fleet::AddUsage(usage, p);
    covered += p.step_s;
    return Status::Ok();
  });
  if (!s.ok()) return ErrorReply("store", s.error().message);
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
