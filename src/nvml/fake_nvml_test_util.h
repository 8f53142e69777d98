// FakeNvml: a small scriptable NvmlApi for unit tests of the collector and the
// probe. Everything not overridden answers FUNCTION_NOT_FOUND (UnsupportedNvmlApi).
// GPU i's handle is (nvmlDevice_t)(i + 1). Not a simulator: it models only what
// the tests in this directory need; end-to-end behaviour is tested against sim/.
#ifndef GPUWARDEN_NVML_FAKE_NVML_TEST_UTIL_H_
#define GPUWARDEN_NVML_FAKE_NVML_TEST_UTIL_H_

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <vector>

#include "nvml/nvml_api.h"

namespace gw::nvml {

struct FakeProcess {
  uint32_t pid;
  uint64_t used;
};

struct FakeGpu {
  nvmlReturn_t handle_result = NVML_SUCCESS;
  bool lost_after_memory = false;  // GPU_IS_LOST from the first call after memory info.
  nvmlReturn_t memory_v2_result = NVML_SUCCESS;
  std::function<void()> before_memory;  // Runs inside the memory call (e.g. blocks).
  nvmlReturn_t temperature_result = NVML_SUCCESS;
  nvmlReturn_t name_result = NVML_SUCCESS;
  unsigned bus = 0;
  std::vector<FakeProcess> compute;
  std::vector<FakeProcess> graphics;
  size_t stride = 24;  // Bytes per process entry the "driver" writes.
  nvmlReturn_t samples_result = NVML_SUCCESS;
  std::vector<nvmlProcessUtilizationSample_t> samples;
  std::vector<bool> nvlinks;
  std::vector<int> nvlink_remote_gpu;  // -1: remote is not a GPU.
  int calls_after_lost = 0;
  bool lost = false;
  // Left out of the enumeration (count and handle by index), as an older
  // NVML leaves out the GPUs this user may not open.
  bool hidden = false;
};

class FakeNvml : public UnsupportedNvmlApi {
 public:
  std::vector<FakeGpu> gpus;
  std::atomic<int> init_calls = 0;
  std::atomic<int> shutdown_calls = 0;

  std::function<void()> before_init;  // Runs inside nvmlInit (e.g. blocks).
  std::function<void()> in_topology;  // Runs inside each topology call.

