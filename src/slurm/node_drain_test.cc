#include "slurm/node_drain.h"

#include <gtest/gtest.h>

namespace gw::slurm {
namespace {

Node NodeIn(const std::string& state, std::vector<std::string> flags,
            std::optional<std::string> reason) {
  Node n;
  n.name = "n2";
  n.state = state;
  n.state_flags = std::move(flags);
  n.reason = std::move(reason);
  return n;
}

const std::string kProblem = "GPU 1 FAULT: fell off the bus (Xid 79) [XID_79]";

TEST(NodeDrain, AFaultDrainsANodeInServiceWithAReasonNamingIt) {
  const DrainDecision d = DecideDrain(NodeIn("MIXED", {}, std::nullopt), NodeHealth::kFailed,
                                      kProblem, DegradedPolicy::kIgnore);
  EXPECT_EQ(d.action, DrainAction::kDrain);
  EXPECT_EQ(d.reason, "gpuwarden: " + kProblem);
  EXPECT_EQ(ScontrolArgv("scontrol", "n2", d),
            (std::vector<std::string>{"scontrol", "update", "nodename=n2", "state=drain",
                                      "reason=gpuwarden: " + kProblem}));
}

TEST(NodeDrain, DegradedFollowsThePolicy) {
  const Node n = NodeIn("IDLE", {}, std::nullopt);
  EXPECT_EQ(DecideDrain(n, NodeHealth::kDegraded, "x", DegradedPolicy::kIgnore).action,
            DrainAction::kNone);
  EXPECT_EQ(DecideDrain(n, NodeHealth::kDegraded, "x", DegradedPolicy::kDrain).action,
            DrainAction::kDrain);
}

TEST(NodeDrain, OnlyItsOwnDrainIsResumedAndOnlyWhenHealthy) {
  const Node own = NodeIn("IDLE", {"DRAIN"}, "gpuwarden: " + kProblem);
  EXPECT_TRUE(IsOwnDrain(own));
  const DrainDecision healthy = DecideDrain(own, NodeHealth::kHealthy, "", DegradedPolicy::kIgnore);
  EXPECT_EQ(healthy.action, DrainAction::kResume);
  EXPECT_EQ(
      ScontrolArgv("/usr/bin/scontrol", "n2", healthy),
      (std::vector<std::string>{"/usr/bin/scontrol", "update", "nodename=n2", "state=resume"}));
  // Degraded under "ignore" is in service: resumed too; under "drain" kept.
  EXPECT_EQ(DecideDrain(own, NodeHealth::kDegraded, "d", DegradedPolicy::kIgnore).action,
            DrainAction::kResume);
  EXPECT_EQ(DecideDrain(own, NodeHealth::kDegraded, "d", DegradedPolicy::kDrain).action,
            DrainAction::kDrain);
  // Could not look: the drain stays.
  EXPECT_EQ(DecideDrain(own, NodeHealth::kUnknown, "", DegradedPolicy::kIgnore).action,
            DrainAction::kNone);
  // The same problem again: nothing to change.
  EXPECT_EQ(DecideDrain(own, NodeHealth::kFailed, kProblem, DegradedPolicy::kIgnore).action,
            DrainAction::kNone);
  // Another problem: the reason is updated.
  const DrainDecision other =
      DecideDrain(own, NodeHealth::kFailed, "GPU 0 FAULT: ECC", DegradedPolicy::kIgnore);
  EXPECT_EQ(other.action, DrainAction::kDrain);
  EXPECT_EQ(other.reason, "gpuwarden: GPU 0 FAULT: ECC");
}

TEST(NodeDrain, AnAdministratorsDrainIsNeverTouched) {
  for (const std::optional<std::string>& reason :
       {std::optional<std::string>("memtest by admin"), std::optional<std::string>(),
        std::optional<std::string>("gpuwarden said so, by hand")}) {
    const Node admin = NodeIn("IDLE", {"DRAIN"}, reason);
    EXPECT_FALSE(IsOwnDrain(admin));
    for (NodeHealth h :
         {NodeHealth::kHealthy, NodeHealth::kDegraded, NodeHealth::kFailed, NodeHealth::kUnknown}) {
      EXPECT_EQ(DecideDrain(admin, h, kProblem, DegradedPolicy::kDrain).action, DrainAction::kNone);
    }
  }
}

TEST(NodeDrain, UnknownHealthNeverDrains) {
  EXPECT_EQ(DecideDrain(NodeIn("IDLE", {}, std::nullopt), NodeHealth::kUnknown, "x",
                        DegradedPolicy::kDrain)
                .action,
            DrainAction::kNone);
}

}  // namespace
}  // namespace gw::slurm
