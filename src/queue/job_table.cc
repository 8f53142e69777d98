#include "queue/job_table.h"

#include <fcntl.h>
#include <signal.h>
#include <time.h>

#include <algorithm>
#include <limits>
#include <utility>

#include <fmt/format.h>

#include "core/text.h"
#include "core/units.h"
#include "diagnose/health.h"
#include "diagnose/verdict.h"
#include "os/file_io.h"
#include "proc/proc_parse.h"
#include "queue/admission.h"
#include "queue/job_end.h"

namespace gw::queue {
namespace {

constexpr size_t kHistory = 8;  // Full snapshots kept for idle judgements.

int MinuteOfDay(int64_t unix_ms) {
  const time_t t = static_cast<time_t>(unix_ms / 1000);
  struct tm local;
  localtime_r(&t, &local);
  return local.tm_hour * 60 + local.tm_min;
}

// What placement reads from a snapshot, hashed: free memory, utilisation,
// reachability and the processes on each GPU. A collision can only delay a
// pass to the next full look.
uint64_t DecisionFingerprint(const Snapshot& s) {
  uint64_t h = 1469598103934665603ULL;
  auto mix = [&h](uint64_t v) { h = (h ^ v) * 1099511628211ULL; };
  for (const Gpu& g : s.gpus) {
    mix(g.index);
    mix(g.memory.free_bytes.value_or(~0ULL));
    mix(g.utilization_gpu_pct.value_or(~0U));
    mix(g.unreachable ? 1 : 0);
    for (const GpuProcess& p : g.processes) {
      mix(static_cast<uint64_t>(p.pid));
      mix(p.used_memory_bytes.value_or(~0ULL));
    }
  }
  return h;
}

// A line appended to a job's own log (the VRAM guard's warning). Best effort:
// the log belongs to the job, and a full disk there must not stop the daemon.
void AppendToLog(const std::string& path, const std::string& text) {
  if (path.empty()) return;
  os::UniqueFd fd(open(path.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK));
  if (fd.valid()) (void)os::WriteAll(fd.get(), text);
}

std::string GpuList(const std::vector<unsigned>& gpus) {
  if (gpus.empty()) return "no GPU";
  std::string out = gpus.size() == 1 ? "GPU " : "GPUs ";
  for (size_t i = 0; i < gpus.size(); ++i) out += (i ? "," : "") + std::to_string(gpus[i]);
  return out;
}

// How a job ended, for the log: "succeeded (exit 0)", "failed: time_limit".
std::string EndSummary(const Job& job) {
  std::string s(JobStateName(job.state));
  if (job.exit_code) s += fmt::format(" (exit {})", *job.exit_code);
  if (job.exit_signal) s += fmt::format(" (signal {})", *job.exit_signal);
  if (!job.end_reason.empty() && job.end_reason != "exit") s += ": " + job.end_reason;
  if (!job.end_detail.empty() && job.state != JobState::kSucceeded) s += ": " + job.end_detail;
  return s;
}

// A write the store refused for what it holds ("invalid", "not_found"), not
// for its disk: writing it again cannot help.
bool Retriable(const Error& e) { return e.code != "invalid" && e.code != "not_found"; }

}  // namespace

JobTable::JobTable(JobTableOptions options, JobTableParts parts)
    : o_(std::move(options)), parts_(parts) {}

// --- Storage -----------------------------------------------------------------

Status JobTable::Write(const Job& job) {
  Status s = parts_.store.Update(job);
  if (s.ok()) {
    WriteSucceeded();
  } else if (Retriable(s.error())) {
    WriteFailed(s.error());
  } else {
    parts_.log.Error(fmt::format("job {} cannot be stored: {}", job.id, s.error().message));
  }
  return s;
}

void JobTable::Persist(const Job& job) {
  // Out of the sets before the write, so that its success can end the
  // degraded state.
  dirty_.erase(job.id);
  unsaved_ended_.erase(job.id);
  Status s = Write(job);
  if (s.ok() || !Retriable(s.error())) return;
  if (IsTerminal(job.state)) {
    unsaved_ended_[job.id] = job;
  } else {
    dirty_.insert(job.id);
  }
}

void JobTable::WriteFailed(const Error& error) {
  const std::string detail = SanitizeForTerminal(error.message);
  if (!storage_degraded_) {
    storage_degraded_ = Degraded{"storage", detail, parts_.clock.NowUnixMs()};
    parts_.log.Error(
        fmt::format("queue storage degraded: {}; running jobs keep running, new "
                    "requests are refused until writes succeed again",
                    detail));
  } else {
    storage_degraded_->detail = detail;
  }
  next_retry_ms_ = parts_.clock.MonotonicMs() + o_.retry_interval_ms;
}

void JobTable::WriteSucceeded() {
  if (!storage_degraded_ || !dirty_.empty() || !unsaved_ended_.empty()) return;
  const int64_t since = storage_degraded_->since_unix_ms;
  storage_degraded_.reset();
  parts_.log.Notice(
      fmt::format("queue storage writable again after {} s; every pending write "
                  "is stored",
                  (parts_.clock.NowUnixMs() - since) / 1000));
}

void JobTable::RetryUnsaved() {
  if (!storage_degraded_ || parts_.clock.MonotonicMs() < next_retry_ms_) return;
  if (dirty_.empty() && unsaved_ended_.empty()) {
    // Only a request's write failed: probe with a rewrite of an active job
    // (unchanged), so that the degraded state ends without waiting for the
    // next request. With no job at all, the next request's write decides.
    if (active_.empty()) return;
    dirty_.insert(active_.begin()->first);
  }
  for (auto it = unsaved_ended_.begin(); it != unsaved_ended_.end();) {
    const Job job = it->second;
    // Out of the set before the write, so that its success can end the
    // degraded state.
    it = unsaved_ended_.erase(it);
    if (Status st = Write(job); !st.ok() && Retriable(st.error())) {
      unsaved_ended_[job.id] = job;
      return;
    }
  }
  const std::set<JobId> dirty = dirty_;
  for (JobId id : dirty) {
    auto a = active_.find(id);
    dirty_.erase(id);
    if (a == active_.end()) continue;
    if (Status st = Write(a->second); !st.ok() && Retriable(st.error())) {
      dirty_.insert(id);
      return;
    }
  }
  WriteSucceeded();
}

std::vector<Degraded> JobTable::degraded() const {
  std::vector<Degraded> out;
  if (storage_degraded_) out.push_back(*storage_degraded_);
  if (gpus_degraded_) out.push_back(*gpus_degraded_);
  return out;
}

// --- Requests ----------------------------------------------------------------

Result<JobId> JobTable::Submit(Job job) {
  AdmissionFacts facts;
  if (latest_) {
    for (const Gpu& g : latest_->gpus)
      facts.gpus.push_back(placement::Assess(placement::FactsOf(g)));
  }
  facts.margin_bytes = o_.policy.margin_bytes;
  facts.job_exists = [this](JobId id) {
    Result<std::optional<Job>> j = Find(id);
    return !j.ok() || j->has_value();  // Unreadable: not certain, so not refused.
  };
  if (std::optional<Error> refused = CheckAdmission(job.spec, facts)) return *refused;
  Result<JobId> id = parts_.store.Insert(job);  // Durable (synchronous=FULL) before the reply.
  if (!id.ok()) {
    if (!Retriable(id.error())) return MakeError("bad_request", id.error().message);
    WriteFailed(id.error());
    return MakeError(kRefusedStorage, id.error().message);
  }
  WriteSucceeded();
  job.id = *id;
  active_[job.id] = std::move(job);
  schedule_needed_ = true;
  return *id;
}

Result<std::optional<Job>> JobTable::Find(JobId id) {
  if (auto it = active_.find(id); it != active_.end()) return std::optional<Job>(it->second);
  if (auto it = unsaved_ended_.find(id); it != unsaved_ended_.end()) {
    return std::optional<Job>(it->second);
  }
  return parts_.store.Get(id);
}

Result<std::vector<Job>> JobTable::List(const JobFilter& filter) {
  Result<std::vector<Job>> jobs = parts_.store.List(filter);
  if (!jobs.ok()) return jobs;
  for (Job& j : *jobs) {
    if (auto it = active_.find(j.id); it != active_.end()) {
      j = it->second;
    } else if (auto u = unsaved_ended_.find(j.id); u != unsaved_ended_.end()) {
      j = u->second;
    }
  }
  return jobs;
}

Result<JobState> JobTable::Control(JobId id, const std::string& op, uid_t caller_uid,
                                   const std::string& caller_user) {
  Result<std::optional<Job>> found = Find(id);
  if (!found.ok()) return found.error();
  if (!*found) return MakeError("not_found", fmt::format("no job {}", id));
  Job job = std::move(**found);
  if (caller_uid != 0 && caller_uid != job.owner.uid) {
    return MakeError("forbidden", fmt::format("job {} belongs to {}; only its owner or root "
                                              "can do that",
                                              id, job.owner.user));
  }
  const JobState before = job.state;
  if (op == "hold") {
    if (before != JobState::kQueued && before != JobState::kHeld) {
      return MakeError("state", fmt::format("job {} is {}: only a waiting job can be held", id,
                                            JobStateName(before)));
    }
    job.state = JobState::kHeld;
  } else if (op == "release") {
    if (before != JobState::kHeld && before != JobState::kQueued) {
      return MakeError("state", fmt::format("job {} is {}: only a held job can be released", id,
                                            JobStateName(before)));
    }
    job.state = JobState::kQueued;
  } else if (op == "cancel") {
    if (IsTerminal(before)) {
      return MakeError("state", fmt::format("job {} already ended ({})", id, JobStateName(before)));
    }
    if (before == JobState::kRunning || before == JobState::kStarting) {
      // Its supervisor stops it and records the end; nothing to store now,
      // so a cancel works even while the store refuses writes.
      StopJob(active_.at(id), "cancelled");
      AskPassNow();
      return before;
    }
    job.state = JobState::kCancelled;
    job.end_unix_ms = parts_.clock.NowUnixMs();
    job.end_reason = "cancelled";
    job.end_detail = fmt::format("cancelled by {} before it started", caller_user);
  } else {
    return MakeError("bad_request", "unknown control op " + op);
  }
  if (job.state == before) return before;
  const bool was_dirty = dirty_.erase(id) > 0;
  if (Status s = Write(job); !s.ok()) {
    if (was_dirty) dirty_.insert(id);
    return MakeError(kRefusedStorage, s.error().message);
  }
  if (IsTerminal(job.state)) {
    active_.erase(id);
    parts_.log.Notice(fmt::format("job {} ended: {}", id, EndSummary(job)));
  } else {
    active_[id] = job;
  }
  AskPassNow();
  return job.state;
}

std::optional<size_t> JobTable::Position(JobId id) const {
  auto it = position_.find(id);
  if (it == position_.end()) return std::nullopt;
  return it->second + 1;
}

// --- Runs --------------------------------------------------------------------

std::vector<JobTable::WatchFd> JobTable::Watches() const {
  std::vector<WatchFd> out;
  for (const auto& [id, w] : watched_) out.push_back({id, w.fd.get()});
  return out;
}

void JobTable::Watch(Job& job, bool child) {
  if (!job.supervisor_pid || !job.supervisor_start_ticks) {
    Finish(job.id, "");
    return;
  }
  Result<os::UniqueFd> fd =
      parts_.supervisors.Watch(*job.supervisor_pid, *job.supervisor_start_ticks);
  if (!fd.ok()) {
    // Already gone: its end is in its record, or it is lost.
    Finish(job.id, "");
    return;
  }
  Watched w;
  w.fd = std::move(*fd);
  w.child = child;
  watched_[job.id] = std::move(w);
}

void JobTable::StopJob(Job& job, const std::string& reason) {
  auto w = watched_.find(job.id);
  if (w != watched_.end()) w->second.stop_reason = reason;
  Status s = parts_.supervisors.RequestStop(job, reason, o_.grace_s);
  if (!s.ok() && s.error().code != "gone") {
    // "gone": its end is on its way through Watch.
    parts_.log.Warning(fmt::format("job {}: cannot ask its supervisor to stop it ({}): {}", job.id,
                                   reason, s.error().message));
  }
}

void JobTable::OnSupervisorExit(JobId id) {
  auto w = watched_.find(id);
  if (w == watched_.end()) return;
  const std::string reason = w->second.stop_reason;
  const bool child = w->second.child;
  watched_.erase(w);
  auto it = active_.find(id);
  if (it == active_.end()) return;
  if (child && it->second.supervisor_pid) parts_.supervisors.Reap(*it->second.supervisor_pid);
  Finish(id, reason);
}

void JobTable::Finish(JobId id, const std::string& stop_reason) {
  auto it = active_.find(id);
  if (it == active_.end()) return;
  job_pids_stale_ = true;
  look_requested_ = true;
  AskPassNow();
  EndDecision d =
      DecideEnd(it->second, parts_.supervisors.ReadExit(it->second),
                parts_.supervisors.ReadLaunch(it->second), stop_reason, parts_.clock.NowUnixMs());
  if (d.kill_leftovers) KillLeftovers(it->second);
  if (d.job.state == JobState::kQueued) {
    parts_.log.Log(
        d.never_started ? LogLevel::kWarning : LogLevel::kNotice,
        fmt::format("job {} {}: back in the queue (run {})", id,
                    d.never_started ? "did not start (its supervisor ended first)" : "preempted",
                    d.job.requeues));
    it->second = d.job;
    Persist(it->second);
    return;
  }
  EndJob(std::move(d.job));
}

void JobTable::EndJob(Job job) {
  const JobId id = job.id;
  const LogLevel level = job.state == JobState::kLost || job.end_reason == "record_unreadable"
                             ? LogLevel::kWarning
                             : LogLevel::kNotice;
  parts_.log.Log(level, fmt::format("job {} ended: {}", id, EndSummary(job)));
  active_.erase(id);
  dirty_.erase(id);
  watched_.erase(id);
  ++counters_.ended[std::string(JobStateName(job.state))];
  Persist(job);
}

// The supervisor died without a record: its leader got SIGKILL with it, but
// workers may live on in its session and hold GPU memory. Only the job
// owner's processes (a session id cannot say more), each pinned by a pidfd
// before the signal so a reused PID is never hit.
void JobTable::KillLeftovers(const Job& job) {
  std::map<JobId, std::vector<pid_t>> all = JobProcesses();
  for (pid_t pid : all[job.id]) {
    Result<HostProcess> p = parts_.procs.ReadProcess(pid, parts_.clock.NowUnixMs());
    if (!p.ok() || p->uid != job.owner.uid || !p->start_ticks) continue;
    auto handle = parts_.control.Open(pid, *p->start_ticks);
    if (!handle.ok()) continue;  // Gone or reused meanwhile: nothing of ours.
    Status s = parts_.control.Signal(**handle, SIGKILL);
    if (!s.ok() && s.error().code != "gone") {
      parts_.log.Warning(fmt::format("job {}: cannot end its leftover process {}: {}", job.id, pid,
                                     s.error().message));
    }
  }
}

Status JobTable::Recover() {
  Result<std::vector<Job>> jobs = parts_.store.Active();
  if (!jobs.ok()) return jobs.error();
  for (Job& stored : *jobs) {
    const JobId id = stored.id;
    RecoveryFacts facts;
    if (stored.state == JobState::kStarting) {
      facts.claimed = parts_.supervisors.ClaimUnlaunched(stored);
      if (!facts.claimed->ok()) {
        parts_.log.Warning(fmt::format("job {}: cannot claim its interrupted launch: {}", id,
                                       facts.claimed->error().message));
      }
      if (!(facts.claimed->ok() && **facts.claimed) && !stored.supervisor_pid) {
        facts.launch = parts_.supervisors.ReadLaunch(stored);
      }
    }
    Job known = WithLaunchFacts(stored, facts);
    if ((known.state == JobState::kRunning || known.state == JobState::kStarting) && !known.pid) {
      facts.pid = parts_.supervisors.ReadPid(known);
    }
    facts.supervisor_alive =
        known.supervisor_pid && known.supervisor_start_ticks &&
        parts_.supervisors.Alive(*known.supervisor_pid, *known.supervisor_start_ticks);
    RecoveryPlan plan = PlanRecovery(stored, facts);
    active_[id] = plan.job;
    if (plan.store) Persist(active_[id]);
    switch (plan.action) {
      case RecoveryAction::kKeep:
        break;
      case RecoveryAction::kRequeue:
        parts_.log.Notice(fmt::format("job {}: its launch was interrupted; back in the queue", id));
        break;
      case RecoveryAction::kAdopt:
        parts_.log.Info(
            fmt::format("job {}: adopted its running supervisor {}", id, *plan.job.supervisor_pid));
        Watch(active_[id], /*child=*/false);
        break;
      case RecoveryAction::kFinish:
        Finish(id, "");
        break;
    }
  }
  AskPassNow();
  return Status::Ok();
}

// --- Snapshots, guard, schedule ----------------------------------------------

int64_t JobTable::PollIntervalMs(int64_t waiting_ms, int64_t idle_ms) const {
  for (const auto& [id, j] : active_) {
    if (j.state != JobState::kQueued) continue;
    const WaitReason* why = FindWaiting(last_, id);
    if (why == nullptr) return waiting_ms;  // Not through a pass yet.
    const std::string& code = why->code;
    if (code != "window" && code != "dependency" && code != "user_limit" && code != "held" &&
        code != "never_fits") {
      return waiting_ms;
    }
  }
  return idle_ms;
}

bool JobTable::TakeLookRequest() { return std::exchange(look_requested_, false); }

// Every process of a job: its supervisor's session.
std::map<JobId, std::vector<pid_t>> JobTable::JobProcesses() {
  std::map<pid_t, JobId> by_session;
  for (const auto& [id, j] : active_) {
    if (j.supervisor_pid) by_session[*j.supervisor_pid] = id;
  }
  std::map<JobId, std::vector<pid_t>> out;
  if (by_session.empty()) return out;
  Result<std::vector<pid_t>> pids = parts_.procs.ListPids();
  if (!pids.ok()) return out;
  for (pid_t pid : *pids) {
    Result<proc::StatFields> stat = parts_.procs.ReadStat(pid);
    if (!stat.ok()) continue;
    auto it = by_session.find(stat->session);
    if (it != by_session.end() && pid != it->first) out[it->second].push_back(pid);
  }
  return out;
}

// The job's own PID, once its supervisor has recorded it.
void JobTable::LearnJobPids() {
  // Every running job has a watched supervisor: going through those, not
  // every active job, keeps each look (every --poll-ms) from growing with the
  // number of waiting jobs (it was 15 % of the daemon's time with 1,500).
  for (const auto& [id, watched] : watched_) {
    auto it = active_.find(id);
    if (it == active_.end()) continue;
    Job& job = it->second;
    if (job.state != JobState::kRunning || job.pid) continue;
    Result<std::optional<PidRecord>> p = parts_.supervisors.ReadPid(job);
    if (p.ok() && *p) {
      job.pid = (*p)->pid;
      job.pid_start_ticks = (*p)->start_ticks;
      Persist(job);
    }
  }
}

void JobTable::NoteGpuErrors(const Snapshot& s) {
  for (const ProbeError& e : s.errors) {
    parts_.log.Warning(fmt::format("reading the GPUs ({}): {}: {}", e.source, e.code, e.message));
  }
  // No GPU read, and the probe says why: "0 GPUs" would be a lie.
  if (s.gpus.empty() && !s.errors.empty()) {
    const std::string detail = fmt::format("cannot read the GPUs: {}", s.errors.front().message);
    if (!gpus_degraded_) {
      gpus_degraded_ = Degraded{"gpus", SanitizeForTerminal(detail), parts_.clock.NowUnixMs()};
      parts_.log.Error(detail);
    }
  } else if (gpus_degraded_ && !s.gpus.empty()) {
    gpus_degraded_.reset();
    parts_.log.Notice(fmt::format("the GPUs can be read again ({} GPUs)", s.gpus.size()));
  }
}

// A look at the GPUs. Light looks come every --poll-ms while jobs wait and
// answer one question: did anything a placement reads change? Full looks
// (once a second) also feed the diagnosis, find the queue's own processes
// (a scan of every /proc entry) and run the VRAM guard.
void JobTable::OnSnapshot(Snapshot s, bool full, const diagnose::Diagnosis* diagnosis) {
  NoteGpuErrors(s);
  LearnJobPids();
  const uint64_t fingerprint = DecisionFingerprint(s);
  if (full || fingerprint != fingerprint_) AskPassNow();
  fingerprint_ = fingerprint;
  if (full && diagnosis != nullptr) {
    ApplyDiagnosis(*diagnosis);
  } else if (full) {
    history_.push_back(s);
    if (history_.size() > kHistory) history_.erase(history_.begin());
    Judge();
  }
  latest_ = std::move(s);
  if (full || job_pids_stale_) {
    job_pids_ = JobProcesses();
    job_pids_stale_ = false;
    GuardVram();
  }
}

// Idle holders and hardware problems, from the diagnosis of the recent full
// looks.
void JobTable::Judge() {
  diagnose::DiagnoseOptions dopt;
  dopt.placement = o_.placement;
  ApplyDiagnosis(diagnose::Diagnose(history_, dopt));
}

void JobTable::ApplyDiagnosis(const diagnose::Diagnosis& d) {
  idle_pids_.clear();
  for (const diagnose::Finding& f : d.findings) {
    if (f.code == "IDLE_HOLDER") idle_pids_.insert(f.pids.begin(), f.pids.end());
  }
  // What is unhealthy is diagnose's judgement, the same as `gpuwarden health`.
  unhealthy_ = diagnose::UnhealthyGpus(d.findings, o_.placement);
  reset_pending_ = diagnose::ResetPendingGpus(d.findings, o_.placement);
}

void JobTable::GuardVram() {
  for (auto& [id, job] : active_) {
    if (job.state != JobState::kRunning) continue;
    const auto pids_it = job_pids_.find(id);
    if (pids_it == job_pids_.end()) continue;
    const std::set<pid_t> pids(pids_it->second.begin(), pids_it->second.end());
    uint64_t total = 0;
    uint64_t worst = 0;
    for (const Gpu& g : latest_->gpus) {
      uint64_t on_gpu = 0;
      for (const GpuProcess& p : g.processes) {
        if (pids.count(p.pid) && p.used_memory_bytes) on_gpu += *p.used_memory_bytes;
      }
      total += on_gpu;
      worst = std::max(worst, on_gpu);
    }
    if (total > job.peak_vram_bytes.value_or(0)) {
      job.peak_vram_bytes = total;
      Persist(job);
    }
    if (job.spec.vram_bytes == 0 || worst <= job.spec.vram_bytes + o_.policy.margin_bytes) {
      continue;
    }
    auto wit = watched_.find(id);
    if (wit == watched_.end()) continue;
    Watched& w = wit->second;
    if (!w.warned_vram) {
      w.warned_vram = true;
      const std::string line =
          fmt::format("job {} uses {} on one GPU, over its --vram {}{}", id, FormatBytes(worst),
                      FormatBytes(job.spec.vram_bytes), o_.vram_guard_stop ? "; stopping it" : "");
      AppendToLog(job.stderr_path, "gpuwarden: " + line + "\n");
      parts_.log.Warning(line);
    }
    if (o_.vram_guard_stop && w.stop_reason.empty()) StopJob(job, "vram_limit");
  }
}

std::vector<GpuState> JobTable::GpuStates() {
  std::set<pid_t> queue_pids;
  for (const auto& [id, pids] : job_pids_) queue_pids.insert(pids.begin(), pids.end());
  return GpuStatesOf(*latest_, unhealthy_, queue_pids, idle_pids_, reset_pending_);
}

void JobTable::Tick() {
  parts_.log.Flush();
  RetryUnsaved();
  if (std::optional<int64_t> due = NextPassMs(); due && parts_.clock.MonotonicMs() >= *due) {
    Schedule();
  }
}

std::optional<int64_t> JobTable::NextPassMs() const {
  if (!schedule_needed_ || !latest_) return std::nullopt;
  if (!last_pass_ms_ || pass_now_) return std::numeric_limits<int64_t>::min();
  return *last_pass_ms_ + o_.min_pass_interval_ms;
}

void JobTable::RunPendingPass() {
  if (NextPassMs()) Schedule();
}

void JobTable::Schedule() {
  schedule_needed_ = false;
  pass_now_ = false;
  last_pass_ms_ = parts_.clock.MonotonicMs();
  QueueView view;
  view.now_unix_ms = parts_.clock.NowUnixMs();
  view.minute_of_day = MinuteOfDay(view.now_unix_ms);
  view.config = o_.policy;
  view.gpus = GpuStates();
  view.topology = latest_->topology;
  std::set<JobId> deps;
  for (const auto& [id, j] : active_) {
    if (j.state == JobState::kQueued || j.state == JobState::kHeld) {
      view.waiting.push_back(&j);
      deps.insert(j.spec.after.begin(), j.spec.after.end());
    } else if (j.state == JobState::kRunning || j.state == JobState::kStarting) {
      RunningJob r;
      r.id = id;
      r.uid = j.owner.uid;
      r.user = j.owner.user;
      r.priority = j.spec.priority;
      r.preemptible = j.spec.preemptible;
      r.gpus = j.gpu_indices;
      r.vram_per_gpu = j.spec.vram_bytes;
      r.pids = job_pids_[id];
      r.start_unix_ms = j.start_unix_ms.value_or(view.now_unix_ms);
      r.time_limit_s = j.spec.time_limit_s;
      auto w = watched_.find(id);
      r.stopping = w != watched_.end() && !w->second.stop_reason.empty();
      view.running.push_back(std::move(r));
    }
  }
  for (JobId dep : deps) {
    if (auto it = active_.find(dep); it != active_.end()) {
      view.dependency_states[dep] = it->second.state;
    } else if (Result<std::optional<Job>> got = Find(dep); got.ok() && *got) {
      view.dependency_states[dep] = (*got)->state;
    }
  }
  Result<std::map<uid_t, double>> usage =
      parts_.store.UsageGpuSeconds(view.now_unix_ms, o_.policy.fair_share_half_life_s);
  if (usage.ok()) {
    view.usage_gpu_s = std::move(*usage);
  } else {
    parts_.log.Warning("fair share without usage: " + usage.error().message);
  }
  Decisions d = queue::Schedule(view);
  for (JobId id : d.dependency_failed) {
    auto it = active_.find(id);
    if (it == active_.end()) continue;
    Job job = it->second;
    job.state = JobState::kFailed;
    job.end_reason = "dependency";
    job.end_detail = "a job it runs after did not succeed";
    job.end_unix_ms = view.now_unix_ms;
    EndJob(std::move(job));
  }
  for (const PreemptDecision& p : d.preempt) {
    auto it = active_.find(p.victim);
    if (it == active_.end()) continue;
    auto w = watched_.find(p.victim);
    if (w != watched_.end() && !w->second.stop_reason.empty()) continue;
    parts_.log.Notice(fmt::format("job {}: preempting it for job {}", p.victim, p.for_job));
    StopJob(it->second, "preempted");
  }
  // While the store refuses writes a start cannot be stored, so it is not
  // tried between the retries.
  const bool may_start = !storage_degraded_ || parts_.clock.MonotonicMs() >= next_retry_ms_;
  if (may_start) {
    for (const StartDecision& s : d.start) StartJob(s);
  }
  last_ = std::move(d);
  position_.clear();
  for (size_t i = 0; i < last_.order.size(); ++i) position_[last_.order[i]] = i;
}

void JobTable::StartJob(const StartDecision& s) {
  auto it = active_.find(s.id);
  if (it == active_.end()) return;
  Job job = it->second;
  job.gpu_indices = s.gpus;
  job.gpu_uuids.clear();
  uint64_t total = 0;
  for (unsigned g : s.gpus) {
    for (const Gpu& gpu : latest_->gpus) {
      if (gpu.index != g) continue;
      job.gpu_uuids.push_back(gpu.uuid.value_or(""));
      // The largest: a fraction of it stays within the budget on every GPU.
      total = std::max(total, gpu.memory.total_bytes.value_or(0));
    }
  }
  // The runner's default log paths, known before the launch so a daemon
  // that restarts mid-launch can still serve them.
  job.stdout_path = DirOf(job) + "/stdout";
  job.stderr_path = DirOf(job) + "/stderr";
  job.state = JobState::kStarting;
  job.start_unix_ms = parts_.clock.NowUnixMs();
  // Durable before the fork: a crash from here on is resolved by
  // ClaimUnlaunched on restart, so the job starts at most once. Not stored:
  // not started; it stays queued as it was and is tried again.
  const bool was_dirty = dirty_.erase(job.id) > 0;
  if (Status st = Write(job); !st.ok()) {
    if (was_dirty) dirty_.insert(job.id);
    parts_.log.Warning(fmt::format("job {} not started: {}", job.id, st.error().message));
    schedule_needed_ = true;
    return;
  }
  it->second = job;
  LaunchOptions lo;
  lo.state_dir = o_.state_dir;
  lo.supervisor_path = o_.supervisor_path;
  lo.grace_s = o_.grace_s;
  lo.gpu_total_bytes = total;
  Result<Launched> launched = parts_.supervisors.Launch(job, lo);
  if (!launched.ok()) {
    job.state = JobState::kFailed;
    job.end_reason = "start_failed";
    job.end_detail = launched.error().message;
    job.end_unix_ms = parts_.clock.NowUnixMs();
    EndJob(std::move(job));
    return;
  }
  Job& live = it->second;
  live.supervisor_pid = launched->supervisor_pid;
  live.supervisor_start_ticks = launched->supervisor_start_ticks;
  live.stdout_path = launched->stdout_path;
  live.stderr_path = launched->stderr_path;
  live.state = JobState::kRunning;
  ++counters_.starts;
  counters_.waits.Add(static_cast<double>(*live.start_unix_ms - live.submit_unix_ms) / 1000.0);
  parts_.log.Notice(fmt::format("job {} started on {} for {}: {}", live.id,
                                GpuList(live.gpu_indices), live.owner.user,
                                JoinCommandLine(live.spec.argv)));
  // Running already: a failed write only delays the record (retried).
  Persist(live);
  Watch(live, /*child=*/true);
  job_pids_stale_ = true;
}

}  // namespace gw::queue
