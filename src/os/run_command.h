// Running another program to read what it prints: the one home of that idiom
// for commands whose whole output is wanted at once (Slurm's sinfo, squeue,
// scontrol, sbatch). The program is exec'd as argv (never through a shell),
// with stdin from /dev/null, and is killed when it outlives its deadline, so
// a wedged slurmctld or a hung client cannot hang the caller.
#ifndef GPUWARDEN_OS_RUN_COMMAND_H_
#define GPUWARDEN_OS_RUN_COMMAND_H_

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/result.h"

namespace gw::os {

struct CommandOptions {
  int timeout_ms = 10000;
  // Output beyond this (each of stdout and stderr) is an error, never a cut
  // text that a parser would read as complete.
  size_t max_output_bytes = size_t{256} << 20;
  // Set (a value) or removed (nullopt) in the child's environment, which is
  // otherwise this process's.
  std::map<std::string, std::optional<std::string>> env;
};

struct CommandOutput {
  // Exactly one of the two: how the program ended.
  std::optional<int> exit_code;
  std::optional<int> signal;
  std::string out;
  std::string err;

  bool succeeded() const { return exit_code && *exit_code == 0; }
  // "exited with status 2: <first line of stderr>" (of stdout when stderr is
  // empty), "was killed by signal 9".
  std::string Describe() const;
};

// Runs argv (argv[0] a path, or a name looked up in PATH) to its end. Errors:
//   "not_found"  argv[0] does not exist: "NAME: not found"
//   "timeout"    it ran past timeout_ms and was killed: "NAME: no answer within N ms"
//   "too_large"  it printed more than max_output_bytes
//   "io"         it could not be started, or a pipe failed (errno's text)
// A program that ran and failed is not an error: see exit_code and signal.
Result<CommandOutput> RunCommand(const std::vector<std::string>& argv,
                                 const CommandOptions& options = {});

// Runs argv through a function: the seam for code that runs programs, with a
// fake beside its tests. Run may be called from several threads at once
// (gpuwarden-power runs nodes in parallel); implementations must allow it.
class CommandRunner {
 public:
  virtual ~CommandRunner() = default;
  virtual Result<CommandOutput> Run(const std::vector<std::string>& argv,
                                    const CommandOptions& options) = 0;
};

// RunCommand.
class RealCommandRunner final : public CommandRunner {
 public:
  Result<CommandOutput> Run(const std::vector<std::string>& argv,
                            const CommandOptions& options) override {
    return RunCommand(argv, options);
  }
};

}  // namespace gw::os

#endif  // GPUWARDEN_OS_RUN_COMMAND_H_
