// The plan of a clean-up: which processes clean/kill would signal and which
// they will not, each with the reason. A pure function of what was seen (the
// snapshot, the diagnosis, the host's process table) and who asks: nothing
// here reads the system or sends a signal (execute.h does, after the caller
// has seen the plan).
#ifndef GPUWARDEN_ACT_PLAN_H_
#define GPUWARDEN_ACT_PLAN_H_

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "act/protected.h"
#include "core/snapshot.h"
#include "diagnose/finding.h"

namespace gw::act {

enum class PlanMode {
  kClean,  // What the diagnosis found reclaimable.
  kKill,   // The PIDs the caller named.
};

// Who asks. Acting on another user's process needs root and an explicit
// --user NAME or --all-users.
struct Caller {
  uid_t uid = 0;  // Real uid.
  std::string user;
  pid_t pid = 0;  // gpuwarden itself: it and its ancestors are never signalled.
  bool root() const { return uid == 0; }
};

struct PlanRequest {
  PlanMode mode = PlanMode::kClean;
  // Initialised, so that designated initializers may leave them out.
  std::vector<pid_t> pids{};       // kill: the named PIDs. clean: --pid (empty = any).
  std::vector<unsigned> gpus{};    // clean: --gpu (empty = any).
  Opt<uint64_t> min_vram_bytes{};  // clean: --min-vram.
  std::vector<uid_t> users{};      // --user (root only): whose processes may be acted on.
  bool all_users = false;          // --all-users (root only).
  bool tree = false;               // Act on each target's whole run, too.
};

// Why a process is in the plan (role) and why it will or will not be
// signalled (reason). Stable words for JSON:
enum class Role {
  kHolder,        // clean: a reclaimable GPU holder from the diagnosis.
  kNamed,         // kill: named on the command line.
  kZombieParent,  // The parent of a zombie holder: ending it lets the zombie be reaped.
  kRunMember,     // Another process of a target's run (parent, workers), with --tree.
};
std::string_view RoleName(Role role);  // "holder", "named", "zombie_parent", "run_member"

enum class Reason {
  // Will be signalled.
  kIdleHolder,
  kOrphanHolder,
  kStaleDeviceHolder,
  kZombieParent,
  kNamed,
  kRunMember,
  // Will not.
  kNotYours,       // A non-root caller and someone else's process.
  kNeedsUserFlag,  // Root and another user's process, without --user/--all-users.
  kProtected,      // A protected name (protected.h).
  kSelf,           // gpuwarden or one of its ancestors (the caller's shell).
  kInit,           // PID 1.
  kKernelThread,   // Signals do not end kernel threads.
  kZombie,         // Already exited; its parent is acted on (or must be).
  kGone,           // Not running any more.
  kUnknownOwner,   // Its owner could not be read.
};
std::string_view ReasonCode(Reason reason);  // "idle_holder", "not_yours", ...
bool IsActReason(Reason reason);

struct PlanItem {
  pid_t pid = 0;
  Opt<uint64_t> start_ticks;  // The identity checked again right before signalling.
  Opt<uid_t> uid;
  std::string user;  // Name, or "uid N", or "?".
  Opt<std::string> comm;
  std::vector<std::string> cmdline;  // Raw argv (sanitise before a terminal).
  std::vector<unsigned> gpus;        // GPUs it holds (driver lists or device files).
  Opt<uint64_t> vram_bytes;          // Sum of its per-GPU memory, when known.
  Opt<unsigned> sm_pct;              // Max over its GPUs, latest sample.
  Opt<double> age_s;
  Opt<ProcessState> state;
  Role role = Role::kHolder;
  std::optional<pid_t> because_of;  // The holder or zombie that brought it in.
  Reason reason = Reason::kNamed;
  std::string detail;  // One line for a person: why this reason.
};

struct Plan {
  PlanMode mode = PlanMode::kClean;
  std::vector<PlanItem> act;       // Will be signalled, in PID order.
  std::vector<PlanItem> skip;      // Will not, with the reason.
  std::vector<std::string> notes;  // Offers and hints ("--tree would also stop ...").
  // kill: PIDs the caller named that are refused or do not exist (a zombie
  // handled through its parent is not refused) — the exit code reports them.
  std::vector<pid_t> refused_named;
};

struct PlanInput {
  const Snapshot& latest;  // GPUs and their process lists; processes seen.
  // Every process on the host (ppid, pgid, sid, uid...): for runs, zombie
  // parents and the caller's ancestry. Processes of `latest` missing here
  // are treated as gone.
  const std::map<pid_t, HostProcess>& table;
  std::span<const diagnose::Finding> findings;  // clean: the diagnosis.
  const ProtectedList& protect;
  Caller caller;
};

Plan MakePlan(const PlanInput& input, const PlanRequest& request);

}  // namespace gw::act

#endif  // GPUWARDEN_ACT_PLAN_H_
