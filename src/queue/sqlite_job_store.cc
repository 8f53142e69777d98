#include "queue/sqlite_job_store.h"

#include <fcntl.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <limits>
#include <string_view>
#include <thread>
#include <utility>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "os/mounts.h"

namespace gw::queue {
namespace {

using Json = nlohmann::json;

// PRAGMA application_id of a gpuwarden job store ("GWQD"), so Open can tell
// its own file from another program's SQLite database at the same path.
constexpr int32_t kApplicationId = 0x47575144;

// Migration i brings a file from schema version i to i + 1; each runs in its
// own transaction together with the user_version bump, so a crash leaves the
// file at one version or the next, never between. Append only: a shipped
// migration is never edited.
constexpr std::array<const char*, 2> kMigrations = {
    // 1: the jobs table. STRICT so that a value of the wrong type is an error
    // at the write, not a surprise at the read. The JobSpec's byte strings
    // (name, argv, cwd, env) and every other string that comes from a user or
    // a process are BLOBs: bytes in, the same bytes out, whatever the
    // encoding. String lists are NUL-terminated elements, as in
    // /proc/PID/cmdline. The rest of the spec is JSON (numbers and booleans
    // only), so a later spec field needs no migration. uint64 values are
    // stored bit-for-bit as INTEGER (int64).
    R"sql(
CREATE TABLE jobs (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  uid INTEGER NOT NULL,
  gid INTEGER NOT NULL,
  user BLOB NOT NULL,
  state TEXT NOT NULL,
  submit_unix_ms INTEGER NOT NULL,
  start_unix_ms INTEGER,
  end_unix_ms INTEGER,
  name BLOB NOT NULL,
  argv BLOB NOT NULL,
  cwd BLOB NOT NULL,
  env BLOB NOT NULL,
  spec TEXT NOT NULL,
  gpu_indices TEXT NOT NULL,
  gpu_uuids BLOB NOT NULL,
  supervisor_pid INTEGER,
  supervisor_start_ticks INTEGER,
  pid INTEGER,
  pid_start_ticks INTEGER,
  exit_code INTEGER,
  exit_signal INTEGER,
  end_reason BLOB NOT NULL,
  end_detail BLOB NOT NULL,
  peak_vram_bytes INTEGER,
  requeues INTEGER NOT NULL,
  stdout_path BLOB NOT NULL,
  stderr_path BLOB NOT NULL
) STRICT;
CREATE INDEX jobs_by_state ON jobs(state);
CREATE INDEX jobs_by_uid ON jobs(uid);
CREATE INDEX jobs_by_end ON jobs(end_unix_ms);
PRAGMA application_id = 1196904772;
)sql",
    // 2: fewer pages written, and synced, by a submit. Every index an insert
    // touches is one more page in the write-ahead log before the reply (a
    // submit wrote 7 pages). jobs_by_end holds ended jobs only (the usage
    // query's `end_unix_ms >= ?` implies it); jobs_by_uid goes: `jobs --mine`
    // reads newest first and stops at its limit.
    R"sql(
DROP INDEX jobs_by_uid;
DROP INDEX jobs_by_end;
CREATE INDEX jobs_by_end ON jobs(end_unix_ms) WHERE end_unix_ms IS NOT NULL;
)sql",
};
static_assert(kApplicationId == 1196904772, "keep migration 1's application_id in step");

// Every column but id, in the order BindJob binds and ReadJob reads them.
constexpr std::array<std::string_view, 26> kColumns = {
    "uid",
    "gid",
    "user",
    "state",
    "submit_unix_ms",
    "start_unix_ms",
    "end_unix_ms",
    "name",
    "argv",
    "cwd",
    "env",
    "spec",
    "gpu_indices",
    "gpu_uuids",
    "supervisor_pid",
    "supervisor_start_ticks",
    "pid",
    "pid_start_ticks",
    "exit_code",
    "exit_signal",
    "end_reason",
    "end_detail",
    "peak_vram_bytes",
    "requeues",
    "stdout_path",
    "stderr_path",
};

std::string ColumnList() {
  std::string out = "id";
  for (std::string_view c : kColumns) out += fmt::format(", {}", c);
  return out;
}

std::string InsertSql() {
  std::string names, params;
  for (size_t i = 0; i < kColumns.size(); ++i) {
    names += fmt::format("{}{}", i == 0 ? "" : ", ", kColumns[i]);
    params += i == 0 ? "?" : ", ?";
  }
  return fmt::format("INSERT INTO jobs({}) VALUES({})", names, params);
}

std::string UpdateSql() {
  std::string sets;
  for (size_t i = 0; i < kColumns.size(); ++i) {
    sets += fmt::format("{}{} = ?", i == 0 ? "" : ", ", kColumns[i]);
  }
  return fmt::format("UPDATE jobs SET {} WHERE id = ?", sets);
}

struct StmtDeleter {
  void operator()(sqlite3_stmt* s) const { sqlite3_finalize(s); }
};
using StmtPtr = std::unique_ptr<sqlite3_stmt, StmtDeleter>;

