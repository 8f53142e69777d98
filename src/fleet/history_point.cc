#include "fleet/history_point.h"

#include <algorithm>
#include <bit>
#include <charconv>
#include <cmath>
#include <cstring>
#include <map>

#include <fmt/format.h>

#include "core/text.h"

namespace gw::fleet {
namespace {

using nlohmann::json;

template <typename T>
double Known(const std::optional<T>& v) {
  return v ? static_cast<double>(*v) : kUnknown;
}

json Num(double v) { return std::isnan(v) ? json(nullptr) : json(v); }

// A mean that skips unknown values.
struct Mean {
  double sum = 0;
  int n = 0;
  void Add(double v) {
    if (!std::isnan(v)) {
      sum += v;
      ++n;
    }
  }
  double Get() const { return n == 0 ? kUnknown : sum / n; }
};

Result<double> NumberOrUnknown(const json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return kUnknown;
  if (!it->is_number()) return MakeError("malformed", fmt::format("history point: {}", key));
  return it->get<double>();
}

// JSON text, written directly.
void AppendNumber(std::string& out, double v) {
  if (!std::isfinite(v)) {  // As nlohmann::json dumps them: unknown is null.
    out += "null";
    return;
  }
  char buf[32];
  char* end = std::to_chars(buf, buf + sizeof buf, v).ptr;
  out.append(buf, end);
  // A whole number stays a floating-point number, as nlohmann::json writes it.
  if (std::find_if(buf, end, [](char c) { return c == '.' || c == 'e'; }) == end) out += ".0";
}

void AppendInteger(std::string& out, int64_t v) {
  char buf[24];
  out.append(buf, std::to_chars(buf, buf + sizeof buf, v).ptr);
}

// `text` (valid UTF-8) as a JSON string.
void AppendString(std::string& out, std::string_view text) {
  out += '"';
  for (const char ch : text) {
    const auto c = static_cast<unsigned char>(ch);
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\b':
        out += "\\b";
        break;
      case '\f':
        out += "\\f";
        break;
      default:
        if (c < 0x20) {
          out += fmt::format("\\u{:04x}", c);
        } else {
          out += ch;
        }
    }
  }
  out += '"';
}

void AppendKey(std::string& out, const char* key) {
  out += '"';
  out += key;
  out += "\":";
}

// The compact form: little-endian whatever the host.
constexpr uint8_t kBinaryVersion = 1;
constexpr size_t kMaxCount = 65535;

void PutBytes(std::string& out, uint64_t v, int n) {
  for (int i = 0; i < n; ++i) out += static_cast<char>((v >> (8 * i)) & 0xff);
}
void PutF64(std::string& out, double v) { PutBytes(out, std::bit_cast<uint64_t>(v), 8); }

struct BinaryReader {
  std::string_view in;
  bool short_read = false;
  uint64_t Get(size_t n) {
    if (in.size() < n) {
      short_read = true;
      in = {};
      return 0;
    }
    uint64_t v = 0;
    for (size_t i = 0; i < n; ++i) v |= uint64_t{static_cast<unsigned char>(in[i])} << (8 * i);
    in.remove_prefix(n);
    return v;
  }
  double F64() { return std::bit_cast<double>(Get(8)); }
  std::string_view Bytes(size_t n) {
    if (in.size() < n) {
      short_read = true;
      in = {};
      return {};
    }
    std::string_view v = in.substr(0, n);
    in.remove_prefix(n);
    return v;
  }
};

}  // namespace

