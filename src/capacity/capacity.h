// Capacity planning (docs/capacity.md): from what a fleet held and what its
// jobs waited for over a window, how saturated it was, how long jobs waited,
// how much was held idle, which hours are the peak, and what to do about it
// (add GPUs, reclaim idle holders, move work off-peak, share GPUs between
// small jobs, quantize memory-bound serving), with the figures behind each
// recommendation; on a Slurm cluster also power-saving settings.
//
// Pure: the two sources (gpuwardend's history and queue, Slurm's accounting)
// are turned into one CapacityInput by capacity_sources.h; collecting them
// (sockets, sacct) is the CLI's, rendering render/capacity_text.h's.
// Unknown is never zero: a figure a source cannot give is nullopt.
#ifndef GPUWARDEN_CAPACITY_CAPACITY_H_
#define GPUWARDEN_CAPACITY_CAPACITY_H_

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace gw::capacity {

// A stretch [start_s, end_s) over which the fleet's figures are constant, or
// are the means of a history point over its step. Time not covered by a span
// is time without data (the daemon was not running).
struct Span {
  int64_t start_s = 0;
  int64_t end_s = 0;
  double capacity_gpus = 0;  // GPUs the fleet had.
  double held_gpus = 0;      // Of them, held: allocated (Slurm) or with processes (gpuwardend).
  // Of the held ones, those whose holders did no work. nullopt: the source
  // cannot tell (Slurm's accounting does not record GPU utilisation).
  std::optional<double> idle_held_gpus;
  // GPUs whose memory was at least kMemoryBoundFraction full while their
  // compute was busy but under kMemoryBoundUtilPct: memory-bound holders,
  // typically serving. nullopt: unknown.
  std::optional<double> memory_bound_gpus;
};

// One job as either source records it.
struct JobRecord {
  std::string id;
  std::string user;
  // When it could first have started: Slurm's Eligible time (after its
  // dependencies and --begin), the queue's submit time.
  int64_t eligible_s = 0;
  std::optional<int64_t> start_s;  // nullopt: has not started.
  std::optional<int64_t> end_s;    // nullopt: has not ended.
  double gpus = 0;                 // GPUs it asked for (and held once started).
  std::string gpu_type;            // The GPU model it asked for or ran on; "" unknown.
  std::vector<std::string> nodes;  // Where it ran (Slurm); empty: one server, or unknown.
  // Its peak GPU memory over one GPU's memory, per GPU (the queue); nullopt: unknown.
  std::optional<double> peak_vram_fraction;
  // It waited by its own choice (--window, --after, held): its wait is
  // left out of the percentiles.
  bool chose_to_wait = false;
};

struct CapacityInput {
  std::string source;  // "history" (gpuwardend) or "slurm" (sacct).
  int64_t from_s = 0;
  int64_t to_s = 0;
  std::vector<Span> spans;  // By time, not overlapping, within [from_s, to_s).
  std::vector<JobRecord> jobs;
  bool jobs_known = true;  // False: no job records (gpuwardend runs without its queue).
  // GPU-seconds held idle per user; empty with idle_known false: unknown.
  std::map<std::string, double> idle_gpu_s_by_user;
  std::map<std::string, double> gpu_s_by_user;
  bool idle_known = false;
  std::map<std::string, int> gpu_types;  // The fleet's GPUs by model.
  std::map<std::string, int> node_gpus;  // Slurm: each node's GPUs (power saving).
  // Seconds east of UTC of the local time zone: hours of day are local.
  int64_t utc_offset_s = 0;
};

// The marks the judgement uses (docs/capacity.md states each).
struct CapacityOptions {
  double peak_held_fraction = 0.8;         // An hour of day is a peak hour at this share held.
  double off_peak_held_fraction = 0.5;     // ... and off-peak at or below this.
  double add_gpus_saturated_share = 0.05;  // Saturated with jobs waiting this share of the time,
  double add_gpus_p90_wait_s = 600;        // and the 90th percentile wait at least this: buy.
  double reclaim_idle_share = 0.05;        // Idle-held GPU-hours over held GPU-hours, to reclaim,
  double reclaim_idle_min_gpu_h = 1;       // and at least this many idle GPU-hours.
  double small_job_vram_fraction = 0.5;    // A one-GPU job that peaked at most at this is small;
  double small_job_share = 0.3;            // this share of the jobs with a known peak,
  size_t small_job_min_count = 3;          // and at least this many: share GPUs (MIG/MPS).
  double memory_bound_share = 0.1;         // Memory-bound GPU-hours over held ones: quantize.
  // Power saving (Slurm): the always-on nodes carry the GPUs held at least
  // this share of the time; SuspendTime is the median idle gap between two
  // jobs on a node, within [min, max].
  double base_load_time_share = 0.9;
  int64_t suspend_time_min_s = 600;
  int64_t suspend_time_max_s = 3600;
  size_t top_holders = 3;  // Idle holders named.
};

inline constexpr double kMemoryBoundFraction = 0.9;
inline constexpr double kMemoryBoundUtilPct = 50;

struct WaitStats {
  size_t started = 0;  // Jobs that started in the window (and did not choose to wait).
  std::optional<double> p50_s, p90_s, p99_s, max_s, mean_s;  // Nearest rank; none: no job.
  size_t still_waiting = 0;  // Jobs eligible but not started at the window's end.
  std::optional<double> longest_waiting_s;
  size_t chose_to_wait = 0;  // Left out: they asked to wait.
  size_t gave_up = 0;        // Left out: cancelled before they started.
};

struct HourOfDay {
  double observed_s = 0;                // Seconds of this local hour with data.
  std::optional<double> held_fraction;  // Mean GPUs held over GPUs; none: no data.
  double mean_waiting_jobs = 0;
  double saturated_s = 0;
};

struct IdleHolder {
  std::string user;
  double idle_gpu_hours = 0;
  double gpu_hours = 0;
};

// One recommendation: a stable code, one line for people, and the figures
// behind it by name (units in the names: _hours, _s, _share, _gpus).
struct Recommendation {
  std::string code;  // add_gpus, reclaim_idle, off_peak, share_small_jobs, quantize_inference
  std::string text;
  std::map<std::string, double> figures;
  std::map<std::string, std::string> details;  // gpu_type, window, users, ...
};

// Slurm's power saving, proposed from the idle and queue patterns.
struct PowerSaving {
  bool applies = false;  // Only for a Slurm cluster with nodes.
  std::optional<int64_t> suspend_time_s;
  size_t idle_gaps = 0;  // Idle gaps between jobs seen on the nodes.
  std::optional<double> median_idle_gap_s;
  double base_load_gpus = 0;               // GPUs held at least base_load_time_share of the time.
  std::vector<std::string> exclude_nodes;  // SuspendExcNodes: the busiest nodes carrying it.
  std::vector<std::string> idle_nodes;     // Nodes that ran no job in the window.
};

struct CapacityReport {
  std::string source;
  int64_t from_s = 0;
  int64_t to_s = 0;
  double observed_hours = 0;  // Hours with data.
  double capacity_gpus = 0;   // The most GPUs seen.
  double capacity_gpu_hours = 0;
  double held_gpu_hours = 0;
  std::optional<double> idle_held_gpu_hours;
  std::optional<double> memory_bound_gpu_hours;
  double unheld_gpu_hours = 0;         // Capacity nobody held.
  double saturated_hours = 0;          // Every GPU held.
  double saturated_waiting_hours = 0;  // ... and a job waited.
  std::optional<WaitStats> waits;      // nullopt: the source has no job records.
  std::array<HourOfDay, 24> hours{};
  std::vector<int> peak_hours;  // Local hours of day, ascending.
  // The longest run of off-peak hours, [start, end) in local hours (end may
  // wrap past midnight); none when no hour is off-peak or every hour is.
  std::optional<std::pair<int, int>> off_peak;
  std::vector<IdleHolder> idle_holders;  // Most idle first.
  std::vector<Recommendation> recommendations;
  PowerSaving power;
};

CapacityReport AnalyzeCapacity(const CapacityInput& input, const CapacityOptions& options = {});

// The nearest-rank percentile (p in (0, 100]) of `values`: the smallest
// value with at least p % of the values at or below it. Empty: nullopt.
std::optional<double> NearestRankPercentile(std::vector<double> values, double p);

// "22:00-07:00" for hours [22, 7).
std::string FormatHourWindow(const std::pair<int, int>& hours);

}  // namespace gw::capacity

#endif  // GPUWARDEN_CAPACITY_CAPACITY_H_
