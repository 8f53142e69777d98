#include "sim/scenario.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string_view>

namespace gw::sim {
namespace {

using json = nlohmann::json;

// Validation failures travel as this exception inside the module and become a
// gw::Error at ParseScenario's boundary.
struct Invalid : std::runtime_error {
  using std::runtime_error::runtime_error;
};

[[noreturn]] void Fail(const std::string& path, const std::string& problem) {
  throw Invalid(path.empty() ? problem : path + ": " + problem);
}

// A short rendering of a JSON value for messages: one line of ASCII (control
// characters and all but ASCII escaped, so a cut never splits a character).
std::string Show(const json& v) {
  std::string s = v.dump(-1, ' ', /*ensure_ascii=*/true);
  if (s.size() > 40) s = s.substr(0, 37) + "...";
  return s;
}

// A text from the file, quoted for a message as Show quotes a string.
std::string ShowText(const std::string& text) { return Show(json(text)); }

// A key with control characters (it came from the file: an unknown key) is
// shown as a JSON string, so that the message stays one line whatever it holds.
std::string Join(const std::string& path, const std::string& key) {
  const bool plain = std::none_of(key.begin(), key.end(), [](char c) {
    return static_cast<unsigned char>(c) < 0x20 || c == 0x7f;
  });
  const std::string shown = plain ? key : json(key).dump();
  return path.empty() ? shown : path + "." + shown;
}

std::string Index(const std::string& path, size_t i) {
  return path + "[" + std::to_string(i) + "]";
}

// The value at `key`, or nullptr when absent or null.
const json* Child(const json& obj, const char* key) {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return nullptr;
  return &*it;
}

void RequireObject(const json& v, const std::string& path) {
  if (!v.is_object()) Fail(path, "expected an object, got " + Show(v));
}

void CheckKeys(const json& obj, const std::string& path, std::initializer_list<const char*> keys) {
  for (auto it = obj.begin(); it != obj.end(); ++it) {
    bool known = false;
    for (const char* k : keys) {
      if (it.key() == k) {
        known = true;
        break;
      }
    }
    if (!known) Fail(Join(path, it.key()), "unknown key");
  }
}

Opt<uint64_t> GetUint(const json& obj, const char* key, const std::string& path,
                      uint64_t max = std::numeric_limits<uint32_t>::max()) {
  const json* v = Child(obj, key);
  if (v == nullptr) return std::nullopt;
  if (v->is_number_unsigned() || (v->is_number_integer() && v->get<int64_t>() >= 0)) {
    uint64_t x = v->get<uint64_t>();
    if (x > max) Fail(Join(path, key), "must be at most " + std::to_string(max));
    return x;
  }
  Fail(Join(path, key), "expected a non-negative integer, got " + Show(*v));
}

Opt<unsigned> GetU32(const json& obj, const char* key, const std::string& path,
                     uint64_t max = std::numeric_limits<uint32_t>::max()) {
  auto v = GetUint(obj, key, path, max);
  if (!v) return std::nullopt;
  return static_cast<unsigned>(*v);
}

Opt<double> GetNumber(const json& obj, const char* key, const std::string& path, double min,
                      double max) {
  const json* v = Child(obj, key);
  if (v == nullptr) return std::nullopt;
  if (!v->is_number()) Fail(Join(path, key), "expected a number, got " + Show(*v));
  double x = v->get<double>();
  if (!std::isfinite(x) || x < min || x > max) {
    std::ostringstream os;
    os << "must be between " << min << " and " << max;
    Fail(Join(path, key), os.str());
  }
  return x;
}

Opt<bool> GetBool(const json& obj, const char* key, const std::string& path) {
  const json* v = Child(obj, key);
  if (v == nullptr) return std::nullopt;
  if (!v->is_boolean()) Fail(Join(path, key), "expected true or false, got " + Show(*v));
  return v->get<bool>();
}

Opt<std::string> GetString(const json& obj, const char* key, const std::string& path,
                           size_t max_len = 4096) {
  const json* v = Child(obj, key);
  if (v == nullptr) return std::nullopt;
  if (!v->is_string()) Fail(Join(path, key), "expected a string, got " + Show(*v));
  std::string s = v->get<std::string>();
  if (s.size() > max_len) {
    Fail(Join(path, key), "longer than " + std::to_string(max_len) + " bytes (the NVML buffer)");
  }
  if (s.find('\0') != std::string::npos) Fail(Join(path, key), "contains a NUL byte");
  return s;
}

// `obj[key]` as an object to descend into, or nullptr when absent/null.
const json* GetObject(const json& obj, const char* key, const std::string& path) {
  const json* v = Child(obj, key);
  if (v == nullptr) return nullptr;
  RequireObject(*v, Join(path, key));
  return v;
}

Opt<uint64_t> ParseHex(const std::string& s) {
  if (s.size() < 3 || s.size() > 18 || s[0] != '0' || (s[1] != 'x' && s[1] != 'X')) {
    return std::nullopt;
  }
  uint64_t x = 0;
  for (size_t i = 2; i < s.size(); ++i) {
    char c = s[i];
    int d;
    if (c >= '0' && c <= '9') {
      d = c - '0';
    } else if (c >= 'a' && c <= 'f') {
      d = c - 'a' + 10;
    } else if (c >= 'A' && c <= 'F') {
      d = c - 'A' + 10;
    } else {
      return std::nullopt;
    }
    x = (x << 4) | static_cast<uint64_t>(d);
  }
  return x;
}

Opt<uint32_t> GetHex32(const json& obj, const char* key, const std::string& path) {
  auto s = GetString(obj, key, path);
  if (!s) return std::nullopt;
  auto x = ParseHex(*s);
  if (!x || *x > 0xFFFFFFFFull) {
    Fail(Join(path, key), "expected a 32-bit hex string like \"0x233010DE\", got " + ShowText(*s));
  }
  return static_cast<uint32_t>(*x);
}

struct NamedBit {
  const char* name;
  uint64_t bit;
};

constexpr NamedBit kClockReasons[] = {
    {"gpu_idle", 0x1},
    {"applications_clocks_setting", 0x2},
    {"sw_power_cap", 0x4},
    {"hw_slowdown", 0x8},
    {"sync_boost", 0x10},
    {"sw_thermal_slowdown", 0x20},
    {"hw_thermal_slowdown", 0x40},
    {"hw_power_brake_slowdown", 0x80},
    {"display_clock_setting", 0x100},
};

constexpr NamedBit kEventTypes[] = {
    {"single_bit_ecc", 0x1},
    {"double_bit_ecc", 0x2},
    {"pstate", 0x4},
    {"xid", 0x8},
    {"clock", 0x10},
    {"power_source_change", 0x80},
    {"mig_config_change", 0x100},
};

template <size_t N>
std::string NameList(const NamedBit (&names)[N]) {
  std::string out;
  for (const auto& n : names) {
    if (!out.empty()) out += ", ";
    out += n.name;
  }
  return out;
}

// A bit mask given as a list of names or a hex string.
template <size_t N>
Opt<uint64_t> GetMask(const json& obj, const char* key, const std::string& path,
                      const NamedBit (&names)[N]) {
  const json* v = Child(obj, key);
  if (v == nullptr) return std::nullopt;
  std::string p = Join(path, key);
  if (v->is_string()) {
    auto x = ParseHex(v->get<std::string>());
    if (!x) Fail(p, "expected a list of names or a hex string like \"0x1\", got " + Show(*v));
    return x;
  }
  if (!v->is_array()) Fail(p, "expected a list of names or a hex string, got " + Show(*v));
  uint64_t mask = 0;
  for (size_t i = 0; i < v->size(); ++i) {
    const json& e = (*v)[i];
    bool found = false;
    if (e.is_string()) {
      for (const auto& n : names) {
        if (e.get<std::string>() == n.name) {
          mask |= n.bit;
          found = true;
        }
      }
    }
    if (!found) Fail(Index(p, i), "unknown name " + Show(e) + " (one of " + NameList(names) + ")");
  }
  return mask;
}

// One of several words.
template <typename T>
T GetEnum(const json& v, const std::string& path,
          std::initializer_list<std::pair<const char*, T>> words) {
  std::string all;
  if (v.is_string()) {
    for (const auto& [word, value] : words) {
      if (v.get<std::string>() == word) return value;
    }
  }
  for (const auto& w : words) {
    if (!all.empty()) all += ", ";
    all += w.first;
  }
  Fail(path, "unknown value " + Show(v) + " (one of " + all + ")");
}

}  // namespace

Opt<PciAddress> ParsePciBusId(const std::string& text) {
  // [domain:]bus:device.function, domain 4 or 8 hex digits.
  auto colon1 = text.find(':');
  auto colon2 = text.find(':', colon1 == std::string::npos ? 0 : colon1 + 1);
  auto dot = text.find('.');
  if (colon1 == std::string::npos || colon2 == std::string::npos || dot == std::string::npos ||
      dot < colon2) {
    return std::nullopt;
  }
  std::string dom = text.substr(0, colon1);
  std::string bus = text.substr(colon1 + 1, colon2 - colon1 - 1);
  std::string dev = text.substr(colon2 + 1, dot - colon2 - 1);
  std::string fn = text.substr(dot + 1);
  if ((dom.size() != 4 && dom.size() != 8) || bus.size() != 2 || dev.size() != 2 ||
      fn.size() != 1) {
    return std::nullopt;
  }
  auto d = ParseHex("0x" + dom);
  auto b = ParseHex("0x" + bus);
  auto v = ParseHex("0x" + dev);
  auto f = ParseHex("0x" + fn);
  if (!d || !b || !v || !f || *v > 0x1F || *f > 7) return std::nullopt;
  PciAddress a;
  a.domain = static_cast<uint32_t>(*d);
  a.bus = static_cast<uint32_t>(*b);
  a.device = static_cast<uint32_t>(*v);
  a.function = static_cast<uint32_t>(*f);
  char buf[40];
  snprintf(buf, sizeof buf, "%08X:%02X:%02X.%X", a.domain, a.bus, a.device, a.function);
  a.bus_id = buf;
  snprintf(buf, sizeof buf, "%04X:%02X:%02X.%X", a.domain & 0xFFFF, a.bus, a.device, a.function);
  a.bus_id_legacy = buf;
  return a;
}

uint64_t SynthesisedPageAddress(int cause, uint64_t i) {
  return (cause == 0 ? 0x1000000ull : 0x2000000ull) + i * 0x1000ull;
}

Opt<std::string> RealEnv(const std::string& name) {
  const char* v = std::getenv(name.c_str());
  if (v == nullptr) return std::nullopt;
  return std::string(v);
}

namespace {

Opt<PciAddress> GetPci(const json& obj, const char* key, const std::string& path) {
  auto s = GetString(obj, key, path);
  if (!s) return std::nullopt;
  auto a = ParsePciBusId(*s);
  if (!a)
    Fail(Join(path, key), "expected a PCI bus id like \"00000000:19:00.0\", got " + ShowText(*s));
  return a;
}

PageList GetPages(const json& obj, const char* key, const std::string& path, int cause) {
  const json* v = Child(obj, key);
  if (v == nullptr) return std::nullopt;
  std::string p = Join(path, key);
  std::vector<uint64_t> pages;
  if (v->is_number_integer() || v->is_number_unsigned()) {
    auto n = GetUint(obj, key, path, 100000);
    for (uint64_t i = 0; i < *n; ++i) pages.push_back(SynthesisedPageAddress(cause, i));
    return pages;
  }
  if (!v->is_array()) Fail(p, "expected a count or a list of addresses, got " + Show(*v));
  for (size_t i = 0; i < v->size(); ++i) {
    const json& e = (*v)[i];
    if (e.is_number_unsigned() || (e.is_number_integer() && e.get<int64_t>() >= 0)) {
      pages.push_back(e.get<uint64_t>());
    } else if (e.is_string() && ParseHex(e.get<std::string>())) {
      pages.push_back(*ParseHex(e.get<std::string>()));
    } else {
      Fail(Index(p, i), "expected an address (integer or \"0x...\"), got " + Show(e));
    }
  }
  return pages;
}

bool ValidEnvName(const std::string& s) {
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
  });
}

