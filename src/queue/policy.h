// The queue's placement policy: which waiting jobs start now, on which GPUs,
// which running jobs to preempt, and why every other job waits. A pure
// function of the queue (QueueView) and the GPUs' state as NVML and the
// diagnosis saw it this moment: no I/O, no clock, no NVML; the daemon calls
// Schedule() on every event (submit, job end, release) and every few seconds.
//
// The rules, in the order a pass applies them:
//
// Reservation (what task-spooler gets wrong). A job declares the VRAM it
// needs per GPU (--vram). A GPU's memory is promised, not only measured: a
// running queue job on it reserves max(0, vram_per_gpu - the NVML bytes of
// the job's processes on that GPU), the part it was promised but has not
// allocated yet, and a job started in this same pass reserves its whole
// request. A job fits on a GPU when
//     free - reserved - margin >= vram_bytes
// (AvailableBytes() is the left side), so a burst of submissions never lands
// on one GPU that merely looks empty because nothing has allocated yet.
// `free` is NVML's free memory, capped at total less the bytes of the listed
// processes: the two are separate NVML reads, and a job that allocated
// between them would otherwise have those bytes counted as neither used nor
// reserved.
// A job that declared no VRAM (vram_bytes == 0, "the whole GPU") needs an
// otherwise unused GPU: no queue job on it (running, starting, or started in
// this pass) and NVML free memory >= kWholeGpuFreePct (90) % of its total (task-spooler's
// "free" rule, tolerating a display server or a small idle holder). While it
// runs, no other queue job is placed on its GPUs, whatever it allocated.
//
// GPU eligibility (the placement core's, as `why --need`): never an
// unreachable or unhealthy GPU (a pending row remap alone is not unhealthy by
// default, diagnose/health.h; such a GPU is placed on last), one whose free or total memory is
// unknown, one in MIG mode or in compute mode PROHIBITED, nor an EXCLUSIVE one with a compute
// process (or a queue job) on it. With --max-util P: only GPUs whose utilisation is known and <= P.
//
// Order. Waiting jobs (queued and held alike, so a held job keeps its place)
// are ordered by effective priority = priority + min(aging_cap,
// floor(wait_s / aging_step_s)) descending, then by the owner's decayed
// GPU-seconds (usage_gpu_s, fair share) ascending, then submit time, then id.
//
// Who is skipped without blocking others: held jobs ("held"), jobs whose
// dependencies have not all succeeded yet ("dependency"), jobs outside their
// window ("window"), jobs whose owner is at a per-user limit ("user_limit"),
// and jobs that can never run as the server stands ("never_fits"; "unhealthy"
// when only GPUs that cannot be used would be big enough: unhealthy,
// unreadable, MIG, PROHIBITED; "topology_unknown" when it asks for NVLink and
// the topology is unknown, so it cannot be checked). A job with a
// dependency that failed, was cancelled or lost, or whose id is unknown, is
// listed in dependency_failed for the daemon to fail (held or not).
//
// The head and EASY backfill. The first job in order that is eligible and
// cannot start now is the HEAD (there is at most one per pass). Jobs of 0
// GPUs start whenever eligible: they take nothing a head could need. The
// head gets a reservation:
//   - If only its --max-util stands in its way (its memory fits now), S is
//     where it fits now, with no estimate: utilisation is not projected.
//   - Its shadow time T is the earliest moment at which it fits once running
//     queue jobs end at start + time_limit (jobs started in this pass
//     included; jobs without a limit never end in this projection; non-queue
//     processes keep what they hold; utilisation is not projected). The GPUs
//     it would take then are its reserved set S. T is its estimated start.
//   - With no such T (the jobs in its way have no time limits), S is where it
//     would fit once every running queue job has ended: that state is bound
//     to come, and nothing started later may take what the head needs there.
//     If it would not fit even then (non-queue processes hold the memory),
//     the queue cannot help it: no reservation, and the others run freely.
// A later job may start now only if it fits now and either it has a time
// limit and now + limit <= T, or starting it leaves the head fitting on S in
// the projected state (so it may use GPUs outside S, and memory on S beyond
// what the head needs). Thus jobs may use what the head cannot use anyway,
// e.g. non-NVLink GPUs when the head needs NVLink, or a GPU too small for it.
// A later job that fits now but not under this rule waits with
// "reserved_for_head" (the message says which --time-limit would let it
// start). At most backfill_depth jobs after the head are tried ("priority"
// beyond: not tried this pass).
// Backfill with a reservation is what keeps small jobs from overtaking a
// large one forever, together with aging.
//
// Placement (placement::Server::Choose, the same as `why --need`'s).
// Single-GPU jobs take the least busy GPU (unknown utilisation counts as
// busiest), then the one with the most available memory (spread), then the
// lowest index. N-GPU jobs need N GPUs that each fit; with --nvlink every
// pair must be NVLink-joined (an empty topology is unknown: such a job is not
// placed, "topology_unknown", the message says why); otherwise the set with
// the smallest PCIe distance (the largest TopologyLevel among its pairs) is
// preferred, then the least loaded. "Never" counts a GPU of unknown total as
// big enough (never must be certain). Servers with more than 64 GPUs: only
// the first 64 (by index) are used.
//
// Preemption. When the head does not fit in memory now and stopping running
// preemptible jobs whose BASE priority is strictly lower than the head's
// would make it fit now (memory and placement), the pass emits a minimal such set (tried lowest
// priority first, then most recently started; a victim whose removal is not
// needed is dropped again) and does not start the head in the same pass; it
// starts on a later pass once they have left `running`. The head's aging does
// not count here: a requeued victim keeps its submit time and so its aging,
// and would otherwise preempt its preemptor back. Jobs marked `stopping` are
// never chosen again and count as already gone. No preemption for a job that
// would not fit even with every candidate stopped.
//
// Explanations. Every waiting job gets a WaitReason. The first explain_depth
// jobs in order get a one-line message naming what blocks them (the best the
// server offers now and the biggest holder of that GPU); jobs further down
// get the code only (message empty: GenericWaitMessage(code) is a sentence to
// show instead), because 100,000 formatted messages would cost more than the
// rest of the pass.
//
// Cost. Each Job is read once, in the caller's order (so `waiting` in id
// order, as the store lists it, is fastest), then only compact copies are
// sorted and walked; the Job is read again only for the jobs tried (up to
// the head plus backfill_depth) or explained. About 100 bytes are allocated
// per waiting job, most of them the result. See bench/queue_policy_bench.cc.
#ifndef GPUWARDEN_QUEUE_POLICY_H_
#define GPUWARDEN_QUEUE_POLICY_H_

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/snapshot.h"
#include "placement/placement.h"
#include "queue/job.h"

