// gpuwardend: one queue per server. Serves the socket protocol (protocol.h),
// keeps every job durable in the store before answering, places jobs with
// the policy (policy.h) on fresh GPU snapshots, starts them through
// per-job supervisors (runner.h), watches their VRAM, and recovers after a
// crash: queued jobs stay queued, live supervisors are adopted again, jobs
// that ended meanwhile get their real exit status, and a job whose launch
// was interrupted is claimed back so it can never start twice.
//
// The parts, each in its own file:
//   socket_server.h  the socket and its clients (framing, backpressure, timeouts)
//   ops.h            the request handlers (one request in, one reply out)
//   job_table.h      the jobs' life, over JobStore, Supervisors, Clock, the
//                    process table (ProcReader) and ProcessControl
//   job_end.h        the pure judgements: how a run ended, what recovery does
//   snapshotter.h    the GPU snapshot worker (its own thread)
//   fleet/           what the HTTP listener serves (metrics.h), from the
//                    FleetView this loop publishes after each full look
//   daemon_log.h     the daemon's own log on stderr
// This file wires them and runs the event loop: one thread polls the socket,
// the clients, the supervisors' Watch descriptors, the snapshot worker and
// a signalfd; GPU snapshots are taken on the worker's thread so a wedged
// driver never stalls the socket.
#ifndef GPUWARDEN_QUEUE_DAEMON_H_
#define GPUWARDEN_QUEUE_DAEMON_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "act/process_control.h"
#include "collect/collector.h"
#include "core/clock.h"
#include "core/result.h"
#include "fleet/http_listener.h"
#include "fleet/metrics.h"
#include "queue/daemon_log.h"
#include "queue/job_store.h"
#include "queue/job_table.h"
#include "queue/policy.h"
#include "queue/supervisors.h"

namespace gw::queue {

struct DaemonOptions {
  std::string socket_path;
  std::string state_dir;  // Holds queue.db, jobs/<id>/, the lock.
  collect::CollectOptions collect;
  // The job table's options: supervisor, policy, grace, VRAM guard (its
  // state_dir is this state_dir, whatever it holds).
  JobTableOptions table;
  // How often the GPUs are read while jobs wait (a GPU freed by someone
  // else is noticed this fast) and while none does (VRAM guard, peaks).
  int64_t poll_waiting_ms = 50;
  int64_t poll_idle_ms = 1000;
  // How often a sampled look also scans every process's open files for
  // device-file holders the driver does not list (the costliest part of a
  // look); the looks between carry the last scan's holders (snapshotter.h).
  int64_t holder_scan_every_ms = 60'000;
  // How often a driver-listed GPU process's /proc/PID/stat (state, parent,
  // CPU time, RSS) is read again; its lasting facts are read once, and the
  // driver's list says at every look that it still runs (cached_collector.h).
  // 30 s: a zombie, a process stuck in D or a new parent shows within 30 s,
  // and each read costs the kernel ~6 us a process (at 256 processes every
  // 10 s, a tenth of the 1-Hz look's CPU).
  int64_t process_stat_every_ms = 30'000;
  bool system_mode = false;  // Root, serving every user; else only the daemon's own user.
  // Run the queue (socket, store, jobs). Off: a node that only shows its
  // GPUs (--no-queue): no store and no jobs; the socket (history, usage,
  // trends), the state directory, its lock and history.db stay.
  bool queue = true;
  // Serve /metrics and the web page here (docs/metrics.md, docs/web.md);
  // unset: no HTTP listener.
  std::optional<fleet::ListenAddress> listen;
  fleet::MetricsOptions metrics;
  // The token every HTTP request must carry (web/web_auth.h); unset: none.
  std::optional<std::string> web_token;
  // The kernel log, for Xids in the diagnosis and the metrics: read with a
  // full look every kernel_log_every_ms, from `kernel_log` ("" = the
  // system's own sources) when read_kernel_log.
  bool read_kernel_log = false;
  std::string kernel_log;
  int64_t kernel_log_every_ms = 60'000;
};

// Parts to use instead of the real ones (tests); each one left empty is the
// real one: the SQLite store STATE_DIR/queue.db, the runner's supervisors,
// pidfd process control over collect.proc_root, the real clock, stderr.
struct DaemonParts {
  std::unique_ptr<JobStore> store;
  std::unique_ptr<Supervisors> supervisors;
  std::unique_ptr<act::ProcessControl> control;
  // Read from the snapshot worker's thread too: must be thread-safe.
  std::unique_ptr<Clock> clock;
  DaemonLog::Sink log_sink;
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
  // The same with the parts given (the others real).
  static Result<std::unique_ptr<Daemon>> StartWith(DaemonOptions options, DaemonParts parts);
  virtual ~Daemon() = default;
  // Serves until SIGTERM or SIGINT; returns the exit code.
  virtual int Run() = 0;
};

}  // namespace gw::queue

#endif  // GPUWARDEN_QUEUE_DAEMON_H_
