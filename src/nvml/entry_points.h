// Every NVML entry point gpuwarden calls, in one declarative X-macro list.
//
// GW_NVML_ENTRY_POINTS(X) expands X once per logical entry point:
//
//   X(Name, ReturnType, (parameter list), (argument names), "symbol", "older symbol", ...)
//
// The symbols are the candidates a loader tries, newest first; they must all take
// exactly the parameter list given (same ABI). A newer symbol with a different
// struct layout is a separate logical entry (see the *V1 process lists and
// DeviceGetMemoryInfo vs DeviceGetMemoryInfoV2), so a fallback can never feed a
// struct of one layout to a function that expects another.
//
// Everything else (the NvmlApi interface, the dlopen stubs, the EntryPoint enum
// and the symbol table below) is generated from this list.
#ifndef GPUWARDEN_NVML_ENTRY_POINTS_H_
#define GPUWARDEN_NVML_ENTRY_POINTS_H_

#include <array>
#include <cstddef>

#include "nvml/nvml_abi.h"

// clang-format off
#define GW_NVML_ENTRY_POINTS(X)                                                                  \
  /* Library lifetime and error text. */                                                         \
  X(Init, nvmlReturn_t, (), (), "nvmlInit_v2", "nvmlInit")                                        \
  X(Shutdown, nvmlReturn_t, (), (), "nvmlShutdown")                                               \
  X(ErrorString, const char*, (nvmlReturn_t result), (result), "nvmlErrorString")                 \
  /* System. */                                                                                  \
  X(SystemGetDriverVersion, nvmlReturn_t, (char* version, unsigned int length),                   \
    (version, length), "nvmlSystemGetDriverVersion")                                             \
  X(SystemGetNVMLVersion, nvmlReturn_t, (char* version, unsigned int length),                     \
    (version, length), "nvmlSystemGetNVMLVersion")                                               \
  /* The plain one reports the driver's own CUDA version; _v2 asks libcuda and */               \
  /* fails where libcuda is absent, so it is a separate entry tried second. */                  \
  X(SystemGetCudaDriverVersion, nvmlReturn_t, (int* cuda_driver_version),                         \
    (cuda_driver_version), "nvmlSystemGetCudaDriverVersion")                                     \
  X(SystemGetCudaDriverVersionV2, nvmlReturn_t, (int* cuda_driver_version),                       \
    (cuda_driver_version), "nvmlSystemGetCudaDriverVersion_v2")                                  \
  /* Enumeration and identity. */                                                                \
  X(DeviceGetCount, nvmlReturn_t, (unsigned int* device_count), (device_count),                   \
    "nvmlDeviceGetCount_v2", "nvmlDeviceGetCount")                                               \
  X(DeviceGetHandleByIndex, nvmlReturn_t, (unsigned int index, nvmlDevice_t* device),             \
    (index, device), "nvmlDeviceGetHandleByIndex_v2", "nvmlDeviceGetHandleByIndex")              \
  /* The GPU's own index: an older NVML's enumeration skips GPUs this user */                    \
  /* may not open, so the n-th handle is not always GPU n. */                                    \
  X(DeviceGetIndex, nvmlReturn_t, (nvmlDevice_t device, unsigned int* index), (device, index),   \
    "nvmlDeviceGetIndex")                                                                        \
  X(DeviceGetName, nvmlReturn_t, (nvmlDevice_t device, char* name, unsigned int length),          \
    (device, name, length), "nvmlDeviceGetName")                                                 \
  X(DeviceGetUUID, nvmlReturn_t, (nvmlDevice_t device, char* uuid, unsigned int length),          \
    (device, uuid, length), "nvmlDeviceGetUUID")                                                 \
  X(DeviceGetPciInfo, nvmlReturn_t, (nvmlDevice_t device, nvmlPciInfo_t* pci), (device, pci),     \
    "nvmlDeviceGetPciInfo_v3")                                                                   \
  X(DeviceGetSerial, nvmlReturn_t, (nvmlDevice_t device, char* serial, unsigned int length),      \
    (device, serial, length), "nvmlDeviceGetSerial")                                             \
  X(DeviceGetMinorNumber, nvmlReturn_t, (nvmlDevice_t device, unsigned int* minor_number),        \
    (device, minor_number), "nvmlDeviceGetMinorNumber")                                          \
  /* Memory: v2 adds `reserved` and needs the version word; v1 is the fallback. */               \
  X(DeviceGetMemoryInfoV2, nvmlReturn_t, (nvmlDevice_t device, nvmlMemory_v2_t* memory),          \
    (device, memory), "nvmlDeviceGetMemoryInfo_v2")                                              \
  X(DeviceGetMemoryInfo, nvmlReturn_t, (nvmlDevice_t device, nvmlMemory_t* memory),               \
    (device, memory), "nvmlDeviceGetMemoryInfo")                                                 \
  X(DeviceGetUtilizationRates, nvmlReturn_t,                                                      \
    (nvmlDevice_t device, nvmlUtilization_t* utilization), (device, utilization),                \
    "nvmlDeviceGetUtilizationRates")                                                             \
  /* Running processes: _v3 and _v2 take the 24-byte entry (but see the stride */               \
  /* guard in process_info.h); the unversioned v1 symbol takes the 16-byte one. */              \
  X(DeviceGetComputeRunningProcesses, nvmlReturn_t,                                               \
    (nvmlDevice_t device, unsigned int* info_count, nvmlProcessInfo_t* infos),                    \
    (device, info_count, infos), "nvmlDeviceGetComputeRunningProcesses_v3",                      \
    "nvmlDeviceGetComputeRunningProcesses_v2")                                                   \
  X(DeviceGetComputeRunningProcessesV1, nvmlReturn_t,                                             \
    (nvmlDevice_t device, unsigned int* info_count, nvmlProcessInfo_v1_t* infos),                 \
    (device, info_count, infos), "nvmlDeviceGetComputeRunningProcesses")                         \
  X(DeviceGetGraphicsRunningProcesses, nvmlReturn_t,                                              \
    (nvmlDevice_t device, unsigned int* info_count, nvmlProcessInfo_t* infos),                    \
    (device, info_count, infos), "nvmlDeviceGetGraphicsRunningProcesses_v3",                     \
    "nvmlDeviceGetGraphicsRunningProcesses_v2")                                                  \
  X(DeviceGetGraphicsRunningProcessesV1, nvmlReturn_t,                                            \
    (nvmlDevice_t device, unsigned int* info_count, nvmlProcessInfo_v1_t* infos),                 \
    (device, info_count, infos), "nvmlDeviceGetGraphicsRunningProcesses")                        \
  X(DeviceGetProcessUtilization, nvmlReturn_t,                                                    \
    (nvmlDevice_t device, nvmlProcessUtilizationSample_t* utilization,                            \
     unsigned int* process_samples_count, unsigned long long last_seen_time_stamp),               \
    (device, utilization, process_samples_count, last_seen_time_stamp),                          \
    "nvmlDeviceGetProcessUtilization")                                                           \
  /* Thermal, power, clocks, performance state. */                                               \
  X(DeviceGetTemperature, nvmlReturn_t,                                                           \
    (nvmlDevice_t device, nvmlTemperatureSensors_t sensor_type, unsigned int* temp),              \
    (device, sensor_type, temp), "nvmlDeviceGetTemperature")                                     \
  X(DeviceGetTemperatureThreshold, nvmlReturn_t,                                                  \
    (nvmlDevice_t device, nvmlTemperatureThresholds_t threshold_type, unsigned int* temp),        \
    (device, threshold_type, temp), "nvmlDeviceGetTemperatureThreshold")                         \
  X(DeviceGetFanSpeed, nvmlReturn_t, (nvmlDevice_t device, unsigned int* speed),                  \
    (device, speed), "nvmlDeviceGetFanSpeed")                                                    \
  X(DeviceGetPowerUsage, nvmlReturn_t, (nvmlDevice_t device, unsigned int* power_mw),             \
    (device, power_mw), "nvmlDeviceGetPowerUsage")                                               \
  X(DeviceGetEnforcedPowerLimit, nvmlReturn_t, (nvmlDevice_t device, unsigned int* limit_mw),     \
    (device, limit_mw), "nvmlDeviceGetEnforcedPowerLimit")                                       \
  X(DeviceGetPowerManagementLimit, nvmlReturn_t, (nvmlDevice_t device, unsigned int* limit_mw),   \
    (device, limit_mw), "nvmlDeviceGetPowerManagementLimit")                                     \
  X(DeviceGetPowerManagementDefaultLimit, nvmlReturn_t,                                           \
    (nvmlDevice_t device, unsigned int* limit_mw), (device, limit_mw),                            \
    "nvmlDeviceGetPowerManagementDefaultLimit")                                                  \
  X(DeviceGetClockInfo, nvmlReturn_t,                                                             \
    (nvmlDevice_t device, nvmlClockType_t type, unsigned int* clock_mhz),                         \
    (device, type, clock_mhz), "nvmlDeviceGetClockInfo")                                         \
  X(DeviceGetMaxClockInfo, nvmlReturn_t,                                                          \
    (nvmlDevice_t device, nvmlClockType_t type, unsigned int* clock_mhz),                         \
    (device, type, clock_mhz), "nvmlDeviceGetMaxClockInfo")                                      \
  X(DeviceGetPerformanceState, nvmlReturn_t, (nvmlDevice_t device, nvmlPstates_t* p_state),       \
    (device, p_state), "nvmlDeviceGetPerformanceState")                                          \
  X(DeviceGetCurrentClocksEventReasons, nvmlReturn_t,                                             \
    (nvmlDevice_t device, unsigned long long* reasons), (device, reasons),                       \
    "nvmlDeviceGetCurrentClocksEventReasons", "nvmlDeviceGetCurrentClocksThrottleReasons")       \
  X(DeviceGetSupportedClocksEventReasons, nvmlReturn_t,                                           \
    (nvmlDevice_t device, unsigned long long* reasons), (device, reasons),                       \
    "nvmlDeviceGetSupportedClocksEventReasons", "nvmlDeviceGetSupportedClocksThrottleReasons")   \
  /* Modes. */                                                                                   \
  X(DeviceGetPersistenceMode, nvmlReturn_t, (nvmlDevice_t device, nvmlEnableState_t* mode),       \
    (device, mode), "nvmlDeviceGetPersistenceMode")                                              \
  X(DeviceGetComputeMode, nvmlReturn_t, (nvmlDevice_t device, nvmlComputeMode_t* mode),           \
    (device, mode), "nvmlDeviceGetComputeMode")                                                  \
  X(DeviceGetMigMode, nvmlReturn_t,                                                               \
    (nvmlDevice_t device, unsigned int* current_mode, unsigned int* pending_mode),                \
    (device, current_mode, pending_mode), "nvmlDeviceGetMigMode")                                \
  /* Memory health. */                                                                           \
  X(DeviceGetEccMode, nvmlReturn_t,                                                               \
    (nvmlDevice_t device, nvmlEnableState_t* current, nvmlEnableState_t* pending),                \
    (device, current, pending), "nvmlDeviceGetEccMode")                                          \
  X(DeviceGetTotalEccErrors, nvmlReturn_t,                                                        \
    (nvmlDevice_t device, nvmlMemoryErrorType_t error_type, nvmlEccCounterType_t counter_type,    \
     unsigned long long* ecc_counts),                                                             \
    (device, error_type, counter_type, ecc_counts), "nvmlDeviceGetTotalEccErrors")               \
  X(DeviceGetRetiredPages, nvmlReturn_t,                                                          \
    (nvmlDevice_t device, nvmlPageRetirementCause_t cause, unsigned int* page_count,              \
     unsigned long long* addresses),                                                              \
    (device, cause, page_count, addresses), "nvmlDeviceGetRetiredPages")                         \
  X(DeviceGetRetiredPagesPendingStatus, nvmlReturn_t,                                             \
    (nvmlDevice_t device, nvmlEnableState_t* is_pending), (device, is_pending),                  \
    "nvmlDeviceGetRetiredPagesPendingStatus")                                                    \
  X(DeviceGetRemappedRows, nvmlReturn_t,                                                          \
    (nvmlDevice_t device, unsigned int* corr_rows, unsigned int* unc_rows,                        \
     unsigned int* is_pending, unsigned int* failure_occurred),                                   \
    (device, corr_rows, unc_rows, is_pending, failure_occurred), "nvmlDeviceGetRemappedRows")    \
  /* PCIe. */                                                                                    \
  X(DeviceGetCurrPcieLinkGeneration, nvmlReturn_t, (nvmlDevice_t device, unsigned int* gen),      \
    (device, gen), "nvmlDeviceGetCurrPcieLinkGeneration")                                        \
  X(DeviceGetCurrPcieLinkWidth, nvmlReturn_t, (nvmlDevice_t device, unsigned int* width),         \
    (device, width), "nvmlDeviceGetCurrPcieLinkWidth")                                           \
  X(DeviceGetMaxPcieLinkGeneration, nvmlReturn_t, (nvmlDevice_t device, unsigned int* gen),       \
    (device, gen), "nvmlDeviceGetMaxPcieLinkGeneration")                                         \
  X(DeviceGetMaxPcieLinkWidth, nvmlReturn_t, (nvmlDevice_t device, unsigned int* width),          \
    (device, width), "nvmlDeviceGetMaxPcieLinkWidth")                                            \
  X(DeviceGetGpuMaxPcieLinkGeneration, nvmlReturn_t, (nvmlDevice_t device, unsigned int* gen),    \
    (device, gen), "nvmlDeviceGetGpuMaxPcieLinkGeneration")                                      \
  X(DeviceGetPcieReplayCounter, nvmlReturn_t, (nvmlDevice_t device, unsigned int* value),         \
    (device, value), "nvmlDeviceGetPcieReplayCounter")                                           \
  /* NVLink and topology. */                                                                     \
  X(DeviceGetNvLinkState, nvmlReturn_t,                                                           \
    (nvmlDevice_t device, unsigned int link, nvmlEnableState_t* is_active),                       \
    (device, link, is_active), "nvmlDeviceGetNvLinkState")                                       \
  X(DeviceGetNvLinkRemotePciInfo, nvmlReturn_t,                                                   \
    (nvmlDevice_t device, unsigned int link, nvmlPciInfo_t* pci), (device, link, pci),            \
    "nvmlDeviceGetNvLinkRemotePciInfo_v2")                                                       \
  X(DeviceGetTopologyCommonAncestor, nvmlReturn_t,                                                \
    (nvmlDevice_t device1, nvmlDevice_t device2, nvmlGpuTopologyLevel_t* path_info),              \
    (device1, device2, path_info), "nvmlDeviceGetTopologyCommonAncestor")                        \
  /* Events (for the watch daemon). Only the 32-byte _v2 wait is declared. */                    \
  X(EventSetCreate, nvmlReturn_t, (nvmlEventSet_t* set), (set), "nvmlEventSetCreate")             \
  X(DeviceRegisterEvents, nvmlReturn_t,                                                           \
    (nvmlDevice_t device, unsigned long long event_types, nvmlEventSet_t set),                    \
    (device, event_types, set), "nvmlDeviceRegisterEvents")                                      \
  X(DeviceGetSupportedEventTypes, nvmlReturn_t,                                                   \
    (nvmlDevice_t device, unsigned long long* event_types), (device, event_types),               \
    "nvmlDeviceGetSupportedEventTypes")                                                          \
  X(EventSetWait, nvmlReturn_t,                                                                   \
    (nvmlEventSet_t set, nvmlEventData_t* data, unsigned int timeout_ms),                         \
    (set, data, timeout_ms), "nvmlEventSetWait_v2")                                              \
  X(EventSetFree, nvmlReturn_t, (nvmlEventSet_t set), (set), "nvmlEventSetFree")
