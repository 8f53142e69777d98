// The subset of the NVML C ABI that gpuwarden uses, declared from the published
// facts (struct layouts measured on x86_64 LP64, enum values, return codes) so
// that neither nvml.h nor the CUDA toolkit is needed at build time.
//
// Both the product's loader (src/nvml) and the simulated library (sim/) use
// these declarations. The C test client in sim/client declares its own copy on
// purpose, so a mistake here cannot hide in both sides of a test.
#ifndef GPUWARDEN_NVML_NVML_ABI_H_
#define GPUWARDEN_NVML_NVML_ABI_H_

#include <cstddef>
#include <cstdint>

extern "C" {

typedef int nvmlReturn_t;  // C enum: 4 bytes on x86_64.
typedef struct nvmlDevice_st* nvmlDevice_t;
typedef struct nvmlEventSet_st* nvmlEventSet_t;
typedef int nvmlEnableState_t;
typedef int nvmlTemperatureSensors_t;
typedef int nvmlTemperatureThresholds_t;
typedef int nvmlClockType_t;
typedef int nvmlPstates_t;
typedef int nvmlComputeMode_t;
typedef int nvmlMemoryErrorType_t;
typedef int nvmlEccCounterType_t;
typedef int nvmlPageRetirementCause_t;
typedef int nvmlGpuTopologyLevel_t;

// nvmlReturn_t values.
enum : int {
  NVML_SUCCESS = 0,
  NVML_ERROR_UNINITIALIZED = 1,
  NVML_ERROR_INVALID_ARGUMENT = 2,
  NVML_ERROR_NOT_SUPPORTED = 3,
  NVML_ERROR_NO_PERMISSION = 4,
  NVML_ERROR_ALREADY_INITIALIZED = 5,
  NVML_ERROR_NOT_FOUND = 6,
  NVML_ERROR_INSUFFICIENT_SIZE = 7,
  NVML_ERROR_INSUFFICIENT_POWER = 8,
  NVML_ERROR_DRIVER_NOT_LOADED = 9,
  NVML_ERROR_TIMEOUT = 10,
  NVML_ERROR_IRQ_ISSUE = 11,
  NVML_ERROR_LIBRARY_NOT_FOUND = 12,
  NVML_ERROR_FUNCTION_NOT_FOUND = 13,
  NVML_ERROR_CORRUPTED_INFOROM = 14,
  NVML_ERROR_GPU_IS_LOST = 15,
  NVML_ERROR_RESET_REQUIRED = 16,
  NVML_ERROR_OPERATING_SYSTEM = 17,
  NVML_ERROR_LIB_RM_VERSION_MISMATCH = 18,
  NVML_ERROR_IN_USE = 19,
  NVML_ERROR_MEMORY = 20,
  NVML_ERROR_NO_DATA = 21,
  NVML_ERROR_VGPU_ECC_NOT_SUPPORTED = 22,
  NVML_ERROR_INSUFFICIENT_RESOURCES = 23,
  NVML_ERROR_FREQ_NOT_SUPPORTED = 24,
  NVML_ERROR_ARGUMENT_VERSION_MISMATCH = 25,
  NVML_ERROR_DEPRECATED = 26,
  NVML_ERROR_NOT_READY = 27,
  NVML_ERROR_GPU_NOT_FOUND = 28,
  NVML_ERROR_INVALID_STATE = 29,
  NVML_ERROR_UNKNOWN = 999,
};

// Buffer sizes.
enum : unsigned {
  NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE = 80,
  NVML_SYSTEM_NVML_VERSION_BUFFER_SIZE = 80,
  NVML_DEVICE_NAME_V2_BUFFER_SIZE = 96,
  NVML_DEVICE_UUID_V2_BUFFER_SIZE = 96,
  NVML_DEVICE_SERIAL_BUFFER_SIZE = 30,
  NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE = 32,
  NVML_DEVICE_PCI_BUS_ID_BUFFER_V2_SIZE = 16,
};

enum : int { NVML_TEMPERATURE_GPU = 0 };
enum : int {
  NVML_TEMPERATURE_THRESHOLD_SHUTDOWN = 0,
  NVML_TEMPERATURE_THRESHOLD_SLOWDOWN = 1,
};
enum : int { NVML_CLOCK_GRAPHICS = 0, NVML_CLOCK_SM = 1, NVML_CLOCK_MEM = 2, NVML_CLOCK_VIDEO = 3 };
enum : int { NVML_FEATURE_DISABLED = 0, NVML_FEATURE_ENABLED = 1 };
enum : int {
  NVML_COMPUTEMODE_DEFAULT = 0,
  NVML_COMPUTEMODE_EXCLUSIVE_THREAD = 1,
  NVML_COMPUTEMODE_PROHIBITED = 2,
  NVML_COMPUTEMODE_EXCLUSIVE_PROCESS = 3,
};
enum : int { NVML_MEMORY_ERROR_TYPE_CORRECTED = 0, NVML_MEMORY_ERROR_TYPE_UNCORRECTED = 1 };
enum : int { NVML_VOLATILE_ECC = 0, NVML_AGGREGATE_ECC = 1 };
enum : int {
  NVML_PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS = 0,
  NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR = 1,
};
enum : int {
  NVML_TOPOLOGY_INTERNAL = 0,
  NVML_TOPOLOGY_SINGLE = 10,
  NVML_TOPOLOGY_MULTIPLE = 20,
  NVML_TOPOLOGY_HOSTBRIDGE = 30,
  NVML_TOPOLOGY_NODE = 40,
  NVML_TOPOLOGY_SYSTEM = 50,
};
enum : int { NVML_PSTATE_UNKNOWN = 32 };
enum : unsigned { NVML_DEVICE_MIG_DISABLE = 0, NVML_DEVICE_MIG_ENABLE = 1 };

// NVLink link indices are probed up to this many; a GPU answers
// NOT_SUPPORTED/INVALID_ARGUMENT past its last link (the header constant was
// 12, then 18, now 36, so loops stop at the first such answer).
enum : unsigned { NVML_NVLINK_MAX_LINKS = 18 };

// nvmlInitWithFlags flags.
enum : unsigned { NVML_INIT_FLAG_NO_GPUS = 1, NVML_INIT_FLAG_NO_ATTACH = 2 };

// Event types (u64 bits).
inline constexpr unsigned long long nvmlEventTypeSingleBitEccError = 0x1ULL;
inline constexpr unsigned long long nvmlEventTypeDoubleBitEccError = 0x2ULL;
inline constexpr unsigned long long nvmlEventTypePState = 0x4ULL;
inline constexpr unsigned long long nvmlEventTypeXidCriticalError = 0x8ULL;

// nvmlPciInfo_t as filled by nvmlDeviceGetPciInfo_v3: 68 bytes, align 4.
typedef struct nvmlPciInfo_st {
  char busIdLegacy[16];  // "%04X:%02X:%02X.0"
  unsigned int domain;
  unsigned int bus;
  unsigned int device;
  unsigned int pciDeviceId;  // (device << 16) | vendor
  unsigned int pciSubSystemId;
  char busId[32];  // "%08X:%02X:%02X.0"
} nvmlPciInfo_t;

typedef struct nvmlMemory_st {
  unsigned long long total;
  unsigned long long free;
  unsigned long long used;
} nvmlMemory_t;

typedef struct nvmlMemory_v2_st {
  unsigned int version;  // Must be nvmlMemory_v2.
  unsigned long long total;
  unsigned long long reserved;
  unsigned long long free;
  unsigned long long used;
} nvmlMemory_v2_t;

// NVML_STRUCT_VERSION(Memory, 2) = sizeof | (2 << 24).
inline constexpr unsigned int nvmlMemory_v2 =
    static_cast<unsigned int>(sizeof(nvmlMemory_v2_t)) | (2u << 24);

typedef struct nvmlUtilization_st {
  unsigned int gpu;
  unsigned int memory;
} nvmlUtilization_t;

// Used by the v1 running-process functions only.
typedef struct nvmlProcessInfo_v1_st {
  unsigned int pid;
  unsigned long long usedGpuMemory;
} nvmlProcessInfo_v1_t;

// Used by the _v2 and _v3 running-process functions. R535-era drivers were seen
// writing a larger entry through _v3 without a version change (see the stride
// guard in src/nvml), so callers must not trust sizeof() alone.
typedef struct nvmlProcessInfo_st {
  unsigned int pid;
  unsigned long long usedGpuMemory;  // NVML_VALUE_NOT_AVAILABLE when unknown.
  unsigned int gpuInstanceId;        // 0xFFFFFFFF when not MIG.
  unsigned int computeInstanceId;    // 0xFFFFFFFF when not MIG.
} nvmlProcessInfo_t;

inline constexpr unsigned long long NVML_VALUE_NOT_AVAILABLE_ULL = ~0ULL;
inline constexpr unsigned int NVML_VALUE_NOT_AVAILABLE_UINT = ~0U;

typedef struct nvmlProcessUtilizationSample_st {
  unsigned int pid;
  unsigned long long timeStamp;  // CPU timestamp in microseconds.
  unsigned int smUtil;
  unsigned int memUtil;
  unsigned int encUtil;
  unsigned int decUtil;
} nvmlProcessUtilizationSample_t;

// nvmlEventSetWait_v2's record.
typedef struct nvmlEventData_st {
  nvmlDevice_t device;
  unsigned long long eventType;
  unsigned long long eventData;  // Xid number for XidCriticalError; 999 = unknown.
  unsigned int gpuInstanceId;
  unsigned int computeInstanceId;
} nvmlEventData_t;

}  // extern "C"

