// `gpuwarden reset --plan GPU`: the plan (act/reset_plan.h) as numbered steps
// for people and as JSON (schema "gpuwarden.reset_plan", docs/json.md). Pure.
#ifndef GPUWARDEN_RENDER_RESET_PLAN_H_
#define GPUWARDEN_RENDER_RESET_PLAN_H_

#include <string>

#include "act/reset_plan.h"

namespace gw::render {

inline constexpr char kResetPlanSchemaName[] = "gpuwarden.reset_plan";
inline constexpr int kResetPlanSchemaVersion = 1;

// "Reset plan for GPU 1 (NVIDIA A100-SXM4-80GB, 00000000:41:00.0) — printed,
// never performed:", then "1. End the jobs on GPU 1 — why" with its holders
// and commands indented below, and the notes.
std::string RenderResetPlanText(const act::ResetPlan& plan);
std::string RenderResetPlanJson(const act::ResetPlan& plan);

}  // namespace gw::render

#endif  // GPUWARDEN_RENDER_RESET_PLAN_H_
