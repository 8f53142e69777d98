#include "cli/stop_path.h"

#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <thread>

#include "act/audit_log.h"
#include "cli/cli_options.h"
#include "collect/deadline.h"
#include "config/config.h"
#include "core/text.h"
#include "core/units.h"
#include "proc/proc_reader.h"
#include "proc/users.h"

namespace gw::cli {
namespace {

constexpr int64_t kSettlePollMs = 250;

Result<double> DurationSetting(const std::string& flag, const std::string& value,
                               std::optional<double> configured, double fallback) {
  if (value.empty()) return configured.value_or(fallback);
  auto seconds = ParseDuration(value);
  if (!seconds.ok()) return MakeError("usage", flag + ": " + seconds.error().message);
  return *seconds;
}

}  // namespace

act::Caller CurrentCaller() {
  act::Caller caller;
  caller.uid = getuid();
  caller.user = proc::UserNameOrUid(caller.uid);
  caller.pid = getpid();
  return caller;
}

void AddStopFlags(CLI::App& command, StopFlags& flags) {
  command
      .add_option("--signal", flags.signal,
                  "First signal: TERM (default), INT (programs that checkpoint on Ctrl-C), "
                  "HUP, QUIT, USR1, USR2; SIGKILL follows the grace period")
      ->type_name("NAME");
  command.add_option("--grace", flags.grace, "Wait this long before SIGKILL (default 10s)")
      ->type_name("DURATION")
      ->check(Seconds(0, 86400.0));
  command
      .add_option("--settle", flags.settle,
                  "Wait up to this long for the driver to release the memory (default 5s)")
      ->type_name("DURATION")
      ->check(Seconds(0, 3600.0));
  command
      .add_option("--protect", flags.protect, "Never signal processes of this name (repeatable)")
      ->type_name("NAME");
  command
      .add_option("--audit-log", flags.audit_log,
                  "Append the audit records here (default: /var/log/gpuwarden/audit.log for "
                  "root, else $XDG_STATE_HOME/gpuwarden/audit.log)")
      ->type_name("FILE");
}

Result<std::vector<std::string>> ConfiguredProtectNames() {
  auto config = config::LoadDefaultConfig();
  if (!config.ok()) return MakeError("bad_input", config.error().message);
  return config->clean.protect;
}

Result<StopSettings> ResolveStopSettings(const StopFlags& flags) {
  auto first_signal = act::ParseStopSignal(flags.signal);
  if (!first_signal.ok()) return MakeError("usage", first_signal.error().message);
  auto config = config::LoadDefaultConfig();
  if (!config.ok()) return MakeError("bad_input", config.error().message);
  StopSettings settings;
  settings.first_signal = *first_signal;
  auto grace = DurationSetting("--grace", flags.grace, config->clean.grace_s, kDefaultGraceS);
  if (!grace.ok()) return grace.error();
  auto settle = DurationSetting("--settle", flags.settle, config->clean.settle_s, kDefaultSettleS);
  if (!settle.ok()) return settle.error();
  settings.grace_s = *grace;
  settings.settle_s = *settle;
  settings.protect = config->clean.protect;
  settings.protect.insert(settings.protect.end(), flags.protect.begin(), flags.protect.end());
  settings.audit_path = flags.audit_log;
  std::string named_by = "--audit-log";
  if (settings.audit_path.empty() && config->clean.audit_log) {
    settings.audit_path = *config->clean.audit_log;
    named_by = config::DefaultConfigPath() + ": [clean] audit_log";
  }
  if (!settings.audit_path.empty()) {
    // Named: its directory must be there; creating one (as root) is not what
    // was asked (docs/cli.md, "Files").
    settings.audit_named = true;
    const size_t slash = settings.audit_path.rfind('/');
    const std::string dir = slash == std::string::npos ? "."
                            : slash == 0               ? "/"
                                                       : settings.audit_path.substr(0, slash);
    struct stat st {};
    if (stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
      return MakeError(flags.audit_log.empty() ? "bad_input" : "usage",
                       fmt::format("{}: the directory {} of {} does not exist (create it first; "
                                   "gpuwarden creates no directory it is not asked to)",
                                   named_by, SanitizeForTerminal(dir),
                                   SanitizeForTerminal(settings.audit_path)));
    }
  }
  if (settings.audit_path.empty()) {
    settings.audit_path =
        act::DefaultAuditLogPath(geteuid(), [](const char* n) { return std::getenv(n); });
  }
  return settings;
}

act::FileAuditLog OpenAuditLog(const StopSettings& settings) {
  return settings.audit_named ? act::FileAuditLog::InExistingDirectory(settings.audit_path)
                              : act::FileAuditLog(settings.audit_path);
}

std::optional<std::map<pid_t, HostProcess>> ReadProcessTable(const std::string& proc_root,
                                                             int64_t deadline_ms) {
  return collect::RunWithDeadline<std::map<pid_t, HostProcess>>(
      [proc_root]() {
        std::map<pid_t, HostProcess> table;
        proc::ProcReader reader(proc_root);
        auto pids = reader.ListPids();
        if (!pids.ok()) return table;
        const int64_t now = RealClock().NowUnixMs();
        for (pid_t pid : *pids) {
          auto p = reader.ReadProcess(pid, now);
          if (p.ok()) table.emplace(pid, std::move(*p));
        }
        return table;
      },
      deadline_ms);
}

ReleaseCheck WaitForRelease(const collect::CollectOptions& options, const Snapshot& before,
                            const act::ExecuteReport& report, double settle_s, const Clock& clock) {
  ReleaseCheck check;
  bool any_ended = false;
  for (const act::TargetResult& r : report.results) any_ended |= act::Ended(r.outcome);
  if (!any_ended) return check;
  collect::CollectOptions quick = options;
  quick.scan_processes = false;
  const int64_t start = clock.MonotonicMs();
  const int64_t settle_ms = static_cast<int64_t>(settle_s * 1000);
  for (;;) {
    Snapshot after = collect::Collect(quick, clock);
    check.release = act::CompareRelease(before, after, report.results);
    check.settled_s = static_cast<double>(clock.MonotonicMs() - start) / 1000.0;
    if (check.release->all_released() || clock.MonotonicMs() - start >= settle_ms) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(kSettlePollMs));
  }
  return check;
}

bool StopIncomplete(const act::ExecuteReport& report, const ReleaseCheck& check) {
  if (check.release && !check.release->all_released()) return true;
  for (const act::TargetResult& r : report.results) {
    if (r.outcome == act::Outcome::kSurvived || r.outcome == act::Outcome::kDenied ||
        r.outcome == act::Outcome::kError) {
      return true;
    }
  }
  return false;
}

}  // namespace gw::cli
