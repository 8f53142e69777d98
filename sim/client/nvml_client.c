/* An independent NVML client: it declares its own copy of the NVML types and
 * prototypes (on purpose not src/nvml/nvml_abi.h, so a layout mistake cannot
 * hide on both sides of a test), dlopens an NVML library and prints every value
 * it reads as one `key=value` line. A failed call prints the NVML error name
 * (`gpu0.fan=NOT_SUPPORTED`); a symbol the library lacks prints `NO_SYMBOL`.
 *
 * Usage: gw_nvml_client [--events SECONDS] [LIBRARY]   (default libnvidia-ml.so.1)
 * With --events it also registers every supported event on every GPU and prints
 * the events that arrive within SECONDS.
 * Exit status: 0 when it ran (whatever NVML answered), 2 when the library could
 * not be loaded or the command line is wrong. */
#define _POSIX_C_SOURCE 200809L

#include <dlfcn.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- NVML declarations (x86_64 LP64) ---- */

typedef int nvmlReturn_t;
typedef struct nvmlDevice_st* nvmlDevice_t;
typedef struct nvmlEventSet_st* nvmlEventSet_t;

typedef struct {
  char busIdLegacy[16];
  unsigned int domain, bus, device, pciDeviceId, pciSubSystemId;
  char busId[32];
} PciInfoV3;

typedef struct {
  char busId[16];
  unsigned int domain, bus, device, pciDeviceId, pciSubSystemId;
  unsigned int reserved[4];
} PciInfoV2;

typedef struct {
  unsigned long long total, free, used;
} Memory;

typedef struct {
  unsigned int version;
  unsigned long long total, reserved, free, used;
} MemoryV2;

typedef struct {
  unsigned int gpu, memory;
} Utilization;

typedef struct {
  unsigned int pid;
  unsigned long long usedGpuMemory;
} ProcessInfoV1;

typedef struct {
  unsigned int pid;
  unsigned long long usedGpuMemory;
  unsigned int gpuInstanceId, computeInstanceId;
} ProcessInfo;

typedef struct {
  unsigned int pid;
  unsigned long long timeStamp;
  unsigned int smUtil, memUtil, encUtil, decUtil;
} ProcessSample;

typedef struct {
  nvmlDevice_t device;
  unsigned long long eventType, eventData;
  unsigned int gpuInstanceId, computeInstanceId;
} EventData;

typedef struct {
  unsigned long long total, free, used;
} Bar1Memory;

typedef struct {
  unsigned int fieldId, scopeId;
  long long timestamp, latencyUsec;
  int valueType;
  nvmlReturn_t nvmlReturn;
  unsigned long long value; /* The union's widest member. */
} FieldValue;

_Static_assert(sizeof(Bar1Memory) == 24, "bar1 memory");
_Static_assert(sizeof(FieldValue) == 40, "field value");
_Static_assert(offsetof(FieldValue, value) == 32, "field value's value");
_Static_assert(sizeof(PciInfoV3) == 68, "v3 pci info");
_Static_assert(offsetof(PciInfoV3, busId) == 36, "busId offset");
_Static_assert(sizeof(PciInfoV2) == 52, "v2 pci info");
_Static_assert(sizeof(MemoryV2) == 40, "memory v2");
_Static_assert(sizeof(ProcessInfoV1) == 16, "process v1");
_Static_assert(sizeof(ProcessInfo) == 24, "process v2");
_Static_assert(sizeof(ProcessSample) == 32, "process sample");
_Static_assert(sizeof(EventData) == 32, "event data v2");

#define MEMORY_V2_VERSION ((unsigned int)(sizeof(MemoryV2) | (2u << 24)))
#define NOT_AVAILABLE_ULL (~0ULL)
#define NOT_AVAILABLE_UINT (~0U)

enum {
  R_SUCCESS = 0,
  R_INVALID_ARGUMENT = 2,
  R_INSUFFICIENT_SIZE = 7,
  R_TIMEOUT = 10,
};

/* ---- Loading ---- */

static void* lib;

/* A symbol as a function pointer (POSIX guarantees the conversion works). */
typedef void (*AnyFn)(void);
static AnyFn sym(const char* name) {
  void* p = dlsym(lib, name);
  AnyFn f;
  memcpy(&f, &p, sizeof f);
  return f;
}

