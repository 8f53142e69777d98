#include "queue/policy.h"
#include "core/units.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <deque>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace gw::queue {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::UnorderedElementsAre;
constexpr int64_t kNow = 1'800'000'000'000;  // A whole minute, in ms.
constexpr int64_t kHourMs = 3'600'000;

// A queue and its GPUs, built up by a test; Run() schedules one pass.
class Server {
 public:
  // `count` GPUs of `total_gib`, empty and idle.
  explicit Server(unsigned count = 0, uint64_t total_gib = 80) {
    view.now_unix_ms = kNow;
    view.minute_of_day = 600;
    for (unsigned i = 0; i < count; ++i) AddGpu(total_gib);
  }

  GpuState& AddGpu(uint64_t total_gib, std::optional<unsigned> util = 0) {
    GpuState g;
    g.index = static_cast<unsigned>(view.gpus.size());
    g.uuid = "GPU-" + std::to_string(g.index);
    g.total_bytes = total_gib * kGiB;
    g.free_bytes = g.total_bytes;
    g.util_pct = util;
    view.gpus.push_back(g);
    return view.gpus.back();
  }

  GpuState& Gpu(unsigned index) { return view.gpus.at(index); }

  // A process outside the queue holding `gib` on a GPU.
  void AddOutsider(unsigned gpu, pid_t pid, uint64_t gib, std::string user,
                   std::optional<double> idle_s = std::nullopt) {
    GpuState& g = Gpu(gpu);
    *g.free_bytes -= gib * kGiB;
    g.process_bytes[pid] = gib * kGiB;
    g.holders.push_back({pid, std::move(user), gib * kGiB, idle_s, "python train.py"});
  }

  // A queue job submitted `age_ms` before now.
  Job& Submit(JobId id, uint64_t vram_gib, unsigned gpus = 1, int priority = 0, uid_t uid = 1000,
              int64_t age_ms = 0) {
    Job j;
    j.id = id;
    j.owner.uid = uid;
    j.owner.user = "user" + std::to_string(uid);
    j.spec.argv = {"python", "train.py"};
    j.spec.gpus = gpus;
    j.spec.vram_bytes = vram_gib * kGiB;
    j.spec.priority = priority;
    j.submit_unix_ms = kNow - age_ms;
    jobs.push_back(j);
    return jobs.back();
  }

  // A running queue job that has allocated `used_gib` of its `vram_gib` on
  // each of its GPUs (one process per GPU).
  RunningJob& AddRunning(JobId id, std::vector<unsigned> gpus, uint64_t vram_gib, uint64_t used_gib,
                         uid_t uid = 2000, std::optional<int64_t> limit_s = std::nullopt,
                         int64_t age_ms = kHourMs) {
    RunningJob r;
    r.id = id;
    r.uid = uid;
    r.user = "user" + std::to_string(uid);
    r.gpus = gpus;
    r.vram_per_gpu = vram_gib * kGiB;
    r.start_unix_ms = kNow - age_ms;
    r.time_limit_s = limit_s;
    for (unsigned g : gpus) {
      const pid_t pid = static_cast<pid_t>(id * 100 + g);
      r.pids.push_back(pid);
      if (used_gib > 0) {
        Gpu(g).process_bytes[pid] = used_gib * kGiB;
        *Gpu(g).free_bytes -= used_gib * kGiB;
      }
    }
    view.running.push_back(r);
    return view.running.back();
  }

  Decisions Run() {
    view.waiting.clear();
    for (const Job& j : jobs) {
      if (j.state == JobState::kQueued || j.state == JobState::kHeld) view.waiting.push_back(&j);
    }
    return Schedule(view);
  }

  QueueView view;
  std::deque<Job> jobs;  // Stable addresses.
};

std::map<JobId, std::vector<unsigned>> Started(const Decisions& d) {
  std::map<JobId, std::vector<unsigned>> out;
  for (const StartDecision& s : d.start) out[s.id] = s.gpus;
  return out;
}

std::string Code(const Decisions& d, JobId id) {
  const WaitReason* r = FindWaiting(d, id);
  return r == nullptr ? "(not waiting)" : r->code;
}

std::string Message(const Decisions& d, JobId id) {
  const WaitReason* r = FindWaiting(d, id);
  return r == nullptr ? "(not waiting)" : r->message;
}

std::optional<int64_t> Estimate(const Decisions& d, JobId id) {
  const WaitReason* r = FindWaiting(d, id);
  return r == nullptr ? std::nullopt : r->estimated_start_unix_ms;
}

// --- Reservation ---------------------------------------------------------

TEST(PolicyReservationTest, BurstSpreadsAndNeverOvercommits) {
  Server s(2);
  for (JobId id = 1; id <= 8; ++id) s.Submit(id, 20);
  const Decisions d = s.Run();
  std::map<unsigned, int> per_gpu;
  for (const StartDecision& st : d.start) {
    ASSERT_EQ(st.gpus.size(), 1u);
    ++per_gpu[st.gpus[0]];
  }
  // 80 GiB - 512 MiB margin holds three 20 GiB promises, not four.
  EXPECT_EQ(per_gpu[0], 3);
  EXPECT_EQ(per_gpu[1], 3);
  EXPECT_EQ(Code(d, 7), "resources");
  EXPECT_EQ(Code(d, 8), "resources");
  EXPECT_THAT(d.order, ElementsAre(7, 8));
}

TEST(PolicyReservationTest, SamePassStartsReserveOnOneGpu) {
  Server s(1);
  for (JobId id = 1; id <= 8; ++id) s.Submit(id, 20);
  const Decisions d = s.Run();
  EXPECT_EQ(d.start.size(), 3u);  // task-spooler would have started all 8.
}

TEST(PolicyReservationTest, RunningJobReservesWhatItHasNotAllocated) {
  Server s(1);
  s.AddRunning(1, {0}, 20, 5);       // Promised 20 GiB, allocated 5.
  s.AddOutsider(0, 999, 10, "bob");  // Not part of the job: no effect on its reservation.
  const auto avail = AvailableBytes(s.view);
  // free = 80 - 5 - 10; reserved = 15; margin 512 MiB.
  EXPECT_EQ(avail.at(0), static_cast<int64_t>(65 * kGiB - 15 * kGiB - 512 * kMiB));
}

