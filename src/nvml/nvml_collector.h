// NvmlCollector: reads everything gpuwarden wants from NVML into a Snapshot —
// system versions, every GPU field by field, the process lists, NVLink and
// topology — through an NvmlApi, on the calling thread.
//
// Contract for values: a query answered NOT_SUPPORTED, FUNCTION_NOT_FOUND or
// NO_PERMISSION leaves its field nullopt (never 0) and is not an error. Any
// other failure also leaves the field nullopt and appends a ProbeError (source
// "nvml", code from ErrorCodeFor, message "<symbol> on GPU <i>: <NVML text>").
// GPUs are named by their own index (nvmlDeviceGetIndex), never by their
// position in the enumeration: an older NVML's enumeration leaves out the GPUs
// this user may not open, and those are then listed as unreachable
// (no_permission) at their index. A GPU whose handle cannot be had, or that
// answers GPU_IS_LOST, gets
// Gpu::unreachable (the same error is also in Snapshot::errors) and is not
// asked again; the other GPUs are still read.
//
// It never blocks by itself; the calls into NVML may (a wedged driver). The
// probe (probe.h) runs it on a worker thread and watches it through a
// CallObserver, which sees every call before it is made.
#ifndef GPUWARDEN_NVML_NVML_COLLECTOR_H_
#define GPUWARDEN_NVML_NVML_COLLECTOR_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/snapshot.h"
#include "nvml/entry_points.h"
#include "nvml/nvml_api.h"

namespace gw::nvml {

// NVLink indices probed per GPU, at most (the header constant grew 12 → 18 → 36).
inline constexpr unsigned kMaxNvLinks = 36;

struct CollectorOptions {
  // lastSeenTimeStamp for nvmlDeviceGetProcessUtilization (CPU µs): only
  // samples newer than this count. 0 = everything the driver still holds.
  uint64_t process_samples_since_us = 0;
};

// What NVML says that cannot change while it stays initialised: the driver's
// versions, and of each GPU (by handle) its identity, limits, the far ends of
// its NVLinks and its topology to the others. A session (probe.h) keeps one
// between its looks, so that a look asks the driver only for what moves —
// on real hardware every call is a trip into the kernel module, and these
// are a third of a look's. Only answers that succeeded are kept; the rest
// are asked again. Drop it whenever NVML is initialised again.
struct StaticFacts {
  struct Device {
    std::optional<std::string> name, uuid, serial;
    std::optional<nvmlPciInfo_t> pci;
    std::optional<unsigned> minor_number, temperature_slowdown, temperature_shutdown,
        power_default_limit_mw, max_graphics_mhz, max_sm_mhz, max_memory_mhz, pcie_gen_max,
        pcie_gen_gpu_max, pcie_width_max;
    std::optional<unsigned long long> clock_event_reasons_supported;
    std::map<unsigned, nvmlPciInfo_t> nvlink_remotes;  // By link.
  };
  std::map<nvmlDevice_t, Device> devices;
  std::map<std::pair<nvmlDevice_t, nvmlDevice_t>, nvmlGpuTopologyLevel_t> topology;
  std::optional<std::string> driver_version, nvml_version;
  std::optional<int> cuda_driver_version;
};

// Sees every NVML call the collector makes. The probe uses it to publish
// progress (it holds the snapshot's lock except while a call is in flight) and
// to name the call that did not return.
class CallObserver {
 public:
  virtual ~CallObserver() = default;
  // Before each call: the entry point and the GPU(s) it concerns. Returning
  // false stops the collector: this call and every later one are skipped
  // (except Shutdown).
  virtual bool BeforeCall(EntryPoint ep, std::optional<unsigned> gpu,
                          std::optional<unsigned> other_gpu) = 0;
  // After each call made.
  virtual void AfterCall() = 0;
  // Everything about GPU `index` has been read, or given up on.
  virtual void GpuDone(unsigned index) {}
};

class NvmlCollector {
 public:
  // `api`, `observer` and `statics` (may be null: every value asked for at
  // every look) must outlive the collector.
  NvmlCollector(NvmlApi& api, CollectorOptions options, CallObserver* observer = nullptr,
                StaticFacts* statics = nullptr);

  // nvmlInit (v2, falling back to v1). On failure appends the ProbeError of
  // InitFailure to snapshot->errors and returns false; NVML must then not be
  // shut down.
  bool Initialize(Snapshot* snapshot);

  // Reads system info, then GPU by GPU, then topology, into *snapshot.
  // REQUIRES: Initialize succeeded.
  void Collect(Snapshot* snapshot);

  // What topology and placement by index need from one GPU's reading.
  struct PciAddress {
    unsigned domain = 0, bus = 0, device = 0;
    bool operator==(const PciAddress&) const = default;
  };
  struct GpuExtras {
    nvmlDevice_t handle = nullptr;  // Null: no handle, or the GPU was lost.
    bool index_known = false;       // The GPU said its own index (nvmlDeviceGetIndex).
    std::optional<PciAddress> pci;
    std::vector<PciAddress> nvlink_remotes;  // Remote end of each active link, when known.
  };