typedef const char* (*ErrorStringFn)(nvmlReturn_t);
typedef nvmlReturn_t (*VoidFn)(void);
typedef nvmlReturn_t (*UintPtrFn)(unsigned int*);
typedef nvmlReturn_t (*IntPtrFn)(int*);
typedef nvmlReturn_t (*StrFn)(char*, unsigned int);
typedef nvmlReturn_t (*ByIndexFn)(unsigned int, nvmlDevice_t*);
typedef nvmlReturn_t (*ByStrFn)(const char*, nvmlDevice_t*);
typedef nvmlReturn_t (*DevUintFn)(nvmlDevice_t, unsigned int*);
typedef nvmlReturn_t (*DevStrFn)(nvmlDevice_t, char*, unsigned int);
typedef nvmlReturn_t (*DevPtrFn)(nvmlDevice_t, void*);
typedef nvmlReturn_t (*DevIntUintFn)(nvmlDevice_t, int, unsigned int*);
typedef nvmlReturn_t (*DevU64Fn)(nvmlDevice_t, unsigned long long*);
typedef nvmlReturn_t (*DevIntPtrFn)(nvmlDevice_t, int*);
typedef nvmlReturn_t (*DevTwoIntFn)(nvmlDevice_t, int*, int*);
typedef nvmlReturn_t (*DevTwoUintFn)(nvmlDevice_t, unsigned int*, unsigned int*);
typedef nvmlReturn_t (*EccFn)(nvmlDevice_t, int, int, unsigned long long*);
typedef nvmlReturn_t (*PagesFn)(nvmlDevice_t, int, unsigned int*, unsigned long long*);
typedef nvmlReturn_t (*RowsFn)(nvmlDevice_t, unsigned int*, unsigned int*, unsigned int*,
                               unsigned int*);
typedef nvmlReturn_t (*ProcsFn)(nvmlDevice_t, unsigned int*, void*);
typedef nvmlReturn_t (*ProcUtilFn)(nvmlDevice_t, ProcessSample*, unsigned int*, unsigned long long);
typedef nvmlReturn_t (*LinkStateFn)(nvmlDevice_t, unsigned int, int*);
typedef nvmlReturn_t (*LinkPciFn)(nvmlDevice_t, unsigned int, PciInfoV3*);
typedef nvmlReturn_t (*TopoFn)(nvmlDevice_t, nvmlDevice_t, int*);
typedef nvmlReturn_t (*SetCreateFn)(nvmlEventSet_t*);
typedef nvmlReturn_t (*RegisterFn)(nvmlDevice_t, unsigned long long, nvmlEventSet_t);
typedef nvmlReturn_t (*WaitFn)(nvmlEventSet_t, EventData*, unsigned int);
typedef nvmlReturn_t (*SetFreeFn)(nvmlEventSet_t);
typedef nvmlReturn_t (*FieldsFn)(nvmlDevice_t, int, FieldValue*);

#define GET(type, name) ((type)sym(name))

/* ---- Printing ---- */

static const char* ret_name(nvmlReturn_t r) {
  static const char* const names[] = {"SUCCESS",
                                      "UNINITIALIZED",
                                      "INVALID_ARGUMENT",
                                      "NOT_SUPPORTED",
                                      "NO_PERMISSION",
                                      "ALREADY_INITIALIZED",
                                      "NOT_FOUND",
                                      "INSUFFICIENT_SIZE",
                                      "INSUFFICIENT_POWER",
                                      "DRIVER_NOT_LOADED",
                                      "TIMEOUT",
                                      "IRQ_ISSUE",
                                      "LIBRARY_NOT_FOUND",
                                      "FUNCTION_NOT_FOUND",
                                      "CORRUPTED_INFOROM",
                                      "GPU_IS_LOST",
                                      "RESET_REQUIRED",
                                      "OPERATING_SYSTEM",
                                      "LIB_RM_VERSION_MISMATCH",
                                      "IN_USE",
                                      "MEMORY",
                                      "NO_DATA",
                                      "VGPU_ECC_NOT_SUPPORTED",
                                      "INSUFFICIENT_RESOURCES",
                                      "FREQ_NOT_SUPPORTED",
                                      "ARGUMENT_VERSION_MISMATCH",
                                      "DEPRECATED",
                                      "NOT_READY",
                                      "GPU_NOT_FOUND",
                                      "INVALID_STATE"};
  static char other[32];
  if (r >= 0 && r < (int)(sizeof names / sizeof names[0])) return names[r];
  if (r == 999) return "UNKNOWN";
  snprintf(other, sizeof other, "RETURN_%d", r);
  return other;
}

static char prefix[32];

static void put_str(const char* key, const char* value) { printf("%s%s=%s\n", prefix, key, value); }
static void put_ull(const char* key, unsigned long long v) {
  printf("%s%s=%llu\n", prefix, key, v);
}
static void put_hex(const char* key, unsigned long long v) {
  printf("%s%s=0x%llX\n", prefix, key, v);
}
static void put_err(const char* key, nvmlReturn_t r) { put_str(key, ret_name(r)); }
static void put_nosym(const char* key) { put_str(key, "NO_SYMBOL"); }

/* Keys built from parts. */
static const char* k(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
static const char* k(const char* fmt, ...) {
  static char buf[128];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  return buf;
}

static unsigned long long now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (unsigned long long)ts.tv_sec * 1000000ULL + (unsigned long long)ts.tv_nsec / 1000ULL;
}

/* A used-memory value: bytes, or NOT_AVAILABLE. */
static void put_used(const char* key, unsigned long long v) {
  if (v == NOT_AVAILABLE_ULL) {
    put_str(key, "NOT_AVAILABLE");
  } else {
    put_ull(key, v);
  }
}

static void put_id(const char* key, unsigned int v) {
  if (v == NOT_AVAILABLE_UINT) {
    put_str(key, "NOT_AVAILABLE");
  } else {
    put_ull(key, v);
  }
}

/* ---- Per-query printers ---- */

