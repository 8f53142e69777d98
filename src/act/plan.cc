#include "act/plan.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "proc/device_files.h"

namespace gw::act {
namespace {

// What the latest snapshot says one process holds.
struct Holding {
  std::set<unsigned> gpus;
  uint64_t vram = 0;
  bool vram_known = true;
  Opt<unsigned> sm_pct;
};

std::map<pid_t, Holding> Holdings(const Snapshot& latest) {
  std::map<pid_t, Holding> out;
  std::map<unsigned, unsigned> gpu_by_minor;
  for (const Gpu& gpu : latest.gpus) {
    if (gpu.minor_number) gpu_by_minor[*gpu.minor_number] = gpu.index;
    for (const GpuProcess& p : gpu.processes) {
      Holding& h = out[p.pid];
      h.gpus.insert(gpu.index);
      if (p.used_memory_bytes) {
        h.vram += *p.used_memory_bytes;
      } else {
        h.vram_known = false;
      }
      if (p.sm_util_pct) h.sm_pct = std::max(h.sm_pct.value_or(0), *p.sm_util_pct);
    }
  }
  for (const auto& [pid, host] : latest.processes) {
    for (const std::string& file : host.device_files) {
      const Opt<unsigned> minor = proc::GpuDeviceMinor(file, latest.device_dir);
      if (!minor) continue;
      auto it = gpu_by_minor.find(*minor);
      if (it != gpu_by_minor.end()) out[pid].gpus.insert(it->second);
    }
  }
  return out;
}

std::string UserText(const HostProcess& p) {
  if (p.user) return *p.user;
  if (p.uid) return fmt::format("uid {}", *p.uid);
  return "?";
}

class Planner {
 public:
  Planner(const PlanInput& input, const PlanRequest& request)
      : in_(input), req_(request), holdings_(Holdings(input.latest)) {
    // The caller and its ancestors (its shell, tmux, sshd...): never targets.
    pid_t p = in_.caller.pid;
    for (int depth = 0; p > 0 && depth < 4096 && self_.insert(p).second; ++depth) {
      const HostProcess* host = Find(p);
      if (host == nullptr || !host->ppid) break;
      p = *host->ppid;
    }
    for (const auto& [pid, host] : in_.table) {
      if (host.ppid) children_[*host.ppid].push_back(pid);
    }
  }

  Plan Make() {
    plan_.mode = req_.mode;
    if (req_.mode == PlanMode::kClean) {
      AddCleanCandidates();
    } else {
      AddNamed();
    }
    // Runs after all direct targets, so a member that is also a target keeps
    // its own, more specific reason.
    const std::vector<pid_t> targets = Targets();
    for (pid_t t : targets) AddRun(t);
    Finish();
    return std::move(plan_);
  }

 private:
  const HostProcess* Find(pid_t pid) const {
    auto it = in_.table.find(pid);
    return it == in_.table.end() ? nullptr : &it->second;
  }

  PlanItem Describe(pid_t pid, const HostProcess* host) const {
    PlanItem item;
    item.pid = pid;
    if (host != nullptr) {
      item.start_ticks = host->start_ticks;
      item.uid = host->uid;
      item.user = UserText(*host);
      item.comm = host->comm;
      item.cmdline = host->cmdline;
      item.age_s = host->age_s;
      item.state = host->state;
    } else {
      item.user = "?";
    }
    auto it = holdings_.find(pid);
    if (it != holdings_.end()) {
      item.gpus.assign(it->second.gpus.begin(), it->second.gpus.end());
      if (it->second.vram_known && it->second.vram > 0) item.vram_bytes = it->second.vram;
      item.sm_pct = it->second.sm_pct;
    }
    return item;
  }

