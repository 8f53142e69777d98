#include "diagnose/idle_time.h"

#include <algorithm>

#include <fmt/format.h>

#include "core/units.h"
#include "diagnose/rules.h"

namespace gw::diagnose {
namespace {

enum class Work { kIdle, kWork, kCannotTell };

struct Reading {
  Work work = Work::kCannotTell;
  bool per_process = false;
};

// What one look says of one listed process's GPU work.
Reading ReadWork(const Gpu& gpu, const GpuProcess& p, const DiagnoseOptions& o) {
  const bool gpu_busy = gpu.utilization_gpu_pct && *gpu.utilization_gpu_pct > o.idle_util_max_pct;
  // A GPU at work while every process reads 0 %: the per-process samples
  // missed the work, not the other way round (as the rules judge it).
  const bool samples_missed =
      gpu_busy && std::none_of(gpu.processes.begin(), gpu.processes.end(),
                               [](const GpuProcess& q) { return q.sm_util_pct.value_or(0) > 0; });
  if (p.sm_util_pct && !samples_missed) {
    return {*p.sm_util_pct > 0 ? Work::kWork : Work::kIdle, true};
  }
  if (gpu.utilization_gpu_pct) return {gpu_busy ? Work::kWork : Work::kIdle, false};
  return {};
}

Opt<uint64_t> StartTicks(const Snapshot& look, pid_t pid) {
  auto it = look.processes.find(pid);
  return it == look.processes.end() ? std::nullopt : it->second.start_ticks;
}

// One process, as two logs know it: a start time both know must agree.
bool SameProcess(const HolderActivity& a, Opt<uint64_t> start_ticks) {
  return !a.start_ticks || !start_ticks || *a.start_ticks == *start_ticks;
}

}  // namespace

void ObserveLook(ActivityLog& log, const Snapshot& look, const DiagnoseOptions& options) {
  const int64_t t = look.time_unix_ms;
  if (log.first_look_ms != 0 && t < log.last_look_ms) return;
  if (log.first_look_ms == 0) log.first_look_ms = t;
  log.last_look_ms = t;
  for (const Gpu& gpu : look.gpus) {
    if (gpu.unreachable || !gpu.processes_known) continue;
    // Forget the holders this GPU no longer lists.
    auto lo = log.holders.lower_bound({gpu.index, 0});
    while (lo != log.holders.end() && lo->first.first == gpu.index) {
      const pid_t pid = lo->first.second;
      const bool listed = std::any_of(gpu.processes.begin(), gpu.processes.end(),
                                      [pid](const GpuProcess& p) { return p.pid == pid; });
      lo = listed ? std::next(lo) : log.holders.erase(lo);
    }
    for (const GpuProcess& p : gpu.processes) {
      const Reading r = ReadWork(gpu, p, options);
      const Opt<uint64_t> ticks = StartTicks(look, p.pid);
      auto [it, added] = log.holders.try_emplace({gpu.index, p.pid});
      HolderActivity& a = it->second;
      // A PID now naming another process starts afresh.
      if (!added && a.start_ticks && ticks && *a.start_ticks != *ticks) {
        a = HolderActivity{};
        added = true;
      }
      const bool gap = !added && t - a.last_seen_ms > kIdleMaxGapMs;
      if (added) {
        a.gpu = gpu.index;
        a.pid = p.pid;
        a.first_seen_ms = t;
      }
      if (ticks) a.start_ticks = ticks;
      a.last_seen_ms = t;
      if (r.work == Work::kWork) a.last_work_ms = t;
      if (r.work != Work::kIdle) {
        a.idle_since_ms.reset();
        continue;
      }
      if (!a.idle_since_ms || gap) {
        a.idle_since_ms = t;
        a.idle_per_process = true;
      }
      a.idle_per_process = a.idle_per_process && r.per_process;
    }
  }
}

std::vector<HolderActivity> HoldersOf(const ActivityLog& log) {
  std::vector<HolderActivity> out;
  out.reserve(log.holders.size());
  for (const auto& [key, a] : log.holders) out.push_back(a);
  return out;
}

std::string_view IdleSourceName(IdleSource source) {
  switch (source) {
    case IdleSource::kWindow:
      return "window";
    case IdleSource::kProcessHistory:
      return "process_history";
    case IdleSource::kGpuHistory:
      return "gpu_history";
  }
  return "window";
}

std::string IdleSourceText(IdleSource source) {
  switch (source) {
    case IdleSource::kWindow:
      return "this look's samples";
    case IdleSource::kProcessHistory:
      return "gpuwardend's per-process history";
    case IdleSource::kGpuHistory:
      return "gpuwardend's history of the GPU's utilisation";
  }
  return "this look's samples";
}

Opt<IdleTime> HolderIdleTime(const ActivityLog& window, const ActivityHistory* history,
                             unsigned gpu, pid_t pid, Opt<uint64_t> start_ticks,
                             Opt<double> age_s) {
  auto wit = window.holders.find({gpu, pid});
  if (wit == window.holders.end()) return std::nullopt;
  const HolderActivity& w = wit->second;
  const int64_t now = w.last_seen_ms;
  IdleTime out;
  out.seen_s = static_cast<double>(now - w.first_seen_ms) / 1000.0;
  out.source = IdleSource::kWindow;
  if (w.last_work_ms) out.last_work_ago_s = static_cast<double>(now - *w.last_work_ms) / 1000.0;
  if (!w.idle_since_ms) return out;
  out.idle_now = true;

  int64_t since = *w.idle_since_ms;
  bool per_process = w.idle_per_process;
  // Idle since the window's first look: the time before may tell more.
  bool open = since == w.first_seen_ms;
  const bool history_reaches =
      history != nullptr && history->as_of_ms != 0 &&
      history->as_of_ms >= window.first_look_ms - kIdleMaxGapMs &&
      std::find(history->gpus.begin(), history->gpus.end(), gpu) != history->gpus.end();
  if (open && history_reaches) {
    const HolderActivity* seen = nullptr;
    for (const HolderActivity& a : history->holders) {
      if (a.gpu == gpu && a.pid == pid && SameProcess(a, start_ticks)) seen = &a;
    }
    // The daemon watched it up to the window: its idle run continues the window's.
    if (seen != nullptr && seen->last_seen_ms >= window.first_look_ms - kIdleMaxGapMs) {
      out.seen_s = std::max(out.seen_s, static_cast<double>(now - seen->first_seen_ms) / 1000.0);
      if (seen->last_work_ms) {
        out.last_work_ago_s = static_cast<double>(now - *seen->last_work_ms) / 1000.0;
      }
      if (seen->idle_since_ms) {
        since = std::min(since, *seen->idle_since_ms);
        per_process = per_process && seen->idle_per_process;
        out.source = per_process ? IdleSource::kProcessHistory : IdleSource::kGpuHistory;
        open = *seen->idle_since_ms == seen->first_seen_ms;
      } else {
        open = false;  // At work (or not seen idle) in the daemon's last look.
      }
    }
    // Idle as long as the daemon has watched it (or it never saw it): the
    // GPU's own history may reach further back.
    if (open) {
      auto run = history->gpu_idle.find(gpu);
      if (run != history->gpu_idle.end() && run->second.since_ms < since) {
        since = run->second.since_ms;
        out.source = IdleSource::kGpuHistory;
        open = run->second.open_start;
        out.seen_s = std::max(out.seen_s, static_cast<double>(now - since) / 1000.0);
      } else if (seen == nullptr && run == history->gpu_idle.end()) {
        // The GPU's history describes it and shows no idle run reaching now:
        // it was at work (or not held) within the last minute or so.
        open = false;
      }
    }
  }
  out.at_least = open;
  double idle_s = static_cast<double>(now - since) / 1000.0;
  if (age_s && *age_s < idle_s) {
    idle_s = *age_s;
    out.whole_life = true;
    out.at_least = false;
  }
  out.idle_s = std::max(0.0, idle_s);
  return out;
}

std::string IdleTimeText(const IdleTime& idle) {
  if (!idle.idle_now) {
    if (!idle.last_work_ago_s)
      return fmt::format("not seen idle ({})", IdleSourceText(idle.source));
    return fmt::format("did GPU work {} ago ({})", FormatDuration(*idle.last_work_ago_s),
                       IdleSourceText(idle.source));
  }
  if (idle.seen_s <= 0) return fmt::format("idle in the one look taken");
  return fmt::format("idle for {}{}{} ({})", idle.at_least ? "at least " : "",
                     FormatDuration(idle.idle_s), idle.whole_life ? ", all its life" : "",
                     IdleSourceText(idle.source));
}

}  // namespace gw::diagnose