  nvmlReturn_t Init() override {
    if (before_init) before_init();
    ++init_calls;
    return NVML_SUCCESS;
  }
  nvmlReturn_t Shutdown() override {
    ++shutdown_calls;
    return NVML_SUCCESS;
  }
  // Counters are atomic: the probe tests read them while a worker may run.
  nvmlReturn_t SystemGetDriverVersion(char* version, unsigned int length) override {
    std::snprintf(version, length, "550.90.07");
    return NVML_SUCCESS;
  }
  nvmlReturn_t DeviceGetCount(unsigned int* count) override {
    *count = static_cast<unsigned>(
        std::count_if(gpus.begin(), gpus.end(), [](const FakeGpu& g) { return !g.hidden; }));
    return NVML_SUCCESS;
  }
  // `position` counts the GPUs not hidden.
  nvmlReturn_t DeviceGetHandleByIndex(unsigned int position, nvmlDevice_t* device) override {
    unsigned index = 0;
    for (unsigned seen = 0;; ++index) {
      if (gpus.at(index).hidden) continue;
      if (seen++ == position) break;
    }
    if (gpus[index].handle_result != NVML_SUCCESS) return gpus[index].handle_result;
    *device = reinterpret_cast<nvmlDevice_t>(static_cast<uintptr_t>(index + 1));
    return NVML_SUCCESS;
  }
  nvmlReturn_t DeviceGetIndex(nvmlDevice_t device, unsigned int* index) override {
    if (auto r = Enter(device); r != NVML_SUCCESS) return r;
    *index = Index(device);
    return NVML_SUCCESS;
  }
  nvmlReturn_t DeviceGetName(nvmlDevice_t device, char* name, unsigned int length) override {
    if (auto r = Enter(device); r != NVML_SUCCESS) return r;
    if (Gpu(device).name_result != NVML_SUCCESS) return Gpu(device).name_result;
    std::snprintf(name, length, "Fake GPU %u", Index(device));
    return NVML_SUCCESS;
  }
  nvmlReturn_t DeviceGetPciInfo(nvmlDevice_t device, nvmlPciInfo_t* pci) override {
    if (auto r = Enter(device); r != NVML_SUCCESS) return r;
    *pci = nvmlPciInfo_t{};
    pci->bus = Gpu(device).bus;
    pci->pciDeviceId = 0x233010DE;
    std::snprintf(pci->busId, sizeof(pci->busId), "00000000:%02X:00.0", pci->bus);
    return NVML_SUCCESS;
  }
  nvmlReturn_t DeviceGetMemoryInfoV2(nvmlDevice_t device, nvmlMemory_v2_t* memory) override {
    if (auto r = Enter(device); r != NVML_SUCCESS) return r;
    if (Gpu(device).before_memory) Gpu(device).before_memory();
    if (Gpu(device).memory_v2_result != NVML_SUCCESS) return Gpu(device).memory_v2_result;
    if (memory->version != nvmlMemory_v2) return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
    memory->total = 80ULL << 30;
    memory->reserved = 1ULL << 30;
    memory->used = 10ULL << 30;
    memory->free = memory->total - memory->reserved - memory->used;
    return Leave(device);
  }
  nvmlReturn_t DeviceGetMemoryInfo(nvmlDevice_t device, nvmlMemory_t* memory) override {
    if (auto r = Enter(device); r != NVML_SUCCESS) return r;
    memory->total = 80ULL << 30;
    memory->used = 11ULL << 30;
    memory->free = 69ULL << 30;
    return Leave(device);
  }
  nvmlReturn_t DeviceGetTemperature(nvmlDevice_t device, nvmlTemperatureSensors_t,
                                    unsigned int* temp) override {
    if (auto r = Enter(device); r != NVML_SUCCESS) return r;
    *temp = 45;
    return Gpu(device).temperature_result;
  }
  nvmlReturn_t DeviceGetComputeRunningProcesses(nvmlDevice_t device, unsigned int* count,
                                                nvmlProcessInfo_t* infos) override {
    if (auto r = Enter(device); r != NVML_SUCCESS) return r;
    return WriteProcesses(Gpu(device).compute, Gpu(device).stride, count, infos);
  }
  nvmlReturn_t DeviceGetGraphicsRunningProcesses(nvmlDevice_t device, unsigned int* count,
                                                 nvmlProcessInfo_t* infos) override {
    if (auto r = Enter(device); r != NVML_SUCCESS) return r;
    return WriteProcesses(Gpu(device).graphics, Gpu(device).stride, count, infos);
  }
  nvmlReturn_t DeviceGetProcessUtilization(nvmlDevice_t device,
                                           nvmlProcessUtilizationSample_t* utilization,
                                           unsigned int* count, unsigned long long) override {
    if (auto r = Enter(device); r != NVML_SUCCESS) return r;
    const FakeGpu& gpu = Gpu(device);
    if (gpu.samples_result != NVML_SUCCESS) return gpu.samples_result;
    if (utilization == nullptr || *count < gpu.samples.size()) {
      *count = static_cast<unsigned>(gpu.samples.size());
      return NVML_ERROR_INSUFFICIENT_SIZE;
    }
    *count = static_cast<unsigned>(gpu.samples.size());
    std::copy(gpu.samples.begin(), gpu.samples.end(), utilization);
    return NVML_SUCCESS;
  }
  nvmlReturn_t DeviceGetNvLinkState(nvmlDevice_t device, unsigned int link,
                                    nvmlEnableState_t* active) override {
    if (auto r = Enter(device); r != NVML_SUCCESS) return r;
    const FakeGpu& gpu = Gpu(device);
    if (gpu.nvlinks.empty()) return NVML_ERROR_NOT_SUPPORTED;
    if (link >= gpu.nvlinks.size()) return NVML_ERROR_INVALID_ARGUMENT;
    *active = gpu.nvlinks[link] ? NVML_FEATURE_ENABLED : NVML_FEATURE_DISABLED;
    return NVML_SUCCESS;
  }
  nvmlReturn_t DeviceGetNvLinkRemotePciInfo(nvmlDevice_t device, unsigned int link,
                                            nvmlPciInfo_t* pci) override {
    if (auto r = Enter(device); r != NVML_SUCCESS) return r;
    *pci = nvmlPciInfo_t{};
    int remote = Gpu(device).nvlink_remote_gpu.at(link);
    pci->bus = remote < 0 ? 0xEE : gpus[remote].bus;
    return NVML_SUCCESS;
  }
  nvmlReturn_t DeviceGetTopologyCommonAncestor(nvmlDevice_t a, nvmlDevice_t b,
                                               nvmlGpuTopologyLevel_t* level) override {
    if (in_topology) in_topology();
    *level = Index(b) - Index(a) == 1 ? NVML_TOPOLOGY_SINGLE : NVML_TOPOLOGY_SYSTEM;
    return NVML_SUCCESS;
  }

 private:
  static unsigned Index(nvmlDevice_t device) {
    return static_cast<unsigned>(reinterpret_cast<uintptr_t>(device) - 1);
  }
  FakeGpu& Gpu(nvmlDevice_t device) { return gpus.at(Index(device)); }
  nvmlReturn_t Enter(nvmlDevice_t device) {
    FakeGpu& gpu = Gpu(device);
    if (gpu.lost) {
      ++gpu.calls_after_lost;
      return NVML_ERROR_GPU_IS_LOST;
    }
    return NVML_SUCCESS;
  }
  nvmlReturn_t Leave(nvmlDevice_t device) {
    if (Gpu(device).lost_after_memory) Gpu(device).lost = true;
    return NVML_SUCCESS;
  }
  static nvmlReturn_t WriteProcesses(const std::vector<FakeProcess>& list, size_t stride,
                                     unsigned* count, nvmlProcessInfo_t* infos) {
    if (*count < list.size()) {
      *count = static_cast<unsigned>(list.size());
      return list.empty() ? NVML_SUCCESS : NVML_ERROR_INSUFFICIENT_SIZE;
    }
    auto* bytes = reinterpret_cast<uint8_t*>(infos);
    for (size_t i = 0; i < list.size(); ++i) {
      uint8_t* entry = bytes + i * stride;
      std::memset(entry, 0, stride);
      std::memcpy(entry, &list[i].pid, 4);
      std::memcpy(entry + 8, &list[i].used, 8);
      const uint32_t no_mig = 0xFFFFFFFF;
      std::memcpy(entry + 16, &no_mig, 4);
      std::memcpy(entry + 20, &no_mig, 4);
    }
    *count = static_cast<unsigned>(list.size());
    return NVML_SUCCESS;
  }
};

}  // namespace gw::nvml

#endif  // GPUWARDEN_NVML_FAKE_NVML_TEST_UTIL_H_
