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

// Field readers: each checks presence and type before it converts, so that no
// nlohmann exception can arise; the error names the field.
Error Malformed(std::string_view field, std::string_view problem) {
  return MakeError("malformed", std::string(field) + ": " + std::string(problem));
}

Result<const json*> Field(const json& j, const char* key) {
  const auto it = j.find(key);
  if (it == j.end()) return Malformed(key, "missing");
  return &*it;
}

template <typename T>
Result<T> IntValue(const json& v, const char* key) {
  if (v.is_number_unsigned()) {
    const uint64_t n = v.get<uint64_t>();
    if (!std::in_range<T>(n)) return Malformed(key, "out of range");
    return static_cast<T>(n);
  }
  if (v.is_number_integer()) {
    const int64_t n = v.get<int64_t>();
    if (!std::in_range<T>(n)) return Malformed(key, "out of range");
    return static_cast<T>(n);
  }
  return Malformed(key, "not an integer");
}

template <typename T>
Result<T> Int(const json& j, const char* key) {
  Result<const json*> v = Field(j, key);
  if (!v.ok()) return v.error();
  return IntValue<T>(**v, key);
}

// An integer or null.
template <typename T>
Result<std::optional<T>> IntOrNull(const json& j, const char* key) {
  Result<const json*> v = Field(j, key);
  if (!v.ok()) return v.error();
  if ((*v)->is_null()) return std::optional<T>();
  Result<T> n = IntValue<T>(**v, key);
  if (!n.ok()) return n.error();
  return std::optional<T>(*n);
}

Result<std::string> Str(const json& j, const char* key) {
  Result<const json*> v = Field(j, key);
  if (!v.ok()) return v.error();
  if (!(*v)->is_string()) return Malformed(key, "not a string");
  return (*v)->get<std::string>();
}

Result<bool> Bool(const json& j, const char* key) {
  Result<const json*> v = Field(j, key);
  if (!v.ok()) return v.error();
  if (!(*v)->is_boolean()) return Malformed(key, "not true or false");
  return (*v)->get<bool>();
}

Result<double> Number(const json& j, const char* key) {
  Result<const json*> v = Field(j, key);
  if (!v.ok()) return v.error();
  if (!(*v)->is_number()) return Malformed(key, "not a number");
  return (*v)->get<double>();
}

Result<std::string> B64(const json& j, const char* key) {
  Result<std::string> text = Str(j, key);
  if (!text.ok()) return text.error();
  std::optional<std::string> bytes = Base64Decode(*text);
  if (!bytes) return Malformed(key, "not base64");
  return std::move(*bytes);
}

Result<std::vector<std::string>> B64List(const json& j, const char* key) {
  Result<const json*> v = Field(j, key);
  if (!v.ok()) return v.error();
  if (!(*v)->is_array()) return Malformed(key, "not an array");
  std::vector<std::string> out;
  for (const json& item : **v) {
    std::optional<std::string> bytes =
        item.is_string() ? Base64Decode(item.get<std::string>()) : std::nullopt;
    if (!bytes) return Malformed(key, "holds an item that is not a base64 string");
    out.push_back(std::move(*bytes));
  }
  return out;
}

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

bool HasNul(std::string_view s) { return s.find('\0') != std::string_view::npos; }

// Assigns *out from a Result, or returns its error from the enclosing
// function: the parsers below read a dozen fields each.
#define GW_FIELD(out, expr)                                \
  do {                                                     \
    auto field_result_ = (expr);                           \
    if (!field_result_.ok()) return field_result_.error(); \
    (out) = std::move(*field_result_);                     \
  } while (false)

