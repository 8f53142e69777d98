// Options every subcommand shares, and how they turn into a probe's settings.
#ifndef GPUWARDEN_CLI_GLOBAL_OPTIONS_H_
#define GPUWARDEN_CLI_GLOBAL_OPTIONS_H_

#include <string>

#include "cli/terminal.h"
#include "collect/collector.h"
#include "core/result.h"

namespace gw::cli {

struct GlobalOptions {
  std::string sim_scenario;  // --sim FILE
  double timeout_s = 2.0;    // --timeout: deadline for one probe.
  ColorChoice color = ColorChoice::kAuto;
  std::string proc_root = "/proc";  // --proc-root (e.g. the host's /proc inside a container)
  std::string dev_dir = "/dev";     // --dev-dir
};

// The directory of the running program (/proc/self/exe), "." when unknown:
// where the build tree and the installed layout keep what it reads.
std::string ExecutableDir();

// Where NVML comes from: GPUWARDEN_NVML_LIB when set, else libnvidia-ml.so.1;
// with --sim, the simulator built beside this binary (GPUWARDEN_NVML_LIB still
// wins, so tests can pick a variant). --sim also validates the scenario file and
// exports GPUWARDEN_SIM_SCENARIO for the simulator.
// Errors: code "bad_input" (scenario missing/malformed), "no_simulator".
Result<collect::CollectOptions> ResolveCollectOptions(const GlobalOptions& options);

}  // namespace gw::cli

#endif  // GPUWARDEN_CLI_GLOBAL_OPTIONS_H_
