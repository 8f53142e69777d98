// history_bench: the daemon's history (issue 15, docs/benchmarks.md section 9):
// what keeping one 1-s point costs gpuwardend at each full look, how long a
// restart takes to read the history back, and how long the 7-day query behind
// `gpuwarden history --since 7d` and `gpuwarden usage --since 7d` takes.
//
//   history_bench [--reps N] [--db PATH] [--end UNIX_S] [--openmetrics FILE]
//
// The history.db is filled as a daemon that ran for 90 days would leave it
// (fleet/history.h): 3,600 1-s points, 10,080 1-min points, 2,160 1-h points,
// ending at --end (default: now). The server is synthetic and deterministic:
// 8 GPUs, 12 users, each GPU with a training job that changes owner every 6 h
// and idles one hour in five, and a notebook on every other GPU. A minute
// point is the mean (fleet::Downsample) of its 60 1-s points, as the daemon
// makes it; an hour point older than 7 days is the mean of 60 sampled
// seconds standing for its minutes (only its size matters: no 7-day query
// reads it). The last 10 minutes are not written directly: they go through
// History::Add one second at a time, which is the per-look cost measured
// (with its minute closes and prunes).
//
// Measured, each --reps times, medians (and min / max):
//   add        History::Add of one 1-s point on the SQLite store (its mean
//              is the cost a second: the points are written ten at a time)
//   load       SqliteHistoryStore::Open + History::Load (a daemon start)
//   since_1h / since_7d / since_90d   History::Since (tier 0 / 1 / 2)
//   reply_7d   the daemon's "history" op (queue::HistoryReply) + its dump
//   usage_7d   the daemon's "usage" op (queue::UsageReply, no queue) + dump
//
// --db PATH keeps the filled file there (for bench/fleet_bench.sh, which
// starts a daemon on it); --openmetrics FILE writes the same 7 days of 1-min
// points as an OpenMetrics file (the series gpuwardend's /metrics page gives,
// one sample a minute) for `promtool tsdb create-blocks-from openmetrics`,
// so that Prometheus can answer the same question side by side.
//
//   history_bench --fill GPUS USERS HOURS [--db PATH]
//
// The disk use of docs/metrics.md ("History"): a history.db filled the way
// the daemon fills it, History::Add with one 1-s point after the other for
// HOURS of simulated time, GPUS GPUs and USERS users (names user01, ...),
// every value varying; then, with the file closed, its size and the points
// and mean bytes of a stored point per tier, and the mean time of an Add.
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <sqlite3.h>
#include <nlohmann/json.hpp>

#include "diagnose/finding.h"
#include "fleet/history.h"
#include "fleet/history_point.h"
#include "fleet/history_store.h"
#include "lcg.h"
#include "queue/history_ops.h"
#include "queue/socket_server.h"