Opt<pid_t> PidFromText(const std::string& s) {
  if (s.empty() || s.size() > 10) return std::nullopt;
  uint64_t x = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return std::nullopt;
    x = x * 10 + static_cast<uint64_t>(c - '0');
  }
  if (x == 0 || x > static_cast<uint64_t>(std::numeric_limits<pid_t>::max())) return std::nullopt;
  return static_cast<pid_t>(x);
}

ProcessSpec ParseProcess(const json& v, const std::string& path, const EnvLookup& env) {
  RequireObject(v, path);
  CheckKeys(v, path,
            {"pid", "used_mib", "sm_pct", "mem_pct", "enc_pct", "dec_pct", "type", "while_alive",
             "gpu_instance_id", "compute_instance_id", "note"});
  ProcessSpec p;
  const json* pid = Child(v, "pid");
  if (pid == nullptr) Fail(Join(path, "pid"), "required");
  if (pid->is_string() && pid->get<std::string>().rfind("env:", 0) == 0) {
    p.pid_env = pid->get<std::string>().substr(4);
    if (!ValidEnvName(p.pid_env)) {
      Fail(Join(path, "pid"), "\"env:NAME\" needs a variable name, got " + Show(*pid));
    }
    if (auto value = env(p.pid_env)) p.pid = PidFromText(*value);
  } else {
    auto x = GetUint(v, "pid", path, static_cast<uint64_t>(std::numeric_limits<pid_t>::max()));
    if (*x == 0) Fail(Join(path, "pid"), "must be positive");
    p.pid = static_cast<pid_t>(*x);
  }
  if (auto mib = GetUint(v, "used_mib", path, uint64_t{1} << 40)) p.used_bytes = *mib << 20;
  p.sm_pct = GetU32(v, "sm_pct", path, 100);
  p.mem_pct = GetU32(v, "mem_pct", path, 100);
  if (p.sm_pct.has_value() != p.mem_pct.has_value()) {
    Fail(path, "sm_pct and mem_pct go together (one utilization sample)");
  }
  p.enc_pct = GetU32(v, "enc_pct", path, 100).value_or(0);
  p.dec_pct = GetU32(v, "dec_pct", path, 100).value_or(0);
  if (const json* t = Child(v, "type")) {
    p.type = GetEnum<ProcessType>(*t, Join(path, "type"),
                                  {{"compute", ProcessType::kCompute},
                                   {"graphics", ProcessType::kGraphics},
                                   {"compute+graphics", ProcessType::kComputeAndGraphics},
                                   {"mps", ProcessType::kMps}});
  }
  p.while_alive = GetBool(v, "while_alive", path).value_or(false);
  if (p.while_alive && p.pid_env.empty()) {
    Fail(Join(path, "while_alive"),
         "needs an \"env:NAME\" pid (a literal PID is not a process the test controls)");
  }
  p.gpu_instance_id = GetU32(v, "gpu_instance_id", path);
  p.compute_instance_id = GetU32(v, "compute_instance_id", path);
  return p;
}

