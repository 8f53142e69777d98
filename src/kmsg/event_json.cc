#include "kmsg/event_json.h"

#include "core/text.h"

namespace gw::kmsg {
namespace {

template <typename T>
nlohmann::json OrNull(const Opt<T>& v) {
  return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
}

nlohmann::json TextOrNull(const Opt<std::string>& v) {
  return v ? nlohmann::json(ToValidUtf8(*v)) : nlohmann::json(nullptr);
}

}  // namespace

nlohmann::json EventToJson(const KernelEvent& ev) {
  nlohmann::json j = {
      {"time_unix_ms", OrNull(ev.time_unix_ms)},
      {"monotonic_s", OrNull(ev.monotonic_s)},
      {"kind", ev.kind},
      {"pci_bus_id", TextOrNull(ev.pci_bus_id)},
      {"xid", OrNull(ev.xid)},
      {"pid", OrNull(ev.pid)},
      {"process_name", TextOrNull(ev.process_name)},
      {"gpu_instance", OrNull(ev.gpu_instance)},
      {"compute_instance", OrNull(ev.compute_instance)},
      {"minor_number", OrNull(ev.minor_number)},
      {"detail", ToValidUtf8(ev.detail)},
      {"source", ToValidUtf8(ev.source)},
      {"boot_id", ToValidUtf8(ev.boot_id)},
      {"raw", ToValidUtf8(ev.raw)},
  };
  return j;
}

nlohmann::json EventsToJson(const std::vector<KernelEvent>& events) {
  nlohmann::json arr = nlohmann::json::array();
  for (const auto& ev : events) arr.push_back(EventToJson(ev));
  return arr;
}

}  // namespace gw::kmsg
