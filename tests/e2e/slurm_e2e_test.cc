// The Slurm test cluster itself (tests/e2e/slurm_cluster.h), started once for
// this binary: three nodes, six fake GPUs, a cloud node powered up on demand, jobs that run and
// jobs that wait, read through gw_slurm's parsers of `sinfo --json` / `squeue --json`.
#include <algorithm>
#include <charconv>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>

#include <chrono>
#include <nlohmann/json.hpp>

#include "core/result.h"
#include "e2e/slurm_cluster.h"
#include "slurm/slurm_json.h"

namespace gw::test {
namespace {

[[maybe_unused]] ::testing::Environment* const kSlurm =
    ::testing::AddGlobalTestEnvironment(new SlurmEnvironment());

constexpr double kJobTimeoutS = 60;

class SlurmE2eTest : public ::testing::Test {
 protected:
  // Every test leaves the cluster as it found it: no job, every node idle.
  void TearDown() override {
    if (SlurmCluster* cluster = SlurmEnvironment::Cluster()) {
      std::string error;
      EXPECT_TRUE(cluster->CancelAllAndWait(&error)) << error << "\n" << cluster->LogTails();
    }
  }
};

Result<slurm::SqueueDocument> Squeue(const SlurmCluster& cluster) {
  RunResult r = cluster.Run({"squeue", "--json"});
  if (r.exit_code != 0)
    return MakeError("squeue",
                     "squeue --json exited " + std::to_string(r.exit_code) + ": " + r.err);
  return slurm::ParseSqueueJson(r.out);
}

Result<slurm::SinfoDocument> Sinfo(const SlurmCluster& cluster) {
  RunResult r = cluster.Run({"sinfo", "--json"});
  if (r.exit_code != 0)
    return MakeError("sinfo", "sinfo --json exited " + std::to_string(r.exit_code) + ": " + r.err);
  return slurm::ParseSinfoJson(r.out);
}

// Polls squeue until job `id` satisfies `pred`; the job as last seen, or
// nullopt when it never did (then *seen describes the last look).
std::optional<slurm::Job> WaitForJob(const SlurmCluster& cluster, int64_t id,
                                     const std::function<bool(const slurm::Job&)>& pred,
                                     std::string* seen) {
  std::optional<slurm::Job> found;
  WaitUntil(
      [&] {
        auto doc = Squeue(cluster);
        if (!doc) {
          *seen = doc.error().message;
          return false;
        }
        for (const slurm::Job& j : doc->jobs) {
          if (j.id != id) continue;
          *seen = "job " + std::to_string(id) + " " + j.state.value_or("?") + " reason " +
                  j.reason.value_or("?") + " nodes " + j.nodes.value_or("-");
          if (pred(j)) {
            found = j;
            return true;
          }
          return false;
        }
        *seen = "job " + std::to_string(id) + " not in squeue";
        return false;
      },
      kJobTimeoutS, 0.1);
  return found;
}

bool Running(const slurm::Job& j) { return j.state == "RUNNING"; }

int64_t GpuCount(const std::optional<std::vector<slurm::Gres>>& list) {
  int64_t n = 0;
  for (const auto& g : list.value_or(std::vector<slurm::Gres>{})) {
    if (g.name == "gpu") n += g.count;
  }
  return n;
}

TEST_F(SlurmE2eTest, ClusterHasThreeNodesAndSixGpus) {
  GW_REQUIRE_SLURM_CLUSTER(cluster);
  auto doc = Sinfo(cluster);
  ASSERT_TRUE(doc) << doc.error().message;
  EXPECT_EQ(doc->meta.layout, slurm::JsonLayout::kV0038);
  EXPECT_EQ(doc->meta.major, 22);
  // And the cloud node n4, powered down (listed: PrivateData=cloud).
  ASSERT_EQ(doc->nodes.size(), 4u);
  int64_t total = 0;
  for (const slurm::Node& n : doc->nodes) {
    if (n.name == "n4") {
      EXPECT_TRUE(n.HasFlag("CLOUD") && n.HasFlag("POWERED_DOWN")) << n.state.value_or("?");
      continue;
    }
    EXPECT_EQ(n.state, "IDLE") << n.name;
    EXPECT_TRUE(n.state_flags.empty()) << n.name;
    ASSERT_TRUE(n.gres.has_value()) << n.name;
    ASSERT_EQ(n.gres->size(), 1u) << n.name;
    EXPECT_EQ((*n.gres)[0].type, n.name == "n3" ? "l40s" : "a100") << n.name;
    EXPECT_EQ((*n.gres)[0].count, 2) << n.name;
    EXPECT_EQ(GpuCount(n.gres_used), 0) << n.name;
    total += GpuCount(n.gres);
  }
  EXPECT_EQ(total, 6);
  // The daemons registered the GPUs from the mknod'd devices named in gres.conf.
  RunResult show = cluster.Run({"scontrol", "-d", "show", "node", "n3"});
  ASSERT_EQ(show.exit_code, 0) << show.err;
  EXPECT_NE(show.out.find("Gres=gpu:l40s:2"), std::string::npos) << show.out;
}

TEST_F(SlurmE2eTest, TwoA100JobRunsOnAnA100Node) {
  GW_REQUIRE_SLURM_CLUSTER(cluster);
  std::string error;
  auto id = cluster.Submit({"--job-name=two-a100", "--gres=gpu:a100:2"}, "sleep 30", &error);
  ASSERT_TRUE(id) << error;
  std::string seen;
  auto job = WaitForJob(cluster, *id, Running, &seen);
  ASSERT_TRUE(job) << seen << "\n" << cluster.LogTails();
  ASSERT_TRUE(job->nodes.has_value());
  EXPECT_TRUE(*job->nodes == "n1" || *job->nodes == "n2") << *job->nodes;
  EXPECT_EQ(job->name, "two-a100");
  ASSERT_EQ(job->gres_per_node.size(), 1u);
  EXPECT_EQ(job->gres_per_node[0].type, "a100");
  EXPECT_EQ(job->gres_per_node[0].count, 2);
  ASSERT_EQ(job->gres_detail.size(), 1u);
  ASSERT_EQ(job->gres_detail[0].size(), 1u);
  EXPECT_EQ(job->gres_detail[0][0].count, 2);
  EXPECT_EQ(job->gres_detail[0][0].indexes, "0-1");
  EXPECT_TRUE(job->start_time.has_value());
  // sinfo agrees: both GPUs of that node are in use.
  auto nodes = Sinfo(cluster);
  ASSERT_TRUE(nodes) << nodes.error().message;
  for (const slurm::Node& n : nodes->nodes) {
    EXPECT_EQ(GpuCount(n.gres_used), n.name == *job->nodes ? 2 : 0) << n.name;
  }
}

// No node has three a100: Slurm refuses such a job at submit instead of
// letting it wait.
TEST_F(SlurmE2eTest, ThreeA100OnOneNodeIsRefusedAtSubmit) {
  GW_REQUIRE_SLURM_CLUSTER(cluster);
  std::string error;
  auto id = cluster.Submit({"--nodes=1", "--gres=gpu:a100:3"}, "sleep 30", &error);
  EXPECT_FALSE(id);
  EXPECT_NE(error.find("Requested node configuration is not available"), std::string::npos)
      << error;
}

const nlohmann::json* NodeIn(const nlohmann::json& doc, const std::string& name) {
  for (const nlohmann::json& n : doc["nodes"]) {
    if (n["name"] == name) return &n;
  }
  return nullptr;
}

// Drains a node for the test's length and resumes it after, whatever happened.
class DrainedNode {
 public:
  DrainedNode(const SlurmCluster& cluster, std::string node, const std::string& reason)
      : cluster_(cluster), node_(std::move(node)) {
    result_ = cluster_.Run(
        {"scontrol", "update", "nodename=" + node_, "state=drain", "reason=" + reason});
  }
  ~DrainedNode() { cluster_.Run({"scontrol", "update", "nodename=" + node_, "state=resume"}); }
  DrainedNode(const DrainedNode&) = delete;
  DrainedNode& operator=(const DrainedNode&) = delete;
  const RunResult& result() const { return result_; }

