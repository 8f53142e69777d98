#include "queue/protocol.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cstdlib>
#include <cstring>

#include "core/text.h"

namespace gw::queue {
namespace {

using nlohmann::json;

constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

bool IsValidUtf8(std::string_view s) { return ToValidUtf8(s) == s; }

Error Bad(std::string_view field, std::string_view what) {
  return MakeError("bad_request", std::string(field) + ": " + std::string(what));
}

template <typename T>
Result<T> Number(const json& j, std::string_view field, int64_t lo, int64_t hi) {
  if (!j.is_number_integer()) return Bad(field, "expected an integer");
  if (j.is_number_unsigned() && j.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX)) {
    return Bad(field, "out of range");
  }
  const int64_t v = j.get<int64_t>();
  if (v < lo || v > hi) return Bad(field, "out of range");
  return static_cast<T>(v);
}

Result<std::vector<std::string>> ByteList(const json& j, std::string_view field, size_t max) {
  if (!j.is_array()) return Bad(field, "expected an array");
  if (j.size() > max) return Bad(field, "too many entries");
  std::vector<std::string> out;
  for (const json& e : j) {
    auto b = BytesFromJson(e, field);
    if (!b.ok()) return b.error();
    if (b->find('\0') != std::string::npos) return Bad(field, "contains a NUL byte");
    out.push_back(std::move(*b));
  }
  return out;
}

}  // namespace

std::string Base64Encode(std::string_view in) {
  std::string out;
  out.reserve((in.size() + 2) / 3 * 4);
  size_t i = 0;
  for (; i + 2 < in.size(); i += 3) {
    const uint32_t n = (static_cast<uint8_t>(in[i]) << 16) |
                       (static_cast<uint8_t>(in[i + 1]) << 8) | static_cast<uint8_t>(in[i + 2]);
    out += kAlphabet[(n >> 18) & 63];
    out += kAlphabet[(n >> 12) & 63];
    out += kAlphabet[(n >> 6) & 63];
    out += kAlphabet[n & 63];
  }
  if (i < in.size()) {
    uint32_t n = static_cast<uint8_t>(in[i]) << 16;
    if (i + 1 < in.size()) n |= static_cast<uint8_t>(in[i + 1]) << 8;
    out += kAlphabet[(n >> 18) & 63];
    out += kAlphabet[(n >> 12) & 63];
    out += i + 1 < in.size() ? kAlphabet[(n >> 6) & 63] : '=';
    out += '=';
  }
  return out;
}

std::optional<std::string> Base64Decode(std::string_view in) {
  if (in.size() % 4 != 0) return std::nullopt;
  auto value = [](char c) -> int {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
  };
  std::string out;
  out.reserve(in.size() / 4 * 3);
  for (size_t i = 0; i < in.size(); i += 4) {
    int v[4];
    int pad = 0;
    for (int k = 0; k < 4; ++k) {
      const char c = in[i + static_cast<size_t>(k)];
      if (c == '=' && i + 4 == in.size() && k >= 2) {
        v[k] = 0;
        ++pad;
        continue;
      }
      if (pad > 0) return std::nullopt;
      v[k] = value(c);
      if (v[k] < 0) return std::nullopt;
    }
    const uint32_t n = (static_cast<uint32_t>(v[0]) << 18) | (static_cast<uint32_t>(v[1]) << 12) |
                       (static_cast<uint32_t>(v[2]) << 6) | static_cast<uint32_t>(v[3]);
    out += static_cast<char>((n >> 16) & 0xFF);
    if (pad < 2) out += static_cast<char>((n >> 8) & 0xFF);
    if (pad < 1) out += static_cast<char>(n & 0xFF);
  }
  return out;
}

json BytesToJson(std::string_view bytes) {
  if (IsValidUtf8(bytes)) return std::string(bytes);
  return json{{"base64", Base64Encode(bytes)}};
}

Result<std::string> BytesFromJson(const json& value, std::string_view field) {
  if (value.is_string()) return value.get<std::string>();
  if (value.is_object() && value.size() == 1 && value.contains("base64") &&
      value["base64"].is_string()) {
    auto decoded = Base64Decode(value["base64"].get<std::string>());
    if (!decoded) return Bad(field, "invalid base64");
    return *decoded;
  }
  return Bad(field, "expected a string or {\"base64\": ...}");
}

json SpecToJson(const JobSpec& s) {
  json argv = json::array();
  for (const auto& a : s.argv) argv.push_back(BytesToJson(a));
  json env = json::array();
  for (const auto& e : s.env) env.push_back(BytesToJson(e));
  json j = {{"name", BytesToJson(s.name)},
            {"argv", std::move(argv)},
            {"cwd", BytesToJson(s.cwd)},
            {"env", std::move(env)},
            {"umask", static_cast<unsigned>(s.umask)},
            {"gpus", s.gpus},
            {"vram_bytes", s.vram_bytes},
            {"priority", s.priority},
            {"after", s.after},
            {"nvlink", s.nvlink},
            {"preemptible", s.preemptible}};
  j["max_util_pct"] = s.max_util_pct ? json(*s.max_util_pct) : json(nullptr);
  j["window"] = s.window ? json(FormatTimeWindow(*s.window)) : json(nullptr);
  j["time_limit_s"] = s.time_limit_s ? json(*s.time_limit_s) : json(nullptr);
  return j;
}

