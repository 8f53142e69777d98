// The daemon's history ops on the socket (docs/protocol.md): "history" (the
// points of the last since_s seconds) and "usage" (per user, GPU-hours,
// memory-hours, their idle parts and jobs started). They read the History
// and, for jobs, the JobTable (null without the queue); no state of their own.
#ifndef GPUWARDEN_QUEUE_HISTORY_OPS_H_
#define GPUWARDEN_QUEUE_HISTORY_OPS_H_

#include <cstdint>

#include <nlohmann/json.hpp>

#include "diagnose/idle_time.h"
#include "fleet/history.h"
#include "queue/job_table.h"

namespace gw::queue {

// {"op": "history", "since_s": N} -> {"ok", "from_unix_s", "to_unix_s", "points": [...]}.
// The reply is JSON text written point by point, in pieces (RawReply,
// socket_server.h); AppendReplyText gives it whole.
nlohmann::json HistoryReply(fleet::History& history, int64_t now_unix_s,
                            const nlohmann::json& request);

// {"op": "usage", "since_s": N} -> {"ok", "from_unix_s", "to_unix_s", "covered_s",
// "users": [{"user", "gpu_hours", "idle_gpu_hours", "vram_gib_hours",
// "idle_vram_gib_hours", "jobs_started"}]}; jobs_started is null without a queue.
nlohmann::json UsageReply(fleet::History& history, JobTable* table, int64_t now_unix_s,
                          const nlohmann::json& request);

// {"op": "trends", "lookback_s": N} -> {"ok", "trends": {...}} (fleet/trends.h,
// docs/protocol.md): how long each GPU has sat held and idle or full, and the
// queue over the last hour, from the points of the last lookback_s seconds
// (default a day, at most 7 days: the minute tier), judged with the default
// marks of the diagnosis, with the daemon's own looks at each holder
// (`activity`, diagnose/idle_time.h; null: none kept). The memory the points
// took is returned to the kernel after (ReturnFreedMemory).
nlohmann::json TrendsReply(fleet::History& history, int64_t now_unix_s,
                           const nlohmann::json& request,
                           const diagnose::ActivityHistory* activity = nullptr);

}  // namespace gw::queue

#endif  // GPUWARDEN_QUEUE_HISTORY_OPS_H_
