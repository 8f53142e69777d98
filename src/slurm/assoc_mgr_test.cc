// ParseAssocMgr on the real 22.05 capture (testdata/README.md) and on bad
// input; LocateLimit for each family of limit reason.
#include "slurm/assoc_mgr.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

#include "slurm/slurm_test_util.h"

namespace gw::slurm {
namespace {

TEST(AssocMgr, ReadsAssociationsAndQosOfTheCapture) {
  auto state = ParseAssocMgr(ReadTestdata("22.05-assoc-mgr-limits.txt"));
  ASSERT_TRUE(state.ok()) << state.error().message;
  ASSERT_EQ(state->associations.size(), 4u);
  ASSERT_EQ(state->qos.size(), 3u);

  // Account lab: GrpTRES gres/gpu=1(1), a parent, no user.
  const AssocRecord* lab = nullptr;
  for (const AssocRecord& a : state->associations) {
    if (a.account == "lab" && !a.user) lab = &a;
  }
  ASSERT_NE(lab, nullptr);
  EXPECT_EQ(lab->parent_account, "root");
  EXPECT_EQ(lab->parent_id, 1);
  EXPECT_EQ(lab->id, 3);
  const LimitValue* gpus = lab->limits.Tres("GrpTRES", "gres/gpu");
  ASSERT_NE(gpus, nullptr);
  EXPECT_EQ(gpus->limit, 1.0);
  EXPECT_EQ(gpus->used, 1.0);
  const LimitValue* cpus = lab->limits.Tres("GrpTRES", "cpu");
  ASSERT_NE(cpus, nullptr);
  EXPECT_FALSE(cpus->limit) << "N is no limit";
  EXPECT_EQ(cpus->used, 1.0);
  const LimitValue* jobs = lab->limits.Scalar("MaxJobs");
  ASSERT_NE(jobs, nullptr);
  EXPECT_EQ(jobs->limit, 4.0);
  EXPECT_EQ(lab->limits.Scalar("MaxTRESPJ"), nullptr) << "an empty value is not shown";
  const LimitValue* wall = lab->limits.Scalar("GrpWall");
  ASSERT_NE(wall, nullptr);
  EXPECT_GT(wall->used.value_or(0), 0.0);

  // The chain of a job of lab/root: its user record, lab, then root.
  const auto chain = state->Chain("lab", "root");
  ASSERT_EQ(chain.size(), 3u);
  EXPECT_EQ(chain[0]->account, "lab");
  EXPECT_EQ(chain[0]->user, "root");
  EXPECT_EQ(chain[0]->uid, 0);
  EXPECT_EQ(chain[1]->account, "lab");
  EXPECT_FALSE(chain[1]->user);
  EXPECT_EQ(chain[2]->account, "root");
  EXPECT_TRUE(state->Chain("nosuch", "root").empty());

  // QOS gpu2: the per-user block of uid 0 holds MaxTRESPU gres/gpu=2(2).
  const QosRecord* gpu2 = state->FindQos("gpu2");
  ASSERT_NE(gpu2, nullptr);
  ASSERT_EQ(gpu2->users.count(0), 1u);
  const LimitValue* per_user = gpu2->users.at(0).Tres("MaxTRESPU", "gres/gpu");
  ASSERT_NE(per_user, nullptr);
  EXPECT_EQ(per_user->limit, 2.0);
  EXPECT_EQ(per_user->used, 2.0);
  EXPECT_NE(gpu2->users.at(0).Scalar("MaxJobsPU"), nullptr);
  EXPECT_EQ(gpu2->accounts.count("root"), 1u);
  EXPECT_NE(gpu2->accounts.at("root").Scalar("MaxJobsPA"), nullptr);
  EXPECT_EQ(gpu2->limits.Scalar("MaxJobsPU"), nullptr) << "per-user keys stay in their block";
  EXPECT_NE(gpu2->limits.Tres("GrpTRES", "gres/gpu"), nullptr);
  const QosRecord* normal = state->FindQos("normal");
  ASSERT_NE(normal, nullptr);
  EXPECT_EQ(normal->accounts.count("lab"), 1u) << "a QOS lists every account that used it";
  EXPECT_EQ(state->FindQos("nosuch"), nullptr);
}

TEST(AssocMgr, BlocksOfSeveralUsersAndAnEmptyBlock) {
  auto state = ParseAssocMgr(
      "QOS=q(7) GrpJobs=5(2) Account Limits= a={} b={MaxJobsPA=3(1)} User Limits= "
      "1000={MaxJobsPU=1(1) MaxTRESPU=gres/gpu=4(3)} 1001={MaxTRESPU=gres/gpu=4(0)}\n");
  ASSERT_TRUE(state.ok()) << state.error().message;
  ASSERT_EQ(state->qos.size(), 1u);
  const QosRecord& q = state->qos[0];
  EXPECT_EQ(q.name, "q");
  EXPECT_EQ(q.limits.Scalar("GrpJobs")->limit, 5.0);
  EXPECT_EQ(q.accounts.count("a"), 1u);
  EXPECT_EQ(q.accounts.at("b").Scalar("MaxJobsPA")->used, 1.0);
  EXPECT_EQ(q.users.at(1000).Tres("MaxTRESPU", "gres/gpu")->used, 3.0);
  EXPECT_EQ(q.users.at(1001).Tres("MaxTRESPU", "gres/gpu")->used, 0.0);
  EXPECT_EQ(q.limits.Tres("MaxTRESPU", "gres/gpu"), nullptr);
}

// Found by fuzz_slurm_text (fuzz/corpus/slurm_text/regression-assoc-id-3e41): an ID was
// read as a double and cast to int64_t, undefined past its range. An ID that is
// not a whole int64_t is no ID.
TEST(AssocMgr, AnIdThatIsNotAWholeNumberIsNone) {
  auto state = ParseAssocMgr(
      "Association Records\n"
      "ClusterName=c Account=a UserName= Partition= ID=3.4e41 ParentAccount=root(1)\n"
      "ClusterName=c Account=b UserName= Partition= ID=99999999999999999999 ParentAccount=\n"
      "ClusterName=c Account=d UserName= Partition= ID=12 ParentAccount=\n");
  ASSERT_TRUE(state.ok()) << state.error().message;
  ASSERT_EQ(state->associations.size(), 3u);
  EXPECT_FALSE(state->associations[0].id.has_value());
  EXPECT_FALSE(state->associations[1].id.has_value());
  EXPECT_EQ(state->associations[2].id, 12);
}

TEST(AssocMgr, MalformedInputIsNamedWithItsLine) {
  struct Case {
    const char* text;
    const char* expect;
  };
  const Case cases[] = {
      {"QOS Records\nQOS=q(1) GrpJobs=lots\n", "line 2"},
      {"QOS=q(1) GrpTRES=cpu=3(x)\n", "GrpTRES=cpu=3(x)"},
      {"QOS=q(1) GrpTRES=gres/gpu\n", "GrpTRES=gres/gpu"},
      {"ClusterName=c Account= UserName=\n", "no Account"},
      {"QOS= GrpJobs=1(0)\n", "no name"},
      {"QOS=q(1) User Limits= bob={MaxJobsPU=1(0)}\n", "uid \"bob\""},
      // A uid must be a whole number that fits: a double cast to int64_t past
      // its range is undefined (found by fuzz_slurm_text).
      {"QOS=q(1) User Limits= 5.6e35={MaxJobsPU=1(0)}\n", "uid \"5.6e35\""},
      {"QOS=q(1) User Limits= 1.5={MaxJobsPU=1(0)}\n", "uid \"1.5\""},
  };
  for (const Case& c : cases) {
    auto state = ParseAssocMgr(c.text);
    ASSERT_FALSE(state.ok()) << c.text;
    EXPECT_EQ(state.error().code, "malformed");
    EXPECT_NE(state.error().message.find(c.expect), std::string::npos)
        << c.text << " -> " << state.error().message;
    EXPECT_NE(state.error().message.find("assoc_mgr"), std::string::npos);
  }
  // Headers, user records and blank lines are not records.
  auto empty = ParseAssocMgr("Current Association Manager state\n\nUser Records\nUserName=x\n");
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(empty->associations.empty());
  EXPECT_TRUE(empty->qos.empty());
}

TEST(AssocMgr, EveryLimitReasonHasAPlace) {
  auto at = [](const char* code) {
    const PendingReason* r = FindPendingReason(code);
    EXPECT_NE(r, nullptr) << code;
    EXPECT_TRUE(r && r->limit) << code;
    return LocateLimit(*r->limit);
  };
  LimitLocation l = at("QOSMaxGRESPerUser");
  EXPECT_EQ(l.block, LimitLocation::kPerUser);
  EXPECT_EQ(l.key, "MaxTRESPU");
  EXPECT_TRUE(l.tres);
  l = at("AssocGrpGRES");
  EXPECT_EQ(l.block, LimitLocation::kRecord);
  EXPECT_EQ(l.key, "GrpTRES");
  l = at("QOSMaxJobsPerUserLimit");
  EXPECT_EQ(l.block, LimitLocation::kPerUser);
  EXPECT_EQ(l.key, "MaxJobsPU");
  EXPECT_FALSE(l.tres);
  l = at("AssocMaxWallDurationPerJobLimit");
  EXPECT_EQ(l.key, "MaxWallPJ");
  EXPECT_FALSE(l.tres);
  l = at("AssocGrpGRESRunMinutes");
  EXPECT_EQ(l.key, "GrpTRESRunMins");
  l = at("QOSMaxGRESPerJob");
  EXPECT_EQ(l.key, "MaxTRESPJ");
  l = at("QOSMaxGRESPerNode");
  EXPECT_EQ(l.key, "MaxTRESPN");
  l = at("QOSMinGRES");
  EXPECT_EQ(l.key, "MinTRESPJ");

  // Every limit reason of the catalog maps to a key the association manager
  // prints (22.05's names), so that none falls through to a guess.
  const std::set<std::string> known = {
      "GrpJobs",         "GrpSubmitJobs",   "GrpWall",   "GrpTRES",   "GrpTRESMins",
      "GrpTRESRunMins",  "MaxJobs",         "MaxJobsPU", "MaxJobsPA", "MaxSubmitJobs",
      "MaxSubmitJobsPU", "MaxSubmitJobsPA", "MaxWallPJ", "MaxTRESPJ", "MaxTRESMinsPJ",
      "MaxTRESPN",       "MaxTRESPU",       "MaxTRESPA", "MinTRESPJ"};
  int limits = 0;
  for (const PendingReason& r : AllPendingReasons()) {
    if (!r.limit) continue;
    ++limits;
    const LimitLocation loc = LocateLimit(*r.limit);
    EXPECT_EQ(known.count(loc.key), 1u) << r.code << " -> " << loc.key;
  }
  EXPECT_GT(limits, 100);
}

TEST(AssocMgr, TresNames) {
  EXPECT_EQ(TresName(LimitSpec::kGres, "gpu"), "gres/gpu");
  EXPECT_EQ(TresName(LimitSpec::kGres, ""), "gres/gpu");
  EXPECT_EQ(TresName(LimitSpec::kGres, "shard"), "gres/shard");
  EXPECT_EQ(TresName(LimitSpec::kCpu, "gpu"), "cpu");
  EXPECT_EQ(TresName(LimitSpec::kMemory, "gpu"), "mem");
  EXPECT_EQ(TresName(LimitSpec::kLicense, "gpu"), "");
}

}  // namespace
}  // namespace gw::slurm