static void dev_uint(nvmlDevice_t d, const char* symbol, const char* key) {
  DevUintFn f = GET(DevUintFn, symbol);
  unsigned int v = 0;
  nvmlReturn_t r;
  if (!f) {
    put_nosym(key);
    return;
  }
  r = f(d, &v);
  if (r == R_SUCCESS) {
    put_ull(key, v);
  } else {
    put_err(key, r);
  }
}

static void dev_int_uint(nvmlDevice_t d, const char* symbol, int arg, const char* key) {
  DevIntUintFn f = GET(DevIntUintFn, symbol);
  unsigned int v = 0;
  nvmlReturn_t r;
  if (!f) {
    put_nosym(key);
    return;
  }
  r = f(d, arg, &v);
  if (r == R_SUCCESS) {
    put_ull(key, v);
  } else {
    put_err(key, r);
  }
}

static void dev_str(nvmlDevice_t d, const char* symbol, const char* key) {
  DevStrFn f = GET(DevStrFn, symbol);
  char buf[256];
  nvmlReturn_t r;
  if (!f) {
    put_nosym(key);
    return;
  }
  r = f(d, buf, sizeof buf);
  if (r == R_SUCCESS) {
    put_str(key, buf);
  } else {
    put_err(key, r);
  }
}

/* A call that fills one unsigned long long, written out by `put`. */
static void dev_u64_with(nvmlDevice_t d, const char* symbol, const char* key,
                         void (*put)(const char*, unsigned long long)) {
  DevU64Fn f = GET(DevU64Fn, symbol);
  unsigned long long v = 0;
  nvmlReturn_t r;
  if (!f) {
    put_nosym(key);
    return;
  }
  r = f(d, &v);
  if (r == R_SUCCESS) {
    put(key, v);
  } else {
    put_err(key, r);
  }
}

static void dev_mask(nvmlDevice_t d, const char* symbol, const char* key) {
  dev_u64_with(d, symbol, key, put_hex);
}

static void dev_int(nvmlDevice_t d, const char* symbol, const char* key) {
  DevIntPtrFn f = GET(DevIntPtrFn, symbol);
  int v = 0;
  nvmlReturn_t r;
  if (!f) {
    put_nosym(key);
    return;
  }
  r = f(d, &v);
  if (r == R_SUCCESS) {
    put_ull(key, (unsigned long long)v);
  } else {
    put_err(key, r);
  }
}

static void two_values(nvmlDevice_t d, const char* symbol, const char* key) {
  DevTwoIntFn f = GET(DevTwoIntFn, symbol);
  int a = 0, b = 0;
  nvmlReturn_t r;
  char k1[64], k2[64];
  if (!f) {
    put_nosym(key);
    return;
  }
  r = f(d, &a, &b);
  if (r != R_SUCCESS) {
    put_err(key, r);
    return;
  }
  snprintf(k1, sizeof k1, "%s.current", key);
  snprintf(k2, sizeof k2, "%s.pending", key);
  put_ull(k1, (unsigned long long)a);
  put_ull(k2, (unsigned long long)b);
}

static void dev_u64(nvmlDevice_t d, const char* symbol, const char* key) {
  dev_u64_with(d, symbol, key, put_ull);
}

/* A call that fills two unsigned (or non-negative int) values: key.first, key.second. */
static void dev_pair(nvmlDevice_t d, const char* symbol, const char* key, const char* first,
                     const char* second) {
  DevTwoUintFn f = GET(DevTwoUintFn, symbol);
  unsigned int a = 0, b = 0;
  nvmlReturn_t r;
  if (!f) {
    put_nosym(key);
    return;
  }
  r = f(d, &a, &b);
  if (r != R_SUCCESS) {
    put_err(key, r);
    return;
  }
  put_ull(k("%s.%s", key, first), a);
  put_ull(k("%s.%s", key, second), b);
}

static void bar1(nvmlDevice_t d) {
  DevPtrFn f = GET(DevPtrFn, "nvmlDeviceGetBAR1MemoryInfo");
  Bar1Memory m;
  nvmlReturn_t r;
  if (!f) {
    put_nosym("bar1");
    return;
  }
  r = f(d, &m);
  if (r != R_SUCCESS) {
    put_err("bar1", r);
    return;
  }
  put_ull("bar1.total", m.total);
  put_ull("bar1.free", m.free);
  put_ull("bar1.used", m.used);
}

/* nvmlDeviceGetFieldValues: memory temperature (82), total energy (83), NVLink count (91). */
static void field_values(nvmlDevice_t d) {
  static const struct {
    unsigned int id;
    const char* key;
  } fields[] = {{82, "field.memory_temp"}, {83, "field.energy_mj"}, {91, "field.nvlink_count"}};
  FieldsFn f = GET(FieldsFn, "nvmlDeviceGetFieldValues");
  FieldValue v[3];
  nvmlReturn_t r;
  int i;
  if (!f) {
    put_nosym("field");
    return;
  }
  memset(v, 0, sizeof v);
  for (i = 0; i < 3; ++i) v[i].fieldId = fields[i].id;
  r = f(d, 3, v);
  if (r != R_SUCCESS) {
    put_err("field", r);
    return;
  }
  for (i = 0; i < 3; ++i) {
    if (v[i].nvmlReturn != R_SUCCESS) {
      put_err(fields[i].key, v[i].nvmlReturn);
    } else if (v[i].valueType == 1) { /* NVML_VALUE_TYPE_UNSIGNED_INT */
      unsigned int u;
      memcpy(&u, &v[i].value, sizeof u);
      put_ull(fields[i].key, u);
    } else {
      put_ull(fields[i].key, v[i].value);
    }
  }
}