static_assert(sizeof(nvmlPciInfo_t) == 68, "nvmlPciInfo_t v3 is 68 bytes");
static_assert(offsetof(nvmlPciInfo_t, busId) == 36, "busId at 36");
static_assert(sizeof(nvmlMemory_t) == 24, "nvmlMemory_t is 24 bytes");
static_assert(sizeof(nvmlMemory_v2_t) == 40, "nvmlMemory_v2_t is 40 bytes");
static_assert(offsetof(nvmlMemory_v2_t, total) == 8, "total at 8");
static_assert(offsetof(nvmlMemory_v2_t, used) == 32, "used at 32");
static_assert(nvmlMemory_v2 == 0x02000028u, "nvmlMemory_v2 version word");
static_assert(sizeof(nvmlUtilization_t) == 8, "nvmlUtilization_t is 8 bytes");
static_assert(sizeof(nvmlProcessInfo_v1_t) == 16, "v1 process info is 16 bytes");
static_assert(sizeof(nvmlProcessInfo_t) == 24, "v2 process info is 24 bytes");
static_assert(sizeof(nvmlProcessUtilizationSample_t) == 32, "process sample is 32 bytes");
static_assert(offsetof(nvmlProcessUtilizationSample_t, smUtil) == 16, "smUtil at 16");
static_assert(sizeof(nvmlEventData_t) == 32, "event data v2 is 32 bytes");

#endif  // GPUWARDEN_NVML_NVML_ABI_H_
