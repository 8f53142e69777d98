// FakeSupervisors: the Supervisors seam for the daemon's unit tests, as
// ninja's FakeCommandRunner. It records every call (`calls`, one line each:
// "Launch 3", "RequestStop 3 preempted", "ClaimUnlaunched 3", "Reap 5003"),
// starts nothing, and ends a run only when the test says so (End*), with the
// exit record the test chooses, a malformed one, or none. Watch() hands out
// the read end of a pipe that End* makes readable (by closing the write
// end), as a pidfd would be.
//
// Runs are known by their directory (DirOf: "/fake/jobs/<id>.<run>"); a test
// that plays a restart sets up `runs` by hand (AddRun).
#ifndef GPUWARDEN_QUEUE_FAKE_SUPERVISORS_H_
#define GPUWARDEN_QUEUE_FAKE_SUPERVISORS_H_

#include <fcntl.h>
#include <unistd.h>

#include <map>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "queue/supervisors.h"

namespace gw::queue::testing {

class FakeSupervisors final : public Supervisors {
 public:
  struct Run {
    pid_t pid = 0;  // The supervisor.
    uint64_t start_ticks = 0;
    bool alive = true;
    std::optional<Result<std::optional<LaunchRecord>>> launch;  // Unset: no file.
    std::optional<Result<std::optional<PidRecord>>> pid_record;
    std::optional<Result<std::optional<ExitRecord>>> exit;
    std::optional<Result<bool>> claim;  // ClaimUnlaunched's answer; unset: true.
    std::vector<int> watchers;          // Write ends of Watch() pipes.
    std::vector<std::string> stops;     // Reasons asked, in order.
  };

  std::vector<std::string> calls;
  std::map<std::string, Run> runs;  // By DirOf.
  // The next Launch fails with this (then it is cleared).
  std::optional<Error> launch_error;
  // RequestStop answers this (unset: ok, and the stop is recorded).
  std::optional<Error> stop_error;
  pid_t next_pid = 5000;

  ~FakeSupervisors() override {
    for (auto& [dir, run] : runs) CloseWatchers(run);
  }

  std::string DirOf(const Job& job) const override {
    return fmt::format("/fake/jobs/{}.{}", job.id, job.requeues);
  }

  Result<Launched> Launch(const Job& job, const LaunchOptions&) override {
    calls.push_back(fmt::format("Launch {}", job.id));
    if (launch_error) {
      Error e = *launch_error;
      launch_error.reset();
      return e;
    }
    Run& run = runs[DirOf(job)];
    run.pid = ++next_pid;
    run.start_ticks = 1000 + static_cast<uint64_t>(run.pid);
    run.launch = Result<std::optional<LaunchRecord>>(
        std::optional<LaunchRecord>(LaunchRecord{true, run.pid, run.start_ticks}));
    Launched l;
    l.job_dir = DirOf(job);
    l.supervisor_pid = run.pid;
    l.supervisor_start_ticks = run.start_ticks;
    l.stdout_path = l.job_dir + "/stdout";
    l.stderr_path = l.job_dir + "/stderr";
    return l;
  }

  Status RequestStop(const Job& job, const std::string& reason, double) override {
    calls.push_back(fmt::format("RequestStop {} {}", job.id, reason));
    if (stop_error) return *stop_error;
    runs[DirOf(job)].stops.push_back(reason);
    return Status::Ok();
  }

  Result<bool> ClaimUnlaunched(const Job& job) override {
    calls.push_back(fmt::format("ClaimUnlaunched {}", job.id));
    auto it = runs.find(DirOf(job));
    if (it == runs.end() || !it->second.claim) return true;
    return *it->second.claim;
  }

