// TEMPORARY (branch h-daemon only): MakeRealSupervisors over today's runner.h,
// so that gpuwardend links before H-runner's real_supervisors.cc is merged.
// The build uses this file only while real_supervisors.cc does not exist
// (CMakeLists.txt); delete it at the merge.
#include <sys/wait.h>

#include <utility>

#include "os/pidfd.h"
#include "queue/supervisors.h"

namespace gw::queue {
namespace {

// runner.h's readers report "missing" and "unreadable" apart through the
// error text; the seam's answer keeps them apart as nullopt and an error.
template <typename T, typename Reader>
Result<std::optional<T>> Read(Reader reader, const std::string& dir) {
  std::string error;
  std::optional<T> v = reader(dir, &error);
  if (v) return v;
  if (!error.empty()) return MakeError("malformed", error);
  return std::optional<T>();
}

class TmpSupervisors final : public Supervisors {
 public:
  explicit TmpSupervisors(std::string state_dir) : state_dir_(std::move(state_dir)) {}
  std::string DirOf(const Job& job) const override {
    return JobDir(state_dir_, job.id, job.requeues);
  }
  Result<Launched> Launch(const Job& job, const LaunchOptions& options) override {
    return queue::Launch(job, options);
  }
  Status RequestStop(const Job& job, const std::string& reason, double grace_s) override {
    if (!job.supervisor_pid || !job.supervisor_start_ticks) {
      return MakeError("gone", "no supervisor recorded");
    }
    return queue::RequestStop(DirOf(job), *job.supervisor_pid, *job.supervisor_start_ticks, reason,
                              grace_s);
  }
  Result<bool> ClaimUnlaunched(const Job& job) override {
    return queue::ClaimUnlaunched(DirOf(job));
  }
  Result<std::optional<LaunchRecord>> ReadLaunch(const Job& job) override {
    return Read<LaunchRecord>(ReadLaunchRecord, DirOf(job));
  }
  Result<std::optional<PidRecord>> ReadPid(const Job& job) override {
    return Read<PidRecord>(ReadPidRecord, DirOf(job));
  }
  Result<std::optional<ExitRecord>> ReadExit(const Job& job) override {
    return Read<ExitRecord>(ReadExitRecord, DirOf(job));
  }
  bool Alive(pid_t pid, uint64_t start_ticks) override { return SupervisorAlive(pid, start_ticks); }
  Result<os::UniqueFd> Watch(pid_t pid, uint64_t start_ticks) override {
    Result<os::UniqueFd> fd = os::PidfdOpen(pid);
    if (!fd.ok()) return fd;
    // Pinned; now check that the pinned process is the supervisor.
    if (!SupervisorAlive(pid, start_ticks)) return MakeError("gone", "the supervisor ended");
    return fd;
  }
  void Reap(pid_t pid) override { waitpid(pid, nullptr, WNOHANG); }

 private:
  std::string state_dir_;
};

}  // namespace

std::unique_ptr<Supervisors> MakeRealSupervisors(std::string state_dir, std::string) {
  return std::make_unique<TmpSupervisors>(std::move(state_dir));
}

}  // namespace gw::queue