Result<JobSpec> SpecFromJson(const json& j) {
  if (!j.is_object()) return Bad("spec", "expected an object");
  JobSpec s;
  auto get = [&](const char* key) -> const json* {
    auto it = j.find(key);
    return it == j.end() ? nullptr : &*it;
  };
  const json* argv = get("argv");
  if (argv == nullptr) return Bad("argv", "missing");
  auto args = ByteList(*argv, "argv", 65536);
  if (!args.ok()) return args.error();
  if (args->empty() || (*args)[0].empty()) return Bad("argv", "empty command");
  s.argv = std::move(*args);
  if (const json* v = get("env")) {
    auto env = ByteList(*v, "env", 65536);
    if (!env.ok()) return env.error();
    for (const auto& e : *env) {
      if (e.find('=') == std::string::npos || e.front() == '=') return Bad("env", "not KEY=VALUE");
    }
    s.env = std::move(*env);
  }
  if (const json* v = get("name"); v != nullptr && !v->is_null()) {
    auto name = BytesFromJson(*v, "name");
    if (!name.ok()) return name.error();
    if (name->size() > 256) return Bad("name", "longer than 256 bytes");
    s.name = std::move(*name);
  }
  const json* cwd = get("cwd");
  if (cwd == nullptr) return Bad("cwd", "missing");
  auto dir = BytesFromJson(*cwd, "cwd");
  if (!dir.ok()) return dir.error();
  if (dir->empty() || dir->front() != '/') return Bad("cwd", "not an absolute path");
  s.cwd = std::move(*dir);
  if (const json* v = get("umask")) {
    auto m = Number<unsigned>(*v, "umask", 0, 0777);
    if (!m.ok()) return m.error();
    s.umask = static_cast<mode_t>(*m);
  }
  if (const json* v = get("gpus")) {
    auto n = Number<unsigned>(*v, "gpus", 0, 64);
    if (!n.ok()) return n.error();
    s.gpus = *n;
  }
  if (const json* v = get("vram_bytes")) {
    auto n = Number<uint64_t>(*v, "vram_bytes", 0, int64_t{1} << 50);
    if (!n.ok()) return n.error();
    s.vram_bytes = *n;
  }
  if (const json* v = get("max_util_pct"); v != nullptr && !v->is_null()) {
    auto n = Number<unsigned>(*v, "max_util_pct", 0, 100);
    if (!n.ok()) return n.error();
    s.max_util_pct = *n;
  }
  if (const json* v = get("priority")) {
    auto n = Number<int>(*v, "priority", -1000, 1000);
    if (!n.ok()) return n.error();
    s.priority = *n;
  }
  if (const json* v = get("window"); v != nullptr && !v->is_null()) {
    if (!v->is_string()) return Bad("window", "expected a string such as 22:00-07:00");
    auto w = ParseTimeWindow(v->get<std::string>());
    if (!w.ok()) return Bad("window", w.error().message);
    s.window = *w;
  }
  if (const json* v = get("after")) {
    if (!v->is_array() || v->size() > 1000) return Bad("after", "expected an array of job ids");
    for (const json& id : *v) {
      auto n = Number<int64_t>(id, "after", 1, INT64_MAX);
      if (!n.ok()) return n.error();
      s.after.push_back(*n);
    }
  }
  for (const char* flag : {"nvlink", "preemptible"}) {
    if (const json* v = get(flag)) {
      if (!v->is_boolean()) return Bad(flag, "expected true or false");
      (std::string_view(flag) == "nvlink" ? s.nvlink : s.preemptible) = v->get<bool>();
    }
  }
  if (const json* v = get("time_limit_s"); v != nullptr && !v->is_null()) {
    auto n = Number<int64_t>(*v, "time_limit_s", 1, int64_t{366} * 86400);
    if (!n.ok()) return n.error();
    s.time_limit_s = *n;
  }
  if (s.gpus == 0 && s.vram_bytes > 0) return Bad("vram_bytes", "set, but the job asks for no GPU");
  return s;
}

