#include "watch/watch_probe.h"

#include <fmt/format.h>

#include <utility>

#include "diagnose/verdict.h"

namespace gw::watch {
namespace {

constexpr char kPrefix[] = "driver not responding: ";

// The look itself did not finish (loading, nvmlInit, the count): asking
// again would wait out the deadline every round. A GPU's own stuck call does
// not: the probe's session reports that GPU at once and reads the others.
bool LookItselfStuck(const Snapshot& s) {
  for (const ProbeError& e : s.errors) {
    if (e.code == "timeout" && !e.gpu_index) return true;
  }
  return false;
}

std::string TimeoutMessage(const Snapshot& s) {
  for (const ProbeError& e : s.errors) {
    if (e.code != "timeout") continue;
    std::string m = e.message;
    if (m.rfind(kPrefix, 0) == 0) m.erase(0, sizeof(kPrefix) - 1);
    return m;
  }
  return "the probe did not finish within its deadline";
}

}  // namespace

void UseWindowedCpu(const Snapshot& prev, Snapshot& next) {
  const int64_t wall_ms = next.time_unix_ms - prev.time_unix_ms;
  if (wall_ms <= 0) return;
  for (auto& [pid, p] : next.processes) {
    auto it = prev.processes.find(pid);
    if (it == prev.processes.end()) continue;
    const HostProcess& before = it->second;
    if (!p.cpu_time_ms || !before.cpu_time_ms || p.start_ticks != before.start_ticks ||
        *p.cpu_time_ms < *before.cpu_time_ms) {
      continue;
    }
    p.cpu_pct = 100.0 * static_cast<double>(*p.cpu_time_ms - *before.cpu_time_ms) /
                static_cast<double>(wall_ms);
  }
}

WatchProbe::WatchProbe(ProbeSources sources, ProbeSettings settings)
    : src_(std::move(sources)), settings_(std::move(settings)) {
  if (settings_.window < 1) settings_.window = 1;
}

Frame WatchProbe::Round() {
  Frame frame;
  const int64_t start = src_.now_unix_ms();
  const bool still_stuck =
      stuck_ && src_.driver_calls_in_flight && src_.driver_calls_in_flight() > 0;
  if (still_stuck) {
    frame.driver_stuck = true;
    frame.driver_message = fmt::format("{} (no answer for {:.0f} s; not asked again until it does)",
                                       stuck_call_, (start - stuck_since_ms_) / 1000.0);
  } else {
    const uint64_t since_us =
        window_.empty() ? 0 : static_cast<uint64_t>(window_.back().time_unix_ms) * 1000;
    Snapshot snapshot = src_.collect(since_us);
    if (!window_.empty()) UseWindowedCpu(window_.back(), snapshot);
    if (snapshot.timed_out) {
      if (!stuck_ && !gpu_stuck_) stuck_since_ms_ = start;
      stuck_ = LookItselfStuck(snapshot);
      gpu_stuck_ = !stuck_;
      stuck_call_ = TimeoutMessage(snapshot);
      frame.driver_stuck = true;
      frame.driver_message = gpu_stuck_ && start > stuck_since_ms_
                                 ? fmt::format(
                                       "{} (no answer for {:.0f} s; the other GPUs are "
                                       "read on)",
                                       stuck_call_, (start - stuck_since_ms_) / 1000.0)
                                 : stuck_call_;
    } else {
      stuck_ = false;
      gpu_stuck_ = false;
    }
    if (window_.size() >= settings_.window) window_.erase(window_.begin());
    window_.push_back(std::move(snapshot));

    if (src_.kernel_events &&
        (events_read_ms_ < 0 || start - events_read_ms_ >= settings_.kernel_log_every_ms)) {
      events_ = src_.kernel_events();
      events_read_ms_ = start;
    }
    frame.diagnosis = std::make_shared<const diagnose::Diagnosis>(
        diagnose::Diagnose(window_, settings_.diagnose, events_));
    frame.snapshot = std::make_shared<const Snapshot>(window_.back());
  }
  if (src_.queue) frame.queue = src_.queue();
  frame.time_unix_ms = src_.now_unix_ms();
  frame.probe_ms = static_cast<double>(frame.time_unix_ms - start);
  return frame;
}

}  // namespace gw::watch