static void pci_v3(nvmlDevice_t d, PciInfoV3* out, int* ok) {
  DevPtrFn f = GET(DevPtrFn, "nvmlDeviceGetPciInfo_v3");
  nvmlReturn_t r;
  *ok = 0;
  if (!f) {
    put_nosym("pci");
    return;
  }
  memset(out, 0, sizeof *out);
  r = f(d, out);
  if (r != R_SUCCESS) {
    put_err("pci", r);
    return;
  }
  *ok = 1;
  put_str("pci.bus_id", out->busId);
  put_str("pci.bus_id_legacy", out->busIdLegacy);
  put_ull("pci.domain", out->domain);
  put_ull("pci.bus", out->bus);
  put_ull("pci.device", out->device);
  printf("%spci.device_id=0x%08X\n", prefix, out->pciDeviceId);
  printf("%spci.subsystem_id=0x%08X\n", prefix, out->pciSubSystemId);
}

static void pci_old(nvmlDevice_t d, const char* symbol, const char* key) {
  DevPtrFn f = GET(DevPtrFn, symbol);
  PciInfoV2 p;
  nvmlReturn_t r;
  if (!f) {
    put_nosym(key);
    return;
  }
  memset(&p, 0, sizeof p);
  r = f(d, &p);
  if (r != R_SUCCESS) {
    put_err(key, r);
    return;
  }
  put_str(k("%s.bus_id", key), p.busId);
  printf("%s%s.device_id=0x%08X\n", prefix, key, p.pciDeviceId);
}

static void memory(nvmlDevice_t d) {
  DevPtrFn f1 = GET(DevPtrFn, "nvmlDeviceGetMemoryInfo");
  DevPtrFn f2 = GET(DevPtrFn, "nvmlDeviceGetMemoryInfo_v2");
  if (!f1) {
    put_nosym("memory");
  } else {
    Memory m;
    nvmlReturn_t r = f1(d, &m);
    if (r == R_SUCCESS) {
      put_ull("memory.total", m.total);
      put_ull("memory.used", m.used);
      put_ull("memory.free", m.free);
    } else {
      put_err("memory", r);
    }
  }
  if (!f2) {
    put_nosym("memory_v2");
    put_nosym("memory_v2.wrong_version");
  } else {
    MemoryV2 m;
    nvmlReturn_t r;
    memset(&m, 0, sizeof m);
    m.version = MEMORY_V2_VERSION;
    r = f2(d, &m);
    if (r == R_SUCCESS) {
      put_ull("memory_v2.total", m.total);
      put_ull("memory_v2.reserved", m.reserved);
      put_ull("memory_v2.used", m.used);
      put_ull("memory_v2.free", m.free);
    } else {
      put_err("memory_v2", r);
    }
    memset(&m, 0, sizeof m);
    m.version = 1;
    put_err("memory_v2.wrong_version", f2(d, &m));
  }
}

static void utilization(nvmlDevice_t d) {
  DevPtrFn f = GET(DevPtrFn, "nvmlDeviceGetUtilizationRates");
  Utilization u;
  nvmlReturn_t r;
  if (!f) {
    put_nosym("utilization");
    return;
  }
  r = f(d, &u);
  if (r == R_SUCCESS) {
    put_ull("utilization.gpu", u.gpu);
    put_ull("utilization.memory", u.memory);
  } else {
    put_err("utilization", r);
  }
}

static void ecc_counts(nvmlDevice_t d) {
  static const char* const kinds[2] = {"corrected", "uncorrected"};
  static const char* const counters[2] = {"volatile", "aggregate"};
  EccFn f = GET(EccFn, "nvmlDeviceGetTotalEccErrors");
  int e, c;
  for (c = 0; c < 2; ++c) {
    for (e = 0; e < 2; ++e) {
      const char* key = k("ecc.%s.%s", counters[c], kinds[e]);
      unsigned long long v = 0;
      nvmlReturn_t r;
      if (!f) {
        put_nosym(key);
        continue;
      }
      r = f(d, e, c, &v);
      if (r == R_SUCCESS) {
        put_ull(key, v);
      } else {
        put_err(key, r);
      }
    }
  }
}

static void retired_pages(nvmlDevice_t d) {
  static const char* const causes[2] = {"single_bit", "double_bit"};
  PagesFn f = GET(PagesFn, "nvmlDeviceGetRetiredPages");
  int cause;
  for (cause = 0; cause < 2; ++cause) {
    char base[64];
    unsigned int n = 0, i;
    unsigned long long* addr;
    nvmlReturn_t r;
    snprintf(base, sizeof base, "retired_pages.%s", causes[cause]);
    if (!f) {
      put_nosym(base);
      continue;
    }
    r = f(d, cause, &n, NULL);
    if (r != R_SUCCESS && r != R_INSUFFICIENT_SIZE) {
      put_err(base, r);
      continue;
    }
    addr = calloc(n + 1, sizeof *addr);
    r = f(d, cause, &n, addr);
    if (r != R_SUCCESS) {
      put_err(base, r);
    } else {
      put_ull(k("%s.count", base), n);
      for (i = 0; i < n; ++i) put_hex(k("%s.%u", base, i), addr[i]);
    }
    free(addr);
  }
}

