// gpuwarden-tools: the whole of gpuwarden — see who holds which GPU, know why
// the server is busy. `gpuwarden` (front_main.cc) runs the queue's client
// commands itself and execs this program for everything else (cli_options.h).
//
// main() only parses the command line and dispatches; each subcommand lives in
// its own *_command.cc and returns an exit code from exit_codes.h.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>

#include "cli/advise_command.h"
#include "cli/capacity_command.h"
#include "cli/clean_command.h"
#include "cli/cli_options.h"
#include "cli/cluster_command.h"
#include "cli/exit_codes.h"
#include "cli/global_options.h"
#include "cli/history_command.h"
#include "cli/reset_command.h"
#include "cli/slurm_queue_command.h"
#include "cli/status_command.h"
#include "cli/stop_path.h"
#include "cli/terminal.h"
#include "cli/watch_command.h"
#include "cli/why_command.h"
#include "core/text.h"
#include "nvml/probe.h"

namespace {

int Main(int argc, char** argv) {
  CLI::App app{gw::cli::kDescription, "gpuwarden"};
  app.footer(gw::cli::kExitCodeHelp);
  app.set_version_flag("--version", "gpuwarden " GW_VERSION);
  app.require_subcommand(1);
  // Global options after the command too (`status --sim FILE`): each
  // subcommand hands what it does not know to the program's options.
  app.fallthrough();

  gw::cli::GlobalOptions global;
  std::string socket;
  gw::cli::AddGlobalOptions(app, global, socket);

  gw::cli::StatusArgs status_args;
  CLI::App* status =
      app.add_subcommand("status", "Every GPU and every process that holds one, right now");
  status->add_flag("--json", status_args.json, "Machine-readable output (schema: docs/json.md)");
  status->add_flag("-v,--verbose", status_args.verbose,
                   "List every process a warning is about, not only the first ten");
  status->add_option("--gpu", status_args.gpus, "Only these GPUs (index, UUID or PCI bus id)")
      ->type_name("GPU")
      ->delimiter(',');
  status->add_option("--user", status_args.users, "Only these users' processes (name or uid)")
      ->type_name("USER")
      ->delimiter(',');
  status
      ->add_option("--from", status_args.from,
                   "Read an `nvidia-smi -q -x` dump instead of the live driver")
      ->type_name("FILE");
  gw::cli::AddSlurmNodeOptions(status, status_args.slurm);

  // Options shared by why and health.
  auto add_judge_options = [](CLI::App* cmd, gw::cli::JudgeArgs& judge) {
    cmd->add_flag("--now", judge.now, "Judge one snapshot instead of sampling a window");
    cmd->add_option("--window", judge.window_s,
                    "Sample the server this long, so 'saturated' and 'idle' mean sustained")
        ->type_name("DURATION")
        ->transform(gw::cli::Seconds(0.0, 600.0))
        ->capture_default_str();
    cmd->add_option("--from", judge.from,
                    "Judge an `nvidia-smi -q -x` dump instead of the live server")
        ->type_name("FILE")
        ->check(gw::cli::NonEmpty());
    cmd->add_option("--kernel-log", judge.kernel_log,
                    "Read NVRM events from this file (dmesg, kern.log, journal export; .gz ok) "
                    "instead of the system's kernel log")
        ->type_name("FILE")
        ->check(gw::cli::NonEmpty());
    cmd->add_flag("--no-kernel-log", judge.no_kernel_log, "Do not read the kernel log");
    cmd->add_option("--since", judge.since,
                    "Judge only kernel-log events newer than this before the snapshot, e.g. "
                    "2h, 30m, 7d")
        ->type_name("DURATION")
        ->check(gw::cli::NonEmpty())
        ->check(gw::cli::Since());
  };

  gw::cli::WhyArgs why_args;
  CLI::App* why = app.add_subcommand(
      "why", "Why the server is busy: a verdict per server and GPU, with evidence and next steps");
  add_judge_options(why, why_args.judge);
  why->add_option("--need", why_args.judge.need,
                  "Can a job needing this start now? e.g. 20G, 2x24G, 4x40G")
      ->type_name("SPEC")
      ->check(gw::cli::NonEmpty());
  why->add_flag("--nvlink", why_args.judge.nvlink, "The --need GPUs must be joined by NVLink");
  why->add_option("--idle-for", why_args.judge.idle_for_s,
                  "A holder counts as idle once seen without GPU work this long (default 10m; "
                  "gpuwardend's history, else the window)")
      ->type_name("DURATION")
      ->transform(gw::cli::Seconds(0.0, 1e9));
  why->add_option("--min-age", why_args.judge.min_age_s,
                  "An idle holder must also have run this long (default: no minimum)")
      ->type_name("DURATION")
      ->transform(gw::cli::Seconds(0.0, 1e9));
  why->add_flag("--json", why_args.json, "Machine-readable output (schema: docs/json.md)");
  CLI::Option* why_slurm =
      why->add_option("--slurm", why_args.slurm_job,
                      "Why a Slurm job waits (no JOBID: each of your pending jobs; docs/slurm.md)")
          ->type_name("[JOBID]")
          ->expected(0, 1);
  why->add_flag("-v,--verbose", why_args.verbose, "Every finding with every next step");
  bool why_no_history = false;
  why->add_flag("--no-history", why_no_history,
                "Do not ask gpuwardend how long GPUs have sat idle or full (its history)");
  why->add_option("--explain", why_args.explain, "Explain a finding code at length")
      ->type_name("CODE");
  // A Slurm job's wait is judged from Slurm, not from this server's GPUs.
  gw::cli::AddSlurmNodeOptions(why, why_args.judge.slurm);
  for (const char* local : {"--need", "--nvlink", "--explain", "--from", "--slurm-node",
                            "--no-slurm", "--no-history"}) {
    why_slurm->excludes(local);
  }

  gw::cli::HealthArgs health_args;
  CLI::App* health = app.add_subcommand(
      "health", "Hardware and driver health only; quiet when healthy (for node health checks)");
  add_judge_options(health, health_args.judge);
  health->add_flag("--json", health_args.json, "Machine-readable output (schema: docs/json.md)");
  health->add_flag("-v,--verbose", health_args.verbose, "Say so when healthy, too");
  health->add_flag("--slurm-drain", health_args.slurm_drain,
                   "As Slurm's HealthCheckProgram: drain this node on FAULT, resume it when "
                   "healthy if gpuwarden drained it; never touch an administrator's drain "
                   "(docs/slurm.md)");
  health
      ->add_option("--slurm-node", health_args.slurm_node,
                   "The Slurm node this is (default: $SLURMD_NODENAME, else the host name)")
      ->type_name("NAME")
      ->check(gw::cli::NonEmpty());
  health
      ->add_option("--on-degraded", health_args.on_degraded,
                   "With --slurm-drain: what DEGRADED does to the node")
      ->type_name("ignore|drain")
      ->transform(gw::cli::OneOf({"ignore", "drain"}))
      ->capture_default_str();
  health
      ->add_option("--slurm-timeout", health_args.slurm_timeout_s,
                   "Deadline for each Slurm command (sinfo, scontrol)")
      ->type_name("DURATION")
      ->transform(gw::cli::Seconds(0.1, 600.0))
      ->capture_default_str();

  gw::cli::EventsArgs events_args;
  CLI::App* events = app.add_subcommand(
      "events", "NVRM events from the kernel log (Xid, fallen off the bus, ...), explained");
  events
      ->add_option("--kernel-log", events_args.kernel_log,
                   "Read this file instead of the system's kernel log")
      ->type_name("FILE")
      ->check(gw::cli::NonEmpty());
  events->add_option("--since", events_args.since, "Only events newer than this, e.g. 2h, 30m")
      ->type_name("DURATION")
      ->check(gw::cli::NonEmpty())
      ->check(gw::cli::Since());
  events->add_flag("--json", events_args.json, "Machine-readable output (schema: docs/json.md)");

  // clean and kill share one safe path and most options.
  gw::cli::CleanArgs clean_args;
  gw::cli::CleanArgs kill_args;
  kill_args.kill = true;
  CLI::App* clean = app.add_subcommand(
      "clean",
      "Stop what holds GPUs for nothing: idle, orphaned and stale holders and zombies' parents "
      "(your own unless root names users); plan, confirm, signal, verify (docs/cleanup.md)");
  CLI::App* kill = app.add_subcommand(
      "kill", "Stop the named processes through the same checks as clean (docs/cleanup.md)");
  kill->add_option("pid", kill_args.pids, "The processes to stop")
      ->required()
      ->type_name("PID...")
      ->check(gw::cli::ProcessId());
  clean->add_option("--pid", clean_args.pids, "Only these candidates")
      ->type_name("PID")
      ->check(gw::cli::ProcessId());
  clean->add_option("--gpu", clean_args.gpus, "Only holders of these GPUs (index)")
      ->type_name("INDEX");
  clean
      ->add_option("--idle-for", clean_args.idle_for,
                   "A holder counts as idle once seen without GPU work this long (default 10m; "
                   "gpuwardend's history, else the window)")
      ->type_name("DURATION")
      ->check(gw::cli::Seconds(0, 1e9));
  clean
      ->add_option("--min-age", clean_args.min_age,
                   "An idle holder must also have run this long (default: no minimum)")
      ->type_name("DURATION")
      ->check(gw::cli::Seconds(0, 1e9));
  clean->add_option("--min-vram", clean_args.min_vram, "Only holders of at least this much VRAM")
      ->type_name("SIZE")
      ->check(gw::cli::Bytes());
  clean->add_flag("--now", clean_args.judge.now, "Judge one snapshot instead of a window");
  clean
      ->add_option("--window", clean_args.judge.window_s,
                   "Sample this long first, so 'idle' means idle for that long")
      ->type_name("DURATION")
      ->transform(gw::cli::Seconds(0.0, 600.0))
      ->capture_default_str();
  bool clean_no_history = false;
  clean->add_flag("--no-history", clean_no_history,
                  "Do not ask gpuwardend how long holders have been idle: judge from the window");
  // Holders are judged from NVML and /proc; the kernel log adds nothing here.
  clean_args.judge.no_kernel_log = true;
  for (auto [cmd, a] : {std::pair{clean, &clean_args}, std::pair{kill, &kill_args}}) {
    cmd->add_option("--user", a->users,
                    "root: also act on this user's processes (name or uid; repeatable)")
        ->type_name("NAME");
    cmd->add_flag("--all-users", a->all_users, "root: act on every user's processes");
    cmd->add_flag("--tree", a->tree,
                  "Also stop each target's run: its parent and workers of the same process "
                  "group (default for clean)");
    cmd->add_flag("--no-tree", a->no_tree, "Only the targets themselves (default for kill)");
    gw::cli::AddStopFlags(*cmd, a->stop);
    cmd->add_flag("--dry-run", a->dry_run, "Show the plan only; signal nothing");
    cmd->add_flag("-y,--yes", a->yes, "Do not ask for confirmation");
    cmd->add_flag("--json", a->json, "Machine-readable output (schema: docs/json.md)");
  }

  gw::cli::ResetArgs reset_args;
  CLI::App* reset = app.add_subcommand(
      "reset",
      "What keeps a GPU reset from working here, and the order to clear it; prints the plan, "
      "never resets (docs/cleanup.md)");
  reset
      ->add_option("--plan", reset_args.gpu,
                   "The GPU to plan a reset of (index, UUID or PCI bus id)")
      ->required()
      ->type_name("GPU")
      ->check(gw::cli::NonEmpty());
  reset->add_flag("--json", reset_args.json, "Machine-readable output (schema: docs/json.md)");
  reset->add_flag("--now", reset_args.judge.now, "Judge one snapshot instead of a window");
  reset
      ->add_option("--window", reset_args.judge.window_s,
                   "Sample this long first, so a process that has ended is told from one ending")
      ->type_name("DURATION")
      ->transform(gw::cli::Seconds(0.0, 600.0))
      ->capture_default_str();
  reset
      ->add_option("--from", reset_args.judge.from,
                   "Plan from an `nvidia-smi -q -x` dump (only the processes it lists)")
      ->type_name("FILE");
  reset
      ->add_option("--kernel-log", reset_args.judge.kernel_log,
                   "Read NVRM events from this file (a GPU that fell off the bus cannot be reset)")
      ->type_name("FILE");

  gw::cli::ClusterArgs cluster_args;
  CLI::App* cluster = app.add_subcommand(
      "cluster",
      "A Slurm cluster's GPUs per node: total, allocated, free; who holds them; the jobs that "
      "wait and Slurm's reason (docs/slurm.md)");
  cluster->add_flag("--json", cluster_args.json, "Machine-readable output (schema: docs/slurm.md)");
  cluster
      ->add_option("--slurm-timeout", cluster_args.slurm_timeout_s,
                   "Deadline for each Slurm command (sinfo, squeue)")
      ->type_name("DURATION")
      ->transform(gw::cli::Seconds(0.1, 600.0))
      ->capture_default_str();

  gw::cli::HistoryArgs history_args;
  CLI::App* history = app.add_subcommand(
      "history", "What gpuwardend remembers: each GPU's utilisation and memory over time");
  history
      ->add_option("--since", history_args.since,
                   "How far back (1h: a point a second; "
                   "up to 7d: a minute; up to 90d: an hour)")
      ->type_name("DURATION")
      ->capture_default_str()
      ->check(gw::cli::Since());
  history->add_option("--gpu", history_args.gpu, "Only this GPU (its index)");
  history->add_flag("--csv", history_args.csv, "One line per point and GPU, for a spreadsheet");
  history->add_flag("--json", history_args.json, "The daemon's points (schema: docs/protocol.md)");
  gw::cli::UsageArgs usage_args;
  CLI::App* usage = app.add_subcommand(
      "usage", "Per user: GPU-hours, memory-hours, how much of it sat idle, and jobs started");
  usage->add_option("--since", usage_args.since, "Over how long")
      ->type_name("DURATION")
      ->capture_default_str()
      ->check(gw::cli::Since());
  usage->add_flag("--json", usage_args.json, "Machine-readable output (schema: docs/protocol.md)");

  gw::cli::CapacityArgs capacity_args;
  CLI::App* capacity = app.add_subcommand(
      "capacity",
      "Saturation, queue waits, idle-held GPU-hours and peak hours over a window, with what to "
      "do about them: add GPUs, reclaim, move work off-peak, share, quantize (docs/capacity.md)");
  capacity
      ->add_option("--since", capacity_args.since,
                   "Over how long (gpuwardend keeps 90 days; Slurm's accounting what it keeps)")
      ->type_name("DURATION")
      ->capture_default_str()
      ->check(gw::cli::NonEmpty())
      ->check(gw::cli::Since());
  capacity->add_flag("--slurm", capacity_args.slurm,
                     "From Slurm's accounting (sacct) and sinfo instead of gpuwardend, with "
                     "power-saving settings for slurm.conf");
  capacity
      ->add_option("--slurm-timeout", capacity_args.slurm_timeout_s,
                   "Deadline for each Slurm command (sinfo, sacct)")
      ->type_name("DURATION")
      ->transform(gw::cli::Seconds(0.1, 600.0))
      ->capture_default_str();
  capacity->add_flag("--json", capacity_args.json,
                     "Machine-readable output (schema: docs/json.md)");

  gw::cli::AdviseArgs advise_args;
  CLI::App* advise = gw::cli::AddAdviseSubcommand(app, advise_args);

  gw::cli::WatchArgs watch_args;
  CLI::App* watch = gw::cli::AddWatchSubcommand(app, watch_args);

  // The queue (gpuwardend's clients); `gpuwarden` runs these itself.
  gw::cli::QueueCommands queue;
  gw::cli::AddQueueSubcommands(app, queue);

  if (auto stopped = gw::cli::ParseCommandLine(app, argc, argv)) return *stopped;

  if (status->parsed()) {
    gw::os::RealCommandRunner runner;
    return gw::cli::RunStatus(global, status_args, runner);
  }
  if (why->parsed() && why_slurm->count() > 0) {
    gw::cli::SlurmWhyArgs slurm_args;
    slurm_args.job = why_args.slurm_job;
    slurm_args.json = why_args.json;
    gw::os::RealCommandRunner runner;
    return gw::cli::RunSlurmWhy(slurm_args, runner);
  }
  if (why->parsed()) {
    why_args.judge.progress = !why_args.json;  // A status line on a terminal, never in JSON.
    gw::os::RealCommandRunner runner;
    why_args.judge.slurm_runner = &runner;
    why_args.judge.history = !why_no_history;
    why_args.judge.history_socket = socket;
    // The administrator's protected names, which clean applies too. A settings
    // file that cannot be read is not a reason for the diagnosis to fail: it
    // is said, and only the built-in protections apply (clean refuses to act).
    auto protect = gw::cli::ConfiguredProtectNames();
    if (protect.ok()) {
      why_args.judge.protect = *protect;
    } else {
      std::fprintf(stderr, "gpuwarden: %s; judging with the built-in protected names only\n",
                   gw::SanitizeForTerminal(protect.error().message).c_str());
    }
    return gw::cli::RunWhy(global, why_args);
  }
  if (health->parsed()) {
    // A health check fits Slurm's interval: one look, unless a window is asked.
    if (health_args.slurm_drain && health->count("--window") == 0) health_args.judge.now = true;
    gw::os::RealCommandRunner runner;
    return gw::cli::RunHealth(global, health_args, runner);
  }
  if (events->parsed()) return gw::cli::RunEvents(global, events_args);
  if (advise->parsed()) return gw::cli::RunAdvise(global, advise_args);
  if (clean->parsed()) {
    clean_args.judge.history = !clean_no_history;
    clean_args.judge.history_socket = socket;
    return gw::cli::RunClean(global, clean_args);
  }
  if (kill->parsed()) return gw::cli::RunClean(global, kill_args);
  if (reset->parsed()) return gw::cli::RunReset(global, reset_args);
  if (cluster->parsed()) {
    gw::os::RealCommandRunner runner;
    return gw::cli::RunCluster(global, cluster_args, runner);
  }
  watch_args.socket = socket;
  if (history->parsed()) {
    history_args.socket = socket;
    return gw::cli::RunHistory(history_args);
  }
  if (usage->parsed()) {
    usage_args.socket = socket;
    return gw::cli::RunUsage(usage_args);
  }
  if (capacity->parsed()) {
    capacity_args.socket = socket;
    gw::os::RealCommandRunner runner;
    return gw::cli::RunCapacity(capacity_args, runner);
  }
  if (watch->parsed()) return gw::cli::RunWatch(global, watch_args);
  if (gw::cli::WantsSlurm(queue)) {
    gw::os::RealCommandRunner runner;
    return gw::cli::RunParsedSlurmSubcommand(queue, runner);
  }
  if (auto code = gw::cli::RunParsedQueueSubcommand(queue, socket)) return *code;
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
