// `gpuwarden watch`: the live terminal view — each GPU now and over the last
// minutes, who holds it, the verdict and top findings, the queue — with the
// stop action of `gpuwarden kill` on the selected process. See docs/watch.md.
#ifndef GPUWARDEN_CLI_WATCH_COMMAND_H_
#define GPUWARDEN_CLI_WATCH_COMMAND_H_

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "cli/global_options.h"
#include "cli/stop_path.h"

namespace gw::cli {

struct WatchArgs {
  double interval_s = 1.0;      // -n SECONDS
  bool readonly = false;        // --readonly: every action off.
  std::string history = "10m";  // --history DURATION: how long the graphs remember.
  std::string socket;           // --socket (global): gpuwardend's socket.
  StopFlags stop;  // The stop action's settings, as for `kill` (config file otherwise).
};

// Adds the `watch` subcommand and its options to `app`, filling `args`.
CLI::App* AddWatchSubcommand(CLI::App& app, WatchArgs& args);

// Runs until q or a signal; returns the exit code (0 after q, 128 + signal
// number after SIGINT/SIGTERM/SIGHUP, 2 without a terminal, 3/4 when the
// probe cannot be set up as for `status`).
int RunWatch(const GlobalOptions& global, const WatchArgs& args);

}  // namespace gw::cli

#endif  // GPUWARDEN_CLI_WATCH_COMMAND_H_
