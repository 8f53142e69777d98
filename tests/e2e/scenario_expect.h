// What a scenario file promises `gpuwarden status --json` will show, derived
// from the scenario itself (docs/scenarios.md) independently of the product's
// code, so a test can compare the two.
#ifndef GPUWARDEN_TESTS_E2E_SCENARIO_EXPECT_H_
#define GPUWARDEN_TESTS_E2E_SCENARIO_EXPECT_H_

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace gw::test {

struct ExpectedProcess {
  std::string pid_spec;  // "4242" or "env:NAME".
  std::optional<uint64_t> used_bytes;
  std::string type = "compute";    // As the scenario spells it.
  std::optional<unsigned> sm_pct;  // The process-utilization sample's SM percent.
};

struct ExpectedGpu {
  unsigned index = 0;
  std::optional<std::string> name, uuid, pci_bus_id;
  std::optional<uint64_t> total_bytes, used_bytes, free_bytes;
  std::optional<unsigned> utilization_pct;
  std::optional<int> temperature_c;
  // utilization.gpu as NVML answers it: only with utilization.memory beside it.
  std::optional<unsigned> utilization_rates_gpu;
  std::optional<unsigned> encoder_pct, decoder_pct;
  std::optional<unsigned> pcie_tx_kb_s, pcie_rx_kb_s;
  std::optional<uint64_t> reserved_bytes;
  std::optional<unsigned> power_mw, power_limit_mw;  // As the ABI carries them.
  bool pci_complete = false;   // pci_bus_id, pci_device_id and pci_subsystem_id: PciInfo answers.
  bool has_processes = false;  // `processes` present: the process calls answer.
  bool lost = false;
  std::optional<std::string> handle_error;
  double block_s = 0;
  std::vector<ExpectedProcess> processes;
};

struct ExpectedServer {
  std::string name;
  std::optional<std::string> driver_failure;
  std::optional<std::string> driver_version;
  double init_block_s = 0;
  std::vector<ExpectedGpu> gpus;
  std::set<std::string> pid_env_names;  // Every "env:NAME" used by a process.
};

// Reads a scenario (defaults merged into each GPU, timeline entries at t <= 0
// applied). Throws std::runtime_error on a file the test cannot read.
ExpectedServer LoadExpectedServer(const std::string& path);

// Every *.json under scenarios/, sorted.
std::vector<std::string> ShippedScenarios();

}  // namespace gw::test

#endif  // GPUWARDEN_TESTS_E2E_SCENARIO_EXPECT_H_