  // Why this process must not be signalled, if it must not.
  std::optional<std::pair<Reason, std::string>> Refusal(pid_t pid, const HostProcess* host) const {
    if (host == nullptr) return std::pair{Reason::kGone, std::string("no such process")};
    if (pid == 1) return std::pair{Reason::kInit, std::string("PID 1 (init)")};
    if (self_.count(pid) != 0) {
      return std::pair{Reason::kSelf, std::string("gpuwarden itself or one of its parents "
                                                  "(the shell that runs it)")};
    }
    if (pid == 2 || host->ppid == 2) {
      return std::pair{Reason::kKernelThread, std::string("a kernel thread")};
    }
    if (std::optional<std::string> name = in_.protect.Match(*host)) {
      return std::pair{Reason::kProtected, *name};
    }
    if (!host->uid) {
      return std::pair{Reason::kUnknownOwner,
                       fmt::format("its owner could not be read (/proc/{})", pid)};
    }
    const uid_t uid = *host->uid;
    if (!in_.caller.root()) {
      if (uid != in_.caller.uid) {
        return std::pair{Reason::kNotYours,
                         fmt::format("owned by {}: only {} or an administrator can stop it",
                                     UserText(*host), UserText(*host))};
      }
      return std::nullopt;
    }
    const bool named_user =
        std::find(req_.users.begin(), req_.users.end(), uid) != req_.users.end();
    if (uid != 0 && !req_.all_users && !named_user) {
      return std::pair{Reason::kNeedsUserFlag,
                       fmt::format("owned by {}: add --user {} (or --all-users) to act on it",
                                   UserText(*host), UserText(*host))};
    }
    return std::nullopt;
  }

  bool Seen(pid_t pid) const { return seen_.count(pid) != 0; }

  // Adds `pid` to act, or to skip when it must not be signalled. Returns
  // whether it will be signalled.
  bool Add(pid_t pid, Role role, Reason reason, std::string detail,
           std::optional<pid_t> because_of = std::nullopt) {
    if (Seen(pid)) return IsActing(pid);
    seen_.insert(pid);
    const HostProcess* host = Find(pid);
    PlanItem item = Describe(pid, host);
    item.role = role;
    item.because_of = because_of;
    if (auto refusal = Refusal(pid, host)) {
      item.reason = refusal->first;
      item.detail = std::move(refusal->second);
      plan_.skip.push_back(std::move(item));
      return false;
    }
    item.reason = reason;
    item.detail = std::move(detail);
    plan_.act.push_back(std::move(item));
    return true;
  }

  bool IsActing(pid_t pid) const {
    return std::any_of(plan_.act.begin(), plan_.act.end(),
                       [pid](const PlanItem& i) { return i.pid == pid; });
  }

  // A zombie cannot be signalled away: its parent must reap it, which it
  // does when it ends (init then reaps the zombie).
  void AddZombie(pid_t zombie, Role role) {
    if (Seen(zombie)) return;
    seen_.insert(zombie);
    const HostProcess* host = Find(zombie);
    PlanItem item = Describe(zombie, host);
    item.role = role;
    item.reason = Reason::kZombie;
    const Opt<pid_t> parent = host != nullptr ? host->ppid : std::nullopt;
    if (!parent || *parent <= 1) {
      item.detail =
          "already exited (zombie) and its parent is init, which reaps it; if it "
          "stays, the driver holds it: ask an administrator";
      plan_.skip.push_back(std::move(item));
      return;
    }
    const bool acting = Add(*parent, Role::kZombieParent, Reason::kZombieParent,
                            fmt::format("parent of zombie PID {}, which still holds the GPU: "
                                        "ending the parent lets the zombie be reaped",
                                        zombie),
                            zombie);
    item.detail =
        acting ? fmt::format("already exited (zombie): its parent {} is stopped instead", *parent)
               : fmt::format(
                     "already exited (zombie): only its parent {} can remove "
                     "it, and that is not stopped (see below)",
                     *parent);
    plan_.skip.push_back(std::move(item));
    if (!acting && role == Role::kNamed) plan_.refused_named.push_back(zombie);
  }

  bool PassesFilters(pid_t pid, pid_t subject) const {
    if (!req_.pids.empty() &&
        std::find(req_.pids.begin(), req_.pids.end(), pid) == req_.pids.end() &&
        std::find(req_.pids.begin(), req_.pids.end(), subject) == req_.pids.end()) {
      return false;
    }
    auto it = holdings_.find(subject);
    if (!req_.gpus.empty()) {
      if (it == holdings_.end()) return false;
      const bool any = std::any_of(req_.gpus.begin(), req_.gpus.end(),
                                   [&](unsigned g) { return it->second.gpus.count(g) != 0; });
      if (!any) return false;
    }
    if (req_.min_vram_bytes) {
      if (it == holdings_.end() || !it->second.vram_known ||
          it->second.vram < *req_.min_vram_bytes) {
        return false;
      }
    }
    return true;
  }

