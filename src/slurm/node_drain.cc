#include "slurm/node_drain.h"

namespace gw::slurm {

bool IsOwnDrain(const Node& node) {
  return node.HasFlag("DRAIN") && node.reason && node.reason->rfind(kDrainReasonPrefix, 0) == 0;
}

DrainDecision DecideDrain(const Node& node, NodeHealth health, const std::string& problem,
                          DegradedPolicy policy) {
  DrainDecision d;
  const bool drained = node.HasFlag("DRAIN");
  const bool own = IsOwnDrain(node);
  const bool wants_drain = health == NodeHealth::kFailed ||
                           (health == NodeHealth::kDegraded && policy == DegradedPolicy::kDrain);
  if (drained && !own) {
    d.why = "drained by an administrator (" + node.reason.value_or("no reason given") +
            "): left as it is";
    return d;
  }
  if (health == NodeHealth::kUnknown) {
    d.why = own ? "could not judge the GPUs: gpuwarden's drain is kept"
                : "could not judge the GPUs: the node is left as it is";
    return d;
  }
  if (wants_drain) {
    const std::string reason = std::string(kDrainReasonPrefix) + problem;
    if (own && node.reason == reason) {
      d.why = "already drained by gpuwarden for the same problem";
      return d;
    }
    d.action = DrainAction::kDrain;
    d.reason = reason;
    d.why = own ? "drained again: the problem changed" : "drained";
    return d;
  }
  if (own) {
    d.action = DrainAction::kResume;
    d.why = health == NodeHealth::kHealthy
                ? "resumed: healthy again (gpuwarden had drained it)"
                : "resumed: only degraded, which the policy keeps in service (gpuwarden had "
                  "drained it)";
    return d;
  }
  d.why = health == NodeHealth::kHealthy ? "healthy: nothing to do"
                                         : "degraded, kept in service by the policy";
  return d;
}

std::vector<std::string> ScontrolArgv(const std::string& scontrol, const std::string& node,
                                      const DrainDecision& decision) {
  switch (decision.action) {
    case DrainAction::kDrain:
      return {scontrol, "update", "nodename=" + node, "state=drain", "reason=" + decision.reason};
    case DrainAction::kResume:
      return {scontrol, "update", "nodename=" + node, "state=resume"};
    case DrainAction::kNone:
      break;
  }
  return {};
}

}  // namespace gw::slurm
