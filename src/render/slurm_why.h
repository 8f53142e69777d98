// `gpuwarden why --slurm` as text and as JSON (schema "gpuwarden.slurm_why",
// schema_version 1; docs/slurm.md). Renderers only: the explanation is
// slurm::ExplainPendingJob's.
#ifndef GPUWARDEN_RENDER_SLURM_WHY_H_
#define GPUWARDEN_RENDER_SLURM_WHY_H_

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "slurm/pending_explain.h"

namespace gw::render {

inline constexpr char kSlurmWhySchemaName[] = "gpuwarden.slurm_why";
inline constexpr int kSlurmWhySchemaVersion = 1;

// Per job: `job 7 "needs-two" (root) waits: Resources — 2 gpu:a100 per node`,
// then, indented, the catalog's meaning, the evidence, what must end, Slurm's
// expected start (or why it has none) and the next step. A job that does not
// wait says its state. A code the catalog does not know is shown verbatim,
// said to be unknown to this version. Text from Slurm is sanitised.
std::string RenderSlurmWhyText(const std::vector<slurm::PendingExplanation>& jobs,
                               int64_t now_unix_s);

// {schema, schema_version, jobs [{job_id, user, job_name, state, reason {code,
// known, kind, outlook, meaning, next}, wants, evidence, must_end,
// expected_start_unix_s, no_estimate_why}]}.
nlohmann::json SlurmWhyJson(const std::vector<slurm::PendingExplanation>& jobs);

}  // namespace gw::render

#endif  // GPUWARDEN_RENDER_SLURM_WHY_H_
