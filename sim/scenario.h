// The simulator's model of a scenario file (docs/scenarios.md): a driver, GPUs,
// processes, topology, events and a timeline, validated and resolved into plain
// typed values once, when the library initialises.
//
// Contract: every optional value is std::nullopt exactly when the scenario
// leaves the field absent or null; the simulated NVML then answers
// NVML_ERROR_NOT_SUPPORTED for the query that reads it. Nothing here invents a
// value. The timeline is resolved ahead of time into one immutable state per
// change point, so serving a call is a binary search and some copying.
#ifndef GPUWARDEN_SIM_SCENARIO_H_
#define GPUWARDEN_SIM_SCENARIO_H_

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/result.h"

namespace gw::sim {

template <typename T>
using Opt = std::optional<T>;

// The most GPUs a scenario may describe (handles are slots of a static array).
inline constexpr unsigned kMaxGpus = 64;

enum class DriverFailure { kNone, kDriverNotLoaded, kVersionMismatch, kNoGpus };

struct DriverState {
  Opt<std::string> version;
  Opt<std::string> nvml_version;
  Opt<int> cuda_version;
  DriverFailure failure = DriverFailure::kNone;
  double init_block_s = 0;
  unsigned process_info_stride = 24;  // Bytes per _v3 process entry.
};

struct PciAddress {
  uint32_t domain = 0;
  uint32_t bus = 0;
  uint32_t device = 0;
  uint32_t function = 0;
  std::string bus_id;         // "00000000:19:00.0" (upper case, 8-digit domain).
  std::string bus_id_legacy;  // "0000:19:00.0".
};

// kMps: an MPS client, listed only by the GetMPSComputeRunningProcesses calls.
enum class ProcessType { kCompute, kGraphics, kComputeAndGraphics, kMps };

struct ProcessSpec {
  // The resolved PID; nullopt when `pid` is "env:NAME" and NAME is unset or not
  // a positive integer (the process is then not listed).
  Opt<pid_t> pid;
  std::string pid_env;  // NAME of "env:NAME"; empty for a literal PID.
  Opt<uint64_t> used_bytes;
  Opt<unsigned> sm_pct;  // A process-utilization sample exists iff sm_pct does.
  Opt<unsigned> mem_pct;
  unsigned enc_pct = 0;
  unsigned dec_pct = 0;
  ProcessType type = ProcessType::kCompute;
  bool while_alive = false;
  Opt<unsigned> gpu_instance_id;  // MIG only; absent → 0xFFFFFFFF on the ABI.
  Opt<unsigned> compute_instance_id;
};

struct NvLinkSpec {
  Opt<bool> active;
  Opt<PciAddress> remote;  // What the link leads to (a peer GPU or an NVSwitch).
  Opt<uint64_t> tx_kib;    // Data sent over the link since the driver loaded (KiB).
  Opt<uint64_t> rx_kib;    // Data received.
};

// Retired pages of one cause: their addresses (given, or synthesised from a count).
using PageList = Opt<std::vector<uint64_t>>;

// One GPU at one moment of the timeline.
struct GpuState {
  Opt<std::string> name;
  Opt<std::string> uuid;
  Opt<std::string> serial;
  Opt<PciAddress> pci;
  Opt<uint32_t> pci_device_id;
  Opt<uint32_t> pci_subsystem_id;
  Opt<unsigned> minor_number;

  Opt<uint64_t> memory_total_bytes;
  Opt<uint64_t> memory_used_bytes;
  Opt<uint64_t> memory_reserved_bytes;
  bool memory_used_from_processes = false;
  bool keeps_memory_after_exit = false;

