// Trends: what gpuwardend's history says about the time before this look —
// since when a GPU has sat held but idle, since when its memory has been
// full, and how the queue's length moved over the last hour. `why` asks the
// daemon for them (fleet/trends.h computes them from the history points) and
// adds them to the diagnosis as evidence. Plain data and pure functions.
//
// A trend the history cannot show is absent, never zero: no daemon, no
// points, a GPU not read, a state that began less than kTrendMinRunS ago.
#ifndef GPUWARDEN_DIAGNOSE_TRENDS_H_
#define GPUWARDEN_DIAGNOSE_TRENDS_H_

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/snapshot.h"
#include "diagnose/idle_time.h"
#include "diagnose/rules.h"
#include "diagnose/verdict.h"

namespace gw::diagnose {

// A state shorter than this is not a trend (the look itself takes seconds).
inline constexpr int64_t kTrendMinRunS = 60;

// An unbroken run of one state, up to the newest point.
struct TrendRun {
  int64_t since_unix_s = 0;  // The start of the oldest point in the run.
  // The run reaches the oldest point read, or a gap in the history (the
  // daemon was not running): it may have begun earlier ("for at least").
  bool open_start = false;
};

struct GpuTrend {
  unsigned index = 0;
  // Memory held (more than the "free" mark) while utilisation stayed at or
  // below idle_util_max_pct, in every point.
  Opt<TrendRun> idle_held;
  // Free memory below the full mark (VRAM_EXHAUSTED's), in every point.
  Opt<TrendRun> memory_full;
};

// Jobs waiting (queued and held) over the last hour of 1-second points.
struct QueueTrend {
  double waiting_now = 0;
  double waiting_then = 0;  // At the oldest point of the hour read.
  int64_t then_unix_s = 0;
  double peak = 0;  // The most waiting at any point in between.
};

struct Trends {
  int64_t as_of_unix_s = 0;         // The newest point.
  int64_t covered_from_unix_s = 0;  // The oldest point read.
  std::vector<GpuTrend> gpus;       // By index; GPUs with no run are left out.
  Opt<QueueTrend> queue;            // Unset without a queue or without an hour's points.
  // The newest point's GPUs and their memory (where known), by index: which
  // server the history is of.
  std::map<unsigned, double> memory_total_bytes;
  // The daemon's own looks at each holder since it started (idle_time.h),
  // as of its latest look (0: none): per-holder idle time for `why` and
  // `clean`.
  std::vector<HolderActivity> holders;
  int64_t holders_as_of_ms = 0;
};

// What `trends` says about the time before a look, for the diagnosis
// (DiagnoseOptions::activity_history): the holders' activity, the GPUs'
// held-and-idle runs, and the GPUs it describes. Pure.
std::shared_ptr<const ActivityHistory> ActivityHistoryOf(const Trends& trends);

// The trends are of the server `latest` shows: the same GPU indexes with
// the same memory sizes. (A `why --sim` beside a daemon that watches the
// real GPUs, or a daemon of another machine's dump, is not.)
bool TrendsDescribe(const Trends& trends, const Snapshot& latest);

// The predicates the runs are made of, on one point's readings (the same
// marks as VRAM_EXHAUSTED and the "free" state). Unknown readings: false.
bool HeldIdleReading(Opt<double> util_pct, Opt<double> used_bytes, Opt<double> total_bytes,
                     const DiagnoseOptions& options);
bool MemoryFullReading(Opt<double> used_bytes, Opt<double> total_bytes,
                       const DiagnoseOptions& options);

// "for 3h 12m (since 09:40)" / "for at least 58m (since 09:40, as far as the
// history goes)": how long a run has lasted as of `trends.as_of_unix_s`,
// with its start in local time (the date too when it is not today's).
std::string RunText(const TrendRun& run, int64_t as_of_unix_s);

// Adds the trends to the findings they explain, as evidence named
// "idle_for" (ORPHAN_HOLDER, ZOMBIE_HOLDER: the GPU has sat held and idle;
// IDLE_HOLDER carries its holder's own idle time, idle_time.h) and "full_for" (VRAM_EXHAUSTED),
// seconds as the number. Only for GPUs the trends and the latest snapshot agree on (the caller
// checked that they are the same server). Pure.
void AddTrendEvidence(Diagnosis& diagnosis, const Trends& trends);

}  // namespace gw::diagnose

#endif  // GPUWARDEN_DIAGNOSE_TRENDS_H_
