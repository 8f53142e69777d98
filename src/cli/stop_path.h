// The pieces of the safe stop path that `gpuwarden clean`, `gpuwarden kill`
// and the stop action of `gpuwarden watch` share, so that all three stop a
// process the same way: who asks, the settings (flags, then the config file,
// then the defaults), the host's process table read under the deadline, and
// the wait for the driver to release the memory afterwards. The plan, the
// signalling and the release check themselves are in src/act.
#ifndef GPUWARDEN_CLI_STOP_PATH_H_
#define GPUWARDEN_CLI_STOP_PATH_H_

#include <sys/types.h>

#include <CLI/CLI.hpp>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "act/audit_log.h"
#include "act/execute.h"
#include "act/plan.h"
#include "act/verify.h"
#include "collect/collector.h"
#include "core/clock.h"
#include "core/result.h"
#include "core/snapshot.h"

namespace gw::cli {

inline constexpr double kDefaultGraceS = 10;
inline constexpr double kDefaultSettleS = 5;

// The calling user (real uid, name) and this process.
act::Caller CurrentCaller();

// The flags that tune a stop; "" / empty = not given.
struct StopFlags {
  std::string signal = "TERM";       // --signal NAME
  std::string grace;                 // --grace DURATION
  std::string settle;                // --settle DURATION
  std::vector<std::string> protect;  // --protect NAME...
  std::string audit_log;             // --audit-log PATH
};

// Adds --signal, --grace, --settle, --protect and --audit-log to `command`
// (clean, kill and watch take the same ones).
void AddStopFlags(CLI::App& command, StopFlags& flags);

struct StopSettings {
  int first_signal = 0;  // SIGTERM unless --signal said otherwise.
  double grace_s = kDefaultGraceS;
  double settle_s = kDefaultSettleS;
  std::vector<std::string> protect;  // From the config file, then the flags.
  std::string audit_path;            // "" when no location could be found.
  // The path was named (--audit-log, the config file): its directory must
  // exist, none is created (act::FileAuditLog::InExistingDirectory).
  bool audit_named = false;
};

// The audit log of `settings`: the default location creates its directory,
// a named one does not.
act::FileAuditLog OpenAuditLog(const StopSettings& settings);

// Flags, then the config file (/etc/gpuwarden/config.toml or
// $GPUWARDEN_CONFIG), then the defaults. Errors: code "usage" (a malformed
// flag, named; an --audit-log whose directory does not exist) or "bad_input"
// (the config file, or its audit_log's directory missing).
Result<StopSettings> ResolveStopSettings(const StopFlags& flags);

// The administrator's protected names of the config file ([clean] protect),
// for `why`, which leaves them alone as clean does. Errors: the config file's
// ("bad_input" wording, naming the file).
Result<std::vector<std::string>> ConfiguredProtectNames();

// Every process on the host, read under `deadline_ms`: a process wedged in
// the driver with its memory-map lock held can block a /proc read. nullopt
// when the read did not finish in time.
std::optional<std::map<pid_t, HostProcess>> ReadProcessTable(const std::string& proc_root,
                                                             int64_t deadline_ms);

// After act::Execute: looks at the GPUs again (without the /proc scan) until
// the memory the ended targets held is back or `settle_s` has passed.
// `release` is empty when no target ended (nothing to check).
struct ReleaseCheck {
  std::optional<act::ReleaseReport> release;
  double settled_s = 0;
};
ReleaseCheck WaitForRelease(const collect::CollectOptions& options, const Snapshot& before,
                            const act::ExecuteReport& report, double settle_s, const Clock& clock);

// A stop is incomplete when a target survived, was denied or failed, or its
// memory did not come back.
bool StopIncomplete(const act::ExecuteReport& report, const ReleaseCheck& check);

}  // namespace gw::cli

#endif  // GPUWARDEN_CLI_STOP_PATH_H_
