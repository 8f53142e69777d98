// `gpuwarden cluster` as text and as JSON (schema "gpuwarden.cluster",
// schema_version 1; docs/slurm.md): renderers only, the judgement is
// slurm::BuildClusterView's.
#ifndef GPUWARDEN_RENDER_CLUSTER_TEXT_H_
#define GPUWARDEN_RENDER_CLUSTER_TEXT_H_

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "slurm/cluster_view.h"

namespace gw::render {

inline constexpr char kClusterSchemaName[] = "gpuwarden.cluster";
inline constexpr int kClusterSchemaVersion = 1;

// A header with the Slurm version and the cluster's GPUs by type (in all,
// allocated, free, unavailable with the nodes that make them so); one line
// per node and GPU type (NODE STATE TYPE TOTAL ALLOC FREE HELD BY), the
// holders after it, a drained or down node's reason; then the waiting jobs
// (JOB USER NAME WANTS REASON, the expected start when Slurm has one).
// Unknown counts print "?", never 0. Every text from Slurm is sanitised.
// `now_unix_s` dates the ages ("for 3m").
std::string RenderClusterText(const slurm::ClusterView& view, int64_t now_unix_s);

// {schema, schema_version, slurm {release, data_parser, layout}, gpus [...],
// nodes [{name, state, availability, reason, partitions, gpus|null,
// holders}], pending [...], warnings}. Never throws.
nlohmann::json ClusterJson(const slurm::ClusterView& view);

}  // namespace gw::render

#endif  // GPUWARDEN_RENDER_CLUSTER_TEXT_H_
