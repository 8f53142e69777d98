// The queue's plain values: what a user submitted (JobSpec), who submitted it
// (Owner), and the job's life (Job). Shared by the store (SQLite), the
// placement policy, the runner and the daemon; no I/O here.
#ifndef GPUWARDEN_QUEUE_JOB_H_
#define GPUWARDEN_QUEUE_JOB_H_

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"

namespace gw::queue {

using JobId = int64_t;

// A daily window in local time, minutes since midnight; end < start wraps
// past midnight ("22:00-07:00" = {1320, 420}). start == end is the whole day.
struct TimeWindow {
  int start_min = 0;
  int end_min = 0;
  bool Contains(int minute_of_day) const;
};
// "22:00-07:00" -> {1320, 420}. Error "bad_input", the message naming the text.
Result<TimeWindow> ParseTimeWindow(std::string_view text);
std::string FormatTimeWindow(const TimeWindow& w);  // "22:00-07:00"

// What the user asked for; fixed once submitted.
struct JobSpec {
  std::string name;               // --name; "" = argv[0]'s base name.
  std::vector<std::string> argv;  // Exec'd as is, never through a shell.
  std::string cwd;                // The submitter's working directory.
  std::vector<std::string> env;   // "KEY=VALUE", the submitter's environment.
  mode_t umask = 022;
  unsigned gpus = 1;        // --gpus N; 0 = no GPU (CUDA_VISIBLE_DEVICES="").
  uint64_t vram_bytes = 0;  // --vram, per GPU; 0 = not declared (the whole GPU's free memory).
  std::optional<unsigned> max_util_pct;  // --max-util: only GPUs busy at most this much.
  int priority = 0;                      // --priority; higher first. Only root may go above 0.
  std::optional<TimeWindow> window;      // --window: start only inside it.
  std::vector<JobId> after;              // --after: start once these succeeded.
  bool nvlink = false;                   // --nvlink: multi-GPU jobs on NVLink-joined GPUs.
  std::optional<int64_t> time_limit_s;   // --time-limit; enforced, and used for backfill.
  bool preemptible = false;              // --preemptible: may be stopped and requeued.
};

// Who submitted it, from SO_PEERCRED (never from what the client says).
struct Owner {
  uid_t uid = 0;
  gid_t gid = 0;
  std::string user;  // Resolved name; "uid N" when none.
};

enum class JobState {
  kQueued,     // Waiting to be placed.
  kHeld,       // Waiting, but not placed until released.
  kStarting,   // Placed; its supervisor is being started (durable before the fork).
  kRunning,    // Its supervisor runs it.
  kSucceeded,  // Exit status 0.
  kFailed,     // Non-zero exit, killed by a signal, time limit, VRAM guard, dependency failed.
  kCancelled,  // Cancelled by its owner or root.
  kLost,       // Started, but its end could not be observed (supervisor vanished).
};
std::string_view JobStateName(JobState state);  // "queued", "held", "starting", ...
std::optional<JobState> ParseJobState(std::string_view name);
bool IsTerminal(JobState state);  // succeeded, failed, cancelled, lost.

struct Job {
  JobId id = 0;
  Owner owner;
  JobSpec spec;
  JobState state = JobState::kQueued;
  int64_t submit_unix_ms = 0;
  std::optional<int64_t> start_unix_ms;
  std::optional<int64_t> end_unix_ms;
  // Placement, once started: the GPUs by NVML index and UUID, same order.
  std::vector<unsigned> gpu_indices;
  std::vector<std::string> gpu_uuids;
  // The supervisor (see runner.h) and the job's own process, with their
  // start times (/proc/PID/stat field 22) so a restarted daemon adopts the
  // right processes and never a reused PID.
  std::optional<pid_t> supervisor_pid;
  std::optional<uint64_t> supervisor_start_ticks;
  std::optional<pid_t> pid;
  std::optional<uint64_t> pid_start_ticks;
  std::optional<int> exit_code;    // When it exited.
  std::optional<int> exit_signal;  // When a signal ended it.
  // Why it ended or why it went back to the queue: "exit", "signal",
  // "time_limit", "vram_limit", "cancelled", "preempted", "dependency",
  // "lost", "start_failed".
  std::string end_reason;
  std::string end_detail;                   // One line for a person.
  std::optional<uint64_t> peak_vram_bytes;  // Whole process tree, all its GPUs.
  unsigned requeues = 0;                    // Times preempted and put back.
  std::string stdout_path;
  std::string stderr_path;
};

}  // namespace gw::queue

#endif  // GPUWARDEN_QUEUE_JOB_H_
