#include "nvml/nvml_collector.h"

#include <algorithm>
#include <cstring>
#include <span>
#include <utility>

#include <fmt/format.h>

#include "nvml/process_info.h"

namespace gw::nvml {
namespace {

// What Call returns when it did not call (stopped, or the GPU is lost). Not an
// NVML code, so no caller can mistake it for an answer.
constexpr nvmlReturn_t kSkipped = -1;

// Retries when a process list grows between the sizing call and the read.
constexpr int kListAttempts = 3;
// Extra room for processes that start between those two calls.
constexpr unsigned kListSlack = 8;
// More entries than any driver lists is a garbage count: never allocate for it.
constexpr unsigned kMaxListEntries = 1u << 16;
// Likewise for the GPU count (NVML handles at most a few dozen per host).
constexpr unsigned kMaxGpus = 1024;

std::string FromBuffer(const char* buffer, size_t size) {
  return std::string(buffer, strnlen(buffer, size));
}

Opt<uint64_t> KnownBytes(unsigned long long value) {
  if (value == NVML_VALUE_NOT_AVAILABLE_ULL) return std::nullopt;
  return value;
}

Opt<unsigned> KnownInstance(unsigned value) {
  if (value == NVML_VALUE_NOT_AVAILABLE_UINT) return std::nullopt;
  return value;
}

Opt<ComputeMode> ToComputeMode(nvmlComputeMode_t mode) {
  switch (mode) {
    case NVML_COMPUTEMODE_DEFAULT:
      return ComputeMode::kDefault;
    case NVML_COMPUTEMODE_EXCLUSIVE_THREAD:
      return ComputeMode::kExclusiveThread;
    case NVML_COMPUTEMODE_PROHIBITED:
      return ComputeMode::kProhibited;
    case NVML_COMPUTEMODE_EXCLUSIVE_PROCESS:
      return ComputeMode::kExclusiveProcess;
    default:
      return std::nullopt;
  }
}

Opt<TopologyLevel> ToTopologyLevel(nvmlGpuTopologyLevel_t level) {
  switch (level) {
    case NVML_TOPOLOGY_INTERNAL:
      return TopologyLevel::kInternal;
    case NVML_TOPOLOGY_SINGLE:
      return TopologyLevel::kSingle;
    case NVML_TOPOLOGY_MULTIPLE:
      return TopologyLevel::kMultiple;
    case NVML_TOPOLOGY_HOSTBRIDGE:
      return TopologyLevel::kHostBridge;
    case NVML_TOPOLOGY_NODE:
      return TopologyLevel::kNode;
    case NVML_TOPOLOGY_SYSTEM:
      return TopologyLevel::kSystem;
    default:
      return std::nullopt;
  }
}

}  // namespace

// Calls api_.name(args...) through Call, tagged with its entry point, so the
// entry point named in progress and messages cannot drift from the one called.
#define GW_NVML(name, ...) Call(EntryPoint::k##name, [&] { return api_.name(__VA_ARGS__); })

NvmlCollector::NvmlCollector(NvmlApi& api, CollectorOptions options, CallObserver* observer,
                             StaticFacts* statics)
    : api_(api), options_(options), observer_(observer), statics_(statics) {}

template <typename T, typename Read>
std::optional<T> NvmlCollector::Once(std::optional<T>* slot, Read&& read) {
  if (slot != nullptr && slot->has_value()) return *slot;
  std::optional<T> value = read();
  if (slot != nullptr && value) *slot = value;
  return value;
}

StaticFacts::Device* NvmlCollector::Kept(nvmlDevice_t h) {
  return statics_ != nullptr && h != nullptr ? &statics_->devices[h] : nullptr;
}

template <typename F>
nvmlReturn_t NvmlCollector::Call(EntryPoint ep, F&& call) {
  last_ep_ = ep;
  if (stopped_ || gpu_lost_) return kSkipped;
  if (observer_ != nullptr && !observer_->BeforeCall(ep, scope_gpu_, scope_other_gpu_)) {
    stopped_ = true;
    return kSkipped;
  }
  nvmlReturn_t result = call();
  if (observer_ != nullptr) observer_->AfterCall();
  return result;
}

ProbeError NvmlCollector::MakeError(nvmlReturn_t result) const {
  ProbeError error;
  error.source = "nvml";
  error.code = ErrorCodeFor(result);
  std::string where = api_.SymbolName(last_ep_);
  if (scope_gpu_ && scope_other_gpu_) {
    where += fmt::format(" on GPU {} and GPU {}", *scope_gpu_, *scope_other_gpu_);
  } else if (scope_gpu_) {
    where += fmt::format(" on GPU {}", *scope_gpu_);
  }
  error.message = fmt::format("{}: {}", where, ErrorText(api_, result));
  error.gpu_index = scope_gpu_;
  error.nvml_return = result;
  return error;
}

bool NvmlCollector::Ok(nvmlReturn_t result) {
  if (result == NVML_SUCCESS) return true;
  if (result == kSkipped || IsUnavailable(result)) return false;
  ProbeError error = MakeError(result);
  if (result == NVML_ERROR_GPU_IS_LOST && gpu_ != nullptr) {
    // Every further call on a lost GPU answers the same, slowly on real
    // hardware: stop asking it.
    gpu_lost_ = true;
    gpu_->unreachable = error;
  }
  errors_->push_back(std::move(error));
  return false;
}

bool NvmlCollector::Initialize(Snapshot* snapshot) {
  snapshot_ = snapshot;
  errors_ = &snapshot->errors;
  nvmlReturn_t result = GW_NVML(Init);
  if (result == NVML_SUCCESS) return true;
  if (result == NVML_ERROR_FUNCTION_NOT_FOUND) {
    // Loadable, but it exports neither nvmlInit_v2 nor nvmlInit.
    snapshot->errors.push_back(ProbeError{
        "nvml", "library_not_found",
        "exports neither nvmlInit_v2 nor nvmlInit: not an NVML library", std::nullopt, result});
  } else if (result != kSkipped) {
    snapshot->errors.push_back(
        InitFailure(result, ErrorText(api_, result), api_.SymbolName(EntryPoint::kInit)));
  }
  return false;
}

void NvmlCollector::Shutdown() {
  // Not through Call: it must run even when the observer stopped us, and
  // nothing waits on its answer.
  api_.Shutdown();
}

void NvmlCollector::Collect(Snapshot* snapshot) {
  if (!CollectSystem(snapshot)) return;
  const unsigned count = static_cast<unsigned>(snapshot->gpus.size());
  std::vector<GpuExtras> extras(count);
  for (unsigned i = 0; i < count && !stopped_; ++i) {
    CollectGpu(i, &snapshot->gpus[i], &extras[i], &snapshot->errors);
    if (!stopped_ && observer_ != nullptr) observer_->GpuDone(snapshot->gpus[i].index);
  }
  errors_ = &snapshot->errors;
  for (unsigned a = 0; a < count && !stopped_; ++a) {
    for (unsigned b = a + 1; b < count && !stopped_; ++b) {
      if (auto link = CollectTopology(snapshot->gpus[a], extras[a], snapshot->gpus[b], extras[b],
                                      &snapshot->errors)) {
        snapshot->topology.push_back(*link);
      }
    }
  }
  if (!stopped_) PlaceByIndex(snapshot, extras);
}

bool NvmlCollector::CollectSystem(Snapshot* snapshot) {
  snapshot_ = snapshot;
  errors_ = &snapshot->errors;
  ReadSystem();
  if (!snapshot->system.gpu_count || stopped_) return false;

  const unsigned count = *snapshot->system.gpu_count;
  if (count > kMaxGpus) {
    snapshot->errors.push_back(
        ProbeError{"nvml", "nvml_error",
                   fmt::format("{} reported {} GPUs; not believed",
                               api_.SymbolName(EntryPoint::kDeviceGetCount), count),
                   std::nullopt, std::nullopt});
    return false;
  }
  snapshot->gpus.resize(count);
  for (unsigned i = 0; i < count; ++i) snapshot->gpus[i].index = i;
  return count > 0;
}

void NvmlCollector::CollectGpu(unsigned position, Gpu* gpu_out, GpuExtras* extras,
                               std::vector<ProbeError>* errors) {
  errors_ = errors;
  // Position i of the enumeration is GPU i with NVML's _v2 calls; an older
  // NVML's (or a v1 symbol's) enumeration leaves out the GPUs this user may
  // not open, so every handle is asked for its own index and the GPU is
  // named by that. Positions whose handle failed cannot say: see
  // PlaceByIndex.
  Gpu& gpu = *gpu_out;
  gpu_ = &gpu;
  scope_gpu_ = position;
  gpu_lost_ = false;
  nvmlDevice_t handle = nullptr;
  nvmlReturn_t result = GW_NVML(DeviceGetHandleByIndex, position, &handle);
  if (result == NVML_SUCCESS) {
    unsigned own = position;
    if (GW_NVML(DeviceGetIndex, handle, &own) == NVML_SUCCESS && own < kMaxGpus) {
      extras->index_known = true;
      if (own != position) {
        gpu.index = own;
        scope_gpu_ = own;
      }
    }
    extras->handle = handle;
    ReadGpu(gpu, *extras);
  } else if (result != kSkipped) {
    // Any handle failure (lost, no permission, insufficient power, unknown)
    // leaves nothing to ask this GPU; the count still includes it.
    ProbeError error = MakeError(result);
    gpu.unreachable = error;
    errors_->push_back(std::move(error));
  }
  if (gpu_lost_) extras->handle = nullptr;
  gpu_ = nullptr;
  scope_gpu_.reset();
  gpu_lost_ = false;
}

void NvmlCollector::PlaceByIndex(Snapshot* snapshot, const std::vector<GpuExtras>& extras) {
  std::vector<Gpu>& gpus = snapshot->gpus;
  bool shifted = false;
  for (size_t p = 0; p < gpus.size(); ++p) shifted = shifted || gpus[p].index != p;
  if (!shifted) return;
  std::vector<bool> known(gpus.size(), false);
  for (size_t p = 0; p < gpus.size() && p < extras.size(); ++p) known[p] = extras[p].index_known;
  // A position that could not say its index (its handle failed) is one of the
  // GPUs between the one before it and the one after; which one cannot be
  // known, so it takes the first index free after the one before, and its
  // error says which place of the list it was.
  unsigned size = static_cast<unsigned>(gpus.size());
  for (const Gpu& g : gpus) size = std::max(size, g.index + 1);
  std::vector<bool> taken(size, false);
  for (size_t p = 0; p < gpus.size(); ++p) {
    if (known[p]) taken[gpus[p].index] = true;
  }
  unsigned after = 0;
  for (size_t p = 0; p < gpus.size(); ++p) {
    if (known[p]) {
      after = gpus[p].index + 1;
      continue;
    }
    unsigned index = after;
    while (index < size && taken[index]) ++index;
    if (index >= size) {
      taken.push_back(false);
      index = size++;
    }
    if (gpus[p].unreachable && index != p) {
      ProbeError& e = *gpus[p].unreachable;
      for (ProbeError& listed : snapshot->errors) {
        if (listed.gpu_index == p && listed.message == e.message) {
          listed.gpu_index = index;
          listed.message += fmt::format(" (place {} of NVML's list)", p);
        }
      }
      e.gpu_index = index;
      e.message += fmt::format(" (place {} of NVML's list)", p);
    }
    gpus[p].index = index;
    taken[index] = true;
    after = index + 1;
  }
  // The GPUs the enumeration left out: known to exist (an index was skipped),
  // not readable by this user.
  for (unsigned index = 0; index < size; ++index) {
    if (taken[index]) continue;
    Gpu missing;
    missing.index = index;
    missing.unreachable = ProbeError{
        "nvml", "no_permission",
        fmt::format("GPU {}: left out by {} (NVML lists only the GPUs this user may open)", index,
                    api_.SymbolName(EntryPoint::kDeviceGetHandleByIndex)),
        index, NVML_ERROR_NO_PERMISSION};
    snapshot->errors.push_back(*missing.unreachable);
    gpus.push_back(std::move(missing));
  }
  std::stable_sort(gpus.begin(), gpus.end(),
                   [](const Gpu& a, const Gpu& b) { return a.index < b.index; });
}

void NvmlCollector::ReadSystem() {
  SystemInfo& system = snapshot_->system;
  system.driver_version = Once(statics_ ? &statics_->driver_version : nullptr, [&] {
    char buffer[NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE] = {};
    return Ok(GW_NVML(SystemGetDriverVersion, buffer, sizeof(buffer)))
               ? std::optional<std::string>(FromBuffer(buffer, sizeof(buffer)))
               : std::nullopt;
  });
  system.nvml_version = Once(statics_ ? &statics_->nvml_version : nullptr, [&] {
    char buffer[NVML_SYSTEM_NVML_VERSION_BUFFER_SIZE] = {};
    return Ok(GW_NVML(SystemGetNVMLVersion, buffer, sizeof(buffer)))
               ? std::optional<std::string>(FromBuffer(buffer, sizeof(buffer)))
               : std::nullopt;
  });
  system.cuda_driver_version =
      Once(statics_ ? &statics_->cuda_driver_version : nullptr, [&]() -> std::optional<int> {
        int cuda = 0;
        nvmlReturn_t result = GW_NVML(SystemGetCudaDriverVersion, &cuda);
        if (result == NVML_SUCCESS ||
            (result != kSkipped && Ok(GW_NVML(SystemGetCudaDriverVersionV2, &cuda)))) {
          return cuda;
        }
        return std::nullopt;
      });
  unsigned count = 0;
  if (Ok(GW_NVML(DeviceGetCount, &count))) system.gpu_count = count;
}

void NvmlCollector::ReadGpu(Gpu& gpu, GpuExtras& extras) {
  nvmlDevice_t h = extras.handle;
  // Identity first, then what users look at most (memory, utilisation,
  // processes), so a probe cut short by its deadline still has those.
  StaticFacts::Device* kept = Kept(h);
  // What cannot change is asked once a session (StaticFacts).
  auto unsigned_once = [&](std::optional<unsigned> StaticFacts::Device::*field, auto&& read) {
    return Once(kept ? &(kept->*field) : nullptr, [&]() -> std::optional<unsigned> {
      unsigned value = 0;
      return read(&value) ? std::optional<unsigned>(value) : std::nullopt;
    });
  };
  gpu.name = Once(kept ? &kept->name : nullptr, [&] {
    char name[NVML_DEVICE_NAME_V2_BUFFER_SIZE] = {};
    return Ok(GW_NVML(DeviceGetName, h, name, sizeof(name)))
               ? std::optional<std::string>(FromBuffer(name, sizeof(name)))
               : std::nullopt;
  });
  gpu.uuid = Once(kept ? &kept->uuid : nullptr, [&] {
    char uuid[NVML_DEVICE_UUID_V2_BUFFER_SIZE] = {};
    return Ok(GW_NVML(DeviceGetUUID, h, uuid, sizeof(uuid)))
               ? std::optional<std::string>(FromBuffer(uuid, sizeof(uuid)))
               : std::nullopt;
  });
  if (auto pci = Once(kept ? &kept->pci : nullptr, [&]() -> std::optional<nvmlPciInfo_t> {
        nvmlPciInfo_t info{};
        return Ok(GW_NVML(DeviceGetPciInfo, h, &info)) ? std::optional(info) : std::nullopt;
      })) {
    gpu.pci_bus_id = FromBuffer(pci->busId, sizeof(pci->busId));
    gpu.pci_device_id = pci->pciDeviceId;
    extras.pci = PciAddress{pci->domain, pci->bus, pci->device};
  }
  gpu.serial = Once(kept ? &kept->serial : nullptr, [&] {
    char serial[NVML_DEVICE_SERIAL_BUFFER_SIZE] = {};
    return Ok(GW_NVML(DeviceGetSerial, h, serial, sizeof(serial)))
               ? std::optional<std::string>(FromBuffer(serial, sizeof(serial)))
               : std::nullopt;
  });
  gpu.minor_number = unsigned_once(&StaticFacts::Device::minor_number, [&](unsigned* v) {
    return Ok(GW_NVML(DeviceGetMinorNumber, h, v));
  });

  ReadMemory(gpu, h);
  nvmlUtilization_t utilization{};
  if (const nvmlReturn_t r = GW_NVML(DeviceGetUtilizationRates, h, &utilization); Ok(r)) {
    gpu.utilization_gpu_pct = utilization.gpu;
    gpu.utilization_memory_pct = utilization.memory;
  } else {
    gpu.utilization_not_supported = r == NVML_ERROR_NOT_SUPPORTED;
  }
  ReadProcesses(gpu, h);

  unsigned value = 0;
  if (Ok(GW_NVML(DeviceGetTemperature, h, NVML_TEMPERATURE_GPU, &value))) {
    gpu.temperature_c = static_cast<int>(value);
  }
  if (auto c = unsigned_once(&StaticFacts::Device::temperature_slowdown, [&](unsigned* v) {
        return Ok(
            GW_NVML(DeviceGetTemperatureThreshold, h, NVML_TEMPERATURE_THRESHOLD_SLOWDOWN, v));
      })) {
    gpu.temperature_slowdown_c = static_cast<int>(*c);
  }
  if (auto c = unsigned_once(&StaticFacts::Device::temperature_shutdown, [&](unsigned* v) {
        return Ok(
            GW_NVML(DeviceGetTemperatureThreshold, h, NVML_TEMPERATURE_THRESHOLD_SHUTDOWN, v));
      })) {
    gpu.temperature_shutdown_c = static_cast<int>(*c);
  }
  if (Ok(GW_NVML(DeviceGetFanSpeed, h, &value))) gpu.fan_speed_pct = value;
  if (Ok(GW_NVML(DeviceGetPowerUsage, h, &value))) gpu.power_draw_w = value / 1000.0;
  // The enforced limit is what clocks obey; the management limit is the same
  // on boards that do not report the former.
  nvmlReturn_t result = GW_NVML(DeviceGetEnforcedPowerLimit, h, &value);
  if (result == NVML_SUCCESS ||
      (IsUnavailable(result) && Ok(GW_NVML(DeviceGetPowerManagementLimit, h, &value)))) {
    gpu.power_limit_w = value / 1000.0;
  } else {
    Ok(result);
  }
  if (auto mw = unsigned_once(&StaticFacts::Device::power_default_limit_mw, [&](unsigned* v) {
        return Ok(GW_NVML(DeviceGetPowerManagementDefaultLimit, h, v));
      })) {
    gpu.power_default_limit_w = *mw / 1000.0;
  }

  struct ClockField {
    nvmlClockType_t type;
    Opt<unsigned> Clocks::*current;
    Opt<unsigned> Clocks::*max;
    std::optional<unsigned> StaticFacts::Device::*kept_max;
  };
  static constexpr ClockField kClockFields[] = {
      {NVML_CLOCK_GRAPHICS, &Clocks::graphics_mhz, &Clocks::max_graphics_mhz,
       &StaticFacts::Device::max_graphics_mhz},
      {NVML_CLOCK_SM, &Clocks::sm_mhz, &Clocks::max_sm_mhz, &StaticFacts::Device::max_sm_mhz},
      {NVML_CLOCK_MEM, &Clocks::memory_mhz, &Clocks::max_memory_mhz,
       &StaticFacts::Device::max_memory_mhz},
      {NVML_CLOCK_VIDEO, &Clocks::video_mhz, nullptr, nullptr},
  };
  for (const ClockField& field : kClockFields) {
    if (Ok(GW_NVML(DeviceGetClockInfo, h, field.type, &value))) gpu.clocks.*field.current = value;
  }
  for (const ClockField& field : kClockFields) {
    if (field.max == nullptr) continue;
    gpu.clocks.*field.max = unsigned_once(field.kept_max, [&](unsigned* v) {
      return Ok(GW_NVML(DeviceGetMaxClockInfo, h, field.type, v));
    });
  }
  nvmlPstates_t pstate = NVML_PSTATE_UNKNOWN;
  if (Ok(GW_NVML(DeviceGetPerformanceState, h, &pstate)) && pstate >= 0 && pstate <= 15) {
    gpu.pstate = static_cast<unsigned>(pstate);
  }
  unsigned long long reasons = 0;
  if (Ok(GW_NVML(DeviceGetCurrentClocksEventReasons, h, &reasons))) {
    gpu.clock_event_reasons = reasons;
  }
  gpu.clock_event_reasons_supported =
      Once(kept ? &kept->clock_event_reasons_supported : nullptr,
           [&]() -> std::optional<unsigned long long> {
             unsigned long long supported = 0;
             return Ok(GW_NVML(DeviceGetSupportedClocksEventReasons, h, &supported))
                        ? std::optional(supported)
                        : std::nullopt;
           });

  nvmlEnableState_t state = NVML_FEATURE_DISABLED;
  if (Ok(GW_NVML(DeviceGetPersistenceMode, h, &state))) {
    gpu.persistence_mode = state == NVML_FEATURE_ENABLED;
  }
  nvmlComputeMode_t mode = NVML_COMPUTEMODE_DEFAULT;
  if (Ok(GW_NVML(DeviceGetComputeMode, h, &mode))) gpu.compute_mode = ToComputeMode(mode);
  unsigned mig_current = 0, mig_pending = 0;
  if (Ok(GW_NVML(DeviceGetMigMode, h, &mig_current, &mig_pending))) {
    gpu.mig_mode_current = mig_current == NVML_DEVICE_MIG_ENABLE;
    gpu.mig_mode_pending = mig_pending == NVML_DEVICE_MIG_ENABLE;
  }

  ReadHealth(gpu, h);
  ReadPcie(gpu, h);
  ReadNvLinks(gpu, extras);
}

void NvmlCollector::ReadMemory(Gpu& gpu, nvmlDevice_t h) {
  nvmlMemory_v2_t memory{};
  memory.version = nvmlMemory_v2;
  nvmlReturn_t result = GW_NVML(DeviceGetMemoryInfoV2, h, &memory);
  if (result == NVML_SUCCESS) {
    gpu.memory.total_bytes = memory.total;
    gpu.memory.reserved_bytes = memory.reserved;
    gpu.memory.free_bytes = memory.free;
    gpu.memory.used_bytes = memory.used;
    return;
  }
  // Drivers before R510 lack v2; some answer a version they do not know with
  // ARGUMENT_VERSION_MISMATCH. v1 folds `reserved` into `used`.
  if (IsUnavailable(result) || result == NVML_ERROR_ARGUMENT_VERSION_MISMATCH) {
    nvmlMemory_t v1{};
    if (Ok(GW_NVML(DeviceGetMemoryInfo, h, &v1))) {
      gpu.memory.total_bytes = v1.total;
      gpu.memory.free_bytes = v1.free;
      gpu.memory.used_bytes = v1.used;
    }
    return;
  }
  Ok(result);
}

NvmlCollector::ProcessList NvmlCollector::ReadProcessList(nvmlDevice_t h, bool graphics) {
  ProcessList list;
  auto call = [&](unsigned* count, nvmlProcessInfo_t* infos) {
    return graphics ? GW_NVML(DeviceGetGraphicsRunningProcesses, h, count, infos)
                    : GW_NVML(DeviceGetComputeRunningProcesses, h, count, infos);
  };
  unsigned needed = 0;
  nvmlReturn_t result = call(&needed, nullptr);
  if (result == NVML_ERROR_FUNCTION_NOT_FOUND) return ReadProcessListV1(h, graphics);
  if (result == NVML_SUCCESS && needed == 0) {
    list.read = true;
    return list;
  }
  // The buffer is uint64_t-backed for alignment and sized for the largest
  // stride the guard decodes, since the driver may write more than 24 bytes
  // per entry (process_info.h).
  std::vector<uint64_t> storage;
  for (int attempt = 0; attempt < kListAttempts; ++attempt) {
    if (result != NVML_SUCCESS && result != NVML_ERROR_INSUFFICIENT_SIZE) break;
    if (needed > kMaxListEntries) break;
    const unsigned capacity = needed + kListSlack;
    const size_t bytes = static_cast<size_t>(capacity) * kMaxProcessInfoStride;
    storage.assign(bytes / sizeof(uint64_t), 0);
    std::memset(storage.data(), kProcessInfoSentinel, bytes);
    unsigned count = capacity;
    result = call(&count, reinterpret_cast<nvmlProcessInfo_t*>(storage.data()));
    if (result == NVML_ERROR_INSUFFICIENT_SIZE) {
      needed = std::max(count, capacity * 2);
      continue;
    }
    if (result != NVML_SUCCESS) break;
    auto decoded = DecodeProcessInfoBuffer(
        std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(storage.data()), bytes),
        std::min(count, capacity), kProcessInfoSentinel);
    if (!decoded.ok()) {
      errors_->push_back(ProbeError{"nvml", decoded.error().code,
                                    fmt::format("{} on GPU {}: {}", api_.SymbolName(last_ep_),
                                                scope_gpu_.value_or(0), decoded.error().message),
                                    scope_gpu_, std::nullopt});
      list.failed = true;
      return list;
    }
    for (const RawProcessInfo& raw : decoded->entries) {
      list.processes.push_back({raw.pid, KnownBytes(raw.used_gpu_memory),
                                KnownInstance(raw.gpu_instance_id),
                                KnownInstance(raw.compute_instance_id)});
    }
    list.read = true;
    return list;
  }
  if (result == NVML_ERROR_INSUFFICIENT_SIZE) {
    // The list kept growing faster than we could size it.
    Ok(NVML_ERROR_INSUFFICIENT_SIZE);
    list.failed = true;
  } else if (!Ok(result) && result != kSkipped && !IsUnavailable(result)) {
    list.failed = true;
  }
  return list;
}

