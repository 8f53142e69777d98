// The GPU queue end to end: a real gpuwardend on the simulator, real jobs
// (shell commands run by gpuwarden-supervise), the real gpuwarden client and
// raw connections to the socket. A job "allocates" GPU memory by writing a
// file named by its PID into the simulator's process registry
// (GPUWARDEN_SIM_PROCESS_DIR, docs/scenarios.md); the memory frees when the
// process ends. Every test starts a daemon of its own in a temporary
// directory and stops it (and whatever its jobs left) at the end.
#include <grp.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <sqlite3.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "e2e/e2e_util.h"
#include "e2e/queue_e2e_util.h"
#include "e2e/run_process.h"
#include "e2e/user_process.h"
#include "proc/proc_parse.h"

namespace gw::test {
namespace {

using nlohmann::json;

// The GPUs of scenarios/queue-two-free.json and queue-busy.json.
constexpr char kGpu0[] = "GPU-8c1f4e27-5a0b-4d39-9e62-b7d30a1c5f41";
constexpr char kGpu1[] = "GPU-2e9b7d05-c4f8-4a16-8d3e-61a0f5b92c78";
constexpr int64_t kGiB = int64_t{1} << 30;

constexpr int kExitRefused = 16;        // gpuwarden: the daemon refused (cli/exit_codes.h).
constexpr int kExitUnsatisfiable = 19;  // gpuwarden: the job can never run on this server.

json ParseJson(const std::string& text) { return json::parse(text, nullptr, false); }

bool Exists(const std::string& path) { return access(path.c_str(), F_OK) == 0; }

std::vector<std::string> ListDir(const std::string& dir) {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    out.push_back(e.path().filename().string());
  }
  return out;
}

std::optional<pid_t> ReadPidFile(const std::string& path) {
  std::ifstream in(path);
  long pid = 0;
  if (in >> pid && pid > 0) return static_cast<pid_t>(pid);
  return std::nullopt;
}

// Polls `condition` every 50 ms until it holds or timeout_s passes.
int64_t NowUnixMs() {
  using namespace std::chrono;
  return duration_cast<milliseconds>(system_clock::now().time_since_epoch()).count();
}

// The "jobs" list of a `queue --json` or `jobs --json` document, or null.
json JobsIn(const std::string& text) {
  json doc = ParseJson(text);
  if (!doc.is_object() || !doc.contains("jobs") || !doc["jobs"].is_array()) return nullptr;
  return doc["jobs"];
}

// The job with this id in a list of JOBs, or null.
json FindJob(const json& jobs, int64_t id) {
  if (!jobs.is_array()) return nullptr;
  for (const json& j : jobs) {
    if (j.value("id", int64_t{-1}) == id) return j;
  }
  return nullptr;
}

// Expects a well-formed error reply with this code.
void ExpectError(const std::optional<json>& reply, const std::string& code,
                 const std::string& what) {
  ASSERT_TRUE(reply.has_value()) << what << ": no reply";
  EXPECT_EQ(reply->value("v", 0), 1) << what << ": " << reply->dump();
  EXPECT_EQ(reply->value("ok", true), false) << what << ": " << reply->dump();
  ASSERT_TRUE(reply->contains("error") && (*reply)["error"].is_object())
      << what << ": " << reply->dump();
  EXPECT_EQ((*reply)["error"].value("code", ""), code) << what << ": " << reply->dump();
  EXPECT_FALSE((*reply)["error"].value("message", "").empty()) << what << ": " << reply->dump();
}

// A queued job that the scheduler has looked at: it has a wait reason.
bool Waits(const json& job) { return StateOf(job) == "queued" && job.contains("wait_reason"); }

// --- 1. Waiting for memory --------------------------------------------------

// CPU time (user + system) of a process, in clock ticks; -1 when gone.
long CpuTicks(pid_t pid) {
  const std::string text = ReadFileOrEmpty("/proc/" + std::to_string(pid) + "/stat");
  Result<proc::StatFields> stat = proc::ParseStat(text);
  return stat.ok() ? static_cast<long>(stat->utime_ticks + stat->stime_ticks) : -1;
}

// A wedged driver keeps a look in progress for seconds: the daemon waits for
// it on the snapshotter's descriptor instead of polling with a 0 ms timeout
// (it spun at 35-39 % of a core on this scenario).
TEST(QueueE2e, ADaemonWhoseDriverHangsWaitsWithoutSpinning) {
  QueueServer q("driver-hang.json");
  ASSERT_TRUE(q.Start());
  ASSERT_TRUE(
      Eventually([&] { return q.Log().find("driver not responding") != std::string::npos; }, 30))
      << q.Log();
  const long before = CpuTicks(q.pid());
  std::this_thread::sleep_for(std::chrono::seconds(3));
  const long after = CpuTicks(q.pid());
  ASSERT_GE(before, 0);
  ASSERT_GE(after, before);
  const double core_share = static_cast<double>(after - before) / sysconf(_SC_CLK_TCK) / 3.0;
  EXPECT_LT(core_share, 0.05) << "the daemon used " << core_share * 100 << " % of a core\n"
                              << q.Log();
}

TEST(QueueE2e, JobWaitsForMemoryThenStartsOnTheFreedGpu) {
  QueueServer q("queue-busy.json");
  // GPU 0 is full of a registered holder (70000 of 81051 MiB); GPU 1 is
  // busy with the scenario's own training process (75000 MiB).
  TestChild holder;
  ASSERT_GT(holder.pid(), 0);
  std::ofstream(q.reg() + "/" + std::to_string(holder.pid())) << kGpu0 << " 70000 0\n";
  ASSERT_TRUE(q.Start());

  const auto id = q.Submit({"--vram", "30G", "--", "/bin/sh", "-c",
                            "echo \"CVD=$CUDA_VISIBLE_DEVICES ORDER=$CUDA_DEVICE_ORDER\"; "
                            "echo \"$CUDA_VISIBLE_DEVICES 20000\" > \"$REG/$$\"; sleep 1"});
  ASSERT_TRUE(id);

  // `queue --json` shows it waiting for resources, naming GPU 0's holder.
  json seen;
  const std::string holder_text = "PID " + std::to_string(holder.pid());
  const bool named = Eventually([&] {
    RunResult r = q.Gw({"queue", "--json"});
    if (r.exit_code != 0) return false;
    seen = FindJob(JobsIn(r.out), *id);
    return seen.contains("wait_reason") &&
           seen["wait_reason"].value("message", "").find(holder_text) != std::string::npos;
  });
  ASSERT_TRUE(named) << "queue --json never named " << holder_text << ": " << seen.dump(2);
  EXPECT_EQ(StateOf(seen), "queued") << seen.dump(2);
  EXPECT_EQ(seen["wait_reason"].value("code", ""), "resources") << seen.dump(2);
  EXPECT_TRUE(seen.contains("position")) << seen.dump(2);
  EXPECT_EQ(q.Job(*id)["start_unix_ms"], nullptr);

  // The holder ends: its memory frees, and the job starts on GPU 0.
  const int64_t freed_ms = NowUnixMs();
  kill(holder.pid(), SIGKILL);
  ASSERT_TRUE(holder.WaitForExit(30));
  json job = q.WaitForEnd(*id);
  ASSERT_EQ(StateOf(job), "succeeded") << job.dump(2) << q.Log();
  EXPECT_EQ(job["gpu_indices"], json::array({0})) << job.dump(2);
  EXPECT_EQ(job["gpu_uuids"], json::array({kGpu0})) << job.dump(2);
  ASSERT_TRUE(job["start_unix_ms"].is_number_integer()) << job.dump(2);
  EXPECT_GE(job["start_unix_ms"].get<int64_t>(), freed_ms - 50)
      << "started before the memory was freed";
  EXPECT_EQ(job["exit_code"], 0);
  EXPECT_EQ(job["end_reason"], json("exit"));

  RunResult logs = q.Gw({"logs", std::to_string(*id)});
  ASSERT_EQ(logs.exit_code, 0) << Trace(logs);
  EXPECT_EQ(logs.out, std::string("CVD=") + kGpu0 + " ORDER=PCI_BUS_ID\n");
}

// --- 2. Reservation: no burst on one GPU -------------------------------------

TEST(QueueE2e, ReservationKeepsABurstOfSlowAllocatorsApart) {
  QueueServer q("queue-two-free.json");
  ASSERT_TRUE(q.Start());
  // Each job needs 30 GiB (+ the 512 MiB margin) of a GPU's 81051 MiB, so
  // two fit on a GPU and a third never does; none allocates for a second,
  // so a GPU looks empty while it fills. The job logs its own start and end
  // with its GPU, so overlap is judged from what really ran.
  const std::string script =
      "echo \"$CUDA_VISIBLE_DEVICES $(date +%s%N) start\" >> \"$MARK/events\"; sleep 1; "
      "echo \"$CUDA_VISIBLE_DEVICES 30000\" > \"$REG/$$\"; sleep 3; "
      "echo \"$CUDA_VISIBLE_DEVICES $(date +%s%N) end\" >> \"$MARK/events\"";
  constexpr int kJobs = 6;
  std::vector<int64_t> ids;
  {
    auto c = RawConnection::Open(q.socket());
    ASSERT_TRUE(c);
    for (int i = 0; i < kJobs; ++i) {
      json spec = SpecFor({"/bin/sh", "-c", script}, q.ClientOptions());
      spec["vram_bytes"] = 30 * kGiB;
      auto r = c->Call({{"v", 1}, {"op", "submit"}, {"spec", spec}});
      ASSERT_TRUE(r && r->value("ok", false)) << (r ? r->dump() : "no reply");
      ids.push_back((*r)["job"].get<int64_t>());
    }
  }

  // Four start (two per GPU); the other two wait for memory.
  json queue;
  auto running = [](const json& jobs) {
    int n = 0;
    for (const json& j : jobs) n += IsRunningState(j);
    return n;
  };
  ASSERT_TRUE(Eventually([&] {
    auto r = q.Call({{"op", "queue"}});
    if (!r || !r->value("ok", false)) return false;
    queue = (*r)["jobs"];
    return running(queue) == 4;
  })) << queue.dump(2);
  std::map<int, int> per_gpu;
  int waiting = 0;
  for (const json& j : queue) {
    if (IsRunningState(j)) {
      for (const json& g : j["gpu_indices"]) per_gpu[g.get<int>()]++;
    } else if (StateOf(j) == "queued") {
      ++waiting;
      ASSERT_TRUE(j.contains("wait_reason")) << j.dump(2);
      EXPECT_EQ(j["wait_reason"].value("code", ""), "resources") << j.dump(2);
    }
  }
  EXPECT_EQ(per_gpu[0], 2) << queue.dump(2);
  EXPECT_EQ(per_gpu[1], 2) << queue.dump(2);
  EXPECT_EQ(waiting, 2) << queue.dump(2);

  for (int64_t id : ids) {
    json j = q.WaitForEnd(id);
    EXPECT_EQ(StateOf(j), "succeeded") << j.dump(2);
  }

  // What really ran: at most two at once on each GPU, four at the peak.
  struct Event {
    long long t;
    int delta;
    std::string gpu;
  };
  std::vector<Event> events;
  std::ifstream in(q.mark() + "/events");
  for (std::string gpu, what; in >> gpu;) {
    long long t = 0;
    in >> t >> what;
    events.push_back({t, what == "start" ? 1 : -1, gpu});
  }
  ASSERT_EQ(events.size(), 2u * kJobs) << ReadFileOrEmpty(q.mark() + "/events");
  std::sort(events.begin(), events.end(), [](const Event& a, const Event& b) {
    return a.t != b.t ? a.t < b.t : a.delta < b.delta;
  });
  std::map<std::string, int> now, peak;
  int total = 0, total_peak = 0;
  for (const Event& e : events) {
    now[e.gpu] += e.delta;
    peak[e.gpu] = std::max(peak[e.gpu], now[e.gpu]);
    total += e.delta;
    total_peak = std::max(total_peak, total);
  }
  EXPECT_EQ(peak.size(), 2u) << ReadFileOrEmpty(q.mark() + "/events");
  EXPECT_LE(peak[kGpu0], 2) << ReadFileOrEmpty(q.mark() + "/events");
  EXPECT_LE(peak[kGpu1], 2) << ReadFileOrEmpty(q.mark() + "/events");
  EXPECT_EQ(total_peak, 4) << ReadFileOrEmpty(q.mark() + "/events");
}

// --- 3. Concurrent submits ---------------------------------------------------

TEST(QueueE2e, FiftyConcurrentSubmitsFromFiveClientsAllRunOnce) {
  QueueServer q("queue-two-free.json");
  ASSERT_TRUE(q.Start());
  constexpr int kClients = 5;
  constexpr int kEach = 10;
  std::mutex mu;
  std::map<int64_t, std::string> returned;
  std::vector<std::thread> clients;
  for (int p = 0; p < kClients; ++p) {
    clients.emplace_back([&, p] {
      for (int k = 0; k < kEach; ++k) {
        const std::string tag = "c" + std::to_string(p) + "-" + std::to_string(k);
        auto id =
            q.Submit({"--gpus", "0", "--", "/bin/sh", "-c", "echo \"$0\" >> \"$MARK/ran\"", tag});
        std::lock_guard<std::mutex> lock(mu);
        if (id) returned[*id] = tag;
      }
    });
  }
  for (auto& t : clients) t.join();
  ASSERT_EQ(returned.size(), static_cast<size_t>(kClients * kEach)) << "daemon log:\n" << q.Log();

  for (const auto& [id, tag] : returned) {
    json j = q.WaitForEnd(id);
    EXPECT_EQ(StateOf(j), "succeeded") << tag << ": " << j.dump(2);
  }
  RunResult r = q.Gw({"jobs", "--json", "--all"});
  ASSERT_EQ(r.exit_code, 0) << Trace(r);
  json doc = ParseJson(r.out);
  ASSERT_TRUE(doc.contains("jobs")) << r.out;
  EXPECT_EQ(doc["schema"], json("gpuwarden.jobs"));
  ASSERT_EQ(doc["jobs"].size(), returned.size());
  std::set<int64_t> ids;
  std::set<std::string> tags;
  for (const json& j : doc["jobs"]) {
    const int64_t id = j.value("id", int64_t{-1});
    EXPECT_TRUE(ids.insert(id).second) << "id listed twice: " << id;
    ASSERT_EQ(j["argv"].size(), 4u) << j.dump();
    const std::string tag = j["argv"][3].get<std::string>();
    EXPECT_TRUE(tags.insert(tag).second) << "command listed twice: " << tag;
    ASSERT_EQ(returned.count(id), 1u) << "not an id a submit returned: " << id;
    EXPECT_EQ(returned[id], tag);
    EXPECT_EQ(StateOf(j), "succeeded") << j.dump();
  }
  // Each command ran exactly once.
  std::map<std::string, int> ran;
  std::ifstream in(q.mark() + "/ran");
  for (std::string line; std::getline(in, line);) ran[line]++;
  EXPECT_EQ(ran.size(), returned.size());
  for (const auto& [tag, n] : ran) EXPECT_EQ(n, 1) << tag;
}

// --- 4. cancel / hold / release ----------------------------------------------

TEST(QueueE2e, HoldReleaseAndCancelQueuedAndRunningJobs) {
  QueueServer q("queue-two-free.json");
  ASSERT_TRUE(q.Start());
  // A job that takes both GPUs whole keeps the others waiting.
  const auto blocker = q.Submit(
      {"--gpus", "2", "--", "/bin/sh", "-c", "echo $$ > \"$MARK/blocker.pid\"; exec sleep 300"});
  ASSERT_TRUE(blocker);
  json b = q.WaitForState(*blocker, "running");
  ASSERT_EQ(StateOf(b), "running") << b.dump(2);
  ASSERT_TRUE(Eventually([&] { return ReadPidFile(q.mark() + "/blocker.pid").has_value(); }));
  const pid_t blocker_pid = *ReadPidFile(q.mark() + "/blocker.pid");
  EXPECT_TRUE(ProcessAlive(blocker_pid));
  // The JOB names the job's process while it runs.
  b = q.WaitForJob(
      *blocker, [](const json& j) { return j["pid"].is_number_integer(); }, 10);
  EXPECT_EQ(b["pid"], blocker_pid) << b.dump(2);

  auto touch = [](const std::string& name) {
    return std::vector<std::string>{"--vram",  "10G", "--",
                                    "/bin/sh", "-c",  "touch \"$MARK/" + name + "\""};
  };
  const auto held = q.Submit(touch("held"));
  const auto doomed = q.Submit(touch("doomed"));
  ASSERT_TRUE(held && doomed);
  json h = q.WaitForJob(*held, Waits);
  ASSERT_TRUE(Waits(h)) << h.dump(2);

  RunResult r = q.Gw({"hold", std::to_string(*held)});
  ASSERT_EQ(r.exit_code, 0) << Trace(r);
  EXPECT_EQ(r.out, "job " + std::to_string(*held) + ": held\n");
  EXPECT_EQ(StateOf(q.Job(*held)), "held");

  // A running job cannot be held.
  r = q.Gw({"hold", std::to_string(*blocker)});
  EXPECT_EQ(r.exit_code, kExitRefused) << Trace(r);
  EXPECT_EQ(StateOf(q.Job(*blocker)), "running");

  // Cancelling a queued job: cancelled, never ran.
  r = q.Gw({"cancel", std::to_string(*doomed)});
  ASSERT_EQ(r.exit_code, 0) << Trace(r);
  json d = q.Job(*doomed);
  EXPECT_EQ(StateOf(d), "cancelled") << d.dump(2);
  EXPECT_EQ(d["end_reason"], json("cancelled")) << d.dump(2);
  EXPECT_EQ(d["start_unix_ms"], nullptr) << d.dump(2);

  // Cancelling the running job stops it: its process goes, state cancelled.
  r = q.Gw({"cancel", std::to_string(*blocker)});
  ASSERT_EQ(r.exit_code, 0) << Trace(r);
  b = q.WaitForEnd(*blocker);
  EXPECT_EQ(StateOf(b), "cancelled") << b.dump(2);
  EXPECT_EQ(b["end_reason"], json("cancelled")) << b.dump(2);
  EXPECT_TRUE(Eventually([&] { return !ProcessAlive(blocker_pid); }, 30))
      << "the cancelled job's process " << blocker_pid << " still runs";

  // The GPUs are free now: a later job runs, the held one does not.
  const auto later = q.Submit(touch("later"));
  ASSERT_TRUE(later);
  json l = q.WaitForEnd(*later);
  EXPECT_EQ(StateOf(l), "succeeded") << l.dump(2);
  EXPECT_TRUE(Exists(q.mark() + "/later"));
  for (int i = 0; i < 10; ++i) {
    h = q.Job(*held);
    ASSERT_EQ(StateOf(h), "held") << h.dump(2);
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_EQ(h["start_unix_ms"], nullptr) << h.dump(2);
  if (h.contains("wait_reason")) {
    EXPECT_EQ(h["wait_reason"].value("code", ""), "held");
  }
  EXPECT_FALSE(Exists(q.mark() + "/held"));

  r = q.Gw({"release", std::to_string(*held)});
  ASSERT_EQ(r.exit_code, 0) << Trace(r);
  EXPECT_EQ(r.out, "job " + std::to_string(*held) + ": released (queued)\n");
  h = q.WaitForEnd(*held);
  EXPECT_EQ(StateOf(h), "succeeded") << h.dump(2);
  EXPECT_TRUE(Exists(q.mark() + "/held"));

  EXPECT_FALSE(Exists(q.mark() + "/doomed"));
  EXPECT_EQ(StateOf(q.Job(*doomed)), "cancelled");
  // A job that ended cannot be cancelled again.
  r = q.Gw({"cancel", std::to_string(*doomed)});
  EXPECT_EQ(r.exit_code, kExitRefused) << Trace(r);
}

// --- 5. VRAM guard -----------------------------------------------------------

TEST(QueueE2e, VramGuardStopsAJobThatUsesMoreThanItAskedFor) {
  QueueServer q("queue-two-free.json");
  ASSERT_TRUE(q.Start());
  const auto id = q.Submit({"--vram", "10G", "--", "/bin/sh", "-c",
                            "echo $$ > \"$MARK/pid\"; "
                            "echo \"$CUDA_VISIBLE_DEVICES 30000\" > \"$REG/$$\"; sleep 120"});
  ASSERT_TRUE(id);
  json j = q.WaitForEnd(*id, 60);
  ASSERT_TRUE(IsEnded(j)) << j.dump(2);
  EXPECT_EQ(StateOf(j), "failed") << j.dump(2);
  EXPECT_EQ(j["end_reason"], json("vram_limit")) << j.dump(2);
  ASSERT_TRUE(j["peak_vram_bytes"].is_number_integer()) << j.dump(2);
  EXPECT_EQ(j["peak_vram_bytes"].get<int64_t>(), int64_t{30000} << 20) << j.dump(2);
  const auto pid = ReadPidFile(q.mark() + "/pid");
  ASSERT_TRUE(pid);
  EXPECT_TRUE(Eventually([&] { return !ProcessAlive(*pid); }, 30));

  RunResult err = q.Gw({"logs", "--stderr", std::to_string(*id)});
  ASSERT_EQ(err.exit_code, 0) << Trace(err);
  EXPECT_NE(err.out.find("gpuwarden: job " + std::to_string(*id) + " uses"), std::string::npos)
      << err.out;
  EXPECT_NE(err.out.find("over its --vram"), std::string::npos) << err.out;
}

// --- 6. run --wait -----------------------------------------------------------

TEST(QueueE2e, RunWaitStreamsOutputAndExitsWithTheJobsStatus) {
  QueueServer q("queue-two-free.json");
  ASSERT_TRUE(q.Start());
  RunResult r = q.Gw({"run", "--wait", "--", "/bin/sh", "-c",
                      "echo first-line; sleep 1; echo second-line; echo to-stderr >&2; exit 3"});
  EXPECT_EQ(r.exit_code, 3) << Trace(r);
  EXPECT_EQ(r.out, "first-line\nsecond-line\n") << Trace(r);
  EXPECT_NE(r.err.find("to-stderr"), std::string::npos) << Trace(r);

  r = q.Gw({"run", "--wait", "--", "/bin/sh", "-c", "echo fine"});
  EXPECT_EQ(r.exit_code, 0) << Trace(r);
  EXPECT_EQ(r.out, "fine\n") << Trace(r);

  // A command that does not exist is refused at submit (exit 19).
  r = q.Gw({"run", "--wait", "--", "/nonexistent"});
  EXPECT_EQ(r.exit_code, 19) << Trace(r);
  EXPECT_NE(r.err.find("/nonexistent"), std::string::npos) << Trace(r);
}

// --- 7. --after --------------------------------------------------------------

TEST(QueueE2e, AfterWaitsForSuccessAndFailsWithAFailedDependency) {
  QueueServer q("queue-two-free.json");
  ASSERT_TRUE(q.Start());
  const auto a = q.Submit({"--gpus", "0", "--", "/bin/sh", "-c", "sleep 2; touch \"$MARK/a\""});
  ASSERT_TRUE(a);
  const auto b = q.Submit({"--after", std::to_string(*a), "--gpus", "0", "--", "/bin/sh", "-c",
                           "test -e \"$MARK/a\" && echo saw-a"});
  ASSERT_TRUE(b);
  json bj = q.WaitForJob(*b, Waits);
  ASSERT_TRUE(Waits(bj)) << bj.dump(2);
  EXPECT_EQ(bj["wait_reason"].value("code", ""), "dependency") << bj.dump(2);
  EXPECT_EQ(bj["after"], json::array({*a})) << bj.dump(2);

  json aj = q.WaitForEnd(*a);
  EXPECT_EQ(StateOf(aj), "succeeded") << aj.dump(2);
  bj = q.WaitForEnd(*b);
  ASSERT_EQ(StateOf(bj), "succeeded") << bj.dump(2);
  ASSERT_TRUE(aj["end_unix_ms"].is_number_integer() && bj["start_unix_ms"].is_number_integer());
  EXPECT_GE(bj["start_unix_ms"].get<int64_t>(), aj["end_unix_ms"].get<int64_t>());
  RunResult logs = q.Gw({"logs", std::to_string(*b)});
  EXPECT_EQ(logs.out, "saw-a\n") << Trace(logs);

  // After a failing job: fails with end_reason dependency, never runs.
  const auto a2 = q.Submit({"--gpus", "0", "--", "/bin/sh", "-c", "sleep 1; exit 1"});
  ASSERT_TRUE(a2);
  const auto b2 = q.Submit(
      {"--after", std::to_string(*a2), "--gpus", "0", "--", "/bin/sh", "-c", "touch \"$MARK/b2\""});
  ASSERT_TRUE(b2);
  json a2j = q.WaitForEnd(*a2);
  EXPECT_EQ(StateOf(a2j), "failed") << a2j.dump(2);
  EXPECT_EQ(a2j["exit_code"], 1) << a2j.dump(2);
  json b2j = q.WaitForEnd(*b2);
  EXPECT_EQ(StateOf(b2j), "failed") << b2j.dump(2);
  EXPECT_EQ(b2j["end_reason"], json("dependency")) << b2j.dump(2);
  EXPECT_EQ(b2j["start_unix_ms"], nullptr) << b2j.dump(2);
  EXPECT_FALSE(Exists(q.mark() + "/b2"));

  // After a job that does not exist: refused at submit (it could never run),
  // naming the flag.
  RunResult b3 = q.Gw({"run", "--detach", "--after", "999999", "--gpus", "0", "--", "/bin/sh", "-c",
                       "touch \"$MARK/b3\""});
  EXPECT_EQ(b3.exit_code, kExitUnsatisfiable) << Trace(b3);
  EXPECT_NE(b3.err.find("--after 999999: no such job"), std::string::npos) << Trace(b3);
  EXPECT_FALSE(Exists(q.mark() + "/b3"));

  // --after right before the command (and the command with options of its
  // own) is the usual spelling; A succeeded, so this one runs at once.
  const auto b4 = q.Submit(
      {"--gpus", "0", "--after", std::to_string(*a), "--", "/bin/sh", "-c", "echo after-a"});
  ASSERT_TRUE(b4);
  json b4j = q.WaitForEnd(*b4);
  EXPECT_EQ(StateOf(b4j), "succeeded") << b4j.dump(2);
  EXPECT_EQ(b4j["argv"], json::array({"/bin/sh", "-c", "echo after-a"})) << b4j.dump(2);
}

// --- 8. Time limit -----------------------------------------------------------

TEST(QueueE2e, TimeLimitStopsTheJob) {
  QueueServer q("queue-two-free.json");
  ASSERT_TRUE(q.Start());
  const auto start = std::chrono::steady_clock::now();
  const auto id = q.Submit({"--gpus", "0", "--time-limit", "2s", "--", "/bin/sleep", "100"});
  ASSERT_TRUE(id);
  json j = q.WaitForEnd(*id, 60);
  const double took = SecondsSince(start);
  ASSERT_TRUE(IsEnded(j)) << j.dump(2);
  EXPECT_EQ(StateOf(j), "failed") << j.dump(2);
  EXPECT_EQ(j["end_reason"], json("time_limit")) << j.dump(2);
  EXPECT_EQ(j["time_limit_s"], 2) << j.dump(2);
  ASSERT_TRUE(j["start_unix_ms"].is_number_integer() && j["end_unix_ms"].is_number_integer());
  const int64_t ran_ms = j["end_unix_ms"].get<int64_t>() - j["start_unix_ms"].get<int64_t>();
  EXPECT_GE(ran_ms, 1900) << j.dump(2);
  EXPECT_LT(ran_ms, 15000) << j.dump(2);  // sleep ends at the SIGTERM; no grace needed.
  EXPECT_LT(took, 40) << j.dump(2);
}

// --- 9. Two real users -------------------------------------------------------

// The system user `name`, created when missing (root only).
std::optional<TestUser> EnsureUser(const std::string& name, std::string* why_not) {
  auto look_up = [&]() -> std::optional<TestUser> {
    passwd pw{};
    passwd* found = nullptr;
    std::vector<char> buf(16384);
    if (getpwnam_r(name.c_str(), &pw, buf.data(), buf.size(), &found) != 0 || found == nullptr) {
      return std::nullopt;
    }
    return TestUser{name, pw.pw_uid, pw.pw_gid};
  };
  if (geteuid() != 0) {
    *why_not = "needs root to create and switch to the test user " + name;
    return std::nullopt;
  }
  std::string last;
  for (int attempt = 0; attempt < 5; ++attempt) {
    if (auto u = look_up()) return u;
    RunResult r = RunProcess({"/usr/sbin/useradd", "--system", "--no-create-home", "--shell",
                              "/usr/sbin/nologin", name});
    last = Trace(r);
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  *why_not = "cannot create the test user " + name + ": " + last;
  return std::nullopt;
}

// Makes `group` exist and `user` a member; its gid.
std::optional<gid_t> EnsureMembership(const std::string& group, const TestUser& user,
                                      std::string* why_not) {
  auto gid_of = [&]() -> std::optional<gid_t> {
    struct group gr {};
    struct group* found = nullptr;
    std::vector<char> buf(65536);
    if (getgrnam_r(group.c_str(), &gr, buf.data(), buf.size(), &found) != 0 || found == nullptr) {
      return std::nullopt;
    }
    return gr.gr_gid;
  };
  auto member = [&](gid_t gid) {
    int n = 64;
    std::vector<gid_t> groups(static_cast<size_t>(n));
    if (getgrouplist(user.name.c_str(), user.gid, groups.data(), &n) < 0) {
      groups.resize(static_cast<size_t>(n));
      if (getgrouplist(user.name.c_str(), user.gid, groups.data(), &n) < 0) return false;
    }
    groups.resize(static_cast<size_t>(n));
    return std::find(groups.begin(), groups.end(), gid) != groups.end();
  };
  std::string last;
  for (int attempt = 0; attempt < 5; ++attempt) {
    std::optional<gid_t> gid = gid_of();
    if (!gid) {
      last = Trace(RunProcess({"/usr/sbin/groupadd", "--system", group}));
      continue;
    }
    if (member(*gid)) return gid;
    last = Trace(RunProcess({"/usr/sbin/usermod", "-a", "-G", group, user.name}));
    if (member(*gid)) return gid;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  *why_not = "cannot make " + user.name + " a member of " + group + ": " + last;
  return std::nullopt;
}

TEST(QueueE2e, UsersActOnlyOnTheirOwnJobsAndJobsRunAsTheirOwner) {
  GW_REQUIRE_TEST_USER(alice);  // gw-e2e
  std::string why_not;
  const std::optional<TestUser> bob = EnsureUser("gw-e2e2", &why_not);
  if (!bob) GTEST_SKIP() << why_not;
  const std::optional<gid_t> extra = EnsureMembership("gw-e2e-grp", alice, &why_not);
  ASSERT_TRUE(extra) << why_not;

  QueueServer q("queue-two-free.json");
  ASSERT_TRUE(q.Start());
  const std::string alice_home = q.dir() + "/alice";
  const std::string bob_home = q.dir() + "/bob";
  for (const auto& [home, user] : {std::pair{alice_home, alice}, std::pair{bob_home, *bob}}) {
    mkdir(home.c_str(), 0700);
    ASSERT_TRUE(GiveDirectoryTo(home, user));
    chmod(home.c_str(), 0700);
  }
  // The client runs as the user in the user's own directory (the job's cwd).
  auto as = [&](const TestUser& user, const std::string& home,
                const std::vector<std::string>& args) {
    std::vector<std::string> argv = {"/usr/bin/env",    "-C",       home,
                                     GpuwardenBinary(), "--socket", q.socket()};
    argv.insert(argv.end(), args.begin(), args.end());
    return RunProcess(argv, AsUser(q.ClientOptions(), user, home));
  };

  RunResult r = as(alice, alice_home,
                   {"run", "--detach", "--gpus", "0", "--", "/bin/sh", "-c",
                    "/usr/bin/id; echo $$ > \"$MARK/alice.pid\"; exec sleep 300"});
  ASSERT_EQ(r.exit_code, 0) << Trace(r);
  const int64_t id = std::stoll(r.out);
  const std::string job = std::to_string(id);
  json j = q.WaitForState(id, "running");
  ASSERT_EQ(StateOf(j), "running") << j.dump(2) << q.Log();
  EXPECT_EQ(j["user"], alice.name);
  EXPECT_EQ(j["uid"], alice.uid);
  ASSERT_TRUE(Eventually([&] { return ReadPidFile(q.mark() + "/alice.pid").has_value(); }));
  const pid_t job_pid = *ReadPidFile(q.mark() + "/alice.pid");
  EXPECT_EQ(ProcessUid(job_pid), alice.uid);

  // The job runs as alice: uid, gid and her supplementary group.
  std::string id_out;
  ASSERT_TRUE(Eventually([&] {
    RunResult logs = as(alice, alice_home, {"logs", job});
    id_out = logs.out;
    return logs.exit_code == 0 && id_out.find("groups=") != std::string::npos;
  })) << id_out;
  EXPECT_NE(id_out.find("uid=" + std::to_string(alice.uid) + "("), std::string::npos) << id_out;
  EXPECT_NE(id_out.find("gid=" + std::to_string(alice.gid) + "("), std::string::npos) << id_out;
  EXPECT_NE(id_out.find(std::to_string(*extra) + "(gw-e2e-grp)"), std::string::npos) << id_out;

  // Her logs are hers alone.
  for (const char* stream : {"stdout", "stderr"}) {
    struct stat st {};
    const std::string path = q.state_dir() + "/jobs/" + job + "/" + stream;
    ASSERT_EQ(stat(path.c_str(), &st), 0) << path;
    EXPECT_EQ(st.st_uid, alice.uid) << path;
    EXPECT_EQ(st.st_mode & 07777, 0600u) << path;
  }

  // Bob can neither cancel nor hold her job, nor read her logs.
  r = as(*bob, bob_home, {"cancel", job});
  EXPECT_EQ(r.exit_code, kExitRefused) << Trace(r);
  r = as(*bob, bob_home, {"hold", job});
  EXPECT_EQ(r.exit_code, kExitRefused) << Trace(r);
  r = as(*bob, bob_home, {"release", job});
  EXPECT_EQ(r.exit_code, kExitRefused) << Trace(r);
  r = as(*bob, bob_home, {"logs", job});
  EXPECT_EQ(r.exit_code, kExitRefused) << Trace(r);
  EXPECT_EQ(r.out, "");
  r = as(*bob, bob_home, {"logs", "--stderr", job});
  EXPECT_EQ(r.exit_code, kExitRefused) << Trace(r);
  EXPECT_EQ(StateOf(q.Job(id)), "running");
  EXPECT_TRUE(ProcessAlive(job_pid));

  // Bob sees her job's public fields, not her environment or directory.
  r = as(*bob, bob_home, {"jobs", "--json"});
  ASSERT_EQ(r.exit_code, 0) << Trace(r);
  json seen = FindJob(JobsIn(r.out), id);
  ASSERT_TRUE(seen.is_object()) << r.out;
  EXPECT_EQ(seen["user"], alice.name);
  EXPECT_TRUE(seen.contains("argv")) << seen.dump(2);
  EXPECT_FALSE(seen.contains("env")) << seen.dump(2);
  EXPECT_FALSE(seen.contains("cwd")) << seen.dump(2);
  EXPECT_FALSE(seen.contains("umask")) << seen.dump(2);
  r = as(*bob, bob_home, {"queue", "--json"});
  ASSERT_EQ(r.exit_code, 0) << Trace(r);
  seen = FindJob(JobsIn(r.out), id);
  ASSERT_TRUE(seen.is_object()) << r.out;
  EXPECT_FALSE(seen.contains("env")) << seen.dump(2);
  EXPECT_FALSE(seen.contains("cwd")) << seen.dump(2);
  // Not even when he names it.
  r = as(*bob, bob_home, {"jobs", "--json", job});
  ASSERT_EQ(r.exit_code, 0) << Trace(r);
  seen = FindJob(JobsIn(r.out), id);
  ASSERT_TRUE(seen.is_object()) << r.out;
  EXPECT_FALSE(seen.contains("env")) << seen.dump(2);
  EXPECT_FALSE(seen.contains("cwd")) << seen.dump(2);
  // She sees both when she names her job (lists stay small: no environments).
  r = as(alice, alice_home, {"jobs", "--json", job});
  ASSERT_EQ(r.exit_code, 0) << Trace(r);
  seen = FindJob(JobsIn(r.out), id);
  EXPECT_EQ(seen["cwd"], alice_home) << seen.dump(2);
  EXPECT_TRUE(seen.contains("env")) << seen.dump(2);
  r = as(alice, alice_home, {"jobs", job});
  ASSERT_EQ(r.exit_code, 0) << Trace(r);
  EXPECT_NE(r.out.find("directory  " + alice_home), std::string::npos) << r.out;

  // Bob may not jump the queue.
  r = as(*bob, bob_home, {"run", "--detach", "--priority", "5", "--gpus", "0", "--", "/bin/true"});
  EXPECT_EQ(r.exit_code, kExitRefused) << Trace(r);
  json all = q.Jobs();
  EXPECT_EQ(all.size(), 1u) << all.dump(2);

  // Alice may cancel her own.
  r = as(alice, alice_home, {"cancel", job});
  EXPECT_EQ(r.exit_code, 0) << Trace(r);
  j = q.WaitForEnd(id);
  EXPECT_EQ(StateOf(j), "cancelled") << j.dump(2);
  EXPECT_TRUE(Eventually([&] { return !ProcessAlive(job_pid); }, 30));
}

// --- 10. Hostile clients -----------------------------------------------------

TEST(QueueE2e, HostileMessagesGetErrorsAndTheDaemonKeepsServing) {
  QueueServer q("queue-two-free.json");
  ASSERT_TRUE(q.Start());
  auto fresh = [&] {
    auto c = RawConnection::Open(q.socket());
    EXPECT_TRUE(c) << "the daemon no longer accepts connections";
    return c;
  };
  // Each line gets one error reply, on a fresh connection and on one shared
  // connection (the daemon keeps a connection open after an error).
  const json spec_ok = {{"argv", {"/bin/true"}}, {"cwd", "/"}, {"gpus", 0}};
  auto with = [&](const char* key, json value) {
    json s = spec_ok;
    s[key] = std::move(value);
    return json{{"v", 1}, {"op", "submit"}, {"spec", s}}.dump();
  };
  json many = json::array();
  for (int i = 0; i < 100000; ++i) many.push_back("a");
  std::string garbage = "\xff\xfe";
  std::mt19937 rng(42);
  for (int i = 0; i < 4096; ++i) {
    char ch = static_cast<char>(rng() & 0xFF);
    garbage += ch == '\n' ? '\0' : ch;
  }
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"not json at all", "bad_request"},
      {"[1, 2, 3]", "bad_request"},
      {"42", "bad_request"},
      {"{}", "bad_request"},
      {R"({"v": 1, "op": "frobnicate"})", "bad_request"},
      {R"({"v": 1, "op": 7})", "bad_request"},
      {R"({"v": 2, "op": "hello"})", "version"},
      {R"({"v": "1", "op": "hello"})", "version"},
      {R"({"v": 1, "op": "submit"})", "bad_request"},
      {R"({"v": 1, "op": "submit", "spec": []})", "bad_request"},
      {R"({"v": 1, "op": "submit", "spec": {"cwd": "/"}})", "bad_request"},
      {R"({"v": 1, "op": "submit", "spec": {"argv": ["/bin/true"]}})", "bad_request"},
      {R"({"v": 1, "op": "submit", "spec": {"argv": [], "cwd": "/"}})", "bad_request"},
      {with("argv", "/bin/true"), "bad_request"},
      {with("argv", json::array({json::array({"nested"})})), "bad_request"},
      {with("argv", json::array({std::string("a\0b", 3)})), "bad_request"},
      {with("cwd", "relative/dir"), "bad_request"},
      {with("cwd", 17), "bad_request"},
      {with("gpus", "two"), "bad_request"},
      {with("gpus", -1), "bad_request"},
      {with("gpus", 65), "bad_request"},
      {with("vram_bytes", -5), "bad_request"},
      {with("vram_bytes", 1.5), "bad_request"},
      {with("priority", 1e300), "bad_request"},
      {with("priority", 18446744073709551615ull), "bad_request"},
      {with("umask", "022"), "bad_request"},
      {with("env", json::array({"NOEQUALS"})), "bad_request"},
      {with("env", "PATH=/bin"), "bad_request"},
      {with("after", "1"), "bad_request"},
      {with("window", "25:00-26:00"), "bad_request"},
      {with("time_limit_s", 0), "bad_request"},
      {with("argv", many), "bad_request"},
      {with("env", many), "bad_request"},
      {with("argv", json::array({json{{"base64", "!!!!"}}})), "bad_request"},
      {with("argv", json::array({json{{"base64", "abc"}}})), "bad_request"},
      {with("argv", json::array({json{{"base64", 5}}})), "bad_request"},
      {R"({"v": 1, "op": "cancel"})", "bad_request"},
      {R"({"v": 1, "op": "cancel", "job": "seven"})", "bad_request"},
      {R"({"v": 1, "op": "cancel", "job": -3})", "bad_request"},
      {R"({"v": 1, "op": "cancel", "job": 999999})", "not_found"},
      {R"({"v": 1, "op": "hold", "job": 1.5})", "bad_request"},
      {R"({"v": 1, "op": "job", "job": null})", "bad_request"},
      {R"({"v": 1, "op": "logs"})", "bad_request"},
      {R"({"v": 1, "op": "logs", "job": 999999})", "not_found"},
      {garbage, "bad_request"},
  };
  auto shared = fresh();
  ASSERT_TRUE(shared);
  for (const auto& [line, code] : cases) {
    const std::string what = line.substr(0, 120);
    auto c = fresh();
    ASSERT_TRUE(c);
    ASSERT_TRUE(c->Send(line + "\n")) << what;
    std::optional<std::string> reply = c->ReadLine(30);
    ASSERT_TRUE(reply) << what << ": no reply";
    json parsed = ParseJson(*reply);
    ExpectError(parsed.is_discarded() ? std::nullopt : std::optional<json>(parsed), code, what);
    ASSERT_TRUE(shared->Send(line + "\n")) << what;
    reply = shared->ReadLine(30);
    ASSERT_TRUE(reply) << what << ": no reply on the shared connection";
    parsed = ParseJson(*reply);
    ExpectError(parsed.is_discarded() ? std::nullopt : std::optional<json>(parsed), code, what);
  }
  // The shared connection still works for a good request.
  auto hello = shared->Call({{"v", 1}, {"op", "hello"}});
  ASSERT_TRUE(hello);
  EXPECT_EQ(hello->value("ok", false), true) << hello->dump();
  EXPECT_EQ(hello->value("mode", ""), geteuid() == 0 ? "system" : "personal");

  // A 2 MiB line without a newline: too_long (when the reply gets through
  // before the daemon drops the connection), and the connection is closed.
  {
    auto c = fresh();
    ASSERT_TRUE(c);
    (void)c->Send(std::string(2 << 20, 'x'));
    std::optional<std::string> reply = c->ReadLine(30);
    if (reply) ExpectError(ParseJson(*reply), "too_long", "2 MiB line");
    EXPECT_TRUE(c->WaitClosed(30)) << "the daemon kept a connection after 2 MiB without newline";
  }
  // Half a line, then the client goes away.
  for (int i = 0; i < 5; ++i) {
    auto c = fresh();
    ASSERT_TRUE(c);
    ASSERT_TRUE(c->Send(R"({"v": 1, "op": "sub)"));
  }
  // 200 connections at once, each with a request in flight.
  {
    std::vector<std::unique_ptr<RawConnection>> conns;
    for (int i = 0; i < 200; ++i) {
      auto c = RawConnection::Open(q.socket());
      ASSERT_TRUE(c) << "connection " << i;
      conns.push_back(std::move(c));
    }
    for (auto& c : conns) ASSERT_TRUE(c->Send("{\"v\": 1, \"op\": \"hello\"}\n"));
    int answered = 0;
    for (auto& c : conns) {
      std::optional<std::string> line = c->ReadLine(60);
      if (line && ParseJson(*line).value("ok", false)) ++answered;
    }
    EXPECT_EQ(answered, 200);
  }

  // Still serving: a normal job runs, and the daemon is the same process.
  ASSERT_TRUE(q.Alive()) << q.Log();
  RunResult r = q.Gw({"run", "--wait", "--gpus", "0", "--", "/bin/sh", "-c", "echo still-here"});
  EXPECT_EQ(r.exit_code, 0) << Trace(r);
  EXPECT_EQ(r.out, "still-here\n") << Trace(r);
  EXPECT_TRUE(q.Alive()) << q.Log();
  // Nothing the hostile requests sent became a job.
  json all = q.Jobs();
  ASSERT_TRUE(all.is_array());
  EXPECT_EQ(all.size(), 1u) << all.dump(2);
  // And it still stops cleanly.
  EXPECT_EQ(q.Stop(), 0) << q.Log();
  EXPECT_FALSE(Exists(q.socket()));
}

// A queue whose list is longer than a request may be (1 MiB) is still listed
// in full by `queue` and `jobs --all`.
TEST(QueueE2e, ALongQueueIsListedInFull) {
  QueueServer q("queue-two-free.json");
  ASSERT_TRUE(q.Start());
  auto c = RawConnection::Open(q.socket());
  ASSERT_TRUE(c);
  // A window that is closed for the next twelve hours keeps them waiting.
  const time_t now = time(nullptr);
  struct tm local;
  localtime_r(&now, &local);
  char window[16];
  std::snprintf(window, sizeof window, "%02d:00-%02d:01", (local.tm_hour + 12) % 24,
                (local.tm_hour + 12) % 24);
  constexpr int kJobs = 600;
  const std::string long_arg(2000, 'a');  // 600 x 2 KB: over 1 MiB of argv alone
  for (int i = 0; i < kJobs; ++i) {
    json spec = SpecFor({"/bin/echo", long_arg, std::to_string(i)}, q.ClientOptions());
    spec["gpus"] = 1;
    spec["window"] = window;
    std::optional<json> r = c->Call({{"v", 1}, {"op", "submit"}, {"spec", spec}}, 60);
    ASSERT_TRUE(r && r->value("ok", false)) << i << ": " << (r ? r->dump() : "no reply");
  }
  RunResult r = q.Gw({"queue", "--json"});
  ASSERT_EQ(r.exit_code, 0) << Trace(r);
  EXPECT_GT(r.out.size(), size_t{1} << 20);
  json listed = JobsIn(r.out);
  ASSERT_EQ(listed.size(), static_cast<size_t>(kJobs)) << r.err;
  EXPECT_EQ(listed[0].value("position", 0), 1);
  EXPECT_EQ(listed[kJobs - 1].value("position", 0), kJobs);
  EXPECT_EQ(listed[0]["wait_reason"].value("code", ""), "window") << listed[0].dump(2);
  for (const json& j : listed) EXPECT_FALSE(j.contains("env")) << j.dump(2);
  r = q.Gw({"jobs", "--all", "--json"});
  ASSERT_EQ(r.exit_code, 0) << Trace(r);
  EXPECT_EQ(JobsIn(r.out).size(), static_cast<size_t>(kJobs));
  r = q.Gw({"queue"});
  ASSERT_EQ(r.exit_code, 0) << Trace(r);
  EXPECT_GE(static_cast<int>(std::count(r.out.begin(), r.out.end(), '\n')), kJobs) << r.err;
}

// The system socket is open to every user: one of them cannot take every
// connection, nor hold one with a request that never ends.
TEST(QueueE2e, NoUserCanTakeEveryConnection) {
  GW_REQUIRE_TEST_USER(alice);  // gw-e2e
  std::string why_not;
  const std::optional<TestUser> bob = EnsureUser("gw-e2e2", &why_not);
  if (!bob) GTEST_SKIP() << why_not;
  QueueServer q("queue-two-free.json");
  ASSERT_TRUE(q.Start());

  // Bob (a child of the test with his uid) opens connections until refused.
  // Built before fork: the child makes only system calls.
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  ASSERT_LT(q.socket().size(), sizeof addr.sun_path);
  std::memcpy(addr.sun_path, q.socket().c_str(), q.socket().size() + 1);
  constexpr int kTries = 100;
  int report[2];
  int go[2];
  ASSERT_EQ(pipe(report), 0);
  ASSERT_EQ(pipe(go), 0);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    close(report[0]);
    close(go[1]);
    if (setgroups(0, nullptr) != 0 || setresgid(bob->gid, bob->gid, bob->gid) != 0 ||
        setresuid(bob->uid, bob->uid, bob->uid) != 0) {
      _exit(2);
    }
    static const char kHello[] = "{\"v\": 1, \"op\": \"hello\"}\n";
    static char reply[4096];
    int served = 0;
    int busy = 0;
    for (int i = 0; i < kTries; ++i) {
      const int fd = socket(AF_UNIX, SOCK_STREAM, 0);
      if (fd < 0 || connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) break;
      (void)!send(fd, kHello, sizeof kHello - 1, MSG_NOSIGNAL);
      ssize_t got = 0;
      for (;;) {
        const ssize_t n = read(fd, reply + got, sizeof reply - 1 - static_cast<size_t>(got));
        if (n <= 0) break;
        got += n;
        if (std::memchr(reply, '\n', static_cast<size_t>(got)) != nullptr) break;
      }
      reply[got] = '\0';
      if (std::strstr(reply, "\"ok\":true") != nullptr) ++served;  // Kept open.
      if (std::strstr(reply, "\"code\":\"busy\"") != nullptr) {
        ++busy;
        close(fd);
      }
    }
    const int counts[2] = {served, busy};
    (void)!write(report[1], counts, sizeof counts);
    char byte;
    (void)!read(go[0], &byte, 1);  // Hold them until the test is done looking.
    _exit(0);
  }
  close(report[1]);
  close(go[0]);
  int counts[2] = {-1, -1};
  const ssize_t n = read(report[0], counts, sizeof counts);
  close(report[0]);
  EXPECT_EQ(n, static_cast<ssize_t>(sizeof counts));
  EXPECT_EQ(counts[0], 64) << "connections bob got";
  EXPECT_EQ(counts[1], kTries - 64) << "refusals bob got";

  // Meanwhile everyone else is served: root, and another user through the CLI.
  std::optional<json> hello = q.Call({{"op", "hello"}});
  ASSERT_TRUE(hello);
  EXPECT_TRUE(hello->value("ok", false)) << hello->dump();
  const std::string alice_home = q.dir() + "/alice";
  mkdir(alice_home.c_str(), 0700);
  ASSERT_TRUE(GiveDirectoryTo(alice_home, alice));
  RunResult r = RunProcess({GpuwardenBinary(), "--socket", q.socket(), "queue"},
                           AsUser(q.ClientOptions(), alice, alice_home));
  EXPECT_EQ(r.exit_code, 0) << Trace(r);
  // And bob is told why, by the CLI too.
  const std::string bob_home = q.dir() + "/bob";
  mkdir(bob_home.c_str(), 0700);
  ASSERT_TRUE(GiveDirectoryTo(bob_home, *bob));
  r = RunProcess({GpuwardenBinary(), "--socket", q.socket(), "queue"},
                 AsUser(q.ClientOptions(), *bob, bob_home));
  // A daemon too busy to serve is one that cannot be reached now (exit 15).
  EXPECT_EQ(r.exit_code, 15) << Trace(r);
  EXPECT_NE(r.err.find("busy"), std::string::npos) << Trace(r);
  close(go[1]);
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  // His connections closed, bob is served again.
  EXPECT_TRUE(Eventually([&] {
    RunResult again = RunProcess({GpuwardenBinary(), "--socket", q.socket(), "queue"},
                                 AsUser(q.ClientOptions(), *bob, bob_home));
    return again.exit_code == 0;
  }));

  // A request that never ends is answered `timeout` and its connection closed.
  auto c = RawConnection::Open(q.socket());
  ASSERT_TRUE(c);
  ASSERT_TRUE(c->Send(R"({"v": 1, "op": "hel)"));
  std::optional<std::string> reply = c->ReadLine(30);
  ASSERT_TRUE(reply) << "no reply to a request without its end";
  ExpectError(ParseJson(*reply), "timeout", "half a request");
  EXPECT_TRUE(c->WaitClosed(30));
  EXPECT_TRUE(q.Alive()) << q.Log();
}

// --- 11. kill -9 at random moments -------------------------------------------

TEST(QueueE2e, SurvivesRepeatedKillNineWithoutLosingOrRepeatingAJob) {
  QueueServer q("queue-two-free.json");
  ASSERT_TRUE(q.Start());
  const unsigned seed = static_cast<unsigned>(NowUnixMs());
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  // Each job leaves "<job id>-<pid>.<ns>" in MARK when it starts, so a second
  // start would leave a second file; it exits with the code its tag names.
  const std::string script =
      "touch \"$MARK/$GPUWARDEN_JOB_ID-$$.$(date +%N)\"; sleep \"$1\"; exit \"$2\"";
  std::mutex mu;
  std::map<std::string, int> attempted;     // Tag -> its exit code; sent, maybe not stored.
  std::map<int64_t, std::string> returned;  // Ids the submits returned -> tag.
  int next = 0;
  // One submit on a fresh connection; records what it knows.
  auto submit = [&](std::mt19937& r, bool no_gpu) {
    std::string tag;
    int code;
    json spec;
    {
      std::lock_guard<std::mutex> lock(mu);
      code = static_cast<int>(r() % 4) * 3;  // 0, 3, 6, 9
      tag = "t" + std::to_string(next++) + "-" + std::to_string(code);
      const std::string sleep_s = std::to_string(1 + r() % 3);
      spec =
          SpecFor({"/bin/sh", "-c", script, tag, sleep_s, std::to_string(code)}, q.ClientOptions());
      if (no_gpu || r() % 2 == 0) {
        spec["gpus"] = 0;
      } else {
        spec["vram_bytes"] = 30 * kGiB;  // Four fit at once: the rest queue.
      }
    }
    auto c = RawConnection::Open(q.socket());
    if (!c) return;  // Not sent: the daemon is down.
    {
      std::lock_guard<std::mutex> lock(mu);
      attempted[tag] = code;
    }
    auto reply = c->Call({{"v", 1}, {"op", "submit"}, {"spec", spec}}, 30);
    if (reply && reply->value("ok", false)) {
      std::lock_guard<std::mutex> lock(mu);
      returned[(*reply)["job"].get<int64_t>()] = tag;
    }
  };

  constexpr int kCycles = 20;
  const auto test_start = std::chrono::steady_clock::now();
  for (int cycle = 0; cycle < kCycles; ++cycle) {
    submit(rng, false);
    submit(rng, false);
    // Meanwhile another client submits now and then, and back to back in
    // the last moments before the kill, so that some submits are in flight
    // when it lands (those jobs need no GPU: there are many of them).
    std::atomic<bool> stop{false};
    std::atomic<bool> burst{false};
    std::thread background([&, s = rng()] {
      std::mt19937 r(s);
      while (!stop) {
        if (burst) {
          submit(r, true);
          continue;
        }
        submit(r, false);
        for (int i = 0; i < 10 && !burst && !stop; ++i) {
          std::this_thread::sleep_for(std::chrono::milliseconds(15 + r() % 30));
        }
      }
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(50 + rng() % 900));
    burst = true;
    std::this_thread::sleep_for(std::chrono::milliseconds(rng() % 40));
    q.Kill();
    burst = false;
    std::this_thread::sleep_for(std::chrono::milliseconds(rng() % 200));
    const ::testing::AssertionResult started = q.Start();
    stop = true;
    background.join();
    ASSERT_TRUE(started) << "cycle " << cycle;
  }
  const double cycles_s = SecondsSince(test_start);

  // Let everything finish.
  json jobs;
  const bool all_ended = Eventually(
      [&] {
        jobs = q.Jobs();
        if (!jobs.is_array()) return false;
        return std::all_of(jobs.begin(), jobs.end(), [](const json& j) { return IsEnded(j); });
      },
      100);
  ASSERT_TRUE(all_ended) << jobs.dump(2);
  ASSERT_TRUE(q.Alive()) << q.Log();

  // Every job the submits returned is there, once, with its own command;
  // every stored job was one the test sent.
  std::map<std::string, int64_t> tag_to_id;
  std::map<int64_t, std::string> stored;
  for (const json& j : jobs) {
    const int64_t id = j.value("id", int64_t{-1});
    ASSERT_EQ(j["argv"].size(), 6u) << j.dump();
    const std::string tag = j["argv"][3].get<std::string>();
    EXPECT_TRUE(tag_to_id.emplace(tag, id).second) << "stored twice: " << tag;
    EXPECT_TRUE(stored.emplace(id, tag).second) << "id listed twice: " << id;
    EXPECT_EQ(attempted.count(tag), 1u) << "a job nobody sent: " << j.dump();
  }
  for (const auto& [id, tag] : returned) {
    ASSERT_EQ(stored.count(id), 1u) << "submitted job " << id << " (" << tag << ") is gone";
    EXPECT_EQ(stored[id], tag);
  }
  EXPECT_GE(returned.size(), static_cast<size_t>(2 * kCycles));

  // Every job ran exactly once and ended with its own exit code.
  std::map<int64_t, int> starts;
  for (const std::string& name : ListDir(q.mark())) starts[std::stoll(name)]++;
  for (const json& j : jobs) {
    const int64_t id = j["id"].get<int64_t>();
    const int code = attempted[stored[id]];
    SCOPED_TRACE(j.dump());
    EXPECT_EQ(starts[id], 1) << "job " << id << " started " << starts[id] << " times";
    EXPECT_EQ(StateOf(j), code == 0 ? "succeeded" : "failed");
    EXPECT_EQ(j["end_reason"], json("exit"));
    EXPECT_EQ(j["exit_code"], code);
  }
  for (const auto& [id, n] : starts) {
    EXPECT_EQ(stored.count(id), 1u) << "a marker of an unknown job " << id;
  }
  // The supervisors are gone too.
  EXPECT_TRUE(Eventually([&] { return q.Leftovers().empty(); }, 30));
  std::cout << "[ info     ] " << kCycles << " kill -9 cycles in " << cycles_s << " s, "
            << jobs.size() << " jobs (" << returned.size() << " acknowledged)\n";
}

// --- 12. Adoption --------------------------------------------------------------

TEST(QueueE2e, RestartedDaemonAdoptsARunningJobAndRecordsItsExit) {
  QueueServer q("queue-two-free.json");
  ASSERT_TRUE(q.Start());
  const auto id =
      q.Submit({"--gpus", "0", "--", "/bin/sh", "-c", "echo $$ > \"$MARK/pid\"; sleep 6; exit 7"});
  ASSERT_TRUE(id);
  json j = q.WaitForState(*id, "running");
  ASSERT_EQ(StateOf(j), "running") << j.dump(2);
  ASSERT_TRUE(Eventually([&] { return ReadPidFile(q.mark() + "/pid").has_value(); }));
  const pid_t pid = *ReadPidFile(q.mark() + "/pid");

  q.Kill();
  EXPECT_TRUE(ProcessAlive(pid)) << "the job died with the daemon";
  ASSERT_TRUE(q.Start());
  if (ProcessAlive(pid)) {
    // Still running: the new daemon shows it running, with its process.
    j = q.Job(*id);
    if (!IsEnded(j)) {
      EXPECT_EQ(StateOf(j), "running") << j.dump(2);
      EXPECT_EQ(j["pid"], pid) << j.dump(2);
    }
  }
  j = q.WaitForEnd(*id);
  EXPECT_EQ(StateOf(j), "failed") << j.dump(2);
  EXPECT_EQ(j["end_reason"], json("exit")) << j.dump(2);
  EXPECT_EQ(j["exit_code"], 7) << j.dump(2);
  EXPECT_EQ(j["exit_signal"], nullptr) << j.dump(2);
  EXPECT_FALSE(ProcessAlive(pid));
  // Only one run.
  EXPECT_EQ(ListDir(q.mark()).size(), 1u);
}

TEST(QueueE2e, SecondDaemonOnTheSameStateDirectoryOrSocketIsRefused) {
  QueueServer q("queue-two-free.json");
  ASSERT_TRUE(q.Start());
  RunOptions o;
  o.timeout_s = 60;
  o.env["GPUWARDEN_SIM_PROCESS_DIR"] = q.reg();
  o.env["GPUWARDEN_NVML_LIB"] = std::nullopt;
  // The same state directory, another socket.
  RunResult r = RunProcess({DaemonBinary(), "--socket", q.dir() + "/other.sock", "--state-dir",
                            q.state_dir(), "--sim", ScenarioPath("queue-two-free.json")},
                           o);
  EXPECT_EQ(r.exit_code, 2) << Trace(r);
  EXPECT_NE(r.err.find("another gpuwardend"), std::string::npos) << Trace(r);
  EXPECT_FALSE(Exists(q.dir() + "/other.sock"));
  // The same socket, another state directory.
  r = RunProcess({DaemonBinary(), "--socket", q.socket(), "--state-dir", q.dir() + "/other-state",
                  "--sim", ScenarioPath("queue-two-free.json")},
                 o);
  EXPECT_EQ(r.exit_code, 2) << Trace(r);
  EXPECT_NE(r.err.find("already listens"), std::string::npos) << Trace(r);
  // The first one still serves.
  ASSERT_TRUE(q.Alive()) << q.Log();
  RunResult ok = q.Gw({"run", "--wait", "--gpus", "0", "--", "/bin/sh", "-c", "echo served"});
  EXPECT_EQ(ok.exit_code, 0) << Trace(ok);
  EXPECT_EQ(ok.out, "served\n");
}

// --- 13. Killed in the middle of a launch -------------------------------------

// A write transaction on the daemon's database, held from the test: the
// daemon's next write waits (its busy timeout is 10 s) until it ends.
class DatabaseWriteLock {
 public:
  explicit DatabaseWriteLock(const std::string& db_path) {
    if (sqlite3_open_v2(db_path.c_str(), &db_, SQLITE_OPEN_READWRITE, nullptr) != SQLITE_OK) return;
    sqlite3_busy_timeout(db_, 5000);
    held_ = sqlite3_exec(db_, "BEGIN IMMEDIATE", nullptr, nullptr, nullptr) == SQLITE_OK;
  }
  ~DatabaseWriteLock() {
    if (held_) sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
    sqlite3_close(db_);
  }
  DatabaseWriteLock(const DatabaseWriteLock&) = delete;
  DatabaseWriteLock& operator=(const DatabaseWriteLock&) = delete;
  bool held() const { return held_; }

 private:
  sqlite3* db_ = nullptr;
  bool held_ = false;
};

// The state column of job `id` in the daemon's database, read directly (the
// daemon is dead); "" when it cannot be read.
std::string StoredState(const std::string& db_path, int64_t id) {
  sqlite3* db = nullptr;
  std::string state;
  if (sqlite3_open_v2(db_path.c_str(), &db, SQLITE_OPEN_READWRITE, nullptr) == SQLITE_OK) {
    sqlite3_busy_timeout(db, 5000);
    sqlite3_stmt* stmt = nullptr;
    if (sqlite3_prepare_v2(db, "SELECT state FROM jobs WHERE id = ?", -1, &stmt, nullptr) ==
        SQLITE_OK) {
      sqlite3_bind_int64(stmt, 1, id);
      if (sqlite3_step(stmt) == SQLITE_ROW) {
        const unsigned char* text = sqlite3_column_text(stmt, 0);
        if (text != nullptr) state = reinterpret_cast<const char*>(text);
      }
    }
    sqlite3_finalize(stmt);
  }
  sqlite3_close(db);
  return state;
}

// The daemon dies after it recorded a job as "starting" and launched its
// supervisor, but before it recorded "running" with the supervisor's PID.
// The test holds a write lock on the database from the moment the job's run
// directory appears (the daemon creates it after recording "starting", just
// before it launches the supervisor), so the daemon's next write waits; once
// the supervisor has claimed the run, the test kills the daemon. The
// restarted daemon must adopt the job from its launch record: the job runs
// once and its exit status is recorded, never "lost". Taking the lock in
// time is a race (a few milliseconds); the database says whether it was won,
// and the test tries until it was.
TEST(QueueE2e, DaemonKilledBetweenLaunchAndRecordStillAdoptsTheJob) {
  QueueServer q("queue-two-free.json");
  ASSERT_TRUE(q.Start());
  const std::string jobs_dir = q.state_dir() + "/jobs";
  const std::string db = q.state_dir() + "/queue.db";
  int caught = 0;
  for (int attempt = 0; attempt < 8 && caught == 0; ++attempt) {
    SCOPED_TRACE("attempt " + std::to_string(attempt));
    const int watch = inotify_init1(IN_CLOEXEC);
    ASSERT_GE(watch, 0);
    ASSERT_GE(inotify_add_watch(watch, jobs_dir.c_str(), IN_CREATE), 0) << jobs_dir;
    auto c = RawConnection::Open(q.socket());
    ASSERT_TRUE(c);
    json spec = SpecFor({"/bin/sh", "-c", "touch \"$MARK/$GPUWARDEN_JOB_ID-$$\"; sleep 2; exit 5"},
                        q.ClientOptions());
    spec["gpus"] = 0;
    ASSERT_TRUE(c->Send(json{{"v", 1}, {"op", "submit"}, {"spec", spec}}.dump() + "\n"));
    // The run directory appears: lock at once.
    pollfd p{watch, POLLIN, 0};
    ASSERT_EQ(poll(&p, 1, 60000), 1) << "no run directory appeared";
    std::optional<DatabaseWriteLock> lock;
    lock.emplace(db);
    ASSERT_TRUE(lock->held());
    close(watch);
    std::optional<std::string> reply = c->ReadLine(30);
    ASSERT_TRUE(reply);
    const int64_t id = ParseJson(*reply).value("job", int64_t{-1});
    ASSERT_GT(id, 0) << *reply;
    const std::string run_dir = jobs_dir + "/" + std::to_string(id);
    ASSERT_TRUE(Eventually([&] { return Exists(run_dir + "/launched"); }, 60))
        << "the supervisor did not claim the run";
    q.Kill();
    lock.reset();
    const std::string stored = StoredState(db, id);
    ASSERT_TRUE(stored == "starting" || stored == "running") << stored;
    caught += stored == "starting";

    ASSERT_TRUE(q.Start());
    json j = q.WaitForEnd(id);
    EXPECT_EQ(StateOf(j), "failed") << "recorded as " << stored << ": " << j.dump(2);
    EXPECT_EQ(j["end_reason"], json("exit")) << "recorded as " << stored << ": " << j.dump(2);
    EXPECT_EQ(j["exit_code"], 5) << "recorded as " << stored << ": " << j.dump(2);
    int runs = 0;
    for (const std::string& name : ListDir(q.mark())) {
      runs += name.rfind(std::to_string(id) + "-", 0) == 0;
    }
    EXPECT_EQ(runs, 1) << "recorded as " << stored;
  }
  std::cout << "[ info     ] caught the daemon between launch and record " << caught
            << " time(s)\n";
  EXPECT_GE(caught, 1) << "the test never took the lock before the daemon recorded \"running\"";
}

}  // namespace
}  // namespace gw::test
