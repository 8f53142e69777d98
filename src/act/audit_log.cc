#include "act/audit_log.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string_view>
#include <utility>

#include <nlohmann/json.hpp>

#include "core/json_out.h"
#include "core/text.h"
#include "os/errno_text.h"
#include "os/file_io.h"
#include "os/unique_fd.h"
#include "proc/users.h"

namespace gw::act {
namespace {

using Json = nlohmann::json;

Error LogError(const std::string& path, std::string_view reason) {
  return MakeError("io", fmt::format("audit log {}: {}", SanitizeForTerminal(path), reason));
}

// mkdir -p of `dir`, each created directory set to exactly `mode`. Walks with
// directory descriptors, and reopens what it created without following a
// symlink, so that nobody who can write to a parent can swap a created
// directory for a symlink and have its target chmod'ed. Existing components,
// symlinks included, are used as they are (as mkdir -p does). Returns 0 or an
// errno.
int MakeParents(const std::string& dir, mode_t mode) {
  os::UniqueFd at(open(dir.starts_with('/') ? "/" : ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (at.get() < 0) return errno;
  size_t pos = 0;
  while (pos < dir.size()) {
    size_t end = dir.find('/', pos);
    if (end == std::string::npos) end = dir.size();
    const std::string name = dir.substr(pos, end - pos);
    pos = end + 1;
    if (name.empty() || name == ".") continue;
    bool created = false;
    if (mkdirat(at.get(), name.c_str(), mode) == 0) {
      created = true;
    } else if (errno != EEXIST) {
      return errno;
    }
    const int flags = O_RDONLY | O_DIRECTORY | O_CLOEXEC | (created ? O_NOFOLLOW : 0);
    const int next = openat(at.get(), name.c_str(), flags);
    if (next < 0) return errno;
    at.Reset(next);
    // mkdir's mode was narrowed by the umask; the contract is the exact mode.
    if (created && fchmod(at.get(), mode) != 0) return errno;
  }
  return 0;
}

std::string ParentDir(const std::string& path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

// Why open() failed, in words that point at the cause.
std::string OpenFailure(const std::string& path, int err) {
  struct stat st {};
  if (err == ELOOP && lstat(path.c_str(), &st) == 0 && S_ISLNK(st.st_mode)) {
    return "is a symbolic link; refusing to follow it";
  }
  if (err == ENXIO) return "is a FIFO or socket with no reader, not a regular file";
  return fmt::format("cannot open: {}", os::ErrnoText(err));
}

Status AppendLine(const std::string& path, mode_t dir_mode, bool create_parents,
                  const std::string& line) {
  if (path.empty()) return MakeError("io", "audit log: no path to write to");
  // O_NONBLOCK: a FIFO without a reader fails with ENXIO instead of blocking.
  // O_NOFOLLOW: a symlink planted at the path fails with ELOOP.
  constexpr int kFlags = O_WRONLY | O_APPEND | O_CLOEXEC | O_NONBLOCK | O_NOFOLLOW | O_NOCTTY;
  // First without O_CREAT, to know whether this call creates the file (its
  // directory entry then needs a sync too).
  os::UniqueFd fd(open(path.c_str(), kFlags));
  bool created = false;
  if (fd.get() < 0 && errno == ENOENT) {
    created = true;
    fd.Reset(open(path.c_str(), kFlags | O_CREAT, 0600));
  }
  if (fd.get() < 0 && errno == ENOENT && !create_parents) {
    return LogError(
        path, fmt::format("the directory {} does not exist", SanitizeForTerminal(ParentDir(path))));
  }
  if (fd.get() < 0 && errno == ENOENT) {
    const int err = MakeParents(ParentDir(path), dir_mode);
    if (err != 0) {
      return LogError(path, fmt::format("cannot create {}: {}",
                                        SanitizeForTerminal(ParentDir(path)), os::ErrnoText(err)));
    }
    fd.Reset(open(path.c_str(), kFlags | O_CREAT, 0600));
  }
  if (fd.get() < 0) return LogError(path, OpenFailure(path, errno));

  struct stat st {};
  if (fstat(fd.get(), &st) != 0) {
    return LogError(path, fmt::format("cannot stat: {}", os::ErrnoText(errno)));
  }
  if (!S_ISREG(st.st_mode)) return LogError(path, "is not a regular file");
  // A file someone else owns is one they can rewrite; a second hard link
  // would have root append to whatever file it names.
  const uid_t euid = geteuid();
  if (st.st_uid != euid && st.st_uid != 0) {
    return LogError(path, fmt::format("is owned by uid {}, neither uid {} nor root; refusing it",
                                      st.st_uid, euid));
  }
  if (st.st_nlink > 1) {
    return LogError(path, fmt::format("has {} hard links; refusing it", st.st_nlink));
  }

  // One write() per line: O_APPEND makes each write land whole at the end of
  // the file, even with other gpuwarden processes appending at the same time.
  ssize_t n;
  do {
    n = write(fd.get(), line.data(), line.size());
  } while (n < 0 && errno == EINTR);
  if (n < 0) return LogError(path, fmt::format("cannot write: {}", os::ErrnoText(errno)));
  if (static_cast<size_t>(n) != line.size()) {
    return LogError(path, fmt::format("short write ({} of {} bytes)", n, line.size()));
  }
  // A record of a kill must outlive a crash of the machine right after it.
  if (fdatasync(fd.get()) != 0) {
    return LogError(path, fmt::format("cannot sync: {}", os::ErrnoText(errno)));
  }
  if (close(fd.Release()) != 0) {
    return LogError(path, fmt::format("cannot close: {}", os::ErrnoText(errno)));
  }
  if (created) {
    if (Status synced = os::FsyncDir(ParentDir(path)); !synced.ok()) {
      return LogError(path, SanitizeForTerminal(synced.error().message));
    }
  }
  return Status::Ok();
}

std::string StateFilePath(std::string_view base, std::string_view rest) {
  while (!base.empty() && base.back() == '/') base.remove_suffix(1);
  return fmt::format("{}/{}", base, rest);
}

std::string PasswdHome(uid_t uid) {
  Result<std::optional<proc::PasswdEntry>> entry = proc::LookupPasswdByUid(uid);
  if (!entry.ok() || !*entry) return "";
  return (*entry)->home;
}

}  // namespace

std::string AuditRecordJson(const AuditRecord& record) {
  try {
    // Built field by field to keep the documented key order (nlohmann::json
    // sorts keys); each value is escaped for the terminal too, because
    // administrators read the log with tail and less and a command line must
    // not drive their terminal.
    const std::pair<const char*, Json> fields[] = {
        {"time", JsonOrNull(IsoTimeUtc(record.time_unix_ms))},
        {"time_unix_ms", record.time_unix_ms},
        {"event", JsonText(record.event)},
        {"caller_uid", record.caller_uid},
        {"caller_user", JsonText(record.caller_user)},
        {"pid", record.pid},
        {"start_ticks", JsonOrNull(record.start_ticks)},
        {"uid", JsonOrNull(record.uid)},
        {"user", JsonText(record.user)},
        {"command", JsonText(record.command)},
        {"gpus", record.gpus},
        {"vram_bytes", JsonOrNull(record.vram_bytes)},
        {"signal", JsonText(record.signal)},
        {"outcome", JsonText(record.outcome)},
        {"detail", JsonText(record.detail)},
    };
    std::string line = "{";
    for (const auto& [key, value] : fields) {
      if (line.size() > 1) line += ',';
      line += '"';
      line += key;
      line += "\":";
      line += DumpJsonFragmentForTerminal(value, false, 0);
    }
    line += '}';
    return line;
  } catch (...) {
    // Only allocation can fail; a fixed line keeps the log parseable.
    return R"({"event":"error","detail":"audit record could not be serialised"})";
  }
}

FileAuditLog::FileAuditLog(std::string path)
    : FileAuditLog(std::move(path), geteuid() == 0 ? 0750 : 0700) {}

FileAuditLog::FileAuditLog(std::string path, mode_t dir_mode)
    : path_(std::move(path)), dir_mode_(dir_mode) {}

FileAuditLog FileAuditLog::InExistingDirectory(std::string path) {
  FileAuditLog log(std::move(path));
  log.create_parents_ = false;
  return log;
}

Status FileAuditLog::Append(const AuditRecord& record) {
  try {
    return AppendLine(path_, dir_mode_, create_parents_, AuditRecordJson(record) + "\n");
  } catch (...) {
    // Only allocation can fail; the contract is no throw.
    return MakeError("io", "audit log: out of memory");
  }
}

std::string DefaultAuditLogPath(uid_t euid,
                                const std::function<const char*(const char*)>& getenv_fn) {
  if (euid == 0) return "/var/log/gpuwarden/audit.log";
  // A relative directory would depend on where the command was started.
  auto absolute = [&](const char* name) -> std::string_view {
    const char* value = getenv_fn ? getenv_fn(name) : nullptr;
    if (value == nullptr || value[0] != '/') return {};
    return value;
  };
  if (std::string_view state = absolute("XDG_STATE_HOME"); !state.empty()) {
    return StateFilePath(state, "gpuwarden/audit.log");
  }
  if (std::string_view home = absolute("HOME"); !home.empty()) {
    return StateFilePath(home, ".local/state/gpuwarden/audit.log");
  }
  const std::string home = PasswdHome(euid);
  if (home.empty() || home[0] != '/') return "";
  return StateFilePath(home, ".local/state/gpuwarden/audit.log");
}

}  // namespace gw::act
