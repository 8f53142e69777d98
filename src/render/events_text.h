// `gpuwarden events`: the NVIDIA driver's kernel-log events, attributed to GPUs
// and explained from the Xid catalog — what people otherwise piece together
// from `dmesg | grep NVRM` and a search engine.
#ifndef GPUWARDEN_RENDER_EVENTS_TEXT_H_
#define GPUWARDEN_RENDER_EVENTS_TEXT_H_

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "kmsg/escalation.h"
#include "kmsg/kernel_event.h"

namespace gw::render {

struct EventsContext {
  std::vector<std::string> sources_used;         // "kmsg", "journal", "/var/log/kern.log", ...
  std::vector<std::string> sources_unavailable;  // "name: reason".
  // NVML bus id ("00000000:3B:00.0") -> GPU index, from a snapshot when one
  // was taken; matched as PCI addresses (any case, any domain width).
  std::map<std::string, unsigned> gpu_index_by_bus_id;
  std::vector<kmsg::Escalation> escalations;
};

// The GPU index of `pci_bus_id` in `context`, if known.
std::optional<unsigned> GpuIndexForBusId(const EventsContext& context,
                                         const std::optional<std::string>& pci_bus_id);

// Renders, '\n'-terminated lines cut to `width`:
//   1. a header naming the sources read and those that could not be;
//   2. "no NVRM events", or one line per event in the given order:
//      time (local ISO 8601, else `boot+1234.5s`), GPU (index when known,
//      else the bus id), `Xid 79 MNEMONIC` (NVIDIA's name without its
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
