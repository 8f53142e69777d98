// `gpuwarden capacity`: the report as text for people and as the JSON
// document `gpuwarden.capacity` (docs/json.md). Render only: every figure
// and recommendation comes from capacity::AnalyzeCapacity.
#ifndef GPUWARDEN_RENDER_CAPACITY_TEXT_H_
#define GPUWARDEN_RENDER_CAPACITY_TEXT_H_

#include <string>

#include <nlohmann/json.hpp>

#include "capacity/capacity.h"

namespace gw::render {

inline constexpr char kCapacitySchemaName[] = "gpuwarden.capacity";

// Where the power-saving programs are installed (docs/capacity.md), for
// the slurm.conf lines the report proposes.
inline constexpr char kResumeProgramPath[] = "/etc/gpuwarden/slurm/resume";
inline constexpr char kSuspendProgramPath[] = "/etc/gpuwarden/slurm/suspend";

nlohmann::json CapacityJson(const capacity::CapacityReport& report);
std::string RenderCapacityText(const capacity::CapacityReport& report);

}  // namespace gw::render

#endif  // GPUWARDEN_RENDER_CAPACITY_TEXT_H_