NvLinkSpec ParseNvLink(const json& v, const std::string& path) {
  NvLinkSpec l;
  if (v.is_null()) return l;
  if (v.is_boolean()) {
    l.active = v.get<bool>();
    return l;
  }
  if (!v.is_object()) Fail(path, "expected true, false, null or an object, got " + Show(v));
  CheckKeys(v, path, {"active", "remote_pci_bus_id", "tx_kib", "rx_kib", "note"});
  l.active = GetBool(v, "active", path);
  l.remote = GetPci(v, "remote_pci_bus_id", path);
  l.tx_kib = GetUint(v, "tx_kib", path, ~uint64_t{0});
  l.rx_kib = GetUint(v, "rx_kib", path, ~uint64_t{0});
  return l;
}

// Reads every field of one GPU object (defaults already merged in).
GpuState ParseGpuState(const json& g, const std::string& path, const EnvLookup& env) {
  RequireObject(g, path);
  CheckKeys(g, path,
            {"name",
             "uuid",
             "serial",
             "pci_bus_id",
             "pci_device_id",
             "pci_subsystem_id",
             "minor_number",
             "memory",
             "utilization",
             "temperature_c",
             "temperature_slowdown_c",
             "temperature_shutdown_c",
             "memory_temperature_c",
             "fan_pct",
             "power_w",
             "power_limit_w",
             "power_default_limit_w",
             "power_min_limit_w",
             "power_max_limit_w",
             "total_energy_j",
             "bar1",
             "cuda_compute_capability",
             "brand",
             "architecture",
             "display",
             "clocks_mhz",
             "max_clocks_mhz",
             "pstate",
             "persistence_mode",
             "compute_mode",
             "mig",
             "ecc",
             "retired_pages",
             "remapped_rows",
             "clock_event_reasons",
             "clock_event_reasons_supported",
             "pcie",
             "nvlinks",
             "processes",
             "supported_events",
             "events",
             "lost",
             "handle_error",
             "block_s",
             "keeps_memory_after_exit",
             "note"});
  GpuState s;
  s.name = GetString(g, "name", path, 95);
  s.uuid = GetString(g, "uuid", path, 95);
  s.serial = GetString(g, "serial", path, 29);
  s.pci = GetPci(g, "pci_bus_id", path);
  s.pci_device_id = GetHex32(g, "pci_device_id", path);
  s.pci_subsystem_id = GetHex32(g, "pci_subsystem_id", path);
  s.minor_number = GetU32(g, "minor_number", path);

  if (const json* m = GetObject(g, "memory", path)) {
    std::string mp = Join(path, "memory");
    CheckKeys(*m, mp, {"total_mib", "used_mib", "reserved_mib", "used_from_processes", "note"});
    constexpr uint64_t kMaxMib = uint64_t{1} << 40;
    if (auto x = GetUint(*m, "total_mib", mp, kMaxMib)) s.memory_total_bytes = *x << 20;
    if (auto x = GetUint(*m, "used_mib", mp, kMaxMib)) s.memory_used_bytes = *x << 20;
    if (auto x = GetUint(*m, "reserved_mib", mp, kMaxMib)) s.memory_reserved_bytes = *x << 20;
    s.memory_used_from_processes = GetBool(*m, "used_from_processes", mp).value_or(false);
  }
  if (const json* u = GetObject(g, "utilization", path)) {
    std::string up = Join(path, "utilization");
    CheckKeys(*u, up, {"gpu", "memory", "encoder", "decoder", "note"});
    s.utilization_gpu = GetU32(*u, "gpu", up, 100);
    s.utilization_memory = GetU32(*u, "memory", up, 100);
    s.utilization_encoder = GetU32(*u, "encoder", up, 100);
    s.utilization_decoder = GetU32(*u, "decoder", up, 100);
  }
  s.temperature_c = GetU32(g, "temperature_c", path, 200);
  s.temperature_slowdown_c = GetU32(g, "temperature_slowdown_c", path, 200);
  s.temperature_shutdown_c = GetU32(g, "temperature_shutdown_c", path, 200);
  s.memory_temperature_c = GetU32(g, "memory_temperature_c", path, 200);
  s.fan_pct = GetU32(g, "fan_pct", path, 200);
  if (auto w = GetNumber(g, "power_w", path, 0, 100000)) {
    s.power_mw = static_cast<unsigned>(std::llround(*w * 1000.0));
  }
  if (auto w = GetNumber(g, "power_limit_w", path, 0, 100000)) {
    s.power_limit_mw = static_cast<unsigned>(std::llround(*w * 1000.0));
  }
  if (auto w = GetNumber(g, "power_default_limit_w", path, 0, 100000)) {
    s.power_default_limit_mw = static_cast<unsigned>(std::llround(*w * 1000.0));
  }
  if (auto w = GetNumber(g, "power_min_limit_w", path, 0, 100000)) {
    s.power_min_limit_mw = static_cast<unsigned>(std::llround(*w * 1000.0));
  }
  if (auto w = GetNumber(g, "power_max_limit_w", path, 0, 100000)) {
    s.power_max_limit_mw = static_cast<unsigned>(std::llround(*w * 1000.0));
  }
  if (s.power_min_limit_mw && s.power_max_limit_mw &&
      *s.power_min_limit_mw > *s.power_max_limit_mw) {
    Fail(Join(path, "power_min_limit_w"), "exceeds power_max_limit_w");
  }
  if (auto j = GetNumber(g, "total_energy_j", path, 0, 1e15)) {
    s.total_energy_mj = static_cast<uint64_t>(std::llround(*j * 1000.0));
  }
  if (const json* b = GetObject(g, "bar1", path)) {
    std::string bp = Join(path, "bar1");
    CheckKeys(*b, bp, {"total_mib", "used_mib", "note"});
    constexpr uint64_t kMaxMib = uint64_t{1} << 40;
    if (auto x = GetUint(*b, "total_mib", bp, kMaxMib)) s.bar1_total_bytes = *x << 20;
    if (auto x = GetUint(*b, "used_mib", bp, kMaxMib)) s.bar1_used_bytes = *x << 20;
    if (s.bar1_total_bytes && s.bar1_used_bytes && *s.bar1_used_bytes > *s.bar1_total_bytes) {
      Fail(Join(bp, "used_mib"), "exceeds total_mib");
    }
  }
  if (auto cc = GetString(g, "cuda_compute_capability", path, 16)) {
    // "MAJOR.MINOR", e.g. "9.0".
    unsigned major = 0;
    unsigned minor = 0;
    char tail = 0;
    if (std::sscanf(cc->c_str(), "%3u.%3u%c", &major, &minor, &tail) != 2 ||
        !std::isdigit(static_cast<unsigned char>((*cc)[0]))) {
      Fail(Join(path, "cuda_compute_capability"),
           "expected \"MAJOR.MINOR\" like \"9.0\", got " + ShowText(*cc));
    }
    s.cuda_cc_major = static_cast<int>(major);
    s.cuda_cc_minor = static_cast<int>(minor);
  }
  if (const json* br = Child(g, "brand")) {
    s.brand = GetEnum<int>(*br, Join(path, "brand"),
                           {{"unknown", 0},
                            {"quadro", 1},
                            {"tesla", 2},
                            {"nvs", 3},
                            {"grid", 4},
                            {"geforce", 5},
                            {"titan", 6},
                            {"nvidia_vapps", 7},
                            {"nvidia_vpc", 8},
                            {"nvidia_vcs", 9},
                            {"nvidia_vws", 10},
                            {"nvidia_cloud_gaming", 11},
                            {"quadro_rtx", 12},
                            {"nvidia_rtx", 13},
                            {"nvidia", 14},
                            {"geforce_rtx", 15},
                            {"titan_rtx", 16}});
  }
  if (const json* a = Child(g, "architecture")) {
    s.architecture = GetEnum<unsigned>(*a, Join(path, "architecture"),
                                       {{"kepler", 2},
                                        {"maxwell", 3},
                                        {"pascal", 4},
                                        {"volta", 5},
                                        {"turing", 6},
                                        {"ampere", 7},
                                        {"ada", 8},
                                        {"hopper", 9},
                                        {"blackwell", 10},
                                        {"unknown", 0xFFFFFFFFu}});
  }
  if (const json* d = GetObject(g, "display", path)) {
    std::string dp = Join(path, "display");
    CheckKeys(*d, dp, {"mode", "active", "note"});
    s.display_mode = GetBool(*d, "mode", dp);
    s.display_active = GetBool(*d, "active", dp);
  }
  const char* kClockNames[4] = {"graphics", "sm", "memory", "video"};
  for (const char* key : {"clocks_mhz", "max_clocks_mhz"}) {
    if (const json* c = GetObject(g, key, path)) {
      std::string cp = Join(path, key);
      CheckKeys(*c, cp, {"graphics", "sm", "memory", "video", "note"});
      for (int i = 0; i < 4; ++i) {
        auto mhz = GetU32(*c, kClockNames[i], cp, 100000);
        if (std::string_view(key) == "clocks_mhz") {
          s.clocks_mhz[i] = mhz;
        } else {
          s.max_clocks_mhz[i] = mhz;
        }
      }
    }
  }
  s.pstate = GetU32(g, "pstate", path, 15);
  s.persistence_mode = GetBool(g, "persistence_mode", path);
  if (const json* cm = Child(g, "compute_mode")) {
    s.compute_mode = GetEnum<int>(
        *cm, Join(path, "compute_mode"),
        {{"default", 0}, {"exclusive_thread", 1}, {"prohibited", 2}, {"exclusive_process", 3}});
  }
  if (const json* mig = GetObject(g, "mig", path)) {
    std::string mp = Join(path, "mig");
    CheckKeys(*mig, mp, {"current", "pending", "note"});
    s.mig_current = GetBool(*mig, "current", mp);
    s.mig_pending = GetBool(*mig, "pending", mp);
  }
  if (const json* ecc = GetObject(g, "ecc", path)) {
    std::string ep = Join(path, "ecc");
    CheckKeys(*ecc, ep, {"current", "pending", "volatile", "aggregate", "note"});
    s.ecc_current = GetBool(*ecc, "current", ep);
    s.ecc_pending = GetBool(*ecc, "pending", ep);
    const char* kCounters[2] = {"volatile", "aggregate"};
    for (int counter = 0; counter < 2; ++counter) {
      if (const json* c = GetObject(*ecc, kCounters[counter], ep)) {
        std::string cp = Join(ep, kCounters[counter]);
        CheckKeys(*c, cp, {"corrected", "uncorrected", "note"});
        s.ecc_counts[0][counter] = GetUint(*c, "corrected", cp, ~uint64_t{0});
        s.ecc_counts[1][counter] = GetUint(*c, "uncorrected", cp, ~uint64_t{0});
      }
    }
  }
  if (const json* rp = GetObject(g, "retired_pages", path)) {
    std::string rpp = Join(path, "retired_pages");
    CheckKeys(*rp, rpp, {"single_bit", "double_bit", "pending", "note"});
    s.retired_pages[0] = GetPages(*rp, "single_bit", rpp, 0);
    s.retired_pages[1] = GetPages(*rp, "double_bit", rpp, 1);
    s.retired_pages_pending = GetBool(*rp, "pending", rpp);
  }
  if (const json* rr = GetObject(g, "remapped_rows", path)) {
    std::string rrp = Join(path, "remapped_rows");
    CheckKeys(*rr, rrp, {"correctable", "uncorrectable", "pending", "failure", "note"});
    s.remapped_correctable = GetU32(*rr, "correctable", rrp);
    s.remapped_uncorrectable = GetU32(*rr, "uncorrectable", rrp);
    s.remapped_pending = GetBool(*rr, "pending", rrp);
    s.remapped_failure = GetBool(*rr, "failure", rrp);
  }
  s.clock_event_reasons = GetMask(g, "clock_event_reasons", path, kClockReasons);
  s.clock_event_reasons_supported =
      GetMask(g, "clock_event_reasons_supported", path, kClockReasons);
  if (const json* pc = GetObject(g, "pcie", path)) {
    std::string pp = Join(path, "pcie");
    CheckKeys(*pc, pp,
              {"gen_current", "gen_max", "gen_gpu_max", "width_current", "width_max",
               "replay_counter", "tx_kb_s", "rx_kb_s", "note"});
    s.pcie_gen_current = GetU32(*pc, "gen_current", pp, 32);
    s.pcie_gen_max = GetU32(*pc, "gen_max", pp, 32);
    s.pcie_gen_gpu_max = GetU32(*pc, "gen_gpu_max", pp, 32);
    s.pcie_width_current = GetU32(*pc, "width_current", pp, 64);
    s.pcie_width_max = GetU32(*pc, "width_max", pp, 64);
    s.pcie_replay_counter = GetU32(*pc, "replay_counter", pp);
    s.pcie_tx_kb_s = GetU32(*pc, "tx_kb_s", pp);
    s.pcie_rx_kb_s = GetU32(*pc, "rx_kb_s", pp);
  }
  if (const json* nv = Child(g, "nvlinks")) {
    std::string np = Join(path, "nvlinks");
    if (!nv->is_array()) Fail(np, "expected a list (one entry per link), got " + Show(*nv));
    if (nv->size() > 64) Fail(np, "more than 64 links");
    std::vector<NvLinkSpec> links;
    for (size_t i = 0; i < nv->size(); ++i) links.push_back(ParseNvLink((*nv)[i], Index(np, i)));
    s.nvlinks = std::move(links);
  }
  if (const json* ps = Child(g, "processes")) {
    std::string pp = Join(path, "processes");
    if (!ps->is_array()) Fail(pp, "expected a list, got " + Show(*ps));
    std::vector<ProcessSpec> procs;
    for (size_t i = 0; i < ps->size(); ++i) {
      procs.push_back(ParseProcess((*ps)[i], Index(pp, i), env));
    }
    s.processes = std::move(procs);
  }
  s.supported_events = GetMask(g, "supported_events", path, kEventTypes);
  s.lost = GetBool(g, "lost", path).value_or(false);
  if (const json* he = Child(g, "handle_error")) {
    s.handle_error = GetEnum<int>(
        *he, Join(path, "handle_error"),
        {{"no_permission", 4}, {"insufficient_power", 8}, {"irq_issue", 11}, {"unknown", 999}});
  }
  s.block_s = GetNumber(g, "block_s", path, 0, 86400).value_or(0);
  s.keeps_memory_after_exit = GetBool(g, "keeps_memory_after_exit", path).value_or(false);

  // A memory picture no card could report is an authoring mistake.
  if (s.memory_total_bytes && s.memory_used_bytes) {
    uint64_t used = *s.memory_used_bytes + s.memory_reserved_bytes.value_or(0);
    if (s.memory_used_from_processes && s.processes) {
      for (const auto& p : *s.processes) used += p.used_bytes.value_or(0);
    }
    if (used > *s.memory_total_bytes) {
      Fail(Join(path, "memory"),
           std::string("used_mib + reserved_mib") +
               (s.memory_used_from_processes ? " + the processes' used_mib" : "") +
               " exceeds total_mib");
    }
  }
  return s;
}

