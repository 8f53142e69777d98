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

  // `clean` and `kill`.
  kExitNotConfirmed = 7,     // Not confirmed (no --yes off a terminal, or "no"): nothing done.
  kExitCleanRefused = 8,     // Some named processes were refused (not yours, protected, gone).
  kExitCleanIncomplete = 9,  // A process did not end, or its GPU memory was not released.

  // The queue's client commands (run, queue, jobs, cancel, hold, release, logs).
  // `run --wait` exits with the job's own status instead once it ran
  // (docs/queue.md; cli::DescribeJobEnd).
  kExitNoDaemon = 15,         // gpuwardend cannot be reached.
  kExitRefusedByDaemon = 16,  // It refused: not your job, no such job, wrong state.
  kExitStorageRefused = 18,   // It could not store the request (its disk refused): nothing done.
  kExitUnsatisfiable = 19,    // The job can never run on this server: not queued.

  // The Slurm commands (cluster, why --slurm, health --slurm-drain, run/queue/jobs/cancel --slurm).
  kExitSlurmUnavailable = 20,  // Slurm could not be asked: clients missing, no answer, bad output.

  // `why` and `health` report their verdict in the exit code.
  kExitVerdictBusy = 10,         // why: genuine shortage or contention.
  kExitVerdictReclaimable = 11,  // why: capacity held by idle, orphaned, zombie or hidden holders.
  kExitVerdictDegraded = 12,     // why, health: works, but not at full health.
  kExitVerdictFault = 13,        // why, health: hardware or driver fault.
  kExitVerdictUnknown = 14,      // why, health: could not look.
  kExitVerdictNeverFits = 17,    // why --need: the need can never fit on this server.
};

// The table printed by --help and mirrored in the README.
inline constexpr const char* kExitCodeHelp =
    "Exit codes:\n"
    "  0  success\n"
    "  1  internal error\n"
    "  2  bad command line\n"
    "  3  bad input file (--from, --sim, advise's config.json or catalog): missing,\n"
    "     unreadable or malformed\n"
    "  4  NVML unavailable: libnvidia-ml.so.1 missing, driver not loaded, or\n"
    "     driver/library version mismatch\n"
    "  5  driver not responding: the probe hit its deadline (--timeout); output is partial\n"
    "  6  one or more GPUs unreachable (lost, fallen off the bus, no permission)\n"
    "clean and kill:\n"
    "  7  not confirmed (no --yes and no terminal, or answered no): nothing was signalled\n"
    "  8  some processes named were refused (not yours, protected, no such process)\n"
    "  9  incomplete: a process did not end, or its GPU memory was not released\n"
    "run, queue, jobs, cancel, hold, release, logs:\n"
    " 15  gpuwardend cannot be reached\n"
    " 16  gpuwardend refused: not your job, no such job, not in that state, or\n"
    "     a priority above 0 without root\n"
    " 18  gpuwardend could not store the request (its disk refused): nothing was done\n"
    " 19  the job can never run on this server (--gpus, --vram, --after, or a command\n"
    "     that does not exist): it was not queued\n"
    "     (with --slurm: 16 Slurm refused the job, 19 no node of the cluster can hold it)\n"
    "cluster, why --slurm, health --slurm-drain, run/queue/jobs/cancel --slurm,\n"
    "status/why --slurm-node NAME:\n"
    " 20  Slurm could not be asked: sinfo/squeue/scontrol missing, the controller not\n"
    "     answering, output gpuwarden does not understand, or the node not changed\n"
    "run --wait: the job's own exit status (128+N when signal N killed it); 1 when it\n"
    "  ended without one (cancelled, failed to start, time or VRAM limit, lost);\n"
    "  130 after Ctrl-C (it cancels the job and waits until it ended)\n"
    "watch: 0 after q; 128+N when signal N ended it (130 Ctrl-C, 143 SIGTERM, 129 SIGHUP)\n"
    "why and health report the verdict (status and events use the codes above);\n"
    "with --need, why answers the need first:\n"
    "  0  OK (why: usable, or your --need fits now) / healthy (health)\n"
    " 10  BUSY: genuine shortage or contention (why)\n"
    " 11  RECLAIMABLE: capacity held by idle, orphaned, zombie or hidden holders (why)\n"
    " 12  DEGRADED: works, but not at full health\n"
    " 13  FAULT: hardware or driver fault\n"
    " 14  UNKNOWN: could not look\n"
    " 17  NEVER_FITS: the --need can never fit on this server, even with every GPU empty (why)\n";

}  // namespace gw::cli

#endif  // GPUWARDEN_CLI_EXIT_CODES_H_
