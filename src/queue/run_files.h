// The files of one run's directory JOB_DIR and the records they hold: the
// runner's on-disk protocol between the daemon and gpuwarden-supervise
// (runner.h describes who writes which file and when).
//
// Every record is JSON. Writers produce the text (…ToJson); the launcher and
// the supervisor put it in place atomically (os/file_io.h). Readers never
// throw: a record is absent (nullopt), or present and readable, or an error
// naming the file and the problem, so that a malformed exit.json can never be
// taken for a missing one.
#ifndef GPUWARDEN_QUEUE_RUN_FILES_H_
#define GPUWARDEN_QUEUE_RUN_FILES_H_

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"
#include "queue/job.h"

namespace gw::queue {

// The names of the files in JOB_DIR.
inline constexpr char kRunSpecFile[] = "spec.json";
inline constexpr char kRunLaunchedFile[] = "launched";
inline constexpr char kRunPidFile[] = "pid";
inline constexpr char kRunStopFile[] = "stop";
inline constexpr char kRunExitFile[] = "exit.json";
inline constexpr char kRunSupervisorLog[] = "supervisor.log";

// Size bounds for reading them: argv + env are bounded by ARG_MAX anyway.
inline constexpr size_t kMaxRunSpecBytes = 64u << 20;
inline constexpr size_t kMaxRunRecordBytes = 1u << 20;

// The run directory: STATE_DIR/jobs/<id> for run 0, STATE_DIR/jobs/<id>.<run>
// for later runs. A directory serves one run only (its `launched` claim is
// never removed), so a job that goes back to the queue after it was launched
// or claimed must come back under a new run number; Launch() uses
// Job::requeues.
std::string JobDir(const std::string& state_dir, JobId id, unsigned run);

// JOB_DIR and STATE_DIR/jobs must be directories (not links) only their
// owner may change, owned by the caller's effective user: a root supervisor
// runs whatever spec.json says, as whichever uid it names. Error "io" naming
// the path and what is wrong.
Status CheckPrivateDir(const std::string& path);

// spec.json: everything the supervisor needs, and nothing it has to look up
// in the daemon. Strings that come from users are bytes, stored as base64.
struct SupervisorSpec {
  JobId job_id = 0;
  std::vector<std::string> argv;  // argv[0] looked up with ExecCandidates().
  std::vector<std::string> env;   // Final (BuildJobEnvironment()).
  std::string cwd;                // Absolute.
  mode_t umask = 022;
  uid_t uid = 0;
  gid_t gid = 0;
  std::string user;         // For a person; the groups come from uid's account.
  std::string stdout_path;  // Absolute.
  std::string stderr_path;  // Absolute.
  // True when the log was named by the job (Job::stdout_path / stderr_path):
  // the job's process opens it after taking the job's identity, so a
  // root-run supervisor never creates or appends to a path a user chose.
  // False: JOB_DIR/stdout or stderr, opened by the supervisor and handed to
  // the job's user (fchown) with mode 0600.
  bool stdout_by_job = false;
  bool stderr_by_job = false;
  std::optional<int64_t> time_limit_s;
  double grace_s = 10;
};
std::string SupervisorSpecToJson(const SupervisorSpec& spec);

// Whether `s` holds a NUL byte, which argv, the environment and paths cannot
// carry (execve and open take C strings).
inline bool HasNul(std::string_view s) { return s.find('\0') != std::string_view::npos; }
// Error "malformed": "spec.json: <field>: <problem>".
Result<SupervisorSpec> SupervisorSpecFromJson(std::string_view text);

// JOB_DIR/launched.
struct LaunchRecord {
  bool by_supervisor = false;  // false: a daemon gave the run up (ClaimUnlaunched).
  pid_t pid = 0;               // The claimant.
  uint64_t start_ticks = 0;    // Its start time, /proc/PID/stat field 22.
};
std::string LaunchRecordToJson(const LaunchRecord& record);

// JOB_DIR/pid, written once the job's leader is forked.
struct PidRecord {
  pid_t pid = 0;  // Also the job's process group.
  uint64_t start_ticks = 0;
  int64_t start_unix_ms = 0;
};
std::string PidRecordToJson(const PidRecord& record);

// JOB_DIR/exit.json.
struct ExitRecord {
  // "exit"          the leader exited by itself (exit_code)
  // "signal"        a signal it did not get from the supervisor ended it (signal)
  // "time_limit"    the supervisor stopped it at its time limit
  // "stopped:<why>" RequestStop(why), or "stopped:supervisor" when the
  //                 supervisor itself got SIGTERM, SIGINT or SIGQUIT (shutdown)
  // "start_failed"  it never ran: spec unreadable, logs not opened, no process
  //                 forked (no exit_code); or its process could not take the
  //                 job's identity, working directory or named logs, or exec
  //                 the program (exit_code kExitCannotRun / kExitNotFound, the
  //                 message also in the stderr log where that was open)
  // For time_limit and stopped:*, exit_code / signal say how the leader ended;
  // both are absent when it was stopped before it started.
  std::string reason;
  std::optional<int> exit_code;
  std::optional<int> signal;
  bool core_dumped = false;
  int64_t start_unix_ms = 0;  // 0 when it never started.
  int64_t end_unix_ms = 0;
  std::string detail;  // One line for a person (valid UTF-8, not sanitised for terminals).
};
std::string ExitRecordToJson(const ExitRecord& record);

// JOB_DIR/stop: why and how gently to stop (RequestStop()).
struct StopRequest {
  std::string reason;
  // nullopt: the supervisor's own grace (the spec's). A request whose grace
  // is not a non-negative finite number reads as nullopt too.
  std::optional<double> grace_s;
};
std::string StopRequestToJson(const StopRequest& request);

// The readers, one per record in `job_dir`: nullopt when the file does not
// exist (yet); error "malformed" when it exists but is not such a record
// (larger than kMaxRunRecordBytes included), "io" when it cannot be read (a
// symlink included). The message names the file, then the field and the
// problem ("JOB_DIR/exit.json: malformed: exit_code: not an integer").
Result<std::optional<LaunchRecord>> ReadLaunchRecord(const std::string& job_dir);
Result<std::optional<PidRecord>> ReadPidRecord(const std::string& job_dir);
Result<std::optional<ExitRecord>> ReadExitRecord(const std::string& job_dir);
Result<std::optional<StopRequest>> ReadStopRequest(const std::string& job_dir);
// spec.json, bounded by kMaxRunSpecBytes; the errors as above.
Result<std::optional<SupervisorSpec>> ReadSupervisorSpec(const std::string& job_dir);

}  // namespace gw::queue

#endif  // GPUWARDEN_QUEUE_RUN_FILES_H_
