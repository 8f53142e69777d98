// The two sources of a capacity report, read into one CapacityInput
// (capacity.h). Pure: the text and documents come from the collectors
// (ReadSacct below; gpuwardend's "history" and "jobs" replies in the CLI).
//
// gpuwardend: its history points (fleet/history_point.h) give the GPUs there
// were, those held (the users' GPUs added up, at most every GPU: two users
// on one GPU count it once each), and those held idle; its queue's jobs give
// the waits (submit to start; jobs that asked to wait, --window and --after,
// are left out).
//
// Slurm: `sacct` gives each job's allocation (AllocTRES gres/gpu) from start
// to end and its wait (Eligible to Start); `sinfo` gives the GPUs there are,
// taken as the fleet's for the whole window. Slurm's accounting does not
// record GPU utilisation: idle-held and memory-bound GPU-hours are unknown.
#ifndef GPUWARDEN_CAPACITY_CAPACITY_SOURCES_H_
#define GPUWARDEN_CAPACITY_CAPACITY_SOURCES_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "capacity/capacity.h"
#include "core/result.h"
#include "fleet/history_point.h"
#include "os/run_command.h"
#include "slurm/slurm_json.h"

namespace gw::capacity {

// The fields asked of sacct, in order (`sacct -o`).
inline constexpr const char* kSacctFields =
    "JobIDRaw,User,Partition,Submit,Eligible,Start,End,State,AllocTRES,ReqTRES,NodeList";

// One line of `sacct -X -n -P -o <kSacctFields>` with SLURM_TIME_FORMAT=%s.
struct SacctJob {
  std::string id;
  std::string user;
  std::string partition;
  std::optional<int64_t> submit_s;
  std::optional<int64_t> eligible_s;  // "Unknown" while held.
  std::optional<int64_t> start_s;
  std::optional<int64_t> end_s;
  std::string state;                  // "COMPLETED", "PENDING", "CANCELLED by 0", ...
  std::optional<int64_t> alloc_gpus;  // gres/gpu in AllocTRES; nullopt: none allocated.
  std::optional<int64_t> req_gpus;
  std::string gpu_type;   // From a typed "gres/gpu:TYPE=N" when accounting keeps one.
  std::string node_list;  // Hostlist; "None assigned" while pending.
};

// Errors: "malformed", naming the line and what is wrong with it.
Result<std::vector<SacctJob>> ParseSacct(std::string_view text);

// Runs `sacct -a -X -n -P -S now-<seconds> -E now -o <fields>` through
// `runner` (its errors as slurm::OutputOf's, then ParseSacct's).
Result<std::vector<SacctJob>> ReadSacct(os::CommandRunner& runner, int64_t since_s, int timeout_ms);

// The most nodes one job's NodeList may name: more than any Slurm cluster
// has. A list that expands past it ("r[1-1000]n[1-1000]") is refused rather
// than spelt out name by name (a few hundred bytes of sacct asked for
// gigabytes; found by fuzz_capacity_sacct).
inline constexpr size_t kMaxJobNodes = 65536;

// The input from Slurm: `jobs` over [from_s, to_s), the fleet from `sinfo`.
// Jobs without GPUs are left out. Errors: "malformed" for a NodeList that is
// not a hostlist or names more than kMaxJobNodes nodes.
Result<CapacityInput> InputFromSlurm(const std::vector<SacctJob>& jobs,
                                     const slurm::SinfoDocument& sinfo, int64_t from_s,
                                     int64_t to_s, int64_t utc_offset_s);

// The jobs of gpuwardend's "jobs" reply (docs/protocol.md JOB objects), with
// each GPU's memory to judge their peaks by (`gpu_memory_bytes`, from the
// history; 0: unknown). Errors: "malformed", naming the field.
Result<std::vector<JobRecord>> JobsFromQueueJson(const nlohmann::json& jobs,
                                                 double gpu_memory_bytes);

// The input from gpuwardend: its history points (oldest first) and its jobs.
// Each point stands for its whole step, as usage counts it (fleet::UsageOf):
// the window [from_s, to_s) the daemon answered for widens to hold the
// first point's start and the last point's end (the newest point is taken
// at the reply's `to_unix_s` and covers the second after it).
CapacityInput InputFromHistory(const std::vector<fleet::HistoryPoint>& points,
                               std::vector<JobRecord> jobs, int64_t from_s, int64_t to_s,
                               int64_t utc_offset_s);

// The largest GPU memory `points` saw (bytes); 0 when none is known.
double GpuMemoryOf(const std::vector<fleet::HistoryPoint>& points);

}  // namespace gw::capacity

#endif  // GPUWARDEN_CAPACITY_CAPACITY_SOURCES_H_