NvmlCollector::ProcessList NvmlCollector::ReadProcessListV1(nvmlDevice_t h, bool graphics) {
  ProcessList list;
  auto call = [&](unsigned* count, nvmlProcessInfo_v1_t* infos) {
    return graphics ? GW_NVML(DeviceGetGraphicsRunningProcessesV1, h, count, infos)
                    : GW_NVML(DeviceGetComputeRunningProcessesV1, h, count, infos);
  };
  unsigned needed = 0;
  nvmlReturn_t result = call(&needed, nullptr);
  if (result == NVML_SUCCESS && needed == 0) {
    list.read = true;
    return list;
  }
  std::vector<nvmlProcessInfo_v1_t> infos;
  for (int attempt = 0; attempt < kListAttempts; ++attempt) {
    if (result != NVML_SUCCESS && result != NVML_ERROR_INSUFFICIENT_SIZE) break;
    if (needed > kMaxListEntries) break;
    const unsigned capacity = needed + kListSlack;
    infos.assign(capacity, nvmlProcessInfo_v1_t{});
    unsigned count = capacity;
    result = call(&count, infos.data());
    if (result == NVML_ERROR_INSUFFICIENT_SIZE) {
      needed = std::max(count, capacity * 2);
      continue;
    }
    if (result != NVML_SUCCESS) break;
    for (unsigned i = 0; i < std::min(count, capacity); ++i) {
      if (!IsPlausiblePid(infos[i].pid)) continue;
      list.processes.push_back(
          {infos[i].pid, KnownBytes(infos[i].usedGpuMemory), std::nullopt, std::nullopt});
    }
    list.read = true;
    return list;
  }
  if (result == NVML_ERROR_INSUFFICIENT_SIZE) {
    Ok(NVML_ERROR_INSUFFICIENT_SIZE);
    list.failed = true;
  } else if (!Ok(result) && result != kSkipped && !IsUnavailable(result)) {
    list.failed = true;
  }
  return list;
}

