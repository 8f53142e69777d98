// The queue's client commands: `gpuwarden run` (submit, and by default on a
// terminal wait for it, streaming its output), `queue`, `jobs`, `cancel`,
// `hold`, `release`, `logs`. They talk to gpuwardend over its socket
// (docs/protocol.md); the daemon decides who may do what.
#ifndef GPUWARDEN_CLI_QUEUE_COMMAND_H_
#define GPUWARDEN_CLI_QUEUE_COMMAND_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/result.h"
#include "queue/job.h"

namespace gw::cli {

struct RunArgs {
  std::string socket;  // --socket ("" = GPUWARDEN_SOCKET, system, personal)
  unsigned gpus = 1;
  std::string vram;   // --vram 20G (per GPU)
  int max_util = -1;  // --max-util PCT
  int priority = 0;
  std::string window;  // --window 22:00-07:00
  std::string after;   // --after "3,4": job ids
  bool nvlink = false;
  std::string name;
  std::string time_limit;  // --time-limit 4h
  bool preemptible = false;
  bool wait = false;
  bool detach = false;
  bool slurm = false;  // --slurm: submit with sbatch (slurm_queue_command.h)
  double slurm_timeout_s = 20;
  std::vector<std::string> command;  // after --
};
int RunSubmit(const RunArgs& args);

// The job `run` asks for, from its command line (the working directory,
// environment and umask of this process; the command looked up as the
// supervisor will); nullopt when it is valid, else the exit code after one
// line on stderr naming the bad value (kExitUsage) or the missing command
// (kExitUnsatisfiable).
std::optional<int> SpecFromRunArgs(const RunArgs& args, queue::JobSpec& spec);

struct QueueArgs {
  std::string socket;
  bool json = false;
  bool all = false;            // jobs: every job, not only the recent ones
  bool mine = false;           // jobs: only the caller's
  size_t limit = 50;           // jobs: how many (newest first)
  std::vector<int64_t> ids;    // jobs (shown in full) / cancel / hold / release / logs
  bool stderr_stream = false;  // logs --stderr
  bool follow = false;         // logs -f
  bool slurm = false;          // queue / jobs / cancel --slurm (slurm_queue_command.h)
  double slurm_timeout_s = 20;
};
int RunQueue(const QueueArgs& args);                           // `gpuwarden queue`
int RunJobs(const QueueArgs& args);                            // `gpuwarden jobs [--json] [JOB...]`
int RunControl(const QueueArgs& args, const std::string& op);  // cancel / hold / release
int RunLogs(const QueueArgs& args);

// The parts with rules of their own, pure (tested in queue_command_test.cc).

// How `run --wait` ends for a job that ended (JOB as in docs/protocol.md):
// the job's own status when it exited (0..255) or a signal ended it
// (128 + N); 1 when it ended without a status of its own (cancelled, failed
// to start, time or VRAM limit, an --after job failed, lost); and the one
// line (without "gpuwarden: ") saying why it ended. `interrupted_by`: the
// signal that made `run --wait` cancel the job (SIGINT for Ctrl-C), 0 if
// none; then the code is 128 + that signal, whatever the job did.
struct WaitEnd {
  int exit_code = 1;
  std::string line;
};
WaitEnd DescribeJobEnd(const nlohmann::json& job, int interrupted_by);

// The exit code for a failed request (queue::Client's errors and the
// daemon's refusals): 15 unreachable, 2 bad request, 18 storage refused,
// 19 unsatisfiable, 16 any other refusal.
int ExitCodeForError(const Error& e);

// What `cancel`/`hold`/`release` print after "job N: " for the daemon's
// reply: a running job being cancelled is "stopping (SIGTERM, then SIGKILL
// after 10s)", not its state "running".
std::string ControlResultText(const std::string& op, const nlohmann::json& reply);

}  // namespace gw::cli

#endif  // GPUWARDEN_CLI_QUEUE_COMMAND_H_
