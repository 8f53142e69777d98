// gpuwardend: one queue per server. Serves the socket protocol (protocol.h),
// keeps every job durable in the store before answering, places jobs with
// the policy (policy.h) on fresh GPU snapshots, starts them through
// per-job supervisors (runner.h), watches their VRAM, and recovers after a
// crash: queued jobs stay queued, live supervisors are adopted again, jobs
// that ended meanwhile get their real exit status, and a job whose launch
// was interrupted is claimed back so it can never start twice.
//
// One thread runs the event loop (poll on the socket, clients, supervisors'
// pidfds, signals); GPU snapshots are taken on a worker thread so a wedged
// driver never stalls the socket.
#ifndef GPUWARDEN_QUEUE_DAEMON_H_
#define GPUWARDEN_QUEUE_DAEMON_H_

#include <cstdint>
#include <memory>
#include <string>

#include "collect/collector.h"
#include "core/result.h"
#include "queue/policy.h"

namespace gw::queue {

struct DaemonOptions {
  std::string socket_path;
  std::string state_dir;        // Holds queue.db, jobs/<id>/, the lock.
  std::string supervisor_path;  // gpuwarden-supervise.
  collect::CollectOptions collect;
  PolicyConfig policy;
  // How often the GPUs are read while jobs wait (a GPU freed by someone
  // else is noticed this fast) and while none does (VRAM guard, peaks).
  int64_t poll_waiting_ms = 50;
  int64_t poll_idle_ms = 1000;
  double grace_s = 10;  // Stop: SIGTERM, this, SIGKILL.
  bool vram_guard_stop =
      true;  // A job over its VRAM by more than the margin is stopped (else warned).
  bool system_mode = false;  // Root, serving every user; else only the daemon's own user.
};

class Daemon {
 public:
  // REQUIRES: SIGTERM, SIGINT, SIGHUP and SIGCHLD blocked in every thread
  // (block them before any thread starts): the loop reads them from a
  // signalfd, and a thread that left them unblocked would die of them.
  // Opens the store, takes the state directory's lock (one daemon per state
  // directory), binds the socket (a stale socket file is replaced; a live
  // daemon on it is an error) and recovers the jobs of a previous run.
  static Result<std::unique_ptr<Daemon>> Start(DaemonOptions options);
  virtual ~Daemon() = default;
  // Serves until SIGTERM or SIGINT; returns the exit code.
  virtual int Run() = 0;
};

}  // namespace gw::queue

#endif  // GPUWARDEN_QUEUE_DAEMON_H_
