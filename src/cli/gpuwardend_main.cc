// gpuwardend: the GPU queue daemon (docs/queue.md, docs/protocol.md).
//
//   gpuwardend [--socket PATH] [--state-dir DIR] [--sim SCENARIO] ...
//
// As root it serves every user (system mode: /run/gpuwarden/gpuwardend.sock,
// /var/lib/gpuwarden); as a plain user only that user (personal mode:
// $XDG_RUNTIME_DIR/gpuwarden/gpuwardend.sock, $XDG_STATE_HOME/gpuwarden/queue).
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>
#include <utility>

#include "cli/cli_options.h"
#include "cli/exit_codes.h"
#include "cli/global_options.h"
#include "cli/judge.h"
#include "core/units.h"
#include "fleet/http_listener.h"
#include "nvml/probe.h"
#include "queue/daemon.h"
#include "queue/protocol.h"
#include "web/web_auth.h"

namespace {

std::string DefaultStateDir(bool system_mode) {
  if (system_mode) return "/var/lib/gpuwarden";
  const char* state = std::getenv("XDG_STATE_HOME");
  if (state != nullptr && state[0] == '/') return std::string(state) + "/gpuwarden/queue";
  const char* home = std::getenv("HOME");
  if (home != nullptr && home[0] == '/') return std::string(home) + "/.local/state/gpuwarden/queue";
  return "/tmp/gpuwarden-" + std::to_string(getuid()) + "/queue";
}

std::string SupervisorPath() {
  std::error_code ec;
  const std::filesystem::path dir =
      std::filesystem::read_symlink("/proc/self/exe", ec).parent_path();
  for (const auto& candidate :
       {dir / "gpuwarden-supervise", dir / "../lib/gpuwarden/gpuwarden-supervise"}) {
    if (access(candidate.c_str(), X_OK) == 0) return candidate.string();
  }
  return (dir / "gpuwarden-supervise").string();
}

int Main(int argc, char** argv) {
  // One malloc arena for every thread: the daemon's threads (the loop, the
  // looks, the HTTP listener's) allocate little and seldom at once, and an
  // arena of its own per thread kept ~1 MiB each resident (issue 15: 16 MiB).
  mallopt(M_ARENA_MAX, 1);
  const bool system_mode = geteuid() == 0;
  gw::queue::DaemonOptions o;
  o.system_mode = system_mode;
  o.socket_path = system_mode ? gw::queue::SystemSocketPath() : gw::queue::PersonalSocketPath();
  o.state_dir = DefaultStateDir(system_mode);
  gw::cli::GlobalOptions global;
  std::string margin = "512M";
  std::string grace = "10s";
  std::string vram_guard = "stop";
  std::optional<std::string> listen;
  bool no_kernel_log = false;
  std::string process_min = "64M";

  CLI::App app{
      "gpuwardend — the GPU queue daemon: starts jobs when GPUs with enough free VRAM "
      "exist (docs/queue.md)",
      "gpuwardend"};
  app.set_version_flag("--version", "gpuwardend " GW_VERSION);
  app.add_option("--socket", o.socket_path, "Listen here")->capture_default_str();
  app.add_option("--state-dir", o.state_dir, "Queue database and job directories")
      ->capture_default_str();
  app.add_option("--sim", global.sim_scenario, "Use the simulated NVML with this scenario")
      ->type_name("FILE");
  app.add_option("--timeout", global.timeout_s, "Deadline for one GPU probe (e.g. 2s, 0.5)")
      ->type_name("DURATION")
      ->transform(gw::cli::Seconds(0.05, 600.0))
      ->capture_default_str();
  app.add_option("--proc-root", global.proc_root, "Where the host's /proc is")
      ->capture_default_str();
  app.add_option("--poll-ms", o.poll_waiting_ms, "Read the GPUs this often (ms) while jobs wait")
      ->check(CLI::Range(10, 60000))
      ->capture_default_str();
  app.add_option("--margin", margin, "Free memory kept on top of each request")
      ->type_name("SIZE")
      ->capture_default_str()
      ->check(gw::cli::Bytes());
  app.add_option("--grace", grace, "Stopping a job: SIGTERM, this long, then SIGKILL")
      ->type_name("DURATION")
      ->check(gw::cli::Seconds(0, 86400.0))
      ->capture_default_str();
  app.add_option("--vram-guard", vram_guard,
                 "A job over its --vram by more than the margin: stop (default) or warn")
      ->transform(gw::cli::OneOf({"stop", "warn"}));
  app.add_option("--max-running-per-user", o.table.policy.max_running_per_user,
                 "At most this many running jobs per user (0 = no limit)");
  app.add_option("--max-gpus-per-user", o.table.policy.max_gpus_per_user,
                 "At most this many GPUs in use per user (0 = no limit)");
  app.add_option("--listen", listen,
                 std::string("Serve the web page (/) and Prometheus metrics (/metrics) over HTTP "
                             "at HOST:PORT (alone: ") +
                     gw::fleet::kDefaultListen + "; docs/web.md, docs/metrics.md)")
      ->type_name("HOST:PORT")
      ->expected(0, 1);
  std::string web_token_file;
  app.add_option("--web-token-file", web_token_file,
                 "Every HTTP request must carry the token on this file's first line (mode 600; "
                 "docs/web.md)")
      ->type_name("FILE");
  app.add_flag(
      "--no-queue", [&o](int64_t) { o.queue = false; },
      "Only look at the GPUs and serve --listen (and the history on the socket): no queue");
  app.add_option("--kernel-log", o.kernel_log,
                 "Read Xids from this file instead of the system's kernel log")
      ->type_name("FILE");
  app.add_flag("--no-kernel-log", no_kernel_log, "Do not read the kernel log");
  app.add_option("--metrics-process-min", process_min,
                 "Processes holding less GPU memory are summed per user in the metrics")
      ->type_name("SIZE")
      ->capture_default_str()
      ->check(gw::cli::Bytes());
  app.add_option("--metrics-max-processes", o.metrics.max_process_series,
                 "At most this many processes get metric series of their own")
      ->capture_default_str();
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    // One line, as gpuwarden's (docs/cli.md).
    std::fprintf(stderr, "gpuwardend: %s (see gpuwardend --help)\n", e.what());
    return gw::cli::kExitUsage;
  }
  auto m = gw::ParseSize(margin);
  if (!m.ok()) {
    std::fprintf(stderr, "gpuwardend: --margin: %s\n", m.error().message.c_str());
    return gw::cli::kExitUsage;
  }
  o.table.policy.margin_bytes = *m;
  auto g = gw::ParseDuration(grace);
  if (!g.ok()) {
    std::fprintf(stderr, "gpuwardend: --grace: %s\n", g.error().message.c_str());
    return gw::cli::kExitUsage;
  }
  o.table.grace_s = *g;
  auto pmin = gw::ParseSize(process_min);
  if (!pmin.ok()) {
    std::fprintf(stderr, "gpuwardend: --metrics-process-min: %s\n", pmin.error().message.c_str());
    return gw::cli::kExitUsage;
  }
  o.metrics.process_min_bytes = *pmin;
  o.metrics.version = GW_VERSION;
  if (listen) {
    auto address =
        gw::fleet::ParseListenAddress(listen->empty() ? gw::fleet::kDefaultListen : *listen);
    if (!address.ok()) {
      std::fprintf(stderr, "gpuwardend: --listen: %s\n", address.error().message.c_str());
      return gw::cli::kExitUsage;
    }
    o.listen = *address;
  }
  if (!web_token_file.empty()) {
    if (!o.listen) {
      std::fprintf(stderr, "gpuwardend: --web-token-file needs --listen (nothing is served)\n");
      return gw::cli::kExitUsage;
    }
    auto token = gw::web::ReadTokenFile(web_token_file);
    if (!token.ok()) {
      std::fprintf(stderr, "gpuwardend: --web-token-file: %s\n", token.error().message.c_str());
      return gw::cli::kExitBadInput;
    }
    o.web_token = std::move(*token);
  }
  if (!o.queue && !o.listen) {
    std::fprintf(stderr, "gpuwardend: --no-queue needs --listen (nothing would be served)\n");
    return gw::cli::kExitUsage;
  }
  if (o.queue) {
    // A scheduling pass over a large queue allocates and frees tens of MB:
    // keep that memory instead of returning it to the kernel after each pass
    // (bench/queue_policy_bench.cc: ~20 % of a 100k-job pass was page
    // faults). What a history query or a large reply frees is given back
    // once it is sent (queue/socket_server.h, ReturnFreedMemory). Without
    // the queue there is no such pass: glibc's own thresholds give back what
    // the scrapes of /metrics free.
    mallopt(M_TRIM_THRESHOLD, 256 << 20);
    mallopt(M_MMAP_THRESHOLD, 32 << 20);
  }
  // The kernel log: a named file always; the system's own as root on a real
  // server (a simulated one has none; a plain user may not read it).
  o.read_kernel_log =
      !no_kernel_log && (!o.kernel_log.empty() || (system_mode && global.sim_scenario.empty()));
  o.table.vram_guard_stop = vram_guard == "stop";
  auto collect = gw::cli::ResolveCollectOptions(global);
  if (!collect.ok()) {
    std::fprintf(stderr, "gpuwardend: %s\n", collect.error().message.c_str());
    return collect.error().code == "bad_input" ? gw::cli::kExitBadInput
                                               : gw::cli::kExitNvmlUnavailable;
  }
  o.collect = *collect;
  // The [placement] settings, as `why --need` reads them: one answer.
  auto placement = gw::cli::LoadPlacementHealth();
  if (!placement.ok()) {
    std::fprintf(stderr, "gpuwardend: %s\n", placement.error().message.c_str());
    return gw::cli::kExitBadInput;
  }
  o.table.placement = *placement;
  o.table.supervisor_path = SupervisorPath();
  // Blocked before the daemon starts its snapshot thread, so every thread
  // inherits the mask and the signals reach the loop's signalfd.
  sigset_t mask;
  sigemptyset(&mask);
  for (int sig : {SIGTERM, SIGINT, SIGHUP, SIGCHLD}) sigaddset(&mask, sig);
  pthread_sigmask(SIG_BLOCK, &mask, nullptr);
  auto daemon = gw::queue::Daemon::Start(o);
  if (!daemon.ok()) {
    // The daemon's log format (daemon_log.h), so journald sees one kind of line.
    std::fprintf(stderr, "gpuwardend: error: %s\n", daemon.error().message.c_str());
    return daemon.error().code == "busy" ? gw::cli::kExitUsage : gw::cli::kExitInternal;
  }
  return (*daemon)->Run();
}

}  // namespace

int main(int argc, char** argv) {
  int code = gw::cli::kExitInternal;
  try {
    code = Main(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gpuwardend: internal error: %s\n", e.what());
  }
  gw::nvml::ExitProcess(code);
}