TEST(PolicyReservationTest, JobThatAllocatedItsRequestReservesNothingMore) {
  Server s(1);
  s.AddRunning(1, {0}, 20, 20);
  EXPECT_EQ(AvailableBytes(s.view).at(0), static_cast<int64_t>(60 * kGiB - 512 * kMiB));
  Server over(1);
  over.AddRunning(1, {0}, 20, 25);  // Beyond its promise: NVML free already says so.
  EXPECT_EQ(AvailableBytes(over.view).at(0), static_cast<int64_t>(55 * kGiB - 512 * kMiB));
}

TEST(PolicyReservationTest, WholeProcessTreeCounts) {
  Server s(1);
  RunningJob& r = s.AddRunning(1, {0}, 20, 0);
  r.pids = {100, 101};
  s.Gpu(0).process_bytes = {{100, 6 * kGiB}, {101, 4 * kGiB}};
  *s.Gpu(0).free_bytes = 70 * kGiB;
  EXPECT_EQ(AvailableBytes(s.view).at(0), static_cast<int64_t>(60 * kGiB - 512 * kMiB));
}

// The job's process is in NVML's process list, but the free memory was read
// before it allocated: the bytes must not be promised twice.
TEST(PolicyReservationTest, AllocationBetweenTheTwoNvmlReadsIsNotPromisedTwice) {
  Server s(1);
  s.AddRunning(1, {0}, 30, 0);
  s.AddRunning(2, {0}, 30, 0);
  s.Gpu(0).process_bytes[100] = 29 * kGiB;  // Job 1 has allocated...
  s.view.running[0].pids = {100};           // ...and free does not show it yet.
  s.Submit(3, 30);
  const Decisions d = s.Run();
  EXPECT_TRUE(d.start.empty());
  EXPECT_EQ(Code(d, 3), "resources");
  // free = min(80, 80 - 29) = 51; reserved = 1 + 30; margin 512 MiB.
  EXPECT_EQ(AvailableBytes(s.view).at(0), static_cast<int64_t>(20 * kGiB - 512 * kMiB));
}

TEST(PolicyReservationTest, MarginIsConfigurable) {
  Server s(1);
  s.view.config.margin_bytes = 0;
  for (JobId id = 1; id <= 5; ++id) s.Submit(id, 20);
  EXPECT_EQ(s.Run().start.size(), 4u);
}

TEST(PolicyReservationTest, UndeclaredJobNeedsAnOtherwiseUnusedGpu) {
  Server s(3);
  s.AddRunning(1, {0}, 5, 5);          // A queue job: GPU 0 is not unused.
  s.AddOutsider(1, 500, 10, "carol");  // 70 of 80 GiB free: under 90 %.
  s.AddOutsider(2, 501, 5, "carol");   // 75 of 80 GiB free: enough.
  s.Submit(10, 0);
  s.Submit(11, 0);
  const Decisions d = s.Run();
  EXPECT_THAT(Started(d), ElementsAre(std::pair<const JobId, std::vector<unsigned>>(10, {2})));
  EXPECT_EQ(Code(d, 11), "resources");
  EXPECT_THAT(Message(d, 11), HasSubstr("needs a whole GPU (no --vram)"));
  EXPECT_THAT(Message(d, 11),
              HasSubstr("the emptiest is GPU 1 with 70 GiB of 80 GiB free (10 GiB held by PID "
                        "500, carol)"));
}

TEST(PolicyReservationTest, ExplainsAGpuTakenWhole) {
  Server s(1);
  s.AddRunning(1, {0}, 0, 30);
  s.Submit(10, 10);
  EXPECT_THAT(
      Message(s.Run(), 10),
      HasSubstr("the most available is nothing on GPU 0 (taken whole by job 1 (user2000))"));
}

TEST(PolicyReservationTest, RunningUndeclaredJobKeepsOthersOff) {
  Server s(2);
  s.AddRunning(1, {0}, 0, 1);  // Whole GPU 0, only 1 GiB allocated so far.
  s.Gpu(1).util_pct = 50;      // Busier, yet the only choice.
  s.Submit(10, 1);
  const Decisions d = s.Run();
  EXPECT_THAT(Started(d)[10], ElementsAre(1));
  EXPECT_LE(AvailableBytes(s.view).at(0), 0);
}

// --- Utilisation and health ----------------------------------------------

TEST(PolicyGpuTest, MaxUtilOnlyOnGpusKnownToBeThatIdle) {
  Server s(3);
  s.Gpu(0).util_pct = 50;
  s.Gpu(1).util_pct = std::nullopt;
  s.Gpu(2).util_pct = 35;
  s.Submit(1, 10).spec.max_util_pct = 20;
  Decisions d = s.Run();
  EXPECT_THAT(d.start, IsEmpty());
  EXPECT_EQ(Code(d, 1), "util");
  EXPECT_THAT(Message(d, 1), HasSubstr("at most 20% busy"));
  EXPECT_THAT(Message(d, 1), HasSubstr("GPU 2 at 35%"));
  s.Gpu(2).util_pct = 20;
  d = s.Run();
  EXPECT_THAT(Started(d)[1], ElementsAre(2));
}

TEST(PolicyGpuTest, UnhealthyGpusAreNeverUsed) {
  Server s;
  s.AddGpu(40);
  GpuState& bad = s.AddGpu(80);
  bad.healthy = false;
  bad.unhealthy_reason = "uncorrectable ECC errors";
  s.Submit(1, 10);  // More room on GPU 1, but it is unhealthy.
  s.Submit(2, 60);  // Only GPU 1 is big enough.
  const Decisions d = s.Run();
  EXPECT_THAT(Started(d)[1], ElementsAre(0));
  EXPECT_EQ(Code(d, 2), "unhealthy");
  EXPECT_THAT(Message(d, 2), HasSubstr("GPU 1 is unhealthy: uncorrectable ECC errors"));
  EXPECT_THAT(AvailableBytes(s.view), ::testing::Not(::testing::Contains(::testing::Key(1u))));
}