// A cached statement must be reset after each use: a SELECT left mid-way
// holds its read transaction open, which blocks WAL checkpoints.
class ResetOnExit {
 public:
  explicit ResetOnExit(sqlite3_stmt* s) : s_(s) {}
  ResetOnExit(const ResetOnExit&) = delete;
  ResetOnExit& operator=(const ResetOnExit&) = delete;
  ~ResetOnExit() {
    sqlite3_reset(s_);
    sqlite3_clear_bindings(s_);
  }

 private:
  sqlite3_stmt* s_;
};

// Joins NUL-free strings as NUL-terminated elements: {} -> "", {""} -> "\0".
Result<std::string> EncodeList(const std::vector<std::string>& items, std::string_view field) {
  std::string out;
  for (const std::string& s : items) {
    if (s.find('\0') != std::string::npos) {
      return MakeError("invalid",
                       fmt::format("{} holds a NUL byte, which a job cannot carry", field));
    }
    out += s;
    out.push_back('\0');
  }
  return out;
}

std::optional<std::vector<std::string>> DecodeList(std::string_view bytes) {
  std::vector<std::string> out;
  if (bytes.empty()) return out;
  if (bytes.back() != '\0') return std::nullopt;
  size_t start = 0;
  while (start < bytes.size()) {
    const size_t nul = bytes.find('\0', start);
    out.emplace_back(bytes.substr(start, nul - start));
    start = nul + 1;
  }
  return out;
}

// Binds parameters 1, 2, ... in order; the first failure is kept.
class Binder {
 public:
  explicit Binder(sqlite3_stmt* s) : s_(s) {}
  void Null() { Check(sqlite3_bind_null(s_, ++i_)); }
  void Int(int64_t v) { Check(sqlite3_bind_int64(s_, ++i_, v)); }
  // Bit for bit: a value above INT64_MAX reads back unchanged.
  void U64(uint64_t v) { Int(static_cast<int64_t>(v)); }
  template <typename T>
  void OptInt(const std::optional<T>& v) {
    v ? Int(static_cast<int64_t>(*v)) : Null();
  }
  void OptU64(const std::optional<uint64_t>& v) { v ? U64(*v) : Null(); }
  void Blob(std::string_view v) {
    // A non-null pointer even when empty: a null one would bind SQL NULL.
    Check(sqlite3_bind_blob64(s_, ++i_, v.empty() ? "" : v.data(), v.size(), SQLITE_TRANSIENT));
  }
  void Text(std::string_view v) {
    Check(sqlite3_bind_text64(s_, ++i_, v.empty() ? "" : v.data(), v.size(), SQLITE_TRANSIENT,
                              SQLITE_UTF8));
  }
  int rc() const { return rc_; }

 private:
  void Check(int rc) {
    if (rc != SQLITE_OK && rc_ == SQLITE_OK) rc_ = rc;
  }
  sqlite3_stmt* s_;
  int i_ = 0;
  int rc_ = SQLITE_OK;
};

// Reads columns 0, 1, ... in order; the first impossible value is kept.
class Reader {
 public:
  explicit Reader(sqlite3_stmt* s) : s_(s) {}
  template <typename T>
  T Int(std::string_view field) {
    const int col = i_++;
    if (sqlite3_column_type(s_, col) != SQLITE_INTEGER) return Bad<T>(field);
    const int64_t v = sqlite3_column_int64(s_, col);
    if (!std::in_range<T>(v)) return Bad<T>(field);
    return static_cast<T>(v);
  }
  uint64_t U64(std::string_view field) { return static_cast<uint64_t>(Int<int64_t>(field)); }
  template <typename T>
  std::optional<T> OptInt(std::string_view field) {
    if (sqlite3_column_type(s_, i_) == SQLITE_NULL) {
      ++i_;
      return std::nullopt;
    }
    return Int<T>(field);
  }
  std::optional<uint64_t> OptU64(std::string_view field) {
    std::optional<int64_t> v = OptInt<int64_t>(field);
    if (!v) return std::nullopt;
    return static_cast<uint64_t>(*v);
  }
  // TEXT or BLOB, exactly as stored (sqlite3_column_blob never converts).
  std::string Bytes(std::string_view field) {
    const int col = i_++;
    const int type = sqlite3_column_type(s_, col);
    if (type != SQLITE_BLOB && type != SQLITE_TEXT) return Bad<std::string>(field);
    const void* p = sqlite3_column_blob(s_, col);
    const int n = sqlite3_column_bytes(s_, col);
    if (p == nullptr || n <= 0) return std::string();
    return std::string(static_cast<const char*>(p), static_cast<size_t>(n));
  }
  template <typename T>
  T Bad(std::string_view field) {
    if (bad_.empty()) bad_ = std::string(field);
    return T{};
  }
  const std::string& bad() const { return bad_; }

 private:
  sqlite3_stmt* s_;
  int i_ = 0;
  std::string bad_;
};

// The spec's numbers and flags; its byte strings have their own columns.
std::string SpecJson(const JobSpec& spec) {
  Json j = Json::object();
  j["umask"] = static_cast<uint32_t>(spec.umask);
  j["gpus"] = spec.gpus;
  j["vram_bytes"] = spec.vram_bytes;
  j["max_util_pct"] = spec.max_util_pct ? Json(*spec.max_util_pct) : Json(nullptr);
  j["priority"] = spec.priority;
  j["window"] = spec.window
                    ? Json{{"start_min", spec.window->start_min}, {"end_min", spec.window->end_min}}
                    : Json(nullptr);
  j["after"] = spec.after;
  j["nvlink"] = spec.nvlink;
  j["time_limit_s"] = spec.time_limit_s ? Json(*spec.time_limit_s) : Json(nullptr);
  j["preemptible"] = spec.preemptible;
  return j.dump();  // Numbers and booleans only: dump cannot meet bad UTF-8.
}