  Result<std::optional<LaunchRecord>> ReadLaunch(const Job& job) override {
    auto it = runs.find(DirOf(job));
    if (it == runs.end() || !it->second.launch) return std::optional<LaunchRecord>();
    return *it->second.launch;
  }
  Result<std::optional<PidRecord>> ReadPid(const Job& job) override {
    auto it = runs.find(DirOf(job));
    if (it == runs.end() || !it->second.pid_record) return std::optional<PidRecord>();
    return *it->second.pid_record;
  }
  Result<std::optional<ExitRecord>> ReadExit(const Job& job) override {
    calls.push_back(fmt::format("ReadExit {}", job.id));
    auto it = runs.find(DirOf(job));
    if (it == runs.end() || !it->second.exit) return std::optional<ExitRecord>();
    return *it->second.exit;
  }

  bool Alive(pid_t pid, uint64_t start_ticks) override {
    const Run* run = Find(pid, start_ticks);
    return run != nullptr && run->alive;
  }

  Result<os::UniqueFd> Watch(pid_t pid, uint64_t start_ticks) override {
    calls.push_back(fmt::format("Watch {}", pid));
    Run* run = Find(pid, start_ticks);
    if (run == nullptr || !run->alive) return MakeError("gone", fmt::format("{} is gone", pid));
    int fds[2];
    if (pipe2(fds, O_CLOEXEC | O_NONBLOCK) != 0) return MakeError("error", "pipe");
    run->watchers.push_back(fds[1]);
    return os::UniqueFd(fds[0]);
  }

  void Reap(pid_t pid) override { calls.push_back(fmt::format("Reap {}", pid)); }

  // --- For the test ---------------------------------------------------------

  // The run of `job` as the daemon launched it (by id and run number).
  Run& RunOf(JobId id, unsigned requeues = 0) {
    return runs[fmt::format("/fake/jobs/{}.{}", id, requeues)];
  }

  // Ends the run: its supervisor is gone, exit.json is `record` (nullopt: no
  // file), and every Watch() descriptor becomes readable.
  void End(JobId id, std::optional<ExitRecord> record, unsigned requeues = 0) {
    EndWith(id, Result<std::optional<ExitRecord>>(std::move(record)), requeues);
  }
  // Ends the run before its supervisor claimed it (the claim could not be
  // written): no launched file, no exit.json; the job never started.
  void EndUnclaimed(JobId id, unsigned requeues = 0) {
    RunOf(id, requeues).launch = Result<std::optional<LaunchRecord>>(std::optional<LaunchRecord>());
    End(id, std::nullopt, requeues);
  }
  // Ends the run with an exit.json that cannot be read (`message` names the
  // file and the problem, as the real reader's does).
  void EndMalformed(JobId id, const std::string& message, unsigned requeues = 0) {
    EndWith(id, Result<std::optional<ExitRecord>>(MakeError("malformed", message)), requeues);
  }
  void EndWith(JobId id, Result<std::optional<ExitRecord>> record, unsigned requeues = 0) {
    Run& run = RunOf(id, requeues);
    run.alive = false;
    run.exit = std::move(record);
    CloseWatchers(run);
  }

  static ExitRecord Exited(int code, std::string reason = "exit") {
    ExitRecord r;
    r.reason = std::move(reason);
    r.exit_code = code;
    r.start_unix_ms = 1;
    r.end_unix_ms = 2;
    return r;
  }

  int Count(const std::string& prefix) const {
    int n = 0;
    for (const std::string& c : calls) n += c.rfind(prefix, 0) == 0 ? 1 : 0;
    return n;
  }

 private:
  Run* Find(pid_t pid, uint64_t start_ticks) {
    for (auto& [dir, run] : runs) {
      if (run.pid == pid && run.start_ticks == start_ticks) return &run;
    }
    return nullptr;
  }
  static void CloseWatchers(Run& run) {
    // Closing the write end makes the read end readable (end of file), as a
    // pidfd becomes readable when its process ends.
    for (int fd : run.watchers) close(fd);
    run.watchers.clear();
  }
};

}  // namespace gw::queue::testing

#endif  // GPUWARDEN_QUEUE_FAKE_SUPERVISORS_H_
