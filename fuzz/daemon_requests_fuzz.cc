// fuzz_daemon_requests: the daemon's request handling (queue/ops.h) as any
// local user reaches it, through the parts its unit tests use: the real
// RequestHandler and JobTable over a FaultyJobStore on a fresh SQLite store,
// FakeSupervisors (nothing is started), a FakeClock, FakeProcessControl and
// an empty process table. No socket: a whole session is one input.
//
// The input is lines. A line starting with '#' steers the daemon:
//   #look   a full look at two idle GPUs and a placement pass
//   #tick   a pass;  #later  the clock moves on 30 s
//   #end    every running job's run ends (exit 0);  #crash  ... with no record
//   #fail   the next store write fails;  #full  every write fails;  #heal
//   #root, #ann, #bob   who sends the lines that follow (ann at first)
// Any other line is a request from the current caller.
//
// Invariants: every reply serialises (valid UTF-8 everywhere) to one JSON
// object with "ok", and an error reply has a code and a message; a user's
// request never cancels, holds, releases or requeues another user's job, and
// every job it adds is the caller's own.
#include <sys/stat.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <string>

#include "act/fake_process_control.h"
#include "diagnose/test_util.h"
#include "fuzz/fuzz_check.h"
#include "queue/fake_supervisors.h"
#include "queue/faulty_job_store.h"
#include "queue/ops.h"
#include "queue/protocol.h"
#include "queue/sqlite_job_store.h"

