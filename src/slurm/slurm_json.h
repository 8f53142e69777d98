// Slurm's own JSON (`sinfo --json`, `squeue --json`) read into plain structs.
//
// Three layouts are understood, chosen by the document's meta (plugin name or
// data_parser) and, where the meta says nothing, by the document's shape:
//   v0.0.38  Slurm 22.05 (openapi/v0.0.38): {"nodes": [...]} / {"jobs": [...]},
//            scalars plain, node state "idle" plus "state_flags": ["DRAIN"].
//   v0.0.39  Slurm 23.02 (data_parser/v0.0.39): sinfo is {"sinfo": [...]}, one
//            entry per group of nodes ("nodes": {"nodes": [names]}, "node":
//            {"state": ["IDLE", "DRAIN"]}, "gres": {"total", "used"}, "reason":
//            {"description"}), job "priority" is {"set", "infinite", "number"}.
//   v0.0.40  Slurm 23.11 (data_parser/v0.0.40): as v0.0.39, plus "job_state"
//            an array (["PENDING"]), times {"set", "infinite", "number"}, and
//            meta.slurm.version's numbers as strings.
// Contract: a field that is absent or null is unknown (nullopt, or an empty
// list); a field of the wrong type is an error naming its path
// ("jobs[3].priority: expected an integer"); text that is not JSON is an error.
// Nothing here throws.
#ifndef GPUWARDEN_SLURM_SLURM_JSON_H_
#define GPUWARDEN_SLURM_SLURM_JSON_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"

namespace gw::slurm {

// The layouts above.
enum class JsonLayout { kV0038, kV0039, kV0040 };
std::string_view LayoutName(JsonLayout layout);  // "v0.0.38", ...

// What the document says about the Slurm that wrote it.
struct SlurmMeta {
  std::optional<int> major;                // 22
  std::optional<int> minor;                // 5
  std::optional<int> micro;                // 8
  std::optional<std::string> release;      // "22.05.8"
  std::optional<std::string> data_parser;  // "v0.0.38": plugin or data_parser, version part
  JsonLayout layout = JsonLayout::kV0038;  // the layout the document was read as
  // The document's own "errors" (their descriptions, or error names), in order.
  std::vector<std::string> errors;
};

// One generic resource as Slurm prints it: "gpu:a100:2(IDX:0-1)".
struct Gres {
  std::string name;                 // "gpu"
  std::optional<std::string> type;  // "a100"; nullopt when untyped
  int64_t count = 0;
  // The index list of IDX:... ("0-1", "0,2"); nullopt when absent or N/A.
  std::optional<std::string> indexes;
};

struct Node {
  std::string name;
  // The base state, upper case as the later layouts print it: "IDLE",
  // "MIXED", "ALLOCATED", "DOWN", ...; nullopt when not given.
  std::optional<std::string> state;
  // The flags beside it, upper case: "DRAIN", "NOT_RESPONDING", "CLOUD", ...
  std::vector<std::string> state_flags;
  std::optional<std::string> reason;  // nullopt when empty
  std::optional<int64_t> cpus;
  std::optional<int64_t> alloc_cpus;
  std::optional<std::vector<Gres>> gres;       // configured ("gres")
  std::optional<std::vector<Gres>> gres_used;  // allocated ("gres_used")
  std::vector<std::string> partitions;

  bool HasFlag(std::string_view flag) const;
};

// A generic resource a job asks for: an entry of tres_per_node/tres_per_job,
// "gres:gpu:a100:2" (22.05) or "gres/gpu:a100:2" (later).
struct GresRequest {
  std::string name;                 // "gpu"
  std::optional<std::string> type;  // "a100"; nullopt: any type
  int64_t count = 0;
};

struct Job {
  int64_t id = 0;
  std::optional<std::string> user;
  std::optional<std::string> name;
  std::optional<std::string> state;      // base state, upper case: "PENDING", "RUNNING", ...
  std::vector<std::string> state_flags;  // further flags of v0.0.40's job_state array
  // Verbatim ("Resources", "Priority", "None": not evaluated yet); nullopt when
  // absent or empty.
  std::optional<std::string> reason;
  std::optional<std::string> state_description;  // nullopt when empty
  std::optional<std::string> partition;
  std::optional<std::string> nodes;        // hostlist expression "n[1-2]"; nullopt when empty
  std::vector<GresRequest> gres_per_node;  // from tres_per_node (--gres, --gpus-per-node)
  std::vector<GresRequest> gres_per_job;   // from tres_per_job (--gpus)
  // From gres_detail: per allocated node, in the order of `nodes`, what it holds
  // there ("gpu:a100:2(IDX:0-1)").
  std::vector<std::vector<Gres>> gres_detail;
  std::optional<int64_t> submit_time;  // Unix seconds
  // Unix seconds: when it started, or (pending) when Slurm expects it to;
  // nullopt when not set (0).
  std::optional<int64_t> start_time;
  std::optional<int64_t> priority;
  std::optional<int64_t> node_count;          // nodes it runs on, or (pending) asks for
  std::optional<int64_t> time_limit_min;      // minutes; nullopt: none given (or infinite)
  std::optional<std::string> required_nodes;  // --nodelist, a hostlist; nullopt when none
  std::optional<std::string> qos;
  std::optional<std::string> account;
  std::optional<int64_t> restarts;       // restart_cnt: requeues so far
  std::optional<int64_t> eligible_time;  // Unix seconds: when it may start (BeginTime)
};

struct SinfoDocument {
  SlurmMeta meta;
  std::vector<Node> nodes;
};

struct SqueueDocument {
  SlurmMeta meta;
  std::vector<Job> jobs;
};

Result<SinfoDocument> ParseSinfoJson(std::string_view text);
Result<SqueueDocument> ParseSqueueJson(std::string_view text);

// A gres string as sinfo prints it: entries separated by commas outside
// parentheses, "gpu:a100:2(IDX:0-1),gpu:l40s:1(S:0)". "", "N/A" and "(null)"
// are the empty list. A count may end in K/M/G/T (powers of 1024).
Result<std::vector<Gres>> ParseGresList(std::string_view text);

// A tres_per_node / tres_per_job string: "gres:gpu:a100:2,gres:shard:1" or
// "gres/gpu:2"; entries that are not gres ("cpu=2", "license/x=1") are left out.
Result<std::vector<GresRequest>> ParseGresRequests(std::string_view text);

}  // namespace gw::slurm

#endif  // GPUWARDEN_SLURM_SLURM_JSON_H_