HistoryPoint PointOf(const Snapshot& s, const diagnose::Diagnosis& d,
                     const std::optional<QueueStats>& queue) {
  HistoryPoint p;
  p.time_s = s.time_unix_ms / 1000;
  p.step_s = 1;
  std::map<unsigned, int> state;
  for (const diagnose::GpuVerdict& g : d.gpus) state[g.index] = static_cast<int>(g.state);
  for (const Gpu& g : s.gpus) {
    GpuPoint gp;
    gp.index = g.index;
    gp.util_pct = Known(g.utilization_gpu_pct);
    gp.mem_used_bytes = Known(g.memory.used_bytes);
    gp.mem_total_bytes = Known(g.memory.total_bytes);
    gp.power_w = Known(g.power_draw_w);
    gp.temp_c = Known(g.temperature_c);
    if (auto it = state.find(g.index); it != state.end()) gp.state = it->second;
    p.gpus.push_back(gp);
  }
  for (const diagnose::UserHolding& u : d.users) {
    p.users.push_back({ToValidUtf8(u.user), static_cast<double>(u.gpus.size()),
                       static_cast<double>(u.idle_gpus.size()), static_cast<double>(u.vram_bytes),
                       static_cast<double>(u.idle_vram_bytes)});
  }
  std::sort(p.users.begin(), p.users.end(),
            [](const UserPoint& a, const UserPoint& b) { return a.user < b.user; });
  if (queue) {
    p.queued = queue->queued + queue->held;
    p.running = queue->running + queue->starting;
  }
  return p;
}

HistoryPoint Downsample(std::span<const HistoryPoint> points, int64_t time_s, int step_s) {
  HistoryPoint out;
  out.time_s = time_s;
  out.step_s = step_s;
  struct GpuMeans {
    Mean util, used, total, power, temp;
    std::optional<int> worst;
  };
  std::map<unsigned, GpuMeans> gpus;
  std::map<std::string, UserPoint> users;
  Mean queued, running;
  for (const HistoryPoint& p : points) {
    for (const GpuPoint& g : p.gpus) {
      GpuMeans& m = gpus[g.index];
      m.util.Add(g.util_pct);
      m.used.Add(g.mem_used_bytes);
      m.total.Add(g.mem_total_bytes);
      m.power.Add(g.power_w);
      m.temp.Add(g.temp_c);
      if (g.state) m.worst = std::max(m.worst.value_or(*g.state), *g.state);
    }
    for (const UserPoint& u : p.users) {
      UserPoint& t = users[u.user];
      t.user = u.user;
      t.gpus += u.gpus * p.step_s;
      t.idle_gpus += u.idle_gpus * p.step_s;
      t.vram_bytes += u.vram_bytes * p.step_s;
      t.idle_vram_bytes += u.idle_vram_bytes * p.step_s;
    }
    queued.Add(p.queued);
    running.Add(p.running);
  }
  for (const auto& [index, m] : gpus) {
    out.gpus.push_back(
        {index, m.util.Get(), m.used.Get(), m.total.Get(), m.power.Get(), m.temp.Get(), m.worst});
  }
  // Over the whole step: a user absent from a point held nothing then, and
  // seconds without a point (the daemon not running) count as nothing held,
  // so that a sum over time stays the sum of what was seen.
  for (auto& [name, u] : users) {
    u.gpus /= step_s;
    u.idle_gpus /= step_s;
    u.vram_bytes /= step_s;
    u.idle_vram_bytes /= step_s;
    out.users.push_back(u);
  }
  out.queued = queued.Get();
  out.running = running.Get();
  return out;
}

json PointToJson(const HistoryPoint& p) {
  json gpus = json::array();
  for (const GpuPoint& g : p.gpus) {
    gpus.push_back({{"index", g.index},
                    {"util_pct", Num(g.util_pct)},
                    {"mem_used_bytes", Num(g.mem_used_bytes)},
                    {"mem_total_bytes", Num(g.mem_total_bytes)},
                    {"power_w", Num(g.power_w)},
                    {"temp_c", Num(g.temp_c)},
                    {"state", g.state ? json(std::string(diagnose::GpuStateName(
                                            static_cast<diagnose::GpuState>(*g.state))))
                                      : json(nullptr)}});
  }
  json users = json::array();
  for (const UserPoint& u : p.users) {
    users.push_back({{"user", u.user},
                     {"gpus", u.gpus},
                     {"idle_gpus", u.idle_gpus},
                     {"vram_bytes", u.vram_bytes},
                     {"idle_vram_bytes", u.idle_vram_bytes}});
  }
  return {{"time_unix_s", p.time_s}, {"step_s", p.step_s},      {"gpus", gpus},
          {"users", users},          {"queued", Num(p.queued)}, {"running", Num(p.running)}};
}

