// `gpuwarden events`: the NVIDIA driver's kernel-log events, attributed to GPUs
// and explained from the Xid catalog — what people otherwise piece together
// from `dmesg | grep NVRM` and a search engine.
#ifndef GPUWARDEN_RENDER_EVENTS_TEXT_H_
#define GPUWARDEN_RENDER_EVENTS_TEXT_H_

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "core/gpu_pci.h"
#include "kmsg/escalation.h"
#include "kmsg/kernel_event.h"

namespace gw::render {

struct EventsContext {
  std::vector<std::string> sources_used;         // "kmsg", "journal", "/var/log/kern.log", ...
  std::vector<std::string> sources_unavailable;  // "name: reason".
  // Which GPU sits at which address (core/gpu_pci.h), from a snapshot of
  // this machine when one was taken; nullopt when none was (a log from
  // elsewhere keeps its addresses).
  std::optional<GpuPciMap> gpus;
  std::vector<kmsg::Escalation> escalations;
  // The boot ids (KernelEvent::boot_id) known to be the running kernel's
  // boot: the running boot id of this machine's own logs, or a file's boot
  // that the running kernel's own log confirms (kmsg::BootsOfRunningKernel).
  std::set<std::string> running_boot_ids;
  // When the running kernel's clock read 0 (kmsg::RunningBootStartUnixMs).
  std::optional<int64_t> running_boot_start_unix_ms;
};

// The GPU index of `pci_bus_id` in `context`, if known: the slot matched as
// core/pci_address.h's ParsePciSlot reads it, so "0000:bb:00" (kernel) is
// "00000000:BB:00.0" (NVML), and a lost GPU placed by NVML's order counts.
std::optional<unsigned> GpuIndexForBusId(const EventsContext& context,
                                         const std::optional<std::string>& pci_bus_id);

// The values of EventWallTime::source.
inline constexpr std::string_view kTimeFromLog = "log";
inline constexpr std::string_view kTimeFromBootStart = "boot_start";

// An event's wall time and how it is known.
struct EventWallTime {
  std::optional<int64_t> unix_ms;
  // kTimeFromLog: the line carried it (syslog, journal, dmesg -T, ISO).
  // kTimeFromBootStart: the event's kernel time (monotonic_s) after the start
  // of the running boot, to which the event belongs. Empty when unknown.
  std::string_view source;
  // No wall time because the event is known to be of another boot than the
  // running one (an earlier boot of this machine's logs, or a boot a file
  // holds a later boot after); false when its boot is simply not known.
  bool other_boot = false;
};

// Places `ev` on the wall clock. A kernel time alone is placed only when the
// event's boot is in context.running_boot_ids and the running boot's start is
// known: a log of another boot or machine is never given an invented time.
// `last_boot_id`: the boot of the list's last event (a file's boots before it
// are not the running one).
EventWallTime PlaceEventInTime(const kmsg::KernelEvent& ev, const EventsContext& context,
                               std::string_view last_boot_id);

// The time column: local ISO 8601 (as every time gpuwarden prints for a
// person), else "boot+12877.6s (another boot; no wall-clock time)" or
// "boot+12877.6s (boot not matched to this one; no wall-clock time)", else
// "time N/A".
std::string EventTimeText(const kmsg::KernelEvent& ev, const EventsContext& context,
                          std::string_view last_boot_id);

// Renders, '\n'-terminated lines cut to `width`:
//   1. a header naming the sources read and those that could not be, and
//      why kernel times were not placed on the wall clock, if any were not;
//   2. "no NVRM events", or one line per event in the given order:
//      time (EventTimeText), GPU ("GPU 5 (PCI 0000:bb:00)" when a GPU of the
//      snapshot sits there, else "PCI 0000:bb:00", with "(no GPU listed)"
//      when a snapshot was taken), `Xid 79 MNEMONIC` (NVIDIA's name without its
//      ROBUST_CHANNEL_ prefix; or the event's kind in words),
//      `pid N name` when logged, and `— short meaning; action (who acts)`
//      (on an indented line of its own when the line would be too wide);
//      boots are shown as `--- boot ---` lines;
//   3. "What they mean": each distinct Xid / kind once, with the catalog's
//      meaning and advice, wrapped;
//   4. the escalations (patterns across events and reboots).
// Text from the log is sanitised. Reads the local time zone; otherwise pure.
std::string RenderEventsText(const std::vector<kmsg::KernelEvent>& events,
                             const EventsContext& context, bool color, int width);

}  // namespace gw::render

#endif  // GPUWARDEN_RENDER_EVENTS_TEXT_H_
