#include "queue/run_files.h"

#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>
#include <utility>

#include "core/text.h"
#include "os/errno_text.h"
#include "os/file_io.h"
#include "queue/protocol.h"

namespace gw::queue {
namespace {

using json = nlohmann::json;

// Reads the fields of one JSON object. Each accessor checks presence and
// type before it converts, so no nlohmann exception can arise; a bad field
// gives a default value and the reader keeps the first problem, named by its
// field, for error().
class FieldReader {
 public:
  explicit FieldReader(const json& object) : j_(object) {}

  // Records a problem unless one came first.
  void Fail(std::string_view field, std::string_view problem) {
    if (!error_) error_ = MakeError("malformed", std::string(field) + ": " + std::string(problem));
  }
  // A check beyond the field's type: `ok` or the problem is recorded.
  void Require(bool ok, std::string_view field, std::string_view problem) {
    if (!ok) Fail(field, problem);
  }
  const std::optional<Error>& error() const { return error_; }

  template <typename T>
  T Int(const char* key) {
    const json* v = Find(key);
    return v == nullptr ? T{} : IntValue<T>(*v, key);
  }
  // An integer or null.
  template <typename T>
  std::optional<T> IntOrNull(const char* key) {
    const json* v = Find(key);
    if (v == nullptr || v->is_null()) return std::nullopt;
    return IntValue<T>(*v, key);
  }
  std::string Str(const char* key) {
    const json* v = Find(key);
    if (v == nullptr) return {};
    if (!v->is_string()) {
      Fail(key, "not a string");
      return {};
    }
    return v->get<std::string>();
  }
  bool Bool(const char* key) {
    const json* v = Find(key);
    if (v == nullptr) return false;
    if (!v->is_boolean()) {
      Fail(key, "not true or false");
      return false;
    }
    return v->get<bool>();
  }
  double Number(const char* key) {
    const json* v = Find(key);
    if (v == nullptr) return 0;
    if (!v->is_number()) {
      Fail(key, "not a number");
      return 0;
    }
    return v->get<double>();
  }
  // Bytes stored as base64.
  std::string B64(const char* key) {
    const json* v = Find(key);
    if (v == nullptr) return {};
    std::optional<std::string> bytes =
        v->is_string() ? Base64Decode(v->get<std::string>()) : std::nullopt;
    if (!bytes) Fail(key, "not a base64 string");
    return bytes.value_or("");
  }
  std::vector<std::string> B64List(const char* key) {
    const json* v = Find(key);
    if (v == nullptr) return {};
    if (!v->is_array()) {
      Fail(key, "not an array");
      return {};
    }
    std::vector<std::string> out;
    for (const json& item : *v) {
      std::optional<std::string> bytes =
          item.is_string() ? Base64Decode(item.get<std::string>()) : std::nullopt;
      if (!bytes) {
        Fail(key, "holds an item that is not a base64 string");
        return {};
      }
      out.push_back(std::move(*bytes));
    }
    return out;
  }

 private:
  const json* Find(const char* key) {
    const auto it = j_.find(key);
    if (it == j_.end()) {
      Fail(key, "missing");
      return nullptr;
    }
    return &*it;
  }
  template <typename T>
  T IntValue(const json& v, const char* key) {
    if (v.is_number_unsigned()) {
      const uint64_t n = v.get<uint64_t>();
      if (std::in_range<T>(n)) return static_cast<T>(n);
    } else if (v.is_number_integer()) {
      const int64_t n = v.get<int64_t>();
      if (std::in_range<T>(n)) return static_cast<T>(n);
    } else {
      Fail(key, "not an integer");
      return T{};
    }
    Fail(key, "out of range");
    return T{};
  }

