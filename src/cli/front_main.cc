// gpuwarden: the front (cli_options.h). The queue's client commands run here,
// in a process that links only what they need; every other command line
// (status, why, --help, ...) is handed to gpuwarden-tools, the whole
// program, by exec: same PID, same arguments, same exit code.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>

#include "cli/cli_options.h"
#include "cli/exit_codes.h"

namespace {

// gpuwarden-tools beside this program (the build tree, /usr/bin), else in
// ../lib/gpuwarden/ (as gpuwarden-supervise).
std::string ToolsPath() {
  char self[4096];
  const ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  std::string dir = ".";
  if (n > 0) {
    self[n] = '\0';
    dir = self;
    dir.erase(dir.rfind('/') == std::string::npos ? 0 : dir.rfind('/'));
  }
  for (const std::string& candidate :
       {dir + "/gpuwarden-tools", dir + "/../lib/gpuwarden/gpuwarden-tools"}) {
    if (access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return dir + "/gpuwarden-tools";
}

// The exit code; nullopt: the command line asks for what only
// gpuwarden-tools does (--slurm).
std::optional<int> RunQueueCommand(std::string_view subcommand, int argc, char** argv) {
  CLI::App app{gw::cli::kDescription, "gpuwarden"};
  app.footer(gw::cli::kExitCodeHelp);
  app.require_subcommand(1);
  app.fallthrough();              // Global options after the command too, as in gpuwarden-tools.
  gw::cli::GlobalOptions global;  // Accepted as everywhere; the queue uses none but --socket.
  std::string socket;
  gw::cli::AddGlobalOptions(app, global, socket);
  gw::cli::QueueCommands queue;
  gw::cli::AddQueueSubcommands(app, queue, subcommand);
  if (auto stopped = gw::cli::ParseCommandLine(app, argc, argv)) return *stopped;
  if (gw::cli::WantsSlurm(queue)) return std::nullopt;
  return gw::cli::RunParsedQueueSubcommand(queue, socket).value_or(gw::cli::kExitUsage);
}

}  // namespace

int main(int argc, char** argv) {
  const std::string_view subcommand = gw::cli::SubcommandOf(argc, argv);
  if (gw::cli::IsQueueSubcommand(subcommand)) {
    try {
      if (std::optional<int> code = RunQueueCommand(subcommand, argc, argv)) return *code;
    } catch (const std::exception& e) {
      std::fprintf(stderr, "gpuwarden: internal error: %s\n", e.what());
      return gw::cli::kExitInternal;
    }
  }
  const std::string tools = ToolsPath();
  execv(tools.c_str(), argv);
  std::fprintf(stderr, "gpuwarden: cannot run %s: %s\n", tools.c_str(), std::strerror(errno));
  return gw::cli::kExitInternal;
}
