#include "e2e/scenario_expect.h"
#include "core/units.h"
#include "test_paths.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <stdexcept>

namespace gw::test {
namespace {

using nlohmann::json;
void DeepMerge(json& into, const json& from) {
  for (auto it = from.begin(); it != from.end(); ++it) {
    if (into.contains(it.key()) && into[it.key()].is_object() && it.value().is_object()) {
      DeepMerge(into[it.key()], it.value());
    } else if (!into.contains(it.key())) {
      into[it.key()] = it.value();
    }
  }
}

// Sets a dotted key ("memory.used_mib") in a GPU object.
void SetDotted(json& gpu, const std::string& dotted, const json& value) {
  json* node = &gpu;
  size_t start = 0;
  while (true) {
    size_t dot = dotted.find('.', start);
    std::string part = dotted.substr(start, dot == std::string::npos ? dot : dot - start);
    if (dot == std::string::npos) {
      (*node)[part] = value;
      return;
    }
    if (!(*node)[part].is_object()) (*node)[part] = json::object();
    node = &(*node)[part];
    start = dot + 1;
  }
}

template <typename T>
std::optional<T> Get(const json& obj, const std::string& a, const std::string& b = "") {
  const json* node = &obj;
  if (!node->contains(a)) return std::nullopt;
  node = &(*node)[a];
  if (!b.empty()) {
    if (!node->is_object() || !node->contains(b)) return std::nullopt;
    node = &(*node)[b];
  }
  if (node->is_null()) return std::nullopt;
  return node->get<T>();
}

}  // namespace

ExpectedServer LoadExpectedServer(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot open " + path);
  json scenario = json::parse(in);
  ExpectedServer server;
  server.name = scenario.value("name", std::filesystem::path(path).stem().string());
  if (scenario.contains("driver")) {
    const json& d = scenario["driver"];
    server.driver_failure = Get<std::string>(d, "failure");
    server.driver_version = Get<std::string>(d, "version");
    server.init_block_s = d.value("init_block_s", 0.0);
  }
  json defaults = scenario.value("defaults", json::object());
  std::vector<json> gpus;
  for (const json& g : scenario.value("gpus", json::array())) {
    json merged = g;
    DeepMerge(merged, defaults);
    gpus.push_back(merged);
  }
  for (const json& entry : scenario.value("timeline", json::array())) {
    if (entry.value("at_s", 1.0) > 0) continue;
    if (!entry.contains("gpu") || entry["gpu"].is_null()) continue;
    size_t i = entry["gpu"].get<size_t>();
    if (i >= gpus.size()) continue;
    for (auto it = entry["set"].begin(); it != entry["set"].end(); ++it) {
      SetDotted(gpus[i], it.key(), it.value());
    }
  }

  for (size_t i = 0; i < gpus.size(); ++i) {
    const json& g = gpus[i];
    ExpectedGpu e;
    e.index = static_cast<unsigned>(i);
    e.name = Get<std::string>(g, "name");
    e.uuid = Get<std::string>(g, "uuid");
    e.pci_bus_id = Get<std::string>(g, "pci_bus_id");
    e.lost = g.value("lost", false);
    e.handle_error = Get<std::string>(g, "handle_error");
    e.block_s = g.value("block_s", 0.0);
    e.utilization_pct = Get<unsigned>(g, "utilization", "gpu");
    e.temperature_c = Get<int>(g, "temperature_c");
    if (Get<unsigned>(g, "utilization", "memory")) e.utilization_rates_gpu = e.utilization_pct;
    e.encoder_pct = Get<unsigned>(g, "utilization", "encoder");
    e.decoder_pct = Get<unsigned>(g, "utilization", "decoder");
    e.pcie_tx_kb_s = Get<unsigned>(g, "pcie", "tx_kb_s");
    e.pcie_rx_kb_s = Get<unsigned>(g, "pcie", "rx_kb_s");
    auto milli = [&g](const char* key) -> std::optional<unsigned> {
      auto w = Get<double>(g, key);
      if (!w) return std::nullopt;
      return static_cast<unsigned>(std::llround(*w * 1000.0));
    };
    e.power_mw = milli("power_w");
    e.power_limit_mw = milli("power_limit_w");
    e.pci_complete = Get<std::string>(g, "pci_bus_id") && Get<std::string>(g, "pci_device_id") &&
                     Get<std::string>(g, "pci_subsystem_id");
    e.has_processes = g.contains("processes") && g["processes"].is_array();
    uint64_t process_mib = 0;
    for (const json& p : g.value("processes", json::array())) {
      ExpectedProcess ep;
      ep.pid_spec = p["pid"].is_string() ? p["pid"].get<std::string>()
                                         : std::to_string(p["pid"].get<long long>());
      if (ep.pid_spec.rfind("env:", 0) == 0) server.pid_env_names.insert(ep.pid_spec.substr(4));
      ep.type = p.value("type", "compute");
      ep.sm_pct = Get<unsigned>(p, "sm_pct");
      if (auto mib = Get<uint64_t>(p, "used_mib")) {
        ep.used_bytes = *mib * kMiB;
        process_mib += *mib;
      }
      e.processes.push_back(ep);
    }
    auto total = Get<uint64_t>(g, "memory", "total_mib");
    auto used = Get<uint64_t>(g, "memory", "used_mib");
    auto reserved = Get<uint64_t>(g, "memory", "reserved_mib").value_or(0);
    bool from_processes = g.contains("memory") && g["memory"].is_object() &&
                          g["memory"].value("used_from_processes", false);
    if (used && from_processes) *used += process_mib;
    if (total) e.total_bytes = *total * kMiB;
    if (Get<uint64_t>(g, "memory", "reserved_mib")) e.reserved_bytes = reserved * kMiB;
    if (used) e.used_bytes = *used * kMiB;
    if (total && used) e.free_bytes = (*total - reserved - *used) * kMiB;
    server.gpus.push_back(e);
  }
  return server;
}

std::vector<std::string> ShippedScenarios() {
  std::vector<std::string> out;
  for (const auto& entry :
       std::filesystem::directory_iterator(gw::test::SourceDir() + "/scenarios")) {
    if (entry.path().extension() == ".json") out.push_back(entry.path().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace gw::test
