// KernelEvent -> JSON, for `gpuwarden events --json` and the benchmark driver.
#ifndef GPUWARDEN_KMSG_EVENT_JSON_H_
#define GPUWARDEN_KMSG_EVENT_JSON_H_

#include <nlohmann/json.hpp>
#include <vector>

#include "kmsg/kernel_event.h"

namespace gw::kmsg {

// One object per event: every KernelEvent field (unknown -> null; strings made
// valid UTF-8) but time_from_boot_start, which the renderer gives as
// time_source. The catalog's explanation is the renderer's (xid_info).
nlohmann::json EventToJson(const KernelEvent& ev);
nlohmann::json EventsToJson(const std::vector<KernelEvent>& events);

}  // namespace gw::kmsg

#endif  // GPUWARDEN_KMSG_EVENT_JSON_H_