Result<SupervisorSpec> ParseSpec(const json& j) {
  int version = 0;
  GW_FIELD(version, Int<int>(j, "version"));
  if (version != 1) return Malformed("version", "unknown version " + std::to_string(version));
  SupervisorSpec s;
  GW_FIELD(s.job_id, Int<JobId>(j, "job_id"));
  GW_FIELD(s.argv, B64List(j, "argv_b64"));
  GW_FIELD(s.env, B64List(j, "env_b64"));
  GW_FIELD(s.cwd, B64(j, "cwd_b64"));
  int64_t mask = 0;
  GW_FIELD(mask, Int<int64_t>(j, "umask"));
  if (mask < 0 || mask > 0777) return Malformed("umask", "out of range");
  s.umask = static_cast<mode_t>(mask);
  int64_t uid = 0;
  int64_t gid = 0;
  GW_FIELD(uid, Int<int64_t>(j, "uid"));
  GW_FIELD(gid, Int<int64_t>(j, "gid"));
  if (uid < 0 || uid >= UINT32_MAX) return Malformed("uid", "out of range");
  if (gid < 0 || gid >= UINT32_MAX) return Malformed("gid", "out of range");
  s.uid = static_cast<uid_t>(uid);
  s.gid = static_cast<gid_t>(gid);
  GW_FIELD(s.user, B64(j, "user_b64"));
  GW_FIELD(s.stdout_path, B64(j, "stdout_b64"));
  GW_FIELD(s.stderr_path, B64(j, "stderr_b64"));
  GW_FIELD(s.stdout_by_job, Bool(j, "stdout_by_job"));
  GW_FIELD(s.stderr_by_job, Bool(j, "stderr_by_job"));
  GW_FIELD(s.time_limit_s, IntOrNull<int64_t>(j, "time_limit_s"));
  if (s.time_limit_s && *s.time_limit_s <= 0) return Malformed("time_limit_s", "not positive");
  GW_FIELD(s.grace_s, Number(j, "grace_s"));
  if (!(s.grace_s >= 0) || !std::isfinite(s.grace_s)) {
    return Malformed("grace_s", "not a non-negative number");
  }
  if (s.argv.empty()) return Malformed("argv_b64", "empty");
  if (s.cwd.empty() || s.cwd[0] != '/') return Malformed("cwd_b64", "not absolute");
  if (s.stdout_path.empty() || s.stdout_path[0] != '/') {
    return Malformed("stdout_b64", "not absolute");
  }
  if (s.stderr_path.empty() || s.stderr_path[0] != '/') {
    return Malformed("stderr_b64", "not absolute");
  }
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
  LaunchRecord r;
  std::string by;
  GW_FIELD(by, Str(j, "by"));
  if (by != "supervisor" && by != "daemon") {
    return Malformed("by", "unknown claimant " + ToValidUtf8(by));
  }
  r.by_supervisor = by == "supervisor";
  GW_FIELD(r.pid, Int<pid_t>(j, "pid"));
  GW_FIELD(r.start_ticks, Int<uint64_t>(j, "start_ticks"));
  return r;
}

Result<PidRecord> ParsePid(const json& j) {
  PidRecord r;
  GW_FIELD(r.pid, Int<pid_t>(j, "pid"));
  GW_FIELD(r.start_ticks, Int<uint64_t>(j, "start_ticks"));
  GW_FIELD(r.start_unix_ms, Int<int64_t>(j, "start_unix_ms"));
  if (r.pid <= 0) return Malformed("pid", "not positive");
  return r;
}

Result<ExitRecord> ParseExit(const json& j) {
  ExitRecord r;
  GW_FIELD(r.reason, Str(j, "reason"));
  if (r.reason.empty()) return Malformed("reason", "empty");
  GW_FIELD(r.exit_code, IntOrNull<int>(j, "exit_code"));
  GW_FIELD(r.signal, IntOrNull<int>(j, "signal"));
  GW_FIELD(r.core_dumped, Bool(j, "core_dumped"));
  GW_FIELD(r.start_unix_ms, Int<int64_t>(j, "start_unix_ms"));
  GW_FIELD(r.end_unix_ms, Int<int64_t>(j, "end_unix_ms"));
  GW_FIELD(r.detail, Str(j, "detail"));
  return r;
}

Result<StopRequest> ParseStop(const json& j) {
  StopRequest r;
  GW_FIELD(r.reason, Str(j, "reason"));
  // Lenient about the grace, as a stop must not be lost over it.
  const auto it = j.find("grace_s");
  if (it != j.end() && it->is_number()) {
    const double grace = it->get<double>();
    if (grace >= 0 && std::isfinite(grace)) r.grace_s = grace;
  }
  return r;
}

#undef GW_FIELD

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