static void remapped_rows(nvmlDevice_t d) {
  RowsFn f = GET(RowsFn, "nvmlDeviceGetRemappedRows");
  unsigned int a = 0, b = 0, c = 0, e = 0;
  nvmlReturn_t r;
  if (!f) {
    put_nosym("remapped_rows");
    return;
  }
  r = f(d, &a, &b, &c, &e);
  if (r != R_SUCCESS) {
    put_err("remapped_rows", r);
    return;
  }
  put_ull("remapped_rows.correctable", a);
  put_ull("remapped_rows.uncorrectable", b);
  put_ull("remapped_rows.pending", c);
  put_ull("remapped_rows.failure", e);
}

static void nvlinks(nvmlDevice_t d) {
  LinkStateFn state = GET(LinkStateFn, "nvmlDeviceGetNvLinkState");
  LinkPciFn remote = GET(LinkPciFn, "nvmlDeviceGetNvLinkRemotePciInfo_v2");
  int active = 0;
  unsigned int link;
  nvmlReturn_t r;
  if (!state) {
    put_nosym("nvlink");
    return;
  }
  /* A link index far past any GPU's last link tells "no NVLink" (NOT_SUPPORTED)
     from "has links" (INVALID_ARGUMENT). */
  r = state(d, 1000, &active);
  if (r != R_INVALID_ARGUMENT) {
    put_err("nvlink", r);
    return;
  }
  for (link = 0; link < 64; ++link) {
    r = state(d, link, &active);
    if (r == R_INVALID_ARGUMENT) break;
    if (r == R_SUCCESS) {
      put_ull(k("nvlink.%u", link), (unsigned long long)active);
    } else {
      put_err(k("nvlink.%u", link), r);
    }
    if (!remote) {
      put_nosym(k("nvlink.%u.remote", link));
    } else {
      PciInfoV3 p;
      memset(&p, 0, sizeof p);
      r = remote(d, link, &p);
      if (r == R_SUCCESS) {
        put_str(k("nvlink.%u.remote", link), p.busId);
      } else {
        put_err(k("nvlink.%u.remote", link), r);
      }
    }
  }
  put_ull("nvlink.count", link);
}

/* One running-process list. version 1: 16-byte entries; 2 and 3: 24-byte entries.
   The _v3 buffer gets slack and a poison pattern so the bytes the library wrote
   can be counted (a library writing wider entries shows up here). */
static void processes(nvmlDevice_t d, const char* symbol, const char* key, int version) {
  ProcsFn f = GET(ProcsFn, symbol);
  unsigned int n = 0, i;
  nvmlReturn_t r;
  size_t entry = version == 1 ? sizeof(ProcessInfoV1) : sizeof(ProcessInfo);
  size_t size;
  unsigned char* buf;
  if (!f) {
    put_nosym(key);
    return;
  }
  r = f(d, &n, NULL);
  if (r != R_SUCCESS && r != R_INSUFFICIENT_SIZE) {
    put_err(key, r);
    return;
  }
  put_err(k("%s.size_query", key), r);
  size = version == 3 ? (n + 1) * 64 : n * entry;
  buf = malloc(size ? size : 1);
  memset(buf, 0xA5, size);
  r = f(d, &n, n ? buf : NULL);
  if (r != R_SUCCESS) {
    put_err(key, r);
    free(buf);
    return;
  }
  put_ull(k("%s.count", key), n);
  for (i = 0; i < n; ++i) {
    if (version == 1) {
      ProcessInfoV1 p;
      memcpy(&p, buf + i * entry, sizeof p);
      put_ull(k("%s.%u.pid", key, i), p.pid);
      put_used(k("%s.%u.used", key, i), p.usedGpuMemory);
    } else {
      ProcessInfo p;
      memcpy(&p, buf + i * entry, sizeof p);
      put_ull(k("%s.%u.pid", key, i), p.pid);
      put_used(k("%s.%u.used", key, i), p.usedGpuMemory);
      put_id(k("%s.%u.gi", key, i), p.gpuInstanceId);
      put_id(k("%s.%u.ci", key, i), p.computeInstanceId);
    }
  }
  if (version == 3) {
    size_t written = 0, j;
    for (j = 0; j < size; ++j) {
      if (buf[j] != 0xA5) written = j + 1;
    }
    put_ull(k("%s.bytes_written", key), written);
  }
  free(buf);
}

