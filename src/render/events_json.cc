#include "render/events_json.h"

#include <fmt/format.h>

#include "core/json_out.h"
#include "core/text.h"
#include "kmsg/event_json.h"
#include "kmsg/xid_catalog.h"

namespace gw::render {
namespace {

using nlohmann::json;

json XidInfoJson(const kmsg::KernelEvent& ev) {
  if (ev.kind != kmsg::kKindXid || !ev.xid) return nullptr;
  const kmsg::XidAssessment a = kmsg::AssessXid(ev);
  return json{
      {"xid", a.xid},
      {"attributed_xid", a.attributed_xid},
      {"known", a.info.known},
      {"name", a.info.name},
      {"mnemonic", a.info.mnemonic.empty() ? json(nullptr) : json(a.info.mnemonic)},
      {"meaning", a.info.meaning},
      {"cause_class", kmsg::CauseClassName(a.info.cause)},
      // As `why` files it: findings[].category and the verdict while current.
      {"category", kmsg::CategoryWord(a.cause)},
      {"impact", kmsg::XidImpactName(a.impact)},
      {"action", kmsg::XidActionName(a.recovery_action.value_or(a.info.action))},
      {"actor", kmsg::ActorName(a.info.actor)},
      {"hardware", a.info.hardware_fault},
      {"reboot_recoverable", a.info.reboot_recoverable},
      {"advice", a.info.advice},
      // NVIDIA's own row (null for a code NVIDIA does not list).
      {"nvidia", a.info.known ? json{{"description", a.info.description},
                                     {"immediate", kmsg::NvidiaResolutionToken(a.info.immediate)},
                                     {"investigatory", a.info.investigatory},
                                     {"unused", a.info.unused},
                                     {"source", kmsg::kNvidiaXidCatalogSource}}
                              : json(nullptr)}};
}

json SourcesJson(const EventsContext& ctx) {
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
  return {{"used", std::move(used)}, {"unavailable", std::move(unavailable)}};
}

json EventJson(const kmsg::KernelEvent& ev, const EventsContext& ctx,
               std::string_view last_boot_id) {
  json e = kmsg::EventToJson(ev);
  const std::optional<unsigned> idx = GpuIndexForBusId(ctx, ev.pci_bus_id);
  e["gpu_index"] = JsonOrNull(idx);
  e["gpu_placed_by_order"] = idx && ctx.gpus->placed_by_order.count(*idx) > 0;
  const EventWallTime when = PlaceEventInTime(ev, ctx, last_boot_id);
  e["time_unix_ms"] = JsonOrNull(when.unix_ms);
  e["time_utc"] = when.unix_ms ? JsonOrNull(IsoTimeUtc(*when.unix_ms)) : json(nullptr);
  if (when.unix_ms) {
    e["time_source"] = std::string(when.source);
  } else if (ev.monotonic_s) {
    e["time_source"] = when.other_boot ? "other_boot" : "unmatched_boot";
  } else {
    e["time_source"] = nullptr;
  }
  e["xid_info"] = XidInfoJson(ev);
  return e;
}

std::string LastBootOf(const std::vector<kmsg::KernelEvent>& events) {
  return events.empty() ? std::string() : events.back().boot_id;
}

json EscalationsJson(const EventsContext& ctx) {
  json escalations = json::array();
  for (const kmsg::Escalation& e : ctx.escalations) {
    json buses = json::array();
    json indices = json::array();
    for (const std::string& bus : e.pci_bus_ids) {
      buses.push_back(ToValidUtf8(bus));
      const std::optional<unsigned> idx = GpuIndexForBusId(ctx, bus);
      indices.push_back(JsonOrNull(idx));
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
  return escalations;
}

json EventsJsonUnchecked(const std::vector<kmsg::KernelEvent>& events, const EventsContext& ctx) {
  json j;
  j["schema"] = kEventsSchemaName;
  j["schema_version"] = kEventsSchemaVersion;
  j["sources"] = SourcesJson(ctx);
  json list = json::array();
  const std::string last_boot = LastBootOf(events);
  for (const kmsg::KernelEvent& ev : events) list.push_back(EventJson(ev, ctx, last_boot));
  j["events"] = std::move(list);
  j["escalations"] = EscalationsJson(ctx);
  return j;
}

// Appends to `out` and hands it to `sink` whenever it grows past a chunk, so
// the document reaches stdout in large writes without ever being whole.
class ChunkedSink {
 public:
  explicit ChunkedSink(const JsonSink& sink) : sink_(sink) { buffer_.reserve(kChunk + 4096); }
  ~ChunkedSink() {
    try {
      Flush();
    } catch (...) {  // A sink that cannot take the tail: nothing left to do.
    }
  }
  void Write(std::string_view text) {
    buffer_.append(text);
    if (buffer_.size() >= kChunk) Flush();
  }
  void Flush() {
    if (buffer_.empty()) return;
    sink_(buffer_);
    buffer_.clear();
  }

 private:
  static constexpr size_t kChunk = 256 * 1024;
  const JsonSink& sink_;
  std::string buffer_;
};

// See WriteEventsJson; throws std::bad_alloc only.
void WriteEventsJsonPieces(const std::vector<kmsg::KernelEvent>& events,
                           const EventsContext& context, bool pretty, const JsonSink& sink) {
  // The members in nlohmann's (sorted) key order, so the text equals
  // DumpJsonForTerminal(EventsJson(...)).
  const std::string_view next_member = pretty ? ",\n  " : ",";
  const std::string_view colon = pretty ? ": " : ":";
  ChunkedSink out(sink);
  const auto member = [&](std::string_view key) {
    out.Write("\"");
    out.Write(key);
    out.Write("\"");
    out.Write(colon);
  };
  out.Write(pretty ? "{\n  " : "{");
  member("escalations");
  out.Write(DumpJsonFragmentForTerminal(EscalationsJson(context), pretty, 1));
  out.Write(next_member);
  member("events");
  out.Write("[");
  bool first = true;
  const std::string last_boot = LastBootOf(events);
  for (const kmsg::KernelEvent& ev : events) {
    out.Write(first ? "" : ",");
    if (pretty) out.Write("\n    ");
    first = false;
    out.Write(DumpJsonFragmentForTerminal(EventJson(ev, context, last_boot), pretty, 2));
  }
  if (pretty && !events.empty()) out.Write("\n  ");
  out.Write("]");
  out.Write(next_member);
  member("schema");
  out.Write(fmt::format("\"{}\"", kEventsSchemaName));
  out.Write(next_member);
  member("schema_version");
  out.Write(fmt::format("{}", kEventsSchemaVersion));
  out.Write(next_member);
  member("sources");
  out.Write(DumpJsonFragmentForTerminal(SourcesJson(context), pretty, 1));
  out.Write(pretty ? "\n}" : "}");
}

}  // namespace

void WriteEventsJson(const std::vector<kmsg::KernelEvent>& events, const EventsContext& context,
                     bool pretty, const JsonSink& sink) {
  try {
    WriteEventsJsonPieces(events, context, pretty, sink);
  } catch (...) {
    // Only allocation can fail: what was written stays; the document is cut.
  }
}

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
  std::string text;
  WriteEventsJson(events, context, pretty, [&text](std::string_view piece) { text += piece; });
  return text;
}

}  // namespace gw::render
