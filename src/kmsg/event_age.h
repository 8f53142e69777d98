// Event age: which kernel-log events describe the server now and which are
// history. Only current events can change a verdict; history is listed. The
// rules (docs/diagnosis.md, "Event-age rules"):
//
//   1. The current boot. For this machine's own logs (kmsg, journal, /var/log)
//      it is the running kernel's boot (EventAgeOptions::running_boot_id, as
//      /proc/sys/kernel/random/boot_id names it) when any event carries that
//      id; else, when the running boot's start is known, events with a wall
//      time before it are earlier boots. For a log file from elsewhere
//      (--kernel-log) it is the log's last boot: the boot of its last event
//      (boots are counted at `Linux version` lines and where the kernel clock
//      goes back; see nvrm_parser.h). Events of any other boot are history.
//   2. The current driver load. Within the current boot, events before the
//      last `loading NVIDIA UNIX ... Kernel Module` banner are history, except
//      the probe messages the driver prints for that load just before its
//      banner: non-Xid GPU notices (fell off the bus at probe, RmInitAdapter,
//      ...) at most kProbeBeforeBannerS before it (kernel or wall time; with
//      no time at all: the unbroken run of non-Xid notices before it).
//   3. A kernel timestamp alone (`[ 1234.5]`, no wall time) places an event
//      in its boot and driver load by order, never by age.
//   4. Wall time. An event whose wall time is more than max_age_s before the
//      reference (the snapshot's time) is history, whatever its boot: a
//      three-year-old Xid 48 says nothing about the GPU now. Events after the
//      reference are current.
//   5. --since: events with a wall time before reference - since_s are left
//      out altogether (neither verdict nor history); events without a wall
//      time cannot be placed and are kept.
//
// Also here: an Xid 79 line and the "GPU has fallen off the bus" notice the
// driver prints with it are one event (SameFallOffTheBus).
#ifndef GPUWARDEN_KMSG_EVENT_AGE_H_
#define GPUWARDEN_KMSG_EVENT_AGE_H_

#include <cstdint>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "kmsg/kernel_event.h"

namespace gw::kmsg {

inline constexpr double kProbeBeforeBannerS = 30;
inline constexpr double kDefaultMaxEventAgeS = 7 * 24 * 3600.0;

struct EventAgeOptions {
  // Set when the events were read from this machine's own logs (not a file
  // named with --kernel-log): the running kernel's boot id (32 hex digits, as
  // kmsg and the journal write it) and, when known, the wall time it started.
  std::string running_boot_id;
  Opt<int64_t> running_boot_start_unix_ms;
  // --since DURATION, in seconds.
  Opt<double> since_s;
  // Rule 4.
  double max_age_s = kDefaultMaxEventAgeS;
};

enum class EventAge {
  kCurrent,     // This boot and driver load, not too old: may change a verdict.
  kHistory,     // Listed, never a verdict.
  kOutOfRange,  // Older than --since: left out.
};

enum class HistoryReason {
  kNone,
  kEarlierBoot,        // Logged in a boot before the current one.
  kEarlierDriverLoad,  // Before the driver was last loaded in this boot.
  kTooOld,             // Wall time more than max_age_s before the reference.
};

struct AgedEvent {
  EventAge age = EventAge::kCurrent;
  HistoryReason reason = HistoryReason::kNone;
  // Known to belong to the running boot and the current driver load (this
  // machine's own logs): what it says about a GPU being there holds however
  // old it is (a GPU that fell off the bus ten days ago and was never
  // re-probed is still gone), even when rule 4 makes it history.
  bool running_boot = false;
};

// One entry per event, in the same order. `events` is chronological (as
// ReadKernelEvents returns them). `reference_unix_ms`: the snapshot's time;
// 0 = unknown (rules 4 and 5 then do not apply).
std::vector<AgedEvent> AgeEvents(std::span<const KernelEvent> events,
                                 const EventAgeOptions& options, int64_t reference_unix_ms);

// "before the current boot", "before the driver was last loaded", "more than
// 7 days before the snapshot" (max_age_s in days or hours); "" for kNone.
std::string HistoryReasonText(HistoryReason reason, const EventAgeOptions& options);

// Events closer than this (wall or kernel time) may be one incident.
inline constexpr double kSameIncidentS = 5;

// Whether `notice` (kind fallen_off_bus) is the notice the driver printed
// with the Xid 79 line `xid79`: same GPU, same boot, within kSameIncidentS
// (kernel time, else wall time; with neither, at most `distance` events apart
// with distance <= 3).
bool SameFallOffTheBus(const KernelEvent& xid79, const KernelEvent& notice, size_t distance);

// The boots of `events` (a file's "<file>#n" boots) that are the running
// kernel's: an event of that boot is also in `running` (what the running
// kernel's own log, /dev/kmsg, holds now) at the same kernel time (within a
// microsecond, dmesg's precision), of the same kind, GPU, Xid and text. Boot
// markers do not count: a kernel's first lines have the same stamps in every
// boot. Another boot of the same machine matches no NVRM line to the
// microsecond; a log from another machine neither.
std::set<std::string> BootsOfRunningKernel(std::span<const KernelEvent> events,
                                           std::span<const KernelEvent> running);

}  // namespace gw::kmsg

#endif  // GPUWARDEN_KMSG_EVENT_AGE_H_
