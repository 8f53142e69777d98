// gpuwarden: see who holds which GPU, know why the server is busy.
//
// main() only parses the command line and dispatches; each subcommand lives in
// its own *_command.cc and returns an exit code from exit_codes.h.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>

#include "cli/exit_codes.h"
#include "cli/global_options.h"
#include "cli/status_command.h"
#include "nvml/probe.h"

namespace {

constexpr const char* kDescription =
    "gpuwarden — who holds which GPU on a shared server, and why it is busy.\n";

int Main(int argc, char** argv) {
  using gw::cli::ColorChoice;
  CLI::App app{kDescription, "gpuwarden"};
  app.footer(gw::cli::kExitCodeHelp);
  app.set_version_flag("--version", "gpuwarden " GW_VERSION);
  app.require_subcommand(1);

  gw::cli::GlobalOptions global;
  app.add_option("--sim", global.sim_scenario,
                 "Read GPUs from gpuwarden's simulated NVML driven by this scenario file "
                 "(see docs/scenarios.md)")
      ->type_name("FILE");
  app.add_option("--timeout", global.timeout_s,
                 "Deadline in seconds for one probe of the driver; a driver that does not "
                 "answer in time is reported as not responding")
      ->type_name("SECONDS")
      ->check(CLI::Range(0.05, 600.0))
      ->capture_default_str();
  std::map<std::string, ColorChoice> colors = {
      {"auto", ColorChoice::kAuto}, {"always", ColorChoice::kAlways}, {"never", ColorChoice::kNever}};
  app.add_option("--color", global.color,
                 "Colour output: auto (a terminal, unless NO_COLOR is set), always, never")
      ->type_name("WHEN")
      ->transform(CLI::CheckedTransformer(colors, CLI::ignore_case));
  app.add_option("--proc-root", global.proc_root,
                 "Where the host's /proc is mounted (e.g. inside a container)")
      ->type_name("DIR")
      ->capture_default_str();
  app.add_option("--dev-dir", global.dev_dir, "Where the NVIDIA device files are")
      ->type_name("DIR")
      ->capture_default_str();

  gw::cli::StatusArgs status_args;
  CLI::App* status =
      app.add_subcommand("status", "Every GPU and every process that holds one, right now");
  status->add_flag("--json", status_args.json,
                   "Machine-readable output (schema: docs/json.md)");
  status->add_option("--gpu", status_args.gpus, "Only these GPUs (index, UUID or PCI bus id)")
      ->type_name("GPU")
      ->delimiter(',');
  status->add_option("--user", status_args.users, "Only these users' processes (name or uid)")
      ->type_name("USER")
      ->delimiter(',');
  status->add_option("--from", status_args.from,
                     "Read an `nvidia-smi -q -x` dump instead of the live driver")
      ->type_name("FILE");

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::fprintf(stderr, "gpuwarden: %s\nRun 'gpuwarden --help' for usage.\n", e.what());
    return gw::cli::kExitUsage;
  }

  if (status->parsed()) return gw::cli::RunStatus(global, status_args);
  return gw::cli::kExitUsage;
}

}  // namespace

int main(int argc, char** argv) {
  int code = gw::cli::kExitInternal;
  try {
    code = Main(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gpuwarden: internal error: %s\n", e.what());
    code = gw::cli::kExitInternal;
  }
  // After a driver timeout a probe thread may still be blocked inside NVML;
  // ExitProcess then ends without running static destructors under it.
  gw::nvml::ExitProcess(code);
}
