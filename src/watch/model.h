// What `gpuwarden watch` shows: the latest look at the server (snapshot,
// diagnosis, queue) and what the probe thread said about the driver. Plain
// values; the probe thread produces Frames, the UI thread folds them into
// its WatchModel.
#ifndef GPUWARDEN_WATCH_MODEL_H_
#define GPUWARDEN_WATCH_MODEL_H_

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/snapshot.h"
#include "diagnose/verdict.h"

namespace gw::watch {

// One job of gpuwardend's queue, as the `queue` op reports it. Text fields
// are sanitised for a terminal.
struct QueueJob {
  int64_t id = 0;
  std::string user;
  std::string name;
  std::string state;  // "running", "queued", "held", "starting", ...
  unsigned gpus = 0;
  uint64_t vram_bytes = 0;  // Per GPU; 0 = not declared: a whole GPU (queue/policy.h).
  std::optional<int> position;
  std::vector<unsigned> gpu_indices;  // Where it runs.
  std::string wait_code;              // "resources", "held", ... ("" when running).
  std::string wait_message;
  std::optional<int64_t> since_unix_ms;  // Started (running) or submitted (waiting).
  std::optional<int64_t> estimated_start_unix_ms;
};

struct QueueView {
  enum class State {
    kNotAsked,  // No probe has asked yet.
    kNoDaemon,  // No gpuwardend answers on the socket.
    kError,     // It answered, but not with a queue (message says what).
    kOk,
  };
  State state = State::kNotAsked;
  std::string message;         // For kNoDaemon and kError; sanitised.
  std::vector<QueueJob> jobs;  // Running first, then waiting in order.
  int64_t now_unix_ms = 0;     // The daemon's clock.
  // What the daemon says it cannot do now ("storage: queue storage not
  // writable: ..."), one line each, sanitised; empty when it is fine.
  std::vector<std::string> degraded;
};

// What one round of the probe thread produced.
struct Frame {
  // The new look at the server; null when the probe did not ask the driver
  // (a previous call is still stuck in it).
  std::shared_ptr<const Snapshot> snapshot;
  std::shared_ptr<const diagnose::Diagnosis> diagnosis;
  QueueView queue;
  // The driver is not answering: this round's probe hit its deadline, or a
  // call of an earlier round has still not returned. `driver_message` says
  // which call and since when.
  bool driver_stuck = false;
  std::string driver_message;
  int64_t time_unix_ms = 0;  // When the round ended.
  double probe_ms = 0;       // How long it took.
};

// What the UI shows, folded from Frames (ApplyFrame).
struct WatchModel {
  std::shared_ptr<const Snapshot> snapshot;  // Null until the first answer.
  std::shared_ptr<const diagnose::Diagnosis> diagnosis;
  QueueView queue;
  bool driver_stuck = false;
  std::string driver_message;
  int64_t updated_unix_ms = 0;  // Time of the last Frame.
  int64_t data_unix_ms = 0;     // Time of the snapshot shown.
  uint64_t frames = 0;
};

// Folds `frame` into `model`: a frame without a snapshot keeps the last one
// (shown as stale) but takes the driver state and the queue.
void ApplyFrame(WatchModel& model, Frame frame);

}  // namespace gw::watch

#endif  // GPUWARDEN_WATCH_MODEL_H_