void NvmlCollector::ReadProcesses(Gpu& gpu, nvmlDevice_t h) {
  ProcessList compute = ReadProcessList(h, /*graphics=*/false);
  ProcessList graphics = ReadProcessList(h, /*graphics=*/true);
  gpu.processes_known = (compute.read || graphics.read) && !compute.failed && !graphics.failed;

  // Merge by PID: a process with both kinds of context is listed twice.
  // Sorted (PID, place) pairs rather than a map: this runs for every GPU at
  // every look, and a map allocates a node per process.
  struct Listed {
    const ListedProcess* p;
    GpuProcessType type;
  };
  std::vector<Listed> all;
  all.reserve(compute.processes.size() + graphics.processes.size());
  for (const ListedProcess& p : compute.processes) all.push_back({&p, GpuProcessType::kCompute});
  for (const ListedProcess& p : graphics.processes) all.push_back({&p, GpuProcessType::kGraphics});
  std::vector<std::pair<uint32_t, uint32_t>> by_pid(all.size());
  for (size_t i = 0; i < all.size(); ++i) by_pid[i] = {all[i].p->pid, static_cast<uint32_t>(i)};
  std::sort(by_pid.begin(), by_pid.end());
  // Each listing folded into the PID's first, which keeps its place.
  std::vector<uint32_t> first_of(all.size());
  for (size_t i = 0; i < by_pid.size(); ++i) {
    first_of[by_pid[i].second] = i > 0 && by_pid[i - 1].first == by_pid[i].first
                                     ? first_of[by_pid[i - 1].second]
                                     : by_pid[i].second;
  }
  std::vector<GpuProcess> merged;
  merged.reserve(all.size());
  std::vector<uint32_t> merged_at(all.size());
  for (size_t i = 0; i < all.size(); ++i) {
    const ListedProcess& p = *all[i].p;
    if (first_of[i] != i) {
      GpuProcess& existing = merged[merged_at[first_of[i]]];
      if (existing.type != all[i].type) existing.type = GpuProcessType::kComputeAndGraphics;
      if (p.used_bytes &&
          (!existing.used_memory_bytes || *p.used_bytes > *existing.used_memory_bytes)) {
        existing.used_memory_bytes = p.used_bytes;
      }
      continue;
    }
    merged_at[i] = static_cast<uint32_t>(merged.size());
    GpuProcess process;
    process.pid = static_cast<pid_t>(p.pid);
    process.type = all[i].type;
    process.used_memory_bytes = p.used_bytes;
    process.gpu_instance_id = p.gpu_instance_id;
    process.compute_instance_id = p.compute_instance_id;
    merged.push_back(std::move(process));
  }
  gpu.processes = std::move(merged);
  if (gpu.processes.empty()) return;

  // Per-process SM/memory utilisation. A PID missing from samples the driver
  // does give means it did not run in that window: 0 % (nvitop's rule). No
  // samples at all (unsupported, e.g. MIG) leaves it unknown.
  std::vector<nvmlProcessUtilizationSample_t> samples;
  unsigned count = 0;
  const unsigned long long since = options_.process_samples_since_us;
  nvmlReturn_t result = GW_NVML(DeviceGetProcessUtilization, h, nullptr, &count, since);
  bool have_samples = result == NVML_ERROR_NOT_FOUND || (result == NVML_SUCCESS && count == 0);
  for (int attempt = 0; attempt < kListAttempts && !have_samples; ++attempt) {
    if (result != NVML_SUCCESS && result != NVML_ERROR_INSUFFICIENT_SIZE) break;
    if (count > kMaxListEntries) break;
    const unsigned capacity = count + kListSlack;
    samples.assign(capacity, nvmlProcessUtilizationSample_t{});
    count = capacity;
    result = GW_NVML(DeviceGetProcessUtilization, h, samples.data(), &count, since);
    if (result == NVML_SUCCESS) {
      samples.resize(std::min(count, capacity));
      have_samples = true;
    } else if (result == NVML_ERROR_NOT_FOUND) {
      samples.clear();
      have_samples = true;
    } else if (result == NVML_ERROR_INSUFFICIENT_SIZE) {
      count = std::max(count, capacity * 2);
    }
  }
  if (!have_samples) {
    if (result != NVML_ERROR_INSUFFICIENT_SIZE) Ok(result);
    return;
  }
  // The driver keeps several samples per process; the newest wins: by PID,
  // the newest first.
  // (Stable: of two samples of one time, the first listed wins, as before.)
  std::stable_sort(samples.begin(), samples.end(), [](const auto& a, const auto& b) {
    return a.pid != b.pid ? a.pid < b.pid : a.timeStamp > b.timeStamp;
  });
  for (GpuProcess& process : gpu.processes) {
    const auto pid = static_cast<unsigned>(process.pid);
    auto it = std::lower_bound(samples.begin(), samples.end(), pid,
                               [](const auto& sample, unsigned p) { return sample.pid < p; });
    const bool found = it != samples.end() && it->pid == pid;
    process.sm_util_pct = found ? it->smUtil : 0u;
    process.mem_util_pct = found ? it->memUtil : 0u;
  }
}

