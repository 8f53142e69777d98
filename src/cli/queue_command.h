// The queue's client commands: `gpuwarden run` (submit, and by default on a
// terminal wait for it, streaming its output), `queue`, `jobs`, `cancel`,
// `hold`, `release`, `logs`. They talk to gpuwardend over its socket
// (docs/protocol.md); the daemon decides who may do what.
#ifndef GPUWARDEN_CLI_QUEUE_COMMAND_H_
#define GPUWARDEN_CLI_QUEUE_COMMAND_H_

#include <cstdint>
#include <string>
#include <vector>

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
  std::vector<std::string> command;  // after --
};
int RunSubmit(const RunArgs& args);

struct QueueArgs {
  std::string socket;
  bool json = false;
  bool all = false;            // jobs: every job, not only the recent ones
  bool mine = false;           // jobs: only the caller's
  size_t limit = 50;           // jobs: how many (newest first)
  std::vector<int64_t> ids;    // jobs (shown in full) / cancel / hold / release / logs
  bool stderr_stream = false;  // logs --stderr
  bool follow = false;         // logs -f
};
int RunQueue(const QueueArgs& args);                           // `gpuwarden queue`
int RunJobs(const QueueArgs& args);                            // `gpuwarden jobs [--json] [JOB...]`
int RunControl(const QueueArgs& args, const std::string& op);  // cancel / hold / release
int RunLogs(const QueueArgs& args);

}  // namespace gw::cli

#endif  // GPUWARDEN_CLI_QUEUE_COMMAND_H_