  void AddCleanCandidates() {
    // Findings come ranked (most memory first); the plan is sorted at the end.
    for (const diagnose::Finding& f : in_.findings) {
      Reason reason;
      std::string detail;
      if (f.code == "IDLE_HOLDER") {
        reason = Reason::kIdleHolder;
        detail = "holds GPU memory and did no GPU work";
        // How long, and seen how: the measured idle time (idle_time.h).
        for (const diagnose::Evidence& e : f.evidence) {
          if (e.name == "idle_for") detail += ": " + e.value;
        }
      } else if (f.code == "ORPHAN_HOLDER") {
        reason = Reason::kOrphanHolder;
        detail = "left behind: the run that started it is gone";
      } else if (f.code == "UNLISTED_DEVICE_HOLDER") {
        reason = Reason::kStaleDeviceHolder;
        detail =
            "holds " + in_.latest.device_dir + "/nvidia* open without being a listed GPU process";
      } else if (f.code == "ZOMBIE_HOLDER") {
        for (pid_t z : f.pids) {
          if (PassesFilters(z, z)) AddZombie(z, Role::kHolder);
        }
        continue;
      } else {
        continue;
      }
      for (pid_t pid : f.pids) {
        if (PassesFilters(pid, pid)) Add(pid, Role::kHolder, reason, detail);
      }
    }
  }

  void AddNamed() {
    for (pid_t pid : req_.pids) {
      const HostProcess* host = Find(pid);
      if (host != nullptr && host->state == ProcessState::kZombie) {
        AddZombie(pid, Role::kNamed);
        continue;
      }
      // Refused, or no such process: both are an error of the command.
      if (!Add(pid, Role::kNamed, Reason::kNamed, "named on the command line")) {
        plan_.refused_named.push_back(pid);
      }
    }
  }

  std::vector<pid_t> Targets() const {
    std::vector<pid_t> out;
    for (const PlanItem& i : plan_.act) out.push_back(i.pid);
    return out;
  }

  // The run `target` belongs to: the topmost ancestor reached by climbing
  // through parents of the same user and process group that are neither
  // session leaders (a login shell, a tmux pane) nor shells (a script that
  // started several jobs is not one run), and every descendant of that of the
  // same user. An orphan also takes the other orphans of its user and group:
  // the workers its dead launcher left behind.
  std::vector<pid_t> RunOf(pid_t target) const {
    const HostProcess* t = Find(target);
    if (t == nullptr || !t->uid || !t->pgid) return {target};
    pid_t root = target;
    for (int depth = 0; depth < 4096; ++depth) {
      const HostProcess* cur = Find(root);
      if (cur == nullptr || !cur->ppid || *cur->ppid <= 1) break;
      const HostProcess* parent = Find(*cur->ppid);
      if (parent == nullptr || parent->uid != t->uid || parent->pgid != t->pgid ||
          (parent->sid && *parent->sid == parent->pid) || IsShell(*parent)) {
        break;
      }
      root = parent->pid;
    }
    std::set<pid_t> run{root};
    std::vector<pid_t> stack{root};
    while (!stack.empty()) {
      const pid_t p = stack.back();
      stack.pop_back();
      auto it = children_.find(p);
      if (it == children_.end()) continue;
      for (pid_t c : it->second) {
        const HostProcess* child = Find(c);
        if (child != nullptr && child->uid == t->uid && run.insert(c).second) stack.push_back(c);
      }
    }
    const HostProcess* r = Find(root);
    if (r != nullptr && Orphaned(*r) && t->sid != t->pgid) {
      for (const auto& [pid, host] : in_.table) {
        if (host.pgid == t->pgid && host.uid == t->uid && Orphaned(host)) run.insert(pid);
      }
    }
    run.insert(target);
    return {run.begin(), run.end()};
  }