void NvmlCollector::ReadHealth(Gpu& gpu, nvmlDevice_t h) {
  nvmlEnableState_t current = NVML_FEATURE_DISABLED, pending = NVML_FEATURE_DISABLED;
  if (Ok(GW_NVML(DeviceGetEccMode, h, &current, &pending))) {
    gpu.ecc.mode_current = current == NVML_FEATURE_ENABLED;
    gpu.ecc.mode_pending = pending == NVML_FEATURE_ENABLED;
  }
  struct EccField {
    nvmlMemoryErrorType_t type;
    nvmlEccCounterType_t counter;
    Opt<uint64_t> EccInfo::*field;
  };
  static constexpr EccField kEccFields[] = {
      {NVML_MEMORY_ERROR_TYPE_CORRECTED, NVML_VOLATILE_ECC, &EccInfo::volatile_corrected},
      {NVML_MEMORY_ERROR_TYPE_UNCORRECTED, NVML_VOLATILE_ECC, &EccInfo::volatile_uncorrected},
      {NVML_MEMORY_ERROR_TYPE_CORRECTED, NVML_AGGREGATE_ECC, &EccInfo::aggregate_corrected},
      {NVML_MEMORY_ERROR_TYPE_UNCORRECTED, NVML_AGGREGATE_ECC, &EccInfo::aggregate_uncorrected},
  };
  for (const EccField& f : kEccFields) {
    unsigned long long errors = 0;
    if (Ok(GW_NVML(DeviceGetTotalEccErrors, h, f.type, f.counter, &errors))) {
      gpu.ecc.*f.field = errors;
    }
  }

  struct RetiredField {
    nvmlPageRetirementCause_t cause;
    Opt<uint64_t> RetiredPages::*field;
  };
  static constexpr RetiredField kRetiredFields[] = {
      {NVML_PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS, &RetiredPages::single_bit},
      {NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR, &RetiredPages::double_bit},
  };
  for (const RetiredField& f : kRetiredFields) {
    // Asked with no buffer: the count comes back with SUCCESS (none) or
    // INSUFFICIENT_SIZE (some).
    unsigned pages = 0;
    nvmlReturn_t result = GW_NVML(DeviceGetRetiredPages, h, f.cause, &pages, nullptr);
    if (result == NVML_SUCCESS || result == NVML_ERROR_INSUFFICIENT_SIZE) {
      gpu.retired_pages.*f.field = pages;
    } else {
      Ok(result);
    }
  }
  nvmlEnableState_t retirement_pending = NVML_FEATURE_DISABLED;
  if (Ok(GW_NVML(DeviceGetRetiredPagesPendingStatus, h, &retirement_pending))) {
    gpu.retired_pages.pending = retirement_pending == NVML_FEATURE_ENABLED;
  }

  unsigned correctable = 0, uncorrectable = 0, remap_pending = 0, failure = 0;
  if (Ok(GW_NVML(DeviceGetRemappedRows, h, &correctable, &uncorrectable, &remap_pending,
                 &failure))) {
    gpu.remapped_rows.correctable = correctable;
    gpu.remapped_rows.uncorrectable = uncorrectable;
    gpu.remapped_rows.pending = remap_pending != 0;
    gpu.remapped_rows.failure = failure != 0;
  }
}