Result<HistoryPoint> PointFromJson(const json& j) {
  auto bad = [](const std::string& what) {
    return MakeError("malformed", "history point: " + what);
  };
  if (!j.is_object()) return bad("not an object");
  HistoryPoint p;
  if (!j.contains("time_unix_s") || !j["time_unix_s"].is_number_integer())
    return bad("time_unix_s");
  p.time_s = j["time_unix_s"].get<int64_t>();
  if (!j.contains("step_s") || !j["step_s"].is_number_integer()) return bad("step_s");
  p.step_s = j["step_s"].get<int>();
  if (p.step_s <= 0) return bad("step_s");
  for (const json& g : j.value("gpus", json::array())) {
    if (!g.is_object() || !g.contains("index") || !g["index"].is_number_unsigned())
      return bad("gpus[].index");
    GpuPoint gp;
    gp.index = g["index"].get<unsigned>();
    for (auto [key, field] : {std::pair{"util_pct", &gp.util_pct},
                              {"mem_used_bytes", &gp.mem_used_bytes},
                              {"mem_total_bytes", &gp.mem_total_bytes},
                              {"power_w", &gp.power_w},
                              {"temp_c", &gp.temp_c}}) {
      Result<double> v = NumberOrUnknown(g, key);
      if (!v.ok()) return v.error();
      *field = *v;
    }
    if (g.contains("state") && g["state"].is_string()) {
      for (int st = 0; st <= static_cast<int>(diagnose::GpuState::kUnknown); ++st) {
        if (diagnose::GpuStateName(static_cast<diagnose::GpuState>(st)) ==
            g["state"].get<std::string>())
          gp.state = st;
      }
      if (!gp.state) return bad("gpus[].state");
    }
    p.gpus.push_back(gp);
  }
  for (const json& u : j.value("users", json::array())) {
    if (!u.is_object() || !u.contains("user") || !u["user"].is_string()) return bad("users[].user");
    UserPoint up;
    up.user = u["user"].get<std::string>();
    for (auto [key, field] : {std::pair{"gpus", &up.gpus},
                              {"idle_gpus", &up.idle_gpus},
                              {"vram_bytes", &up.vram_bytes},
                              {"idle_vram_bytes", &up.idle_vram_bytes}}) {
      Result<double> v = NumberOrUnknown(u, key);
      if (!v.ok()) return v.error();
      *field = std::isnan(*v) ? 0 : *v;
    }
    p.users.push_back(up);
  }
  for (auto [key, field] : {std::pair{"queued", &p.queued}, {"running", &p.running}}) {
    Result<double> v = NumberOrUnknown(j, key);
    if (!v.ok()) return v.error();
    *field = *v;
  }
  return p;
}

void AppendPointJson(std::string& out, const HistoryPoint& p) {
  // Keys in nlohmann::json's order (sorted), as PointToJson(p).dump() has them.
  out += "{\"gpus\":[";
  for (size_t i = 0; i < p.gpus.size(); ++i) {
    const GpuPoint& g = p.gpus[i];
    if (i > 0) out += ',';
    out += "{\"index\":";
    AppendInteger(out, g.index);
    out += ',';
    AppendKey(out, "mem_total_bytes");
    AppendNumber(out, g.mem_total_bytes);
    out += ',';
    AppendKey(out, "mem_used_bytes");
    AppendNumber(out, g.mem_used_bytes);
    out += ',';
    AppendKey(out, "power_w");
    AppendNumber(out, g.power_w);
    out += ',';
    AppendKey(out, "state");
    if (g.state) {
      AppendString(out, diagnose::GpuStateName(static_cast<diagnose::GpuState>(*g.state)));
    } else {
      out += "null";
    }
    out += ',';
    AppendKey(out, "temp_c");
    AppendNumber(out, g.temp_c);
    out += ',';
    AppendKey(out, "util_pct");
    AppendNumber(out, g.util_pct);
    out += '}';
  }
  out += "],";
  AppendKey(out, "queued");
  AppendNumber(out, p.queued);
  out += ',';
  AppendKey(out, "running");
  AppendNumber(out, p.running);
  out += ',';
  AppendKey(out, "step_s");
  AppendInteger(out, p.step_s);
  out += ',';
  AppendKey(out, "time_unix_s");
  AppendInteger(out, p.time_s);
  out += ",\"users\":[";
  for (size_t i = 0; i < p.users.size(); ++i) {
    const UserPoint& u = p.users[i];
    if (i > 0) out += ',';
    out += "{\"gpus\":";
    AppendNumber(out, u.gpus);
    out += ',';
    AppendKey(out, "idle_gpus");
    AppendNumber(out, u.idle_gpus);
    out += ',';
    AppendKey(out, "idle_vram_bytes");
    AppendNumber(out, u.idle_vram_bytes);
    out += ',';
    AppendKey(out, "user");
    if (std::all_of(u.user.begin(), u.user.end(),
                    [](char c) { return static_cast<unsigned char>(c) < 0x80; })) {
      AppendString(out, u.user);
    } else {
      AppendString(out, ToValidUtf8(u.user));
    }
    out += ',';
    AppendKey(out, "vram_bytes");
    AppendNumber(out, u.vram_bytes);
    out += '}';
  }
  out += "]}";
}

