#include "cli/cli_options.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdio>

#include "cli/exit_codes.h"
#include "core/edit_distance.h"
#include "core/units.h"

namespace gw::cli {
namespace {

// The global options that take a value (`--sim FILE`), for SubcommandOf.
constexpr std::array<std::string_view, 6> kValueOptions = {"--sim",       "--timeout", "--color",
                                                           "--proc-root", "--dev-dir", "--socket"};

constexpr std::array<std::string_view, 7> kQueueSubcommands = {"run",  "queue",   "jobs", "cancel",
                                                               "hold", "release", "logs"};

}  // namespace

std::optional<int> ParseCommandLine(CLI::App& app, int argc, char** argv) {
  // A word where a command goes that is none: named, with the nearest one,
  // before CLI11 calls it "A subcommand is required".
  if (const std::string_view name = SubcommandOf(argc, argv); !name.empty()) {
    std::vector<std::string> commands;
    for (const CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; })) {
      commands.push_back(sub->get_name());
    }
    if (std::find(commands.begin(), commands.end(), name) == commands.end()) {
      std::string line = "gpuwarden: \"" + std::string(name) + "\" is not a command";
      if (const std::string near = NearestCommand(name, commands); !near.empty()) {
        line += "; did you mean \"" + near + "\"?";
      } else {
        std::string all;
        for (const std::string& c : commands) all += (all.empty() ? "" : ", ") + c;
        line += " (commands: " + all + ")";
      }
      std::fprintf(stderr, "%s\n", line.c_str());
      return kExitUsage;
    }
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    // One line: what is wrong and what is accepted, then where the rest is.
    std::fprintf(stderr, "gpuwarden: %s (see gpuwarden --help)\n", e.what());
    return kExitUsage;
  }
  return std::nullopt;
}

const CLI::Validator& NonEmpty() {
  static const CLI::Validator kNonEmpty(
      [](std::string& value) { return value.empty() ? std::string("empty value") : std::string(); },
      "", "NONEMPTY");
  return kNonEmpty;
}

namespace {
// A range's end: "0.05s", "90s", "10m", "366d".
std::string Bound(double seconds) {
  if (seconds < 120) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%gs", seconds);
    return buf;
  }
  return FormatDuration(seconds);
}
}  // namespace

CLI::Validator Seconds(double min_s, double max_s) {
  return CLI::Validator(
      [min_s, max_s](std::string& value) -> std::string {
        Result<double> s = ParseDuration(value);
        if (!s.ok()) {
          return "\"" + value + "\" is not a duration: 30s, 5m, 2h, 1d or plain seconds";
        }
        if (*s < min_s || *s > max_s) {
          return "\"" + value + "\" is out of range: " + Bound(min_s) + " to " + Bound(max_s);
        }
        char buf[64];
        std::snprintf(buf, sizeof buf, "%.17g", *s);
        value = buf;
        return std::string();
      },
      "DURATION", "SECONDS");
}

const CLI::Validator& Bytes() {
  static const CLI::Validator kBytes(
      [](std::string& value) -> std::string {
        if (!ParseSize(value).ok()) {
          return "\"" + value + "\" is not a size: 512M, 20G, 1.5T or plain bytes";
        }
        return std::string();
      },
      "SIZE", "SIZE");
  return kBytes;
}

const CLI::Validator& Since() {
  // Checked here, read by the command (which may quote it as typed).
  static const CLI::Validator kSince(
      [](std::string& value) -> std::string {
        std::string copy = value;
        return Seconds(0, 3650 * 86400.0)(copy);
      },
      "DURATION", "SINCE");
  return kSince;
}