// A JSON integer that fits T; `fallback` when the key is missing, so a spec
// field added later reads as its default from older rows. Error "malformed"
// naming `key`.
template <typename T>
Result<T> JsonInt(const Json& j, const char* key, T fallback) {
  auto it = j.find(key);
  if (it == j.end()) return fallback;
  if (it->is_number_unsigned()) {
    const uint64_t v = it->get<uint64_t>();
    if (std::in_range<T>(v)) return static_cast<T>(v);
  } else if (it->is_number_integer()) {
    const int64_t v = it->get<int64_t>();
    if (std::in_range<T>(v)) return static_cast<T>(v);
  }
  return MakeError("malformed", key);
}

// As JsonInt; null and missing are nullopt.
template <typename T>
Result<std::optional<T>> JsonOptInt(const Json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return std::optional<T>();
  Result<T> v = JsonInt<T>(j, key, T{});
  if (!v.ok()) return v.error();
  return std::optional<T>(*v);
}

Result<bool> JsonBool(const Json& j, const char* key, bool fallback) {
  auto it = j.find(key);
  if (it == j.end()) return fallback;
  if (!it->is_boolean()) return MakeError("malformed", key);
  return it->get<bool>();
}

// Assigns a field from a Result, or keeps its error (the first one wins).
class FieldReader {
 public:
  template <typename T>
  void Set(Result<T> r, T* out, const char* name) {
    if (!error_.empty()) return;
    if (r.ok()) {
      *out = std::move(*r);
    } else {
      error_ = name;
    }
  }
  Status status() const { return error_.empty() ? Status::Ok() : MakeError("malformed", error_); }
  bool failed() const { return !error_.empty(); }

 private:
  std::string error_;
};

// Fills spec's non-string fields from the spec column. Error "malformed",
// the message naming the first bad field ("spec.gpus").
Status ParseSpecJson(std::string_view text, JobSpec* spec) {
  const Json j = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return MakeError("malformed", "spec");
  FieldReader f;
  f.Set(JsonInt(j, "umask", spec->umask), &spec->umask, "spec.umask");
  f.Set(JsonInt(j, "gpus", spec->gpus), &spec->gpus, "spec.gpus");
  f.Set(JsonInt(j, "vram_bytes", spec->vram_bytes), &spec->vram_bytes, "spec.vram_bytes");
  f.Set(JsonOptInt<decltype(spec->max_util_pct)::value_type>(j, "max_util_pct"),
        &spec->max_util_pct, "spec.max_util_pct");
  f.Set(JsonInt(j, "priority", spec->priority), &spec->priority, "spec.priority");
  if (f.failed()) return f.status();
  if (auto w = j.find("window"); w != j.end() && !w->is_null()) {
    if (!w->is_object() || !w->contains("start_min") || !w->contains("end_min")) {
      return MakeError("malformed", "spec.window");
    }
    TimeWindow tw;
    f.Set(JsonInt(*w, "start_min", tw.start_min), &tw.start_min, "spec.window");
    f.Set(JsonInt(*w, "end_min", tw.end_min), &tw.end_min, "spec.window");
    if (f.failed()) return f.status();
    spec->window = tw;
  }
  if (auto a = j.find("after"); a != j.end()) {
    if (!a->is_array()) return MakeError("malformed", "spec.after");
    for (const Json& id : *a) {
      if (!id.is_number_integer()) return MakeError("malformed", "spec.after");
      spec->after.push_back(id.get<JobId>());
    }
  }
  f.Set(JsonBool(j, "nvlink", spec->nvlink), &spec->nvlink, "spec.nvlink");
  f.Set(JsonOptInt<decltype(spec->time_limit_s)::value_type>(j, "time_limit_s"),
        &spec->time_limit_s, "spec.time_limit_s");
  f.Set(JsonBool(j, "preemptible", spec->preemptible), &spec->preemptible, "spec.preemptible");
  return f.status();
}

std::string IndicesJson(const std::vector<unsigned>& indices) { return Json(indices).dump(); }

// Error "malformed" ("gpu_indices").
Result<std::vector<unsigned>> ParseIndicesJson(std::string_view text) {
  const Json j = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!j.is_array()) return MakeError("malformed", "gpu_indices");
  std::vector<unsigned> out;
  for (const Json& v : j) {
    if (!v.is_number_unsigned() || !std::in_range<unsigned>(v.get<uint64_t>())) {
      return MakeError("malformed", "gpu_indices");
    }
    out.push_back(static_cast<unsigned>(v.get<uint64_t>()));
  }
  return out;
}