std::vector<EventSpec> ParseEvents(const json& g, const std::string& path) {
  std::vector<EventSpec> out;
  const json* ev = Child(g, "events");
  if (ev == nullptr) return out;
  std::string ep = Join(path, "events");
  if (!ev->is_array()) Fail(ep, "expected a list, got " + Show(*ev));
  for (size_t i = 0; i < ev->size(); ++i) {
    const json& e = (*ev)[i];
    std::string p = Index(ep, i);
    RequireObject(e, p);
    CheckKeys(e, p, {"at_s", "xid", "type", "note"});
    EventSpec s;
    auto at = GetNumber(e, "at_s", p, 0, 1e9);
    if (!at) Fail(Join(p, "at_s"), "required");
    s.at_s = *at;
    auto xid = GetUint(e, "xid", p, 0xFFFFFFFF);
    const json* type = Child(e, "type");
    if (type != nullptr) {
      s.type = GetEnum<uint64_t>(*type, Join(p, "type"),
                                 {{"single_bit_ecc", 0x1},
                                  {"double_bit_ecc", 0x2},
                                  {"pstate", 0x4},
                                  {"xid", 0x8},
                                  {"clock", 0x10},
                                  {"power_source_change", 0x80},
                                  {"mig_config_change", 0x100}});
    } else if (xid) {
      s.type = 0x8;
    } else {
      Fail(p, "needs \"xid\" or \"type\"");
    }
    if (s.type == 0x8) {
      if (!xid) Fail(p, "an xid event needs \"xid\"");
      s.data = *xid;
    } else if (xid) {
      Fail(Join(p, "xid"), "only for xid events");
    }
    out.push_back(s);
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const EventSpec& a, const EventSpec& b) { return a.at_s < b.at_s; });
  return out;
}

