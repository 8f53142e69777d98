// One answer: `gpuwarden why --need NxSIZE[+nvlink]` (diagnose::Diagnose with
// options.need) and the queue (one job `--gpus N --vram SIZE [--nvlink]`
// scheduled on the same GPUs, as gpuwardend builds them with GpuStatesOf())
// must agree on a table of GPU states: it fits now on the same GPUs, it
// waits, it is blocked by GPUs that cannot take work, it cannot be checked
// (NVLink with an unknown topology), or it never fits. Each row also states
// the answer expected, so that the two cannot agree on a wrong one.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <string>
#include <vector>

#include "core/units.h"
#include "diagnose/health.h"
#include "diagnose/placement.h"
#include "diagnose/test_util.h"
#include "diagnose/verdict.h"
#include "queue/policy.h"

namespace gw {
namespace {

using namespace diagnose::fixtures;  // NOLINT

// The answer, in words both sides can give.
struct Answer {
  std::string kind;            // "fits", "waits", "blocked", "unknown", "never".
  std::vector<unsigned> gpus;  // "fits": ascending.
  bool operator==(const Answer&) const = default;
};

std::ostream& operator<<(std::ostream& os, const Answer& a) {
  os << a.kind;
  if (!a.gpus.empty()) {
    os << " on";
    for (unsigned g : a.gpus) os << " " << g;
  }
  return os;
}

Answer Fits(std::vector<unsigned> gpus) { return {"fits", std::move(gpus)}; }
const Answer kWaits{"waits", {}};
const Answer kBlocked{"blocked", {}};
const Answer kUnknown{"unknown", {}};
const Answer kNever{"never", {}};

bool HasEvidence(const diagnose::Finding& f, std::string_view key) {
  return std::any_of(f.evidence.begin(), f.evidence.end(),
                     [&](const diagnose::Evidence& e) { return e.name == key; });
}

// `why --need`: the NEED_* finding of the whole diagnosis.
Answer WhyAnswer(const Snapshot& s, const diagnose::NeedRequest& need,
                 const diagnose::PlacementHealth& health = {}) {
  diagnose::DiagnoseOptions o;
  o.need = need;
  o.placement = health;
  const diagnose::Diagnosis d = diagnose::Diagnose(std::span<const Snapshot>(&s, 1), o);
  std::vector<Answer> answers;
  for (const diagnose::Finding& f : d.findings) {
    if (f.code == "NEED_FITS") {
      std::vector<unsigned> gpus = f.gpus;
      std::sort(gpus.begin(), gpus.end());
      answers.push_back(Fits(gpus));
    } else if (f.code == "FRAGMENTED" ||
               (f.code == "NEED_UNSATISFIABLE" && !HasEvidence(f, "unusable_gpus"))) {
      answers.push_back(kWaits);
    } else if (f.code == "NEED_UNSATISFIABLE" || f.code == "NEED_UNCHECKED") {
      answers.push_back(HasEvidence(f, "unusable_gpus") ? kBlocked : kUnknown);
    } else if (f.code == "NEED_EXCEEDS_SERVER") {
      answers.push_back(kNever);
    }
  }
  if (answers.size() != 1) return {"no single answer (" + std::to_string(answers.size()) + ")", {}};
  return answers.front();
}

// The queue: one job, on the GPUs gpuwardend would pass (health from the
// same diagnosis, without a need, under the same [placement] settings, as
// JobTable::ApplyDiagnosis builds them).
Answer QueueAnswer(const Snapshot& s, const diagnose::NeedRequest& need,
                   const diagnose::PlacementHealth& health = {}) {
  diagnose::DiagnoseOptions o;
  o.placement = health;
  const diagnose::Diagnosis d = diagnose::Diagnose(std::span<const Snapshot>(&s, 1), o);
  queue::QueueView view;
  view.now_unix_ms = s.time_unix_ms;
  view.minute_of_day = 600;
  view.gpus = queue::GpuStatesOf(s, diagnose::UnhealthyGpus(d.findings, health), {}, {},
                                 diagnose::ResetPendingGpus(d.findings, health));
  view.topology = s.topology;
  queue::Job job;
  job.id = 1;
  job.owner.uid = 1000;
  job.owner.user = "alice";
  job.spec.argv = {"python", "train.py"};
  job.spec.gpus = need.gpus;
  job.spec.vram_bytes = need.bytes_per_gpu;
  job.spec.nvlink = need.nvlink;
  job.submit_unix_ms = s.time_unix_ms;
  view.waiting = {&job};
  const queue::Decisions decisions = queue::Schedule(view);
  if (!decisions.start.empty()) return Fits(decisions.start.front().gpus);
  const queue::WaitReason* r = queue::FindWaiting(decisions, 1);
  if (r == nullptr) return {"lost", {}};
  if (r->code == "resources") return kWaits;
  if (r->code == "unhealthy") return kBlocked;
  if (r->code == "topology_unknown") return kUnknown;
  if (r->code == "never_fits") return kNever;
  return {"code " + r->code, {}};
}

// Eight 80 GiB GPUs in every state placement distinguishes:
//   0 idle (0 %), the most room;   1 20 GiB used, utilisation unknown;
//   2 30 GiB used at 30 %;         3 MIG on;
//   4 compute mode PROHIBITED;     5 EXCLUSIVE_PROCESS, a process on it;
//   6 uncorrectable ECC errors (unhealthy);  7 unreachable (memory unknown).
// PCIe: pairs 0-1, 2-3, 4-5, 6-7 behind one switch, others across CPUs.
// NVLink: 0, 1 and 2 all joined; no other link.
Snapshot Mixed() {
  Snapshot s = HealthyServer(8);
  s.topology.clear();
  for (unsigned a = 0; a < 8; ++a) {
    for (unsigned b = a + 1; b < 8; ++b) {
      const bool nvlink = a < 3 && b < 3;
      s.topology.push_back({a, b, a / 2 == b / 2 ? TopologyLevel::kSingle : TopologyLevel::kSystem,
                            nvlink ? 12u : 0u});
    }
  }
  AddProcess(s, {.pid = 101, .gpu = 1, .bytes = 20 * kGiB});
  GpuAt(s, 1)->utilization_gpu_pct.reset();
  AddProcess(s, {.pid = 102, .gpu = 2, .bytes = 30 * kGiB});
  SetLoad(s, 2, 30);
  GpuAt(s, 3)->mig_mode_current = true;
  GpuAt(s, 4)->compute_mode = ComputeMode::kProhibited;
  GpuAt(s, 5)->compute_mode = ComputeMode::kExclusiveProcess;
  AddProcess(s, {.pid = 105, .gpu = 5, .bytes = 10 * kGiB});
  SetLoad(s, 5, 40);
  GpuAt(s, 6)->ecc.volatile_uncorrected = 2;
  Gpu& lost = *GpuAt(s, 7);
  lost.unreachable = ProbeError{"nvml", "gpu_lost", "GPU is lost", 7u, 15};
  lost.memory = MemoryInfo{};
  lost.utilization_gpu_pct.reset();
  return s;
}

struct Row {
  std::string name;
  std::function<Snapshot()> server;
  std::string need;
  Answer want;
};

std::vector<Row> Table() {
  auto mixed = [] { return Mixed(); };
  auto no_topology = [] {
    Snapshot s = Mixed();
    s.topology.clear();
    return s;
  };
  return {
      // The mixed server.
      {"one GPU: the idle one", mixed, "10G", Fits({0})},
      {"two GPUs: behind one switch before the less busy pair", mixed, "2x10G", Fits({0, 1})},
      {"every eligible GPU", mixed, "3x10G", Fits({0, 1, 2})},
      {"the fourth would be the EXCLUSIVE GPU, taken: waits", mixed, "4x10G", kWaits},
      {"five need a hard-blocked GPU", mixed, "5x10G", kBlocked},
      {"more GPUs than the server has", mixed, "9x10G", kNever},
      {"room on one GPU, not on two", mixed, "2x50G", Fits({0, 1})},
      {"room only on one", mixed, "2x60G", kWaits},
      {"the margin does not fit beside it now", mixed, "79G", kWaits},
      // GPU 7's size is unknown: it might be big enough, so not "never".
      {"the whole GPU and the margin: only the unreadable GPU might hold it", mixed, "80G",
       kBlocked},
      {"the margin never fits beside the whole GPU", [] { return HealthyServer(2); }, "80G",
       kNever},
      {"NVLink pair, least busy first", mixed, "2x10G+nvlink", Fits({0, 2})},
      {"NVLink triangle", mixed, "3x10G+nvlink", Fits({0, 1, 2})},
      {"no four GPUs joined by NVLink", mixed, "4x10G+nvlink", kNever},
      {"NVLink pair with room on both", mixed, "2x50G+nvlink", Fits({0, 1})},
      // The same server, topology unknown.
      {"no topology: the two most preferred", no_topology, "2x10G", Fits({0, 2})},
      {"no topology: NVLink cannot be checked", no_topology, "2x10G+nvlink", kUnknown},
      {"no topology: one GPU needs no NVLink", no_topology, "10G+nvlink", Fits({0})},
      {"no topology: too many is certain", no_topology, "9x10G+nvlink", kNever},
      // Unknown values.
      {"unknown utilisation counts as busiest",
       [] {
         Snapshot s = HealthyServer(2);
         GpuAt(s, 0)->utilization_gpu_pct.reset();
         SetLoad(s, 1, 100);
         return s;
       },
       "10G", Fits({1})},
      {"free unknown, used known (an offline dump): total - used - reserved",
       [] {
         Snapshot s = HealthyServer(1);
         GpuAt(s, 0)->memory.free_bytes.reset();
         *GpuAt(s, 0)->memory.used_bytes = 30 * kGiB;
         return s;
       },
       "49G", Fits({0})},
      {"no memory data at all: blocked by unreadable GPUs",
       [] {
         Snapshot s = HealthyServer(2);
         for (Gpu& g : s.gpus) g.memory = MemoryInfo{};
         return s;
       },
       "10G", kBlocked},
      {"total unknown on one GPU: not never",
       [] {
         Snapshot s = HealthyServer(2);
         GpuAt(s, 1)->memory = MemoryInfo{};
         return s;
       },
       "2x10G", kBlocked},
      {"an allocation between NVML's two reads is not free",
       [] {
         Snapshot s = HealthyServer(1);
         AddProcess(s, {.pid = 100, .gpu = 0, .bytes = 40 * kGiB, .add_memory = false});
         return s;
       },
       "50G", kWaits},
      {"EXCLUSIVE_PROCESS without a process takes work",
       [] {
         Snapshot s = HealthyServer(1);
         GpuAt(s, 0)->compute_mode = ComputeMode::kExclusiveProcess;
         return s;
       },
       "10G", Fits({0})},
      {"a display server does not take an EXCLUSIVE GPU",
       [] {
         Snapshot s = HealthyServer(1);
         GpuAt(s, 0)->compute_mode = ComputeMode::kExclusiveProcess;
         AddProcess(s, {.pid = 100, .gpu = 0, .bytes = kGiB});
         GpuAt(s, 0)->processes.back().type = GpuProcessType::kGraphics;
         return s;
       },
       "10G", Fits({0})},
      {"full GPUs: waits",
       [] {
         Snapshot s = HealthyServer(2);
         AddProcess(s, {.pid = 100, .gpu = 0, .bytes = 75 * kGiB});
         AddProcess(s, {.pid = 101, .gpu = 1, .bytes = 75 * kGiB});
         SetLoad(s, 0, 95);
         SetLoad(s, 1, 95);
         return s;
       },
       "10G", kWaits},
      {"smaller GPUs never hold it",
       [] {
         Snapshot s = HealthyServer(2);
         for (Gpu& g : s.gpus) {
           g.memory.total_bytes = 24 * kGiB;
           g.memory.free_bytes = 24 * kGiB - 513 * kMiB;
         }
         return s;
       },
       "2x24G", kNever},
  };
}

TEST(PlacementCrossTest, WhyNeedAndTheQueueGiveOneAnswer) {
  for (const Row& row : Table()) {
    SCOPED_TRACE(row.name + " (" + row.need + ")");
    const Result<diagnose::NeedRequest> need = diagnose::ParseNeed(row.need);
    ASSERT_TRUE(need.ok());
    const Snapshot s = row.server();
    const Answer why = WhyAnswer(s, *need);
    const Answer queue = QueueAnswer(s, *need);
    EXPECT_EQ(why, queue);
    EXPECT_EQ(why, row.want);
  }
}

// The health test is the diagnosis': an unhealthy GPU is left out on both sides.
TEST(PlacementCrossTest, UnhealthyGpuIsLeftOutOnBothSides) {
  Snapshot s = HealthyServer(2);
  GpuAt(s, 0)->ecc.volatile_uncorrected = 1;
  const diagnose::Diagnosis d =
      diagnose::Diagnose(std::span<const Snapshot>(&s, 1), diagnose::DiagnoseOptions{});
  const std::map<unsigned, std::string> unhealthy = diagnose::UnhealthyGpus(d.findings);
  ASSERT_EQ(unhealthy.count(0), 1u);
  EXPECT_EQ(unhealthy.count(1), 0u);
  const std::vector<queue::GpuState> states = queue::GpuStatesOf(s, unhealthy);
  EXPECT_FALSE(states[0].healthy);
  EXPECT_THAT(states[0].unhealthy_reason, ::testing::HasSubstr("ECC"));
  const diagnose::NeedRequest need{.gpus = 1, .bytes_per_gpu = 10 * kGiB, .nvlink = false};
  EXPECT_EQ(WhyAnswer(s, need), Fits({1}));
  EXPECT_EQ(QueueAnswer(s, need), Fits({1}));
  const diagnose::NeedRequest two{.gpus = 2, .bytes_per_gpu = 10 * kGiB, .nvlink = false};
  EXPECT_EQ(WhyAnswer(s, two), kBlocked);
  EXPECT_EQ(QueueAnswer(s, two), kBlocked);
}

// A GPU whose only health finding is a pending row remap: usable on both
// sides by default (placed on last), left out on both with the setting off.
TEST(PlacementCrossTest, PendingRowRemapIsOneRuleOnBothSides) {
  Snapshot s = HealthyServer(4);
  s.topology.clear();
  GpuAt(s, 1)->remapped_rows.pending = true;
  GpuAt(s, 1)->remapped_rows.correctable = 1;
  AddProcess(s, {.pid = 771004, .gpu = 3, .bytes = 68 * kGiB});
  SetLoad(s, 3, 84);
  const diagnose::NeedRequest three{.gpus = 3, .bytes_per_gpu = 40 * kGiB, .nvlink = false};
  const diagnose::NeedRequest two{.gpus = 2, .bytes_per_gpu = 40 * kGiB, .nvlink = false};
  const diagnose::NeedRequest one{.gpus = 1, .bytes_per_gpu = 40 * kGiB, .nvlink = false};
  // Default: it takes the third share; fewer shares leave it idle for its reset.
  EXPECT_EQ(WhyAnswer(s, three), Fits({0, 1, 2}));
  EXPECT_EQ(QueueAnswer(s, three), Fits({0, 1, 2}));
  EXPECT_EQ(WhyAnswer(s, two), Fits({0, 2}));
  EXPECT_EQ(QueueAnswer(s, two), Fits({0, 2}));
  EXPECT_EQ(WhyAnswer(s, one), QueueAnswer(s, one));
  EXPECT_NE(WhyAnswer(s, one), Fits({1}));
  const std::vector<queue::GpuState> states = queue::GpuStatesOf(
      s, diagnose::UnhealthyGpus(diagnose::RunRules(std::span<const Snapshot>(&s, 1), {}), {}), {},
      {}, diagnose::ResetPendingGpus(diagnose::RunRules(std::span<const Snapshot>(&s, 1), {}), {}));
  EXPECT_TRUE(states[1].healthy);
  EXPECT_TRUE(states[1].reset_pending);
  // [placement] use_remap_pending = false: left out on both sides; the need waits.
  const diagnose::PlacementHealth strict{.use_remap_pending = false};
  EXPECT_EQ(WhyAnswer(s, three, strict), kWaits);
  EXPECT_EQ(QueueAnswer(s, three, strict), kWaits);
  EXPECT_EQ(WhyAnswer(s, two, strict), Fits({0, 2}));
  EXPECT_EQ(QueueAnswer(s, two, strict), Fits({0, 2}));
}

TEST(GpuStatesOfTest, WhatTheDaemonPassesToThePolicy) {
  Snapshot s = HealthyServer(3);
  GpuAt(s, 0)->compute_mode = ComputeMode::kExclusiveProcess;
  AddProcess(s, {.pid = 500, .gpu = 0, .bytes = 4 * kGiB});  // A queue job's process.
  AddProcess(s, {.pid = 600, .gpu = 1, .bytes = 2 * kGiB, .user = "bob"});
  GpuAt(s, 1)->memory.free_bytes.reset();  // Read from total - used - reserved.
  GpuAt(s, 2)->unreachable = ProbeError{"nvml", "gpu_lost", "GPU is lost", 2u, 15};
  const std::vector<queue::GpuState> st =
      queue::GpuStatesOf(s, {{1, "ECC_DBE_VOLATILE: 2 errors"}}, {500}, {600});
  ASSERT_EQ(st.size(), 3u);
  // The queue's own process neither takes the EXCLUSIVE GPU nor counts as a holder.
  EXPECT_FALSE(st[0].compute_process);
  EXPECT_TRUE(st[0].holders.empty());
  EXPECT_EQ(st[0].process_bytes.at(500), 4 * kGiB);
  EXPECT_EQ(st[0].compute_mode, ComputeMode::kExclusiveProcess);
  EXPECT_TRUE(st[1].compute_process);
  ASSERT_EQ(st[1].holders.size(), 1u);
  EXPECT_EQ(st[1].holders[0].user, "bob");
  EXPECT_TRUE(st[1].holders[0].idle_s.has_value());
  EXPECT_EQ(st[1].free_bytes, 80 * kGiB - 512 * kMiB - kMiB - 2 * kGiB);
  EXPECT_FALSE(st[1].healthy);
  EXPECT_EQ(st[1].unhealthy_reason, "ECC_DBE_VOLATILE: 2 errors");
  EXPECT_TRUE(st[2].unreachable);
  EXPECT_EQ(st[2].unhealthy_reason, "GPU is lost");
  // Another process on the EXCLUSIVE GPU takes it.
  EXPECT_TRUE(queue::GpuStatesOf(s, {}, {})[0].compute_process);
}

}  // namespace
}  // namespace gw
