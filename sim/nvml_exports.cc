// The NVML C entry points of the simulated libnvidia-ml.so.1. Each one checks
// the library state and its arguments the way NVML does, then answers from the
// current session's scenario (engine.h). Everything else in the library is
// hidden (-fvisibility=hidden and the export maps).
#include <cmath>
#include <cstring>
#include <memory>
#include <thread>
#include <vector>

#include "nvml/nvml_abi.h"
#include "sim/engine.h"
#include "sim/scenario.h"

#define GW_NVML_EXPORT extern "C" __attribute__((visibility("default")))

namespace gw::sim {
namespace {

// Device handles are addresses of these bytes; a handle stays valid across
// shutdown and init (NVML clients may keep one).
unsigned char g_slots[kMaxGpus];

nvmlDevice_t HandleOf(unsigned index) { return reinterpret_cast<nvmlDevice_t>(&g_slots[index]); }

// The index behind a handle, or -1 for a pointer that is not one of ours.
int IndexOf(nvmlDevice_t device) {
  auto p = reinterpret_cast<uintptr_t>(device);
  auto base = reinterpret_cast<uintptr_t>(&g_slots[0]);
  if (p < base || p >= base + sizeof g_slots) return -1;
  return static_cast<int>(p - base);
}

// What a call on one GPU works with, after its checks passed.
struct GpuCall {
  std::shared_ptr<const Session> session;
  unsigned index = 0;
  const GpuState* state = nullptr;
};

// The common part of every call on a GPU given by index: blocks when the GPU
// is wedged (holding no lock), then fails when it is lost.
nvmlReturn_t EnterIndex(std::shared_ptr<const Session> session, unsigned index, GpuCall* call) {
  const GpuState* state = &session->GpuAt(index, session->Now());
  if (state->block_s > 0) {
    std::this_thread::sleep_for(
        std::chrono::duration<double>(state->block_s * session->block_scale()));
    // The library may have been shut down (or restarted) meanwhile.
    if (Simulator::Get().Current() != session) return NVML_ERROR_UNINITIALIZED;
    state = &session->GpuAt(index, session->Now());
  }
  if (state->lost) return NVML_ERROR_GPU_IS_LOST;
  call->session = std::move(session);
  call->index = index;
  call->state = state;
  return NVML_SUCCESS;
}

nvmlReturn_t Enter(nvmlDevice_t device, GpuCall* call) {
  auto session = Simulator::Get().Current();
  if (!session) return NVML_ERROR_UNINITIALIZED;
  int index = IndexOf(device);
  if (index < 0 || static_cast<unsigned>(index) >= session->gpu_count()) {
    return NVML_ERROR_INVALID_ARGUMENT;
  }
  return EnterIndex(std::move(session), static_cast<unsigned>(index), call);
}

template <typename T, typename V>
nvmlReturn_t Put(const Opt<V>& value, T* out) {
  if (out == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  if (!value) return NVML_ERROR_NOT_SUPPORTED;
  *out = static_cast<T>(*value);
  return NVML_SUCCESS;
}

nvmlReturn_t PutBool(const Opt<bool>& value, nvmlEnableState_t* out) {
  if (out == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  if (!value) return NVML_ERROR_NOT_SUPPORTED;
  *out = *value ? NVML_FEATURE_ENABLED : NVML_FEATURE_DISABLED;
  return NVML_SUCCESS;
}

nvmlReturn_t PutString(const Opt<std::string>& value, char* out, unsigned length) {
  if (out == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  if (!value) return NVML_ERROR_NOT_SUPPORTED;
  if (length < value->size() + 1) return NVML_ERROR_INSUFFICIENT_SIZE;
  std::memcpy(out, value->c_str(), value->size() + 1);
  return NVML_SUCCESS;
}

// Answers a GPU query with `read(call)`.
template <typename Fn>
nvmlReturn_t OnGpu(nvmlDevice_t device, Fn read) {
  GpuCall call;
  if (nvmlReturn_t r = Enter(device, &call); r != NVML_SUCCESS) return r;
  return read(call);
}

// NVML's versioned structs carry a version word that the caller sets:
// sizeof(struct) | (N << 24), nvml.h's NVML_STRUCT_VERSION. The library accepts
// exactly the words of the versions it knows and answers
// ARGUMENT_VERSION_MISMATCH to anything else: a bare N (the doc comments say
// "must be 2", and some clients believed them), a wrong size, a newer version.
template <typename Struct>
constexpr unsigned int StructVersion(unsigned int n) {
  return static_cast<unsigned int>(sizeof(Struct)) | (n << 24);
}
static_assert(StructVersion<nvmlMemory_v2_t>(2) == nvmlMemory_v2);

// nvmlBAR1Memory_t: 24 bytes.
struct Bar1Memory {
  unsigned long long bar1Total;
  unsigned long long bar1Free;
  unsigned long long bar1Used;
};
static_assert(sizeof(Bar1Memory) == 24, "nvmlBAR1Memory_t is 24 bytes");

// nvmlFieldValue_t: 40 bytes; `value` is a union of 8 bytes.
struct FieldValue {
  unsigned int fieldId;
  unsigned int scopeId;
  long long timestamp;  // CPU µs.
  long long latencyUsec;
  int valueType;  // nvmlValueType_t.
  nvmlReturn_t nvmlReturn;
  unsigned char value[8];
};
static_assert(sizeof(FieldValue) == 40, "nvmlFieldValue_t is 40 bytes");
static_assert(offsetof(FieldValue, value) == 32, "value at 32");

// nvmlTemperature_v1_t (nvmlDeviceGetTemperatureV): 12 bytes.
struct TemperatureV1 {
  unsigned int version;
  int sensorType;
  int temperature;
};
static_assert(StructVersion<TemperatureV1>(1) == 0x0100000Cu, "nvmlTemperature_v1");

// The pre-v3 nvmlPciInfo_t (nvmlDeviceGetPciInfo and _v2): 52 bytes.
struct PciInfoV2 {
  char busId[16];
  unsigned int domain;
  unsigned int bus;
  unsigned int device;
  unsigned int pciDeviceId;
  unsigned int pciSubSystemId;
  unsigned int reserved0;
  unsigned int reserved1;
  unsigned int reserved2;
  unsigned int reserved3;
};
static_assert(sizeof(PciInfoV2) == 52, "pre-v3 nvmlPciInfo_t is 52 bytes");

void CopyTruncated(char* dst, size_t size, const std::string& src) {
  size_t n = std::min(size - 1, src.size());
  std::memcpy(dst, src.data(), n);
  dst[n] = '\0';
}

void FillPciV3(const PciAddress& a, uint32_t device_id, uint32_t subsystem_id, nvmlPciInfo_t* out) {
  std::memset(out, 0, sizeof *out);
  CopyTruncated(out->busIdLegacy, sizeof out->busIdLegacy, a.bus_id_legacy);
  out->domain = a.domain;
  out->bus = a.bus;
  out->device = a.device;
  out->pciDeviceId = device_id;
  out->pciSubSystemId = subsystem_id;
  CopyTruncated(out->busId, sizeof out->busId, a.bus_id);
}

nvmlReturn_t GetPciV3(nvmlDevice_t device, nvmlPciInfo_t* pci) {
  return OnGpu(device, [&](const GpuCall& c) -> nvmlReturn_t {
    if (pci == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    const GpuState& s = *c.state;
    if (!s.pci || !s.pci_device_id || !s.pci_subsystem_id) return NVML_ERROR_NOT_SUPPORTED;
    FillPciV3(*s.pci, *s.pci_device_id, *s.pci_subsystem_id, pci);
    return NVML_SUCCESS;
  });
}

nvmlReturn_t GetPciV2(nvmlDevice_t device, PciInfoV2* pci) {
  return OnGpu(device, [&](const GpuCall& c) -> nvmlReturn_t {
    if (pci == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    const GpuState& s = *c.state;
    if (!s.pci || !s.pci_device_id || !s.pci_subsystem_id) return NVML_ERROR_NOT_SUPPORTED;
    std::memset(pci, 0, sizeof *pci);
    CopyTruncated(pci->busId, sizeof pci->busId, s.pci->bus_id_legacy);
    pci->domain = s.pci->domain;
    pci->bus = s.pci->bus;
    pci->device = s.pci->device;
    pci->pciDeviceId = *s.pci_device_id;
    pci->pciSubSystemId = *s.pci_subsystem_id;
    return NVML_SUCCESS;
  });
}

enum class ListKind { kCompute, kGraphics, kMps };

bool InList(ProcessType type, ListKind kind) {
  switch (type) {
    case ProcessType::kCompute:
      return kind == ListKind::kCompute;
    case ProcessType::kGraphics:
      return kind == ListKind::kGraphics;
    case ProcessType::kComputeAndGraphics:
      return kind != ListKind::kMps;
    case ProcessType::kMps:
      return kind == ListKind::kMps;
  }
  return false;
}

// The running-process calls. `version` 1 writes 16-byte entries, 2 writes 24,
// 3 writes the driver's process_info_stride (24, or 32 like some R535 drivers:
// the caller's 24-byte array is then overrun, which is the trap to reproduce).
nvmlReturn_t RunningProcesses(nvmlDevice_t device, unsigned int* count, void* infos, ListKind kind,
                              int version) {
  return OnGpu(device, [&](const GpuCall& c) -> nvmlReturn_t {
    if (count == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    if (!c.state->processes) return NVML_ERROR_NOT_SUPPORTED;
    std::vector<ListedProcess> list;
    for (const ListedProcess& p : ListProcesses(*c.session, *c.state, nullptr)) {
      if (InList(p.spec->type, kind)) list.push_back(p);
    }
    unsigned capacity = *count;
    *count = static_cast<unsigned>(list.size());
    if (capacity < list.size()) return NVML_ERROR_INSUFFICIENT_SIZE;
    if (list.empty()) return NVML_SUCCESS;
    if (infos == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    size_t stride = version == 1   ? sizeof(nvmlProcessInfo_v1_t)
                    : version == 2 ? sizeof(nvmlProcessInfo_t)
                                   : c.session->DriverAt(c.session->Now()).process_info_stride;
    auto* base = static_cast<unsigned char*>(infos);
    for (size_t i = 0; i < list.size(); ++i) {
      unsigned char* e = base + i * stride;
      std::memset(e, 0, stride);
      const ProcessSpec& p = *list[i].spec;
      unsigned int pid = static_cast<unsigned int>(list[i].pid);
      unsigned long long used = p.used_bytes.value_or(NVML_VALUE_NOT_AVAILABLE_ULL);
      std::memcpy(e + offsetof(nvmlProcessInfo_t, pid), &pid, sizeof pid);
      std::memcpy(e + offsetof(nvmlProcessInfo_t, usedGpuMemory), &used, sizeof used);
      if (version >= 2) {
        unsigned int gi = p.gpu_instance_id.value_or(NVML_VALUE_NOT_AVAILABLE_UINT);
        unsigned int ci = p.compute_instance_id.value_or(NVML_VALUE_NOT_AVAILABLE_UINT);
        std::memcpy(e + offsetof(nvmlProcessInfo_t, gpuInstanceId), &gi, sizeof gi);
        std::memcpy(e + offsetof(nvmlProcessInfo_t, computeInstanceId), &ci, sizeof ci);
      }
    }
    return NVML_SUCCESS;
  });
}

nvmlReturn_t MemoryV1(nvmlDevice_t device, nvmlMemory_t* memory) {
  return OnGpu(device, [&](const GpuCall& c) -> nvmlReturn_t {
    if (memory == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    const GpuState& s = *c.state;
    Opt<uint64_t> used = EffectiveUsedBytes(*c.session, s);
    if (!s.memory_total_bytes || !used) return NVML_ERROR_NOT_SUPPORTED;
    // v1 has no `reserved`: the reservation counts as used.
    uint64_t all_used = *used + s.memory_reserved_bytes.value_or(0);
    memory->total = *s.memory_total_bytes;
    memory->used = all_used;
    memory->free = *s.memory_total_bytes > all_used ? *s.memory_total_bytes - all_used : 0;
    return NVML_SUCCESS;
  });
}

nvmlReturn_t Clock(nvmlDevice_t device, nvmlClockType_t type, unsigned int* mhz, bool max) {
  return OnGpu(device, [&](const GpuCall& c) -> nvmlReturn_t {
    if (type < 0 || type > 3) return NVML_ERROR_INVALID_ARGUMENT;
    return Put(max ? c.state->max_clocks_mhz[type] : c.state->clocks_mhz[type], mhz);
  });
}

// Handle lookups: the GPU's block, lost and handle_error, in that order.
nvmlReturn_t HandleFor(std::shared_ptr<const Session> session, unsigned index,
                       nvmlDevice_t* device) {
  GpuCall call;
  if (nvmlReturn_t r = EnterIndex(std::move(session), index, &call); r != NVML_SUCCESS) return r;
  if (call.state->handle_error != 0) return call.state->handle_error;
  *device = HandleOf(index);
  return NVML_SUCCESS;
}

// Indices visible to the v1 enumeration calls, which skip GPUs the caller may not open.
std::vector<unsigned> PermittedIndices(const Session& s) {
  std::vector<unsigned> out;
  double t = s.Now();
  for (unsigned i = 0; i < s.gpu_count(); ++i) {
    if (s.GpuAt(i, t).handle_error != NVML_ERROR_NO_PERMISSION) out.push_back(i);
  }
  return out;
}

// nvmlEventSetWait_v2 and v1; `write` fills the caller's record.
template <typename Write>
nvmlReturn_t WaitForEvent(nvmlEventSet_t set_handle, bool data_null, unsigned int timeout_ms,
                          Write write) {
  auto session = Simulator::Get().Current();
  if (!session) return NVML_ERROR_UNINITIALIZED;
  std::shared_ptr<EventSet> set = Simulator::Get().FindEventSet(set_handle);
  if (!set || data_null) return NVML_ERROR_INVALID_ARGUMENT;
  const double deadline = session->Now() + timeout_ms / 1000.0;
  while (true) {
    double now = session->Now();
    double next_at = INFINITY;
    {
      std::lock_guard<std::mutex> lock(set->mu);
      for (const EventSet::Registration& r : set->registrations) {
        const auto& events = session->scenario().gpus[r.gpu].events;
        for (size_t i = 0; i < events.size(); ++i) {
          const EventSpec& e = events[i];
          if ((e.type & r.mask) == 0 || e.at_s < r.t_registered ||
              set->delivered.count({r.gpu, i}) != 0) {
            continue;
          }
          if (e.at_s <= now) {
            set->delivered.insert({r.gpu, i});
            write(HandleOf(r.gpu), e);
            return NVML_SUCCESS;
          }
          next_at = std::min(next_at, e.at_s);
        }
      }
    }
    if (now >= deadline) return NVML_ERROR_TIMEOUT;
    // Short slices, so a shutdown in another thread ends the wait.
    double nap = std::min({next_at, deadline, now + 0.1}) - now;
    std::this_thread::sleep_for(std::chrono::duration<double>(nap));
    if (Simulator::Get().Current() != session) return NVML_ERROR_UNINITIALIZED;
  }
}

nvmlReturn_t SystemString(bool nvml, char* out, unsigned int length) {
  auto session = Simulator::Get().Current();
  if (!session) return NVML_ERROR_UNINITIALIZED;
  const DriverState& d = session->DriverAt(session->Now());
  return PutString(nvml ? d.nvml_version : d.version, out, length);
}

nvmlReturn_t CudaVersion(int* version) {
  auto session = Simulator::Get().Current();
  if (!session) return NVML_ERROR_UNINITIALIZED;
  return Put(session->DriverAt(session->Now()).cuda_version, version);
}

nvmlReturn_t Count(unsigned int* count, bool v1) {
  auto session = Simulator::Get().Current();
  if (!session) return NVML_ERROR_UNINITIALIZED;
  if (count == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  *count = v1 ? static_cast<unsigned>(PermittedIndices(*session).size()) : session->gpu_count();
  return NVML_SUCCESS;
}

nvmlReturn_t ByIndex(unsigned int index, nvmlDevice_t* device, bool v1) {
  auto session = Simulator::Get().Current();
  if (!session) return NVML_ERROR_UNINITIALIZED;
  if (device == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  if (v1) {
    std::vector<unsigned> permitted = PermittedIndices(*session);
    if (index >= permitted.size()) return NVML_ERROR_INVALID_ARGUMENT;
    index = permitted[index];
  } else if (index >= session->gpu_count()) {
    return NVML_ERROR_INVALID_ARGUMENT;
  }
  return HandleFor(std::move(session), index, device);
}

nvmlReturn_t ByPciBusId(const char* bus_id, nvmlDevice_t* device) {
  auto session = Simulator::Get().Current();
  if (!session) return NVML_ERROR_UNINITIALIZED;
  if (bus_id == nullptr || device == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  Opt<PciAddress> want = ParsePciBusId(bus_id);
  if (!want) return NVML_ERROR_INVALID_ARGUMENT;
  double t = session->Now();
  for (unsigned i = 0; i < session->gpu_count(); ++i) {
    const auto& pci = session->GpuAt(i, t).pci;
    if (pci && pci->bus_id == want->bus_id) return HandleFor(std::move(session), i, device);
  }
  return NVML_ERROR_NOT_FOUND;
}

}  // namespace
}  // namespace gw::sim

using namespace gw::sim;  // NOLINT: the C entry points below are thin wrappers.

// ---- Library lifetime and error text ----

GW_NVML_EXPORT nvmlReturn_t nvmlInit_v2(void) { return Simulator::Get().Init(); }
GW_NVML_EXPORT nvmlReturn_t nvmlInit(void) { return Simulator::Get().Init(); }
GW_NVML_EXPORT nvmlReturn_t nvmlInitWithFlags(unsigned int /*flags*/) {
  return Simulator::Get().Init();
}
GW_NVML_EXPORT nvmlReturn_t nvmlShutdown(void) { return Simulator::Get().Shutdown(); }

GW_NVML_EXPORT const char* nvmlErrorString(nvmlReturn_t result) {
  switch (result) {
    case NVML_SUCCESS:
      return "Success";
    case NVML_ERROR_UNINITIALIZED:
      return "Uninitialized";
    case NVML_ERROR_INVALID_ARGUMENT:
      return "Invalid Argument";
    case NVML_ERROR_NOT_SUPPORTED:
      return "Not Supported";
    case NVML_ERROR_NO_PERMISSION:
      return "Insufficient Permissions";
    case NVML_ERROR_ALREADY_INITIALIZED:
      return "Already Initialized";
    case NVML_ERROR_NOT_FOUND:
      return "Not Found";
    case NVML_ERROR_INSUFFICIENT_SIZE:
      return "Insufficient Size";
    case NVML_ERROR_INSUFFICIENT_POWER:
      return "Insufficient External Power";
    case NVML_ERROR_DRIVER_NOT_LOADED:
      return "Driver Not Loaded";
    case NVML_ERROR_TIMEOUT:
      return "Timeout";
    case NVML_ERROR_IRQ_ISSUE:
      return "Interrupt Request Issue";
    case NVML_ERROR_LIBRARY_NOT_FOUND:
      return "NVML Shared Library Not Found";
    case NVML_ERROR_FUNCTION_NOT_FOUND:
      return "Function Not Found";
    case NVML_ERROR_CORRUPTED_INFOROM:
      return "Corrupted infoROM";
    case NVML_ERROR_GPU_IS_LOST:
      return "GPU is lost";
    case NVML_ERROR_RESET_REQUIRED:
      return "GPU requires reset";
    case NVML_ERROR_OPERATING_SYSTEM:
      return "Operating System Error";
    case NVML_ERROR_LIB_RM_VERSION_MISMATCH:
      return "RM has detected an NVML/RM version mismatch";
    case NVML_ERROR_IN_USE:
      return "In use";
    case NVML_ERROR_MEMORY:
      return "Insufficient Memory";
    case NVML_ERROR_NO_DATA:
      return "No data";
    case NVML_ERROR_VGPU_ECC_NOT_SUPPORTED:
      return "vGPU ECC Not Supported";
    case NVML_ERROR_INSUFFICIENT_RESOURCES:
      return "Insufficient Resources";
    case NVML_ERROR_FREQ_NOT_SUPPORTED:
      return "Frequency not supported";
    case NVML_ERROR_ARGUMENT_VERSION_MISMATCH:
      return "Argument Version Mismatch";
    case NVML_ERROR_DEPRECATED:
      return "Deprecated";
    case NVML_ERROR_NOT_READY:
      return "Not Ready";
    case NVML_ERROR_GPU_NOT_FOUND:
      return "GPU not found";
    case NVML_ERROR_INVALID_STATE:
      return "Invalid State";
    case 30:  // NVML_ERROR_RESET_TYPE_NOT_SUPPORTED (NVML 13).
      return "Reset Type Not Supported";
    default:
      return "Unknown Error";
  }
}

// ---- System ----

GW_NVML_EXPORT nvmlReturn_t nvmlSystemGetDriverVersion(char* version, unsigned int length) {
  return SystemString(false, version, length);
}
GW_NVML_EXPORT nvmlReturn_t nvmlSystemGetNVMLVersion(char* version, unsigned int length) {
  return SystemString(true, version, length);
}
GW_NVML_EXPORT nvmlReturn_t nvmlSystemGetCudaDriverVersion(int* version) {
  return CudaVersion(version);
}
GW_NVML_EXPORT nvmlReturn_t nvmlSystemGetCudaDriverVersion_v2(int* version) {
  return CudaVersion(version);
}

// ---- Enumeration and identity ----

GW_NVML_EXPORT nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int* count) {
  return Count(count, false);
}
GW_NVML_EXPORT nvmlReturn_t nvmlDeviceGetCount(unsigned int* count) { return Count(count, true); }
GW_NVML_EXPORT nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index,
                                                          nvmlDevice_t* device) {
  return ByIndex(index, device, false);
}
GW_NVML_EXPORT nvmlReturn_t nvmlDeviceGetHandleByIndex(unsigned int index, nvmlDevice_t* device) {
  return ByIndex(index, device, true);
}

GW_NVML_EXPORT nvmlReturn_t nvmlDeviceGetHandleByUUID(const char* uuid, nvmlDevice_t* device) {
  auto session = Simulator::Get().Current();
  if (!session) return NVML_ERROR_UNINITIALIZED;
  if (uuid == nullptr || device == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  double t = session->Now();
  for (unsigned i = 0; i < session->gpu_count(); ++i) {
    const auto& u = session->GpuAt(i, t).uuid;
    if (u && *u == uuid) return HandleFor(std::move(session), i, device);
  }
  return NVML_ERROR_NOT_FOUND;
}

GW_NVML_EXPORT nvmlReturn_t nvmlDeviceGetHandleByPciBusId_v2(const char* bus_id,
                                                             nvmlDevice_t* device) {
  return ByPciBusId(bus_id, device);
}
GW_NVML_EXPORT nvmlReturn_t nvmlDeviceGetHandleByPciBusId(const char* bus_id,
                                                          nvmlDevice_t* device) {
  return ByPciBusId(bus_id, device);
}

GW_NVML_EXPORT nvmlReturn_t nvmlDeviceGetIndex(nvmlDevice_t device, unsigned int* index) {
  return OnGpu(
      device, [&](const GpuCall& c) -> nvmlReturn_t { return Put(Opt<unsigned>(c.index), index); });
}
GW_NVML_EXPORT nvmlReturn_t nvmlDeviceGetMinorNumber(nvmlDevice_t device, unsigned int* minor) {
  return OnGpu(device,
               [&](const GpuCall& c) -> nvmlReturn_t { return Put(c.state->minor_number, minor); });
}
GW_NVML_EXPORT nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t device, char* name,
                                              unsigned int length) {
  return OnGpu(device, [&](const GpuCall& c) -> nvmlReturn_t {
    return PutString(c.state->name, name, length);
  });
}
GW_NVML_EXPORT nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t device, char* uuid,
                                              unsigned int length) {
  return OnGpu(device, [&](const GpuCall& c) -> nvmlReturn_t {
    return PutString(c.state->uuid, uuid, length);
  });
}
GW_NVML_EXPORT nvmlReturn_t nvmlDeviceGetSerial(nvmlDevice_t device, char* serial,
                                                unsigned int length) {
  return OnGpu(device, [&](const GpuCall& c) -> nvmlReturn_t {
    return PutString(c.state->serial, serial, length);
  });
}
GW_NVML_EXPORT nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t device, nvmlPciInfo_t* pci) {
  return GetPciV3(device, pci);
}
GW_NVML_EXPORT nvmlReturn_t nvmlDeviceGetPciInfo_v2(nvmlDevice_t device, PciInfoV2* pci) {
  return GetPciV2(device, pci);
}
GW_NVML_EXPORT nvmlReturn_t nvmlDeviceGetPciInfo(nvmlDevice_t device, PciInfoV2* pci) {
  return GetPciV2(device, pci);
}

// ---- Memory and utilization ----

GW_NVML_EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device, nvmlMemory_t* memory) {
  return MemoryV1(device, memory);
}

GW_NVML_EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t device,
                                                       nvmlMemory_v2_t* memory) {
  return OnGpu(device, [&](const GpuCall& c) -> nvmlReturn_t {
    if (memory == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    if (memory->version != StructVersion<nvmlMemory_v2_t>(2)) {
      return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
    }
    const GpuState& s = *c.state;
    Opt<uint64_t> used = EffectiveUsedBytes(*c.session, s);
    if (!s.memory_total_bytes || !used || !s.memory_reserved_bytes) {
      return NVML_ERROR_NOT_SUPPORTED;
    }
    uint64_t taken = *used + *s.memory_reserved_bytes;
    memory->total = *s.memory_total_bytes;
    memory->reserved = *s.memory_reserved_bytes;
    memory->used = *used;
    memory->free = *s.memory_total_bytes > taken ? *s.memory_total_bytes - taken : 0;
    return NVML_SUCCESS;
  });
}

GW_NVML_EXPORT nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t device,
                                                          nvmlUtilization_t* utilization) {
  return OnGpu(device, [&](const GpuCall& c) -> nvmlReturn_t {
    if (utilization == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    if (!c.state->utilization_gpu || !c.state->utilization_memory) {
      return NVML_ERROR_NOT_SUPPORTED;
    }
    utilization->gpu = *c.state->utilization_gpu;
    utilization->memory = *c.state->utilization_memory;
    return NVML_SUCCESS;
  });
}

GW_NVML_EXPORT nvmlReturn_t nvmlDeviceGetBAR1MemoryInfo(nvmlDevice_t device, Bar1Memory* bar1) {
  return OnGpu(device, [&](const GpuCall& c) -> nvmlReturn_t {
    if (bar1 == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    const GpuState& s = *c.state;
    if (!s.bar1_total_bytes || !s.bar1_used_bytes) return NVML_ERROR_NOT_SUPPORTED;
    bar1->bar1Total = *s.bar1_total_bytes;
    bar1->bar1Used = *s.bar1_used_bytes;
    bar1->bar1Free = *s.bar1_total_bytes - *s.bar1_used_bytes;
    return NVML_SUCCESS;
  });
}

// The encoder and decoder report their utilization over a sampling period.
static nvmlReturn_t CodecUtilization(nvmlDevice_t device, bool encoder, unsigned int* utilization,
                                     unsigned int* period_us) {
  return OnGpu(device, [&](const GpuCall& c) -> nvmlReturn_t {
    if (utilization == nullptr || period_us == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    const Opt<unsigned>& pct =
        encoder ? c.state->utilization_encoder : c.state->utilization_decoder;
    if (!pct) return NVML_ERROR_NOT_SUPPORTED;
    *utilization = *pct;
    *period_us = static_cast<unsigned int>(kSamplePeriodUs);
    return NVML_SUCCESS;
  });
}
GW_NVML_EXPORT nvmlReturn_t nvmlDeviceGetEncoderUtilization(nvmlDevice_t device,
                                                            unsigned int* utilization,
                                                            unsigned int* sampling_period_us) {
  return CodecUtilization(device, true, utilization, sampling_period_us);
}
GW_NVML_EXPORT nvmlReturn_t nvmlDeviceGetDecoderUtilization(nvmlDevice_t device,
                                                            unsigned int* utilization,
                                                            unsigned int* sampling_period_us) {
  return CodecUtilization(device, false, utilization, sampling_period_us);
}

// ---- Running processes ----

GW_NVML_EXPORT nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t device,
                                                                    unsigned int* count,
                                                                    nvmlProcessInfo_t* infos) {
  return RunningProcesses(device, count, infos, ListKind::kCompute, 3);
}
GW_NVML_EXPORT nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v2(nvmlDevice_t device,
                                                                    unsigned int* count,
                                                                    nvmlProcessInfo_t* infos) {
  return RunningProcesses(device, count, infos, ListKind::kCompute, 2);
}
GW_NVML_EXPORT nvmlReturn_t nvmlDeviceGetComputeRunningProcesses(nvmlDevice_t device,
                                                                 unsigned int* count,
                                                                 nvmlProcessInfo_v1_t* infos) {
  return RunningProcesses(device, count, infos, ListKind::kCompute, 1);
}
GW_NVML_EXPORT nvmlReturn_t nvmlDeviceGetGraphicsRunningProcesses_v3(nvmlDevice_t device,
                                                                     unsigned int* count,
                                                                     nvmlProcessInfo_t* infos) {
  return RunningProcesses(device, count, infos, ListKind::kGraphics, 3);
}
GW_NVML_EXPORT nvmlReturn_t nvmlDeviceGetGraphicsRunningProcesses_v2(nvmlDevice_t device,
                                                                     unsigned int* count,
                                                                     nvmlProcessInfo_t* infos) {
  return RunningProcesses(device, count, infos, ListKind::kGraphics, 2);
}
GW_NVML_EXPORT nvmlReturn_t nvmlDeviceGetGraphicsRunningProcesses(nvmlDevice_t device,
                                                                  unsigned int* count,
                                                                  nvmlProcessInfo_v1_t* infos) {
  return RunningProcesses(device, count, infos, ListKind::kGraphics, 1);
}

GW_NVML_EXPORT nvmlReturn_t nvmlDeviceGetMPSComputeRunningProcesses_v3(nvmlDevice_t device,
                                                                       unsigned int* count,
                                                                       nvmlProcessInfo_t* infos) {
  return RunningProcesses(device, count, infos, ListKind::kMps, 3);
}
GW_NVML_EXPORT nvmlReturn_t nvmlDeviceGetMPSComputeRunningProcesses_v2(nvmlDevice_t device,
                                                                       unsigned int* count,
                                                                       nvmlProcessInfo_t* infos) {
  return RunningProcesses(device, count, infos, ListKind::kMps, 2);
}
GW_NVML_EXPORT nvmlReturn_t nvmlDeviceGetMPSComputeRunningProcesses(nvmlDevice_t device,
                                                                    unsigned int* count,
                                                                    nvmlProcessInfo_v1_t* infos) {
  return RunningProcesses(device, count, infos, ListKind::kMps, 1);
}

GW_NVML_EXPORT nvmlReturn_t
nvmlDeviceGetProcessUtilization(nvmlDevice_t device, nvmlProcessUtilizationSample_t* utilization,
                                unsigned int* count, unsigned long long last_seen_us) {
  return OnGpu(device, [&](const GpuCall& c) -> nvmlReturn_t {
    if (count == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    if (!c.state->processes) return NVML_ERROR_NOT_SUPPORTED;
    // The latest sample was taken at the last whole sampling period.
    auto now_us = static_cast<unsigned long long>(WallNowS() * 1e6);
    unsigned long long sample_us = now_us - now_us % kSamplePeriodUs;
    std::vector<ListedProcess> sampled;
    if (sample_us > last_seen_us) {
      for (const ListedProcess& p : ListProcesses(*c.session, *c.state, nullptr)) {
        if (p.spec->sm_pct) sampled.push_back(p);
      }
    }
    unsigned capacity = *count;
    *count = static_cast<unsigned>(sampled.size());
    if (sampled.empty()) return NVML_ERROR_NOT_FOUND;
    if (utilization == nullptr || capacity < sampled.size()) return NVML_ERROR_INSUFFICIENT_SIZE;
    for (size_t i = 0; i < sampled.size(); ++i) {
      nvmlProcessUtilizationSample_t& out = utilization[i];
      std::memset(&out, 0, sizeof out);
      const ProcessSpec& p = *sampled[i].spec;
      out.pid = static_cast<unsigned int>(sampled[i].pid);
      out.timeStamp = sample_us;
      out.smUtil = *p.sm_pct;
      out.memUtil = *p.mem_pct;
      out.encUtil = p.enc_pct;
      out.decUtil = p.dec_pct;
    }
    return NVML_SUCCESS;
  });
}

// ---- Thermal, power, clocks ----

GW_NVML_EXPORT nvmlReturn_t nvmlDeviceGetTemperature(nvmlDevice_t device,
                                                     nvmlTemperatureSensors_t sensor,
                                                     unsigned int* temp) {
  return OnGpu(device, [&](const GpuCall& c) -> nvmlReturn_t {
    if (sensor != NVML_TEMPERATURE_GPU) return NVML_ERROR_INVALID_ARGUMENT;
    return Put(c.state->temperature_c, temp);
  });
}

// nvmlDeviceGetTemperatureV: the versioned form (R570+), nvmlTemperature_v1 only.
GW_NVML_EXPORT nvmlReturn_t nvmlDeviceGetTemperatureV(nvmlDevice_t device,
                                                      TemperatureV1* temperature) {
  return OnGpu(device, [&](const GpuCall& c) -> nvmlReturn_t {
    if (temperature == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    if (temperature->version != StructVersion<TemperatureV1>(1)) {
      return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
    }
    if (temperature->sensorType != NVML_TEMPERATURE_GPU) return NVML_ERROR_INVALID_ARGUMENT;
    if (!c.state->temperature_c) return NVML_ERROR_NOT_SUPPORTED;
    temperature->temperature = static_cast<int>(*c.state->temperature_c);
    return NVML_SUCCESS;
  });
}

GW_NVML_EXPORT nvmlReturn_t nvmlDeviceGetTemperatureThreshold(nvmlDevice_t device,
                                                              nvmlTemperatureThresholds_t threshold,
                                                              unsigned int* temp) {
  return OnGpu(device, [&](const GpuCall& c) -> nvmlReturn_t {
    switch (threshold) {
      case NVML_TEMPERATURE_THRESHOLD_SHUTDOWN:
        return Put(c.state->temperature_shutdown_c, temp);
      case NVML_TEMPERATURE_THRESHOLD_SLOWDOWN:
        return Put(c.state->temperature_slowdown_c, temp);
      default:
        // Real thresholds 2..7 exist; the simulator does not model them.
        return threshold >= 2 && threshold <= 7 ? NVML_ERROR_NOT_SUPPORTED
                                                : NVML_ERROR_INVALID_ARGUMENT;
    }
  });
}

GW_NVML_EXPORT nvmlReturn_t nvmlDeviceGetFanSpeed(nvmlDevice_t device, unsigned int* speed) {
  return OnGpu(device,
               [&](const GpuCall& c) -> nvmlReturn_t { return Put(c.state->fan_pct, speed); });
}
GW_NVML_EXPORT nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t device, unsigned int* power) {
  return OnGpu(device,
               [&](const GpuCall& c) -> nvmlReturn_t { return Put(c.state->power_mw, power); });
}
GW_NVML_EXPORT nvmlReturn_t nvmlDeviceGetEnforcedPowerLimit(nvmlDevice_t device,
                                                            unsigned int* limit) {
  return OnGpu(device, [&](const GpuCall& c) -> nvmlReturn_t {
    return Put(c.state->power_limit_mw, limit);
  });
}
GW_NVML_EXPORT nvmlReturn_t nvmlDeviceGetPowerManagementLimit(nvmlDevice_t device,
                                                              unsigned int* limit) {
  return OnGpu(device, [&](const GpuCall& c) -> nvmlReturn_t {
    return Put(c.state->power_limit_mw, limit);
  });
}
GW_NVML_EXPORT nvmlReturn_t nvmlDeviceGetPowerManagementDefaultLimit(nvmlDevice_t device,
                                                                     unsigned int* limit) {
  return OnGpu(device, [&](const GpuCall& c) -> nvmlReturn_t {
    return Put(c.state->power_default_limit_mw, limit);
  });
}
GW_NVML_EXPORT nvmlReturn_t nvmlDeviceGetPowerManagementLimitConstraints(nvmlDevice_t device,
                                                                         unsigned int* min_limit,
                                                                         unsigned int* max_limit) {
  return OnGpu(device, [&](const GpuCall& c) -> nvmlReturn_t {
    if (min_limit == nullptr || max_limit == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    if (!c.state->power_min_limit_mw || !c.state->power_max_limit_mw) {
      return NVML_ERROR_NOT_SUPPORTED;
    }
    *min_limit = *c.state->power_min_limit_mw;
    *max_limit = *c.state->power_max_limit_mw;
    return NVML_SUCCESS;
  });
}
GW_NVML_EXPORT nvmlReturn_t nvmlDeviceGetTotalEnergyConsumption(nvmlDevice_t device,
                                                                unsigned long long* energy_mj) {
  return OnGpu(device, [&](const GpuCall& c) -> nvmlReturn_t {
    return Put(c.state->total_energy_mj, energy_mj);
  });
}
GW_NVML_EXPORT nvmlReturn_t nvmlDeviceGetClockInfo(nvmlDevice_t device, nvmlClockType_t type,
                                                   unsigned int* clock) {
  return Clock(device, type, clock, false);
}
GW_NVML_EXPORT nvmlReturn_t nvmlDeviceGetMaxClockInfo(nvmlDevice_t device, nvmlClockType_t type,
                                                      unsigned int* clock) {
  return Clock(device, type, clock, true);
}
GW_NVML_EXPORT nvmlReturn_t nvmlDeviceGetPerformanceState(nvmlDevice_t device,
                                                          nvmlPstates_t* pstate) {
  return OnGpu(device,
               [&](const GpuCall& c) -> nvmlReturn_t { return Put(c.state->pstate, pstate); });
}

static nvmlReturn_t ReasonMask(nvmlDevice_t device, unsigned long long* mask, bool supported) {
  return OnGpu(device, [&](const GpuCall& c) -> nvmlReturn_t {
    return Put(supported ? c.state->clock_event_reasons_supported : c.state->clock_event_reasons,
               mask);
  });
}
GW_NVML_EXPORT nvmlReturn_t nvmlDeviceGetCurrentClocksEventReasons(nvmlDevice_t device,
                                                                   unsigned long long* reasons) {
  return ReasonMask(device, reasons, false);
}
GW_NVML_EXPORT nvmlReturn_t nvmlDeviceGetCurrentClocksThrottleReasons(nvmlDevice_t device,
                                                                      unsigned long long* reasons) {
  return ReasonMask(device, reasons, false);
}
GW_NVML_EXPORT nvmlReturn_t nvmlDeviceGetSupportedClocksEventReasons(nvmlDevice_t device,
                                                                     unsigned long long* reasons) {
  return ReasonMask(device, reasons, true);
}
GW_NVML_EXPORT nvmlReturn_t
nvmlDeviceGetSupportedClocksThrottleReasons(nvmlDevice_t device, unsigned long long* reasons) {
  return ReasonMask(device, reasons, true);
}

// ---- Modes and identity ----

GW_NVML_EXPORT nvmlReturn_t nvmlDeviceGetDisplayMode(nvmlDevice_t device, nvmlEnableState_t* mode) {
  return OnGpu(device, [&](const GpuCall& c) -> nvmlReturn_t {
    return PutBool(c.state->display_mode, mode);
  });
}
GW_NVML_EXPORT nvmlReturn_t nvmlDeviceGetDisplayActive(nvmlDevice_t device,
                                                       nvmlEnableState_t* active) {
  return OnGpu(device, [&](const GpuCall& c) -> nvmlReturn_t {
    return PutBool(c.state->display_active, active);
  });
}
GW_NVML_EXPORT nvmlReturn_t nvmlDeviceGetBrand(nvmlDevice_t device, int* brand) {
  return OnGpu(device,
               [&](const GpuCall& c) -> nvmlReturn_t { return Put(c.state->brand, brand); });
}
GW_NVML_EXPORT nvmlReturn_t nvmlDeviceGetArchitecture(nvmlDevice_t device, unsigned int* arch) {
  return OnGpu(device,
               [&](const GpuCall& c) -> nvmlReturn_t { return Put(c.state->architecture, arch); });
}
GW_NVML_EXPORT nvmlReturn_t nvmlDeviceGetCudaComputeCapability(nvmlDevice_t device, int* major,
                                                               int* minor) {
  return OnGpu(device, [&](const GpuCall& c) -> nvmlReturn_t {
    if (major == nullptr || minor == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    if (!c.state->cuda_cc_major || !c.state->cuda_cc_minor) return NVML_ERROR_NOT_SUPPORTED;
    *major = *c.state->cuda_cc_major;
    *minor = *c.state->cuda_cc_minor;
    return NVML_SUCCESS;
  });
}

// ---- Modes ----

GW_NVML_EXPORT nvmlReturn_t nvmlDeviceGetPersistenceMode(nvmlDevice_t device,
                                                         nvmlEnableState_t* mode) {
  return OnGpu(device, [&](const GpuCall& c) -> nvmlReturn_t {
    return PutBool(c.state->persistence_mode, mode);
  });
}
GW_NVML_EXPORT nvmlReturn_t nvmlDeviceGetComputeMode(nvmlDevice_t device, nvmlComputeMode_t* mode) {
  return OnGpu(device,
               [&](const GpuCall& c) -> nvmlReturn_t { return Put(c.state->compute_mode, mode); });
}
GW_NVML_EXPORT nvmlReturn_t nvmlDeviceGetMigMode(nvmlDevice_t device, unsigned int* current,
                                                 unsigned int* pending) {
  return OnGpu(device, [&](const GpuCall& c) -> nvmlReturn_t {
    if (current == nullptr || pending == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    if (!c.state->mig_current || !c.state->mig_pending) return NVML_ERROR_NOT_SUPPORTED;
    *current = *c.state->mig_current ? NVML_DEVICE_MIG_ENABLE : NVML_DEVICE_MIG_DISABLE;
    *pending = *c.state->mig_pending ? NVML_DEVICE_MIG_ENABLE : NVML_DEVICE_MIG_DISABLE;
    return NVML_SUCCESS;
  });
}

// ---- Memory health ----

GW_NVML_EXPORT nvmlReturn_t nvmlDeviceGetEccMode(nvmlDevice_t device, nvmlEnableState_t* current,
                                                 nvmlEnableState_t* pending) {
  return OnGpu(device, [&](const GpuCall& c) -> nvmlReturn_t {
    if (current == nullptr || pending == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    if (!c.state->ecc_current || !c.state->ecc_pending) return NVML_ERROR_NOT_SUPPORTED;
    *current = *c.state->ecc_current ? NVML_FEATURE_ENABLED : NVML_FEATURE_DISABLED;
    *pending = *c.state->ecc_pending ? NVML_FEATURE_ENABLED : NVML_FEATURE_DISABLED;
    return NVML_SUCCESS;
  });
}

GW_NVML_EXPORT nvmlReturn_t nvmlDeviceGetTotalEccErrors(nvmlDevice_t device,
                                                        nvmlMemoryErrorType_t error_type,
                                                        nvmlEccCounterType_t counter_type,
                                                        unsigned long long* counts) {
  return OnGpu(device, [&](const GpuCall& c) -> nvmlReturn_t {
    if (error_type < 0 || error_type > 1 || counter_type < 0 || counter_type > 1) {
      return NVML_ERROR_INVALID_ARGUMENT;
    }
    return Put(c.state->ecc_counts[error_type][counter_type], counts);
  });
}

GW_NVML_EXPORT nvmlReturn_t nvmlDeviceGetRetiredPages(nvmlDevice_t device,
                                                      nvmlPageRetirementCause_t cause,
                                                      unsigned int* count,
                                                      unsigned long long* addresses) {
  return OnGpu(device, [&](const GpuCall& c) -> nvmlReturn_t {
    if (cause < 0 || cause > 1 || count == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    const PageList& pages = c.state->retired_pages[cause];
    if (!pages) return NVML_ERROR_NOT_SUPPORTED;
    unsigned capacity = *count;
    *count = static_cast<unsigned>(pages->size());
    if (capacity < pages->size()) return NVML_ERROR_INSUFFICIENT_SIZE;
    if (pages->empty()) return NVML_SUCCESS;
    if (addresses == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    std::copy(pages->begin(), pages->end(), addresses);
    return NVML_SUCCESS;
  });
}

GW_NVML_EXPORT nvmlReturn_t nvmlDeviceGetRetiredPagesPendingStatus(nvmlDevice_t device,
                                                                   nvmlEnableState_t* pending) {
  return OnGpu(device, [&](const GpuCall& c) -> nvmlReturn_t {
    return PutBool(c.state->retired_pages_pending, pending);
  });
}

GW_NVML_EXPORT nvmlReturn_t nvmlDeviceGetRemappedRows(nvmlDevice_t device, unsigned int* corr,
                                                      unsigned int* unc, unsigned int* pending,
                                                      unsigned int* failure) {
  return OnGpu(device, [&](const GpuCall& c) -> nvmlReturn_t {
    if (corr == nullptr || unc == nullptr || pending == nullptr || failure == nullptr) {
      return NVML_ERROR_INVALID_ARGUMENT;
    }
    const GpuState& s = *c.state;
    if (!s.remapped_correctable || !s.remapped_uncorrectable || !s.remapped_pending ||
        !s.remapped_failure) {
      return NVML_ERROR_NOT_SUPPORTED;
    }
    *corr = *s.remapped_correctable;
    *unc = *s.remapped_uncorrectable;
    *pending = *s.remapped_pending ? 1 : 0;
    *failure = *s.remapped_failure ? 1 : 0;
    return NVML_SUCCESS;
  });
}

// ---- PCIe ----

GW_NVML_EXPORT nvmlReturn_t nvmlDeviceGetCurrPcieLinkGeneration(nvmlDevice_t device,
                                                                unsigned int* gen) {
  return OnGpu(device, [&](const GpuCall& c) -> nvmlReturn_t {
    return Put(c.state->pcie_gen_current, gen);
  });
}
GW_NVML_EXPORT nvmlReturn_t nvmlDeviceGetCurrPcieLinkWidth(nvmlDevice_t device,
                                                           unsigned int* width) {
  return OnGpu(device, [&](const GpuCall& c) -> nvmlReturn_t {
    return Put(c.state->pcie_width_current, width);
  });
}
GW_NVML_EXPORT nvmlReturn_t nvmlDeviceGetMaxPcieLinkGeneration(nvmlDevice_t device,
                                                               unsigned int* gen) {
  return OnGpu(device,
               [&](const GpuCall& c) -> nvmlReturn_t { return Put(c.state->pcie_gen_max, gen); });
}
GW_NVML_EXPORT nvmlReturn_t nvmlDeviceGetMaxPcieLinkWidth(nvmlDevice_t device,
                                                          unsigned int* width) {
  return OnGpu(device, [&](const GpuCall& c) -> nvmlReturn_t {
    return Put(c.state->pcie_width_max, width);
  });
}
GW_NVML_EXPORT nvmlReturn_t nvmlDeviceGetGpuMaxPcieLinkGeneration(nvmlDevice_t device,
                                                                  unsigned int* gen) {
  return OnGpu(device, [&](const GpuCall& c) -> nvmlReturn_t {
    return Put(c.state->pcie_gen_gpu_max, gen);
  });
}
GW_NVML_EXPORT nvmlReturn_t nvmlDeviceGetPcieReplayCounter(nvmlDevice_t device,
                                                           unsigned int* value) {
  return OnGpu(device, [&](const GpuCall& c) -> nvmlReturn_t {
    return Put(c.state->pcie_replay_counter, value);
  });
}

// nvmlPcieUtilCounter_t: TX_BYTES 0, RX_BYTES 1.
GW_NVML_EXPORT nvmlReturn_t nvmlDeviceGetPcieThroughput(nvmlDevice_t device, int counter,
                                                        unsigned int* value) {
  return OnGpu(device, [&](const GpuCall& c) -> nvmlReturn_t {
    if (counter != 0 && counter != 1) return NVML_ERROR_INVALID_ARGUMENT;
    return Put(counter == 0 ? c.state->pcie_tx_kb_s : c.state->pcie_rx_kb_s, value);
  });
}

// ---- NVLink and topology ----

GW_NVML_EXPORT nvmlReturn_t nvmlDeviceGetNvLinkState(nvmlDevice_t device, unsigned int link,
                                                     nvmlEnableState_t* active) {
  return OnGpu(device, [&](const GpuCall& c) -> nvmlReturn_t {
    const auto& links = c.state->nvlinks;
    if (!links) return NVML_ERROR_NOT_SUPPORTED;
    if (link >= links->size()) return NVML_ERROR_INVALID_ARGUMENT;
    return PutBool((*links)[link].active, active);
  });
}

GW_NVML_EXPORT nvmlReturn_t nvmlDeviceGetNvLinkRemotePciInfo_v2(nvmlDevice_t device,
                                                                unsigned int link,
                                                                nvmlPciInfo_t* pci) {
  return OnGpu(device, [&](const GpuCall& c) -> nvmlReturn_t {
    const auto& links = c.state->nvlinks;
    if (!links) return NVML_ERROR_NOT_SUPPORTED;
    if (link >= links->size() || pci == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    const Opt<PciAddress>& remote = (*links)[link].remote;
    if (!remote) return NVML_ERROR_NOT_SUPPORTED;
    // A peer GPU of this scenario reports its ids; anything else (an NVSwitch) reports 0.
    uint32_t device_id = 0;
    uint32_t subsystem_id = 0;
    double t = c.session->Now();
    for (unsigned i = 0; i < c.session->gpu_count(); ++i) {
      const GpuState& peer = c.session->GpuAt(i, t);
      if (peer.pci && peer.pci->bus_id == remote->bus_id) {
        device_id = peer.pci_device_id.value_or(0);
        subsystem_id = peer.pci_subsystem_id.value_or(0);
      }
    }
    FillPciV3(*remote, device_id, subsystem_id, pci);
    return NVML_SUCCESS;
  });
}

GW_NVML_EXPORT nvmlReturn_t nvmlDeviceGetTopologyCommonAncestor(nvmlDevice_t device1,
                                                                nvmlDevice_t device2,
                                                                nvmlGpuTopologyLevel_t* level) {
  GpuCall a;
  GpuCall b;
  if (nvmlReturn_t r = Enter(device1, &a); r != NVML_SUCCESS) return r;
  if (nvmlReturn_t r = Enter(device2, &b); r != NVML_SUCCESS) return r;
  if (level == nullptr || a.index == b.index) return NVML_ERROR_INVALID_ARGUMENT;
  const Opt<Topology>& topo = a.session->scenario().topology;
  if (!topo) return NVML_ERROR_NOT_SUPPORTED;
  auto it = topo->pairs.find({std::min(a.index, b.index), std::max(a.index, b.index)});
  if (it != topo->pairs.end()) {
    *level = it->second;
    return NVML_SUCCESS;
  }
  return Put(topo->default_level, level);
}

// ---- Field values ----

namespace gw::sim {
namespace {

// The field ids the simulator answers (nvml.h's NVML_FI_DEV_*).
enum : unsigned {
  kFieldMemoryTemp = 82,
  kFieldTotalEnergy = 83,
  kFieldNvLinkLinkCount = 91,
  kFieldPcieReplayCounter = 94,
  kFieldNvLinkDataTx = 138,
  kFieldNvLinkDataRx = 139,
};
// nvmlValueType_t.
enum : int { kValueUnsignedInt = 1, kValueUnsignedLongLong = 3 };
// A throughput field's scopeId that asks for the sum over every link.
constexpr unsigned kAllLinks = 0xFFFFFFFFu;

void SetUint(FieldValue& f, const Opt<unsigned>& v) {
  if (!v) {
    f.nvmlReturn = NVML_ERROR_NOT_SUPPORTED;
    return;
  }
  unsigned int x = *v;
  f.valueType = kValueUnsignedInt;
  std::memcpy(f.value, &x, sizeof x);
  f.nvmlReturn = NVML_SUCCESS;
}

void SetUll(FieldValue& f, const Opt<uint64_t>& v) {
  if (!v) {
    f.nvmlReturn = NVML_ERROR_NOT_SUPPORTED;
    return;
  }
  unsigned long long x = *v;
  f.valueType = kValueUnsignedLongLong;
  std::memcpy(f.value, &x, sizeof x);
  f.nvmlReturn = NVML_SUCCESS;
}

// One link's data counter, or the sum over every link (kAllLinks); absent
// when any counter in the sum is absent.
Opt<uint64_t> LinkData(const GpuState& s, unsigned scope, bool tx) {
  if (!s.nvlinks) return std::nullopt;
  const auto& links = *s.nvlinks;
  auto of = [tx](const NvLinkSpec& l) { return tx ? l.tx_kib : l.rx_kib; };
  if (scope != kAllLinks) {
    if (scope >= links.size()) return std::nullopt;
    return of(links[scope]);
  }
  uint64_t sum = 0;
  for (const NvLinkSpec& l : links) {
    if (!of(l)) return std::nullopt;
    sum += *of(l);
  }
  return sum;
}

void ReadField(const GpuState& s, FieldValue& f) {
  switch (f.fieldId) {
    case kFieldMemoryTemp:
      return SetUint(f, s.memory_temperature_c);
    case kFieldTotalEnergy:
      return SetUll(f, s.total_energy_mj);
    case kFieldNvLinkLinkCount:
      return SetUint(
          f, s.nvlinks ? Opt<unsigned>(static_cast<unsigned>(s.nvlinks->size())) : std::nullopt);
    case kFieldPcieReplayCounter:
      return SetUint(f, s.pcie_replay_counter);
    case kFieldNvLinkDataTx:
    case kFieldNvLinkDataRx:
      if (s.nvlinks && f.scopeId != kAllLinks && f.scopeId >= s.nvlinks->size()) {
        f.nvmlReturn = NVML_ERROR_INVALID_ARGUMENT;
        return;
      }
      return SetUll(f, LinkData(s, f.scopeId, f.fieldId == kFieldNvLinkDataTx));
    default:
      f.nvmlReturn = NVML_ERROR_NOT_SUPPORTED;
  }
}

}  // namespace
}  // namespace gw::sim

// Each value carries its own answer; the call fails only as a whole (a bad
// handle, a lost GPU, no array).
GW_NVML_EXPORT nvmlReturn_t nvmlDeviceGetFieldValues(nvmlDevice_t device, int count,
                                                     FieldValue* values) {
  return OnGpu(device, [&](const GpuCall& c) -> nvmlReturn_t {
    if (values == nullptr || count < 0) return NVML_ERROR_INVALID_ARGUMENT;
    auto now_us = static_cast<long long>(WallNowS() * 1e6);
    for (int i = 0; i < count; ++i) {
      FieldValue& f = values[i];
      f.timestamp = now_us;
      f.latencyUsec = 0;
      f.valueType = kValueUnsignedInt;
      std::memset(f.value, 0, sizeof f.value);
      ReadField(*c.state, f);
    }
    return NVML_SUCCESS;
  });
}

// ---- Events ----

GW_NVML_EXPORT nvmlReturn_t nvmlEventSetCreate(nvmlEventSet_t* set) {
  if (!Simulator::Get().Current()) return NVML_ERROR_UNINITIALIZED;
  if (set == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  *set = reinterpret_cast<nvmlEventSet_t>(Simulator::Get().CreateEventSet());
  return NVML_SUCCESS;
}

GW_NVML_EXPORT nvmlReturn_t nvmlDeviceGetSupportedEventTypes(nvmlDevice_t device,
                                                             unsigned long long* types) {
  return OnGpu(device, [&](const GpuCall& c) -> nvmlReturn_t {
    return Put(c.state->supported_events, types);
  });
}

GW_NVML_EXPORT nvmlReturn_t nvmlDeviceRegisterEvents(nvmlDevice_t device, unsigned long long types,
                                                     nvmlEventSet_t set_handle) {
  return OnGpu(device, [&](const GpuCall& c) -> nvmlReturn_t {
    std::shared_ptr<EventSet> set = Simulator::Get().FindEventSet(set_handle);
    if (!set) return NVML_ERROR_INVALID_ARGUMENT;
    const Opt<uint64_t>& supported = c.state->supported_events;
    if (!supported || (types & ~*supported) != 0) return NVML_ERROR_NOT_SUPPORTED;
    std::lock_guard<std::mutex> lock(set->mu);
    // Events that happened before this moment are not delivered, as with NVML.
    set->registrations.push_back({c.index, types, c.session->Now()});
    return NVML_SUCCESS;
  });
}

GW_NVML_EXPORT nvmlReturn_t nvmlEventSetWait_v2(nvmlEventSet_t set, nvmlEventData_t* data,
                                                unsigned int timeout_ms) {
  return WaitForEvent(set, data == nullptr, timeout_ms,
                      [data](nvmlDevice_t device, const EventSpec& e) {
                        std::memset(data, 0, sizeof *data);
                        data->device = device;
                        data->eventType = e.type;
                        data->eventData = e.data;
                        data->gpuInstanceId = NVML_VALUE_NOT_AVAILABLE_UINT;
                        data->computeInstanceId = NVML_VALUE_NOT_AVAILABLE_UINT;
                      });
}

// The v1 record: device, eventType, eventData (24 bytes).
struct EventDataV1 {
  nvmlDevice_t device;
  unsigned long long eventType;
  unsigned long long eventData;
};
static_assert(sizeof(EventDataV1) == 24, "v1 event data is 24 bytes");

GW_NVML_EXPORT nvmlReturn_t nvmlEventSetWait(nvmlEventSet_t set, EventDataV1* data,
                                             unsigned int timeout_ms) {
  return WaitForEvent(set, data == nullptr, timeout_ms,
                      [data](nvmlDevice_t device, const EventSpec& e) {
                        data->device = device;
                        data->eventType = e.type;
                        data->eventData = e.data;
                      });
}

GW_NVML_EXPORT nvmlReturn_t nvmlEventSetFree(nvmlEventSet_t set) {
  if (!Simulator::Get().Current()) return NVML_ERROR_UNINITIALIZED;
  return Simulator::Get().FreeEventSet(set) ? NVML_SUCCESS : NVML_ERROR_INVALID_ARGUMENT;
}
