// The audit log of `gpuwarden clean` / `gpuwarden kill`: one JSON line per
// signal sent and one per final result, appended to a file, so that an
// administrator can answer "who killed my job?" after the fact.
//
// The log is written by several gpuwarden processes at once (users on the same
// server) and must never hang or redirect the command that writes it, so the
// file is opened non-blocking, without following a symlink, and each record is
// one write() of one whole line.
#ifndef GPUWARDEN_ACT_AUDIT_LOG_H_
#define GPUWARDEN_ACT_AUDIT_LOG_H_

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/result.h"

namespace gw::act {

// One line of the audit log: one signal sent (event "signal") or the final
// result for one target (event "result").
struct AuditRecord {
  int64_t time_unix_ms = 0;
  std::string event;  // "signal" or "result".
  uid_t caller_uid = 0;
  std::string caller_user;  // May be empty when unknown.
  pid_t pid = 0;
  std::optional<uint64_t> start_ticks;  // /proc/PID/stat field 22: the process identity.
  std::optional<uid_t> uid;             // The target's owner.
  std::string user;
  std::string command;  // Raw bytes from another process; made valid UTF-8 in the JSON.
  std::vector<unsigned> gpus;
  std::optional<uint64_t> vram_bytes;
  std::string signal;  // "SIGTERM", "SIGKILL", "SIGINT", ...; "" on result lines.
  // signal: "delivered", "gone", "reused", "denied", "error";
  // result: "exited", "killed", "gone", "reused", "denied", "survived", "error".
  std::string outcome;
  std::string detail;  // Free text, may be empty.
};

// The record as one JSON object on one line, without a newline. Keys, in this
// order: time (ISO-8601 UTC with milliseconds, "2026-11-30T01:02:03.456Z"; null
// when the year is outside 0000-9999), time_unix_ms, event, caller_uid,
// caller_user, pid, start_ticks, uid, user, command, gpus, vram_bytes, signal,
// outcome, detail. Unknown optionals are null. Every string is made valid UTF-8
// (invalid bytes become U+FFFD) and controls are JSON-escaped, so the line
// never contains a raw newline.
// Never throws.
std::string AuditRecordJson(const AuditRecord& record);

// Where audit records go; a fake in tests.
class AuditSink {
 public:
  virtual ~AuditSink() = default;
  // Appends one record. Errors name the log and the reason.
  virtual Status Append(const AuditRecord& record) = 0;
};

// Appends AuditRecordJson lines to a file.
//
// On each Append the file is opened with
// O_WRONLY|O_APPEND|O_CREAT|O_CLOEXEC|O_NONBLOCK|O_NOFOLLOW|O_NOCTTY (mode 0600
// when created), written with ONE write() of "json\n", fdatasync'd (and the
// directory fsync'd when this Append created the file, so that the record of
// a kill survives a crash of the machine) and closed again, so concurrent
// gpuwarden processes never interleave within a line and a rotated log is
// picked up at once. Missing parent directories are created (mkdir -p)
// with `dir_mode`, set exactly (not narrowed by the umask); existing ones are
// left alone. A log in an existing directory (InExistingDirectory: a path the
// user named) creates none: a missing one is an error naming it.
//
// Refused, without writing: a symlink at the path (planted to redirect the
// write), a FIFO or socket (a FIFO without a reader fails at once instead of
// blocking), any other non-regular file (a device such as /dev/null too), a
// file owned by neither the effective user nor root (whose owner could rewrite
// the log), and a file with more than one hard link (a link planted to make
// root append to another file).
//
// Errors have code "io" and the message "audit log PATH: REASON" (PATH
// sanitised for the terminal); a short write is an error. Never throws, never
// blocks on a reader.
class FileAuditLog final : public AuditSink {
 public:
  // Parent directories: 0750 when the effective user is root (the system
  // log, /var/log/gpuwarden), else 0700 (a user's state directory).
  explicit FileAuditLog(std::string path);
  FileAuditLog(std::string path, mode_t dir_mode);
  // A log whose directory must already exist (--audit-log, the config file's
  // audit_log): nothing creates a directory it was not asked to.
  static FileAuditLog InExistingDirectory(std::string path);

  Status Append(const AuditRecord& record) override;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  mode_t dir_mode_;
  bool create_parents_ = true;
};

// Where the log lives:
//   euid 0: "/var/log/gpuwarden/audit.log";
//   else "$XDG_STATE_HOME/gpuwarden/audit.log" when XDG_STATE_HOME is set,
//   non-empty and absolute; else "$HOME/.local/state/gpuwarden/audit.log" when
//   HOME is set, non-empty and absolute; else the same under the passwd home
//   directory of `euid`; "" when nothing works.
// `getenv_fn` stands in for std::getenv.
std::string DefaultAuditLogPath(uid_t euid,
                                const std::function<const char*(const char*)>& getenv_fn);

}  // namespace gw::act

#endif  // GPUWARDEN_ACT_AUDIT_LOG_H_
