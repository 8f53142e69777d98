// Runs the independent C client (sim/client/nvml_client.c) against the
// simulated libnvidia-ml.so.1 for every shipped scenario and checks that every
// value it reads through the C ABI is exactly what the scenario file says.
//
// The expected values are derived here from the scenario JSON by a second,
// deliberately separate reading of docs/scenarios.md (defaults merge, timeline,
// MiB → bytes, W → mW, absent → NOT_SUPPORTED, ...), so a mistake in the
// simulator's loader or in its ABI layouts shows up as a difference.
#include <unistd.h>

#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "core/units.h"
#include "gtest/gtest.h"
#include "sim_test_util.h"
#include "test_paths.h"

namespace gw::sim::test {
namespace {

using json = nlohmann::json;
using Expected = std::map<std::string, std::string>;

json ReadJson(const std::string& path) {
  std::ifstream in(path);
  return json::parse(in);
}

// ---- The scenario, as a reader of docs/scenarios.md understands it ----

json Merge(const json& base, const json& over) {
  if (!base.is_object() || !over.is_object()) return over;
  json out = base;
  for (auto it = over.begin(); it != over.end(); ++it) {
    if (out.contains(it.key()) && out[it.key()].is_object() && it->is_object()) {
      out[it.key()] = Merge(out[it.key()], *it);
    } else {
      out[it.key()] = *it;
    }
  }
  return out;
}

void SetDotted(json& obj, const std::string& key, const json& value) {
  json* node = &obj;
  std::string rest = key;
  for (auto dot = rest.find('.'); dot != std::string::npos; dot = rest.find('.')) {
    json& next = (*node)[rest.substr(0, dot)];
    if (next.is_null()) next = json::object();
    node = &next;
    rest = rest.substr(dot + 1);
  }
  (*node)[rest] = value;
}

struct Server {
  json driver = json::object();
  std::vector<json> gpus;
  json topology;  // null when absent
};

// The server at the start (no timeline entry applied) or at the end (all applied).
Server ServerAt(const json& scenario, bool end) {
  Server s;
  if (scenario.contains("driver")) s.driver = scenario["driver"];
  json defaults = scenario.value("defaults", json::object());
  for (const json& g : scenario["gpus"]) s.gpus.push_back(Merge(defaults, g));
  if (scenario.contains("topology")) s.topology = scenario["topology"];
  if (end && scenario.contains("timeline")) {
    std::vector<json> entries(scenario["timeline"].begin(), scenario["timeline"].end());
    std::stable_sort(entries.begin(), entries.end(), [](const json& a, const json& b) {
      return a["at_s"].get<double>() < b["at_s"].get<double>();
    });
    for (const json& e : entries) {
      json& target = e["gpu"].is_null() ? s.driver : s.gpus[e["gpu"].get<size_t>()];
      for (auto it = e["set"].begin(); it != e["set"].end(); ++it) {
        SetDotted(target, it.key(), *it);
      }
    }
  }
  return s;
}

// The value at a dotted path, or null.
json At(const json& obj, const std::string& path) {
  const json* node = &obj;
  std::string rest = path;
  while (true) {
    auto dot = rest.find('.');
    std::string part = rest.substr(0, dot);
    if (!node->is_object() || !node->contains(part)) return nullptr;
    node = &(*node)[part];
    if (dot == std::string::npos) return *node;
    rest = rest.substr(dot + 1);
  }
}

std::string Hex(uint64_t v) {
  char buf[32];
  snprintf(buf, sizeof buf, "0x%" PRIX64, v);
  return buf;
}

std::string Hex8(uint64_t v) {
  char buf[32];
  snprintf(buf, sizeof buf, "0x%08" PRIX64, v);
  return buf;
}

uint64_t ParseHexString(const std::string& s) { return std::stoull(s.substr(2), nullptr, 16); }

uint64_t Mask(const json& v, const std::map<std::string, uint64_t>& names) {
  if (v.is_string()) return ParseHexString(v.get<std::string>());
  uint64_t m = 0;
  for (const json& n : v) m |= names.at(n.get<std::string>());
  return m;
}

const std::map<std::string, uint64_t> kReasonBits = {{"gpu_idle", 0x1},
                                                     {"applications_clocks_setting", 0x2},
                                                     {"sw_power_cap", 0x4},
                                                     {"hw_slowdown", 0x8},
                                                     {"sync_boost", 0x10},
                                                     {"sw_thermal_slowdown", 0x20},
                                                     {"hw_thermal_slowdown", 0x40},
                                                     {"hw_power_brake_slowdown", 0x80},
                                                     {"display_clock_setting", 0x100}};
const std::map<std::string, uint64_t> kEventBits = {{"single_bit_ecc", 0x1},
                                                    {"double_bit_ecc", 0x2},
                                                    {"pstate", 0x4},
                                                    {"xid", 0x8},
                                                    {"clock", 0x10},
                                                    {"power_source_change", 0x80},
                                                    {"mig_config_change", 0x100}};

struct Writer {
  Expected* out;
  std::string prefix;
  void Put(const std::string& key, const std::string& value) { (*out)[prefix + key] = value; }
  void Put(const std::string& key, uint64_t value) { Put(key, std::to_string(value)); }
  // A number field: its value, or NOT_SUPPORTED when absent or null.
  void Num(const std::string& key, const json& v, uint64_t scale = 1) {
    if (v.is_null()) {
      Put(key, "NOT_SUPPORTED");
    } else {
      Put(key, v.get<uint64_t>() * scale);
    }
  }
  void Str(const std::string& key, const json& v) {
    Put(key, v.is_null() ? std::string("NOT_SUPPORTED") : v.get<std::string>());
  }
  void Bool(const std::string& key, const json& v) {
    Put(key, v.is_null() ? std::string("NOT_SUPPORTED") : std::to_string(v.get<bool>() ? 1 : 0));
  }
};
// Scenario processes with their PIDs resolved (`pid_of_env` stands for every env: PID).
struct Proc {
  uint64_t pid;
  json spec;
};

std::vector<Proc> Listed(const json& gpu, uint64_t pid_of_env) {
  std::vector<Proc> out;
  json procs = At(gpu, "processes");
  if (procs.is_null()) return out;
  for (const json& p : procs) {
    uint64_t pid = p["pid"].is_string() ? pid_of_env : p["pid"].get<uint64_t>();
    out.push_back({pid, p});
  }
  return out;
}

bool InList(const json& p, bool compute) {
  std::string type = p.value("type", "compute");
  if (type == "compute+graphics") return true;
  if (type == "mps") return false;  // Listed by the MPS calls only.
  return (type == "compute") == compute;
}

void ExpectProcessList(Writer& w, const json& gpu, const std::string& key, bool compute,
                       int version, unsigned stride, uint64_t pid_of_env) {
  if (At(gpu, "processes").is_null()) {
    w.Put(key, "NOT_SUPPORTED");
    return;
  }
  std::vector<Proc> list;
  for (const Proc& p : Listed(gpu, pid_of_env)) {
    if (InList(p.spec, compute)) list.push_back(p);
  }
  w.Put(key + ".size_query", list.empty() ? "SUCCESS" : "INSUFFICIENT_SIZE");
  w.Put(key + ".count", list.size());
  // What the library writes: entries of `stride` bytes (24-byte layout, extra
  // bytes zero). The client reads them back as 24-byte entries, so a wider
  // stride shows up as shifted values here, exactly like a real R535 driver.
  size_t entry = version == 1 ? 16 : 24;
  size_t write_stride = version == 3 ? stride : entry;
  std::vector<unsigned char> bytes(list.size() * std::max(write_stride, entry) + 64, 0);
  for (size_t i = 0; i < list.size(); ++i) {
    unsigned char* e = bytes.data() + i * write_stride;
    uint32_t pid = static_cast<uint32_t>(list[i].pid);
    json used = list[i].spec.value("used_mib", json());
    uint64_t used_bytes = used.is_null() ? ~uint64_t{0} : used.get<uint64_t>() * kMiB;
    uint32_t gi = list[i].spec.value("gpu_instance_id", 0xFFFFFFFFu);
    uint32_t ci = list[i].spec.value("compute_instance_id", 0xFFFFFFFFu);
    std::memcpy(e, &pid, 4);
    std::memcpy(e + 8, &used_bytes, 8);
    if (version != 1) {
      std::memcpy(e + 16, &gi, 4);
      std::memcpy(e + 20, &ci, 4);
    }
  }
  for (size_t i = 0; i < list.size(); ++i) {
    const unsigned char* e = bytes.data() + i * entry;
    uint32_t pid;
    uint64_t used;
    uint32_t gi;
    uint32_t ci;
    std::memcpy(&pid, e, 4);
    std::memcpy(&used, e + 8, 8);
    std::string k = key + "." + std::to_string(i);
    w.Put(k + ".pid", pid);
    w.Put(k + ".used", used == ~uint64_t{0} ? std::string("NOT_AVAILABLE") : std::to_string(used));
    if (version != 1) {
      std::memcpy(&gi, e + 16, 4);
      std::memcpy(&ci, e + 20, 4);
      w.Put(k + ".gi", gi == 0xFFFFFFFFu ? std::string("NOT_AVAILABLE") : std::to_string(gi));
      w.Put(k + ".ci", ci == 0xFFFFFFFFu ? std::string("NOT_AVAILABLE") : std::to_string(ci));
    }
  }
  if (version == 3) w.Put(key + ".bytes_written", list.size() * write_stride);
}

void ExpectPci(Writer& w, const json& g) {
  json bus = At(g, "pci_bus_id");
  json dev = At(g, "pci_device_id");
  json sub = At(g, "pci_subsystem_id");
  if (bus.is_null() || dev.is_null() || sub.is_null()) {
    w.Put("pci", "NOT_SUPPORTED");
    w.Put("pci_v2", "NOT_SUPPORTED");
    w.Put("pci_v1", "NOT_SUPPORTED");
    return;
  }
  std::string id = bus.get<std::string>();  // Shipped scenarios use the canonical form.
  unsigned domain = std::stoul(id.substr(0, 8), nullptr, 16);
  unsigned b = std::stoul(id.substr(9, 2), nullptr, 16);
  unsigned d = std::stoul(id.substr(12, 2), nullptr, 16);
  std::string legacy = id.substr(4);
  w.Put("pci.bus_id", id);
  w.Put("pci.bus_id_legacy", legacy);
  w.Put("pci.domain", domain);
  w.Put("pci.bus", b);
  w.Put("pci.device", d);
  w.Put("pci.device_id", Hex8(ParseHexString(dev.get<std::string>())));
  w.Put("pci.subsystem_id", Hex8(ParseHexString(sub.get<std::string>())));
  for (const char* v : {"pci_v2", "pci_v1"}) {
    w.Put(std::string(v) + ".bus_id", legacy);
    w.Put(std::string(v) + ".device_id", Hex8(ParseHexString(dev.get<std::string>())));
  }
  w.Put("by_pci", "same");
}

void ExpectGpu(Writer& w, unsigned index, const json& g, unsigned stride, uint64_t pid_of_env) {
  w.Put("index", index);
  w.Str("name", At(g, "name"));
  w.Str("uuid", At(g, "uuid"));
  w.Str("serial", At(g, "serial"));
  w.Num("minor_number", At(g, "minor_number"));
  if (!At(g, "uuid").is_null()) w.Put("by_uuid", "same");
  ExpectPci(w, g);

  json total = At(g, "memory.total_mib");
  json used = At(g, "memory.used_mib");
  json reserved = At(g, "memory.reserved_mib");
  uint64_t used_bytes = 0;
  if (!used.is_null()) {
    used_bytes = used.get<uint64_t>() * kMiB;
    if (At(g, "memory.used_from_processes") == json(true)) {
      for (const Proc& p : Listed(g, pid_of_env)) {
        json u = p.spec.value("used_mib", json());
        if (!u.is_null()) used_bytes += u.get<uint64_t>() * kMiB;
      }
    }
  }
  if (total.is_null() || used.is_null()) {
    w.Put("memory", "NOT_SUPPORTED");
  } else {
    uint64_t t = total.get<uint64_t>() * kMiB;
    uint64_t all = used_bytes + (reserved.is_null() ? 0 : reserved.get<uint64_t>() * kMiB);
    w.Put("memory.total", t);
    w.Put("memory.used", all);
    w.Put("memory.free", t - all);
  }
  if (total.is_null() || used.is_null() || reserved.is_null()) {
    w.Put("memory_v2", "NOT_SUPPORTED");
  } else {
    uint64_t t = total.get<uint64_t>() * kMiB;
    uint64_t r = reserved.get<uint64_t>() * kMiB;
    w.Put("memory_v2.total", t);
    w.Put("memory_v2.reserved", r);
    w.Put("memory_v2.used", used_bytes);
    w.Put("memory_v2.free", t - r - used_bytes);
  }
  w.Put("memory_v2.wrong_version", "ARGUMENT_VERSION_MISMATCH");

  if (At(g, "utilization.gpu").is_null() || At(g, "utilization.memory").is_null()) {
    w.Put("utilization", "NOT_SUPPORTED");
  } else {
    w.Num("utilization.gpu", At(g, "utilization.gpu"));
    w.Num("utilization.memory", At(g, "utilization.memory"));
  }
  w.Num("temperature", At(g, "temperature_c"));
  w.Num("temperature.slowdown", At(g, "temperature_slowdown_c"));
  w.Num("temperature.shutdown", At(g, "temperature_shutdown_c"));
  w.Num("fan", At(g, "fan_pct"));
  for (const auto& [key, field] :
       std::map<std::string, std::string>{{"power.usage_mw", "power_w"},
                                          {"power.enforced_limit_mw", "power_limit_w"},
                                          {"power.management_limit_mw", "power_limit_w"}}) {
    json v = At(g, field);
    if (v.is_null()) {
      w.Put(key, "NOT_SUPPORTED");
    } else {
      w.Put(key, static_cast<uint64_t>(std::llround(v.get<double>() * 1000)));
    }
  }
  for (const char* c : {"graphics", "sm", "memory", "video"}) {
    w.Num(std::string("clock.") + c, At(g, std::string("clocks_mhz.") + c));
    w.Num(std::string("max_clock.") + c, At(g, std::string("max_clocks_mhz.") + c));
  }
  w.Num("pstate", At(g, "pstate"));
  w.Bool("persistence_mode", At(g, "persistence_mode"));
  json cm = At(g, "compute_mode");
  if (cm.is_null()) {
    w.Put("compute_mode", "NOT_SUPPORTED");
  } else {
    const std::map<std::string, int> modes = {
        {"default", 0}, {"exclusive_thread", 1}, {"prohibited", 2}, {"exclusive_process", 3}};
    w.Put("compute_mode", modes.at(cm.get<std::string>()));
  }
  for (const char* pair : {"mig", "ecc"}) {
    json cur = At(g, std::string(pair) + ".current");
    json pen = At(g, std::string(pair) + ".pending");
    if (cur.is_null() || pen.is_null()) {
      w.Put(pair, "NOT_SUPPORTED");
    } else {
      w.Bool(std::string(pair) + ".current", cur);
      w.Bool(std::string(pair) + ".pending", pen);
    }
  }
  for (const char* counter : {"volatile", "aggregate"}) {
    for (const char* kind : {"corrected", "uncorrected"}) {
      std::string path = std::string("ecc.") + counter + "." + kind;
      w.Num(path, At(g, path));
    }
  }
  int cause = 0;
  for (const char* kind : {"single_bit", "double_bit"}) {
    std::string key = std::string("retired_pages.") + kind;
    json v = At(g, key);
    if (v.is_null()) {
      w.Put(key, "NOT_SUPPORTED");
    } else {
      std::vector<uint64_t> pages;
      if (v.is_array()) {
        for (const json& a : v) {
          pages.push_back(a.is_string() ? ParseHexString(a.get<std::string>()) : a.get<uint64_t>());
        }
      } else {
        // docs/scenarios.md: a count stands for synthesised addresses.
        for (uint64_t i = 0; i < v.get<uint64_t>(); ++i) {
          pages.push_back((cause == 0 ? 0x1000000u : 0x2000000u) + i * 0x1000);
        }
      }
      w.Put(key + ".count", pages.size());
      for (size_t i = 0; i < pages.size(); ++i) w.Put(key + "." + std::to_string(i), Hex(pages[i]));
    }
    ++cause;
  }
  w.Bool("retired_pages.pending", At(g, "retired_pages.pending"));
  {
    json rr = At(g, "remapped_rows");
    bool all = rr.is_object();
    for (const char* f : {"correctable", "uncorrectable", "pending", "failure"}) {
      all = all && rr.contains(f) && !rr[f].is_null();
    }
    if (!all) {
      w.Put("remapped_rows", "NOT_SUPPORTED");
    } else {
      w.Num("remapped_rows.correctable", rr["correctable"]);
      w.Num("remapped_rows.uncorrectable", rr["uncorrectable"]);
      w.Bool("remapped_rows.pending", rr["pending"]);
      w.Bool("remapped_rows.failure", rr["failure"]);
    }
  }
  for (const auto& [key, field] : std::map<std::string, std::string>{
           {"clock_event_reasons", "clock_event_reasons"},
           {"clock_throttle_reasons", "clock_event_reasons"},
           {"clock_event_reasons_supported", "clock_event_reasons_supported"},
           {"clock_throttle_reasons_supported", "clock_event_reasons_supported"}}) {
    json v = At(g, field);
    w.Put(key, v.is_null() ? std::string("NOT_SUPPORTED") : Hex(Mask(v, kReasonBits)));
  }
  for (const char* f :
       {"gen_current", "gen_max", "gen_gpu_max", "width_current", "width_max", "replay_counter"}) {
    w.Num(std::string("pcie.") + f, At(g, std::string("pcie.") + f));
  }
  json links = At(g, "nvlinks");
  if (links.is_null()) {
    w.Put("nvlink", "NOT_SUPPORTED");
  } else {
    for (size_t l = 0; l < links.size(); ++l) {
      const json& link = links[l];
      json active = link.is_object() ? link.value("active", json()) : link;
      json remote = link.is_object() ? link.value("remote_pci_bus_id", json()) : json();
      std::string k = "nvlink." + std::to_string(l);
      w.Bool(k, active);
      w.Str(k + ".remote", remote);
    }
    w.Put("nvlink.count", links.size());
  }
  ExpectProcessList(w, g, "compute", true, 3, stride, pid_of_env);
  ExpectProcessList(w, g, "compute_v2", true, 2, stride, pid_of_env);
  ExpectProcessList(w, g, "compute_v1", true, 1, stride, pid_of_env);
  ExpectProcessList(w, g, "graphics", false, 3, stride, pid_of_env);
  ExpectProcessList(w, g, "graphics_v2", false, 2, stride, pid_of_env);
  ExpectProcessList(w, g, "graphics_v1", false, 1, stride, pid_of_env);
  if (At(g, "processes").is_null()) {
    w.Put("procutil", "NOT_SUPPORTED");
  } else {
    std::vector<Proc> sampled;
    for (const Proc& p : Listed(g, pid_of_env)) {
      if (p.spec.contains("sm_pct") && !p.spec["sm_pct"].is_null()) sampled.push_back(p);
    }
    if (sampled.empty()) {
      w.Put("procutil", "NOT_FOUND");
    } else {
      w.Put("procutil.count", sampled.size());
      for (size_t i = 0; i < sampled.size(); ++i) {
        std::string k = "procutil." + std::to_string(i);
        w.Put(k + ".pid", sampled[i].pid);
        w.Put(k + ".sm", sampled[i].spec["sm_pct"].get<uint64_t>());
        w.Put(k + ".mem", sampled[i].spec["mem_pct"].get<uint64_t>());
        w.Put(k + ".enc", sampled[i].spec.value("enc_pct", uint64_t{0}));
        w.Put(k + ".dec", sampled[i].spec.value("dec_pct", uint64_t{0}));
        w.Put(k + ".timestamp_recent", "1");
      }
      w.Put("procutil.after_last_seen", "NOT_FOUND");
    }
  }
  json events = At(g, "supported_events");
  w.Put("supported_events",
        events.is_null() ? std::string("NOT_SUPPORTED") : Hex(Mask(events, kEventBits)));

  // The calls other NVML clients make (docs/scenarios.md, GPU object).
  for (const char* codec : {"encoder", "decoder"}) {
    json pct = At(g, std::string("utilization.") + codec);
    if (pct.is_null()) {
      w.Put(codec, "NOT_SUPPORTED");
    } else {
      w.Num(std::string(codec) + ".pct", pct);
      w.Put(std::string(codec) + ".period_us", 100000);
    }
  }
  w.Num("pcie.tx_kb_s", At(g, "pcie.tx_kb_s"));
  w.Num("pcie.rx_kb_s", At(g, "pcie.rx_kb_s"));
  json bar1_total = At(g, "bar1.total_mib");
  json bar1_used = At(g, "bar1.used_mib");
  if (bar1_total.is_null() || bar1_used.is_null()) {
    w.Put("bar1", "NOT_SUPPORTED");
  } else {
    w.Num("bar1.total", bar1_total, kMiB);
    w.Num("bar1.used", bar1_used, kMiB);
    w.Put("bar1.free", (bar1_total.get<uint64_t>() - bar1_used.get<uint64_t>()) * kMiB);
  }
  json cc = At(g, "cuda_compute_capability");
  if (cc.is_null()) {
    w.Put("cuda_cc", "NOT_SUPPORTED");
  } else {
    std::string text = cc.get<std::string>();
    w.Put("cuda_cc.major", text.substr(0, text.find('.')));
    w.Put("cuda_cc.minor", text.substr(text.find('.') + 1));
  }
  json energy = At(g, "total_energy_j");
  std::string energy_mj = energy.is_null()
                              ? std::string("NOT_SUPPORTED")
                              : std::to_string(std::llround(energy.get<double>() * 1000));
  w.Put("energy_mj", energy_mj);
  w.Bool("display.mode", At(g, "display.mode"));
  w.Bool("display.active", At(g, "display.active"));
  const std::map<std::string, int> brands = {
      {"unknown", 0},     {"quadro", 1},      {"tesla", 2},       {"nvs", 3},
      {"grid", 4},        {"geforce", 5},     {"titan", 6},       {"nvidia_vapps", 7},
      {"nvidia_vpc", 8},  {"nvidia_vcs", 9},  {"nvidia_vws", 10}, {"nvidia_cloud_gaming", 11},
      {"quadro_rtx", 12}, {"nvidia_rtx", 13}, {"nvidia", 14},     {"geforce_rtx", 15},
      {"titan_rtx", 16}};
  json brand = At(g, "brand");
  w.Put("brand", brand.is_null() ? std::string("NOT_SUPPORTED")
                                 : std::to_string(brands.at(brand.get<std::string>())));
  const std::map<std::string, uint64_t> architectures = {
      {"kepler", 2}, {"maxwell", 3}, {"pascal", 4}, {"volta", 5},      {"turing", 6},
      {"ampere", 7}, {"ada", 8},     {"hopper", 9}, {"blackwell", 10}, {"unknown", 0xFFFFFFFF}};
  json arch = At(g, "architecture");
  w.Put("architecture", arch.is_null() ? std::string("NOT_SUPPORTED")
                                       : std::to_string(architectures.at(arch.get<std::string>())));
  json min_w = At(g, "power_min_limit_w");
  json max_w = At(g, "power_max_limit_w");
  if (min_w.is_null() || max_w.is_null()) {
    w.Put("power.limits", "NOT_SUPPORTED");
  } else {
    w.Put("power.limits.min_mw", static_cast<uint64_t>(std::llround(min_w.get<double>() * 1000)));
    w.Put("power.limits.max_mw", static_cast<uint64_t>(std::llround(max_w.get<double>() * 1000)));
  }
  w.Num("field.memory_temp", At(g, "memory_temperature_c"));
  w.Put("field.energy_mj", energy_mj);
  w.Put("field.nvlink_count",
        links.is_null() ? std::string("NOT_SUPPORTED") : std::to_string(links.size()));
}

const std::map<int, std::string> kErrorStrings = {
    {0, "Success"},
    {1, "Uninitialized"},
    {2, "Invalid Argument"},
    {3, "Not Supported"},
    {4, "Insufficient Permissions"},
    {6, "Not Found"},
    {7, "Insufficient Size"},
    {9, "Driver Not Loaded"},
    {15, "GPU is lost"},
    {18, "RM has detected an NVML/RM version mismatch"},
    {25, "Argument Version Mismatch"},
    {999, "Unknown Error"}};

Expected ExpectedOutput(const json& scenario, bool end, uint64_t pid_of_env) {
  Expected out;
  Writer w{&out, ""};
  Server s = ServerAt(scenario, end);
  w.Put("pre_init.count", "UNINITIALIZED");
  std::string failure = s.driver.value("failure", "");
  if (failure == "driver_not_loaded" || failure == "version_mismatch") {
    bool dnl = failure == "driver_not_loaded";
    w.Put("init", dnl ? "DRIVER_NOT_LOADED" : "LIB_RM_VERSION_MISMATCH");
    w.Put("init.error_string",
          dnl ? "Driver Not Loaded" : "RM has detected an NVML/RM version mismatch");
    w.Put("post_failed_init.count", "UNINITIALIZED");
    return out;
  }
  w.Put("init", "SUCCESS");
  w.Str("driver.version", At(s.driver, "version"));
  w.Str("driver.nvml_version", At(s.driver, "nvml_version"));
  w.Num("driver.cuda_version", At(s.driver, "cuda_version"));
  w.Num("driver.cuda_version_v2", At(s.driver, "cuda_version"));
  unsigned count = failure == "no_gpus" ? 0 : static_cast<unsigned>(s.gpus.size());
  unsigned permitted = 0;
  for (unsigned i = 0; i < count; ++i) {
    if (At(s.gpus[i], "handle_error") != json("no_permission")) ++permitted;
  }
  w.Put("count", count);
  w.Put("count_v1", permitted);
  unsigned stride = At(s.driver, "process_info_stride").is_null()
                        ? 24
                        : At(s.driver, "process_info_stride").get<unsigned>();
  std::vector<bool> have(count, false);
  const std::map<std::string, std::string> handle_errors = {
      {"no_permission", "NO_PERMISSION"},
      {"insufficient_power", "INSUFFICIENT_POWER"},
      {"irq_issue", "IRQ_ISSUE"},
      {"unknown", "UNKNOWN"}};
  for (unsigned i = 0; i < count; ++i) {
    Writer gw{&out, "gpu" + std::to_string(i) + "."};
    const json& g = s.gpus[i];
    if (At(g, "lost") == json(true)) {
      gw.Put("handle", "GPU_IS_LOST");
    } else if (!At(g, "handle_error").is_null()) {
      gw.Put("handle", handle_errors.at(At(g, "handle_error").get<std::string>()));
    } else {
      gw.Put("handle", "SUCCESS");
      have[i] = true;
      ExpectGpu(gw, i, g, stride, pid_of_env);
    }
  }
  const std::map<std::string, int> levels = {{"internal", 0},    {"single", 10}, {"multiple", 20},
                                             {"hostbridge", 30}, {"node", 40},   {"system", 50}};
  for (unsigned i = 0; i < count; ++i) {
    for (unsigned j = i + 1; j < count; ++j) {
      if (!have[i] || !have[j]) continue;
      std::string key = "topology." + std::to_string(i) + "." + std::to_string(j);
      if (s.topology.is_null()) {
        w.Put(key, "NOT_SUPPORTED");
        continue;
      }
      std::string level;
      for (const json& l : s.topology.value("links", json::array())) {
        auto a = l["gpus"][0].get<unsigned>();
        auto b = l["gpus"][1].get<unsigned>();
        if ((a == i && b == j) || (a == j && b == i)) level = l["level"].get<std::string>();
      }
      if (level.empty() && s.topology.contains("default")) {
        level = s.topology["default"].get<std::string>();
      }
      w.Put(key, level.empty() ? std::string("NOT_SUPPORTED") : std::to_string(levels.at(level)));
    }
  }
  w.Put("init_nested", "SUCCESS");
  w.Put("shutdown_nested", "SUCCESS");
  w.Put("after_nested.count", count);
  w.Put("shutdown", "SUCCESS");
  w.Put("post_shutdown.count", "UNINITIALIZED");
  w.Put("shutdown_extra", "UNINITIALIZED");
  for (const auto& [code, text] : kErrorStrings)
    w.Put("error_string." + std::to_string(code), text);
  return out;
}

// Every "env:NAME" a scenario uses.
std::set<std::string> EnvNames(const json& v) {
  std::set<std::string> out;
  if (v.is_string() && v.get<std::string>().rfind("env:", 0) == 0) {
    out.insert(v.get<std::string>().substr(4));
  } else if (v.is_structured()) {
    for (const json& c : v) {
      auto sub = EnvNames(c);
      out.insert(sub.begin(), sub.end());
    }
  }
  return out;
}

std::string DescribeDifferences(const Expected& want, const Expected& got) {
  std::ostringstream os;
  int shown = 0;
  for (const auto& [k, v] : want) {
    auto it = got.find(k);
    if (it == got.end()) {
      if (shown++ < 25) os << "  missing " << k << " (want " << v << ")\n";
    } else if (it->second != v) {
      if (shown++ < 25) os << "  " << k << ": got " << it->second << ", want " << v << "\n";
    }
  }
  for (const auto& [k, v] : got) {
    if (want.count(k) == 0 && shown++ < 25) os << "  unexpected " << k << "=" << v << "\n";
  }
  return os.str();
}

RunResult RunClient(const std::string& library, const std::string& scenario,
                    std::map<std::string, std::string> env, std::vector<std::string> args = {}) {
  env["GPUWARDEN_SIM_SCENARIO"] = scenario;
  if (env.count("GPUWARDEN_SIM_BLOCK_SCALE") == 0) env["GPUWARDEN_SIM_BLOCK_SCALE"] = "0";
  std::vector<std::string> argv = {SimClient()};
  argv.insert(argv.end(), args.begin(), args.end());
  argv.push_back(library);
  return RunProgram(argv, env, {"GPUWARDEN_SIM_START"});
}

void CheckScenario(const std::string& path, bool end) {
  json scenario = ReadJson(path);
  std::map<std::string, std::string> env;
  // Far in the future: t < 0, no timeline entry applies. Far in the past: all do.
  env["GPUWARDEN_SIM_START"] = std::to_string(UnixNow() + (end ? -1e6 : 1e6));
  for (const std::string& name : EnvNames(scenario)) env[name] = std::to_string(getpid());
  RunResult r = RunClient(SimLibrary(), path, env);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  std::vector<std::string> duplicates;
  Expected got = ParseKeyValues(r.out, &duplicates);
  EXPECT_TRUE(duplicates.empty()) << "repeated key " << duplicates.front();
  Expected want = ExpectedOutput(scenario, end, static_cast<uint64_t>(getpid()));
  EXPECT_TRUE(got == want) << path << (end ? " (end of timeline)" : " (start)") << ":\n"
                           << DescribeDifferences(want, got);
}

TEST(SimClientTest, ShipsTheScenariosTheDocsPromise) {
  std::set<std::string> names;
  for (const auto& p : ShippedScenarios()) names.insert(std::filesystem::path(p).stem().string());
  for (const char* required :
       {"healthy-idle", "vram-exhausted", "compute-saturated", "idle-holders", "memory-no-process",
        "zombie-holder", "xid79-fallen-off-bus", "ecc-double-bit", "row-remap-pending",
        "hot-while-idle", "driver-hang", "nvlink-8gpu", "driver-not-loaded", "version-mismatch",
        "bench-8gpu-64proc", "timeline-demo", "demo"}) {
    EXPECT_EQ(names.count(required), 1u) << required;
  }
  // scenarios/README.md lists every shipped scenario.
  std::ifstream readme(gw::test::SourceDir() + "/scenarios/README.md");
  std::stringstream text;
  text << readme.rdbuf();
  for (const auto& n : names) EXPECT_NE(text.str().find(n + ".json"), std::string::npos) << n;
}

TEST(SimClientTest, EveryScenarioReadsBackExactlyAtStart) {
  for (const auto& path : ShippedScenarios()) {
    SCOPED_TRACE(path);
    CheckScenario(path, false);
  }
}

TEST(SimClientTest, EveryScenarioReadsBackExactlyAtEndOfTimeline) {
  for (const auto& path : ShippedScenarios()) {
    SCOPED_TRACE(path);
    CheckScenario(path, true);
  }
}

// The check above relies on the expectation builder; make sure it can tell a
// difference (a wrong memory value must not compare equal).
TEST(SimClientTest, ExpectationBuilderNoticesAWrongValue) {
  json s = ReadJson(gw::test::SourceDir() + "/scenarios/healthy-idle.json");
  Expected want = ExpectedOutput(s, false, 1);
  s["defaults"]["memory"]["total_mib"] = 1234;
  Expected other = ExpectedOutput(s, false, 1);
  EXPECT_NE(want, other);
  EXPECT_EQ(want.at("gpu0.memory.total"), std::to_string(49140ull << 20));
  EXPECT_EQ(want.at("gpu0.fan"), "30");
  EXPECT_EQ(want.at("gpu0.power.usage_mw"), "21700");
}

TEST(SimClientTest, StrideTrapCorruptsV3ButNotV2OrV1) {
  std::string path = gw::test::SourceDir() + "/scenarios/process-stride-32.json";
  RunResult r = RunClient(SimLibrary(), path, {});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto got = ParseKeyValues(r.out);
  // The library wrote 3 × 32 bytes where the client expected 3 × 24.
  EXPECT_EQ(got.at("gpu0.compute.count"), "3");
  EXPECT_EQ(got.at("gpu0.compute.bytes_written"), "96");
  EXPECT_EQ(got.at("gpu0.compute.0.pid"), "880100");
  EXPECT_NE(got.at("gpu0.compute.1.pid"), "880101");  // Read from the wrong offset.
  // The older calls are unaffected.
  for (const char* list : {"compute_v2", "compute_v1"}) {
    for (int i = 0; i < 3; ++i) {
      std::string k = std::string("gpu0.") + list + "." + std::to_string(i);
      EXPECT_EQ(got.at(k + ".pid"), std::to_string(880100 + i)) << k;
      EXPECT_EQ(got.at(k + ".used"), std::to_string((8192ull * (i + 1)) << 20)) << k;
    }
  }
}

TEST(SimClientTest, UnsetEnvPidLeavesTheProcessOut) {
  std::string path = gw::test::SourceDir() + "/scenarios/zombie-holder.json";
  RunResult r = RunProgram({SimClient(), SimLibrary()}, {{"GPUWARDEN_SIM_SCENARIO", path}},
                           {"GW_ZOMBIE_PID", "GPUWARDEN_SIM_START"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto got = ParseKeyValues(r.out);
  EXPECT_EQ(got.at("gpu0.compute.count"), "0");
  EXPECT_EQ(got.at("gpu0.memory_v2.used"), "0");  // used_from_processes: nothing listed.
  RunResult set = RunProgram({SimClient(), SimLibrary()},
                             {{"GPUWARDEN_SIM_SCENARIO", path}, {"GW_ZOMBIE_PID", "4242"}},
                             {"GPUWARDEN_SIM_START"});
  auto got_set = ParseKeyValues(set.out);
  EXPECT_EQ(got_set.at("gpu0.compute.0.pid"), "4242");
  EXPECT_EQ(got_set.at("gpu0.memory_v2.used"), std::to_string(20480ull << 20));
}

TEST(SimClientTest, LegacyLibraryServesV1CallsAndLacksNewerOnes) {
  std::string path = gw::test::SourceDir() + "/scenarios/legacy-r470.json";
  RunResult r = RunClient(LegacySimLibrary(), path, {});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto got = ParseKeyValues(r.out);
  EXPECT_EQ(got.at("init"), "SUCCESS");
  EXPECT_EQ(got.at("driver.version"), "470.239.06");
  // Missing symbols: only those queries are unavailable.
  EXPECT_EQ(got.at("gpu0.compute"), "NO_SYMBOL");
  EXPECT_EQ(got.at("gpu0.graphics"), "NO_SYMBOL");
  EXPECT_EQ(got.at("gpu0.memory_v2"), "NO_SYMBOL");
  EXPECT_EQ(got.at("gpu0.remapped_rows"), "NO_SYMBOL");
  EXPECT_EQ(got.at("gpu0.clock_event_reasons"), "NO_SYMBOL");
  EXPECT_EQ(got.at("gpu0.clock_event_reasons_supported"), "NO_SYMBOL");
  EXPECT_EQ(got.at("gpu0.pcie.gen_gpu_max"), "NO_SYMBOL");
  // What nvtop needs was there in R470: the symbols answer (the scenario leaves the values out).
  EXPECT_EQ(got.at("gpu0.encoder"), "NOT_SUPPORTED");
  EXPECT_EQ(got.at("gpu0.pcie.tx_kb_s"), "NOT_SUPPORTED");
  // Everything older answers.
  EXPECT_EQ(got.at("gpu0.compute_v1.count"), "1");
  EXPECT_EQ(got.at("gpu0.compute_v1.0.pid"), "310771");
  EXPECT_EQ(got.at("gpu0.compute_v1.0.used"), std::to_string(16384ull << 20));
  EXPECT_EQ(got.at("gpu0.compute_v2.0.pid"), "310771");
  EXPECT_EQ(got.at("gpu0.memory.total"), std::to_string(32768ull << 20));
  EXPECT_EQ(got.at("gpu0.clock_throttle_reasons"), "0x0");
  EXPECT_EQ(got.at("gpu0.pcie.gen_max"), "3");
  EXPECT_EQ(got.at("gpu0.name"), "Tesla V100-SXM2-32GB");
}

TEST(SimClientTest, BrokenScenarioFailsInitWithOneStderrLine) {
  struct Case {
    std::string file;
    std::string text;
    std::string problem;  // Expected in the line.
  };
  std::vector<Case> cases = {
      {"syntax.json", "{\"gpus\": [", "not valid JSON"},
      {"type.json", "{\"gpus\": [{\"memory\": {\"total_mib\": \"80\"}}]}",
       "gpus[0].memory.total_mib: expected a non-negative integer"},
      {"mode.json", "{\"gpus\": [{\"compute_mode\": \"shared\"}]}",
       "gpus[0].compute_mode: unknown value \"shared\""},
  };
  for (const Case& c : cases) {
    std::string path = WriteTempFile(c.file, c.text);
    RunResult r = RunClient(SimLibrary(), path, {});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    auto got = ParseKeyValues(r.out);
    EXPECT_EQ(got.at("init"), "UNKNOWN");
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_EQ(r.err.rfind("gpuwarden-sim: " + path + ": ", 0), 0u) << r.err;
    EXPECT_NE(r.err.find(c.problem), std::string::npos) << r.err;
  }
  RunResult missing = RunClient(SimLibrary(), "/nonexistent/x.json", {});
  EXPECT_EQ(ParseKeyValues(missing.out).at("init"), "UNKNOWN");
  EXPECT_EQ(missing.err,
            "gpuwarden-sim: /nonexistent/x.json: cannot open: No such file or directory\n");
  RunResult unset = RunProgram({SimClient(), SimLibrary()}, {}, {"GPUWARDEN_SIM_SCENARIO"});
  EXPECT_EQ(ParseKeyValues(unset.out).at("init"), "UNKNOWN");
  EXPECT_EQ(unset.err.rfind("gpuwarden-sim: GPUWARDEN_SIM_SCENARIO: not set", 0), 0u) << unset.err;
}

TEST(SimClientTest, EventsArriveThroughTheAbi) {
  std::string path = gw::test::SourceDir() + "/scenarios/xid79-live.json";
  // t = 1 s now; the Xid 79 on GPU 1 is due at 2 s, after the client registered.
  RunResult r =
      RunClient(SimLibrary(), path, {{"GPUWARDEN_SIM_START", std::to_string(UnixNow() - 1)}},
                {"--events", "3"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto got = ParseKeyValues(r.out);
  EXPECT_EQ(got.at("events.count"), "1");
  EXPECT_EQ(got.at("event.0.gpu"), "1");
  EXPECT_EQ(got.at("event.0.type"), "0x8");
  EXPECT_EQ(got.at("event.0.data"), "79");
  EXPECT_EQ(got.at("events.free"), "SUCCESS");
}

}  // namespace
}  // namespace gw::sim::test
