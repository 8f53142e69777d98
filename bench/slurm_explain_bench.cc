// slurm_explain_bench: how long `gpuwarden why --slurm` takes on a large
// cluster once Slurm has answered: parsing `sinfo --json` and `squeue --json`,
// the cluster view, and the explanation of every pending job, rendered.
// Target: under 1 s for 10,000 pending jobs on 1,000 nodes.
//
// The cluster is synthetic, in Slurm 22.05's JSON (openapi/v0.0.38): 1,000
// nodes of 8 GPUs (a100, h100, l40s), most of them partly allocated, 2 % drained;
// 5,000 running jobs of 1-8 GPUs; 10,000 pending jobs whose reasons are
// spread as on a busy cluster (Resources, Priority, QOS limits, BeginTime,
// ReqNodeNotAvail, JobHeldUser, Dependency). Beside them, what why --slurm
// also reads for those reasons: sprio's factors of every pending job and the
// association manager's QOS with each user's usage.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <ctime>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "lcg.h"
#include "render/slurm_why.h"
#include "slurm/assoc_mgr.h"
#include "slurm/cluster_view.h"
#include "slurm/pending_explain.h"
#include "slurm/slurm_json.h"
#include "slurm/sprio.h"

namespace {

using nlohmann::json;

constexpr int kNodes = 1000;
constexpr int kGpusPerNode = 8;
constexpr int kRunning = 5000;
constexpr int kPending = 10000;
constexpr int64_t kNow = 1'800'000'000;

using gw::bench::Lcg;

const char* const kTypes[] = {"a100", "h100", "l40s"};
const char* const kUsers[] = {"alice", "bob", "carol", "dave", "erin", "frank", "grace", "heidi"};

json Meta() {
  return {{"plugin", {{"type", "openapi/v0.0.38"}, {"name", "Slurm OpenAPI v0.0.38"}}},
          {"Slurm",
           {{"version", {{"major", 22}, {"micro", 8}, {"minor", 5}}}, {"release", "22.05.8"}}}};
}

std::string NodeName(int i) {
  std::string n = std::to_string(i);
  return "gpu" + std::string(4 - n.size(), '0') + n;
}

struct Cluster {
  std::string sinfo;
  std::string squeue;
  std::string sprio;      // sprio -h -o kSprioFormat
  std::string assoc_mgr;  // scontrol -o show assoc_mgr flags=assoc,qos
};

Cluster Generate() {
  Lcg rng(42);
  std::vector<int> used(kNodes, 0);
  std::string sprio;
  json jobs = json::array();
  for (int j = 0; j < kRunning; ++j) {
    const int node = static_cast<int>(rng.Next(kNodes));
    const int want = 1 + static_cast<int>(rng.Next(4));
    if (used[node] + want > kGpusPerNode) continue;
    const std::string type = kTypes[node % 3];
    std::string idx = std::to_string(used[node]);
    if (want > 1) idx += "-" + std::to_string(used[node] + want - 1);
    used[node] += want;
    jobs.push_back(
        {{"job_id", j + 1},
         {"name", "train"},
         {"user_name", kUsers[rng.Next(8)]},
         {"job_state", "RUNNING"},
         {"state_reason", "None"},
         {"partition", "gpu"},
         {"qos", "gpu8"},
         {"account", "lab"},
         {"nodes", NodeName(node)},
         {"node_count", 1},
         {"tres_per_node", "gres:gpu:" + type + ":" + std::to_string(want)},
         {"gres_detail", {"gpu:" + type + ":" + std::to_string(want) + "(IDX:" + idx + ")"}},
         {"start_time", kNow - 60 * static_cast<int64_t>(rng.Next(6000))},
         {"priority", 1000 + rng.Next(1000)}});
  }
  const char* const kReasons[] = {"Resources",       "Resources",         "Resources",
                                  "Resources",       "Priority",          "Priority",
                                  "Priority",        "QOSMaxGRESPerUser", "BeginTime",
                                  "ReqNodeNotAvail", "JobHeldUser",       "Dependency"};
  for (int j = 0; j < kPending; ++j) {
    const std::string type = kTypes[rng.Next(3)];
    const int want = 1 + static_cast<int>(rng.Next(8));
    json job = {{"job_id", kRunning + j + 1},
                {"name", "sweep-" + std::to_string(j)},
                {"user_name", kUsers[rng.Next(8)]},
                {"job_state", "PENDING"},
                {"state_reason", kReasons[rng.Next(12)]},
                {"partition", "gpu"},
                {"qos", "gpu8"},
                {"account", "lab"},
                {"nodes", ""},
                {"node_count", 1 + (rng.Next(10) == 0 ? 1 : 0)},
                {"tres_per_node", "gres:gpu:" + type + ":" + std::to_string(want)},
                {"gres_detail", json::array()},
                {"submit_time", kNow - 60},
                {"start_time", kNow + 3600 * static_cast<int64_t>(1 + rng.Next(48))},
                {"priority", 100 + rng.Next(5000)}};
    const int64_t priority = job["priority"].get<int64_t>();
    sprio += std::to_string(kRunning + j + 1) + "|" + job["user_name"].get<std::string>() +
             "|gpu|" + std::to_string(priority) + "|0|" + std::to_string(priority % 100) +
             "|0|0|0|100|" + std::to_string(priority - 100 - priority % 100) + "|0|\n";
    jobs.push_back(std::move(job));
  }
  std::string assoc_mgr =
      "Current Association Manager state\nAssociation Records\n"
      "ClusterName=c Account=root UserName= Partition= Priority=0 ID=1 ParentAccount= "
      "GrpJobs=N(5000) GrpTRES=cpu=N(40000),gres/gpu=N(12000) MaxJobs= MaxTRESPJ=\n"
      "ClusterName=c Account=lab UserName= Partition= Priority=0 ID=2 ParentAccount=root(1) "
      "GrpJobs=N(5000) GrpTRES=cpu=N(40000),gres/gpu=N(12000) MaxJobs= MaxTRESPJ=\n";
  std::string qos_users;
  for (int u = 0; u < 8; ++u) {
    assoc_mgr += "ClusterName=c Account=lab UserName=" + std::string(kUsers[u]) + "(" +
                 std::to_string(1000 + u) + ") Partition= Priority=0 ID=" + std::to_string(3 + u) +
                 " ParentAccount= GrpJobs=N(600) GrpTRES=cpu=N(5000),gres/gpu=N(1500)\n";
    qos_users += " " + std::to_string(1000 + u) +
                 "={MaxJobsPU=N(600) MaxTRESPU=cpu=N(5000),mem=N(0),gres/gpu=1500(1500)}";
  }
  assoc_mgr +=
      "QOS Records\nQOS=gpu8(2) UsageRaw=1.0 GrpJobs=N(5000) "
      "GrpTRES=cpu=N(40000),gres/gpu=N(12000) MaxWallPJ= MaxTRESPJ= MaxTRESPN= "
      "Account Limits= lab={MaxJobsPA=N(5000) MaxTRESPA=gres/gpu=N(12000)} "
      "User Limits=" +
      qos_users + "\n";
  json nodes = json::array();
  for (int i = 0; i < kNodes; ++i) {
    const std::string type = kTypes[i % 3];
    const bool drained = rng.Next(50) == 0;
    nodes.push_back({{"name", NodeName(i)},
                     {"state", used[i] == 0              ? "idle"
                               : used[i] == kGpusPerNode ? "allocated"
                                                         : "mixed"},
                     {"state_flags", drained ? json::array({"DRAIN"}) : json::array()},
                     {"reason", drained ? "gpuwarden: GPU 3 FAULT: fell off the bus (Xid 79)" : ""},
                     {"gres", "gpu:" + type + ":" + std::to_string(kGpusPerNode)},
                     {"gres_used", "gpu:" + type + ":" + std::to_string(used[i]) + "(IDX:N/A)"},
                     {"cpus", 64},
                     {"alloc_cpus", used[i] * 8},
                     {"partitions", {"gpu"}}});
  }
  return {json{{"meta", Meta()}, {"nodes", nodes}, {"errors", json::array()}}.dump(),
          json{{"meta", Meta()}, {"jobs", jobs}, {"errors", json::array()}}.dump(), sprio,
          assoc_mgr};
}

const Cluster& TheCluster() {
  static const Cluster kCluster = Generate();
  return kCluster;
}

// The whole of `why --slurm` after Slurm answered, for every pending job.
void BM_ExplainEveryPendingJob(benchmark::State& state) {
  const Cluster& c = TheCluster();
  size_t explained = 0;
  size_t bytes = 0;
  for (auto _ : state) {
    auto sinfo = gw::slurm::ParseSinfoJson(c.sinfo);
    auto squeue = gw::slurm::ParseSqueueJson(c.squeue);
    auto priorities = gw::slurm::ParseSprio(c.sprio);
    auto limits = gw::slurm::ParseAssocMgr(c.assoc_mgr);
    if (!sinfo.ok() || !squeue.ok() || !priorities.ok() || !limits.ok()) {
      state.SkipWithError("the synthetic documents did not parse");
      return;
    }
    const gw::slurm::ClusterView view = gw::slurm::BuildClusterView(*sinfo, *squeue);
    gw::slurm::WaitContext context;
    context.priorities = &*priorities;
    context.limits = &*limits;
    const gw::slurm::PendingExplainer explainer(view, squeue->jobs, context);
    std::vector<gw::slurm::PendingExplanation> all;
    for (const gw::slurm::Job& j : squeue->jobs) {
      if (j.state == "PENDING") all.push_back(explainer.Explain(j, kNow));
    }
    const std::string text = gw::render::RenderSlurmWhyText(all, kNow);
    explained = all.size();
    bytes = text.size();
    benchmark::DoNotOptimize(text.data());
  }
  state.counters["pending_jobs"] = static_cast<double>(explained);
  state.counters["text_MB"] = static_cast<double>(bytes) / 1e6;
  state.counters["sinfo_MB"] = static_cast<double>(c.sinfo.size()) / 1e6;
  state.counters["squeue_MB"] = static_cast<double>(c.squeue.size()) / 1e6;
  state.counters["sprio_MB"] = static_cast<double>(c.sprio.size()) / 1e6;
}
BENCHMARK(BM_ExplainEveryPendingJob)->Unit(benchmark::kMillisecond)->MinTime(2.0);

// The parts: parsing alone, and the explanations alone.
void BM_ParseOnly(benchmark::State& state) {
  const Cluster& c = TheCluster();
  for (auto _ : state) {
    auto sinfo = gw::slurm::ParseSinfoJson(c.sinfo);
    auto squeue = gw::slurm::ParseSqueueJson(c.squeue);
    benchmark::DoNotOptimize(sinfo.ok() && squeue.ok());
  }
}
BENCHMARK(BM_ParseOnly)->Unit(benchmark::kMillisecond)->MinTime(2.0);

void BM_ExplainOnly(benchmark::State& state) {
  const Cluster& c = TheCluster();
  auto sinfo = gw::slurm::ParseSinfoJson(c.sinfo);
  auto squeue = gw::slurm::ParseSqueueJson(c.squeue);
  if (!sinfo.ok() || !squeue.ok()) {
    state.SkipWithError("the synthetic documents did not parse");
    return;
  }
  for (auto _ : state) {
    const gw::slurm::ClusterView view = gw::slurm::BuildClusterView(*sinfo, *squeue);
    const gw::slurm::PendingExplainer explainer(view, squeue->jobs);
    size_t n = 0;
    for (const gw::slurm::Job& j : squeue->jobs) {
      if (j.state != "PENDING") continue;
      n += explainer.Explain(j, kNow).evidence.size();
    }
    benchmark::DoNotOptimize(n);
  }
}
BENCHMARK(BM_ExplainOnly)->Unit(benchmark::kMillisecond)->MinTime(2.0);

}  // namespace

BENCHMARK_MAIN();