// Objects merge key by key (overlay wins; an overlay null removes the key's
// value, which keeps it null = absent); anything else is replaced.
json DeepMerge(const json& base, const json& overlay) {
  if (!base.is_object() || !overlay.is_object()) return overlay;
  json out = base;
  for (auto it = overlay.begin(); it != overlay.end(); ++it) {
    auto b = out.find(it.key());
    if (b != out.end() && b->is_object() && it->is_object()) {
      *b = DeepMerge(*b, *it);
    } else {
      out[it.key()] = *it;
    }
  }
  return out;
}

// Sets the dotted key `dotted` (e.g. "memory.used_mib") inside `target`.
void SetDotted(json& target, const std::string& dotted, const json& value,
               const std::string& path) {
  json* node = &target;
  size_t start = 0;
  while (true) {
    size_t dot = dotted.find('.', start);
    std::string part =
        dotted.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    if (part.empty()) Fail(path, "empty component in key " + ShowText(dotted));
    if (dot == std::string::npos) {
      (*node)[part] = value;
      return;
    }
    json& next = (*node)[part];
    if (next.is_null()) next = json::object();
    if (!next.is_object()) {
      Fail(path, ShowText(dotted) + ": " + ShowText(part) + " is not an object");
    }
    node = &next;
    start = dot + 1;
  }
}