  // Collect in parts, for the probe that reads each GPU on a thread of its
  // own (probe.h), so that one GPU whose calls hang costs only that GPU:
  // CollectSystem once, then CollectGpu for each position of the
  // enumeration, CollectTopology for pairs of positions read, and
  // PlaceByIndex once every GPU is read. Collect is these in that order.
  // A collector's call scope (which GPU a call concerns, a lost GPU) is its
  // own: the parts that may run at once run on collectors of their own.
  //
  // Reads the system facts and the GPU count into *snapshot and sizes
  // snapshot->gpus to the count, each GPU's index its position. False when
  // there is no GPU to read (none, no count, a count not believed, stopped).
  bool CollectSystem(Snapshot* snapshot);
  // Reads the GPU at enumeration `position` into *gpu (its index becomes its
  // own, when it says one) and what topology needs into *extras; its errors
  // go to *errors. Touches nothing else of any snapshot.
  void CollectGpu(unsigned position, Gpu* gpu, GpuExtras* extras, std::vector<ProbeError>* errors);
  // The topology link between two GPUs read by CollectGpu (a before b in the
  // enumeration), or nullopt when either has no handle or NVML did not say;
  // errors go to *errors.
  std::optional<TopologyLink> CollectTopology(const Gpu& gpu_a, const GpuExtras& a,
                                              const Gpu& gpu_b, const GpuExtras& b,
                                              std::vector<ProbeError>* errors);
  // When some GPU's index is not its position (an older NVML's enumeration):
  // orders snapshot->gpus by index and adds the GPUs the enumeration left out
  // as unreachable; otherwise does nothing. `extras` by position.
  void PlaceByIndex(Snapshot* snapshot, const std::vector<GpuExtras>& extras);

  // nvmlShutdown, balancing a successful Initialize. Made even after the
  // observer stopped the collector, so NVML's reference count stays right.
  void Shutdown();

  // True once the observer asked to stop.
  bool stopped() const { return stopped_; }

 private:
  struct ListedProcess {
    uint32_t pid = 0;
    std::optional<uint64_t> used_bytes;
    std::optional<unsigned> gpu_instance_id;
    std::optional<unsigned> compute_instance_id;
  };
  struct ProcessList {
    bool read = false;    // The list was read (possibly empty).
    bool failed = false;  // A real error (not "unsupported") was recorded.
    std::vector<ListedProcess> processes;
  };
  template <typename F>
  nvmlReturn_t Call(EntryPoint ep, F&& call);
  // True on SUCCESS. Otherwise records what the answer means (nothing for
  // "unavailable", unreachable for a lost GPU, a ProbeError for the rest).
  bool Ok(nvmlReturn_t result);
  ProbeError MakeError(nvmlReturn_t result) const;

  void ReadSystem();
  void ReadGpu(Gpu& gpu, GpuExtras& extras);
  void ReadMemory(Gpu& gpu, nvmlDevice_t h);
  void ReadProcesses(Gpu& gpu, nvmlDevice_t h);
  ProcessList ReadProcessList(nvmlDevice_t h, bool graphics);
  ProcessList ReadProcessListV1(nvmlDevice_t h, bool graphics);
  void ReadHealth(Gpu& gpu, nvmlDevice_t h);
  void ReadPcie(Gpu& gpu, nvmlDevice_t h);
  void ReadNvLinks(Gpu& gpu, GpuExtras& extras);
  // The kept answer in `slot` (null: none kept), else `read()`'s, kept
  // when it is a value.
  template <typename T, typename Read>
  static std::optional<T> Once(std::optional<T>* slot, Read&& read);
  // The kept facts of device `h`, or null.
  StaticFacts::Device* Kept(nvmlDevice_t h);

  NvmlApi& api_;
  CollectorOptions options_;
  CallObserver* observer_;
  StaticFacts* statics_;
  Snapshot* snapshot_ = nullptr;
  std::vector<ProbeError>* errors_ = nullptr;  // Where the errors of the calls go.

  // The scope of the calls being made, for messages and lost-GPU handling.
  Gpu* gpu_ = nullptr;
  std::optional<unsigned> scope_gpu_;
  std::optional<unsigned> scope_other_gpu_;
  EntryPoint last_ep_ = EntryPoint::kInit;
  bool gpu_lost_ = false;
  bool stopped_ = false;
};

// The ProbeError for nvmlInit answering `result` (text: NVML's error string).
// driver_not_loaded and version_mismatch messages start like nvidia-smi's
// ("Failed to initialize NVML: ...") and add the likely cause.
ProbeError InitFailure(nvmlReturn_t result, const std::string& error_text, const char* symbol);

}  // namespace gw::nvml

#endif  // GPUWARDEN_NVML_NVML_COLLECTOR_H_
