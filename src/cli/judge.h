// What `why` and `health` share: gather a short history of snapshots (or read
// an offline dump), read the kernel log, and run the diagnosis engine.
#ifndef GPUWARDEN_CLI_JUDGE_H_
#define GPUWARDEN_CLI_JUDGE_H_

#include <optional>
#include <string>
#include <vector>

#include "cli/global_options.h"
#include "cli/slurm_node.h"
#include "collect/kernel_log.h"
#include "core/result.h"
#include "core/snapshot.h"
#include "diagnose/trends.h"
#include "diagnose/verdict.h"
#include "os/run_command.h"

namespace gw::cli {

struct JudgeArgs {
  bool now = false;        // One snapshot instead of a window.
  double window_s = 3.0;   // --window
  std::string need;        // --need "2x24G"
  bool nvlink = false;     // --nvlink: the need's GPUs must share NVLink.
  std::string from;        // --from: an nvidia-smi XML dump.
  std::string kernel_log;  // --kernel-log FILE
  bool no_kernel_log = false;
  std::string since;  // --since DURATION: kernel-log events older than this are left out.
  std::optional<double> idle_for_s;  // --idle-for: idle time that makes a holder idle.
  std::optional<double> min_age_s;   // --min-age: run time an idle holder must have.
  // Names protected beyond the known processes (config `protect`, --protect):
  // never idle holders, as clean never signals them.
  std::vector<std::string> protect;
  // Say what the window is doing on a terminal (stderr) while it samples
  // (cli/progress.h); the caller sets it for text output only.
  bool progress = false;
  // `why` on a Slurm node: ask Slurm which jobs hold the GPUs (cli/slurm_node.h)
  // through this runner; null (health) never asks.
  os::CommandRunner* slurm_runner = nullptr;
  SlurmNodeArgs slurm;
  // Ask gpuwardend (on this socket; "" = the usual place, queue::ResolveSocketPath)
  // for the trends of its history when judging this machine live: how long
  // GPUs have sat idle or full, and each holder's idle time, which the
  // diagnosis then judges with (DiagnoseOptions::activity_history).
  bool history = false;
  std::string history_socket;
};

struct Judged {
  std::vector<Snapshot> history;  // Oldest first; never empty.
  std::optional<collect::KernelLog> kernel_log;
  std::string kernel_log_note;  // Why no kernel log was read, when none was.
  diagnose::DiagnoseOptions options;
  diagnose::Diagnosis diagnosis;
  double window_s = 0;  // Time the history spans.
  // What gpuwardend's history says (diagnose/trends.h), when it was asked, it
  // answered and its GPUs are these; its findings carry the evidence.
  std::optional<diagnose::Trends> trends;
  std::string trends_note;  // Why there are none, when the daemon was reachable.
  // Set when Slurm was asked by name (--slurm-node) and could not answer:
  // the message, for exit code 20 after the verdict is shown.
  std::string slurm_error;
};

// Errors: code "usage" (a bad --need) or "bad_input" (unreadable --from or
// --kernel-log file, or, with --need, an invalid settings file), each naming
// the input.
Result<Judged> Judge(const GlobalOptions& global, const JudgeArgs& args);

// The [placement] settings of config.toml (config::DefaultConfigPath(); a
// missing default file means defaults) as placement applies them: what
// `why --need` and gpuwardend's queue both place with. Error "bad_input": the
// file is invalid (its one-line message).
Result<diagnose::PlacementHealth> LoadPlacementHealth();

// Fills the caller's facts: uid, root, CUDA_VISIBLE_DEVICES/CUDA_DEVICE_ORDER,
// whether this process runs in a container.
void FillCallerFacts(diagnose::DiagnoseOptions& options, const std::string& proc_root);

int VerdictExitCode(diagnose::Verdict verdict);

// Prints Judge's error and returns its exit code: usage 2, bad_input 3, else
// NVML unavailable 4.
int JudgeErrorExit(const Error& e);

}  // namespace gw::cli

#endif  // GPUWARDEN_CLI_JUDGE_H_