TEST(PolicyGpuTest, UnknownFreeMemoryIsNotUsed) {
  Server s(2);
  s.Gpu(0).free_bytes = std::nullopt;
  s.Submit(1, 10);
  s.Submit(2, 10, 2);
  const Decisions d = s.Run();
  EXPECT_THAT(Started(d)[1], ElementsAre(1));
  EXPECT_EQ(Code(d, 2), "unhealthy");
  EXPECT_THAT(Message(d, 2), HasSubstr("GPU 0's free memory is unknown"));
}

TEST(PolicyGpuTest, MigProhibitedAndTakenExclusiveGpusAreNotUsed) {
  // The placement core's eligibility, as `why --need`'s.
  Server s(4);
  s.Gpu(0).mig = true;
  s.Gpu(1).compute_mode = ComputeMode::kProhibited;
  s.Gpu(2).compute_mode = ComputeMode::kExclusiveProcess;
  s.Gpu(2).compute_process = true;
  s.Submit(1, 10);
  s.Submit(2, 10, 2);  // Needs GPU 2 once its process ends: waits.
  s.Submit(3, 10, 3);  // Would need MIG or PROHIBITED GPUs.
  const Decisions d = s.Run();
  EXPECT_THAT(Started(d), ElementsAre(::testing::Pair(1, ElementsAre(3))));
  EXPECT_EQ(Code(d, 2), "resources");
  EXPECT_EQ(Code(d, 3), "unhealthy");
  EXPECT_THAT(Message(d, 3), HasSubstr("GPU 0 is in MIG mode; GPU 1 is compute mode PROHIBITED"));
  EXPECT_THAT(AvailableBytes(s.view), ElementsAre(::testing::Key(3u)));
}

TEST(PolicyGpuTest, ExclusiveGpuTakesOneQueueJob) {
  Server s(1);
  s.Gpu(0).compute_mode = ComputeMode::kExclusiveProcess;
  s.Submit(1, 10);
  s.Submit(2, 10);  // Room, but EXCLUSIVE_PROCESS allows one process.
  const Decisions d = s.Run();
  EXPECT_THAT(Started(d), ElementsAre(::testing::Key(1)));
  EXPECT_EQ(Code(d, 2), "resources");
}

TEST(PolicyGpuTest, ExclusiveGpuHeldByAQueueJobIsKeptForTheHead) {
  Server s(1);
  s.Gpu(0).compute_mode = ComputeMode::kExclusiveProcess;
  s.AddRunning(50, {0}, 10, 10, 2000, 600);  // Ends in 10 minutes.
  s.Submit(1, 10);
  const Decisions d = s.Run();
  EXPECT_THAT(d.start, IsEmpty());
  EXPECT_EQ(Code(d, 1), "resources");
  // The GPU frees when job 50 ends: the head is expected then, on GPU 0.
  EXPECT_THAT(Message(d, 1), HasSubstr("GPU 0 kept for it"));
  ASSERT_NE(FindWaiting(d, 1), nullptr);
  EXPECT_TRUE(FindWaiting(d, 1)->estimated_start_unix_ms.has_value());
}

TEST(PolicyGpuTest, UnknownTotalOrUnreachableIsNeverNever) {
  Server s(2);
  s.Gpu(1).total_bytes = std::nullopt;
  s.Gpu(1).free_bytes = std::nullopt;
  s.Submit(1, 10, 2);   // Might fit on GPU 1: it cannot be read.
  s.Submit(2, 100, 1);  // GPU 0 is too small; GPU 1 might not be.
  s.Submit(3, 10, 3);   // Three GPUs: never, whatever GPU 1 is.
  Decisions d = s.Run();
  EXPECT_EQ(Code(d, 1), "unhealthy");
  EXPECT_THAT(Message(d, 1), HasSubstr("GPU 1's memory is unknown"));
  EXPECT_EQ(Code(d, 2), "unhealthy");
  EXPECT_EQ(Code(d, 3), "never_fits");
  s.Gpu(1).total_bytes = 80 * kGiB;
  s.Gpu(1).free_bytes = 80 * kGiB;
  s.Gpu(1).unreachable = true;
  s.Gpu(1).unhealthy_reason = "GPU is lost";
  d = s.Run();
  EXPECT_EQ(Code(d, 1), "unhealthy");
  EXPECT_THAT(Message(d, 1), HasSubstr("GPU 1 is unreachable: GPU is lost"));
}

TEST(PolicyGpuTest, SingleGpuPrefersIdleThenMostAvailableThenIndex) {
  Server s(4);
  s.Gpu(0).util_pct = 50;
  s.Gpu(1).util_pct = 10;
  s.Gpu(2).util_pct = 10;
  s.Gpu(3).util_pct = std::nullopt;  // Unknown counts as busiest.
  s.AddOutsider(1, 700, 40, "dave");
  s.Submit(1, 5);
  EXPECT_THAT(Started(s.Run())[1], ElementsAre(2));
  Server t(3);
  t.Submit(1, 5);
  EXPECT_THAT(Started(t.Run())[1], ElementsAre(0));  // All equal: lowest index.
}

// --- Order ----------------------------------------------------------------