// Binds every column of kColumns, in order, from `job`.
Status BindJob(const Job& job, Binder* b) {
  Result<std::string> argv = EncodeList(job.spec.argv, "argv");
  if (!argv.ok()) return argv.error();
  Result<std::string> env = EncodeList(job.spec.env, "env");
  if (!env.ok()) return env.error();
  Result<std::string> uuids = EncodeList(job.gpu_uuids, "gpu_uuids");
  if (!uuids.ok()) return uuids.error();

  b->Int(job.owner.uid);
  b->Int(job.owner.gid);
  b->Blob(job.owner.user);
  b->Text(JobStateName(job.state));
  b->Int(job.submit_unix_ms);
  b->OptInt(job.start_unix_ms);
  b->OptInt(job.end_unix_ms);
  b->Blob(job.spec.name);
  b->Blob(*argv);
  b->Blob(job.spec.cwd);
  b->Blob(*env);
  b->Text(SpecJson(job.spec));
  b->Text(IndicesJson(job.gpu_indices));
  b->Blob(*uuids);
  b->OptInt(job.supervisor_pid);
  b->OptU64(job.supervisor_start_ticks);
  b->OptInt(job.pid);
  b->OptU64(job.pid_start_ticks);
  b->OptInt(job.exit_code);
  b->OptInt(job.exit_signal);
  b->Blob(job.end_reason);
  b->Blob(job.end_detail);
  b->OptU64(job.peak_vram_bytes);
  b->Int(job.requeues);
  b->Blob(job.stdout_path);
  b->Blob(job.stderr_path);
  return Status::Ok();
}

// Reads "id, kColumns..." into a Job; the name of the first bad column on
// failure.
std::optional<std::string> ReadJob(sqlite3_stmt* stmt, Job* job) {
  Reader r(stmt);
  job->id = r.Int<JobId>("id");
  job->owner.uid = r.Int<uid_t>("uid");
  job->owner.gid = r.Int<gid_t>("gid");
  job->owner.user = r.Bytes("user");
  const std::string state = r.Bytes("state");
  job->submit_unix_ms = r.Int<int64_t>("submit_unix_ms");
  job->start_unix_ms = r.OptInt<int64_t>("start_unix_ms");
  job->end_unix_ms = r.OptInt<int64_t>("end_unix_ms");
  job->spec.name = r.Bytes("name");
  const std::string argv = r.Bytes("argv");
  job->spec.cwd = r.Bytes("cwd");
  const std::string env = r.Bytes("env");
  const std::string spec = r.Bytes("spec");
  const std::string indices = r.Bytes("gpu_indices");
  const std::string uuids = r.Bytes("gpu_uuids");
  job->supervisor_pid = r.OptInt<pid_t>("supervisor_pid");
  job->supervisor_start_ticks = r.OptU64("supervisor_start_ticks");
  job->pid = r.OptInt<pid_t>("pid");
  job->pid_start_ticks = r.OptU64("pid_start_ticks");
  job->exit_code = r.OptInt<int>("exit_code");
  job->exit_signal = r.OptInt<int>("exit_signal");
  job->end_reason = r.Bytes("end_reason");
  job->end_detail = r.Bytes("end_detail");
  job->peak_vram_bytes = r.OptU64("peak_vram_bytes");
  job->requeues = r.Int<unsigned>("requeues");
  job->stdout_path = r.Bytes("stdout_path");
  job->stderr_path = r.Bytes("stderr_path");
  if (!r.bad().empty()) return r.bad();

  std::optional<JobState> s = ParseJobState(state);
  if (!s) return "state";
  job->state = *s;
  std::optional<std::vector<std::string>> list = DecodeList(argv);
  if (!list) return "argv";
  job->spec.argv = std::move(*list);
  list = DecodeList(env);
  if (!list) return "env";
  job->spec.env = std::move(*list);
  list = DecodeList(uuids);
  if (!list) return "gpu_uuids";
  job->gpu_uuids = std::move(*list);
  Result<std::vector<unsigned>> idx = ParseIndicesJson(indices);
  if (!idx.ok()) return idx.error().message;
  job->gpu_indices = std::move(*idx);
  if (Status st = ParseSpecJson(spec, &job->spec); !st.ok()) return st.error().message;
  return std::nullopt;
}

// Busy (another connection holds the lock) is worth waiting out; anything
// else is not.
bool IsBusy(int rc) {
  const int primary = rc & 0xff;
  return primary == SQLITE_BUSY || primary == SQLITE_LOCKED;
}

}  // namespace

int SqliteJobStore::LatestSchemaVersion() { return static_cast<int>(kMigrations.size()); }

SqliteJobStore::SqliteJobStore(std::string path, sqlite3* db) : path_(std::move(path)), db_(db) {}

SqliteJobStore::~SqliteJobStore() {
  for (sqlite3_stmt* s : {insert_, update_, get_, usage_}) sqlite3_finalize(s);
  // Rolls back a transaction left open; an open WAL is recovered by the next
  // Open if this never runs (a crash).
  sqlite3_close_v2(db_);
}

std::optional<std::string> UnwritableCause(int sqlite_code, int system_errno) {
  switch (system_errno) {
    case ENOSPC:
      return "no space left on device";
    case EDQUOT:
      return "disk quota exceeded";
    case EROFS:
      return "read-only file system";
    case EIO:
      return "I/O error";
    case EFBIG:
      return "file too large";
    default:
      break;
  }
  switch (sqlite_code & 0xff) {
    case SQLITE_FULL:
      return "no space left on device";
    case SQLITE_READONLY:
      return "read-only file system";
    case SQLITE_IOERR:
      return "I/O error";
    case SQLITE_CANTOPEN:
      return "cannot open the file";
    default:
      return std::nullopt;
  }
}