static void process_utilization(nvmlDevice_t d) {
  ProcUtilFn f = GET(ProcUtilFn, "nvmlDeviceGetProcessUtilization");
  unsigned int n = 0, i;
  unsigned long long before, after;
  ProcessSample* s;
  nvmlReturn_t r;
  if (!f) {
    put_nosym("procutil");
    return;
  }
  r = f(d, NULL, &n, 0);
  if (r != R_INSUFFICIENT_SIZE) {
    put_err("procutil", r);
    return;
  }
  s = calloc(n, sizeof *s);
  before = now_us();
  r = f(d, s, &n, 0);
  after = now_us();
  if (r != R_SUCCESS) {
    put_err("procutil", r);
  } else {
    put_ull("procutil.count", n);
    for (i = 0; i < n; ++i) {
      put_ull(k("procutil.%u.pid", i), s[i].pid);
      put_ull(k("procutil.%u.sm", i), s[i].smUtil);
      put_ull(k("procutil.%u.mem", i), s[i].memUtil);
      put_ull(k("procutil.%u.enc", i), s[i].encUtil);
      put_ull(k("procutil.%u.dec", i), s[i].decUtil);
      /* Samples are recent: within a second before the call, not after it. */
      put_ull(k("procutil.%u.timestamp_recent", i),
              s[i].timeStamp + 1000000ULL >= before && s[i].timeStamp <= after);
    }
  }
  free(s);
  n = 0;
  put_err("procutil.after_last_seen", f(d, NULL, &n, now_us() + 10000000ULL));
}

static void same_handle(const char* key, nvmlReturn_t r, nvmlDevice_t got, nvmlDevice_t want) {
  if (r != R_SUCCESS) {
    put_err(key, r);
  } else {
    put_str(key, got == want ? "same" : "different");
  }
}

#define MAX_GPUS 64

static void system_string(const char* symbol, const char* key) {
  StrFn f = GET(StrFn, symbol);
  char buf[128];
  nvmlReturn_t r;
  if (!f) {
    put_nosym(key);
    return;
  }
  r = f(buf, sizeof buf);
  if (r == R_SUCCESS) {
    put_str(key, buf);
  } else {
    put_err(key, r);
  }
}

static void system_int(const char* symbol, const char* key) {
  IntPtrFn f = GET(IntPtrFn, symbol);
  int v = 0;
  nvmlReturn_t r;
  if (!f) {
    put_nosym(key);
    return;
  }
  r = f(&v);
  if (r == R_SUCCESS) {
    put_ull(key, (unsigned long long)v);
  } else {
    put_err(key, r);
  }
}