CLI::Validator OneOf(std::vector<std::string> words) {
  std::string list;
  for (size_t i = 0; i < words.size(); ++i) {
    list += (i == 0 ? "" : i + 1 == words.size() ? " or " : ", ") + words[i];
  }
  return CLI::Validator(
      [words, list](std::string& value) -> std::string {
        std::string lower = value;
        std::transform(lower.begin(), lower.end(), lower.begin(),
                       [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
        if (std::find(words.begin(), words.end(), lower) == words.end()) {
          return "\"" + value + "\" is not one of " + list;
        }
        value = lower;
        return std::string();
      },
      "", "ONEOF");
}

CLI::Validator WholeNumber(uint64_t lo, uint64_t hi) {
  return CLI::Validator(
      [lo, hi](std::string& value) -> std::string {
        const bool digits = !value.empty() && value.size() <= 19 &&
                            value.find_first_not_of("0123456789") == std::string::npos;
        if (!digits || std::stoull(value) < lo || std::stoull(value) > hi) {
          return fmt::format("\"{}\" is not a whole number from {} to {}", value, lo, hi);
        }
        return std::string();
      },
      "", "WHOLE");
}

const CLI::Validator& ProcessId() {
  static const CLI::Validator kPid(
      [](std::string& value) -> std::string {
        const bool digits = !value.empty() && value.size() <= 10 &&
                            value.find_first_not_of("0123456789") == std::string::npos;
        if (!digits || std::stoll(value) <= 0 || std::stoll(value) > 0x7fffffffLL) {
          return "\"" + value + "\" is not a process id (a whole number above 0)";
        }
        return std::string();
      },
      "", "PID");
  return kPid;
}

std::string NearestCommand(std::string_view name, const std::vector<std::string>& commands) {
  std::string best;
  size_t best_distance = 3;  // two edits at most
  for (const std::string& c : commands) {
    if (name.size() >= 2 && c.rfind(std::string(name), 0) == 0) return c;
    const size_t d = EditDistance(name, c);
    if (d < best_distance) {
      best_distance = d;
      best = c;
    }
  }
  return best;
}

void AddGlobalOptions(CLI::App& app, GlobalOptions& global, std::string& socket) {
  app.add_option(std::string(kValueOptions[0]), global.sim_scenario,
                 "Read GPUs from gpuwarden's simulated NVML driven by this scenario file "
                 "(see docs/scenarios.md)")
      ->type_name("FILE")
      ->check(NonEmpty());
  app.add_option(std::string(kValueOptions[1]), global.timeout_s,
                 "Deadline for one probe of the driver (e.g. 2s, 0.5); a driver that "
                 "does not answer in time is reported as not responding")
      ->type_name("DURATION")
      ->transform(Seconds(0.05, 600.0))
      ->capture_default_str();
  std::map<std::string, ColorChoice> colors = {{"auto", ColorChoice::kAuto},
                                               {"always", ColorChoice::kAlways},
                                               {"never", ColorChoice::kNever}};
  app.add_option(std::string(kValueOptions[2]), global.color,
                 "Colour output: auto (a terminal, unless NO_COLOR is set), always, never")
      ->type_name("WHEN")
      ->transform(CLI::CheckedTransformer(colors, CLI::ignore_case))
      // Added last, so it runs first (CLI11 puts a transform in front): its
      // error names the words.
      ->transform(OneOf({"auto", "always", "never"}));
  app.add_option(std::string(kValueOptions[3]), global.proc_root,
                 "Where the host's /proc is mounted (e.g. inside a container)")
      ->type_name("DIR")
      ->check(NonEmpty())
      ->capture_default_str();
  app.add_option(std::string(kValueOptions[4]), global.dev_dir, "Where the NVIDIA device files are")
      ->type_name("DIR")
      ->check(NonEmpty())
      ->capture_default_str();
  app.add_option(std::string(kValueOptions[5]), socket,
                 "gpuwardend's socket (default: $GPUWARDEN_SOCKET, else the system daemon's, "
                 "else your personal one)")
      ->type_name("PATH")
      ->check(NonEmpty());
}

namespace {

// --slurm and its deadline, --slurm-timeout (only with --slurm).
void AddSlurmOptions(CLI::App* sub, bool& slurm, double& timeout_s, const std::string& help) {
  CLI::Option* flag = sub->add_flag("--slurm", slurm, help + " (docs/slurm.md)");
  sub->add_option("--slurm-timeout", timeout_s, "With --slurm: deadline for each Slurm command")
      ->type_name("DURATION")
      ->transform(Seconds(0.1, 600.0))
      ->capture_default_str()
      ->needs(flag);
}

void AddSlurmFlag(CLI::App* sub, QueueArgs& args, const char* help) {
  AddSlurmOptions(sub, args.slurm, args.slurm_timeout_s, help);
}

void AddRun(CLI::App& app, QueueCommands& q) {
  RunArgs& run_args = q.run_args;
  CLI::App* run = app.add_subcommand(
      "run", "Queue a command until GPUs with enough free VRAM exist, then run it (docs/queue.md)");
  run->add_option("--gpus", run_args.gpus, "GPUs it needs (0 = none)")->capture_default_str();
  run->add_option("--vram", run_args.vram,
                  "GPU memory it needs on each GPU, e.g. 20G (without it: a whole GPU, at least "
                  "90 % free)")
      ->type_name("SIZE")
      ->check(NonEmpty())
      ->check(Bytes());
  run->add_option("--max-util", run_args.max_util, "Only GPUs at most this busy (%)")
      ->type_name("PCT");
  run->add_option("--priority", run_args.priority, "Higher starts first (above 0: root only)");
  run->add_option("--window", run_args.window,
                  "Start only inside this daily window, e.g. 22:00-07:00")
      ->type_name("HH:MM-HH:MM")
      ->check(NonEmpty());
  // A string, joined over repeats: a list option would take the `--` that
  // starts the command as the end of its own values.
  run->add_option("--after", run_args.after,
                  "Start once these jobs succeeded (JOB[,JOB...]; repeatable)")
      ->type_name("JOB")
      ->multi_option_policy(CLI::MultiOptionPolicy::Join)
      ->delimiter(',');
  run->add_flag("--nvlink", run_args.nvlink, "Multi-GPU: only NVLink-joined GPUs");
  run->add_option("--name", run_args.name, "A name for the job");
  run->add_option("--time-limit", run_args.time_limit, "Stop it after this long, e.g. 4h")
      ->type_name("DURATION")
      ->check(Seconds(1, 366 * 86400.0));
  run->add_flag("--preemptible", run_args.preemptible,
                "A higher-priority job may stop it (SIGTERM, grace, SIGKILL) and requeue it");
  run->add_flag("--wait", run_args.wait,
                "Stream its output and exit with its status; Ctrl-C cancels it (default on a "
                "terminal)");
  run->add_flag("--detach", run_args.detach, "Print the job id and return at once");
  AddSlurmOptions(run, run_args.slurm, run_args.slurm_timeout_s,
                  "Submit it to the Slurm cluster with sbatch instead: --gpus, --vram, "
                  "--time-limit, --name and --after become Slurm requests");
  run->add_option("command", run_args.command, "The command and its arguments, after --")
      ->required();
  q.run = run;
}

void AddQueue(CLI::App& app, QueueCommands& q) {
  q.queue = app.add_subcommand("queue", "Running and waiting jobs, and why each waits");
  q.queue->add_flag("--json", q.queue_args.json, "Machine-readable output (docs/protocol.md)");
  AddSlurmFlag(q.queue, q.queue_args, "The Slurm cluster's running and waiting jobs instead");
}

void AddJobs(CLI::App& app, QueueCommands& q) {
  QueueArgs& queue_args = q.queue_args;
  CLI::App* jobs =
      app.add_subcommand("jobs", "Jobs, newest first, with how they ended; or named jobs in full");
  jobs->add_flag("--json", queue_args.json, "Machine-readable output (docs/protocol.md)");
  jobs->add_flag("--all", queue_args.all, "Every job, not only the latest 50");
  jobs->add_flag("--mine", queue_args.mine, "Only your jobs");
  AddSlurmFlag(jobs, queue_args, "Your Slurm jobs instead (those squeue still lists)");
  jobs->add_option("jobs", queue_args.ids,
                   "Show these jobs in full (with their environment and directory, for their "
                   "owner and root)")
      ->type_name("JOB...");
  q.jobs = jobs;
}

void AddControl(CLI::App& app, QueueCommands& q, std::string_view op) {
  CLI::App* c =
      app.add_subcommand(std::string(op), op == "cancel" ? "Cancel jobs (running ones are stopped: "
                                                           "SIGTERM, grace, SIGKILL)"
                                          : op == "hold" ? "Keep waiting jobs from starting"
                                                         : "Let held jobs start again");
  c->add_option("jobs", q.queue_args.ids, "Job ids")->required()->type_name("JOB...");
  if (op == "cancel") AddSlurmFlag(c, q.queue_args, "Cancel these Slurm jobs (scancel)");
  q.controls[std::string(op)] = c;
}

void AddLogs(CLI::App& app, QueueCommands& q) {
  QueueArgs& queue_args = q.queue_args;
  CLI::App* logs = app.add_subcommand("logs", "A job's output");
  logs->add_option("job", queue_args.ids, "Job id")->required()->type_name("JOB");
  logs->add_flag("--stderr", queue_args.stderr_stream, "Its standard error instead");
  logs->add_flag("-f,--follow", queue_args.follow, "Keep printing until the job ends");
  q.logs = logs;
}

}  // namespace

void AddQueueSubcommands(CLI::App& app, QueueCommands& q, std::string_view only) {
  auto wanted = [only](std::string_view name) { return only.empty() || only == name; };
  if (wanted("run")) AddRun(app, q);
  if (wanted("queue")) AddQueue(app, q);
  if (wanted("jobs")) AddJobs(app, q);
  for (std::string_view op : {"cancel", "hold", "release"}) {
    if (wanted(op)) AddControl(app, q, op);
  }
  if (wanted("logs")) AddLogs(app, q);
}

std::optional<int> RunParsedQueueSubcommand(QueueCommands& q, const std::string& socket) {
  q.run_args.socket = socket;
  q.queue_args.socket = socket;
  auto parsed = [](const CLI::App* sub) { return sub != nullptr && sub->parsed(); };
  if (parsed(q.run)) return RunSubmit(q.run_args);
  if (parsed(q.queue)) return RunQueue(q.queue_args);
  if (parsed(q.jobs)) return RunJobs(q.queue_args);
  for (const auto& [op, c] : q.controls) {
    if (parsed(c)) return RunControl(q.queue_args, op);
  }
  if (parsed(q.logs)) return RunLogs(q.queue_args);
  return std::nullopt;
}

bool WantsSlurm(const QueueCommands& q) {
  auto parsed = [](const CLI::App* sub) { return sub != nullptr && sub->parsed(); };
  if (parsed(q.run)) return q.run_args.slurm;
  return q.queue_args.slurm;
}

std::string_view SubcommandOf(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg == "--") return "";
    if (arg == "-h" || arg == "--help" || arg == "--help-all" || arg == "--version") return "";
    if (arg.empty() || arg[0] != '-') return arg;
    for (std::string_view opt : kValueOptions) {
      if (arg == opt) ++i;  // Its value is the next argument ("--sim=F" is one).
    }
  }
  return "";
}

bool IsQueueSubcommand(std::string_view name) {
  for (std::string_view q : kQueueSubcommands) {
    if (name == q) return true;
  }
  return false;
}

}  // namespace gw::cli