  Opt<unsigned> utilization_gpu;
  Opt<unsigned> utilization_memory;
  Opt<unsigned> utilization_encoder;
  Opt<unsigned> utilization_decoder;
  Opt<unsigned> temperature_c;
  Opt<unsigned> temperature_slowdown_c;
  Opt<unsigned> temperature_shutdown_c;
  Opt<unsigned> memory_temperature_c;  // Field value NVML_FI_DEV_MEMORY_TEMP.
  Opt<unsigned> fan_pct;
  Opt<unsigned> power_mw;
  Opt<unsigned> power_limit_mw;
  Opt<unsigned> power_default_limit_mw;
  Opt<unsigned> power_min_limit_mw;  // GetPowerManagementLimitConstraints.
  Opt<unsigned> power_max_limit_mw;
  Opt<uint64_t> total_energy_mj;  // Since the driver loaded.
  Opt<uint64_t> bar1_total_bytes;
  Opt<uint64_t> bar1_used_bytes;
  Opt<int> cuda_cc_major;  // GetCudaComputeCapability.
  Opt<int> cuda_cc_minor;
  Opt<int> brand;               // nvmlBrandType_t value.
  Opt<unsigned> architecture;   // nvmlDeviceArchitecture_t value.
  Opt<bool> display_mode;       // A display can be connected.
  Opt<bool> display_active;     // A display is initialised on the GPU.
  Opt<unsigned> clocks_mhz[4];  // Indexed by nvmlClockType_t: graphics, sm, memory, video.
  Opt<unsigned> max_clocks_mhz[4];
  Opt<unsigned> pstate;
  Opt<bool> persistence_mode;
  Opt<int> compute_mode;  // nvmlComputeMode_t value.
  Opt<bool> mig_current;
  Opt<bool> mig_pending;
  Opt<bool> ecc_current;
  Opt<bool> ecc_pending;
  Opt<uint64_t> ecc_counts[2][2];  // [NVML_MEMORY_ERROR_TYPE_*][NVML_*_ECC].
  PageList retired_pages[2];       // [NVML_PAGE_RETIREMENT_CAUSE_*].
  Opt<bool> retired_pages_pending;
  Opt<unsigned> remapped_correctable;
  Opt<unsigned> remapped_uncorrectable;
  Opt<bool> remapped_pending;
  Opt<bool> remapped_failure;
  Opt<uint64_t> clock_event_reasons;
  Opt<uint64_t> clock_event_reasons_supported;
  Opt<unsigned> pcie_gen_current;
  Opt<unsigned> pcie_gen_max;
  Opt<unsigned> pcie_gen_gpu_max;
  Opt<unsigned> pcie_width_current;
  Opt<unsigned> pcie_width_max;
  Opt<unsigned> pcie_replay_counter;
  Opt<unsigned> pcie_tx_kb_s;  // GetPcieThroughput (KB/s over the last 20 ms).
  Opt<unsigned> pcie_rx_kb_s;
  Opt<std::vector<NvLinkSpec>> nvlinks;
  Opt<std::vector<ProcessSpec>> processes;
  Opt<uint64_t> supported_events;

  bool lost = false;
  int handle_error = 0;  // nvmlReturn_t for handle lookups; 0 = none.
  double block_s = 0;
};

struct EventSpec {
  double at_s = 0;
  uint64_t type = 0;  // One nvmlEventType bit.
  uint64_t data = 0;  // The Xid for XidCriticalError.
};

// A value that changes at given times: states[k] holds from at_s[k] on;
// states[0] is the base (at_s[0] = -infinity).
template <typename State>
struct Timeline {
  std::vector<double> at_s;
  std::vector<State> states;

  const State& At(double t) const;
};

struct GpuSpec {
  Timeline<GpuState> timeline;
  std::vector<EventSpec> events;  // Sorted by at_s.
};

struct Topology {
  Opt<int> default_level;                              // nvmlGpuTopologyLevel_t.
  std::map<std::pair<unsigned, unsigned>, int> pairs;  // Key: (lower, higher index).
};

struct Scenario {
  std::string source;  // The file, as named in messages.
  std::string name;
  std::string description;
  Timeline<DriverState> driver;
  std::vector<GpuSpec> gpus;
  Opt<Topology> topology;
};

// Reads an environment variable; returns nullopt when unset.
using EnvLookup = std::function<Opt<std::string>(const std::string&)>;

// The process environment.
Opt<std::string> RealEnv(const std::string& name);

// Parses and validates scenario text. `source` names the file in messages; `env`
// resolves "env:NAME" PIDs. On failure the error message is one line,
// "<problem>" with a JSON path (e.g. `gpus[2].memory.total_mib: expected ...`),
// without the file name; error codes are "malformed" (not JSON) and "invalid".
Result<Scenario> ParseScenario(const std::string& text, const std::string& source,
                               const EnvLookup& env);

// Reads and parses a file; a file that cannot be read gives code "not_found" or
// "unreadable".
Result<Scenario> LoadScenarioFile(const std::string& path, const EnvLookup& env);

// The addresses synthesised for retired pages given as a count (documented in
// docs/scenarios.md): cause 0 → 0x1000000 + i*0x1000, cause 1 → 0x2000000 + i*0x1000.
uint64_t SynthesisedPageAddress(int cause, uint64_t i);

// Parses "00000000:19:00.0" or "0000:19:00.0" (hex, any case).
Opt<PciAddress> ParsePciBusId(const std::string& text);

template <typename State>
const State& Timeline<State>::At(double t) const {
  // at_s[0] is -inf; find the last change point <= t.
  size_t lo = 0;
  size_t hi = at_s.size();
  while (hi - lo > 1) {
    size_t mid = (lo + hi) / 2;
    if (at_s[mid] <= t) {
      lo = mid;
    } else {
      hi = mid;
    }
  }
  return states[lo];
}

}  // namespace gw::sim

#endif  // GPUWARDEN_SIM_SCENARIO_H_