void NvmlCollector::ReadPcie(Gpu& gpu, nvmlDevice_t h) {
  StaticFacts::Device* kept = Kept(h);
  auto once = [&](std::optional<unsigned> StaticFacts::Device::*field, auto&& read) {
    return Once(kept ? &(kept->*field) : nullptr, [&]() -> std::optional<unsigned> {
      unsigned value = 0;
      return read(&value) ? std::optional<unsigned>(value) : std::nullopt;
    });
  };
  unsigned value = 0;
  if (Ok(GW_NVML(DeviceGetCurrPcieLinkGeneration, h, &value))) gpu.pcie.link_gen_current = value;
  gpu.pcie.link_gen_max = once(&StaticFacts::Device::pcie_gen_max, [&](unsigned* v) {
    return Ok(GW_NVML(DeviceGetMaxPcieLinkGeneration, h, v));
  });
  gpu.pcie.link_gen_gpu_max = once(&StaticFacts::Device::pcie_gen_gpu_max, [&](unsigned* v) {
    return Ok(GW_NVML(DeviceGetGpuMaxPcieLinkGeneration, h, v));
  });
  if (Ok(GW_NVML(DeviceGetCurrPcieLinkWidth, h, &value))) gpu.pcie.link_width_current = value;
  gpu.pcie.link_width_max = once(&StaticFacts::Device::pcie_width_max, [&](unsigned* v) {
    return Ok(GW_NVML(DeviceGetMaxPcieLinkWidth, h, v));
  });
  if (Ok(GW_NVML(DeviceGetPcieReplayCounter, h, &value))) gpu.pcie.replay_counter = value;
}

