#include "kmsg/event_age.h"

#include <algorithm>
#include <cmath>
#include <map>

#include <fmt/format.h>

#include "core/pci_address.h"

namespace gw::kmsg {
namespace {

// A boot's first messages can be stamped a little before the start the
// kernel reports (clock adjustments): tolerate this much.
constexpr int64_t kBootStartSlackMs = 60'000;

// Seconds from `a` to `b` when both carry comparable times.
Opt<double> SecondsBetween(const KernelEvent& a, const KernelEvent& b) {
  if (a.monotonic_s && b.monotonic_s && a.boot_id == b.boot_id) {
    return *b.monotonic_s - *a.monotonic_s;
  }
  if (a.time_unix_ms && b.time_unix_ms) {
    return static_cast<double>(*b.time_unix_ms - *a.time_unix_ms) / 1000.0;
  }
  return std::nullopt;
}

}  // namespace

std::vector<AgedEvent> AgeEvents(std::span<const KernelEvent> events,
                                 const EventAgeOptions& options, int64_t reference_unix_ms) {
  const size_t n = events.size();
  std::vector<AgedEvent> out(n);
  if (n == 0) return out;

  // 1. The current boot.
  const bool own_logs = !options.running_boot_id.empty();
  const bool running_seen =
      own_logs && std::any_of(events.begin(), events.end(), [&](const KernelEvent& e) {
        return e.boot_id == options.running_boot_id;
      });
  const std::string& last_boot = events.back().boot_id;
  std::vector<char> current_boot(n, 0);
  for (size_t i = 0; i < n; ++i) {
    const KernelEvent& e = events[i];
    bool current = false;
    if (running_seen) {
      current = e.boot_id == options.running_boot_id;
    } else if (own_logs && options.running_boot_start_unix_ms && e.time_unix_ms) {
      current = *e.time_unix_ms >= *options.running_boot_start_unix_ms - kBootStartSlackMs;
    } else {
      current = e.boot_id == last_boot;
    }
    current_boot[i] = current ? 1 : 0;
    if (!current) out[i] = {EventAge::kHistory, HistoryReason::kEarlierBoot, false};
  }

  // 2. The current driver load: the last banner of the current boot.
  size_t banner = n;
  for (size_t i = n; i-- > 0;) {
    if (current_boot[i] && events[i].kind == kKindDriverLoad) {
      banner = i;
      break;
    }
  }
  if (banner < n) {
    // The probe messages printed for this load just before its banner.
    size_t first_of_load = banner;
    for (size_t i = banner; i-- > 0;) {
      const KernelEvent& e = events[i];
      if (!current_boot[i] || e.kind == kKindXid || e.kind == kKindDriverLoad ||
          e.kind == kKindBoot) {
        break;
      }
      const Opt<double> gap = SecondsBetween(e, events[banner]);
      if (gap && *gap > kProbeBeforeBannerS) break;
      first_of_load = i;
    }
    for (size_t i = 0; i < first_of_load; ++i) {
      if (current_boot[i]) out[i] = {EventAge::kHistory, HistoryReason::kEarlierDriverLoad, false};
    }
  }

  if (own_logs) {
    for (size_t i = 0; i < n; ++i) out[i].running_boot = out[i].age == EventAge::kCurrent;
  }

  // 4. and 5. Wall-time age against the snapshot.
  if (reference_unix_ms > 0) {
    for (size_t i = 0; i < n; ++i) {
      const Opt<int64_t>& t = events[i].time_unix_ms;
      if (!t) continue;
      const double age_s = static_cast<double>(reference_unix_ms - *t) / 1000.0;
      if (options.since_s && age_s > *options.since_s) {
        out[i] = {EventAge::kOutOfRange, HistoryReason::kNone, false};
      } else if (age_s > options.max_age_s && out[i].age == EventAge::kCurrent) {
        out[i].age = EventAge::kHistory;
        out[i].reason = HistoryReason::kTooOld;
      }
    }
  }
  return out;
}

std::string HistoryReasonText(HistoryReason reason, const EventAgeOptions& options) {
  switch (reason) {
    case HistoryReason::kNone:
      return "";
    case HistoryReason::kEarlierBoot:
      return "before the current boot";
    case HistoryReason::kEarlierDriverLoad:
      return "before the driver was last loaded";
    case HistoryReason::kTooOld: {
      const double days = options.max_age_s / 86400.0;
      if (days >= 1 && std::fabs(days - std::round(days)) < 1e-9) {
        return fmt::format("more than {:.0f} day{} before the snapshot", days,
                           days == 1 ? "" : "s");
      }
      return fmt::format("more than {:.0f} hours before the snapshot", options.max_age_s / 3600);
    }
  }
  return "";
}

bool SameFallOffTheBus(const KernelEvent& xid79, const KernelEvent& notice, size_t distance) {
  if (xid79.kind != kKindXid || xid79.xid != 79u || notice.kind != kKindFallenOffBus) return false;
  if (!xid79.pci_bus_id || !notice.pci_bus_id) return false;
  const Opt<PciAddress> a = ParsePciAddress(*xid79.pci_bus_id);
  if (!a || a != ParsePciAddress(*notice.pci_bus_id)) return false;
  if (xid79.boot_id != notice.boot_id) return false;
  if (const Opt<double> gap = SecondsBetween(xid79, notice)) {
    return std::fabs(*gap) <= kSameIncidentS;
  }
  return distance <= 3;
}

std::set<std::string> BootsOfRunningKernel(std::span<const KernelEvent> events,
                                           std::span<const KernelEvent> running) {
  // The running kernel's events by the microsecond of their kernel time.
  std::multimap<int64_t, const KernelEvent*> at;
  for (const KernelEvent& r : running) {
    if (r.kind == kKindBoot || !r.monotonic_s) continue;
    at.emplace(std::llround(*r.monotonic_s * 1e6), &r);
  }
  std::set<std::string> out;
  for (const KernelEvent& e : events) {
    if (e.kind == kKindBoot || !e.monotonic_s || out.count(e.boot_id)) continue;
    const int64_t us = std::llround(*e.monotonic_s * 1e6);
    for (auto it = at.lower_bound(us - 1); it != at.end() && it->first <= us + 1; ++it) {
      const KernelEvent& r = *it->second;
      if (r.kind == e.kind && r.xid == e.xid && r.pci_bus_id == e.pci_bus_id &&
          r.detail == e.detail) {
        out.insert(e.boot_id);
        break;
      }
    }
  }
  return out;
}

}  // namespace gw::kmsg