json JobToJson(const Job& job, bool with_private) {
  json argv = json::array();
  for (const auto& a : job.spec.argv) argv.push_back(BytesToJson(a));
  auto opt = [](const auto& v) { return v ? json(*v) : json(nullptr); };
  // How it ended is unknown (null) until it has: a job preempted and put
  // back keeps "preempted" in the store, but it has not ended.
  const bool ended = IsTerminal(job.state);
  json j = {{"id", job.id},
            {"name", BytesToJson(job.spec.name)},
            {"user", job.owner.user},
            {"uid", job.owner.uid},
            {"state", JobStateName(job.state)},
            {"argv", std::move(argv)},
            {"gpus", job.spec.gpus},
            {"vram_bytes", job.spec.vram_bytes},
            {"max_util_pct", opt(job.spec.max_util_pct)},
            {"priority", job.spec.priority},
            {"window", job.spec.window ? json(FormatTimeWindow(*job.spec.window)) : json(nullptr)},
            {"after", job.spec.after},
            {"nvlink", job.spec.nvlink},
            {"time_limit_s", opt(job.spec.time_limit_s)},
            {"preemptible", job.spec.preemptible},
            {"submit_unix_ms", job.submit_unix_ms},
            {"start_unix_ms", opt(job.start_unix_ms)},
            {"end_unix_ms", opt(job.end_unix_ms)},
            {"gpu_indices", job.gpu_indices},
            {"gpu_uuids", job.gpu_uuids},
            {"pid", opt(job.pid)},
            {"exit_code", opt(job.exit_code)},
            {"exit_signal", opt(job.exit_signal)},
            {"end_reason", ended ? json(job.end_reason) : json(nullptr)},
            {"end_detail", ended ? json(ToValidUtf8(job.end_detail)) : json(nullptr)},
            {"peak_vram_bytes", opt(job.peak_vram_bytes)},
            {"requeues", job.requeues}};
  if (with_private) {
    json env = json::array();
    for (const auto& e : job.spec.env) env.push_back(BytesToJson(e));
    j["env"] = std::move(env);
    j["cwd"] = BytesToJson(job.spec.cwd);
    j["umask"] = static_cast<unsigned>(job.spec.umask);
  }
  return j;
}

json OkReply() { return json{{"v", kProtocolVersion}, {"ok", true}}; }

json ErrorReply(std::string_view code, std::string_view message) {
  return json{{"v", kProtocolVersion},
              {"ok", false},
              {"error", {{"code", std::string(code)}, {"message", ToValidUtf8(message)}}}};
}

Result<std::string> ReadLine(int fd, std::string& buffer, size_t max_bytes, int64_t timeout_ms) {
  // Only the bytes read since the last look are searched: a long reply
  // arrives in many chunks.
  size_t searched = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  for (;;) {
    const size_t nl = buffer.find('\n', searched);
    if (nl != std::string::npos) {
      std::string line = buffer.substr(0, nl);
      buffer.erase(0, nl + 1);
      return line;
    }
    searched = buffer.size();
    if (buffer.size() > max_bytes) {
      return MakeError("too_long", "message longer than " + std::to_string(max_bytes) + " bytes");
    }
    if (timeout_ms >= 0) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                            deadline - std::chrono::steady_clock::now())
                            .count();
      pollfd p{fd, POLLIN, 0};
      const int r =
          left > 0 ? poll(&p, 1, static_cast<int>(std::min<int64_t>(left, INT32_MAX))) : 0;
      if (r < 0 && errno == EINTR) continue;
      if (r < 0) return MakeError("io", std::strerror(errno));
      if (r == 0) {
        return MakeError("timeout", "no reply within " + std::to_string(timeout_ms) + " ms");
      }
    }
    char chunk[65536];
    const ssize_t n = read(fd, chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return MakeError("io", std::strerror(errno));
    if (n == 0) return MakeError("closed", "the daemon closed the connection");
    buffer.append(chunk, static_cast<size_t>(n));
  }
}

Status WriteLine(int fd, std::string_view line) {
  std::string data(line);
  data += '\n';
  size_t done = 0;
  while (done < data.size()) {
    const ssize_t n = send(fd, data.data() + done, data.size() - done, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return MakeError("io", std::strerror(errno));
    done += static_cast<size_t>(n);
  }
  return Status::Ok();
}

Result<int> ConnectToDaemon(const std::string& path) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.size() >= sizeof addr.sun_path) {
    return MakeError("no_daemon", "socket path too long: " + SanitizeForTerminal(path));
  }
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return MakeError("io", std::string("socket: ") + std::strerror(errno));
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    const int err = errno;
    close(fd);
    return MakeError("no_daemon",
                     "cannot reach gpuwardend at " + SanitizeForTerminal(path) + ": " +
                         std::strerror(err) +
                         " (start it with `gpuwardend`, or name its socket with --socket or "
                         "GPUWARDEN_SOCKET)");
  }
  return fd;
}

std::string SystemSocketPath() { return "/run/gpuwarden/gpuwardend.sock"; }

std::string PersonalSocketPath() {
  const char* runtime = std::getenv("XDG_RUNTIME_DIR");
  if (runtime != nullptr && runtime[0] == '/') {
    return std::string(runtime) + "/gpuwarden/gpuwardend.sock";
  }
  return "/tmp/gpuwarden-" + std::to_string(getuid()) + "/gpuwardend.sock";
}

std::string ResolveSocketPath(const std::string& flag) {
  if (!flag.empty()) return flag;
  const char* env = std::getenv("GPUWARDEN_SOCKET");
  if (env != nullptr && *env != '\0') return env;
  struct stat st;
  if (stat(SystemSocketPath().c_str(), &st) == 0 && S_ISSOCK(st.st_mode)) return SystemSocketPath();
  return PersonalSocketPath();
}

}  // namespace gw::queue