TEST(PolicyOrderTest, PriorityThenFairShareThenSubmitThenId) {
  Server s;  // No GPUs: nothing starts, the order is all there is.
  s.view.config.aging_cap = 0;
  s.view.usage_gpu_s = {{1, 50}, {2, 100}, {3, 10}};
  s.Submit(1, 1, 1, 0, 1, 10'000);                     // A
  s.Submit(2, 1, 1, 1, 1, 5'000);                      // B: higher priority
  s.Submit(3, 1, 1, 0, 2, 20'000);                     // C: heavy user
  s.Submit(4, 1, 1, 0, 3, 1'000);                      // D: light user, newest
  s.Submit(5, 1, 1, 0, 1, 10'000);                     // E: same as A, later id
  s.Submit(6, 1, 1, 2, 2, 0).state = JobState::kHeld;  // F: held keeps its place
  const Decisions d = s.Run();
  EXPECT_THAT(d.order, ElementsAre(6, 2, 4, 1, 5, 3));
  EXPECT_EQ(Code(d, 6), "held");
}

TEST(PolicyOrderTest, AgingRaisesPriorityUpToTheCap) {
  Server s;
  s.view.config.aging_cap = 2;
  s.Submit(1, 1, 1, 0, 1000, 5 * kHourMs);  // 0 + min(2, 5) = 2
  s.Submit(2, 1, 1, 1, 1000, 0);
  s.Submit(3, 1, 1, 3, 1000, 0);
  EXPECT_THAT(s.Run().order, ElementsAre(3, 1, 2));
  s.view.config.aging_cap = 10;  // 0 + 5
  EXPECT_THAT(s.Run().order, ElementsAre(1, 3, 2));
  s.view.config.aging_step_s = 0;  // No aging.
  EXPECT_THAT(s.Run().order, ElementsAre(3, 2, 1));
}

// The order by the header's definition, computed the slow, obvious way.
std::vector<JobId> ReferenceOrder(const QueueView& v, const std::vector<const Job*>& jobs) {
  std::vector<const Job*> sorted = jobs;
  auto eff = [&](const Job* j) {
    int64_t aging = 0;
    if (v.config.aging_step_s > 0 && v.config.aging_cap > 0 && v.now_unix_ms > j->submit_unix_ms) {
      aging = std::min<int64_t>(
          v.config.aging_cap, (v.now_unix_ms - j->submit_unix_ms) / (v.config.aging_step_s * 1000));
    }
    return j->spec.priority + aging;
  };
  auto usage = [&](const Job* j) {
    auto it = v.usage_gpu_s.find(j->owner.uid);
    return it == v.usage_gpu_s.end() ? 0.0 : it->second;
  };
  std::stable_sort(sorted.begin(), sorted.end(), [&](const Job* a, const Job* b) {
    if (eff(a) != eff(b)) return eff(a) > eff(b);
    if (usage(a) != usage(b)) return usage(a) < usage(b);
    if (a->submit_unix_ms != b->submit_unix_ms) return a->submit_unix_ms < b->submit_unix_ms;
    return a->id < b->id;
  });
  std::vector<JobId> ids;
  for (const Job* j : sorted) ids.push_back(j->id);
  return ids;
}

// 600 jobs from 7 users; `priority_span` and `wide` stretch the keys so that
// each of the three sorting paths runs (see SortOrder in policy.cc).
void CheckOrder(int priority_span, bool wide, bool shuffled) {
  Server s;  // No GPUs: every job waits ("never_fits"), the order is all there is.
  s.view.usage_gpu_s = {{1, 5}, {2, 5}, {3, 100}, {4, 0.5}};
  uint64_t state = 7;
  auto next = [&](uint64_t bound) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return (state >> 33) % bound;
  };
  for (JobId id = 1; id <= 600; ++id) {
    // Ids grow with submit time, as the store assigns them, except when shuffled.
    int64_t age = shuffled ? static_cast<int64_t>(next(20 * 3600)) * 1000 : (600 - id) * 60'000;
    const int prio = static_cast<int>(next(5)) - 2;
    JobId job_id = id;
    if (wide) {
      job_id = static_cast<JobId>(next(1ull << 62));
      age = static_cast<int64_t>(next(1ull << 61)) - (int64_t{1} << 60);
    }
    s.Submit(job_id, 1, 1, prio == 2 ? priority_span : prio, 1 + static_cast<uid_t>(next(7)), age);
  }
  if (shuffled) {
    for (size_t i = s.jobs.size(); i > 1; --i) std::swap(s.jobs[i - 1], s.jobs[next(i)]);
  }
  const Decisions d = s.Run();
  EXPECT_EQ(d.order, ReferenceOrder(s.view, s.view.waiting));
  EXPECT_TRUE(std::is_sorted(d.waiting.begin(), d.waiting.end(),
                             [](const auto& a, const auto& b) { return a.first < b.first; }));
}

TEST(PolicyOrderTest, BucketPathInIdOrder) { CheckOrder(2, false, false); }
TEST(PolicyOrderTest, BucketPathShuffled) { CheckOrder(2, false, true); }
TEST(PolicyOrderTest, RadixPath) { CheckOrder(1 << 20, false, true); }
TEST(PolicyOrderTest, ComparisonPath) { CheckOrder(std::numeric_limits<int>::max(), true, true); }

TEST(PolicyOrderTest, FindWaiting) {
  Server s;
  s.Submit(5, 1);
  s.Submit(3, 1);
  const Decisions d = s.Run();
  ASSERT_NE(FindWaiting(d, 3), nullptr);
  EXPECT_EQ(FindWaiting(d, 3)->code, "never_fits");
  EXPECT_EQ(FindWaiting(d, 4), nullptr);
}

TEST(PolicyOrderTest, OrderListsExactlyTheWaitingJobs) {
  Server s(1);
  for (JobId id = 20; id > 0; --id) s.Submit(id, 30, 1, static_cast<int>(id % 3));
  const Decisions d = s.Run();
  std::set<JobId> keys;
  for (const auto& [id, reason] : d.waiting) keys.insert(id);
  EXPECT_EQ(std::set<JobId>(d.order.begin(), d.order.end()), keys);
  EXPECT_EQ(d.order.size() + d.start.size(), 20u);
}

// --- User limits, windows, dependencies, held ---------------------------

TEST(PolicyEligibilityTest, PerUserRunningLimit) {
  Server s(4);
  s.view.config.max_running_per_user = 2;
  s.AddRunning(1, {0}, 5, 5, 1000);
  s.Submit(10, 5, 1, 0, 1000);
  s.Submit(11, 5, 1, 0, 1000);
  s.Submit(12, 5, 1, 0, 2000);
  const Decisions d = s.Run();
  EXPECT_THAT(Started(d), ::testing::UnorderedElementsAre(::testing::Key(10), ::testing::Key(12)));
  EXPECT_EQ(Code(d, 11), "user_limit");
  EXPECT_THAT(Message(d, 11), HasSubstr("user1000 has 2 running jobs (limit 2 per user)"));
}

TEST(PolicyEligibilityTest, PerUserGpuLimit) {
  Server s(8);
  s.view.config.max_gpus_per_user = 3;
  s.AddRunning(1, {0, 1}, 5, 5, 1000);
  s.Submit(10, 5, 2, 0, 1000);  // 2 + 2 > 3.
  s.Submit(11, 5, 4, 0, 1000);  // Never, alone.
  s.Submit(12, 5, 1, 0, 1000);  // 2 + 1 = 3.
  const Decisions d = s.Run();
  EXPECT_THAT(Started(d), ElementsAre(::testing::Key(12)));
  EXPECT_EQ(Code(d, 10), "user_limit");
  EXPECT_THAT(Message(d, 10), HasSubstr("uses 2 GPUs and this job needs 2 more (limit 3"));
  EXPECT_THAT(Message(d, 11), HasSubstr("needs 4 GPUs; the limit is 3 per user"));
}

TEST(PolicyEligibilityTest, WindowJobWaitsWithoutBlocking) {
  Server s(1);
  s.view.minute_of_day = 600;                                 // 10:00
  s.Submit(1, 70, 1, 5).spec.window = TimeWindow{1320, 420};  // 22:00-07:00
  s.Submit(2, 70, 1, 0).spec.window = TimeWindow{540, 660};   // 09:00-11:00: open
  const Decisions d = s.Run();
  EXPECT_THAT(Started(d), ElementsAre(::testing::Key(2)));
  EXPECT_EQ(Code(d, 1), "window");
  EXPECT_EQ(Estimate(d, 1), kNow + 12 * kHourMs);
  EXPECT_THAT(Message(d, 1), HasSubstr("starts only within 22:00-07:00; next opening in 12h"));
}

TEST(PolicyEligibilityTest, WindowAcrossMidnight) {
  Server s(1);
  s.view.minute_of_day = 23 * 60;
  s.Submit(1, 10).spec.window = TimeWindow{1320, 420};
  EXPECT_THAT(s.Run().start, ::testing::SizeIs(1));
  s.view.minute_of_day = 7 * 60;  // The end is exclusive.
  const Decisions d = s.Run();
  EXPECT_EQ(Code(d, 1), "window");
  EXPECT_EQ(Estimate(d, 1), kNow + 15 * kHourMs);
}

TEST(PolicyEligibilityTest, Dependencies) {
  Server s(1);
  s.view.dependency_states = {{1, JobState::kSucceeded}, {2, JobState::kRunning},
                              {3, JobState::kFailed},    {4, JobState::kCancelled},
                              {5, JobState::kLost},      {6, JobState::kQueued}};
  s.Submit(11, 1).spec.after = {1};
  s.Submit(12, 1).spec.after = {1, 2, 6};
  s.Submit(13, 1).spec.after = {1, 3};
  s.Submit(14, 1).spec.after = {4};
  s.Submit(15, 1).spec.after = {5};
  s.Submit(16, 1).spec.after = {99};  // Unknown id.
  Job& held = s.Submit(17, 1);
  held.spec.after = {3};
  held.state = JobState::kHeld;
  const Decisions d = s.Run();
  EXPECT_THAT(Started(d), ElementsAre(::testing::Key(11)));
  EXPECT_EQ(Code(d, 12), "dependency");
  EXPECT_EQ(Message(d, 12), "waits for job 2 (running), job 6 (queued) to succeed");
  EXPECT_THAT(d.dependency_failed, ElementsAre(13, 14, 15, 16, 17));
  EXPECT_THAT(d.order, ElementsAre(12));
}

TEST(PolicyEligibilityTest, HeldNeverStartsAndDoesNotBlock) {
  Server s(1);
  s.Submit(1, 70, 1, 9).state = JobState::kHeld;
  s.Submit(2, 70);
  const Decisions d = s.Run();
  EXPECT_THAT(Started(d), ElementsAre(::testing::Key(2)));
  EXPECT_EQ(Code(d, 1), "held");
  EXPECT_THAT(d.order, ElementsAre(1));
}

TEST(PolicyEligibilityTest, ZeroGpuJobsStartRegardless) {
  Server s(1);
  s.AddRunning(1, {0}, 80, 80);
  s.Submit(2, 40);    // Head, blocked.
  s.Submit(3, 0, 0);  // No GPU.
  const Decisions d = s.Run();
  EXPECT_THAT(Started(d), ElementsAre(std::pair<const JobId, std::vector<unsigned>>(3, {})));
}

// --- Multi-GPU and topology ----------------------------------------------

std::vector<TopologyLink> Links(
    unsigned n, TopologyLevel level, std::vector<std::pair<unsigned, unsigned>> nvlinked = {},
    std::map<std::pair<unsigned, unsigned>, TopologyLevel> levels = {}) {
  std::vector<TopologyLink> out;
  for (unsigned a = 0; a < n; ++a) {
    for (unsigned b = a + 1; b < n; ++b) {
      TopologyLink l{a, b, level, 0};
      if (std::find(nvlinked.begin(), nvlinked.end(), std::make_pair(a, b)) != nvlinked.end()) {
        l.nvlinks = 12;
      }
      if (auto it = levels.find({a, b}); it != levels.end()) l.level = it->second;
      out.push_back(l);
    }
  }
  return out;
}

TEST(PolicyTopologyTest, NvlinkNeedsEveryPairJoined) {
  Server s(4);
  s.view.topology = Links(4, TopologyLevel::kSystem, {{0, 2}, {1, 3}});
  s.Submit(1, 10, 2).spec.nvlink = true;
  EXPECT_THAT(Started(s.Run())[1], ElementsAre(0, 2));
  s.AddRunning(9, {2}, 75, 75);
  EXPECT_THAT(Started(s.Run())[1], ElementsAre(1, 3));
  s.AddRunning(8, {3}, 75, 75);
  const Decisions d = s.Run();
  EXPECT_EQ(Code(d, 1), "resources");
  EXPECT_THAT(Message(d, 1), HasSubstr("joined by NVLink"));
  EXPECT_THAT(Message(d, 1), HasSubstr("2 GPUs have that much available, but not enough of them"));
}

TEST(PolicyTopologyTest, NvlinkWithUnknownTopologyIsNotPlaced) {
  Server s(4);
  s.Submit(1, 10, 2).spec.nvlink = true;
  s.Submit(2, 10, 2);  // Without --nvlink it goes anywhere.
  const Decisions d = s.Run();
  EXPECT_THAT(Started(d), ElementsAre(::testing::Key(2)));
  // It waits (cannot be checked), not "never fits": the topology may be read later.
  EXPECT_EQ(Code(d, 1), "topology_unknown");
  EXPECT_THAT(Message(d, 1), HasSubstr("topology is unknown"));
}

TEST(PolicyTopologyTest, NvlinkCliqueTooSmallNeverFits) {
  Server s(4);
  s.view.topology = Links(4, TopologyLevel::kSystem, {{0, 1}, {2, 3}});
  s.Submit(1, 10, 3).spec.nvlink = true;
  const Decisions d = s.Run();
  EXPECT_EQ(Code(d, 1), "never_fits");
  EXPECT_THAT(Message(d, 1), HasSubstr("at most 2 GPUs big enough are joined by NVLink"));
}

TEST(PolicyTopologyTest, PrefersGpusBehindOneSwitch) {
  Server s(4);
  s.view.topology = Links(4, TopologyLevel::kSystem, {},
                          {{{0, 1}, TopologyLevel::kSingle}, {{2, 3}, TopologyLevel::kSingle}});
  s.AddRunning(9, {0}, 40, 40);
  s.Submit(1, 30, 2);
  // GPUs 1, 2, 3 are the most available; {2, 3} share a switch, {1, x} does not.
  EXPECT_THAT(Started(s.Run())[1], ElementsAre(2, 3));
  s.Gpu(3).healthy = false;
  EXPECT_THAT(Started(s.Run())[1], ElementsAre(0, 1));
  s.view.topology.clear();  // Unknown: the two most preferred.
  EXPECT_THAT(Started(s.Run())[1], ElementsAre(1, 2));
}

TEST(PolicyTopologyTest, TooFewGpusNeverFits) {
  Server s(2);
  s.Submit(1, 20, 4);
  s.Submit(2, 100);
  const Decisions d = s.Run();
  EXPECT_EQ(Code(d, 1), "never_fits");
  EXPECT_EQ(Message(d, 1), "needs 20 GiB on each of 4 GPUs; the server has 2 GPUs");
  EXPECT_EQ(Code(d, 2), "never_fits");
  EXPECT_EQ(
      Message(d, 2),
      "needs 100 GiB on one GPU; no GPU is that big (the largest has 80 GiB usable, 79.5 GiB after "
      "the 512 MiB margin)");
}

// --- Backfill ---------------------------------------------------------------

// One 80 GiB GPU; a running job holds 60 GiB for one more hour.
Server BusyForAnHour() {
  Server s(1);
  s.AddRunning(1, {0}, 60, 60, 2000, /*limit_s=*/2 * 3600, /*age_ms=*/kHourMs);
  return s;
}

TEST(PolicyBackfillTest, ShortJobBackfillsLongJobDoesNot) {
  Server s = BusyForAnHour();
  s.Submit(10, 75, 1, 0, 1000, 3000);  // Head: needs the GPU once job 1 ends.
  s.Submit(11, 5, 1, 0, 1000, 2000).spec.time_limit_s = 1800;  // Ends before.
  s.Submit(12, 5, 1, 0, 1000, 1000);                           // No limit: would eat into 75 GiB.
  s.Submit(13, 5, 1, 0, 1000, 500).spec.time_limit_s = 7200;   // Ends after.
  const Decisions d = s.Run();
  EXPECT_THAT(Started(d), ElementsAre(::testing::Key(11)));
  EXPECT_EQ(Code(d, 10), "resources");
  EXPECT_EQ(Estimate(d, 10), kNow + kHourMs);
  EXPECT_THAT(Message(d, 10), HasSubstr("first in line, GPU 0 kept for it, expected in 1h"));
  EXPECT_EQ(Code(d, 12), "reserved_for_head");
  EXPECT_EQ(Message(d, 12),
            "fits now, but would delay job 10 (first in line, needs GPU 0 in 1h); with "
            "--time-limit 1h or less it could start now");
  EXPECT_EQ(Code(d, 13), "reserved_for_head");
}

TEST(PolicyBackfillTest, LongJobMayUseMemoryTheHeadDoesNotNeed) {
  Server s = BusyForAnHour();
  s.Submit(10, 40, 1, 0, 1000, 2000);
  s.Submit(11, 10, 1, 0, 1000, 1000);  // 79.5 - 10 >= 40 at the shadow time.
  const Decisions d = s.Run();
  EXPECT_THAT(Started(d), ElementsAre(::testing::Key(11)));
  EXPECT_EQ(Estimate(d, 10), kNow + kHourMs);
}

TEST(PolicyBackfillTest, SamePassStartsCountInTheShadow) {
  Server s(1);
  s.Submit(1, 60, 1, 1).spec.time_limit_s = 3600;  // Starts now, ends in 1h.
  s.Submit(2, 60);                                 // Head.
  const Decisions d = s.Run();
  EXPECT_THAT(Started(d), ElementsAre(::testing::Key(1)));
  EXPECT_EQ(Estimate(d, 2), kNow + kHourMs);
}

TEST(PolicyBackfillTest, WithoutShadowTimeUsesWhatTheHeadCannotUse) {
  Server s(8);
  // GPUs 0-3 NVLink-joined and held by jobs without time limits; 4-7 free.
  s.view.topology =
      Links(8, TopologyLevel::kSystem, {{0, 1}, {0, 2}, {0, 3}, {1, 2}, {1, 3}, {2, 3}});
  for (unsigned g = 0; g < 4; ++g) s.AddRunning(1 + g, {g}, 60, 60);
  for (unsigned g = 4; g < 8; ++g) s.Gpu(g).util_pct = 50;  // Busier than 0-3.
  s.Submit(10, 70, 4, 0, 1000, 3000).spec.nvlink = true;    // Head.
  s.Submit(11, 10, 1, 0, 1000, 2000);  // Prefers idle GPU 0, must take one of 4-7.
  s.Submit(12, 10, 2, 0, 1000, 1000).spec.nvlink = true;  // Only 0-3 are NVLink-joined.
  const Decisions d = s.Run();
  EXPECT_THAT(Started(d), ElementsAre(std::pair<const JobId, std::vector<unsigned>>(11, {4})));
  EXPECT_FALSE(Estimate(d, 10).has_value());
  EXPECT_THAT(Message(d, 10), HasSubstr("GPUs 0, 1, 2, 3 kept for it, start time unknown"));
  EXPECT_EQ(Code(d, 12), "reserved_for_head");
}

TEST(PolicyBackfillTest, HeadBlockedByOutsidersReservesNothing) {
  Server s(1);
  s.AddOutsider(0, 4242, 60, "alice", 2 * 86400.0);
  s.Submit(10, 40, 1, 0, 1000, 2000);
  s.Submit(11, 10, 1, 0, 1000, 1000);
  const Decisions d = s.Run();
  EXPECT_THAT(Started(d), ElementsAre(::testing::Key(11)));
  EXPECT_EQ(Message(d, 10),
            "needs 40 GiB on one GPU; the most available is 19.5 GiB on GPU 0 (60 GiB held by PID "
            "4242, alice, idle 2d); first in line, but it would not fit even with the queue empty: "
            "processes outside the queue hold the memory");
}

TEST(PolicyBackfillTest, WholeGpuHeadKeepsItsGpuFree) {
  Server s(1);
  s.AddRunning(1, {0}, 20, 20, 2000, /*limit_s=*/2 * 3600, /*age_ms=*/kHourMs);
  s.Submit(10, 0, 1, 0, 1000, 3000);                          // Head: the whole GPU.
  s.Submit(11, 5, 1, 0, 1000, 2000).spec.time_limit_s = 600;  // Gone before job 1.
  s.Submit(12, 5, 1, 0, 1000, 1000);                          // Would still be on the GPU then.
  const Decisions d = s.Run();
  EXPECT_THAT(Started(d), ElementsAre(::testing::Key(11)));
  EXPECT_EQ(Estimate(d, 10), kNow + kHourMs);
  EXPECT_EQ(Code(d, 12), "reserved_for_head");
}

TEST(PolicyBackfillTest, HeadBlockedOnlyByUtilisationKeepsItsMemory) {
  Server s(1);
  s.Gpu(0).util_pct = 90;
  s.Submit(10, 60, 1, 0, 1000, 2000).spec.max_util_pct = 50;  // Head: the GPU is too busy.
  s.Submit(11, 30, 1, 0, 1000, 1000);  // Fits now, but would leave the head 49.5 GiB.
  s.Submit(12, 10, 1, 0, 1000, 500);   // Leaves it 69.5 GiB.
  const Decisions d = s.Run();
  EXPECT_EQ(Code(d, 10), "util");
  EXPECT_FALSE(Estimate(d, 10).has_value());
  EXPECT_EQ(Code(d, 11), "reserved_for_head");
  EXPECT_EQ(Message(d, 11), "fits now, but would delay job 10 (first in line, needs GPU 0)");
  EXPECT_THAT(Started(d), ElementsAre(::testing::Key(12)));
}

TEST(PolicyBackfillTest, DepthLimitsTheJobsTried) {
  Server s = BusyForAnHour();
  s.view.config.backfill_depth = 2;
  s.Submit(10, 75, 1, 0, 1000, 10'000);
  for (JobId id = 11; id <= 15; ++id) s.Submit(id, 30, 1, 0, 1000, 10'000 - id);
  s.Submit(16, 0, 0, 0, 1000, 0);  // No GPU: not counted, still starts.
  const Decisions d = s.Run();
  EXPECT_EQ(Code(d, 11), "resources");
  EXPECT_EQ(Code(d, 12), "resources");
  EXPECT_EQ(Code(d, 13), "priority");
  EXPECT_EQ(Code(d, 15), "priority");
  EXPECT_THAT(Message(d, 13), HasSubstr("not tried this pass (backfill depth 2)"));
  EXPECT_THAT(Started(d), ElementsAre(::testing::Key(16)));
}

TEST(PolicyBackfillTest, LowPriorityJobIsNotStarvedByAStream) {
  // One GPU; every job needs most of it for 30 minutes. A user submits two
  // priority-3 jobs every 30 minutes, twice what the GPU can run; a
  // priority-0 job waits among them. Passes every 30 minutes.
  auto simulate = [](int aging_cap) -> std::pair<std::optional<int64_t>, int> {
    Server s(1);
    s.view.config.aging_cap = aging_cap;
    Job& low = s.Submit(1, 70, 1, 0, 2000);
    low.spec.time_limit_s = 1800;
    JobId next = 2;
    int stream_started = 0;
    for (int64_t t = 0; t <= 24 * kHourMs; t += kHourMs / 2) {
      s.view.now_unix_ms = kNow + t;
      std::erase_if(s.view.running, [&](const RunningJob& r) {
        return r.start_unix_ms + *r.time_limit_s * 1000 <= s.view.now_unix_ms;
      });
      for (int i = 0; i < 2; ++i) {
        Job& j = s.Submit(next++, 70, 1, 3, 1000, -t);
        j.spec.time_limit_s = 1800;
      }
      const Decisions d = s.Run();
      for (const StartDecision& st : d.start) {
        Job& j = *std::find_if(s.jobs.begin(), s.jobs.end(),
                               [&](const Job& x) { return x.id == st.id; });
        if (j.id == 1) return {t, stream_started};
        ++stream_started;
        j.state = JobState::kRunning;
        RunningJob r;
        r.id = j.id;
        r.uid = j.owner.uid;
        r.gpus = st.gpus;
        r.vram_per_gpu = j.spec.vram_bytes;
        r.start_unix_ms = s.view.now_unix_ms;
        r.time_limit_s = j.spec.time_limit_s;
        s.view.running.push_back(r);
      }
    }
    return {std::nullopt, stream_started};
  };
  const auto [when, others] = simulate(10);
  ASSERT_TRUE(when.has_value());
  EXPECT_LE(*when, 8 * kHourMs);
  EXPECT_GE(others, 10);                        // The stream did run meanwhile.
  EXPECT_FALSE(simulate(0).first.has_value());  // Without aging it would starve.
}

// --- Preemption -------------------------------------------------------------

TEST(PolicyPreemptTest, MinimalSetOfLowerPriorityPreemptibleJobs) {
  Server s(1);
  RunningJob& a = s.AddRunning(1, {0}, 10, 10, 2000, std::nullopt, kHourMs);
  a.preemptible = true;  // Priority 0, recent: tried first, but not needed.
  RunningJob& b = s.AddRunning(2, {0}, 40, 40, 2000, std::nullopt, 3 * kHourMs);
  b.preemptible = true;
  b.priority = 1;
  s.AddRunning(3, {0}, 20, 20);  // Not preemptible. Free now: 10 GiB.
  s.Submit(10, 40, 1, 5);
  const Decisions d = s.Run();
  ASSERT_EQ(d.preempt.size(), 1u);
  EXPECT_EQ(d.preempt[0].victim, 2);
  EXPECT_EQ(d.preempt[0].for_job, 10);
  EXPECT_THAT(d.start, IsEmpty());  // It starts once job 2 has stopped.
  EXPECT_EQ(Estimate(d, 10), kNow);
  EXPECT_THAT(Message(d, 10), HasSubstr("first in line, preempting job 2"));
}

TEST(PolicyPreemptTest, OnlyStrictlyLowerBasePriority) {
  Server s(1);
  s.AddRunning(1, {0}, 60, 60).preemptible = true;  // Priority 0.
  s.Submit(10, 40, 1, 0, 1000, 5 * kHourMs);        // Aged to 5, base 0.
  EXPECT_THAT(s.Run().preempt, IsEmpty());
  s.jobs.back().spec.priority = 1;
  EXPECT_THAT(s.Run().preempt, ::testing::SizeIs(1));
  s.view.config.preemption = false;
  EXPECT_THAT(s.Run().preempt, IsEmpty());
}

TEST(PolicyPreemptTest, NotForAJobThatWouldNotFitEvenThen) {
  Server s(1);
  s.AddRunning(1, {0}, 30, 30).preemptible = true;
  s.AddRunning(2, {0}, 30, 30);  // Not preemptible.
  s.Submit(10, 60, 1, 5);
  const Decisions d = s.Run();
  EXPECT_THAT(d.preempt, IsEmpty());
  EXPECT_EQ(Code(d, 10), "resources");
}

TEST(PolicyPreemptTest, JobsBeingStoppedAreNotChosenAgain) {
  Server s(1);
  RunningJob& a = s.AddRunning(1, {0}, 40, 40);
  a.preemptible = true;
  a.stopping = true;
  s.AddRunning(2, {0}, 30, 30).preemptible = true;
  s.Submit(10, 40, 1, 5);
  const Decisions d = s.Run();
  EXPECT_THAT(d.preempt, IsEmpty());  // Job 1 leaving is enough.
  EXPECT_EQ(Estimate(d, 10), kNow);
}

// --- Explanations -----------------------------------------------------------

TEST(PolicyExplainTest, NamesTheQueueJobHoldingTheGpu) {
  Server s(1);
  s.AddRunning(17, {0}, 60, 60, 2001);
  s.Submit(10, 40);
  EXPECT_EQ(Message(s.Run(), 10),
            "needs 40 GiB on one GPU; the most available is 19.5 GiB on GPU 0 (60 GiB held by "
            "job 17 (user2001)); first in line, GPU 0 kept for it, start time unknown (the jobs "
            "in its way have no time limit)");
}

TEST(PolicyExplainTest, MultiGpuNamesTheNextBestGpu) {
  Server s(2);
  s.AddOutsider(1, 4242, 68, "alice");
  s.Submit(10, 40, 2);
  EXPECT_THAT(Message(s.Run(), 10),
              HasSubstr("needs 40 GiB on each of 2 GPUs; 1 GPU has that much available; the next "
                        "is GPU 1 with 11.5 GiB (68 GiB held by PID 4242, alice)"));
}

TEST(PolicyExplainTest, OnlyTheFirstJobsGetMessages) {
  Server s;
  s.view.config.explain_depth = 2;
  for (JobId id = 1; id <= 4; ++id) s.Submit(id, 1, 1, 0, 1000, 100 - id).state = JobState::kHeld;
  const Decisions d = s.Run();
  EXPECT_EQ(Message(d, 1), "held; it starts only once released");
  EXPECT_FALSE(Message(d, 2).empty());
  EXPECT_TRUE(Message(d, 3).empty());
  EXPECT_EQ(Code(d, 4), "held");
  EXPECT_EQ(GenericWaitMessage(Code(d, 4)), "held; it starts only once released");
}

TEST(PolicyExplainTest, GenericMessagesForEveryCode) {
  for (const char* code :
       {"held", "dependency", "window", "user_limit", "priority", "resources", "util",
        "reserved_for_head", "unhealthy", "topology_unknown", "never_fits"}) {
    EXPECT_NE(GenericWaitMessage(code), GenericWaitMessage("?")) << code;
  }
}

// --- Fair-share usage -------------------------------------------------------

TEST(PolicyUsageTest, DecayedUsageHalvesPerHalfLife) {
  EXPECT_DOUBLE_EQ(DecayedUsage(100, 0, 10), 100);
  EXPECT_DOUBLE_EQ(DecayedUsage(100, 10, 10), 50);
  EXPECT_DOUBLE_EQ(DecayedUsage(100, 20, 10), 25);
  EXPECT_DOUBLE_EQ(DecayedUsage(100, -5, 10), 100);
  EXPECT_DOUBLE_EQ(DecayedUsage(100, 5, 0), 0);
}

}  // namespace
}  // namespace gw::queue