Error SqliteJobStore::SqlError(const std::string& what) const {
  const int code = sqlite3_extended_errcode(db_);
  const int primary = code & 0xff;
  // errno is the VFS's last failure, which may be older than this error:
  // consult it only for errors that come from the file system.
  const bool from_disk = primary == SQLITE_FULL || primary == SQLITE_READONLY ||
                         primary == SQLITE_IOERR || primary == SQLITE_CANTOPEN;
  if (from_disk) {
    if (std::optional<std::string> cause = UnwritableCause(code, sqlite3_system_errno(db_))) {
      // The kernel answers writes to files already open with EIO once it has
      // turned the filesystem read-only after an error (ext4
      // errors=remount-ro): the read-only mount is what the admin must see.
      if (*cause == "I/O error") {
        if (Result<os::MountFacts> m = os::MountOf(path_); m.ok() && m->read_only) {
          cause = fmt::format("read-only file system ({} on {}, turned read-only after an error)",
                              m->mount_point, m->source);
        }
      }
      return MakeError(kStoreUnwritable, fmt::format("queue storage not writable: {} ({}: {}: {})",
                                                     *cause, path_, what, sqlite3_errmsg(db_)));
    }
  }
  return MakeError("store", fmt::format("{}: {}: {}", path_, what, sqlite3_errmsg(db_)));
}

Status SqliteJobStore::Exec(const char* sql, const char* what) {
  if (sqlite3_exec(db_, sql, nullptr, nullptr, nullptr) != SQLITE_OK) return SqlError(what);
  return Status::Ok();
}

Result<sqlite3_stmt*> SqliteJobStore::Cached(sqlite3_stmt** slot, const std::string& sql) {
  if (*slot == nullptr && sqlite3_prepare_v3(db_, sql.c_str(), -1, SQLITE_PREPARE_PERSISTENT, slot,
                                             nullptr) != SQLITE_OK) {
    return SqlError("preparing a statement");
  }
  return *slot;
}

namespace {

// One integer from a single-row query (a PRAGMA), waiting out locks.
Result<int64_t> QueryInt(sqlite3* db, const char* sql) {
  sqlite3_stmt* raw = nullptr;
  if (sqlite3_prepare_v2(db, sql, -1, &raw, nullptr) != SQLITE_OK) {
    return MakeError("store", sqlite3_errmsg(db));
  }
  StmtPtr stmt(raw);
  if (sqlite3_step(stmt.get()) != SQLITE_ROW) return MakeError("store", sqlite3_errmsg(db));
  return sqlite3_column_int64(stmt.get(), 0);
}

Result<std::string> QueryText(sqlite3* db, const char* sql) {
  sqlite3_stmt* raw = nullptr;
  if (sqlite3_prepare_v2(db, sql, -1, &raw, nullptr) != SQLITE_OK) {
    return MakeError("store", sqlite3_errmsg(db));
  }
  StmtPtr stmt(raw);
  const int rc = sqlite3_step(stmt.get());
  if (rc != SQLITE_ROW) return MakeError(IsBusy(rc) ? "busy" : "store", sqlite3_errmsg(db));
  const unsigned char* t = sqlite3_column_text(stmt.get(), 0);
  return std::string(t == nullptr ? "" : reinterpret_cast<const char*>(t));
}

struct Header {
  int64_t application_id = 0;
  int64_t user_version = 0;
  int64_t schema_objects = 0;  // Tables, indexes, ...
};

Result<Header> ReadHeader(sqlite3* db) {
  static constexpr const char* kSql =
      "SELECT (SELECT application_id FROM pragma_application_id), "
      "(SELECT user_version FROM pragma_user_version), (SELECT count(*) FROM sqlite_schema)";
  sqlite3_stmt* raw = nullptr;
  if (sqlite3_prepare_v2(db, kSql, -1, &raw, nullptr) != SQLITE_OK) {
    return MakeError("store", sqlite3_errmsg(db));
  }
  StmtPtr stmt(raw);
  if (sqlite3_step(stmt.get()) != SQLITE_ROW) return MakeError("store", sqlite3_errmsg(db));
  return Header{sqlite3_column_int64(stmt.get(), 0), sqlite3_column_int64(stmt.get(), 1),
                sqlite3_column_int64(stmt.get(), 2)};
}

// The database file and its WAL companions hold users' environments: 0600,
// made so before SQLite first opens them (it gives new -wal and -shm files
// the database file's mode).
Status SecureFile(const std::string& path) {
  const int fd = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) {
    return MakeError("store",
                     fmt::format("{}: cannot open or create: {}", path, std::strerror(errno)));
  }
  struct stat st {};
  Status status;
  if (fstat(fd, &st) != 0) {
    status = MakeError("store", fmt::format("{}: cannot stat: {}", path, std::strerror(errno)));
  } else if (!S_ISREG(st.st_mode)) {
    status = MakeError("store", fmt::format("{}: not a regular file", path));
  } else if ((st.st_mode & 07777) != 0600 && fchmod(fd, 0600) != 0) {
    status = MakeError("store",
                       fmt::format("{}: cannot make it mode 0600: {}", path, std::strerror(errno)));
  }
  close(fd);
  if (!status.ok()) return status;
  for (const char* suffix : {"-wal", "-shm", "-journal"}) {
    const std::string side = path + suffix;
    struct stat side_st {};
    if (lstat(side.c_str(), &side_st) == 0 && S_ISREG(side_st.st_mode) &&
        (side_st.st_mode & 07777) != 0600 && chmod(side.c_str(), 0600) != 0) {
      return MakeError("store",
                       fmt::format("{}: cannot make it mode 0600: {}", side, std::strerror(errno)));
    }
  }
  return Status::Ok();
}

}  // namespace