void NvmlCollector::ReadNvLinks(Gpu& gpu, GpuExtras& extras) {
  nvmlDevice_t h = extras.handle;
  bool remote_known = true;
  for (unsigned link = 0; link < kMaxNvLinks; ++link) {
    nvmlEnableState_t active = NVML_FEATURE_DISABLED;
    nvmlReturn_t result = GW_NVML(DeviceGetNvLinkState, h, link, &active);
    // Past the GPU's last link the answer is INVALID_ARGUMENT (or
    // NOT_SUPPORTED): that ends the list, it is not an error.
    if (result == NVML_ERROR_INVALID_ARGUMENT || IsUnavailable(result)) break;
    if (!Ok(result)) break;
    gpu.nvlinks.push_back({link, active == NVML_FEATURE_ENABLED});
    if (active != NVML_FEATURE_ENABLED || !remote_known) continue;
    StaticFacts::Device* kept = Kept(h);
    if (kept != nullptr) {
      if (auto it = kept->nvlink_remotes.find(link); it != kept->nvlink_remotes.end()) {
        extras.nvlink_remotes.push_back({it->second.domain, it->second.bus, it->second.device});
        continue;
      }
    }
    nvmlPciInfo_t remote{};
    result = GW_NVML(DeviceGetNvLinkRemotePciInfo, h, link, &remote);
    if (result == NVML_SUCCESS) {
      if (kept != nullptr) kept->nvlink_remotes[link] = remote;
      extras.nvlink_remotes.push_back({remote.domain, remote.bus, remote.device});
    } else if (result != NVML_ERROR_NOT_SUPPORTED) {
      // Missing from this library, or failing: stop asking for every link.
      // (NOT_SUPPORTED only means this link's far end is unknown.)
      Ok(result);
      remote_known = false;
    }
  }
}