static void print_gpu(unsigned int i, nvmlDevice_t d) {
  char uuid[128];
  PciInfoV3 pci;
  int pci_ok = 0;
  nvmlDevice_t other = NULL;
  DevStrFn get_uuid = GET(DevStrFn, "nvmlDeviceGetUUID");

  dev_uint(d, "nvmlDeviceGetIndex", "index");
  dev_str(d, "nvmlDeviceGetName", "name");
  dev_str(d, "nvmlDeviceGetUUID", "uuid");
  dev_str(d, "nvmlDeviceGetSerial", "serial");
  dev_uint(d, "nvmlDeviceGetMinorNumber", "minor_number");
  pci_v3(d, &pci, &pci_ok);
  pci_old(d, "nvmlDeviceGetPciInfo_v2", "pci_v2");
  pci_old(d, "nvmlDeviceGetPciInfo", "pci_v1");
  if (get_uuid && get_uuid(d, uuid, sizeof uuid) == R_SUCCESS) {
    ByStrFn f = GET(ByStrFn, "nvmlDeviceGetHandleByUUID");
    if (f) {
      nvmlReturn_t r = f(uuid, &other);
      same_handle("by_uuid", r, other, d);
    }
  }
  if (pci_ok) {
    ByStrFn f = GET(ByStrFn, "nvmlDeviceGetHandleByPciBusId_v2");
    if (f) {
      nvmlReturn_t r = f(pci.busId, &other);
      same_handle("by_pci", r, other, d);
    }
  }
  memory(d);
  utilization(d);
  dev_int_uint(d, "nvmlDeviceGetTemperature", 0, "temperature");
  dev_int_uint(d, "nvmlDeviceGetTemperatureThreshold", 1, "temperature.slowdown");
  dev_int_uint(d, "nvmlDeviceGetTemperatureThreshold", 0, "temperature.shutdown");
  dev_uint(d, "nvmlDeviceGetFanSpeed", "fan");
  dev_uint(d, "nvmlDeviceGetPowerUsage", "power.usage_mw");
  dev_uint(d, "nvmlDeviceGetEnforcedPowerLimit", "power.enforced_limit_mw");
  dev_uint(d, "nvmlDeviceGetPowerManagementLimit", "power.management_limit_mw");
  {
    static const char* const clocks[4] = {"graphics", "sm", "memory", "video"};
    int c;
    for (c = 0; c < 4; ++c) {
      dev_int_uint(d, "nvmlDeviceGetClockInfo", c, k("clock.%s", clocks[c]));
    }
    for (c = 0; c < 4; ++c) {
      dev_int_uint(d, "nvmlDeviceGetMaxClockInfo", c, k("max_clock.%s", clocks[c]));
    }
  }
  dev_int(d, "nvmlDeviceGetPerformanceState", "pstate");
  dev_int(d, "nvmlDeviceGetPersistenceMode", "persistence_mode");
  dev_int(d, "nvmlDeviceGetComputeMode", "compute_mode");
  two_values(d, "nvmlDeviceGetMigMode", "mig");
  two_values(d, "nvmlDeviceGetEccMode", "ecc");
  ecc_counts(d);
  retired_pages(d);
  dev_int(d, "nvmlDeviceGetRetiredPagesPendingStatus", "retired_pages.pending");
  remapped_rows(d);
  dev_mask(d, "nvmlDeviceGetCurrentClocksEventReasons", "clock_event_reasons");
  dev_mask(d, "nvmlDeviceGetCurrentClocksThrottleReasons", "clock_throttle_reasons");
  dev_mask(d, "nvmlDeviceGetSupportedClocksEventReasons", "clock_event_reasons_supported");
  dev_mask(d, "nvmlDeviceGetSupportedClocksThrottleReasons", "clock_throttle_reasons_supported");
  dev_uint(d, "nvmlDeviceGetCurrPcieLinkGeneration", "pcie.gen_current");
  dev_uint(d, "nvmlDeviceGetMaxPcieLinkGeneration", "pcie.gen_max");
  dev_uint(d, "nvmlDeviceGetGpuMaxPcieLinkGeneration", "pcie.gen_gpu_max");
  dev_uint(d, "nvmlDeviceGetCurrPcieLinkWidth", "pcie.width_current");
  dev_uint(d, "nvmlDeviceGetMaxPcieLinkWidth", "pcie.width_max");
  dev_uint(d, "nvmlDeviceGetPcieReplayCounter", "pcie.replay_counter");
  nvlinks(d);
  processes(d, "nvmlDeviceGetComputeRunningProcesses_v3", "compute", 3);
  processes(d, "nvmlDeviceGetComputeRunningProcesses_v2", "compute_v2", 2);
  processes(d, "nvmlDeviceGetComputeRunningProcesses", "compute_v1", 1);
  processes(d, "nvmlDeviceGetGraphicsRunningProcesses_v3", "graphics", 3);
  processes(d, "nvmlDeviceGetGraphicsRunningProcesses_v2", "graphics_v2", 2);
  processes(d, "nvmlDeviceGetGraphicsRunningProcesses", "graphics_v1", 1);
  process_utilization(d);
  dev_mask(d, "nvmlDeviceGetSupportedEventTypes", "supported_events");
  /* What nvtop, gpustat, nvitop and dcgm-exporter read beyond gpuwarden. */
  dev_pair(d, "nvmlDeviceGetEncoderUtilization", "encoder", "pct", "period_us");
  dev_pair(d, "nvmlDeviceGetDecoderUtilization", "decoder", "pct", "period_us");
  dev_int_uint(d, "nvmlDeviceGetPcieThroughput", 0, "pcie.tx_kb_s");
  dev_int_uint(d, "nvmlDeviceGetPcieThroughput", 1, "pcie.rx_kb_s");
  bar1(d);
  dev_pair(d, "nvmlDeviceGetCudaComputeCapability", "cuda_cc", "major", "minor");
  dev_u64(d, "nvmlDeviceGetTotalEnergyConsumption", "energy_mj");
  dev_int(d, "nvmlDeviceGetDisplayMode", "display.mode");
  dev_int(d, "nvmlDeviceGetDisplayActive", "display.active");
  dev_int(d, "nvmlDeviceGetBrand", "brand");
  dev_uint(d, "nvmlDeviceGetArchitecture", "architecture");
  dev_pair(d, "nvmlDeviceGetPowerManagementLimitConstraints", "power.limits", "min_mw", "max_mw");
  field_values(d);
  (void)i;
}

static void watch_events(nvmlDevice_t* handles, const int* have, unsigned int count,
                         double seconds) {
  SetCreateFn create = GET(SetCreateFn, "nvmlEventSetCreate");
  RegisterFn reg = GET(RegisterFn, "nvmlDeviceRegisterEvents");
  DevU64Fn supported = GET(DevU64Fn, "nvmlDeviceGetSupportedEventTypes");
  WaitFn wait = GET(WaitFn, "nvmlEventSetWait_v2");
  SetFreeFn release = GET(SetFreeFn, "nvmlEventSetFree");
  nvmlEventSet_t set = NULL;
  unsigned int i, received = 0;
  unsigned long long end;
  nvmlReturn_t r;
  prefix[0] = '\0';
  if (!create || !reg || !supported || !wait || !release) {
    put_nosym("events");
    return;
  }
  r = create(&set);
  if (r != R_SUCCESS) {
    put_err("events", r);
    return;
  }
  for (i = 0; i < count; ++i) {
    unsigned long long types = 0;
    if (!have[i] || supported(handles[i], &types) != R_SUCCESS) continue;
    put_err(k("events.register.%u", i), reg(handles[i], types, set));
  }
  end = now_us() + (unsigned long long)(seconds * 1e6);
  for (;;) {
    unsigned long long now = now_us();
    EventData e;
    unsigned int gpu;
    if (now >= end) break;
    memset(&e, 0, sizeof e);
    r = wait(set, &e, (unsigned int)((end - now) / 1000ULL));
    if (r == R_TIMEOUT) break;
    if (r != R_SUCCESS) {
      put_err("events.wait", r);
      break;
    }
    for (gpu = 0; gpu < count; ++gpu) {
      if (have[gpu] && handles[gpu] == e.device) break;
    }
    put_ull(k("event.%u.gpu", received), gpu);
    put_hex(k("event.%u.type", received), e.eventType);
    put_ull(k("event.%u.data", received), e.eventData);
    ++received;
  }
  put_ull("events.count", received);
  put_err("events.free", release(set));
}