Result<std::unique_ptr<SqliteJobStore>> SqliteJobStore::Open(const std::string& path) {
  if (Status s = SecureFile(path); !s.ok()) return s.error();

  sqlite3* db = nullptr;
  // No SQLITE_OPEN_CREATE: SecureFile made the file, with the right mode.
  const int rc =
      sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_EXRESCODE, nullptr);
  std::unique_ptr<SqliteJobStore> store(
      new SqliteJobStore(path, db));  // Closes db on every return below.
  if (rc != SQLITE_OK) return store->SqlError("opening");
  sqlite3_busy_timeout(db, kBusyTimeoutMs);
  // Connection-only settings first: they do not touch the file.
  // The write-ahead log is checkpointed, and then written again from its
  // start, every kWalCheckpointPages pages instead of SQLite's 1,000: a
  // commit that overwrites the log in place syncs data only, one that grows
  // the file syncs its size too (0.1 ms more per submit here), and with
  // 1,000 pages the log of a freshly started daemon grew for its first ~330
  // submits.
  const std::string settings = fmt::format(
      "PRAGMA synchronous = FULL; PRAGMA foreign_keys = ON; PRAGMA wal_autocheckpoint = {};",
      kWalCheckpointPages);
  if (Status s = store->Exec(settings.c_str(), "setting up the connection"); !s.ok()) {
    return s.error();
  }

  // Is this our file, and one we understand? Only reads until it is. One
  // statement, so one snapshot: another process may be creating the schema
  // right now, and reading the id before and the tables after would look like
  // a foreign database. (A file that is not SQLite at all fails here: "file
  // is not a database".)
  Result<Header> header = ReadHeader(db);
  if (!header.ok()) {
    return MakeError("store", fmt::format("{}: reading the job store's header: {}", path,
                                          header.error().message));
  }
  const int64_t app_id = header->application_id;
  const int64_t version = header->user_version;
  const int64_t objects = header->schema_objects;
  if (app_id != kApplicationId && (app_id != 0 || version != 0 || objects != 0)) {
    return MakeError("store", fmt::format("{}: a SQLite database of another program, not a "
                                          "gpuwarden job store; refusing to change it",
                                          path));
  }
  if (version > LatestSchemaVersion()) {
    return MakeError("store",
                     fmt::format("{}: job store schema version {} is newer than this gpuwarden "
                                 "understands (up to {}); refusing to open it, the file is left "
                                 "unchanged. Run the gpuwarden that wrote it.",
                                 path, version, LatestSchemaVersion()));
  }

  // WAL: readers never block the writer, and a commit is one append + fsync.
  // Switching a new file to WAL needs it alone; several processes opening a
  // new file at once can find it busy, and this pragma does not always go
  // through the busy handler, so wait here as a write would.
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(kBusyTimeoutMs);
  for (;;) {
    Result<std::string> mode = QueryText(db, "PRAGMA journal_mode = WAL");
    if (mode.ok()) {
      if (*mode != "wal") {
        return MakeError("store", fmt::format("{}: cannot use write-ahead logging (journal mode "
                                              "stays \"{}\")",
                                              path, *mode));
      }
      break;
    }
    if (mode.error().code != "busy" || std::chrono::steady_clock::now() > deadline) {
      return MakeError("store", fmt::format("{}: switching to write-ahead logging: {}", path,
                                            mode.error().message));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }

  if (Status s = store->Migrate(); !s.ok()) return s.error();
  return store;
}

Status SqliteJobStore::Migrate() {
  for (;;) {
    // IMMEDIATE: take the write lock before reading the version, so two
    // processes opening an old file cannot both migrate it.
    if (Status s = Exec("BEGIN IMMEDIATE", "starting a schema migration"); !s.ok()) return s;
    Result<int64_t> version = QueryInt(db_, "PRAGMA user_version");
    Status step;
    if (!version.ok()) {
      step = SqlError("reading the schema version");
    } else if (*version > LatestSchemaVersion()) {
      // Another process upgraded the file while we were opening it.
      step = MakeError("store", fmt::format("{}: job store schema version {} is newer than this "
                                            "gpuwarden understands (up to {})",
                                            path_, *version, LatestSchemaVersion()));
    } else if (*version == LatestSchemaVersion()) {
      schema_version_ = static_cast<int>(*version);
      return Exec("COMMIT", "ending a schema migration");
    } else {
      const auto v = static_cast<size_t>(*version);
      const std::string bump = fmt::format("PRAGMA user_version = {}", v + 1);
      step = Exec(kMigrations[v], "migrating the schema");
      if (step.ok()) step = Exec(bump.c_str(), "migrating the schema");
      if (step.ok()) step = Exec("COMMIT", "committing a schema migration");
    }
    if (!step.ok()) {
      if (!sqlite3_get_autocommit(db_)) sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
      return step;
    }
  }
}

