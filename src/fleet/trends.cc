#include "fleet/trends.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>

#include <fmt/format.h>

namespace gw::fleet {
namespace {

using nlohmann::json;

Opt<double> Known(double v) { return std::isnan(v) ? std::nullopt : Opt<double>(v); }

const GpuPoint* GpuOf(const HistoryPoint& p, unsigned index) {
  for (const GpuPoint& g : p.gpus) {
    if (g.index == index) return &g;
  }
  return nullptr;
}

// Points further apart than this were not taken one after the other: the
// daemon was stopped, or could not look, in between.
int64_t MaxGap(int step_a, int step_b) {
  return std::max<int64_t>(10, 3 * int64_t{std::max(step_a, step_b)});
}

// The run of `holds` that ends at the newest point, if it lasts long enough.
Opt<diagnose::TrendRun> RunOf(std::span<const HistoryPoint> points, unsigned index, int64_t as_of,
                              const std::function<bool(const GpuPoint&)>& holds) {
  Opt<diagnose::TrendRun> run;
  for (size_t i = points.size(); i-- > 0;) {
    const HistoryPoint& p = points[i];
    const GpuPoint* g = GpuOf(p, index);
    if (g == nullptr || !holds(*g)) break;
    if (run) {
      const HistoryPoint& later = points[i + 1];
      if (later.time_s - (p.time_s + p.step_s) > MaxGap(p.step_s, later.step_s)) {
        run->open_start = true;
        break;
      }
    } else {
      run.emplace();
    }
    run->since_unix_s = p.time_s;
    if (i == 0) run->open_start = true;
  }
  if (run && as_of - run->since_unix_s < diagnose::kTrendMinRunS) return std::nullopt;
  return run;
}

Opt<diagnose::QueueTrend> QueueOf(std::span<const HistoryPoint> points) {
  const HistoryPoint& newest = points.back();
  if (std::isnan(newest.queued)) return std::nullopt;
  diagnose::QueueTrend q;
  q.waiting_now = newest.queued;
  q.peak = newest.queued;
  Opt<int64_t> then;
  for (const HistoryPoint& p : points) {
    if (p.step_s != 1 || p.time_s < newest.time_s - 3600 || std::isnan(p.queued)) continue;
    if (!then) {
      then = p.time_s;
      q.waiting_then = p.queued;
    }
    q.peak = std::max(q.peak, p.queued);
  }
  if (!then || newest.time_s - *then < diagnose::kTrendMinRunS) return std::nullopt;
  q.then_unix_s = *then;
  return q;
}

json RunJson(const Opt<diagnose::TrendRun>& run, int64_t as_of) {
  if (!run) return nullptr;
  return {{"since_unix_s", run->since_unix_s},
          {"for_s", as_of - run->since_unix_s},
          {"open_start", run->open_start}};
}

Result<int64_t> RequiredInt(const json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_number_integer()) {
    return MakeError("malformed", fmt::format("trends: {}", key));
  }
  return it->get<int64_t>();
}

Result<double> RequiredNumber(const json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_number()) {
    return MakeError("malformed", fmt::format("trends: {}", key));
  }
  return it->get<double>();
}

Result<Opt<diagnose::TrendRun>> RunFrom(const json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return Opt<diagnose::TrendRun>();
  if (!it->is_object()) return MakeError("malformed", fmt::format("trends: {}", key));
  Result<int64_t> since = RequiredInt(*it, "since_unix_s");
  if (!since.ok()) return since.error();
  auto open = it->find("open_start");
  if (open == it->end() || !open->is_boolean()) {
    return MakeError("malformed", fmt::format("trends: {}.open_start", key));
  }
  return Opt<diagnose::TrendRun>(diagnose::TrendRun{*since, open->get<bool>()});
}

}  // namespace