int main(int argc, char** argv) {
  const char* path = "libnvidia-ml.so.1";
  double event_seconds = -1;
  int a;
  VoidFn init, shutdown;
  UintPtrFn count_v2, count_v1;
  ByIndexFn by_index;
  ErrorStringFn error_string;
  nvmlReturn_t r;
  unsigned int count = 0, i, j;
  nvmlDevice_t handles[MAX_GPUS];
  int have[MAX_GPUS];

  for (a = 1; a < argc; ++a) {
    if (strcmp(argv[a], "--events") == 0 && a + 1 < argc) {
      event_seconds = atof(argv[++a]);
    } else if (argv[a][0] == '-') {
      fprintf(stderr, "usage: %s [--events SECONDS] [LIBRARY]\n", argv[0]);
      return 2;
    } else {
      path = argv[a];
    }
  }
  lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    fprintf(stderr, "gw_nvml_client: %s\n", dlerror());
    return 2;
  }
  setvbuf(stdout, NULL, _IOFBF, 1 << 16);

  init = GET(VoidFn, "nvmlInit_v2");
  shutdown = GET(VoidFn, "nvmlShutdown");
  count_v2 = GET(UintPtrFn, "nvmlDeviceGetCount_v2");
  count_v1 = GET(UintPtrFn, "nvmlDeviceGetCount");
  by_index = GET(ByIndexFn, "nvmlDeviceGetHandleByIndex_v2");
  error_string = GET(ErrorStringFn, "nvmlErrorString");
  if (!init || !shutdown || !count_v2 || !by_index || !error_string) {
    fprintf(stderr, "gw_nvml_client: %s lacks the basic NVML entry points\n", path);
    return 2;
  }

  put_err("pre_init.count", count_v2(&count));
  r = init();
  put_err("init", r);
  if (r != R_SUCCESS) {
    put_str("init.error_string", error_string(r));
    put_err("post_failed_init.count", count_v2(&count));
    return 0;
  }
  system_string("nvmlSystemGetDriverVersion", "driver.version");
  system_string("nvmlSystemGetNVMLVersion", "driver.nvml_version");
  system_int("nvmlSystemGetCudaDriverVersion", "driver.cuda_version");
  system_int("nvmlSystemGetCudaDriverVersion_v2", "driver.cuda_version_v2");
  r = count_v2(&count);
  if (r != R_SUCCESS) {
    put_err("count", r);
    count = 0;
  } else {
    put_ull("count", count);
  }
  if (count_v1) {
    unsigned int c1 = 0;
    r = count_v1(&c1);
    if (r == R_SUCCESS)
      put_ull("count_v1", c1);
    else
      put_err("count_v1", r);
  } else {
    put_nosym("count_v1");
  }
  if (count > MAX_GPUS) count = MAX_GPUS;
  for (i = 0; i < count; ++i) {
    snprintf(prefix, sizeof prefix, "gpu%u.", i);
    r = by_index(i, &handles[i]);
    have[i] = r == R_SUCCESS;
    put_err("handle", r);
    if (have[i]) print_gpu(i, handles[i]);
  }
  prefix[0] = '\0';
  {
    TopoFn topo = GET(TopoFn, "nvmlDeviceGetTopologyCommonAncestor");
    for (i = 0; i < count; ++i) {
      for (j = i + 1; j < count; ++j) {
        int level = 0;
        if (!have[i] || !have[j]) continue;
        if (!topo) {
          put_nosym(k("topology.%u.%u", i, j));
          continue;
        }
        r = topo(handles[i], handles[j], &level);
        if (r == R_SUCCESS)
          put_ull(k("topology.%u.%u", i, j), (unsigned long long)level);
        else
          put_err(k("topology.%u.%u", i, j), r);
      }
    }
  }
  if (event_seconds >= 0) watch_events(handles, have, count, event_seconds);

  /* Reference counting: a nested init/shutdown pair leaves the library up. */
  put_err("init_nested", init());
  put_err("shutdown_nested", shutdown());
  r = count_v2(&count);
  if (r == R_SUCCESS)
    put_ull("after_nested.count", count);
  else
    put_err("after_nested.count", r);
  put_err("shutdown", shutdown());
  put_err("post_shutdown.count", count_v2(&count));
  put_err("shutdown_extra", shutdown());
  {
    static const int codes[] = {0, 1, 2, 3, 4, 6, 7, 9, 15, 18, 25, 999};
    size_t c;
    for (c = 0; c < sizeof codes / sizeof codes[0]; ++c) {
      put_str(k("error_string.%d", codes[c]), error_string(codes[c]));
    }
  }
  fflush(stdout);
  dlclose(lib);
  return 0;
}