Result<JobId> SqliteJobStore::Insert(Job job) {
  static const std::string sql = InsertSql();
  Result<sqlite3_stmt*> stmt = Cached(&insert_, sql);
  if (!stmt.ok()) return stmt.error();
  ResetOnExit reset(*stmt);
  Binder b(*stmt);
  if (Status s = BindJob(job, &b); !s.ok()) return s.error();
  if (b.rc() != SQLITE_OK) return SqlError("binding a job");
  if (sqlite3_step(*stmt) != SQLITE_DONE) return SqlError("inserting a job");
  return sqlite3_last_insert_rowid(db_);
}

Status SqliteJobStore::Update(const Job& job) {
  static const std::string sql = UpdateSql();
  Result<sqlite3_stmt*> stmt = Cached(&update_, sql);
  if (!stmt.ok()) return stmt.error();
  ResetOnExit reset(*stmt);
  Binder b(*stmt);
  if (Status s = BindJob(job, &b); !s.ok()) return s;
  b.Int(job.id);
  if (b.rc() != SQLITE_OK) return SqlError("binding a job");
  if (sqlite3_step(*stmt) != SQLITE_DONE) {
    return SqlError(fmt::format("updating job {}", job.id));
  }
  if (sqlite3_changes(db_) == 0) {
    return MakeError("not_found", fmt::format("{}: no job {}", path_, job.id));
  }
  return Status::Ok();
}

Result<std::vector<Job>> SqliteJobStore::Query(sqlite3_stmt* stmt) {
  std::vector<Job> jobs;
  for (;;) {
    const int rc = sqlite3_step(stmt);
    if (rc == SQLITE_DONE) return jobs;
    if (rc != SQLITE_ROW) return SqlError("reading jobs");
    Job job;
    if (std::optional<std::string> bad = ReadJob(stmt, &job)) {
      return MakeError("store",
                       fmt::format("{}: job {} has an impossible {} (a damaged or hand-edited "
                                   "file?)",
                                   path_, sqlite3_column_int64(stmt, 0), *bad));
    }
    jobs.push_back(std::move(job));
  }
}

Result<std::optional<Job>> SqliteJobStore::Get(JobId id) {
  static const std::string sql = fmt::format("SELECT {} FROM jobs WHERE id = ?", ColumnList());
  Result<sqlite3_stmt*> stmt = Cached(&get_, sql);
  if (!stmt.ok()) return stmt.error();
  ResetOnExit reset(*stmt);
  if (sqlite3_bind_int64(*stmt, 1, id) != SQLITE_OK) return SqlError("binding a job id");
  Result<std::vector<Job>> jobs = Query(*stmt);
  if (!jobs.ok()) return jobs.error();
  if (jobs->empty()) return std::optional<Job>();
  return std::optional<Job>(std::move(jobs->front()));
}

Result<std::vector<Job>> SqliteJobStore::List(const JobFilter& filter) {
  std::string sql = fmt::format("SELECT {} FROM jobs WHERE 1", ColumnList());
  if (filter.uid) sql += " AND uid = ?";
  if (!filter.states.empty()) {
    sql += " AND state IN (";
    for (size_t i = 0; i < filter.states.size(); ++i) sql += i == 0 ? "?" : ", ?";
    sql += ")";
  }
  sql += filter.newest_first ? " ORDER BY id DESC" : " ORDER BY id ASC";
  if (filter.limit) sql += " LIMIT ?";

  sqlite3_stmt* raw = nullptr;
  if (sqlite3_prepare_v2(db_, sql.c_str(), -1, &raw, nullptr) != SQLITE_OK) {
    return SqlError("preparing a job listing");
  }
  StmtPtr stmt(raw);
  Binder b(stmt.get());
  if (filter.uid) b.Int(*filter.uid);
  for (JobState s : filter.states) b.Text(JobStateName(s));
  if (filter.limit) {
    // SQLite reads a negative LIMIT as "no limit"; clamp instead of wrapping.
    b.Int(static_cast<int64_t>(
        std::min<uint64_t>(*filter.limit, std::numeric_limits<int64_t>::max())));
  }
  if (b.rc() != SQLITE_OK) return SqlError("binding a job listing");
  return Query(stmt.get());
}

Result<std::vector<Job>> SqliteJobStore::Active() {
  JobFilter f;
  f.states = {JobState::kQueued, JobState::kHeld, JobState::kStarting, JobState::kRunning};
  return List(f);
}

