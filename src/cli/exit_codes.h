// gpuwarden's exit codes. Scripts rely on them: keep values stable and keep
// the README's table and `gpuwarden --help` in step with this file.
#ifndef GPUWARDEN_CLI_EXIT_CODES_H_
#define GPUWARDEN_CLI_EXIT_CODES_H_

namespace gw::cli {

enum ExitCode : int {
  kExitOk = 0,
  kExitInternal = 1,         // A bug or an unexpected system failure.
  kExitUsage = 2,            // Bad command line.
  kExitBadInput = 3,         // A file named on the command line is missing or malformed.
  kExitNvmlUnavailable = 4,  // No NVML: library missing, driver not loaded, version mismatch.
  kExitDriverTimeout = 5,    // The driver did not answer within the deadline; output is partial.
  kExitGpuUnreachable = 6,   // One or more GPUs could not be read (lost, no permission).
};

// The table printed by --help and mirrored in the README.
inline constexpr const char* kExitCodeHelp =
    "Exit codes:\n"
    "  0  success\n"
    "  1  internal error\n"
    "  2  bad command line\n"
    "  3  bad input file (--from, --sim): missing, unreadable or malformed\n"
    "  4  NVML unavailable: libnvidia-ml.so.1 missing, driver not loaded, or\n"
    "     driver/library version mismatch\n"
    "  5  driver not responding: the probe hit its deadline (--timeout); output is partial\n"
    "  6  one or more GPUs unreachable (lost, fallen off the bus, no permission)\n";

}  // namespace gw::cli

#endif  // GPUWARDEN_CLI_EXIT_CODES_H_