namespace {

using namespace gw;  // NOLINT
using fleet::GpuPoint;
using fleet::HistoryPoint;
using fleet::UserPoint;
using gw::bench::Lcg;

constexpr unsigned kGpus = 8;
constexpr unsigned kUsers = 12;
constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
constexpr double kTotalBytes = 81559.0 * 1024 * 1024;  // An H100 80GB.
constexpr int64_t kAddedAtEnd = 600;                   // Seconds that go through History::Add.

const char* const kUserNames[kUsers] = {"alice", "bob",   "carol", "dave", "erin",    "frank",
                                        "grace", "heidi", "ivan",  "judy", "mallory", "oscar"};

// One second of the synthetic server.
HistoryPoint SecondPoint(int64_t t) {
  HistoryPoint p;
  p.time_s = t;
  p.step_s = 1;
  std::map<std::string, UserPoint> users;
  for (unsigned g = 0; g < kGpus; ++g) {
    Lcg r(static_cast<uint64_t>(t) * 2654435761ull + g * 40503ull + 7);
    const int64_t six_hours = t / (6 * 3600);
    const unsigned owner = static_cast<unsigned>((g * 5 + six_hours) % kUsers);
    const bool idle = (t / 3600 + g) % 5 == 0;
    const double job_bytes = (40 + (g * 3 + six_hours) % 30) * kGiB + r.Next(512) * 1048576.0;
    const double util = idle ? 0 : 40 + r.Next(61);
    double used = job_bytes;
    UserPoint& u = users[kUserNames[owner]];
    u.user = kUserNames[owner];
    u.gpus += 1;
    u.vram_bytes += job_bytes;
    if (idle) {
      u.idle_gpus += 1;
      u.idle_vram_bytes += job_bytes;
    }
    if (g % 2 == 0) {  // A notebook, idle.
      const unsigned nb = (g / 2 + 3) % kUsers;
      const double nb_bytes = 6 * kGiB;
      used += nb_bytes;
      UserPoint& n = users[kUserNames[nb]];
      n.user = kUserNames[nb];
      n.gpus += 1;
      n.idle_gpus += 1;
      n.vram_bytes += nb_bytes;
      n.idle_vram_bytes += nb_bytes;
    }
    GpuPoint gp;
    gp.index = g;
    gp.util_pct = util;
    gp.mem_used_bytes = used;
    gp.mem_total_bytes = kTotalBytes;
    gp.power_w = 70 + util * 6.1 + r.Next(20);
    gp.temp_c = 31 + util / 3 + r.Next(3);
    gp.state = static_cast<int>(idle        ? diagnose::GpuState::kReclaimable
                                : util > 70 ? diagnose::GpuState::kBusy
                                            : diagnose::GpuState::kInUse);
    p.gpus.push_back(gp);
  }
  for (auto& [name, u] : users) p.users.push_back(u);
  p.queued = static_cast<double>((t / 97) % 6);
  p.running = 8;
  return p;
}

HistoryPoint MinutePoint(int64_t m) {
  std::vector<HistoryPoint> seconds;
  seconds.reserve(60);
  for (int64_t s = 0; s < 60; ++s) seconds.push_back(SecondPoint(m + s));
  return fleet::Downsample(seconds, m, 60);
}

// An hour point older than the minute tier: 60 sampled seconds, each standing
// for its minute.
HistoryPoint OldHourPoint(int64_t h) {
  std::vector<HistoryPoint> minutes;
  minutes.reserve(60);
  for (int64_t k = 0; k < 60; ++k) {
    HistoryPoint p = SecondPoint(h + k * 60 + 17);
    p.time_s = h + k * 60;
    p.step_s = 60;
    minutes.push_back(std::move(p));
  }
  return fleet::Downsample(minutes, h, 3600);
}

int64_t Floor(int64_t t, int64_t step) { return t / step * step; }

double Ms(std::chrono::steady_clock::duration d) {
  return std::chrono::duration<double, std::milli>(d).count();
}

struct Stats {
  double median, min, max, mean;
};

Stats Of(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  double sum = 0;
  for (double x : v) sum += x;
  const size_t n = v.size();
  const double median = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
  return {median, v.front(), v.back(), sum / static_cast<double>(n)};
}

void Report(const char* name, const std::vector<double>& ms, const std::string& note) {
  const Stats s = Of(ms);
  std::printf("%-10s median %10.3f ms  min %10.3f  max %10.3f  (n=%zu) %s\n", name, s.median, s.min,
              s.max, ms.size(), note.c_str());
}

std::vector<double> Time(int reps, const std::function<void()>& fn) {
  std::vector<double> out;
  for (int i = 0; i < reps; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    fn();
    out.push_back(Ms(std::chrono::steady_clock::now() - t0));
  }
  return out;
}

[[noreturn]] void Die(const std::string& what) {
  std::fprintf(stderr, "history_bench: %s\n", what.c_str());
  std::exit(1);
}

std::string Num(double v) { return fmt::format("{}", v); }

// The 1-min points as the series gpuwardend's /metrics page gives (dcgm
// names, GPU states as one series per state, per-user series; the history's
// idle GPUs per user are not on the page and get a series here so that both
// hold the same facts), one sample a minute; OpenMetrics wants each family's
// samples together, and a timestamp in seconds.
void WriteOpenMetrics(const std::string& path, const std::vector<HistoryPoint>& points) {
  FILE* f = std::fopen(path.c_str(), "w");
  if (f == nullptr) Die(path + ": " + std::strerror(errno));
  struct GpuSeries {
    const char* name;
    double scale;
    double GpuPoint::*field;
  };
  const GpuSeries gpu_series[] = {
      {"DCGM_FI_DEV_GPU_UTIL", 1, &GpuPoint::util_pct},
      {"DCGM_FI_DEV_FB_USED", 1.0 / 1048576, &GpuPoint::mem_used_bytes},
      {"DCGM_FI_DEV_FB_TOTAL", 1.0 / 1048576, &GpuPoint::mem_total_bytes},
      {"DCGM_FI_DEV_POWER_USAGE", 1, &GpuPoint::power_w},
      {"DCGM_FI_DEV_GPU_TEMP", 1, &GpuPoint::temp_c},
  };
  for (const GpuSeries& s : gpu_series) {
    std::fprintf(f, "# TYPE %s gauge\n", s.name);
    for (const HistoryPoint& p : points) {
      for (const GpuPoint& g : p.gpus) {
        const double v = g.*s.field;
        if (std::isnan(v)) continue;
        std::fprintf(f, "%s{gpu=\"%u\"} %s %lld\n", s.name, g.index, Num(v * s.scale).c_str(),
                     static_cast<long long>(p.time_s));
      }
    }
  }
  std::fputs("# TYPE gpuwarden_gpu_state gauge\n", f);
  for (const HistoryPoint& p : points) {
    for (const GpuPoint& g : p.gpus) {
      for (int st = 0; st <= static_cast<int>(diagnose::GpuState::kUnknown); ++st) {
        std::fprintf(
            f, "gpuwarden_gpu_state{gpu=\"%u\",state=\"%s\"} %d %lld\n", g.index,
            std::string(diagnose::GpuStateName(static_cast<diagnose::GpuState>(st))).c_str(),
            g.state && *g.state == st ? 1 : 0, static_cast<long long>(p.time_s));
      }
    }
  }
  struct UserSeries {
    const char* name;
    double UserPoint::*field;
  };
  const UserSeries user_series[] = {
      {"gpuwarden_user_gpus", &UserPoint::gpus},
      {"gpuwarden_user_idle_gpus", &UserPoint::idle_gpus},
      {"gpuwarden_user_memory_bytes", &UserPoint::vram_bytes},
      {"gpuwarden_user_idle_memory_bytes", &UserPoint::idle_vram_bytes},
  };
  for (const UserSeries& s : user_series) {
    std::fprintf(f, "# TYPE %s gauge\n", s.name);
    for (const HistoryPoint& p : points) {
      // Every user every minute (0 when absent), as a page scraped each
      // minute would give them.
      std::map<std::string, double> by_user;
      for (const char* u : kUserNames) by_user[u] = 0;
      for (const UserPoint& u : p.users) by_user[u.user] = u.*s.field;
      for (const auto& [user, v] : by_user) {
        std::fprintf(f, "%s{user=\"%s\"} %s %lld\n", s.name, user.c_str(), Num(v).c_str(),
                     static_cast<long long>(p.time_s));
      }
    }
  }
  std::fputs("# EOF\n", f);
  if (std::fclose(f) != 0) Die(path + ": write failed");
}

// A second of a server of `gpus` GPUs and `users` users, every value varying:
// user u holds memory on GPU u % gpus, and sits idle one hour in four.
HistoryPoint FillPoint(int64_t t, unsigned gpus, unsigned users) {
  HistoryPoint p;
  p.time_s = t;
  p.step_s = 1;
  Lcg r(static_cast<uint64_t>(t) * 2654435761ull + 11);
  std::vector<double> used(gpus, 0);
  for (unsigned u = 0; u < users; ++u) {
    const bool idle = (t / 3600 + u) % 4 == 0;
    const double bytes = (2 + r.Next(30)) * kGiB + r.Next(1024) * 1048576.0;
    used[u % gpus] += bytes;
    p.users.push_back(
        {fmt::format("user{:02}", u + 1), 1, idle ? 1.0 : 0.0, bytes, idle ? bytes : 0.0});
  }
  for (unsigned g = 0; g < gpus; ++g) {
    GpuPoint gp;
    gp.index = g;
    gp.util_pct = r.Next(101);
    gp.mem_used_bytes = used[g];
    gp.mem_total_bytes = kTotalBytes;
    gp.power_w = 60 + r.Next(600) + r.Next(100) / 10.0;
    gp.temp_c = 30 + r.Next(50);
    gp.state = static_cast<int>(r.Next(4));
    p.gpus.push_back(gp);
  }
  p.queued = r.Next(10);
  p.running = r.Next(10);
  return p;
}

// Makes `db_path` name a database that does not exist yet: a new temporary
// directory's history.db when empty (returned, for the caller to remove),
// else the named file with its WAL and shared-memory files removed.
std::string FreshDatabase(std::string& db_path) {
  if (!db_path.empty()) {
    for (const char* suffix : {"", "-wal", "-shm"}) std::remove((db_path + suffix).c_str());
    return "";
  }
  char templ[] = "/tmp/history_bench.XXXXXX";
  if (mkdtemp(templ) == nullptr) Die("mkdtemp failed");
  db_path = std::string(templ) + "/history.db";
  return templ;
}

int Fill(unsigned gpus, unsigned users, int64_t hours, std::string db_path) {
  const std::string tmp_dir = FreshDatabase(db_path);
  const int64_t start = 1'800'000'000 / 3600 * 3600;
  double add_ms = 0;
  {
    auto store = fleet::SqliteHistoryStore::Open(db_path);
    if (!store.ok()) Die(store.error().message);
    fleet::History history(**store);
    if (Status s = history.Load(start); !s.ok()) Die(s.error().message);
    for (int64_t t = start; t < start + hours * 3600; ++t) {
      const HistoryPoint p = FillPoint(t, gpus, users);
      const auto t0 = std::chrono::steady_clock::now();
      if (Status s = history.Add(p); !s.ok()) Die(s.error().message);
      add_ms += Ms(std::chrono::steady_clock::now() - t0);
    }
  }
  struct stat st {};
  stat(db_path.c_str(), &st);
  std::printf(
      "fill: %u GPUs, %u users, %lld h through History::Add (mean %.4f ms a point); "
      "history.db %lld bytes\n",
      gpus, users, static_cast<long long>(hours), add_ms / static_cast<double>(hours * 3600),
      static_cast<long long>(st.st_size));
  sqlite3* db = nullptr;
  sqlite3_stmt* q = nullptr;
  if (sqlite3_open_v2(db_path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) != SQLITE_OK ||
      sqlite3_prepare_v2(db,
                         "SELECT tier, count(*), avg(length(data)) FROM points GROUP BY tier "
                         "ORDER BY tier",
                         -1, &q, nullptr) != SQLITE_OK) {
    Die(db_path + ": " + sqlite3_errmsg(db));
  }
  int64_t points = 0;
  while (sqlite3_step(q) == SQLITE_ROW) {
    points += sqlite3_column_int64(q, 1);
    std::printf("tier %d: %lld points, %.0f bytes a point\n", sqlite3_column_int(q, 0),
                static_cast<long long>(sqlite3_column_int64(q, 1)), sqlite3_column_double(q, 2));
  }
  sqlite3_finalize(q);
  sqlite3_close(db);
  if (points > 0) {
    std::printf("file: %.0f bytes a point on disk\n",
                static_cast<double>(st.st_size) / static_cast<double>(points));
  }
  if (!tmp_dir.empty()) std::filesystem::remove_all(tmp_dir);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  int reps = 15;
  std::string db_path;
  std::string openmetrics;
  int64_t end = static_cast<int64_t>(std::time(nullptr));
  unsigned fill_gpus = 0;
  unsigned fill_users = 0;
  int64_t fill_hours = 0;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) Die(a + " needs a value");
      return argv[++i];
    };
    if (a == "--reps") {
      reps = std::max(1, std::atoi(value().c_str()));
    } else if (a == "--db") {
      db_path = value();
    } else if (a == "--end") {
      end = std::atoll(value().c_str());
    } else if (a == "--openmetrics") {
      openmetrics = value();
    } else if (a == "--fill") {
      fill_gpus = static_cast<unsigned>(std::max(1, std::atoi(value().c_str())));
      fill_users = static_cast<unsigned>(std::max(0, std::atoi(value().c_str())));
      fill_hours = std::max<int64_t>(1, std::atoll(value().c_str()));
    } else {
      Die("usage: history_bench [--reps N] [--db PATH] [--end UNIX_S] [--openmetrics FILE]\n"
          "       history_bench --fill GPUS USERS HOURS [--db PATH]");
    }
  }
  if (fill_hours > 0) return Fill(fill_gpus, fill_users, fill_hours, db_path);
  const std::string tmp_dir = FreshDatabase(db_path);

  // Fill up to fill_end as the tiers would hold it then.
  const int64_t fill_end = end - kAddedAtEnd;
  const auto fill_start = std::chrono::steady_clock::now();
  size_t written[3] = {0, 0, 0};
  {
    auto store = fleet::SqliteHistoryStore::Open(db_path);
    if (!store.ok()) Die(store.error().message);
    auto put = [&](int tier, const HistoryPoint& p) {
      if (Status s = (*store)->Append(tier, p); !s.ok()) Die(s.error().message);
      ++written[tier];
    };
    const int64_t open_minute = Floor(fill_end, 60);
    const int64_t open_hour = Floor(fill_end, 3600);
    // Minutes of the last 7 days; their hours, from them; older hours
    // sampled. The open minute and hour are not closed yet.
    std::vector<HistoryPoint> hour;
    int64_t hour_at = -1;
    for (int64_t m = Floor(fill_end - fleet::kHistoryTiers[1].keep_s, 60) + 60; m < open_minute;
         m += 60) {
      HistoryPoint mp = MinutePoint(m);
      put(1, mp);
      if (Floor(m, 3600) != hour_at) {
        if (hour_at != -1 && hour_at < open_hour) put(2, fleet::Downsample(hour, hour_at, 3600));
        hour.clear();
        hour_at = Floor(m, 3600);
      }
      hour.push_back(std::move(mp));
    }
    const int64_t first_full_hour = Floor(fill_end - fleet::kHistoryTiers[1].keep_s, 3600) + 3600;
    for (int64_t h = Floor(fill_end - fleet::kHistoryTiers[2].keep_s, 3600) + 3600;
         h < first_full_hour; h += 3600) {
      put(2, OldHourPoint(h));
    }
    for (int64_t t = fill_end - fleet::kHistoryTiers[0].keep_s + 1; t <= fill_end; ++t) {
      put(0, SecondPoint(t));
    }
  }
  const double fill_ms = Ms(std::chrono::steady_clock::now() - fill_start);

  // The last kAddedAtEnd seconds as the daemon adds them.
  std::vector<double> add_ms;
  {
    auto store = fleet::SqliteHistoryStore::Open(db_path);
    if (!store.ok()) Die(store.error().message);
    fleet::History history(**store);
    if (Status s = history.Load(fill_end); !s.ok()) Die(s.error().message);
    for (int64_t t = fill_end + 1; t <= end; ++t) {
      const HistoryPoint p = SecondPoint(t);
      const auto t0 = std::chrono::steady_clock::now();
      if (Status s = history.Add(p); !s.ok()) Die(s.error().message);
      add_ms.push_back(Ms(std::chrono::steady_clock::now() - t0));
    }
  }
  struct stat st {};
  stat(db_path.c_str(), &st);
  std::printf(
      "history.db: %s, %.1f MB (+ WAL); written directly: %zu 1-s, %zu 1-min, %zu 1-h "
      "points in %.0f ms; then %lld 1-s points through History::Add; ends at %lld\n",
      db_path.c_str(), static_cast<double>(st.st_size) / 1e6, written[0], written[1], written[2],
      fill_ms, static_cast<long long>(kAddedAtEnd), static_cast<long long>(end));
  std::string stored;
  fleet::AppendPointBinary(stored, SecondPoint(end));
  std::printf("one 1-s point: %zu bytes stored (%zu bytes of JSON); 8 GPUs, %zu users in it\n",
              stored.size(), fleet::PointToJson(SecondPoint(end)).dump().size(),
              SecondPoint(end).users.size());

  const Stats adds = Of(add_ms);
  Report("add", add_ms, fmt::format("mean {:.3f} ms a second (minute closes included)", adds.mean));

  Report("load",
         Time(reps,
              [&] {
                auto store = fleet::SqliteHistoryStore::Open(db_path);
                if (!store.ok()) Die(store.error().message);
                fleet::History h(**store);
                if (Status s = h.Load(end); !s.ok()) Die(s.error().message);
              }),
         "(SqliteHistoryStore::Open + History::Load: a daemon start)");

  auto store = fleet::SqliteHistoryStore::Open(db_path);
  if (!store.ok()) Die(store.error().message);
  fleet::History history(**store);
  if (Status s = history.Load(end); !s.ok()) Die(s.error().message);
  size_t n = 0;
  std::vector<HistoryPoint> week;
  for (auto [name, back] : {std::pair{"since_1h", int64_t{3600}},
                            {"since_7d", int64_t{7 * 86400}},
                            {"since_90d", int64_t{90 * 86400}}}) {
    const std::vector<double> ms = Time(reps, [&, back = back] {
      auto points = history.Since(end - back, end);
      if (!points.ok()) Die(points.error().message);
      n = points->size();
      if (back == 7 * 86400) week = std::move(*points);
    });
    Report(name, ms, fmt::format("({} points)", n));
  }
  size_t bytes = 0;
  const nlohmann::json week_request = {{"op", "history"}, {"since_s", 7 * 86400}};
  std::vector<double> ms = Time(reps, [&] {
    std::string text;
    queue::AppendReplyText(text, queue::HistoryReply(history, end, week_request));
    bytes = text.size();
  });
  Report("reply_7d", ms,
         fmt::format("(the \"history\" op and its dump: {:.1f} MB)",
                     static_cast<double>(bytes) / 1e6));
  const nlohmann::json usage_request = {{"op", "usage"}, {"since_s", 7 * 86400}};
  ms = Time(reps,
            [&] { bytes = queue::UsageReply(history, nullptr, end, usage_request).dump().size(); });
  Report("usage_7d", ms, fmt::format("(the \"usage\" op and its dump: {} bytes)", bytes));

  if (!openmetrics.empty()) {
    // Closed minutes only: Prometheus would not have the open one either.
    if (!week.empty() && week.back().time_s == Floor(end, 60)) week.pop_back();
    WriteOpenMetrics(openmetrics, week);
    std::printf("openmetrics: %s (%zu minutes)\n", openmetrics.c_str(), week.size());
  }
  if (!tmp_dir.empty()) std::filesystem::remove_all(tmp_dir);
  return 0;
}