Status SqliteJobStore::Transaction(const std::function<Status()>& body) {
  // The outermost level is a real transaction, taken IMMEDIATE: a deferred
  // one that reads first and writes later can fail with SQLITE_BUSY_SNAPSHOT
  // without ever waiting. Inner levels are savepoints, so an inner failure
  // undoes only its own writes.
  const int depth = transaction_depth_;
  const std::string savepoint = fmt::format("gw_tx_{}", depth);
  const std::string begin =
      depth == 0 ? std::string("BEGIN IMMEDIATE") : fmt::format("SAVEPOINT {}", savepoint);
  const std::string commit =
      depth == 0 ? std::string("COMMIT") : fmt::format("RELEASE {}", savepoint);
  const std::string rollback =
      depth == 0 ? std::string("ROLLBACK") : fmt::format("ROLLBACK TO {0}; RELEASE {0}", savepoint);
  if (Status s = Exec(begin.c_str(), "starting a transaction"); !s.ok()) return s;

  // Undoes the transaction if `body` throws (it should not: no exceptions
  // cross modules, but an open transaction would hold the write lock forever).
  struct Guard {
    SqliteJobStore* store;
    const std::string* rollback;
    bool done = false;
    ~Guard() {
      --store->transaction_depth_;
      // SQLite may already have rolled back on its own (I/O error, full disk).
      if (!done && !sqlite3_get_autocommit(store->db_)) {
        sqlite3_exec(store->db_, rollback->c_str(), nullptr, nullptr, nullptr);
      }
    }
  } guard{this, &rollback};
  ++transaction_depth_;

  Status result = body();
  if (result.ok()) {
    result = Exec(commit.c_str(), "committing a transaction");
    if (result.ok()) guard.done = true;
  }
  return result;
}

Result<std::map<uid_t, double>> SqliteJobStore::UsageGpuSeconds(int64_t now_unix_ms,
                                                                double half_life_s) {
  if (!std::isfinite(half_life_s) || half_life_s <= 0) {
    return MakeError(
        "invalid", fmt::format("fair-share half-life {} s is not a positive number", half_life_s));
  }
  // Jobs that ended before this no longer count (weight below 0.5^8 = 0.4%).
  const double cutoff_ms = std::ceil(static_cast<double>(now_unix_ms) - 8 * half_life_s * 1000);
  const int64_t cutoff = cutoff_ms <= static_cast<double>(std::numeric_limits<int64_t>::min())
                             ? std::numeric_limits<int64_t>::min()
                             : static_cast<int64_t>(cutoff_ms);
  // Two halves, each read through an index (jobs_by_end, jobs_by_state; the
  // unary + keeps the planner off jobs_by_end there, where every waiting job
  // has no end), so a pass costs what ended lately and what runs, not every
  // job ever queued: the scheduler asks before each pass. Still running: no end yet and
  // starting or running (a terminal job with no end time would otherwise be
  // charged for ever).
  static const std::string kSql =
      "SELECT uid, start_unix_ms, end_unix_ms, json_extract(spec, '$.gpus') FROM jobs "
      "WHERE end_unix_ms >= ?1 AND start_unix_ms IS NOT NULL "
      "UNION ALL "
      "SELECT uid, start_unix_ms, end_unix_ms, json_extract(spec, '$.gpus') FROM jobs "
      "WHERE state IN ('starting', 'running') AND +end_unix_ms IS NULL "
      "AND start_unix_ms IS NOT NULL";
  Result<sqlite3_stmt*> cached = Cached(&usage_, kSql);
  if (!cached.ok()) return cached.error();
  ResetOnExit reset(*cached);
  sqlite3_stmt* const stmt = *cached;
  if (sqlite3_bind_int64(stmt, 1, cutoff) != SQLITE_OK) {
    return SqlError("binding the usage query");
  }
  std::map<uid_t, double> usage;
  for (;;) {
    const int rc = sqlite3_step(stmt);
    if (rc == SQLITE_DONE) return usage;
    if (rc != SQLITE_ROW) return SqlError("reading usage");
    Reader r(stmt);
    const auto uid = r.Int<uid_t>("uid");
    const auto start = r.Int<int64_t>("start_unix_ms");
    const std::optional<int64_t> end = r.OptInt<int64_t>("end_unix_ms");
    // JobSpec's default when a spec predates the field.
    const std::optional<unsigned> gpus = r.OptInt<unsigned>("spec.gpus");
    if (!r.bad().empty()) {
      return MakeError("store", fmt::format("{}: a job has an impossible {}", path_, r.bad()));
    }
    // Future times (clock steps) count as now, and nothing runs backwards.
    const int64_t stop = std::min(end.value_or(now_unix_ms), now_unix_ms);
    const int64_t begin = std::min(start, stop);
    const double seconds = static_cast<double>(stop - begin) / 1000.0;
    const double age_s = static_cast<double>(now_unix_ms - stop) / 1000.0;
    usage[uid] += gpus.value_or(JobSpec{}.gpus) * seconds * std::exp2(-age_s / half_life_s);
  }
}

Result<StorePragmas> SqliteJobStore::Pragmas() {
  StorePragmas p;
  Result<std::string> mode = QueryText(db_, "PRAGMA journal_mode");
  Result<int64_t> sync = QueryInt(db_, "PRAGMA synchronous");
  Result<int64_t> fk = QueryInt(db_, "PRAGMA foreign_keys");
  Result<int64_t> busy = QueryInt(db_, "PRAGMA busy_timeout");
  Result<int64_t> checkpoint = QueryInt(db_, "PRAGMA wal_autocheckpoint");
  if (!mode.ok() || !sync.ok() || !fk.ok() || !busy.ok() || !checkpoint.ok()) {
    return SqlError("reading settings");
  }
  p.journal_mode = *mode;
  p.synchronous = static_cast<int>(*sync);
  p.foreign_keys = *fk != 0;
  p.busy_timeout_ms = static_cast<int>(*busy);
  p.wal_autocheckpoint_pages = static_cast<int>(*checkpoint);
  return p;
}

}  // namespace gw::queue