  const json& j_;
  std::optional<Error> error_;
};

// The whole text as one JSON object; never throws.
Result<json> ParseObject(std::string_view text) {
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return MakeError("malformed", "not JSON");
  if (!j.is_object()) return MakeError("malformed", "not a JSON object");
  return j;
}

std::string DumpJson(const json& j) {
  // Replace, never throw: every string here is valid UTF-8 by construction,
  // but a dump must not be the place where that assumption fails loudly.
  return j.dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
}

Result<SupervisorSpec> ParseSpec(const json& j) {
  FieldReader f(j);
  const int version = f.Int<int>("version");
  f.Require(version == 1, "version", "unknown version " + std::to_string(version));
  SupervisorSpec s;
  s.job_id = f.Int<JobId>("job_id");
  s.argv = f.B64List("argv_b64");
  s.env = f.B64List("env_b64");
  s.cwd = f.B64("cwd_b64");
  const auto mask = f.Int<int64_t>("umask");
  f.Require(mask >= 0 && mask <= 0777, "umask", "out of range");
  s.umask = static_cast<mode_t>(mask);
  const auto uid = f.Int<int64_t>("uid");
  const auto gid = f.Int<int64_t>("gid");
  f.Require(uid >= 0 && uid < UINT32_MAX, "uid", "out of range");
  f.Require(gid >= 0 && gid < UINT32_MAX, "gid", "out of range");
  s.uid = static_cast<uid_t>(uid);
  s.gid = static_cast<gid_t>(gid);
  s.user = f.B64("user_b64");
  s.stdout_path = f.B64("stdout_b64");
  s.stderr_path = f.B64("stderr_b64");
  s.stdout_by_job = f.Bool("stdout_by_job");
  s.stderr_by_job = f.Bool("stderr_by_job");
  s.time_limit_s = f.IntOrNull<int64_t>("time_limit_s");
  f.Require(!s.time_limit_s || *s.time_limit_s > 0, "time_limit_s", "not positive");
  s.grace_s = f.Number("grace_s");
  f.Require(s.grace_s >= 0 && std::isfinite(s.grace_s), "grace_s", "not a non-negative number");
  f.Require(!s.argv.empty(), "argv_b64", "empty");
  f.Require(!s.cwd.empty() && s.cwd[0] == '/', "cwd_b64", "not absolute");
  f.Require(!s.stdout_path.empty() && s.stdout_path[0] == '/', "stdout_b64", "not absolute");
  f.Require(!s.stderr_path.empty() && s.stderr_path[0] == '/', "stderr_b64", "not absolute");
  if (f.error()) return *f.error();
  auto has_nul = [](const std::vector<std::string>& v) {
    return std::any_of(v.begin(), v.end(), [](const std::string& x) { return HasNul(x); });
  };
  if (has_nul(s.argv) || has_nul(s.env) || HasNul(s.cwd) || HasNul(s.stdout_path) ||
      HasNul(s.stderr_path)) {
    return MakeError("malformed", "a NUL byte in argv, env or a path");
  }
  return s;
}

Result<LaunchRecord> ParseLaunch(const json& j) {
  FieldReader f(j);
  LaunchRecord r;
  const std::string by = f.Str("by");
  f.Require(by == "supervisor" || by == "daemon", "by", "unknown claimant " + ToValidUtf8(by));
  r.by_supervisor = by == "supervisor";
  r.pid = f.Int<pid_t>("pid");
  r.start_ticks = f.Int<uint64_t>("start_ticks");
  if (f.error()) return *f.error();
  return r;
}

Result<PidRecord> ParsePid(const json& j) {
  FieldReader f(j);
  PidRecord r;
  r.pid = f.Int<pid_t>("pid");
  r.start_ticks = f.Int<uint64_t>("start_ticks");
  r.start_unix_ms = f.Int<int64_t>("start_unix_ms");
  f.Require(r.pid > 0, "pid", "not positive");
  if (f.error()) return *f.error();
  return r;
}

Result<ExitRecord> ParseExit(const json& j) {
  FieldReader f(j);
  ExitRecord r;
  r.reason = f.Str("reason");
  f.Require(!r.reason.empty(), "reason", "empty");
  r.exit_code = f.IntOrNull<int>("exit_code");
  r.signal = f.IntOrNull<int>("signal");
  r.core_dumped = f.Bool("core_dumped");
  r.start_unix_ms = f.Int<int64_t>("start_unix_ms");
  r.end_unix_ms = f.Int<int64_t>("end_unix_ms");
  r.detail = f.Str("detail");
  if (f.error()) return *f.error();
  return r;
}

Result<StopRequest> ParseStop(const json& j) {
  FieldReader f(j);
  StopRequest r;
  r.reason = f.Str("reason");
  if (f.error()) return *f.error();
  // Lenient about the grace, as a stop must not be lost over it.
  const auto it = j.find("grace_s");
  if (it != j.end() && it->is_number()) {
    const double grace = it->get<double>();
    if (grace >= 0 && std::isfinite(grace)) r.grace_s = grace;
  }
  return r;
}

// Reads job_dir/name and parses it; see the readers' contract.
template <typename T, typename Parse>
Result<std::optional<T>> ReadRecord(const std::string& job_dir, const char* name, size_t max_bytes,
                                    Parse parse) {
  const std::string path = job_dir + "/" + name;
  Result<std::string> text =
      os::ReadFileBounded(path, max_bytes, os::ReadOptions{.follow_symlinks = false});
  if (!text.ok()) {
    if (text.error().code == "not_found") return std::optional<T>();
    // A record larger than any writer makes is not such a record.
    if (text.error().code == "too_large") {
      return MakeError("malformed", text.error().message);
    }
    return MakeError("io", text.error().message);
  }
  Result<json> j = ParseObject(*text);
  if (!j.ok()) return MakeError("malformed", path + ": malformed: " + j.error().message);
  Result<T> record = parse(*j);
  if (!record.ok()) return MakeError("malformed", path + ": malformed: " + record.error().message);
  return std::optional<T>(std::move(*record));
}

}  // namespace

std::string JobDir(const std::string& state_dir, JobId id, unsigned run) {
  std::string dir = state_dir + "/jobs/" + std::to_string(id);
  if (run > 0) dir += "." + std::to_string(run);
  return dir;
}

Status CheckPrivateDir(const std::string& path) {
  struct stat st {};
  if (lstat(path.c_str(), &st) != 0) return MakeError("io", path + ": " + os::ErrnoText(errno));
  if (!S_ISDIR(st.st_mode)) return MakeError("io", path + ": not a directory");
  if (st.st_uid != geteuid()) {
    return MakeError("io", fmt::format("{}: owned by uid {}, not {}", path, st.st_uid, geteuid()));
  }
  if ((st.st_mode & 022) != 0) {
    return MakeError("io", fmt::format("{}: writable by group or others (mode {:04o})", path,
                                       st.st_mode & 07777));
  }
  return Status::Ok();
}

std::string SupervisorSpecToJson(const SupervisorSpec& s) {
  json j;
  j["version"] = 1;
  j["job_id"] = s.job_id;
  json argv = json::array();
  for (const std::string& a : s.argv) argv.push_back(Base64Encode(a));
  j["argv_b64"] = std::move(argv);
  json env = json::array();
  for (const std::string& e : s.env) env.push_back(Base64Encode(e));
  j["env_b64"] = std::move(env);
  j["cwd_b64"] = Base64Encode(s.cwd);
  j["umask"] = static_cast<unsigned>(s.umask);
  j["uid"] = s.uid;
  j["gid"] = s.gid;
  j["user_b64"] = Base64Encode(s.user);
  j["stdout_b64"] = Base64Encode(s.stdout_path);
  j["stderr_b64"] = Base64Encode(s.stderr_path);
  j["stdout_by_job"] = s.stdout_by_job;
  j["stderr_by_job"] = s.stderr_by_job;
  j["time_limit_s"] = s.time_limit_s ? json(*s.time_limit_s) : json(nullptr);
  j["grace_s"] = s.grace_s;
  return DumpJson(j);
}

Result<SupervisorSpec> SupervisorSpecFromJson(std::string_view text) {
  Result<json> j = ParseObject(text);
  if (!j.ok()) return MakeError("malformed", "spec.json: " + j.error().message);
  Result<SupervisorSpec> spec = ParseSpec(*j);
  if (!spec.ok()) return MakeError("malformed", "spec.json: " + spec.error().message);
  return spec;
}

std::string LaunchRecordToJson(const LaunchRecord& r) {
  json j;
  j["by"] = r.by_supervisor ? "supervisor" : "daemon";
  j["pid"] = r.pid;
  j["start_ticks"] = r.start_ticks;
  return DumpJson(j);
}

std::string PidRecordToJson(const PidRecord& r) {
  json j;
  j["pid"] = r.pid;
  j["start_ticks"] = r.start_ticks;
  j["start_unix_ms"] = r.start_unix_ms;
  return DumpJson(j);
}

std::string ExitRecordToJson(const ExitRecord& r) {
  json j;
  j["reason"] = ToValidUtf8(r.reason);
  j["exit_code"] = r.exit_code ? json(*r.exit_code) : json(nullptr);
  j["signal"] = r.signal ? json(*r.signal) : json(nullptr);
  j["core_dumped"] = r.core_dumped;
  j["start_unix_ms"] = r.start_unix_ms;
  j["end_unix_ms"] = r.end_unix_ms;
  j["detail"] = ToValidUtf8(r.detail);
  return DumpJson(j);
}

std::string StopRequestToJson(const StopRequest& r) {
  json j;
  j["reason"] = ToValidUtf8(r.reason);
  if (r.grace_s) j["grace_s"] = *r.grace_s;
  return DumpJson(j);
}

Result<std::optional<LaunchRecord>> ReadLaunchRecord(const std::string& job_dir) {
  return ReadRecord<LaunchRecord>(job_dir, kRunLaunchedFile, kMaxRunRecordBytes, ParseLaunch);
}

Result<std::optional<PidRecord>> ReadPidRecord(const std::string& job_dir) {
  return ReadRecord<PidRecord>(job_dir, kRunPidFile, kMaxRunRecordBytes, ParsePid);
}

Result<std::optional<ExitRecord>> ReadExitRecord(const std::string& job_dir) {
  return ReadRecord<ExitRecord>(job_dir, kRunExitFile, kMaxRunRecordBytes, ParseExit);
}

Result<std::optional<StopRequest>> ReadStopRequest(const std::string& job_dir) {
  return ReadRecord<StopRequest>(job_dir, kRunStopFile, kMaxRunRecordBytes, ParseStop);
}

Result<std::optional<SupervisorSpec>> ReadSupervisorSpec(const std::string& job_dir) {
  return ReadRecord<SupervisorSpec>(job_dir, kRunSpecFile, kMaxRunSpecBytes, ParseSpec);
}

}  // namespace gw::queue