// clang-format on

namespace gw::nvml {

// One enumerator per logical entry point, in list order: kInit, kShutdown, ...
enum class EntryPoint : int {
#define GW_NVML_ENUM_(name, ret, params, args, ...) k##name,
  GW_NVML_ENTRY_POINTS(GW_NVML_ENUM_)
#undef GW_NVML_ENUM_
};

inline constexpr size_t kMaxSymbolCandidates = 3;

struct EntryPointInfo {
  const char* name;  // Logical name ("DeviceGetMemoryInfoV2").
  // Candidate symbols, newest first; unused slots are nullptr.
  std::array<const char*, kMaxSymbolCandidates> symbols;
};

inline constexpr EntryPointInfo kEntryPoints[] = {
#define GW_NVML_INFO_(name, ret, params, args, ...) {#name, {__VA_ARGS__}},
    GW_NVML_ENTRY_POINTS(GW_NVML_INFO_)
#undef GW_NVML_INFO_
};

inline constexpr size_t kEntryPointCount = sizeof(kEntryPoints) / sizeof(kEntryPoints[0]);

inline constexpr const EntryPointInfo& InfoOf(EntryPoint ep) {
  return kEntryPoints[static_cast<size_t>(ep)];
}

}  // namespace gw::nvml

#endif  // GPUWARDEN_NVML_ENTRY_POINTS_H_
