// `gpuwarden events --json` (schema "gpuwarden.events", schema_version 1; see
// docs/json.md).
#ifndef GPUWARDEN_RENDER_EVENTS_JSON_H_
#define GPUWARDEN_RENDER_EVENTS_JSON_H_

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kmsg/kernel_event.h"
#include "render/events_text.h"

namespace gw::render {

inline constexpr char kEventsSchemaName[] = "gpuwarden.events";
inline constexpr int kEventsSchemaVersion = 1;

// {schema, schema_version, sources {used, unavailable [{name, reason}]},
// events [kmsg::EventToJson + gpu_index + xid_info], escalations}. xid_info is
// {xid, attributed_xid, known, name, mnemonic, meaning, cause_class, action,
// actor, hardware, reboot_recoverable, advice} for Xid events (unknown codes
// too, known false) and null for other kinds. Never throws.
nlohmann::json EventsJson(const std::vector<kmsg::KernelEvent>& events,
                          const EventsContext& context);

// EventsJson serialised (DumpJsonForTerminal); no trailing newline.
std::string RenderEventsJson(const std::vector<kmsg::KernelEvent>& events,
                             const EventsContext& context, bool pretty);

}  // namespace gw::render

#endif  // GPUWARDEN_RENDER_EVENTS_JSON_H_