  // Re-parented to init (or to a process this snapshot did not see).
  bool Orphaned(const HostProcess& p) const {
    return p.ppid && (*p.ppid == 1 || Find(*p.ppid) == nullptr);
  }

  static bool IsShell(const HostProcess& p) {
    static constexpr std::string_view kShells[] = {
        "sh",  "bash", "dash",   "zsh",  "fish",  "ksh", "mksh", "tcsh",
        "csh", "tmux", "screen", "sshd", "login", "su",  "sudo", "script"};
    if (!p.comm) return false;
    // tmux names its server "tmux: server".
    const std::string_view comm = std::string_view(*p.comm).substr(0, p.comm->find(':'));
    for (std::string_view shell : kShells) {
      if (comm == shell) return true;
    }
    return false;
  }

  void AddRun(pid_t target) {
    const std::vector<pid_t> run = RunOf(target);
    if (run.size() <= 1) return;
    const HostProcess* t = Find(target);
    if (!req_.tree) {
      std::vector<pid_t> others;
      for (pid_t p : run) {
        if (p != target && !IsActing(p)) others.push_back(p);
      }
      if (others.empty()) return;
      plan_.notes.push_back(fmt::format(
          "PID {} is one of {} processes of a run (process group {}; also PIDs {}): add --tree "
          "to stop the whole run",
          target, run.size(), t != nullptr && t->pgid ? *t->pgid : target,
          fmt::join(others, ", ")));
      return;
    }
    for (pid_t p : run) {
      if (p == target) continue;
      const HostProcess* host = Find(p);
      if (host != nullptr && host->state == ProcessState::kZombie) continue;  // Reaped with it.
      Add(p, Role::kRunMember, Reason::kRunMember,
          fmt::format("in the run of PID {} (process group {})", target,
                      t != nullptr && t->pgid ? *t->pgid : target),
          target);
    }
  }

  void Finish() {
    auto by_pid = [](const PlanItem& a, const PlanItem& b) { return a.pid < b.pid; };
    std::sort(plan_.act.begin(), plan_.act.end(), by_pid);
    std::sort(plan_.skip.begin(), plan_.skip.end(), by_pid);
    std::sort(plan_.refused_named.begin(), plan_.refused_named.end());
  }

  const PlanInput& in_;
  const PlanRequest& req_;
  std::map<pid_t, Holding> holdings_;
  std::set<pid_t> self_;
  std::map<pid_t, std::vector<pid_t>> children_;
  std::set<pid_t> seen_;
  Plan plan_;
};

}  // namespace

std::string_view RoleName(Role role) {
  switch (role) {
    case Role::kHolder:
      return "holder";
    case Role::kNamed:
      return "named";
    case Role::kZombieParent:
      return "zombie_parent";
    case Role::kRunMember:
      return "run_member";
  }
  return "holder";
}

std::string_view ReasonCode(Reason reason) {
  switch (reason) {
    case Reason::kIdleHolder:
      return "idle_holder";
    case Reason::kOrphanHolder:
      return "orphan_holder";
    case Reason::kStaleDeviceHolder:
      return "stale_device_holder";
    case Reason::kZombieParent:
      return "zombie_parent";
    case Reason::kNamed:
      return "named";
    case Reason::kRunMember:
      return "run_member";
    case Reason::kNotYours:
      return "not_yours";
    case Reason::kNeedsUserFlag:
      return "needs_user_flag";
    case Reason::kProtected:
      return "protected";
    case Reason::kSelf:
      return "self";
    case Reason::kInit:
      return "init";
    case Reason::kKernelThread:
      return "kernel_thread";
    case Reason::kZombie:
      return "zombie";
    case Reason::kGone:
      return "gone";
    case Reason::kUnknownOwner:
      return "unknown_owner";
  }
  return "unknown_owner";
}

bool IsActReason(Reason reason) {
  switch (reason) {
    case Reason::kIdleHolder:
    case Reason::kOrphanHolder:
    case Reason::kStaleDeviceHolder:
    case Reason::kZombieParent:
    case Reason::kNamed:
    case Reason::kRunMember:
      return true;
    default:
      return false;
  }
}

Plan MakePlan(const PlanInput& input, const PlanRequest& request) {
  return Planner(input, request).Make();
}

}  // namespace gw::act