diagnose::Trends TrendsOf(std::span<const HistoryPoint> points,
                          const diagnose::DiagnoseOptions& o) {
  diagnose::Trends t;
  if (points.empty()) return t;
  const HistoryPoint& newest = points.back();
  t.as_of_unix_s = newest.time_s + newest.step_s - 1;
  t.covered_from_unix_s = points.front().time_s;
  for (const GpuPoint& g : newest.gpus) {
    t.memory_total_bytes[g.index] = g.mem_total_bytes;
    diagnose::GpuTrend gt;
    gt.index = g.index;
    gt.idle_held = RunOf(points, g.index, t.as_of_unix_s, [&](const GpuPoint& p) {
      return diagnose::HeldIdleReading(Known(p.util_pct), Known(p.mem_used_bytes),
                                       Known(p.mem_total_bytes), o);
    });
    gt.memory_full = RunOf(points, g.index, t.as_of_unix_s, [&](const GpuPoint& p) {
      return diagnose::MemoryFullReading(Known(p.mem_used_bytes), Known(p.mem_total_bytes), o);
    });
    if (gt.idle_held || gt.memory_full) t.gpus.push_back(gt);
  }
  t.queue = QueueOf(points);
  return t;
}

json TrendsToJson(const diagnose::Trends& t) {
  json gpus = json::array();
  for (const diagnose::GpuTrend& g : t.gpus) {
    gpus.push_back({{"index", g.index},
                    {"idle_held", RunJson(g.idle_held, t.as_of_unix_s)},
                    {"memory_full", RunJson(g.memory_full, t.as_of_unix_s)}});
  }
  json queue = nullptr;
  if (t.queue) {
    queue = {{"waiting_now", t.queue->waiting_now},
             {"waiting_then", t.queue->waiting_then},
             {"then_unix_s", t.queue->then_unix_s},
             {"peak", t.queue->peak}};
  }
  json totals = json::array();
  for (const auto& [index, bytes] : t.memory_total_bytes) {
    totals.push_back(
        {{"index", index}, {"bytes", std::isnan(bytes) ? json(nullptr) : json(bytes)}});
  }
  json holders = json::array();
  for (const diagnose::HolderActivity& a : t.holders) {
    holders.push_back({{"gpu", a.gpu},
                       {"pid", a.pid},
                       {"start_ticks", a.start_ticks ? json(*a.start_ticks) : json(nullptr)},
                       {"first_seen_ms", a.first_seen_ms},
                       {"last_seen_ms", a.last_seen_ms},
                       {"idle_since_ms", a.idle_since_ms ? json(*a.idle_since_ms) : json(nullptr)},
                       {"last_work_ms", a.last_work_ms ? json(*a.last_work_ms) : json(nullptr)},
                       {"idle_per_process", a.idle_per_process}});
  }
  return {{"as_of_unix_s", t.as_of_unix_s},
          {"covered_from_unix_s", t.covered_from_unix_s},
          {"gpus", std::move(gpus)},
          {"queue", std::move(queue)},
          {"gpu_memory_total_bytes", std::move(totals)},
          {"holders_as_of_ms", t.holders_as_of_ms},
          {"holders", std::move(holders)}};
}

namespace {

// One entry of "holders". Errors: "malformed", naming the field.
Result<diagnose::HolderActivity> HolderFromJson(const json& h) {
  if (!h.is_object()) return MakeError("malformed", "trends: holders[]");
  diagnose::HolderActivity a;
  auto field = [&](const char* key) { return h.find(key); };
  auto gpu = field("gpu");
  auto pid = field("pid");
  if (gpu == h.end() || !gpu->is_number_unsigned() || pid == h.end() || !pid->is_number_integer() ||
      pid->get<int64_t>() <= 0 || pid->get<int64_t>() > std::numeric_limits<pid_t>::max()) {
    return MakeError("malformed", "trends: holders[].gpu/pid");
  }
  a.gpu = gpu->get<unsigned>();
  a.pid = static_cast<pid_t>(pid->get<int64_t>());
  for (auto [key, into] :
       {std::pair{"first_seen_ms", &a.first_seen_ms}, std::pair{"last_seen_ms", &a.last_seen_ms}}) {
    Result<int64_t> v = RequiredInt(h, key);
    if (!v.ok()) return v.error();
    *into = *v;
  }
  for (auto [key, into] :
       {std::pair{"idle_since_ms", &a.idle_since_ms}, std::pair{"last_work_ms", &a.last_work_ms}}) {
    auto it = field(key);
    if (it == h.end() || it->is_null()) continue;
    if (!it->is_number_integer())
      return MakeError("malformed", fmt::format("trends: holders[].{}", key));
    *into = it->get<int64_t>();
  }
  auto ticks = field("start_ticks");
  if (ticks != h.end() && !ticks->is_null()) {
    if (!ticks->is_number_unsigned())
      return MakeError("malformed", "trends: holders[].start_ticks");
    a.start_ticks = ticks->get<uint64_t>();
  }
  auto per_process = field("idle_per_process");
  if (per_process == h.end() || !per_process->is_boolean()) {
    return MakeError("malformed", "trends: holders[].idle_per_process");
  }
  a.idle_per_process = per_process->get<bool>();
  return a;
}

}  // namespace