 private:
  const SlurmCluster& cluster_;
  std::string node_;
  RunResult result_;
};

// One a100 taken on each a100 node, a job waiting for two a100 on one node,
// and n3 drained. Slurm's own view first (the parsers), then `gpuwarden
// cluster`: the counts per node
// and type, who holds what, the drained node's idle GPUs not free, the
// waiting job with Slurm's reason; text and JSON.
TEST_F(SlurmE2eTest, ClusterCommandShowsHoldersDrainsAndWaitingJobs) {
  GW_REQUIRE_SLURM_CLUSTER(cluster);
  std::string error;
  std::vector<int64_t> holders;
  for (const char* node : {"n1", "n2"}) {
    auto id = cluster.Submit(
        {"--job-name=hold-one", std::string("--nodelist=") + node, "--gres=gpu:a100:1"}, "sleep 60",
        &error);
    ASSERT_TRUE(id) << error;
    holders.push_back(*id);
  }
  for (int64_t id : holders) {
    std::string seen;
    ASSERT_TRUE(WaitForJob(cluster, id, Running, &seen)) << seen << "\n" << cluster.LogTails();
  }
  auto waiting = cluster.Submit({"--job-name=needs-two", "--nodes=1", "--gres=gpu:a100:2"},
                                "sleep 30", &error);
  ASSERT_TRUE(waiting) << error;
  // Two a100 are free in total, one on each node: the job that needs both on
  // one node waits for Resources (Slurm's word for fragmentation too).
  std::string seen;
  auto job = WaitForJob(
      cluster, *waiting,
      [](const slurm::Job& j) { return j.state == "PENDING" && j.reason == "Resources"; }, &seen);
  ASSERT_TRUE(job) << seen;
  EXPECT_EQ(job->nodes, std::nullopt);
  EXPECT_TRUE(job->gres_detail.empty());
  auto nodes = Sinfo(cluster);
  ASSERT_TRUE(nodes) << nodes.error().message;
  for (const slurm::Node& n : nodes->nodes) {
    EXPECT_EQ(GpuCount(n.gres_used), n.name == "n3" || n.name == "n4" ? 0 : 1) << n.name;
  }
  const std::string reason = "maintenance: fan 2 \x1b[31mloud";
  DrainedNode drained(cluster, "n3", reason);
  ASSERT_EQ(drained.result().exit_code, 0) << drained.result().err;

  RunResult r = RunProcess(Gpuwarden({"cluster", "--json"}), cluster.ClientOptions());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json doc = nlohmann::json::parse(r.out);
  EXPECT_EQ(doc["schema"], "gpuwarden.cluster");
  EXPECT_EQ(doc["slurm"]["layout"], "v0.0.38");
  for (size_t i = 0; i < 2; ++i) {
    const nlohmann::json* n = NodeIn(doc, i == 0 ? "n1" : "n2");
    ASSERT_NE(n, nullptr) << r.out;
    EXPECT_EQ((*n)["availability"], "takes work");
    ASSERT_EQ((*n)["gpus"].size(), 1u);
    EXPECT_EQ((*n)["gpus"][0]["type"], "a100");
    EXPECT_EQ((*n)["gpus"][0]["total"], 2);
    EXPECT_EQ((*n)["gpus"][0]["allocated"], 1);
    EXPECT_EQ((*n)["gpus"][0]["free"], 1);
    ASSERT_EQ((*n)["holders"].size(), 1u) << n->dump();
    EXPECT_EQ((*n)["holders"][0]["job_id"], holders[i]);
    EXPECT_EQ((*n)["holders"][0]["user"], "root");
    EXPECT_EQ((*n)["holders"][0]["job_name"], "hold-one");
    EXPECT_EQ((*n)["holders"][0]["count"], 1);
    EXPECT_EQ((*n)["holders"][0]["indexes"], "0");
  }
  const nlohmann::json* n3 = NodeIn(doc, "n3");
  ASSERT_NE(n3, nullptr);
  EXPECT_EQ((*n3)["availability"], "drained");
  EXPECT_EQ((*n3)["reason"], reason);
  EXPECT_EQ((*n3)["gpus"][0]["free"], 0);
  EXPECT_EQ((*n3)["gpus"][0]["unavailable"], 2);
  ASSERT_EQ(doc["pending"].size(), 1u) << r.out;
  EXPECT_EQ(doc["pending"][0]["job_id"], *waiting);
  EXPECT_EQ(doc["pending"][0]["reason"], "Resources");
  EXPECT_EQ(doc["pending"][0]["wants"], "2 gpu:a100 per node");

  RunResult text = RunProcess(Gpuwarden({"cluster"}), cluster.ClientOptions());
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("GPUs: 6 in all, 2 allocated, 2 free, 2 unavailable"), std::string::npos)
      << text.out;
  EXPECT_NE(text.out.find("job " + std::to_string(holders[0]) + " root \"hold-one\" 1×a100 [0]"),
            std::string::npos)
      << text.out;
  // Slurm's text is sanitised: the escape byte never reaches the terminal.
  EXPECT_NE(text.out.find("n3 drained: maintenance: fan 2 \\x1b[31mloud"), std::string::npos)
      << text.out;
  EXPECT_EQ(text.out.find('\x1b'), std::string::npos);
  EXPECT_NE(text.out.find("needs-two"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("Resources"), std::string::npos) << text.out;

  // why --slurm (no id: the caller's pending jobs) explains the wait as
  // fragmentation and names the running jobs that must end.
  RunResult why = RunProcess(Gpuwarden({"why", "--slurm"}), cluster.ClientOptions());
  ASSERT_EQ(why.exit_code, 0) << why.err;
  EXPECT_NE(why.out.find("job " + std::to_string(*waiting) +
                         " \"needs-two\" (root) waits: "
                         "Resources — wants 2 gpu:a100 per node"),
            std::string::npos)
      << why.out;
  EXPECT_NE(why.out.find("Fragmentation: it needs 2 a100 GPUs on one node; 2 a100 GPUs are free "
                         "in all, but at most 1 on any one node (n1 1 of 2, n2 1 of 2 free)."),
            std::string::npos)
      << why.out;
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_NE(why.out.find(std::string(i == 0 ? "n1" : "n2") +
                           ": 1 a100 GPU more must be freed; held by job " +
                           std::to_string(holders[i]) + " root \"hold-one\" 1×a100"),
              std::string::npos)
        << why.out;
  }
  RunResult why_json = RunProcess(Gpuwarden({"why", "--slurm", std::to_string(*waiting), "--json"}),
                                  cluster.ClientOptions());
  ASSERT_EQ(why_json.exit_code, 0) << why_json.err;
  const nlohmann::json wj = nlohmann::json::parse(why_json.out);
  ASSERT_EQ(wj["jobs"].size(), 1u);
  EXPECT_EQ(wj["jobs"][0]["reason"]["code"], "Resources");
  EXPECT_EQ(wj["jobs"][0]["reason"]["known"], true);
  EXPECT_EQ(wj["jobs"][0]["must_end"].size(), 2u);
  RunResult running = RunProcess(Gpuwarden({"why", "--slurm", std::to_string(holders[0])}),
                                 cluster.ClientOptions());
  EXPECT_EQ(running.exit_code, 0);
  EXPECT_NE(running.out.find("does not wait: it is RUNNING"), std::string::npos) << running.out;
  RunResult missing = RunProcess(Gpuwarden({"why", "--slurm", "999999"}), cluster.ClientOptions());
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_NE(missing.err.find("no job 999999 in squeue"), std::string::npos) << missing.err;
}

// Waits that are not about GPUs: a job held by its user, one whose --begin
// has not come, one that asks for a drained node by name. Each gets its
// reason, the catalog's meaning and, for the node, the node's drain reason.
TEST_F(SlurmE2eTest, WhySlurmExplainsHeldBeginTimeAndDrainedNodeWaits) {
  GW_REQUIRE_SLURM_CLUSTER(cluster);
  DrainedNode drained(cluster, "n3", "gpuwarden: GPU 1 FAULT: fell off the bus (Xid 79)");
  ASSERT_EQ(drained.result().exit_code, 0) << drained.result().err;
  std::string error;
  auto held = cluster.Submit({"--job-name=held", "--hold"}, "sleep 5", &error);
  ASSERT_TRUE(held) << error;
  auto later = cluster.Submit({"--job-name=later", "--begin=now+1hour"}, "sleep 5", &error);
  ASSERT_TRUE(later) << error;
  auto on_n3 =
      cluster.Submit({"--job-name=on-n3", "--nodelist=n3", "--gres=gpu:l40s:1"}, "sleep 5", &error);
  ASSERT_TRUE(on_n3) << error;
  struct Want {
    int64_t id;
    std::string code;
  };
  for (const Want& w :
       {Want{*held, "JobHeldUser"}, Want{*later, "BeginTime"}, Want{*on_n3, "ReqNodeNotAvail"}}) {
    std::string seen;
    ASSERT_TRUE(WaitForJob(
        cluster, w.id,
        [&w](const slurm::Job& j) { return j.state == "PENDING" && j.reason == w.code; }, &seen))
        << w.code << ": " << seen;
  }
  RunResult why = RunProcess(Gpuwarden({"why", "--slurm"}), cluster.ClientOptions());
  ASSERT_EQ(why.exit_code, 0) << why.err;
  EXPECT_NE(why.out.find("\"held\" (root) waits: JobHeldUser"), std::string::npos) << why.out;
  EXPECT_NE(why.out.find("Release it: `scontrol release ID`."), std::string::npos) << why.out;
  EXPECT_NE(why.out.find("\"later\" (root) waits: BeginTime"), std::string::npos) << why.out;
  // An hour from the submit, a moment ago.
  EXPECT_TRUE(why.out.find("It may start in 1h.") != std::string::npos ||
              why.out.find("It may start in 59m.") != std::string::npos)
      << why.out;
  EXPECT_NE(why.out.find("\"on-n3\" (root) waits: ReqNodeNotAvail"), std::string::npos) << why.out;
  EXPECT_NE(why.out.find("n3 is drained: gpuwarden: GPU 1 FAULT: fell off the bus (Xid 79) "
                         "(drained by gpuwarden's health check)."),
            std::string::npos)
      << why.out;
}

// A job of a higher partition takes the GPUs of a running job: Slurm requeues
// it (BeginTime, a restart), and why --slurm says it was preempted.
TEST_F(SlurmE2eTest, WhySlurmExplainsAPreemptionRequeue) {
  GW_REQUIRE_SLURM_CLUSTER(cluster);
  std::string error;
  auto low = cluster.Submit(
      {"--job-name=low", "--partition=gpu", "--requeue", "--nodelist=n1", "--gres=gpu:a100:2"},
      "sleep 60", &error);
  ASSERT_TRUE(low) << error;
  std::string seen;
  ASSERT_TRUE(WaitForJob(cluster, *low, Running, &seen)) << seen << "\n" << cluster.LogTails();
  auto high =
      cluster.Submit({"--job-name=high", "--partition=high", "--nodelist=n1", "--gres=gpu:a100:2"},
                     "sleep 30", &error);
  ASSERT_TRUE(high) << error;
  auto requeued = WaitForJob(
      cluster, *low,
      [](const slurm::Job& j) { return j.state == "PENDING" && j.restarts.value_or(0) >= 1; },
      &seen);
  ASSERT_TRUE(requeued) << seen << "\n" << cluster.LogTails();
  ASSERT_TRUE(WaitForJob(cluster, *high, Running, &seen)) << seen;
  // Slurm may change the requeued job's reason while `why` runs (it sets
  // BeginTime to hold a requeued job back): `why` names the reason squeue
  // gave just before it or just after it.
  const auto any = [](const slurm::Job&) { return true; };
  const auto before = WaitForJob(cluster, *low, any, &seen);
  ASSERT_TRUE(before) << seen;
  RunResult why =
      RunProcess(Gpuwarden({"why", "--slurm", std::to_string(*low)}), cluster.ClientOptions());
  const auto after = WaitForJob(cluster, *low, any, &seen);
  ASSERT_TRUE(after) << seen;
  ASSERT_EQ(why.exit_code, 0) << why.err;
  EXPECT_NE(why.out.find("It was requeued 1 time (preempted by a higher-priority job, or its "
                         "launch failed)"),
            std::string::npos)
      << why.out;
  const std::string waits = "\"low\" (root) waits: ";
  EXPECT_TRUE(why.out.find(waits + before->reason.value_or("?")) != std::string::npos ||
              why.out.find(waits + after->reason.value_or("?")) != std::string::npos)
      << "squeue's reason before: " << before->reason.value_or("?")
      << ", after: " << after->reason.value_or("?") << "\n"
      << why.out;
}

std::optional<slurm::Node> NodeNamed(const SlurmCluster& cluster, const std::string& name) {
  auto doc = Sinfo(cluster);
  if (!doc) return std::nullopt;
  for (const slurm::Node& n : doc->nodes) {
    if (n.name == name) return n;
  }
  return std::nullopt;
}

// A name of this run for what a test adds to the accounting database, which
// outlives a test (the cluster lives as long as the binary): a repeated test
// gets fresh ones.
std::string Unique(const std::string& base) {
  static int run = 0;
  return base + std::to_string(++run);
}

// Real QOS and association limits (slurmdbd on MariaDB, enforced): a QOS of
// two GPUs per user and an account of one GPU. why --slurm names each limit,
// its usage and the running job that uses it.
TEST_F(SlurmE2eTest, WhySlurmExplainsAQosLimitPerUserAndAnAccountsGroupLimit) {
  GW_REQUIRE_SLURM_CLUSTER(cluster);
  const std::string qos = Unique("gw2gpu");
  const std::string account = Unique("gwlab");
  std::string error;
  ASSERT_TRUE(cluster.Sacctmgr(
      {"add qos " + qos + " MaxTRESPerUser=gres/gpu=2", "modify user root set qos+=" + qos,
       "add account " + account, "add user root account=" + account,
       "modify account " + account + " set GrpTRES=gres/gpu=1"},
      &error))
      << error;
  auto two =
      cluster.Submit({"--job-name=two", "--qos=" + qos, "--gres=gpu:a100:2"}, "sleep 300", &error);
  ASSERT_TRUE(two) << error;
  auto lab1 = cluster.Submit({"--job-name=lab1", "--account=" + account, "--gres=gpu:l40s:1"},
                             "sleep 300", &error);
  ASSERT_TRUE(lab1) << error;
  std::string seen;
  ASSERT_TRUE(WaitForJob(cluster, *two, Running, &seen)) << seen;
  ASSERT_TRUE(WaitForJob(cluster, *lab1, Running, &seen)) << seen;
  auto over =
      cluster.Submit({"--job-name=over", "--qos=" + qos, "--gres=gpu:1"}, "sleep 300", &error);
  ASSERT_TRUE(over) << error;
  auto lab2 = cluster.Submit({"--job-name=lab2", "--account=" + account, "--gres=gpu:1"},
                             "sleep 300", &error);
  ASSERT_TRUE(lab2) << error;
  ASSERT_TRUE(WaitForJob(
      cluster, *over,
      [](const slurm::Job& j) { return j.state == "PENDING" && j.reason == "QOSMaxGRESPerUser"; },
      &seen))
      << seen;
  ASSERT_TRUE(WaitForJob(
      cluster, *lab2,
      [](const slurm::Job& j) { return j.state == "PENDING" && j.reason == "AssocGrpGRES"; },
      &seen))
      << seen;

  RunResult why =
      RunProcess(Gpuwarden({"why", "--slurm", std::to_string(*over)}), cluster.ClientOptions());
  ASSERT_EQ(why.exit_code, 0) << why.err;
  EXPECT_NE(why.out.find("QOS " + qos + " for user root allows 2 GPUs (MaxTRESPU gres/gpu=2); " +
                         "2 in use now by 1 running job: job " + std::to_string(*two) + " root"),
            std::string::npos)
      << why.out;
  EXPECT_NE(why.out.find("this job asks for 1 more."), std::string::npos) << why.out;
  EXPECT_NE(why.out.find("It can start once 1 GPU of these is released."), std::string::npos)
      << why.out;

  RunResult json = RunProcess(Gpuwarden({"why", "--slurm", std::to_string(*lab2), "--json"}),
                              cluster.ClientOptions());
  ASSERT_EQ(json.exit_code, 0) << json.err;
  const auto doc = nlohmann::json::parse(json.out);
  ASSERT_EQ(doc["jobs"].size(), 1u) << json.out;
  const auto& limit = doc["jobs"][0]["limit"];
  ASSERT_TRUE(limit.is_object()) << json.out;
  EXPECT_EQ(limit["holder"], "account " + account);
  EXPECT_EQ(limit["key"], "GrpTRES");
  EXPECT_EQ(limit["tres"], "gres/gpu");
  EXPECT_EQ(limit["limit"], 1);
  EXPECT_EQ(limit["used"], 1);
  EXPECT_EQ(limit["asks"], 1);
  EXPECT_EQ(limit["running_jobs"], nlohmann::json::array({*lab1})) << json.out;
  EXPECT_EQ(doc["jobs"][0]["reason"]["kind"], "limit");
}

// Priority under priority/multifactor: a job of a high-priority QOS waits for
// the GPUs first, the job behind it waits on Priority, and why --slurm breaks
// both priorities down into sprio's factors.
TEST_F(SlurmE2eTest, WhySlurmBreaksAPriorityWaitDownIntoSpriosFactors) {
  GW_REQUIRE_SLURM_CLUSTER(cluster);
  const std::string urgent = Unique("gwurgent");
  std::string error;
  ASSERT_TRUE(cluster.Sacctmgr(
      {"add qos " + urgent + " Priority=100", "modify user root set qos+=" + urgent}, &error))
      << error;
  auto fill =
      cluster.Submit({"--job-name=fill", "--nodes=2", "--gres=gpu:a100:2"}, "sleep 300", &error);
  ASSERT_TRUE(fill) << error;
  std::string seen;
  ASSERT_TRUE(WaitForJob(cluster, *fill, Running, &seen)) << seen;
  auto low = cluster.Submit({"--job-name=low", "--gres=gpu:a100:1"}, "sleep 300", &error);
  ASSERT_TRUE(low) << error;
  auto high = cluster.Submit({"--job-name=high", "--qos=" + urgent, "--gres=gpu:a100:1"},
                             "sleep 300", &error);
  ASSERT_TRUE(high) << error;
  ASSERT_TRUE(WaitForJob(
      cluster, *low,
      [](const slurm::Job& j) { return j.state == "PENDING" && j.reason == "Priority"; }, &seen))
      << seen;

  RunResult why =
      RunProcess(Gpuwarden({"why", "--slurm", std::to_string(*low)}), cluster.ClientOptions());
  ASSERT_EQ(why.exit_code, 0) << why.err;
  EXPECT_NE(why.out.find("waits: Priority"), std::string::npos) << why.out;
  EXPECT_NE(why.out.find("1 job of its partition waits ahead of it for resources"),
            std::string::npos)
      << why.out;
  EXPECT_NE(why.out.find("job " + std::to_string(*high) + " root (priority 11"), std::string::npos)
      << why.out;
  EXPECT_NE(why.out.find("= QOS 10000 + partition 1000"), std::string::npos) << why.out;
  EXPECT_EQ(why.out.find("could not be read"), std::string::npos) << why.out;

  RunResult json = RunProcess(Gpuwarden({"why", "--slurm", std::to_string(*low), "--json"}),
                              cluster.ClientOptions());
  ASSERT_EQ(json.exit_code, 0) << json.err;
  const auto doc = nlohmann::json::parse(json.out);
  const auto& factors = doc["jobs"][0]["priority_factors"];
  ASSERT_TRUE(factors.is_object()) << json.out;
  EXPECT_EQ(factors["qos"], 0);
  EXPECT_EQ(factors["partition"], 1000);
  EXPECT_GE(factors["priority"].get<double>(), 1000);
}

// `gpuwarden health --slurm-drain` as slurmd runs a HealthCheckProgram: a
// minimal environment (no PATH), the node named by SLURMD_NODENAME. A fault
// drains the node with a reason naming the GPU and the finding; healthy again
// resumes it; a node an administrator drained is never touched.
TEST_F(SlurmE2eTest, HealthDrainsOnFaultResumesWhenHealthyAndLeavesAdminDrains) {
  GW_REQUIRE_SLURM_CLUSTER(cluster);
  auto as_slurmd = [&cluster](const std::string& node) {
    RunOptions o = SimOptions();
    o.env["SLURM_CONF"] = cluster.conf();
    o.env["SLURMD_NODENAME"] = node;
    o.env["PATH"] = std::nullopt;
    o.env["HOME"] = std::nullopt;
    return o;
  };
  auto health = [&](const std::string& scenario, const std::string& node) {
    return RunProcess(
        Gpuwarden({"--sim", ScenarioPath(scenario), "health", "--slurm-drain", "--no-kernel-log"}),
        as_slurmd(node));
  };
  RunResult fault = health("ecc-double-bit.json", "n2");
  EXPECT_EQ(fault.exit_code, 13) << fault.out << fault.err;
  EXPECT_NE(fault.out.find("slurm: node n2: drained: gpuwarden: GPU 2 FAULT:"), std::string::npos)
      << fault.out << fault.err;
  std::optional<slurm::Node> n2 = NodeNamed(cluster, "n2");
  ASSERT_TRUE(n2);
  EXPECT_TRUE(n2->HasFlag("DRAIN"));
  ASSERT_TRUE(n2->reason);
  EXPECT_EQ(n2->reason->rfind("gpuwarden: GPU 2 FAULT: had 1 uncorrectable ECC error", 0), 0u)
      << *n2->reason;
  EXPECT_NE(n2->reason->find("ECC_DBE_VOLATILE"), std::string::npos) << *n2->reason;

  // The same fault again: the drain stays as it is.
  RunResult again = health("ecc-double-bit.json", "n2");
  EXPECT_EQ(again.exit_code, 13);
  EXPECT_NE(again.out.find("already drained by gpuwarden"), std::string::npos) << again.out;

  RunResult healthy = health("healthy-idle.json", "n2");
  EXPECT_EQ(healthy.exit_code, 0) << healthy.out << healthy.err;
  EXPECT_NE(healthy.out.find("slurm: node n2: resumed: healthy again"), std::string::npos)
      << healthy.out;
  n2 = NodeNamed(cluster, "n2");
  ASSERT_TRUE(n2);
  EXPECT_FALSE(n2->HasFlag("DRAIN")) << n2->reason.value_or("");

  // DEGRADED keeps the node in service by default; --on-degraded drain drains it.
  RunResult degraded = health("hw-slowdown.json", "n2");
  EXPECT_EQ(degraded.exit_code, 12);
  EXPECT_FALSE(NodeNamed(cluster, "n2")->HasFlag("DRAIN"));
  RunResult degraded_drain =
      RunProcess(Gpuwarden({"--sim", ScenarioPath("hw-slowdown.json"), "health", "--slurm-drain",
                            "--no-kernel-log", "--on-degraded", "drain"}),
                 as_slurmd("n2"));
  EXPECT_EQ(degraded_drain.exit_code, 12);
  EXPECT_TRUE(NodeNamed(cluster, "n2")->HasFlag("DRAIN"));
  EXPECT_EQ(health("healthy-idle.json", "n2").exit_code, 0);
  EXPECT_FALSE(NodeNamed(cluster, "n2")->HasFlag("DRAIN"));
  // With --json, stdout is the health document alone; the Slurm line goes to stderr.
  RunResult json_run = RunProcess(Gpuwarden({"--sim", ScenarioPath("healthy-idle.json"), "health",
                                             "--slurm-drain", "--no-kernel-log", "--json"}),
                                  as_slurmd("n2"));
  EXPECT_EQ(json_run.exit_code, 0) << json_run.err;
  EXPECT_EQ(nlohmann::json::parse(json_run.out)["schema"], "gpuwarden.health") << json_run.out;
  EXPECT_NE(json_run.err.find("slurm: node n2: healthy: nothing to do"), std::string::npos)
      << json_run.err;

  // An administrator's drain: neither a fault nor health changes it.
  const std::string admin_reason = "admin: memory test until friday";
  DrainedNode admin(cluster, "n1", admin_reason);
  ASSERT_EQ(admin.result().exit_code, 0) << admin.result().err;
  for (const char* scenario : {"ecc-double-bit.json", "healthy-idle.json"}) {
    RunResult r = health(scenario, "n1");
    EXPECT_NE(r.out.find("drained by an administrator (" + admin_reason + "): left as it is"),
              std::string::npos)
        << scenario << ": " << r.out << r.err;
    std::optional<slurm::Node> n1 = NodeNamed(cluster, "n1");
    ASSERT_TRUE(n1);
    EXPECT_TRUE(n1->HasFlag("DRAIN")) << scenario;
    EXPECT_EQ(n1->reason, admin_reason) << scenario;
  }
}

// Without Slurm's clients, and with a client that never answers: one line
// naming the command and the problem, exit 20, never a hang.
TEST(SlurmClientE2e, MissingOrHungSlurmClientsAreNamedAndExit20) {
  TempDir dir;
  RunOptions no_slurm;
  no_slurm.env["PATH"] = dir.path();
  RunResult missing = RunProcess(Gpuwarden({"cluster"}), no_slurm);
  EXPECT_EQ(missing.exit_code, 20) << missing.err;
  EXPECT_NE(missing.err.find("sinfo: not found"), std::string::npos) << missing.err;

  const std::string sinfo = dir.Write("sinfo", "#!/bin/sh\nexec sleep 30\n");
  ASSERT_EQ(chmod(sinfo.c_str(), 0755), 0);
  RunOptions hung;
  hung.env["PATH"] = dir.path() + ":/usr/bin:/bin";
  const auto start = std::chrono::steady_clock::now();
  RunResult r = RunProcess(Gpuwarden({"cluster", "--slurm-timeout", "0.5", "--json"}), hung);
  const double took =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(r.exit_code, 20) << r.err;
  EXPECT_NE(r.err.find("sinfo: no answer within 500 ms"), std::string::npos) << r.err;
  EXPECT_LT(took, 10.0);
  const nlohmann::json doc = nlohmann::json::parse(r.out);
  EXPECT_EQ(doc["errors"][0]["code"], "timeout");

  dir.Write(
      "sinfo",
      "#!/bin/sh\necho 'slurm_load_partitions: Unable to contact slurm controller' >&2\nexit 1\n");
  RunResult down = RunProcess(Gpuwarden({"cluster"}), hung);
  EXPECT_EQ(down.exit_code, 20);
  EXPECT_NE(down.err.find("sinfo --json exited with status 1: slurm_load_partitions: Unable to "
                          "contact slurm controller"),
            std::string::npos)
      << down.err;
}

// `gpuwarden ARGS` run in `dir` (where sbatch puts slurm-N.out).
std::vector<std::string> GpuwardenIn(const std::string& dir, std::vector<std::string> args) {
  std::vector<std::string> argv = {"/bin/sh", "-c", "cd \"$1\" && shift && exec \"$@\"", "sh", dir};
  const std::vector<std::string> gw = Gpuwarden(std::move(args));
  argv.insert(argv.end(), gw.begin(), gw.end());
  return argv;
}

// `run --slurm` end to end: --vram becomes the GPU type that has that much,
// the command's arguments arrive unparsed, its output is streamed and its
// status is run's.
TEST_F(SlurmE2eTest, RunSlurmWaitsStreamsAndExitsWithTheJobsStatus) {
  GW_REQUIRE_SLURM_CLUSTER(cluster);
  TempDir dir;
  RunOptions options = cluster.ClientOptions();
  options.timeout_s = kJobTimeoutS;
  RunResult r =
      RunProcess(GpuwardenIn(dir.path(), {"run", "--slurm", "--wait", "--vram", "45G", "--name",
                                          "gw-run", "--", "/bin/sh", "-c",
                                          "echo \"out-$SLURM_JOB_ID on $SLURMD_NODENAME\"; "
                                          "echo \"args:$1|$2\"; exit 3",
                                          "sh", "a b", "$HOME 'q'"}),
                 options);
  EXPECT_EQ(r.exit_code, 3) << r.out << r.err << cluster.LogTails();
  // a100 counts as 40 GB: only n3's l40s (48 GB) have 45G.
  EXPECT_NE(r.err.find("--vram 45 GiB: asking for l40s GPUs (48 GiB)"), std::string::npos) << r.err;
  EXPECT_TRUE(r.err.find("running on n3") != std::string::npos ||
              r.err.find("ran on n3") != std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("failed with status 3"), std::string::npos) << r.err;
  EXPECT_NE(r.out.find(" on n3\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("out-"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("args:a b|$HOME 'q'\n"), std::string::npos) << r.out;
  // The wrapper script was removed once sbatch had read it.
  for (const auto& e : std::filesystem::directory_iterator("/tmp")) {
    EXPECT_EQ(e.path().filename().string().rfind("gpuwarden-sbatch-", 0), std::string::npos)
        << e.path();
  }

  RunResult zero = RunProcess(
      GpuwardenIn(dir.path(), {"run", "--slurm", "--wait", "--gpus", "0", "--", "true"}), options);
  EXPECT_EQ(zero.exit_code, 0) << zero.err;
  EXPECT_NE(zero.err.find("completed"), std::string::npos) << zero.err;
}

// Ctrl-C on `run --slurm --wait`: the job is cancelled in Slurm and run
// exits 130 once it has ended, as the local run does.
TEST_F(SlurmE2eTest, CtrlCOnRunSlurmCancelsTheJob) {
  GW_REQUIRE_SLURM_CLUSTER(cluster);
  TempDir dir;
  TestChild::Options options;
  options.env = cluster.ClientOptions().env;
  options.output = dir.path() + "/run.log";
  TestChild run(GpuwardenIn(dir.path(), {"run", "--slurm", "--wait", "--name", "gw-ctrl-c", "--",
                                         "/bin/sh", "-c", "echo started; sleep 300"}),
                options);
  ASSERT_GT(run.pid(), 0);
  auto log = [&] { return ReadFileOrEmpty(*options.output); };
  ASSERT_TRUE(
      WaitUntil([&] { return log().find("started\n") != std::string::npos; }, kJobTimeoutS, 0.1))
      << log() << cluster.LogTails();
  ASSERT_EQ(kill(run.pid(), SIGINT), 0);
  const std::optional<int> code = run.WaitForExit(kJobTimeoutS);
  ASSERT_TRUE(code) << log();
  EXPECT_EQ(*code, 128 + SIGINT) << log();
  EXPECT_NE(log().find("cancelling Slurm job"), std::string::npos) << log();
  EXPECT_NE(log().find("was cancelled"), std::string::npos) << log();
  auto doc = Squeue(cluster);
  ASSERT_TRUE(doc) << doc.error().message;
  for (const slurm::Job& j : doc->jobs) {
    if (j.name == "gw-ctrl-c") {
      EXPECT_EQ(j.state, "CANCELLED") << j.id;
    }
  }
}

TEST_F(SlurmE2eTest, RunSlurmDetachedThenJobsQueueAndCancel) {
  GW_REQUIRE_SLURM_CLUSTER(cluster);
  TempDir dir;
  RunOptions options = cluster.ClientOptions();
  RunResult sub = RunProcess(
      GpuwardenIn(dir.path(), {"run", "--slurm", "--detach", "--gpus", "2", "--time-limit", "90s",
                               "--name", "gw-long", "--", "sleep", "300"}),
      options);
  ASSERT_EQ(sub.exit_code, 0) << sub.err;
  const int64_t id = std::stoll(sub.out);
  std::string seen;
  ASSERT_TRUE(WaitForJob(cluster, id, Running, &seen)) << seen;
  RunResult show = cluster.Run({"scontrol", "-o", "show", "job", std::to_string(id)});
  // --time-limit 90s: Slurm counts whole minutes, rounded up.
  EXPECT_NE(show.out.find("TimeLimit=00:02:00"), std::string::npos) << show.out;
  EXPECT_NE(show.out.find("JobName=gw-long"), std::string::npos) << show.out;

  RunResult jobs = RunProcess(Gpuwarden({"jobs", "--slurm"}), options);
  EXPECT_EQ(jobs.exit_code, 0) << jobs.err;
  EXPECT_NE(jobs.out.find("\n" + std::to_string(id) + " "), std::string::npos) << jobs.out;
  EXPECT_NE(jobs.out.find("(jobs of root)"), std::string::npos) << jobs.out;
  EXPECT_NE(jobs.out.find("gw-long"), std::string::npos) << jobs.out;
  EXPECT_NE(jobs.out.find("running"), std::string::npos) << jobs.out;

  RunResult queue = RunProcess(Gpuwarden({"queue", "--slurm", "--json"}), options);
  ASSERT_EQ(queue.exit_code, 0) << queue.err;
  const nlohmann::json doc = nlohmann::json::parse(queue.out);
  EXPECT_EQ(doc["schema"], "gpuwarden.slurm_jobs");
  ASSERT_EQ(doc["jobs"].size(), 1u) << queue.out;
  EXPECT_EQ(doc["jobs"][0]["id"], id);
  EXPECT_EQ(doc["jobs"][0]["state"], "RUNNING");
  EXPECT_EQ(doc["jobs"][0]["wants"], "2 gpu per node");

  RunResult cancel = RunProcess(Gpuwarden({"cancel", "--slurm", std::to_string(id)}), options);
  EXPECT_EQ(cancel.exit_code, 0) << cancel.err;
  EXPECT_EQ(cancel.out,
            "Slurm job " + std::to_string(id) + ": cancelling (Slurm signals it, then ends it)\n");
  ASSERT_TRUE(WaitForJob(
      cluster, id, [](const slurm::Job& j) { return j.state == "CANCELLED"; }, &seen))
      << seen;
  RunResult again = RunProcess(Gpuwarden({"cancel", "--slurm", "999999"}), options);
  EXPECT_EQ(again.exit_code, 16) << again.out;
  EXPECT_NE(again.err.find("Slurm job 999999: no such job"), std::string::npos) << again.err;
  RunResult ended = RunProcess(Gpuwarden({"cancel", "--slurm", std::to_string(id)}), options);
  EXPECT_EQ(ended.exit_code, 16) << ended.out;
  EXPECT_NE(ended.err.find("already ended (CANCELLED)"), std::string::npos) << ended.err;
}

TEST_F(SlurmE2eTest, RunSlurmRefusesWhatNoNodeCanHold) {
  GW_REQUIRE_SLURM_CLUSTER(cluster);
  TempDir dir;
  RunResult r = RunProcess(
      GpuwardenIn(dir.path(), {"run", "--slurm", "--detach", "--vram", "100G", "--", "true"}),
      cluster.ClientOptions());
  EXPECT_EQ(r.exit_code, 19) << r.err;
  EXPECT_NE(r.err.find("no GPU type of the cluster has that much memory (a100 40 GiB, l40s 48 "
                       "GiB); not submitted"),
            std::string::npos)
      << r.err;
  RunResult window = RunProcess(GpuwardenIn(dir.path(), {"run", "--slurm", "--detach", "--window",
                                                         "01:00-02:00", "--", "true"}),
                                cluster.ClientOptions());
  EXPECT_EQ(window.exit_code, 2) << window.err;
  EXPECT_NE(window.err.find("--window: Slurm decides when jobs start"), std::string::npos)
      << window.err;
}

// The job's process of `sbatch --wrap "<command>"`: the one whose argv is
// exactly the command's words (its shell's child); 0 when none.
pid_t JobProcess(const std::vector<std::string>& argv) {
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    const std::string name = entry.path().filename();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream in(entry.path() / "cmdline", std::ios::binary);
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::vector<std::string> words;
    for (size_t at = 0; at < text.size();) {
      const size_t nul = text.find('\0', at);
      words.push_back(text.substr(at, nul - at));
      at = nul == std::string::npos ? text.size() : nul + 1;
    }
    if (words == argv) return static_cast<pid_t>(std::stol(name));
  }
  return 0;
}

// On node n2, status and why say which job holds each GPU and whose each
// process is. The simulated node has two GPUs whose minor numbers are not
// their indexes (GPU 0 is /dev/nvidia5): job "train" (IDX 0, so the device
// file nvidia4, Index=4, in n2's gres.conf) is GPU 1, job "eval" (IDX 1) GPU 0. The
// GPU processes are the jobs' own, found by proctrack/linuxproc's way: the
// root-owned slurmstepd above them. train's process also shows on GPU 0,
// which Slurm gave to eval.
TEST_F(SlurmE2eTest, StatusAndWhyOnANodeNameEachGpusJobAndProcess) {
  GW_REQUIRE_SLURM_CLUSTER(cluster);
  std::string error;
  const std::optional<int64_t> train =
      cluster.Submit({"-w", "n2", "--gpus=1", "-J", "train"}, "sleep 611", &error);
  ASSERT_TRUE(train) << error;
  const std::optional<int64_t> eval =
      cluster.Submit({"-w", "n2", "--gpus=1", "-J", "eval"}, "sleep 622", &error);
  ASSERT_TRUE(eval) << error;
  std::string seen;
  ASSERT_TRUE(WaitForJob(cluster, *train, Running, &seen)) << seen;
  ASSERT_TRUE(WaitForJob(cluster, *eval, Running, &seen)) << seen;
  pid_t train_pid = 0, eval_pid = 0;
  ASSERT_TRUE(WaitUntil(
      [&] {
        train_pid = JobProcess({"sleep", "611"});
        eval_pid = JobProcess({"sleep", "622"});
        return train_pid > 0 && eval_pid > 0;
      },
      kJobTimeoutS, 0.05))
      << cluster.LogTails();

  nlohmann::json scenario;
  {
    std::ifstream in(ScenarioPath("clean-idle.json"));
    scenario = nlohmann::json::parse(in);
  }
  scenario["name"] = "slurm-node";
  nlohmann::json& gpus = scenario["gpus"];
  // n2's devices are nvidia4 and nvidia5 (tests/e2e/slurm_cluster.cc).
  gpus[0]["minor_number"] = 5;
  gpus[1]["minor_number"] = 4;
  auto proc = [](const char* env, int mib, int sm) {
    return nlohmann::json{
        {"pid", std::string("env:") + env}, {"used_mib", mib}, {"sm_pct", sm}, {"mem_pct", 0}};
  };
  gpus[0]["processes"] = {proc("GW_EVAL_PID", 30000, 60), proc("GW_TRAIN_PID", 2000, 5)};
  // json::array: a braced list of one json is that json itself under clang
  // (and a list of one under GCC).
  gpus[1]["processes"] = nlohmann::json::array({proc("GW_TRAIN_PID", 20000, 80)});
  TempDir work;
  const std::string scenario_file = work.Write("slurm-node.json", scenario.dump());

  RunOptions options = cluster.ClientOptions();
  for (const auto& [k, v] : SimOptions().env) options.env[k] = v;
  options.env["GW_TRAIN_PID"] = std::to_string(train_pid);
  options.env["GW_EVAL_PID"] = std::to_string(eval_pid);
  options.env["GPUWARDEN_CONFIG"] = work.Write("config.toml", "");
  const std::string train_id = std::to_string(*train), eval_id = std::to_string(*eval);

  RunResult status = RunProcess(
      Gpuwarden({"--sim", scenario_file, "status", "--slurm-node", "n2", "--json"}), options);
  ASSERT_EQ(status.exit_code, 0) << status.err << status.out;
  const nlohmann::json doc = nlohmann::json::parse(status.out);
  const nlohmann::json& node = doc.at("slurm");
  EXPECT_EQ(node.at("node"), "n2");
  EXPECT_TRUE(node.at("unread").is_null()) << node.dump();
  EXPECT_EQ(node.at("gpu_map"), "device files") << node.dump();
  EXPECT_TRUE(node.at("notes").empty()) << node.dump();
  std::map<std::string, nlohmann::json> jobs;
  for (const auto& j : node.at("jobs")) jobs[j.at("id").get<std::string>()] = j;
  ASSERT_EQ(jobs.count(train_id), 1u) << node.dump();
  ASSERT_EQ(jobs.count(eval_id), 1u) << node.dump();
  EXPECT_EQ(jobs[train_id].at("name"), "train");
  EXPECT_EQ(jobs[train_id].at("user"), "root");
  EXPECT_EQ(jobs[train_id].at("state"), "RUNNING");
  EXPECT_EQ(jobs[train_id].at("gres_indexes"), nlohmann::json::array({0}));
  EXPECT_EQ(jobs[train_id].at("gpus"), nlohmann::json::array({1}));
  EXPECT_EQ(jobs[eval_id].at("gres_indexes"), nlohmann::json::array({1}));
  EXPECT_EQ(jobs[eval_id].at("gpus"), nlohmann::json::array({0}));
  EXPECT_EQ(doc.at("gpus").at(0).at("slurm_jobs"), nlohmann::json::array({eval_id}));
  EXPECT_EQ(doc.at("gpus").at(1).at("slurm_jobs"), nlohmann::json::array({train_id}));
  for (const auto& gpu : doc.at("gpus")) {
    for (const auto& p : gpu.at("processes")) {
      const bool is_train = p.at("pid") == train_pid;
      EXPECT_EQ(p.at("slurm_job_id"), is_train ? train_id : eval_id) << p.dump();
      EXPECT_EQ(p.at("slurm_step"), "batch") << p.dump();
    }
  }

  RunResult text = RunProcess(
      Gpuwarden({"--sim", scenario_file, "--color", "never", "status", "--slurm-node", "n2"}),
      options);
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("Slurm node n2 · 2 jobs running · 2 with GPUs here"), std::string::npos)
      << text.out;
  EXPECT_NE(text.out.find("SLURM job " + train_id + " (root, train) · RUNNING"), std::string::npos)
      << text.out;
  EXPECT_NE(text.out.find("· IDX 0"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("[slurm " + train_id + ".batch train]"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("[slurm " + eval_id + ".batch eval]"), std::string::npos) << text.out;
  // Under its own GPU: GPU 1's block names train, GPU 0's eval.
  const size_t gpu1 = text.out.find("\nGPU 1 ");
  ASSERT_NE(gpu1, std::string::npos) << text.out;
  EXPECT_GT(text.out.find("SLURM job " + train_id), gpu1) << text.out;
  EXPECT_LT(text.out.find("SLURM job " + eval_id), gpu1) << text.out;

  RunResult why = RunProcess(Gpuwarden({"--sim", scenario_file, "why", "--now", "--no-kernel-log",
                                        "--slurm-node", "n2", "--json"}),
                             options);
  const nlohmann::json verdict = nlohmann::json::parse(why.out, nullptr, false);
  ASSERT_FALSE(verdict.is_discarded()) << why.out << why.err;
  std::map<std::string, std::vector<nlohmann::json>> by_code;
  // GPU findings sit under their GPU (a finding about several under each).
  for (const auto& gpu : verdict.at("gpus")) {
    for (const auto& f : gpu.at("findings")) by_code[f.at("code")].push_back(f);
  }
  // Each GPU's line says whose it is.
  for (const auto& gpu : verdict.at("gpus")) {
    const std::string& owner = gpu.at("index") == 0 ? eval_id : train_id;
    EXPECT_NE(gpu.at("line").get<std::string>().find("allocated to Slurm job " + owner),
              std::string::npos)
        << gpu.dump();
  }
  ASSERT_EQ(by_code["SLURM_ALLOCATED"].size(), 2u) << why.out;
  std::string messages;
  for (const auto& f : by_code["SLURM_ALLOCATED"])
    messages += f.at("message").get<std::string>() + "\n";
  EXPECT_NE(messages.find("GPU 1 is allocated by Slurm to job " + train_id +
                          " (root, train); 1 of its processes runs on it"),
            std::string::npos)
      << messages;
  EXPECT_NE(messages.find("GPU 0 is allocated by Slurm to job " + eval_id + " (root, eval)"),
            std::string::npos)
      << messages;
  ASSERT_EQ(by_code["SLURM_OUTSIDE_ALLOCATION"].size(), 1u) << why.out;
  const nlohmann::json& outside = by_code["SLURM_OUTSIDE_ALLOCATION"][0];
  EXPECT_EQ(outside.at("pids"), nlohmann::json::array({train_pid}));
  EXPECT_NE(outside.at("message").get<std::string>().find(
                "(root, slurm job " + train_id + " \"train\") of Slurm job " + train_id +
                " uses GPU 0, which Slurm gave to job " + eval_id + " (root, eval)"),
            std::string::npos)
      << outside.dump();
  // Both GPUs are their jobs': busy, never free.
  EXPECT_EQ(why.exit_code, 10) << why.out;

  // A node Slurm does not know, asked by name: one line naming it, exit 20.
  RunResult unknown = RunProcess(
      Gpuwarden({"--sim", scenario_file, "status", "--slurm-node", "n9", "--json"}), options);
  EXPECT_EQ(unknown.exit_code, 20) << unknown.err;
  EXPECT_NE(unknown.err.find("gpuwarden: --slurm-node n9: Slurm has no node n9"), std::string::npos)
      << unknown.err;
  EXPECT_EQ(nlohmann::json::parse(unknown.out).at("slurm").at("unread").is_string(), true);
  // The simulated server is no Slurm node unless named one.
  RunResult unasked = RunProcess(Gpuwarden({"--sim", scenario_file, "status", "--json"}), options);
  EXPECT_EQ(unasked.exit_code, 0) << unasked.err;
  EXPECT_TRUE(nlohmann::json::parse(unasked.out).at("slurm").is_null());
}

}  // namespace
}  // namespace gw::test

namespace gw::test {
namespace {

// One allocation as sacct records it (SLURM_TIME_FORMAT=%s).
struct Accounted {
  int64_t eligible = 0, start = 0, end = 0, gpus = 0;
};

// sacct's own lines for `ids`, once every one has ended; read by the test
// itself, to check capacity's figures against.
std::map<int64_t, Accounted> AccountedJobs(const SlurmCluster& cluster,
                                           const std::vector<int64_t>& ids, std::string* seen) {
  std::string list;
  for (int64_t id : ids) list += (list.empty() ? "" : ",") + std::to_string(id);
  RunOptions o = cluster.ClientOptions();
  o.env["SLURM_TIME_FORMAT"] = "%s";
  std::map<int64_t, Accounted> jobs;
  WaitUntil(
      [&] {
        jobs.clear();
        RunResult r = RunProcess({"/usr/bin/sacct", "-X", "-n", "-P", "-j", list, "-o",
                                  "JobIDRaw,Eligible,Start,End,AllocTRES,State"},
                                 o);
        *seen = r.out + r.err;
        std::istringstream in(r.out);
        for (std::string line; std::getline(in, line);) {
          std::vector<std::string> f;
          std::istringstream fields(line);
          for (std::string x; std::getline(fields, x, '|');) f.push_back(x);
          if (f.size() != 6 || f[5] != "COMPLETED") return false;
          // slurmdbd can record the state before a time ("Unknown"): not yet.
          auto number = [](std::string_view text, int64_t& out) {
            const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
            return ec == std::errc() && end != text.data();
          };
          Accounted a;
          int64_t id = 0;
          if (!number(f[0], id) || !number(f[1], a.eligible) || !number(f[2], a.start) ||
              !number(f[3], a.end)) {
            return false;
          }
          const size_t at = f[4].find("gres/gpu=");
          if (at != std::string::npos && !number(std::string_view(f[4]).substr(at + 9), a.gpus)) {
            return false;
          }
          jobs[id] = a;
        }
        return jobs.size() == ids.size();
      },
      kJobTimeoutS, 0.2);
  return jobs;
}

// capacity --slurm on jobs that ran for real: three fill the six GPUs, a
// fourth waits for two a100. Every figure is checked against sacct's own
// lines, summed second by second here.
TEST_F(SlurmE2eTest, CapacityFromSacctCountsWaitsHeldAndSaturatedTime) {
  GW_REQUIRE_SLURM_CLUSTER(cluster);
  // The window starts a second after every earlier test's job has ended
  // (what ended or started in the second the last test stopped is behind
  // it), and this test's jobs are submitted a second later still: capacity,
  // asked up to a second later than the test measures --since, starts at
  // most a second later.
  const int64_t stopped = static_cast<int64_t>(std::time(nullptr));
  const int64_t begin = stopped + 1;
  ASSERT_TRUE(WaitUntil([&] { return std::time(nullptr) > begin; }, 5, 0.05));
  std::string error;
  std::vector<int64_t> ids;
  for (const auto& [gres, seconds] : std::vector<std::pair<std::string, std::string>>{
           {"gpu:a100:2", "4"}, {"gpu:a100:2", "4"}, {"gpu:l40s:2", "4"}, {"gpu:a100:2", "1"}}) {
    auto id = cluster.Submit({"-p", "gpu", "-N1", "--gres=" + gres}, "sleep " + seconds, &error);
    ASSERT_TRUE(id) << error;
    ids.push_back(*id);
  }
  std::string seen;
  const std::map<int64_t, Accounted> jobs = AccountedJobs(cluster, ids, &seen);
  ASSERT_EQ(jobs.size(), 4u) << seen << cluster.LogTails();

  // By hand, second by second over the jobs' span.
  std::vector<double> waits;
  int64_t held_s = 0, saturated_s = 0, saturated_waiting_s = 0;
  int64_t first = INT64_MAX, last = 0;
  for (const auto& [id, a] : jobs) {
    waits.push_back(static_cast<double>(a.start - a.eligible));
    first = std::min(first, a.eligible);
    last = std::max(last, a.end);
  }
  for (int64_t t = first; t < last; ++t) {
    int64_t held = 0;
    bool waiting = false;
    for (const auto& [id, a] : jobs) {
      if (a.start <= t && t < a.end) held += a.gpus;
      waiting = waiting || (a.eligible <= t && t < a.start);
    }
    held_s += held;
    saturated_s += held == 6 ? 1 : 0;
    saturated_waiting_s += held == 6 && waiting ? 1 : 0;
  }
  std::sort(waits.begin(), waits.end());
  EXPECT_GE(waits.back(), 2) << "the fourth job waited for two a100 to be freed";
  EXPECT_GE(saturated_s, 2) << "three jobs held all six GPUs together";

  const int64_t since = static_cast<int64_t>(std::time(nullptr)) - begin;
  RunOptions options = cluster.ClientOptions();
  RunResult r = RunProcess(
      Gpuwarden({"capacity", "--slurm", "--since", std::to_string(since) + "s", "--json"}),
      options);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json doc = nlohmann::json::parse(r.out);
  EXPECT_EQ(doc["source"], "slurm");
  EXPECT_EQ(doc["capacity_gpus"], 6);
  EXPECT_TRUE(doc["idle_held_gpu_hours"].is_null());
  EXPECT_NEAR(doc["held_gpu_hours"].get<double>() * 3600, static_cast<double>(held_s), 1e-6);
  EXPECT_NEAR(doc["saturated_hours"].get<double>() * 3600, static_cast<double>(saturated_s), 1e-6);
  EXPECT_NEAR(doc["saturated_waiting_hours"].get<double>() * 3600,
              static_cast<double>(saturated_waiting_s), 1e-6);
  EXPECT_EQ(doc["waits"]["started"], 4)
      << cluster
             .Run({"sacct", "-a", "-X", "-n", "-P", "-S", "now-" + std::to_string(since + 5), "-o",
                   "JobIDRaw,Submit,Eligible,Start,End,State,AllocTRES,ReqTRES"})
             .out;
  EXPECT_EQ(doc["waits"]["p50_s"], waits[1]);  // Nearest rank of four: 2nd, 4th, 4th.
  EXPECT_EQ(doc["waits"]["p90_s"], waits[3]);
  EXPECT_EQ(doc["waits"]["max_s"], waits[3]);
  EXPECT_EQ(doc["waits"]["still_waiting"], 0);
  ASSERT_TRUE(doc["power_saving"].is_object()) << r.out;
  EXPECT_EQ(doc["power_saving"]["resume_program"], "/etc/gpuwarden/slurm/resume");

  // The same window in text (plain seconds for --since), begun as late.
  const int64_t since_now = static_cast<int64_t>(std::time(nullptr)) - begin;
  RunResult text =
      RunProcess(Gpuwarden({"capacity", "--slurm", "--since", std::to_string(since_now)}), options);
  EXPECT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("Queue waits (4 jobs started)"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("SuspendProgram=/etc/gpuwarden/slurm/suspend"), std::string::npos)
      << text.out;

  RunResult bad = RunProcess(Gpuwarden({"capacity", "--slurm", "--since", "lately"}), options);
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("--since"), std::string::npos) << bad.err;
}

// n4's state as scontrol shows it ("IDLE+CLOUD+POWERED_DOWN"), or "" when
// Slurm does not show it.
std::string CloudNodeState(const SlurmCluster& cluster) {
  RunResult r = cluster.Run({"scontrol", "-o", "show", "node", "n4"}, 10);
  const size_t at = r.out.find("State=");
  if (r.exit_code != 0 || at == std::string::npos) return "";
  return r.out.substr(at + 6, r.out.find(' ', at) - at - 6);
}

// The shipped ResumeProgram and SuspendProgram (the templates with their
// command filled in, gpuwarden-power behind them) power the cloud node n4
// up for a job and down again once it has sat idle SuspendTime.
TEST_F(SlurmE2eTest, CloudNodeIsResumedForAJobAndSuspendedWhenIdle) {
  GW_REQUIRE_SLURM_CLUSTER(cluster);
  const auto t0 = std::chrono::steady_clock::now();
  std::string state = CloudNodeState(cluster);
  EXPECT_NE(state.find("POWERED_DOWN"), std::string::npos) << state;

  std::string error;
  auto id = cluster.Submit({"-p", "cloud", "-N1"}, "echo cloud-ok on $SLURMD_NODENAME", &error);
  ASSERT_TRUE(id) << error;
  std::set<std::string> states;
  const bool ended = WaitUntil(
      [&] {
        states.insert(CloudNodeState(cluster));
        states.insert("sinfo:" + cluster.Run({"sinfo", "-h", "-n", "n4", "-o", "%t"}).out);
        const std::string out =
            ReadFileOrEmpty(cluster.dir() + "/jobs/job-" + std::to_string(*id) + ".out");
        return out.find("cloud-ok on n4") != std::string::npos;
      },
      kJobTimeoutS, 0.1);
  ASSERT_TRUE(ended) << ReadFileOrEmpty(cluster.power_log())
                     << ReadFileOrEmpty(cluster.dir() + "/log/slurmd-n4.start").substr(0, 600)
                     << cluster.LogTails();
  auto elapsed = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  };
  std::fprintf(stderr, "[slurm] job ended at %.1f s\n", elapsed());
  bool powering_up = false;
  for (const std::string& s : states) powering_up = powering_up || s.find("POWERING_UP") != s.npos;
  EXPECT_TRUE(powering_up) << "states seen: " << ::testing::PrintToString(states);
  EXPECT_TRUE(WaitUntil([&] { return CloudNodeState(cluster) == "IDLE+CLOUD"; }, 30, 0.1))
      << CloudNodeState(cluster);

  std::fprintf(stderr, "[slurm] idle at %.1f s\n", elapsed());
  // Idle for SuspendTime: suspended, then powered down.
  states.clear();
  EXPECT_TRUE(WaitUntil(
      [&] {
        states.insert(CloudNodeState(cluster));
        return CloudNodeState(cluster).find("POWERED_DOWN") != std::string::npos;
      },
      kCloudSuspendTimeS + 40, 0.1))
      << CloudNodeState(cluster) << "\n"
      << ReadFileOrEmpty(cluster.power_log());

  const std::string log = ReadFileOrEmpty(cluster.power_log());
  EXPECT_NE(log.find("resume n4: done, exited with status 0"), std::string::npos) << log;
  EXPECT_NE(log.find("suspend n4: done, exited with status 0"), std::string::npos) << log;
  // Slurm started the resume with signals blocked; the command it ran had none.
  const std::string sigblk = ReadFileOrEmpty(cluster.resume_signals());
  EXPECT_NE(sigblk.find("SigBlk:\t0000000000000000"), std::string::npos) << sigblk;
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::fprintf(stderr, "[slurm] cloud node up, job run, node suspended in %.1f s\n", took);
}

}  // namespace
}  // namespace gw::test
