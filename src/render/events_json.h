// `gpuwarden events --json` (schema "gpuwarden.events", schema_version 1; see
// docs/json.md).
#ifndef GPUWARDEN_RENDER_EVENTS_JSON_H_
#define GPUWARDEN_RENDER_EVENTS_JSON_H_

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "kmsg/kernel_event.h"
#include "render/events_text.h"

namespace gw::render {

inline constexpr char kEventsSchemaName[] = "gpuwarden.events";
inline constexpr int kEventsSchemaVersion = 1;

// {schema, schema_version, sources {used, unavailable [{name, reason}]},
// events [kmsg::EventToJson + gpu_index + gpu_placed_by_order + xid_info,
// with time_unix_ms as PlaceEventInTime gives it, time_utc (ISO 8601) and
// time_source ("log", "boot_start", "other_boot", "unmatched_boot", null)],
// escalations}. xid_info is
// {xid, attributed_xid, known, name, mnemonic, meaning, cause_class, action,
// actor, hardware, reboot_recoverable, advice} for Xid events (unknown codes
// too, known false) and null for other kinds. Never throws.
nlohmann::json EventsJson(const std::vector<kmsg::KernelEvent>& events,
                          const EventsContext& context);

// Receives the document in pieces, in order.
using JsonSink = std::function<void(std::string_view)>;

// The text of RenderEventsJson, written to `sink` one event at a time so a log
// with many events never becomes one large value in memory (a 1 GiB log can
// hold tens of thousands). No trailing newline. Never throws; should memory
// run out mid-way, the document ends there (cut, not wrong).
void WriteEventsJson(const std::vector<kmsg::KernelEvent>& events, const EventsContext& context,
                     bool pretty, const JsonSink& sink);

// EventsJson serialised (DumpJsonForTerminal); no trailing newline.
std::string RenderEventsJson(const std::vector<kmsg::KernelEvent>& events,
                             const EventsContext& context, bool pretty);

}  // namespace gw::render

#endif  // GPUWARDEN_RENDER_EVENTS_JSON_H_
