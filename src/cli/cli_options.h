// The command line shared by gpuwarden's two programs: the global options and
// the queue's subcommands (run, queue, jobs, cancel, hold, release, logs).
//
// `gpuwarden` is a small front (front_main.cc) that runs the queue's client
// commands itself and execs the full program, gpuwarden-tools (main.cc), for
// everything else. A submit from a shell then starts one statically linked
// program that loads no shared library (not libstdc++, fmt, NVML's, ncurses,
// pugixml, toml++ or zlib) and does not build every subcommand's parser: it
// starts within 0.1 ms of task-spooler's `tsp` (docs/benchmarks.md). Both
// programs register these options from here, so they parse the same
// command line the same way.
#ifndef GPUWARDEN_CLI_CLI_OPTIONS_H_
#define GPUWARDEN_CLI_CLI_OPTIONS_H_

#include <CLI/CLI.hpp>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cli/global_options.h"
#include "cli/queue_command.h"

namespace gw::cli {

inline constexpr const char* kDescription =
    "gpuwarden — who holds which GPU on a shared server, and why it is busy.\n";

// For an option whose empty value would read as "not given" (--need '',
// --since '', --kernel-log ''): an empty value is a usage error, named.
const CLI::Validator& NonEmpty();

// The command-line conventions (docs/cli.md), one validator each, so that
// every flag of a kind accepts the same forms and refuses in the same words
// ("--window: \"abc\" is not a duration: 30s, 5m, 2h, 1d or plain seconds").
//
// A time flag: ParseDuration's forms ("30s", "5m", "2h", "1d", "1h30m", plain
// seconds), within [min_s, max_s]; the option receives seconds.
CLI::Validator Seconds(double min_s, double max_s);
// A size flag: ParseSize's forms ("512M", "20G", "1.5T" in powers of 1024,
// plain bytes); the option receives the text as typed.
const CLI::Validator& Bytes();
// A "since" flag (--since): a time flag from now back, up to ten years; the
// option receives the text as typed.
const CLI::Validator& Since();
// One of these words, in any case; the option receives it in lower case.
CLI::Validator OneOf(std::vector<std::string> words);
// A process id: a whole number above 0.
const CLI::Validator& ProcessId();
// A count (advise --batch, --seq, ...): a whole number in [lo, hi].
CLI::Validator WholeNumber(uint64_t lo, uint64_t hi);

// Every gpuwarden command, for the "did you mean" of an unknown one.
// The nearest command to `name` (an edit or two away, or one it begins),
// or "" when none is near.
std::string NearestCommand(std::string_view name, const std::vector<std::string>& commands);

// --sim, --timeout, --color, --proc-root, --dev-dir and --socket.
void AddGlobalOptions(CLI::App& app, GlobalOptions& global, std::string& socket);

// The queue's subcommands, parsed into `args`. A subcommand that was not
// registered (AddQueueSubcommands' `only`) stays nullptr.
struct QueueCommands {
  RunArgs run_args;
  QueueArgs queue_args;
  CLI::App* run = nullptr;
  CLI::App* queue = nullptr;
  CLI::App* jobs = nullptr;
  std::map<std::string, CLI::App*> controls;  // cancel, hold, release
  CLI::App* logs = nullptr;
};
// Registers the queue's subcommands; `only` non-empty: that one alone. The
// front knows the subcommand before it parses (SubcommandOf) and builds only
// its parser: building all seven cost about 0.03 ms of the 0.45 ms of CPU a
// submit from a shell takes (perf stat, 8 × 60 starts each).
void AddQueueSubcommands(CLI::App& app, QueueCommands& q, std::string_view only = {});

// After app.parse(): runs the queue subcommand that was parsed and returns
// its exit code; nullopt when none was.
std::optional<int> RunParsedQueueSubcommand(QueueCommands& q, const std::string& socket);

// After app.parse(): the parsed queue subcommand asked for Slurm (--slurm),
// which gpuwarden-tools runs (slurm_queue_command.h), not the front.
bool WantsSlurm(const QueueCommands& q);

// app.parse(argc, argv) with gpuwarden's answers to what stops a parse:
// --help and --version printed (0), a usage error named in one line on
// stderr (kExitUsage), also for a command that does not exist (with the
// nearest one). nullopt: parsed, go on.
std::optional<int> ParseCommandLine(CLI::App& app, int argc, char** argv);

// The subcommand named on the command line: the first argument that is not
// an option or a global option's value, as AddGlobalOptions defines them;
// "" when there is none, or an option before it asks for help or the
// version (the whole program answers those).
std::string_view SubcommandOf(int argc, char** argv);
bool IsQueueSubcommand(std::string_view name);

}  // namespace gw::cli

#endif  // GPUWARDEN_CLI_CLI_OPTIONS_H_