namespace {

using namespace gw;
using namespace gw::queue;

// The state directory, made once per process (an empty /proc for the table).
// Never destroyed: the atexit handler that removes the folder is registered
// while the name is made, so it runs after the name's destructor would have.
const std::string& StateDir() {
  static const std::string& dir = *new std::string([] {
    std::string tmpl = access("/dev/shm", W_OK) == 0 ? "/dev/shm/gw_fuzz_daemon.XXXXXX"
                                                     : "/tmp/gw_fuzz_daemon.XXXXXX";
    if (mkdtemp(tmpl.data()) == nullptr) fuzz::Fail("mkdtemp", tmpl);
    std::filesystem::create_directories(tmpl + "/proc");
    atexit([] {
      std::error_code ec;
      std::filesystem::remove_all(StateDir(), ec);
    });
    return tmpl;
  }());
  return dir;
}

std::map<JobId, Job> StoredJobs(JobStore& store) {
  std::map<JobId, Job> out;
  Result<std::vector<Job>> all = store.List(JobFilter{});
  if (!all.ok()) fuzz::Fail("listing the store", all.error().message);
  for (Job& j : *all) out.emplace(j.id, std::move(j));
  return out;
}

void CheckReply(const nlohmann::json& reply, std::string_view request) {
  const std::string context = std::string(request.substr(0, 200));
  // dump() throws on a string that is not UTF-8: the socket would have to
  // send it. The default handler is what the server uses.
  std::string text;
  try {
    text = reply.dump();
  } catch (const nlohmann::json::exception& e) {
    fuzz::Fail("the reply serialises", std::string(e.what()) + " for " + context);
  }
  GW_FUZZ_CHECK(reply.is_object() && reply.contains("ok") && reply["ok"].is_boolean(), text);
  GW_FUZZ_CHECK(text.find('\n') == std::string::npos, "a reply is one line");
  if (!reply["ok"].get<bool>()) {
    GW_FUZZ_CHECK(reply.contains("error") && reply["error"].is_object(), text);
    const nlohmann::json& e = reply["error"];
    GW_FUZZ_CHECK(e.contains("code") && e["code"].is_string() &&
                      !e["code"].get_ref<const std::string&>().empty(),
                  text);
    GW_FUZZ_CHECK(e.contains("message") && e["message"].is_string(), text);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string& dir = StateDir();
  const std::string db = dir + "/queue.db";
  for (const char* suffix : {"", "-wal", "-shm", "-journal"}) unlink((db + suffix).c_str());

  Result<std::unique_ptr<SqliteJobStore>> opened = SqliteJobStore::Open(db);
  if (!opened.ok()) fuzz::Fail("opening the store", opened.error().message);
  std::unique_ptr<SqliteJobStore> sqlite = std::move(*opened);
  FaultyJobStore store(*sqlite);
  FakeClock clock;
  DaemonLog log(clock, [](std::string_view) {});
  testing::FakeSupervisors supervisors;
  act::testing::FakeProcessControl control(clock);
  proc::ProcReader procs(dir + "/proc");
  JobTableOptions o;
  o.state_dir = dir;
  o.supervisor_path = "/fake/gpuwarden-supervise";
  o.retry_interval_ms = 1000;
  o.min_pass_interval_ms = 0;
  JobTable table(o, JobTableParts{store, supervisors, clock, procs, control, log});
  if (Status s = table.Recover(); !s.ok())
    fuzz::Fail("recovering an empty store", s.error().message);
  RequestHandler handler(&table, clock, OpsOptions{});

  const Caller root{0, 0, 100, "root"};
  const Caller ann{1000, 1000, 4242, "ann"};
  const Caller bob{1001, 1001, 4343, "bob"};
  const Caller* caller = &ann;

  const std::string_view input = fuzz::AsText(data, size);
  for (size_t start = 0; start < input.size();) {
    size_t end = input.find('\n', start);
    if (end == std::string_view::npos) end = input.size();
    const std::string_view line = input.substr(start, end - start);
    start = end + 1;

    if (line == "#look") {
      table.OnSnapshot(diagnose::fixtures::HealthyServer(2, clock.NowUnixMs()), /*full=*/true);
      table.Tick();
    } else if (line == "#tick") {
      table.Tick();
    } else if (line == "#later") {
      clock.AdvanceMs(30'000);
    } else if (line == "#end" || line == "#crash") {
      for (const auto& [id, job] : table.active()) {
        if (job.state != JobState::kRunning) continue;
        if (line == "#end") {
          supervisors.End(id, testing::FakeSupervisors::Exited(0), job.requeues);
        } else {
          supervisors.End(id, std::nullopt, job.requeues);
        }
      }
      for (const JobTable::WatchFd& w : table.Watches()) {
        char c;
        if (read(w.fd, &c, 1) >= 0) table.OnSupervisorExit(w.id);
      }
    } else if (line == "#fail") {
      store.FailNthWrite(1);
    } else if (line == "#full") {
      store.FailEveryWrite(StoreFault::kDiskFull);
    } else if (line == "#heal") {
      store.Heal();
    } else if (line == "#root" || line == "#ann" || line == "#bob") {
      caller = line == "#root" ? &root : line == "#ann" ? &ann : &bob;
    } else {
      const std::map<JobId, Job> before = StoredJobs(*sqlite);
      const nlohmann::json reply = handler.Handle(*caller, line);
      CheckReply(reply, line);
      const std::map<JobId, Job> after = StoredJobs(*sqlite);
      for (const auto& [id, job] : after) {
        const auto was = before.find(id);
        if (was == before.end()) {
          GW_FUZZ_CHECK(job.owner.uid == caller->uid, "a job submitted for someone else");
          continue;
        }
        if (caller->uid == 0 || job.owner.uid == caller->uid) continue;
        const JobState from = was->second.state, to = job.state;
        GW_FUZZ_CHECK(from == to || !(to == JobState::kCancelled || to == JobState::kHeld ||
                                      (to == JobState::kQueued && from != JobState::kQueued)),
                      "user " + caller->user + " changed job " + std::to_string(id) + " of " +
                          job.owner.user + " from " + std::string(JobStateName(from)) + " to " +
                          std::string(JobStateName(to)) + " with " + std::string(line));
      }
    }
  }
  return 0;
}