namespace gw::queue {

// A job without --vram needs a GPU at least this free (percent of its total),
// with no other queue job on it (see "A job that declared no VRAM" above).
inline constexpr int64_t kWholeGpuFreePct = 90;

// A process on a GPU that the queue did not start (for explanations).
struct GpuHolder {
  pid_t pid = 0;
  std::string user;
  uint64_t bytes = 0;
  std::optional<double> idle_s;  // How long it has not used the GPU, when known.
  std::string command;
};

// A GPU as the policy sees it. Eligibility, room, order and GPU sets are the
// placement core's (placement/placement.h), the same as `why --need`'s.
struct GpuState {
  unsigned index = 0;  // NVML index.
  std::string uuid;
  std::optional<uint64_t> total_bytes;      // Unknown -> the GPU is not used.
  uint64_t reserved_bytes = 0;              // The driver's reservation, never free.
  std::optional<uint64_t> free_bytes;       // NVML now; unknown -> the GPU is not used.
  std::optional<unsigned> util_pct;         // Unknown counts as busiest.
  bool unreachable = false;                 // The probe did not reach it -> not used.
  bool mig = false;                         // MIG mode on -> not used.
  std::optional<ComputeMode> compute_mode;  // PROHIBITED -> not used; EXCLUSIVE: one job.
  bool compute_process = false;  // A compute process not from the queue (EXCLUSIVE: taken).
  bool healthy = true;  // diagnose::UnhealthyGpus() of the diagnosis; unhealthy -> not used.
  std::string unhealthy_reason;  // Why unhealthy or unreachable.
  // Usable, but a repair waits for a GPU reset (diagnose::ResetPendingGpus(): a
  // pending row remap): placed on last, as `why --need` does.
  bool reset_pending = false;
  std::map<pid_t, uint64_t> process_bytes;  // NVML per-process usage on this GPU.
  std::vector<GpuHolder> holders;           // Processes not from the queue, biggest first.
};

// The GPUs of `snapshot` as the policy sees them (what gpuwardend passes to
// Schedule()). `unhealthy`: GPU index -> why the diagnosis finds it unfit for
// new work (diagnose::UnhealthyGpus()); `queue_pids`: the queue's own processes (not
// holders); `idle_pids`: holders known to be idle (their age is shown);
// `reset_pending`: GPUs usable with a repair waiting for a reset
// (diagnose::ResetPendingGpus()). Both maps come from one
// diagnose::PlacementHealth, the same as `why --need`'s.
std::vector<GpuState> GpuStatesOf(const Snapshot& snapshot,
                                  const std::map<unsigned, std::string>& unhealthy,
                                  const std::set<pid_t>& queue_pids = {},
                                  const std::set<pid_t>& idle_pids = {},
                                  const std::map<unsigned, std::string>& reset_pending = {});

// A job that holds GPUs: kStarting or kRunning.
struct RunningJob {
  JobId id = 0;
  uid_t uid = 0;
  std::string user;
  int priority = 0;  // Its spec priority.
  bool preemptible = false;
  std::vector<unsigned> gpus;  // NVML indices.
  uint64_t vram_per_gpu = 0;   // Its request; 0 = it took whole GPUs.
  std::vector<pid_t> pids;     // The job's whole process tree.
  int64_t start_unix_ms = 0;
  std::optional<int64_t> time_limit_s;
  // Being stopped (preempted or cancelled) but not gone yet: never chosen as
  // a victim again, and assumed gone when planning the head.
  bool stopping = false;
};

struct PolicyConfig {
  uint64_t margin_bytes = placement::kDefaultMarginBytes;  // Kept on top of a request.
  unsigned max_running_per_user = 0;                       // 0 = unlimited.
  unsigned max_gpus_per_user = 0;                          // 0 = unlimited.
  // +1 effective priority per aging_step_s of waiting, at most aging_cap
  // (never starve). aging_step_s <= 0 or aging_cap <= 0: no aging.
  int64_t aging_step_s = 3600;
  int aging_cap = 10;
  double fair_share_half_life_s = 7 * 86400.0;  // For the caller's DecayedUsage.
  unsigned backfill_depth = 1000;  // Jobs tried after the head per pass (Slurm's bf_max_job_test).
  bool preemption = true;
  unsigned explain_depth = 1000;  // Jobs in order that get a formatted message.
};

struct QueueView {
  int64_t now_unix_ms = 0;
  int minute_of_day = 0;            // Local time, for windows.
  std::vector<const Job*> waiting;  // State kQueued or kHeld, any order; others are ignored.
  std::vector<RunningJob> running;  // Includes kStarting jobs.
  std::vector<GpuState> gpus;
  std::vector<TopologyLink> topology;   // nvlinks > 0 = NVLink-joined; level = PCIe distance.
  std::map<uid_t, double> usage_gpu_s;  // Each user's decayed GPU-seconds; missing = 0.
  std::map<JobId, JobState> dependency_states;  // Jobs named in `after`; missing = unknown id.
  PolicyConfig config;
};

struct WaitReason {
  // "held", "dependency", "window", "user_limit", "priority" (not tried this
  // pass: behind the head beyond backfill_depth), "resources", "util",
  // "reserved_for_head" (fits now but would delay the head), "unhealthy",
  // "topology_unknown", "never_fits".
  std::string code;
  // One line for a person, e.g. "needs 40 GiB on one GPU; the most available
  // is 12 GiB on GPU 3 (28 GiB held by PID 4242, alice, idle 2d)". Empty
  // beyond explain_depth.
  std::string message;
  // The head: its shadow time. A job outside its window: the next opening.
  std::optional<int64_t> estimated_start_unix_ms;
};

struct StartDecision {
  JobId id = 0;
  std::vector<unsigned> gpus;  // NVML indices, ascending; empty for a job of 0 GPUs.
};

struct PreemptDecision {
  JobId victim = 0;
  JobId for_job = 0;
};

struct Decisions {
  std::vector<StartDecision> start;      // Start these now, on these GPUs, in this order.
  std::vector<PreemptDecision> preempt;  // Stop (and requeue) these preemptible jobs.
  std::vector<JobId> dependency_failed;  // Fail these: an `after` job failed or is unknown.
  // Every waiting job not started and not failed, with why, sorted by id
  // (FindWaiting() looks one up). A sorted vector, not a map: building and
  // freeing 100,000 map nodes took longer than the rest of the pass.
  std::vector<std::pair<JobId, WaitReason>> waiting;
  std::vector<JobId> order;  // The ids of `waiting` in scheduling order (position = index + 1).
};

// One scheduling pass. Deterministic: the same view gives the same decisions.
// Fastest when `view.waiting` is in id order, as the store lists it.
Decisions Schedule(const QueueView& view);

// The reason job `id` waits, or nullptr when it is not in decisions.waiting.
const WaitReason* FindWaiting(const Decisions& decisions, JobId id);

// Bytes a new job could still be promised on each GPU now: free - reserved -
// margin, negative when over-committed; at most 0 while an undeclared (whole
// GPU) queue job runs on it. A request of R bytes fits iff R <= the value.
// GPUs that cannot take new work now (placement::Block) are absent.
std::map<unsigned, int64_t> AvailableBytes(const QueueView& view);

// Decayed GPU-seconds: a finished interval of `gpu_s` GPU-seconds that ended
// `age_s` ago counts gpu_s * 0.5^(age_s / half_life_s). A negative age counts
// as 0; half_life_s <= 0 means no memory (only age 0 counts).
double DecayedUsage(double gpu_s, double age_s, double half_life_s);

// A sentence for a WaitReason code when its message is empty (beyond
// explain_depth), e.g. "resources" -> "waiting for GPU memory to free up".
std::string_view GenericWaitMessage(std::string_view code);

}  // namespace gw::queue

#endif  // GPUWARDEN_QUEUE_POLICY_H_
