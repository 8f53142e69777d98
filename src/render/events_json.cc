#include "render/events_json.h"

#include "core/text.h"
#include "kmsg/event_json.h"
#include "kmsg/xid_catalog.h"
#include "render/json_out.h"

namespace gw::render {
namespace {

using nlohmann::json;

json XidInfoJson(const kmsg::KernelEvent& ev) {
  if (ev.kind != kmsg::kKindXid || !ev.xid) return nullptr;
  const kmsg::XidAssessment a = kmsg::AssessXid(ev);
  return json{{"xid", a.xid},
              {"attributed_xid", a.attributed_xid},
              {"known", a.info.known},
              {"name", a.info.name},
              {"mnemonic", a.info.mnemonic.empty() ? json(nullptr) : json(a.info.mnemonic)},
              {"meaning", a.info.meaning},
              {"cause_class", kmsg::CauseClassName(a.info.cause)},
              {"action", kmsg::XidActionName(a.recovery_action.value_or(a.info.action))},
              {"actor", kmsg::ActorName(a.info.actor)},
              {"hardware", a.info.hardware_fault},
              {"reboot_recoverable", a.info.reboot_recoverable},
              {"advice", a.info.advice}};
}

json EventsJsonUnchecked(const std::vector<kmsg::KernelEvent>& events, const EventsContext& ctx) {
  json j;
  j["schema"] = kEventsSchemaName;
  j["schema_version"] = kEventsSchemaVersion;
  json used = json::array();
  for (const std::string& s : ctx.sources_used) used.push_back(ToValidUtf8(s));
  json unavailable = json::array();
  for (const std::string& s : ctx.sources_unavailable) {
    const size_t colon = s.find(": ");
    unavailable.push_back(
        {{"name", ToValidUtf8(s.substr(0, colon))},
         {"reason",
          colon == std::string::npos ? json(nullptr) : json(ToValidUtf8(s.substr(colon + 2)))}});
  }
  j["sources"] = {{"used", std::move(used)}, {"unavailable", std::move(unavailable)}};
  json list = json::array();
  for (const kmsg::KernelEvent& ev : events) {
    json e = kmsg::EventToJson(ev);
    const std::optional<unsigned> idx = GpuIndexForBusId(ctx, ev.pci_bus_id);
    e["gpu_index"] = idx ? json(*idx) : json(nullptr);
    e["xid_info"] = XidInfoJson(ev);
    list.push_back(std::move(e));
  }
  j["events"] = std::move(list);
  json escalations = json::array();
  for (const kmsg::Escalation& e : ctx.escalations) {
    json buses = json::array();
    json indices = json::array();
    for (const std::string& bus : e.pci_bus_ids) {
      buses.push_back(ToValidUtf8(bus));
      const std::optional<unsigned> idx = GpuIndexForBusId(ctx, bus);
      indices.push_back(idx ? json(*idx) : json(nullptr));
    }
    escalations.push_back({{"kind", kmsg::EscalationKindName(e.kind)},
                           {"pci_bus_ids", std::move(buses)},
                           {"gpu_indices", std::move(indices)},
                           {"xids", e.xids},
                           {"event_kind", ToValidUtf8(e.event_kind)},
                           {"boots", e.boots},
                           {"reboots", e.reboots},
                           {"occurrences", e.occurrences},
                           {"bursts", e.bursts},
                           {"processes", e.processes},
                           {"reason", ToValidUtf8(e.reason)}});
  }
  j["escalations"] = std::move(escalations);
  return j;
}

}  // namespace

json EventsJson(const std::vector<kmsg::KernelEvent>& events, const EventsContext& context) {
  try {
    return EventsJsonUnchecked(events, context);
  } catch (...) {
    // Only allocation can fail (strings are made valid UTF-8).
    return json{{"schema", kEventsSchemaName}, {"schema_version", kEventsSchemaVersion}};
  }
}

std::string RenderEventsJson(const std::vector<kmsg::KernelEvent>& events,
                             const EventsContext& context, bool pretty) {
  return DumpJsonForTerminal(EventsJson(events, context), pretty, kEventsSchemaName);
}

}  // namespace gw::render
