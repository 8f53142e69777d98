// gpuwarden-power: the program behind Slurm's ResumeProgram and
// SuspendProgram for cloud nodes (docs/capacity.md). The templates
// /etc/gpuwarden/slurm/{resume,suspend} exec it with the hostlist Slurm gave
// and the site's one command:
//
//   gpuwarden-power resume|suspend HOSTLIST [--timeout DURATION]
//                   [--parallel N] [--log FILE] -- /abs/command ARG... {node} ...
//
// It runs the command once per node of HOSTLIST ("gpu[1-3,5]"), {node}
// replaced by the node's name in every argument, at most N at a time, each
// killed past the timeout. Slurm starts these programs with most signals
// blocked and no environment to speak of; the program's main() unblocks and
// resets every signal and sets a PATH first (so the commands it starts do
// not inherit a blocked SIGTERM), and only absolute command paths are taken.
//
// Exit codes: 0 every node's command succeeded; 1 one or more failed (each
// logged); 2 a bad command line, or a template not filled in.
#ifndef GPUWARDEN_CAPACITY_POWER_H_
#define GPUWARDEN_CAPACITY_POWER_H_

#include <functional>
#include <string>
#include <vector>

#include "core/result.h"
#include "os/run_command.h"

namespace gw::capacity {

inline constexpr int kPowerExitOk = 0;
inline constexpr int kPowerExitFailed = 1;
inline constexpr int kPowerExitUsage = 2;

// The longest --timeout: a day, far past any cloud's start or stop call, and
// within the milliseconds an os::CommandOptions holds.
inline constexpr double kMaxPowerTimeoutS = 86400;

struct PowerArgs {
  std::string action;  // "resume" or "suspend"
  std::string hostlist;
  std::vector<std::string> command;  // As given, {node} not yet replaced.
  double timeout_s = 300;
  int parallel = 16;
  std::string log_path;  // "": syslog only.
};

// argv without the program name. Errors ("usage"), one line naming the
// problem: an unknown action or option, no command after "--", a command
// that is not an absolute path (a template not filled in is named as such),
// a command without {node}, a --timeout outside 1 ms to kMaxPowerTimeoutS.
Result<PowerArgs> ParsePowerArgs(const std::vector<std::string>& argv);

struct NodeCommand {
  std::string node;
  std::vector<std::string> argv;
};
// The command for each node of the hostlist. Errors ("usage"): a bad
// hostlist, a node name with characters other than letters, digits, '.',
// '_' and '-'.
Result<std::vector<NodeCommand>> PlanPower(const PowerArgs& args);

struct NodeOutcome {
  std::string node;
  bool ok = false;
  std::string detail;  // "exited with status 0 in 1.2 s", "... : <its first line>"
};
// Runs each command through `runner`, `args.parallel` at a time, and calls
// `log` with one line per node as it ends (from the worker threads, one at a
// time). The outcomes are in the plan's order.
std::vector<NodeOutcome> RunPowerPlan(const std::vector<NodeCommand>& plan, const PowerArgs& args,
                                      os::CommandRunner& runner,
                                      const std::function<void(const std::string&)>& log);

// The whole run: parse, plan, run, log; the exit code. `log` gets every line
// (the caller writes them to syslog and the log file).
int RunPower(const std::vector<std::string>& argv, os::CommandRunner& runner,
             const std::function<void(const std::string&)>& log);

}  // namespace gw::capacity

#endif  // GPUWARDEN_CAPACITY_POWER_H_