std::optional<TopologyLink> NvmlCollector::CollectTopology(const Gpu& gpu_a, const GpuExtras& a,
                                                           const Gpu& gpu_b, const GpuExtras& b,
                                                           std::vector<ProbeError>* errors) {
  if (a.handle == nullptr || b.handle == nullptr || stopped_) return std::nullopt;
  errors_ = errors;
  auto links_between = [](const GpuExtras& from, const GpuExtras& to) {
    if (!to.pci) return 0u;
    return static_cast<unsigned>(
        std::count(from.nvlink_remotes.begin(), from.nvlink_remotes.end(), *to.pci));
  };
  scope_gpu_ = gpu_a.index;
  scope_other_gpu_ = gpu_b.index;
  nvmlGpuTopologyLevel_t level = NVML_TOPOLOGY_SYSTEM;
  const auto pair = std::make_pair(a.handle, b.handle);
  std::optional<nvmlGpuTopologyLevel_t> kept;
  if (statics_ != nullptr) {
    if (auto it = statics_->topology.find(pair); it != statics_->topology.end()) kept = it->second;
  }
  bool known_level = true;
  if (kept) {
    level = *kept;
  } else if (Ok(GW_NVML(DeviceGetTopologyCommonAncestor, a.handle, b.handle, &level))) {
    if (statics_ != nullptr) statics_->topology[pair] = level;
  } else {
    known_level = false;
  }
  scope_gpu_.reset();
  scope_other_gpu_.reset();
  Opt<TopologyLevel> known = known_level ? ToTopologyLevel(level) : std::nullopt;
  if (!known) return std::nullopt;
  TopologyLink link;
  link.gpu_a = gpu_a.index;
  link.gpu_b = gpu_b.index;
  link.level = *known;
  // Each side sees the same links; take the side that could name them.
  link.nvlinks = std::max(links_between(a, b), links_between(b, a));
  return link;
}

#undef GW_NVML

ProbeError InitFailure(nvmlReturn_t result, const std::string& error_text, const char* symbol) {
  ProbeError error;
  error.source = "nvml";
  error.code = ErrorCodeFor(result);
  error.nvml_return = result;
  switch (result) {
    case NVML_ERROR_DRIVER_NOT_LOADED:
      error.message =
          "Failed to initialize NVML: Driver Not Loaded (the NVIDIA kernel module is not "
          "loaded: check `lsmod | grep nvidia` and the kernel log)";
      break;
    case NVML_ERROR_LIB_RM_VERSION_MISMATCH:
      error.message =
          "Failed to initialize NVML: Driver/library version mismatch (the NVIDIA driver "
          "packages were most likely upgraded without a reboot; reboot, or reload the nvidia "
          "kernel modules, to load the matching kernel module)";
      break;
    case NVML_ERROR_NO_PERMISSION:
      error.message = fmt::format(
          "Failed to initialize NVML: {} (can this user open /dev/nvidiactl?)", error_text);
      break;
    default:
      error.message =
          fmt::format("Failed to initialize NVML: {} ({} returned {})", error_text, symbol, result);
      break;
  }
  return error;
}

}  // namespace gw::nvml