DriverState ParseDriver(const json& d, const std::string& path) {
  RequireObject(d, path);
  CheckKeys(d, path,
            {"version", "nvml_version", "cuda_version", "failure", "init_block_s",
             "process_info_stride", "note"});
  DriverState s;
  s.version = GetString(d, "version", path, 79);
  s.nvml_version = GetString(d, "nvml_version", path, 79);
  if (auto c = GetUint(d, "cuda_version", path, 1000000)) s.cuda_version = static_cast<int>(*c);
  if (const json* f = Child(d, "failure")) {
    s.failure = GetEnum<DriverFailure>(*f, Join(path, "failure"),
                                       {{"driver_not_loaded", DriverFailure::kDriverNotLoaded},
                                        {"version_mismatch", DriverFailure::kVersionMismatch},
                                        {"no_gpus", DriverFailure::kNoGpus}});
  }
  s.init_block_s = GetNumber(d, "init_block_s", path, 0, 86400).value_or(0);
  if (auto st = GetUint(d, "process_info_stride", path, 256)) {
    if (*st < 24 || *st % 8 != 0) {
      Fail(Join(path, "process_info_stride"), "must be a multiple of 8, at least 24");
    }
    s.process_info_stride = static_cast<unsigned>(*st);
  }
  return s;
}

