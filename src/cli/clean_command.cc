#include "cli/clean_command.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <iostream>

#include "act/audit_log.h"
#include "act/execute.h"
#include "act/plan.h"
#include "act/process_control.h"
#include "act/protected.h"
#include "cli/exit_codes.h"
#include "cli/stop_path.h"
#include "cli/terminal.h"
#include "collect/collector.h"
#include "core/clock.h"
#include "core/text.h"
#include "core/units.h"
#include "proc/users.h"
#include "render/clean.h"

namespace gw::cli {
namespace {

std::optional<uid_t> ResolveUser(const std::string& name) {
  if (!name.empty() && name.find_first_not_of("0123456789") == std::string::npos &&
      name.size() < 10) {
    return static_cast<uid_t>(std::stoul(name));
  }
  Result<std::optional<proc::PasswdEntry>> entry = proc::LookupPasswdByName(name);
  if (!entry.ok() || !*entry) return std::nullopt;
  return (*entry)->uid;
}

// Asks on the terminal. Only called when stdin is one.
bool Confirm(size_t count) {
  std::fprintf(stderr, "Stop %zu process%s? [y/N] ", count, count == 1 ? "" : "es");
  std::fflush(stderr);
  std::string answer;
  if (!std::getline(std::cin, answer)) return false;
  while (!answer.empty() && (answer.back() == '\r' || answer.back() == ' ')) answer.pop_back();
  return answer == "y" || answer == "Y" || answer == "yes" || answer == "YES" || answer == "Yes";
}

}  // namespace

int RunClean(const GlobalOptions& global, const CleanArgs& args) {
  RealClock clock;
  const act::Caller caller = CurrentCaller();

  // --- The request -------------------------------------------------------
  if (args.tree && args.no_tree) return Fail(kExitUsage, "--tree and --no-tree exclude each other");
  act::PlanRequest request;
  request.mode = args.kill ? act::PlanMode::kKill : act::PlanMode::kClean;
  request.pids = args.pids;
  request.gpus = args.gpus;
  request.tree = args.tree || (!args.kill && !args.no_tree);
  request.all_users = args.all_users;
  for (const std::string& name : args.users) {
    std::optional<uid_t> uid = ResolveUser(name);
    if (!uid) return Fail(kExitUsage, "--user " + name + ": no such user");
    if (!caller.root() && *uid != caller.uid) {
      return Fail(kExitUsage, "--user " + name +
                                  ": only root can act on another user's processes; ask " + name +
                                  " or an administrator");
    }
    request.users.push_back(*uid);
  }
  if (args.all_users && !caller.root()) {
    return Fail(kExitUsage, "--all-users: only root can act on other users' processes");
  }
  if (args.kill && args.pids.empty()) return Fail(kExitUsage, "kill: name at least one PID");
  for (pid_t pid : args.pids) {
    if (pid <= 0) return Fail(kExitUsage, "PID " + std::to_string(pid) + " is not valid");
  }
  if (!args.min_vram.empty()) {
    auto bytes = ParseSize(args.min_vram);
    if (!bytes.ok()) return Fail(kExitUsage, "--min-vram: " + bytes.error().message);
    request.min_vram_bytes = *bytes;
  }
  JudgeArgs judge = args.judge;
  if (!args.idle_for.empty()) {
    auto seconds = ParseDuration(args.idle_for);
    if (!seconds.ok()) return Fail(kExitUsage, "--idle-for: " + seconds.error().message);
    judge.idle_for_s = *seconds;
  }
  if (!args.min_age.empty()) {
    auto seconds = ParseDuration(args.min_age);
    if (!seconds.ok()) return Fail(kExitUsage, "--min-age: " + seconds.error().message);
    judge.min_age_s = *seconds;
  }

  // --- Settings: flags, then the config file, then the defaults ----------
  auto settings = ResolveStopSettings(args.stop);
  if (!settings.ok()) {
    return Fail(settings.error().code == "usage" ? kExitUsage : kExitBadInput,
                settings.error().message);
  }
  const act::ProtectedList protected_list(settings->protect);
  // The diagnosis never calls a protected process idle: why says what clean does.
  judge.protect = settings->protect;
  const std::string audit_path = settings->audit_path;

  // --- What is there -----------------------------------------------------
  auto options = ResolveCollectOptions(global);
  if (!options.ok()) {
    return Fail(options.error().code == "bad_input" ? kExitBadInput : kExitNvmlUnavailable,
                options.error().message);
  }
  Snapshot latest;
  std::vector<diagnose::Finding> findings;
  if (args.kill) {
    latest = collect::Collect(*options, clock);
  } else {
    auto judged = Judge(global, judge);
    if (!judged.ok()) {
      return Fail(judged.error().code == "usage" ? kExitUsage : kExitBadInput,
                  judged.error().message);
    }
    latest = judged->history.back();
    findings = judged->diagnosis.findings;
  }
  const int64_t deadline_ms = static_cast<int64_t>(global.timeout_s * 1000);
  auto table = ReadProcessTable(global.proc_root, deadline_ms);
  if (!table) {
    return Fail(kExitDriverTimeout,
                "reading the process table did not finish within the deadline (--timeout); a "
                "process may be stuck in the kernel. Nothing was signalled.");
  }

  act::Plan plan =
      act::MakePlan(act::PlanInput{latest, *table, findings, protected_list, caller}, request);
  render::CleanRenderOptions view;
  view.first_signal = settings->first_signal;
  view.grace_s = settings->grace_s;
  view.settle_s = settings->settle_s;
  view.width = OutputWidth();
  render::CleanDocument doc;
  doc.command = args.kill ? "kill" : "clean";
  doc.dry_run = args.dry_run;
  doc.settings = view;
  doc.plan = &plan;
  doc.audit_log_path = audit_path;
  const int refused_code = plan.refused_named.empty() ? kExitOk : kExitCleanRefused;

  if (!args.json) std::fputs(render::RenderPlanText(plan, view).c_str(), stdout);
  auto finish_without_acting = [&](int code) {
    if (args.json) std::puts(render::RenderCleanJson(doc).c_str());
    return code;
  };
  if (args.dry_run) {
    if (!args.json) std::puts("Dry run: nothing was signalled.");
    return finish_without_acting(kExitOk);
  }
  if (plan.act.empty()) return finish_without_acting(refused_code);
  if (!args.yes) {
    if (!isatty(STDIN_FILENO)) {
      std::fflush(stdout);
      std::fprintf(stderr,
                   "gpuwarden: not confirmed: standard input is not a terminal; add --yes to act "
                   "without asking. Nothing was signalled.\n");
      return finish_without_acting(kExitNotConfirmed);
    }
    std::fflush(stdout);
    if (!Confirm(plan.act.size())) {
      std::fprintf(stderr, "Nothing was signalled.\n");
      return finish_without_acting(kExitNotConfirmed);
    }
  }
  doc.confirmed = true;

  // --- Act ----------------------------------------------------------------
  act::ExecuteOptions exec;
  exec.first_signal = settings->first_signal;
  exec.grace_ms = static_cast<int64_t>(settings->grace_s * 1000);
  auto control = act::MakeRealProcessControl(global.proc_root);
  act::FileAuditLog audit = OpenAuditLog(*settings);
  act::ExecuteReport report =
      act::Execute(plan, exec, caller, *control, clock, audit_path.empty() ? nullptr : &audit,
                   [&](const act::TargetResult& r) {
                     if (!args.json) {
                       std::puts(render::RenderResultLine(r).c_str());
                       std::fflush(stdout);
                     }
                   });
  doc.report = &report;
  doc.audit_errors = report.audit_errors;
  if (audit_path.empty()) {
    doc.audit_errors.push_back("audit log: no location (no HOME, no XDG_STATE_HOME)");
  }

  // --- Verify: did the memory come back? -----------------------------------
  const ReleaseCheck check = WaitForRelease(*options, latest, report, settings->settle_s, clock);
  const std::optional<act::ReleaseReport>& release = check.release;
  const double settled_s = check.settled_s;
  if (release) doc.release = &*release;
  const bool incomplete = StopIncomplete(report, check);
  if (args.json) {
    std::puts(render::RenderCleanJson(doc).c_str());
  } else {
    if (release) std::fputs(render::RenderReleaseText(*release, settled_s).c_str(), stdout);
    if (!audit_path.empty() && report.audit_errors.empty()) {
      std::printf("Logged to %s\n", SanitizeForTerminal(audit_path).c_str());
    }
  }
  for (const std::string& e : doc.audit_errors) {
    std::fprintf(stderr, "gpuwarden: %s (the clean-up went on)\n", SanitizeForTerminal(e).c_str());
  }
  if (incomplete) return kExitCleanIncomplete;
  return refused_code;
}

}  // namespace gw::cli
