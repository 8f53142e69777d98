// The queue panel's data: gpuwardend's `queue` op (docs/protocol.md), asked
// with a short timeout so that a daemon that does not answer can never hold
// up the probe thread for long. When no daemon runs, the panel says so.
#ifndef GPUWARDEN_WATCH_QUEUE_VIEW_H_
#define GPUWARDEN_WATCH_QUEUE_VIEW_H_

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "watch/model.h"

namespace gw::watch {

// The view of a `queue` reply ({"ok": true, "jobs": [...], "now_unix_ms":
// N, "degraded": [{"what", "detail", "since_unix_ms"}]}). Tolerant: unknown fields are ignored and
// missing ones left empty (the daemon may add or drop private fields such as env and cwd); a reply
// that is not ok gives kError with the daemon's message. Pure.
QueueView ParseQueueReply(const nlohmann::json& reply);

// Asks the daemon at `socket_path` for its queue (queue::Client), the
// request and its reply each within `timeout_ms`. kNoDaemon when nothing
// listens there; kError when it does not answer in time or refuses.
QueueView FetchQueue(const std::string& socket_path, int64_t timeout_ms);

}  // namespace gw::watch

#endif  // GPUWARDEN_WATCH_QUEUE_VIEW_H_