Result<diagnose::Trends> TrendsFromJson(const json& j) {
  if (!j.is_object()) return MakeError("malformed", "trends: not an object");
  diagnose::Trends t;
  Result<int64_t> as_of = RequiredInt(j, "as_of_unix_s");
  if (!as_of.ok()) return as_of.error();
  Result<int64_t> from = RequiredInt(j, "covered_from_unix_s");
  if (!from.ok()) return from.error();
  t.as_of_unix_s = *as_of;
  t.covered_from_unix_s = *from;
  auto gpus = j.find("gpus");
  if (gpus == j.end() || !gpus->is_array()) return MakeError("malformed", "trends: gpus");
  for (const json& g : *gpus) {
    if (!g.is_object()) return MakeError("malformed", "trends: gpus[]");
    auto index = g.find("index");
    if (index == g.end() || !index->is_number_unsigned()) {
      return MakeError("malformed", "trends: gpus[].index");
    }
    diagnose::GpuTrend gt;
    gt.index = index->get<unsigned>();
    Result<Opt<diagnose::TrendRun>> idle = RunFrom(g, "idle_held");
    if (!idle.ok()) return idle.error();
    Result<Opt<diagnose::TrendRun>> full = RunFrom(g, "memory_full");
    if (!full.ok()) return full.error();
    gt.idle_held = *idle;
    gt.memory_full = *full;
    t.gpus.push_back(gt);
  }
  auto totals = j.find("gpu_memory_total_bytes");
  if (totals == j.end() || !totals->is_array()) {
    return MakeError("malformed", "trends: gpu_memory_total_bytes");
  }
  for (const json& g : *totals) {
    auto index = g.is_object() ? g.find("index") : g.end();
    auto bytes = g.is_object() ? g.find("bytes") : g.end();
    if (index == g.end() || !index->is_number_unsigned() || bytes == g.end() ||
        !(bytes->is_number() || bytes->is_null())) {
      return MakeError("malformed", "trends: gpu_memory_total_bytes[]");
    }
    t.memory_total_bytes[index->get<unsigned>()] =
        bytes->is_null() ? kUnknown : bytes->get<double>();
  }
  auto queue = j.find("queue");
  if (queue != j.end() && !queue->is_null()) {
    if (!queue->is_object()) return MakeError("malformed", "trends: queue");
    diagnose::QueueTrend q;
    for (auto [key, into] :
         {std::pair{"waiting_now", &q.waiting_now}, std::pair{"waiting_then", &q.waiting_then},
          std::pair{"peak", &q.peak}}) {
      Result<double> v = RequiredNumber(*queue, key);
      if (!v.ok()) return v.error();
      *into = *v;
    }
    Result<int64_t> then_s = RequiredInt(*queue, "then_unix_s");
    if (!then_s.ok()) return then_s.error();
    q.then_unix_s = *then_s;
    t.queue = q;
  }
  // The holders' activity: absent from a daemon that keeps none.
  auto holders = j.find("holders");
  if (holders != j.end()) {
    if (!holders->is_array()) return MakeError("malformed", "trends: holders");
    for (const json& h : *holders) {
      Result<diagnose::HolderActivity> a = HolderFromJson(h);
      if (!a.ok()) return a.error();
      t.holders.push_back(*a);
    }
    Result<int64_t> as_of_ms = RequiredInt(j, "holders_as_of_ms");
    if (!as_of_ms.ok()) return as_of_ms.error();
    t.holders_as_of_ms = *as_of_ms;
  }
  return t;
}

}  // namespace gw::fleet
