#include "slurm/slurm_json.h"

#include <fstream>
#include <sstream>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "slurm/slurm_test_util.h"

namespace gw::slurm {
namespace {

const Node* FindNode(const SinfoDocument& doc, const std::string& name) {
  for (const Node& n : doc.nodes) {
    if (n.name == name) return &n;
  }
  return nullptr;
}

const Job* FindJob(const SqueueDocument& doc, int64_t id) {
  for (const Job& j : doc.jobs) {
    if (j.id == id) return &j;
  }
  return nullptr;
}

// Sum of the counts of `name`/`type` entries.
int64_t Count(const std::vector<Gres>& list, const std::string& name, const std::string& type) {
  int64_t n = 0;
  for (const Gres& g : list) {
    if (g.name == name && g.type == type) n += g.count;
  }
  return n;
}

TEST(SlurmSinfo2205, IdleClusterHasThreeNodesAndSixGpus) {
  auto doc = ParseSinfoJson(ReadTestdata("22.05-sinfo-idle.json"));
  ASSERT_TRUE(doc) << doc.error().message;
  EXPECT_EQ(doc->meta.layout, JsonLayout::kV0038);
  EXPECT_EQ(doc->meta.data_parser, "v0.0.38");
  EXPECT_EQ(doc->meta.release, "22.05.8");
  EXPECT_EQ(doc->meta.major, 22);
  EXPECT_EQ(doc->meta.minor, 5);
  EXPECT_EQ(doc->meta.micro, 8);
  EXPECT_TRUE(doc->meta.errors.empty());
  ASSERT_EQ(doc->nodes.size(), 3u);
  for (const char* name : {"n1", "n2", "n3"}) {
    const Node* n = FindNode(*doc, name);
    ASSERT_NE(n, nullptr) << name;
    EXPECT_EQ(n->state, "IDLE") << name;
    EXPECT_TRUE(n->state_flags.empty()) << name;
    EXPECT_EQ(n->reason, std::nullopt) << name;
    EXPECT_EQ(n->cpus, 4) << name;
    EXPECT_EQ(n->alloc_cpus, 0) << name;
    EXPECT_EQ(n->partitions, std::vector<std::string>{"gpu"}) << name;
    ASSERT_TRUE(n->gres.has_value()) << name;
    ASSERT_EQ(n->gres->size(), 1u) << name;
    EXPECT_EQ((*n->gres)[0].count, 2) << name;
    EXPECT_EQ((*n->gres)[0].indexes, std::nullopt) << name;
    ASSERT_TRUE(n->gres_used.has_value()) << name;
    ASSERT_EQ(n->gres_used->size(), 1u) << name;
    EXPECT_EQ((*n->gres_used)[0].count, 0) << name;
    EXPECT_EQ((*n->gres_used)[0].indexes, std::nullopt) << name;  // "IDX:N/A"
  }
  EXPECT_EQ(Count(*FindNode(*doc, "n1")->gres, "gpu", "a100"), 2);
  EXPECT_EQ(Count(*FindNode(*doc, "n2")->gres, "gpu", "a100"), 2);
  EXPECT_EQ(Count(*FindNode(*doc, "n3")->gres, "gpu", "l40s"), 2);
}

TEST(SlurmSinfo2205, RunningJobShowsAsUsedGres) {
  auto doc = ParseSinfoJson(ReadTestdata("22.05-sinfo-one-running.json"));
  ASSERT_TRUE(doc) << doc.error().message;
  const Node* n1 = FindNode(*doc, "n1");
  ASSERT_NE(n1, nullptr);
  EXPECT_EQ(n1->state, "MIXED");
  EXPECT_EQ(n1->alloc_cpus, 1);
  ASSERT_TRUE(n1->gres_used.has_value());
  ASSERT_EQ(n1->gres_used->size(), 1u);
  EXPECT_EQ((*n1->gres_used)[0].type, "a100");
  EXPECT_EQ((*n1->gres_used)[0].count, 2);
  EXPECT_EQ((*n1->gres_used)[0].indexes, "0-1");
  EXPECT_EQ(FindNode(*doc, "n2")->state, "IDLE");
}

TEST(SlurmSinfo2205, DrainedNodeHasFlagAndReason) {
  auto doc = ParseSinfoJson(ReadTestdata("22.05-sinfo-drained.json"));
  ASSERT_TRUE(doc) << doc.error().message;
  const Node* n3 = FindNode(*doc, "n3");
  ASSERT_NE(n3, nullptr);
  EXPECT_EQ(n3->state, "IDLE");
  EXPECT_TRUE(n3->HasFlag("DRAIN"));
  EXPECT_EQ(n3->reason, "gpuwarden: GPU 1 fell off the bus");
  EXPECT_FALSE(FindNode(*doc, "n2")->HasFlag("DRAIN"));
  EXPECT_EQ(Count(*FindNode(*doc, "n2")->gres_used, "gpu", "a100"), 1);
}

TEST(SlurmSqueue2205, OneRunningJob) {
  auto doc = ParseSqueueJson(ReadTestdata("22.05-squeue-one-running.json"));
  ASSERT_TRUE(doc) << doc.error().message;
  EXPECT_EQ(doc->meta.layout, JsonLayout::kV0038);
  EXPECT_EQ(doc->meta.release, "22.05.8");
  const Job* job = FindJob(*doc, 5);
  ASSERT_NE(job, nullptr);
  EXPECT_EQ(job->state, "RUNNING");
  EXPECT_TRUE(job->state_flags.empty());
  EXPECT_EQ(job->name, "train-a100");
  EXPECT_EQ(job->user, "root");
  EXPECT_EQ(job->partition, "gpu");
  EXPECT_EQ(job->nodes, "n1");
  EXPECT_EQ(job->reason, "None");
  EXPECT_EQ(job->state_description, std::nullopt);
  ASSERT_EQ(job->gres_per_node.size(), 1u);
  EXPECT_EQ(job->gres_per_node[0].name, "gpu");
  EXPECT_EQ(job->gres_per_node[0].type, "a100");
  EXPECT_EQ(job->gres_per_node[0].count, 2);
  EXPECT_TRUE(job->gres_per_job.empty());
  ASSERT_EQ(job->gres_detail.size(), 1u);
  ASSERT_EQ(job->gres_detail[0].size(), 1u);
  EXPECT_EQ(job->gres_detail[0][0].indexes, "0-1");
  ASSERT_TRUE(job->submit_time.has_value());
  ASSERT_TRUE(job->start_time.has_value());
  EXPECT_GE(*job->start_time, *job->submit_time);
  EXPECT_TRUE(job->priority.has_value());
  // The finished jobs before it are in the document too.
  for (const Job& j : doc->jobs) {
    if (j.id != 5) {
      EXPECT_TRUE(j.state == "COMPLETED" || j.state == "CANCELLED") << j.id;
    }
  }
}

TEST(SlurmSqueue2205, PendingOnResourcesHasNoNodesYet) {
  auto doc = ParseSqueueJson(ReadTestdata("22.05-squeue-pending-resources.json"));
  ASSERT_TRUE(doc) << doc.error().message;
  const Job* job = FindJob(*doc, 7);
  ASSERT_NE(job, nullptr);
  EXPECT_EQ(job->state, "PENDING");
  EXPECT_EQ(job->reason, "Resources");
  EXPECT_EQ(job->nodes, std::nullopt);
  EXPECT_TRUE(job->gres_detail.empty());
  ASSERT_EQ(job->gres_per_node.size(), 1u);
  EXPECT_EQ(job->gres_per_node[0].count, 2);
  // Captured before backfill planned it: start_time 0, which is "not set".
  EXPECT_EQ(job->start_time, std::nullopt);
  EXPECT_TRUE(job->submit_time.has_value());
  const Job* held = FindJob(*doc, 6);
  ASSERT_NE(held, nullptr);
  EXPECT_EQ(held->nodes, "n2");
  ASSERT_EQ(held->gres_detail.size(), 1u);
  EXPECT_EQ(held->gres_detail[0][0].indexes, "0");
}

TEST(SlurmSqueue2205, FinishedJobsOnly) {
  auto doc = ParseSqueueJson(ReadTestdata("22.05-squeue-idle.json"));
  ASSERT_TRUE(doc) << doc.error().message;
  ASSERT_FALSE(doc->jobs.empty());
  for (const Job& j : doc->jobs) {
    EXPECT_TRUE(j.state == "COMPLETED" || j.state == "CANCELLED") << j.id;
    EXPECT_TRUE(j.gres_detail.empty()) << j.id;
  }
}

TEST(SlurmSinfo2302, NodeGroupsBecomeNodes) {
  auto doc = ParseSinfoJson(ReadTestdata("23.02-sinfo.json"));
  ASSERT_TRUE(doc) << doc.error().message;
  EXPECT_EQ(doc->meta.layout, JsonLayout::kV0039);
  EXPECT_EQ(doc->meta.data_parser, "v0.0.39");
  EXPECT_EQ(doc->meta.release, "23.02.0");
  EXPECT_EQ(doc->meta.minor, 2);
  ASSERT_EQ(doc->nodes.size(), 4u);
  const Node* n1 = FindNode(*doc, "n1");
  ASSERT_NE(n1, nullptr);
  EXPECT_EQ(n1->state, "MIXED");
  EXPECT_EQ(n1->cpus, 4);
  EXPECT_EQ(n1->alloc_cpus, 1);
  EXPECT_EQ(Count(*n1->gres_used, "gpu", "a100"), 2);
  // n1 is listed once per partition.
  EXPECT_EQ(n1->partitions, (std::vector<std::string>{"gpu", "debug"}));
  const Node* n3 = FindNode(*doc, "n3");
  ASSERT_NE(n3, nullptr);
  EXPECT_EQ(n3->state, "IDLE");
  EXPECT_TRUE(n3->HasFlag("DRAIN"));
  EXPECT_EQ(n3->reason, "gpuwarden: GPU 1 fell off the bus");
  // A group of two: the configured gres is each node's, the sums are not.
  for (const char* name : {"n2", "n4"}) {
    const Node* n = FindNode(*doc, name);
    ASSERT_NE(n, nullptr) << name;
    EXPECT_EQ(Count(*n->gres, "gpu", "a100"), 2) << name;
    EXPECT_EQ(n->gres_used, std::nullopt) << name;
    EXPECT_EQ(n->cpus, std::nullopt) << name;
  }
}

TEST(SlurmSqueue2302, PriorityIsAnObject) {
  auto doc = ParseSqueueJson(ReadTestdata("23.02-squeue.json"));
  ASSERT_TRUE(doc) << doc.error().message;
  EXPECT_EQ(doc->meta.layout, JsonLayout::kV0039);
  const Job* pending = FindJob(*doc, 7);
  ASSERT_NE(pending, nullptr);
  EXPECT_EQ(pending->state, "PENDING");
  EXPECT_EQ(pending->reason, "Resources");
  EXPECT_EQ(pending->priority, 4294901756);
  EXPECT_EQ(pending->submit_time, 1796241690);
}

TEST(SlurmSinfo2311, StatesAreArraysAndVersionsStrings) {
  auto doc = ParseSinfoJson(ReadTestdata("23.11-sinfo.json"));
  ASSERT_TRUE(doc) << doc.error().message;
  EXPECT_EQ(doc->meta.layout, JsonLayout::kV0040);
  EXPECT_EQ(doc->meta.data_parser, "v0.0.40");
  EXPECT_EQ(doc->meta.major, 23);
  EXPECT_EQ(doc->meta.minor, 11);
  EXPECT_EQ(doc->meta.micro, 0);
  const Node* n3 = FindNode(*doc, "n3");
  ASSERT_NE(n3, nullptr);
  EXPECT_EQ(n3->state, "DOWN");
  EXPECT_TRUE(n3->HasFlag("NOT_RESPONDING"));
  EXPECT_EQ(n3->reason, "Not responding");
  EXPECT_EQ((*FindNode(*doc, "n1")->gres_used)[0].indexes, "1");
}

TEST(SlurmSqueue2311, JobStateArraysAndTimeObjects) {
  auto doc = ParseSqueueJson(ReadTestdata("23.11-squeue.json"));
  ASSERT_TRUE(doc) << doc.error().message;
  EXPECT_EQ(doc->meta.layout, JsonLayout::kV0040);
  const Job* running = FindJob(*doc, 5);
  ASSERT_NE(running, nullptr);
  EXPECT_EQ(running->state, "RUNNING");
  EXPECT_EQ(running->start_time, 1796241681);
  EXPECT_EQ(running->priority, 1000);
  ASSERT_EQ(running->gres_per_node.size(), 1u);
  EXPECT_EQ(running->gres_per_node[0].type, "a100");  // "gres/gpu:a100:1"
  const Job* requeued = FindJob(*doc, 8);
  ASSERT_NE(requeued, nullptr);
  EXPECT_EQ(requeued->state, "PENDING");
  EXPECT_EQ(requeued->state_flags, std::vector<std::string>{"REQUEUED"});
  EXPECT_EQ(requeued->reason, "BeginTime");
  EXPECT_EQ(requeued->priority, std::nullopt);    // set: false
  EXPECT_EQ(requeued->start_time, std::nullopt);  // set: false
  EXPECT_TRUE(requeued->gres_per_node.empty());
  ASSERT_EQ(requeued->gres_per_job.size(), 1u);
  EXPECT_EQ(requeued->gres_per_job[0].type, std::nullopt);
  EXPECT_EQ(requeued->gres_per_job[0].count, 3);
}

// A captured document with one field replaced, as text.
std::string Edited(const std::string& file, const std::string& list, const std::string& key,
                   const nlohmann::json& value) {
  nlohmann::json doc = nlohmann::json::parse(ReadTestdata(file));
  if (value.is_discarded()) {
    doc[list][0].erase(key);
  } else {
    doc[list][0][key] = value;
  }
  return doc.dump();
}

TEST(SlurmJsonDefensive, WrongTypesAreErrorsNamingTheField) {
  struct Case {
    std::string key;
    nlohmann::json value;
    std::string path;
  };
  for (const Case& c :
       std::vector<Case>{{"priority", "high", "jobs[0].priority"},
                         {"job_id", -1.5, "jobs[0].job_id"},
                         {"tres_per_node", 2, "jobs[0].tres_per_node"},
                         {"tres_per_node", "gres:gpu:a100:x", "jobs[0].tres_per_node"},
                         {"gres_detail", "gpu:2", "jobs[0].gres_detail"},
                         {"job_state", 3, "jobs[0].job_state"},
                         {"submit_time", {{"set", "yes"}}, "jobs[0].submit_time.set"},
                         {"user_name", nlohmann::json::array(), "jobs[0].user_name"}}) {
    auto doc = ParseSqueueJson(Edited("22.05-squeue-one-running.json", "jobs", c.key, c.value));
    ASSERT_FALSE(doc) << c.key;
    EXPECT_EQ(doc.error().code, "malformed");
    EXPECT_EQ(doc.error().message.rfind(c.path + ":", 0), 0u) << doc.error().message;
  }
  for (const Case& c : std::vector<Case>{{"gres", 2, "nodes[0].gres"},
                                         {"gres_used", "gpu:a100:2(IDX:0", "nodes[0].gres_used"},
                                         {"state_flags", "DRAIN", "nodes[0].state_flags"},
                                         {"cpus", "4", "nodes[0].cpus"},
                                         {"name", "", "nodes[0].name"}}) {
    auto doc = ParseSinfoJson(Edited("22.05-sinfo-idle.json", "nodes", c.key, c.value));
    ASSERT_FALSE(doc) << c.key;
    EXPECT_EQ(doc.error().message.rfind(c.path + ":", 0), 0u) << doc.error().message;
  }
}

// A version written as text that is not a number is quoted sanitised: the
// error stays one line whatever the text holds (found by fuzz_slurm_json).
TEST(SlurmJsonDefensive, AVersionThatIsNotANumberIsQuotedOnOneLine) {
  auto doc = ParseSinfoJson(
      R"({"meta": {"slurm": {"version": {"major": "23\n\u001b[2J", "minor": 2}}}, "nodes": []})");
  ASSERT_FALSE(doc);
  EXPECT_EQ(doc.error().code, "malformed");
  EXPECT_EQ(doc.error().message,
            "meta.slurm.version.major: expected a number, got \"23\\n\\x1b[2J\"");
}

TEST(SlurmJsonDefensive, MissingFieldsAreUnknown) {
  const nlohmann::json erase = nlohmann::json(nlohmann::json::value_t::discarded);
  for (const char* key : {"priority", "start_time", "user_name", "tres_per_node", "gres_detail",
                          "job_state", "state_reason"}) {
    auto doc = ParseSqueueJson(Edited("22.05-squeue-one-running.json", "jobs", key, erase));
    ASSERT_TRUE(doc) << key << ": " << doc.error().message;
    const Job& job = doc->jobs[0];
    if (std::string(key) == "priority") {
      EXPECT_EQ(job.priority, std::nullopt);
    }
    if (std::string(key) == "start_time") {
      EXPECT_EQ(job.start_time, std::nullopt);
    }
    if (std::string(key) == "user_name") {
      EXPECT_EQ(job.user, std::nullopt);
    }
    if (std::string(key) == "tres_per_node") {
      EXPECT_TRUE(job.gres_per_node.empty());
    }
    if (std::string(key) == "job_state") {
      EXPECT_EQ(job.state, std::nullopt);
    }
    if (std::string(key) == "state_reason") {
      EXPECT_EQ(job.reason, std::nullopt);
    }
  }
  for (const char* key : {"gres", "gres_used", "cpus", "state", "reason"}) {
    auto doc = ParseSinfoJson(Edited("22.05-sinfo-idle.json", "nodes", key, nullptr));
    ASSERT_TRUE(doc) << key << ": " << doc.error().message;
    const Node& node = doc->nodes[0];
    if (std::string(key) == "gres") {
      EXPECT_EQ(node.gres, std::nullopt);
    }
    if (std::string(key) == "gres_used") {
      EXPECT_EQ(node.gres_used, std::nullopt);
    }
    if (std::string(key) == "cpus") {
      EXPECT_EQ(node.cpus, std::nullopt);
    }
    if (std::string(key) == "state") {
      EXPECT_EQ(node.state, std::nullopt);
    }
  }
  // A job without its id, a node without its name: errors, not unknowns.
  auto no_id = ParseSqueueJson(Edited("22.05-squeue-one-running.json", "jobs", "job_id", erase));
  ASSERT_FALSE(no_id);
  EXPECT_EQ(no_id.error().message, "jobs[0].job_id: missing");
}

TEST(SlurmJsonDefensive, NotADocument) {
  for (const char* text : {"", "not json", "[1, 2]", "{\"nodes\": 3}", "{}", "{\"nodes\": [4]}",
                           "{\"meta\": 1, \"nodes\": []}"}) {
    EXPECT_FALSE(ParseSinfoJson(text)) << text;
  }
  EXPECT_FALSE(ParseSqueueJson("{\"jobs\": {}}"));
  EXPECT_FALSE(
      ParseSqueueJson("{\"meta\": {\"Slurm\": {\"version\": {\"major\": \"x\"}}}, "
                      "\"jobs\": []}"));
  auto invalid_utf8 = ParseSqueueJson("{\"jobs\": [], \"errors\": [\"\xff\"]}");
  EXPECT_FALSE(invalid_utf8);
}

TEST(SlurmJsonLayout, ChosenByPluginThenReleaseThenShape) {
  // The meta's data_parser wins; a later one is read as v0.0.40.
  auto v41 = ParseSqueueJson(
      R"({"meta": {"plugin": {"data_parser": "data_parser/v0.0.41"}}, "jobs": []})");
  ASSERT_TRUE(v41) << v41.error().message;
  EXPECT_EQ(v41->meta.data_parser, "v0.0.41");
  EXPECT_EQ(v41->meta.layout, JsonLayout::kV0040);
  // No plugin: the release.
  auto by_release = ParseSinfoJson(
      R"({"meta": {"Slurm": {"version": {"major": 23, "minor": 2, "micro": 7}}}, "sinfo": []})");
  ASSERT_TRUE(by_release) << by_release.error().message;
  EXPECT_EQ(by_release->meta.layout, JsonLayout::kV0039);
  EXPECT_EQ(by_release->meta.data_parser, std::nullopt);
  // No meta: the shape.
  auto by_shape = ParseSinfoJson(R"({"sinfo": [{"nodes": {"nodes": ["a"]}}]})");
  ASSERT_TRUE(by_shape) << by_shape.error().message;
  EXPECT_EQ(by_shape->meta.layout, JsonLayout::kV0039);
  ASSERT_EQ(by_shape->nodes.size(), 1u);
  EXPECT_EQ(by_shape->nodes[0].name, "a");
  EXPECT_EQ(by_shape->nodes[0].state, std::nullopt);
  // A 22.05 document read as 22.05 has no "sinfo".
  EXPECT_FALSE(ParseSinfoJson(R"({"meta": {"plugin": {"type": "openapi/v0.0.38"}}, "sinfo": []})"));
  // The document's own errors are kept.
  auto with_errors = ParseSqueueJson(
      R"({"jobs": [], "errors": [{"error": "Invalid user", "error_number": 2}, {"description": "no such partition"}]})");
  ASSERT_TRUE(with_errors) << with_errors.error().message;
  EXPECT_EQ(with_errors->meta.errors,
            (std::vector<std::string>{"Invalid user", "no such partition"}));
}

TEST(SlurmGres, ParsesSinfoForms) {
  auto list = ParseGresList("gpu:a100:2(IDX:0-1),gpu:l40s:1(S:0),shard:4K,gpu:tesla,gpu:3");
  ASSERT_TRUE(list) << list.error().message;
  ASSERT_EQ(list->size(), 5u);
  EXPECT_EQ((*list)[0].name, "gpu");
  EXPECT_EQ((*list)[0].type, "a100");
  EXPECT_EQ((*list)[0].count, 2);
  EXPECT_EQ((*list)[0].indexes, "0-1");
  EXPECT_EQ((*list)[1].type, "l40s");
  EXPECT_EQ((*list)[1].indexes, std::nullopt);
  EXPECT_EQ((*list)[2].name, "shard");
  EXPECT_EQ((*list)[2].type, std::nullopt);
  EXPECT_EQ((*list)[2].count, 4096);
  EXPECT_EQ((*list)[3].type, "tesla");
  EXPECT_EQ((*list)[3].count, 1);
  EXPECT_EQ((*list)[4].type, std::nullopt);
  EXPECT_EQ((*list)[4].count, 3);

  auto with_commas = ParseGresList("gpu:a100:2(S:0-1,IDX:0,2),gpu:a100:0(IDX:N/A)");
  ASSERT_TRUE(with_commas) << with_commas.error().message;
  ASSERT_EQ(with_commas->size(), 2u);
  EXPECT_EQ((*with_commas)[0].indexes, "0,2");
  EXPECT_EQ((*with_commas)[1].indexes, std::nullopt);

  for (const char* empty : {"", "N/A", "(null)", "  "}) {
    auto e = ParseGresList(empty);
    ASSERT_TRUE(e) << empty;
    EXPECT_TRUE(e->empty()) << empty;
  }
  for (const char* bad : {"gpu:a100:x2", "gpu:a100:2(IDX:0", ":2", "gpu::2", "gpu:a:b:c",
                          "gpu:a100:99999999999999999999"}) {
    EXPECT_FALSE(ParseGresList(bad)) << bad;
  }
}

TEST(SlurmGres, ParsesRequests) {
  auto r = ParseGresRequests("cpu=2,gres:gpu:a100:2,gres/shard:1,license/matlab=1");
  ASSERT_TRUE(r) << r.error().message;
  ASSERT_EQ(r->size(), 2u);
  EXPECT_EQ((*r)[0].name, "gpu");
  EXPECT_EQ((*r)[0].type, "a100");
  EXPECT_EQ((*r)[0].count, 2);
  EXPECT_EQ((*r)[1].name, "shard");
  EXPECT_EQ((*r)[1].count, 1);
  auto untyped = ParseGresRequests("gres/gpu:2");
  ASSERT_TRUE(untyped);
  ASSERT_EQ(untyped->size(), 1u);
  EXPECT_EQ((*untyped)[0].type, std::nullopt);
  auto none = ParseGresRequests("");
  ASSERT_TRUE(none);
  EXPECT_TRUE(none->empty());
  EXPECT_FALSE(ParseGresRequests("gres:gpu:a100:zz"));
}

}  // namespace
}  // namespace gw::slurm