int ParseLevel(const json& v, const std::string& path) {
  return GetEnum<int>(v, path,
                      {{"internal", 0},
                       {"single", 10},
                       {"multiple", 20},
                       {"hostbridge", 30},
                       {"node", 40},
                       {"system", 50}});
}

Topology ParseTopology(const json& t, const std::string& path, size_t gpu_count) {
  RequireObject(t, path);
  CheckKeys(t, path, {"default", "links", "note"});
  Topology topo;
  if (const json* d = Child(t, "default"))
    topo.default_level = ParseLevel(*d, Join(path, "default"));
  if (const json* links = Child(t, "links")) {
    std::string lp = Join(path, "links");
    if (!links->is_array()) Fail(lp, "expected a list, got " + Show(*links));
    for (size_t i = 0; i < links->size(); ++i) {
      const json& l = (*links)[i];
      std::string p = Index(lp, i);
      RequireObject(l, p);
      CheckKeys(l, p, {"gpus", "level", "note"});
      const json* gpus = Child(l, "gpus");
      if (gpus == nullptr || !gpus->is_array() || gpus->size() != 2 ||
          !(*gpus)[0].is_number_unsigned() || !(*gpus)[1].is_number_unsigned()) {
        Fail(Join(p, "gpus"), "expected two GPU indices like [0, 1]");
      }
      uint64_t a = (*gpus)[0].get<uint64_t>();
      uint64_t b = (*gpus)[1].get<uint64_t>();
      if (a >= gpu_count || b >= gpu_count) Fail(Join(p, "gpus"), "no such GPU");
      if (a == b) Fail(Join(p, "gpus"), "a GPU paired with itself");
      const json* level = Child(l, "level");
      if (level == nullptr) Fail(Join(p, "level"), "required");
      auto key = std::make_pair(static_cast<unsigned>(std::min(a, b)),
                                static_cast<unsigned>(std::max(a, b)));
      if (topo.pairs.count(key) != 0) Fail(p, "pair listed twice");
      topo.pairs[key] = ParseLevel(*level, Join(p, "level"));
    }
  }
  return topo;
}

struct TimelineEntry {
  double at_s;
  size_t position;  // Index in the file, for messages and stable order.
  Opt<unsigned> gpu;
  const json* set;
};

// Builds a Timeline from a base JSON object and the entries that apply to it.
template <typename State, typename ParseFn>
Timeline<State> BuildTimeline(const json& base, const std::vector<TimelineEntry>& entries,
                              const std::string& base_path, ParseFn parse) {
  Timeline<State> tl;
  tl.at_s.push_back(-std::numeric_limits<double>::infinity());
  tl.states.push_back(parse(base, base_path));
  json current = base;
  for (size_t i = 0; i < entries.size(); ++i) {
    const TimelineEntry& e = entries[i];
    std::string p = "timeline[" + std::to_string(e.position) + "].set";
    for (auto it = e.set->begin(); it != e.set->end(); ++it) {
      if (it.key() == "events") Fail(Join(p, "events"), "events cannot change on the timeline");
      SetDotted(current, it.key(), *it, p);
    }
    // Entries at the same moment apply together.
    if (i + 1 < entries.size() && entries[i + 1].at_s == e.at_s) continue;
    tl.at_s.push_back(e.at_s);
    tl.states.push_back(
        parse(current, "timeline[" + std::to_string(e.position) + "]: " + base_path));
  }
  return tl;
}

