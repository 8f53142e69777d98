#include "kmsg/event_json.h"

#include "core/json_out.h"

namespace gw::kmsg {

nlohmann::json EventToJson(const KernelEvent& ev) {
  nlohmann::json j = {
      {"time_unix_ms", JsonOrNull(ev.time_unix_ms)},
      {"monotonic_s", JsonOrNull(ev.monotonic_s)},
      {"kind", ev.kind},
      {"pci_bus_id", JsonOrNull(ev.pci_bus_id)},
      {"xid", JsonOrNull(ev.xid)},
      {"pid", JsonOrNull(ev.pid)},
      {"process_name", JsonOrNull(ev.process_name)},
      {"gpu_instance", JsonOrNull(ev.gpu_instance)},
      {"compute_instance", JsonOrNull(ev.compute_instance)},
      {"minor_number", JsonOrNull(ev.minor_number)},
      {"detail", JsonText(ev.detail)},
      {"source", JsonText(ev.source)},
      {"boot_id", JsonText(ev.boot_id)},
      {"raw", JsonText(ev.raw)},
  };
  return j;
}

nlohmann::json EventsToJson(const std::vector<KernelEvent>& events) {
  nlohmann::json arr = nlohmann::json::array();
  for (const auto& ev : events) arr.push_back(EventToJson(ev));
  return arr;
}

}  // namespace gw::kmsg
