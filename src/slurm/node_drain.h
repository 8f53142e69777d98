// `gpuwarden health --slurm-drain`: what to do with this node in Slurm given
// its health. Pure: the caller reads the node (sinfo) and runs the scontrol
// command this decides on.
//
// gpuwarden marks its own drains: the reason starts with "gpuwarden: ". It
// drains a node on FAULT (and on DEGRADED when the policy says so), updates
// the reason of its own drain when the problem changes, resumes only a node
// it drained itself once the node is healthy, and never touches a node an
// administrator drained (any other reason) or one it could not judge.
#ifndef GPUWARDEN_SLURM_NODE_DRAIN_H_
#define GPUWARDEN_SLURM_NODE_DRAIN_H_

#include <string>
#include <string_view>
#include <vector>

#include "slurm/slurm_json.h"

namespace gw::slurm {

inline constexpr std::string_view kDrainReasonPrefix = "gpuwarden: ";

// What DEGRADED means for the node: keep it in service (ignore) or drain it.
enum class DegradedPolicy { kIgnore, kDrain };

// The node's health, as diagnose::Health says it.
enum class NodeHealth { kHealthy, kUnknown, kDegraded, kFailed };

enum class DrainAction { kNone, kDrain, kResume };

struct DrainDecision {
  DrainAction action = DrainAction::kNone;
  std::string reason;  // kDrain: the reason to set ("gpuwarden: GPU 3 FAULT: ...")
  std::string why;     // one line for the log, what was decided and why
};

// `problem` is the one-line health problem (render::RenderHealthReason);
// ignored unless the node is to be drained.
DrainDecision DecideDrain(const Node& node, NodeHealth health, const std::string& problem,
                          DegradedPolicy policy);

// A drain that gpuwarden set (DRAIN and a reason with kDrainReasonPrefix).
bool IsOwnDrain(const Node& node);

// scontrol's argv for the decision: {"scontrol", "update", "nodename=N",
// "state=drain", "reason=..."} or {..., "state=resume"}; empty for kNone.
std::vector<std::string> ScontrolArgv(const std::string& scontrol, const std::string& node,
                                      const DrainDecision& decision);

}  // namespace gw::slurm

#endif  // GPUWARDEN_SLURM_NODE_DRAIN_H_