Scenario ParseValidated(const json& root, const std::string& source, const EnvLookup& env) {
  RequireObject(root, "");
  CheckKeys(root, "",
            {"name", "description", "driver", "defaults", "gpus", "topology", "timeline", "note"});
  Scenario sc;
  sc.source = source;
  sc.name = GetString(root, "name", "").value_or("");
  sc.description = GetString(root, "description", "").value_or("");

  json defaults = json::object();
  if (const json* d = GetObject(root, "defaults", "")) {
    // Checked on its own so a mistake there is reported with its own path.
    ParseGpuState(*d, "defaults", env);
    ParseEvents(*d, "defaults");
    defaults = *d;
  }
  const json* gpus = Child(root, "gpus");
  if (gpus == nullptr) Fail("gpus", "required (a list, possibly empty)");
  if (!gpus->is_array()) Fail("gpus", "expected a list, got " + Show(*gpus));
  if (gpus->size() > kMaxGpus) Fail("gpus", "more than " + std::to_string(kMaxGpus) + " GPUs");
  std::vector<json> merged;
  for (size_t i = 0; i < gpus->size(); ++i) {
    RequireObject((*gpus)[i], Index("gpus", i));
    merged.push_back(DeepMerge(defaults, (*gpus)[i]));
  }

  // Timeline entries, validated and sorted by time (file order breaks ties).
  std::vector<TimelineEntry> entries;
  if (const json* tl = Child(root, "timeline")) {
    if (!tl->is_array()) Fail("timeline", "expected a list, got " + Show(*tl));
    for (size_t i = 0; i < tl->size(); ++i) {
      const json& e = (*tl)[i];
      std::string p = Index("timeline", i);
      RequireObject(e, p);
      CheckKeys(e, p, {"at_s", "gpu", "set", "note"});
      auto at = GetNumber(e, "at_s", p, 0, 1e9);
      if (!at) Fail(Join(p, "at_s"), "required");
      Opt<unsigned> gpu;
      if (const json* g = Child(e, "gpu")) {
        if (!g->is_number_unsigned() || g->get<uint64_t>() >= merged.size()) {
          Fail(Join(p, "gpu"), "expected a GPU index below " + std::to_string(merged.size()) +
                                   " or null (the driver), got " + Show(*g));
        }
        gpu = g->get<unsigned>();
      }
      const json* set = GetObject(e, "set", p);
      if (set == nullptr) Fail(Join(p, "set"), "required");
      entries.push_back({*at, i, gpu, set});
    }
    std::stable_sort(
        entries.begin(), entries.end(),
        [](const TimelineEntry& a, const TimelineEntry& b) { return a.at_s < b.at_s; });
  }
  auto for_target = [&](Opt<unsigned> gpu) {
    std::vector<TimelineEntry> out;
    for (const auto& e : entries) {
      if (e.gpu == gpu) out.push_back(e);
    }
    return out;
  };

  const json* driver = Child(root, "driver");
  json driver_json = driver != nullptr ? *driver : json::object();
  sc.driver = BuildTimeline<DriverState>(
      driver_json, for_target(std::nullopt), "driver",
      [](const json& d, const std::string& p) { return ParseDriver(d, p); });
  for (size_t i = 0; i < merged.size(); ++i) {
    GpuSpec spec;
    std::string path = Index("gpus", i);
    spec.timeline = BuildTimeline<GpuState>(
        merged[i], for_target(static_cast<unsigned>(i)), path,
        [&env](const json& g, const std::string& p) { return ParseGpuState(g, p, env); });
    spec.events = ParseEvents(merged[i], path);
    sc.gpus.push_back(std::move(spec));
  }

  // Lookups by UUID and bus id must be unambiguous.
  std::set<std::string> uuids;
  std::set<std::string> bus_ids;
  for (size_t i = 0; i < sc.gpus.size(); ++i) {
    const GpuState& s = sc.gpus[i].timeline.states[0];
    if (s.uuid && !uuids.insert(*s.uuid).second) Fail(Index("gpus", i) + ".uuid", "duplicate");
    if (s.pci && !bus_ids.insert(s.pci->bus_id).second) {
      Fail(Index("gpus", i) + ".pci_bus_id", "duplicate");
    }
  }
  if (const json* t = Child(root, "topology"))
    sc.topology = ParseTopology(*t, "topology", merged.size());
  return sc;
}

}  // namespace

Result<Scenario> ParseScenario(const std::string& text, const std::string& source,
                               const EnvLookup& env) {
  json root;
  try {
    root = json::parse(text);
  } catch (const json::exception& e) {
    // Drop the library's "[json.exception.parse_error.101] " prefix.
    std::string what = e.what();
    if (auto close = what.find("] "); what.rfind("[json.", 0) == 0 && close != std::string::npos) {
      what = what.substr(close + 2);
    }
    return Error{"malformed", "not valid JSON: " + what};
  }
  try {
    return ParseValidated(root, source, env);
  } catch (const Invalid& e) {
    return Error{"invalid", e.what()};
  } catch (const std::exception& e) {
    // A library type error slipping past the checks above: still one clear line.
    return Error{"invalid", std::string("unexpected value: ") + e.what()};
  }
}

// Its own bounded read, not gw::os::ReadFileBounded, on purpose: this file is
// built into the simulated libnvidia-ml.so.1, which any NVML client may load,
// so it links nothing of the product (sim/CMakeLists.txt: only nlohmann_json
// and threads) and its symbols stay hidden inside the library.
Result<Scenario> LoadScenarioFile(const std::string& path, const EnvLookup& env) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    int err = errno;
    return Error{err == ENOENT ? "not_found" : "unreadable",
                 std::string("cannot open: ") + std::strerror(err)};
  }
  std::string text;
  char buf[65536];
  while (true) {
    ssize_t n = read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      int err = errno;
      close(fd);
      return Error{"unreadable", std::string("cannot read: ") + std::strerror(err)};
    }
    if (n == 0) break;
    text.append(buf, static_cast<size_t>(n));
    if (text.size() > (size_t{64} << 20)) {
      close(fd);
      return Error{"unreadable", "larger than 64 MiB"};
    }
  }
  close(fd);
  return ParseScenario(text, path, env);
}

}  // namespace gw::sim