void AppendPointBinary(std::string& out, const HistoryPoint& p) {
  out += static_cast<char>(kBinaryVersion);
  PutBytes(out, static_cast<uint64_t>(p.time_s), 8);
  PutBytes(out, static_cast<uint32_t>(p.step_s), 4);
  PutF64(out, p.queued);
  PutF64(out, p.running);
  const size_t gpus = std::min(p.gpus.size(), kMaxCount);
  PutBytes(out, gpus, 2);
  for (size_t i = 0; i < gpus; ++i) {
    const GpuPoint& g = p.gpus[i];
    PutBytes(out, g.index, 4);
    for (double v : {g.util_pct, g.mem_used_bytes, g.mem_total_bytes, g.power_w, g.temp_c}) {
      PutF64(out, v);
    }
    out += static_cast<char>(g.state ? static_cast<int8_t>(*g.state) : int8_t{-1});
  }
  const size_t users = std::min(p.users.size(), kMaxCount);
  PutBytes(out, users, 2);
  for (size_t i = 0; i < users; ++i) {
    const UserPoint& u = p.users[i];
    const size_t n = std::min(u.user.size(), kMaxCount);
    PutBytes(out, n, 2);
    out.append(u.user, 0, n);
    for (double v : {u.gpus, u.idle_gpus, u.vram_bytes, u.idle_vram_bytes}) PutF64(out, v);
  }
}

Result<HistoryPoint> PointFromBinary(std::string_view bytes) {
  auto bad = [](const std::string& what) {
    return MakeError("malformed", "history point: " + what);
  };
  BinaryReader r{bytes};
  if (r.Get(1) != kBinaryVersion) return bad("not a point of a known form");
  HistoryPoint p;
  p.time_s = static_cast<int64_t>(r.Get(8));
  p.step_s = static_cast<int32_t>(static_cast<uint32_t>(r.Get(4)));
  p.queued = r.F64();
  p.running = r.F64();
  const size_t gpus = r.Get(2);
  if (gpus * 45 > r.in.size()) return bad("gpus");
  p.gpus.resize(gpus);
  for (GpuPoint& g : p.gpus) {
    g.index = static_cast<unsigned>(r.Get(4));
    for (double* v : {&g.util_pct, &g.mem_used_bytes, &g.mem_total_bytes, &g.power_w, &g.temp_c}) {
      *v = r.F64();
    }
    const auto state = static_cast<int8_t>(r.Get(1));
    if (state > static_cast<int>(diagnose::GpuState::kUnknown) || state < -1) {
      return bad("gpus[].state");
    }
    if (state >= 0) g.state = state;
  }
  const size_t users = r.Get(2);
  if (users * 34 > r.in.size()) return bad("users");
  p.users.resize(users);
  for (UserPoint& u : p.users) {
    u.user = std::string(r.Bytes(r.Get(2)));
    for (double* v : {&u.gpus, &u.idle_gpus, &u.vram_bytes, &u.idle_vram_bytes}) *v = r.F64();
  }
  if (r.short_read) return bad("cut short");
  if (!r.in.empty()) return bad("bytes after its end");
  if (p.step_s <= 0) return bad("step_s");
  return p;
}

}  // namespace gw::fleet
