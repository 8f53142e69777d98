#include "fleet/dcgm_fields.h"

#include <array>

namespace gw::fleet {
namespace {

using O = std::optional<double>;

template <typename T>
O Num(const std::optional<T>& v) {
  if (!v) return std::nullopt;
  return static_cast<double>(*v);
}

O Mib(const std::optional<uint64_t>& bytes) {
  if (!bytes) return std::nullopt;
  return static_cast<double>(*bytes / (1024 * 1024));  // DCGM reports whole MiB.
}

O Flag(const std::optional<bool>& v) {
  if (!v) return std::nullopt;
  return *v ? 1.0 : 0.0;
}

const std::array kGpuFields = {
    DcgmField{"DCGM_FI_DEV_SM_CLOCK", MetricType::kGauge, "SM clock frequency (in MHz).",
              [](const Gpu& g) { return Num(g.clocks.sm_mhz); }},
    DcgmField{"DCGM_FI_DEV_MEM_CLOCK", MetricType::kGauge, "Memory clock frequency (in MHz).",
              [](const Gpu& g) { return Num(g.clocks.memory_mhz); }},
    DcgmField{"DCGM_FI_DEV_GPU_TEMP", MetricType::kGauge, "GPU temperature (in C).",
              [](const Gpu& g) { return Num(g.temperature_c); }},
    DcgmField{"DCGM_FI_DEV_SLOWDOWN_TEMP", MetricType::kGauge,
              "Temperature at which the GPU slows down (in C).",
              [](const Gpu& g) { return Num(g.temperature_slowdown_c); }},
    DcgmField{"DCGM_FI_DEV_SHUTDOWN_TEMP", MetricType::kGauge,
              "Temperature at which the GPU shuts down (in C).",
              [](const Gpu& g) { return Num(g.temperature_shutdown_c); }},
    DcgmField{"DCGM_FI_DEV_POWER_USAGE", MetricType::kGauge, "Power draw (in W).",
              [](const Gpu& g) { return Num(g.power_draw_w); }},
    DcgmField{"DCGM_FI_DEV_POWER_MGMT_LIMIT", MetricType::kGauge, "Enforced power limit (in W).",
              [](const Gpu& g) { return Num(g.power_limit_w); }},
    DcgmField{"DCGM_FI_DEV_POWER_MGMT_LIMIT_DEF", MetricType::kGauge,
              "Default power limit of the board (in W).",
              [](const Gpu& g) { return Num(g.power_default_limit_w); }},
    DcgmField{"DCGM_FI_DEV_FAN_SPEED", MetricType::kGauge, "Fan speed (in %).",
              [](const Gpu& g) { return Num(g.fan_speed_pct); }},
    DcgmField{"DCGM_FI_DEV_PSTATE", MetricType::kGauge, "Performance state (0 = fastest).",
              [](const Gpu& g) { return Num(g.pstate); }},
    DcgmField{"DCGM_FI_DEV_PCIE_REPLAY_COUNTER", MetricType::kCounter,
              "Total number of PCIe retries.",
              [](const Gpu& g) { return Num(g.pcie.replay_counter); }},
    DcgmField{"DCGM_FI_DEV_PCIE_LINK_GEN", MetricType::kGauge, "Current PCIe link generation.",
              [](const Gpu& g) { return Num(g.pcie.link_gen_current); }},
    DcgmField{"DCGM_FI_DEV_PCIE_LINK_WIDTH", MetricType::kGauge, "Current PCIe link width (lanes).",
              [](const Gpu& g) { return Num(g.pcie.link_width_current); }},
    DcgmField{"DCGM_FI_DEV_PCIE_MAX_LINK_GEN", MetricType::kGauge, "Maximum PCIe link generation.",
              [](const Gpu& g) { return Num(g.pcie.link_gen_max); }},
    DcgmField{"DCGM_FI_DEV_PCIE_MAX_LINK_WIDTH", MetricType::kGauge,
              "Maximum PCIe link width (lanes).",
              [](const Gpu& g) { return Num(g.pcie.link_width_max); }},
    DcgmField{"DCGM_FI_DEV_GPU_UTIL", MetricType::kGauge, "GPU utilization (in %).",
              [](const Gpu& g) { return Num(g.utilization_gpu_pct); }},
    DcgmField{"DCGM_FI_DEV_MEM_COPY_UTIL", MetricType::kGauge, "Memory utilization (in %).",
              [](const Gpu& g) { return Num(g.utilization_memory_pct); }},
    DcgmField{"DCGM_FI_DEV_FB_TOTAL", MetricType::kGauge, "Framebuffer memory total (in MiB).",
              [](const Gpu& g) { return Mib(g.memory.total_bytes); }},
    DcgmField{"DCGM_FI_DEV_FB_FREE", MetricType::kGauge, "Framebuffer memory free (in MiB).",
              [](const Gpu& g) { return Mib(g.memory.free_bytes); }},
    DcgmField{"DCGM_FI_DEV_FB_USED", MetricType::kGauge, "Framebuffer memory used (in MiB).",
              [](const Gpu& g) { return Mib(g.memory.used_bytes); }},
    DcgmField{"DCGM_FI_DEV_FB_RESERVED", MetricType::kGauge,
              "Framebuffer memory reserved (in MiB).",
              [](const Gpu& g) { return Mib(g.memory.reserved_bytes); }},
    DcgmField{"DCGM_FI_DEV_ECC_SBE_VOL_TOTAL", MetricType::kCounter,
              "Single-bit (corrected) ECC errors since the driver loaded.",
              [](const Gpu& g) { return Num(g.ecc.volatile_corrected); }},
    DcgmField{"DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", MetricType::kCounter,
              "Double-bit (uncorrected) ECC errors since the driver loaded.",
              [](const Gpu& g) { return Num(g.ecc.volatile_uncorrected); }},
    DcgmField{"DCGM_FI_DEV_ECC_SBE_AGG_TOTAL", MetricType::kCounter,
              "Single-bit (corrected) ECC errors over the GPU's life.",
              [](const Gpu& g) { return Num(g.ecc.aggregate_corrected); }},
    DcgmField{"DCGM_FI_DEV_ECC_DBE_AGG_TOTAL", MetricType::kCounter,
              "Double-bit (uncorrected) ECC errors over the GPU's life.",
              [](const Gpu& g) { return Num(g.ecc.aggregate_uncorrected); }},
    DcgmField{"DCGM_FI_DEV_RETIRED_SBE", MetricType::kCounter,
              "Pages retired for multiple single-bit errors.",
              [](const Gpu& g) { return Num(g.retired_pages.single_bit); }},
    DcgmField{"DCGM_FI_DEV_RETIRED_DBE", MetricType::kCounter,
              "Pages retired for a double-bit error.",
              [](const Gpu& g) { return Num(g.retired_pages.double_bit); }},
    DcgmField{"DCGM_FI_DEV_RETIRED_PENDING", MetricType::kGauge,
              "A page retirement waits for the next driver reload (1 = yes).",
              [](const Gpu& g) { return Flag(g.retired_pages.pending); }},
    DcgmField{"DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS", MetricType::kCounter,
              "Number of remapped rows for correctable errors.",
              [](const Gpu& g) { return Num(g.remapped_rows.correctable); }},
    DcgmField{"DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS", MetricType::kCounter,
              "Number of remapped rows for uncorrectable errors.",
              [](const Gpu& g) { return Num(g.remapped_rows.uncorrectable); }},
    DcgmField{"DCGM_FI_DEV_ROW_REMAP_PENDING", MetricType::kGauge,
              "A row remap waits for a GPU reset (1 = yes).",
              [](const Gpu& g) { return Flag(g.remapped_rows.pending); }},
    DcgmField{"DCGM_FI_DEV_ROW_REMAP_FAILURE", MetricType::kGauge,
              "Whether remapping of rows has failed (1 = yes).",
              [](const Gpu& g) { return Flag(g.remapped_rows.failure); }},
    DcgmField{"DCGM_FI_DEV_CLOCK_THROTTLE_REASONS", MetricType::kGauge,
              "Active clock event (throttle) reasons, NVML's bit mask.",
              [](const Gpu& g) { return Num(g.clock_event_reasons); }},
};

constexpr std::array kDefaults = {
    DcgmDefaultCounter{"DCGM_FI_DEV_SM_CLOCK", DcgmCoverage::kExported, ""},
    DcgmDefaultCounter{"DCGM_FI_DEV_MEM_CLOCK", DcgmCoverage::kExported, ""},
    DcgmDefaultCounter{"DCGM_FI_DEV_MEMORY_TEMP", DcgmCoverage::kNotInSnapshot,
                       "memory temperature is an NVML field value "
                       "(nvmlDeviceGetFieldValues), not read yet"},
    DcgmDefaultCounter{"DCGM_FI_DEV_GPU_TEMP", DcgmCoverage::kExported, ""},
    DcgmDefaultCounter{"DCGM_FI_DEV_POWER_USAGE", DcgmCoverage::kExported, ""},
    DcgmDefaultCounter{"DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", DcgmCoverage::kNotInSnapshot,
                       "nvmlDeviceGetTotalEnergyConsumption is not read yet"},
    DcgmDefaultCounter{"DCGM_FI_DEV_PCIE_REPLAY_COUNTER", DcgmCoverage::kExported, ""},
    DcgmDefaultCounter{"DCGM_FI_DEV_GPU_UTIL", DcgmCoverage::kExported, ""},
    DcgmDefaultCounter{"DCGM_FI_DEV_MEM_COPY_UTIL", DcgmCoverage::kExported, ""},
    DcgmDefaultCounter{"DCGM_FI_DEV_ENC_UTIL", DcgmCoverage::kNotInSnapshot,
                       "nvmlDeviceGetEncoderUtilization is not read yet"},
    DcgmDefaultCounter{"DCGM_FI_DEV_DEC_UTIL", DcgmCoverage::kNotInSnapshot,
                       "nvmlDeviceGetDecoderUtilization is not read yet"},
    DcgmDefaultCounter{"DCGM_FI_DEV_XID_ERRORS", DcgmCoverage::kExported, ""},
    DcgmDefaultCounter{"DCGM_FI_DEV_FB_FREE", DcgmCoverage::kExported, ""},
    DcgmDefaultCounter{"DCGM_FI_DEV_FB_USED", DcgmCoverage::kExported, ""},
    DcgmDefaultCounter{"DCGM_FI_DEV_FB_RESERVED", DcgmCoverage::kExported, ""},
    DcgmDefaultCounter{"DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL", DcgmCoverage::kNotInSnapshot,
                       "NVLink throughput is an NVML field value, not read yet"},
    DcgmDefaultCounter{"DCGM_FI_DEV_VGPU_LICENSE_STATUS", DcgmCoverage::kNotApplicable,
                       "a vGPU guest's licence state; gpuwarden watches physical GPUs"},
    DcgmDefaultCounter{"DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS", DcgmCoverage::kExported, ""},
    DcgmDefaultCounter{"DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS", DcgmCoverage::kExported, ""},
    DcgmDefaultCounter{"DCGM_FI_DEV_ROW_REMAP_FAILURE", DcgmCoverage::kExported, ""},
    DcgmDefaultCounter{"DCGM_FI_DRIVER_VERSION", DcgmCoverage::kLabel, ""},
    DcgmDefaultCounter{"DCGM_FI_PROF_GR_ENGINE_ACTIVE", DcgmCoverage::kProfiling,
                       "DCGM profiling (its own SM sampling); not in NVML"},
    DcgmDefaultCounter{"DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", DcgmCoverage::kProfiling,
                       "DCGM profiling (its own SM sampling); not in NVML"},
    DcgmDefaultCounter{"DCGM_FI_PROF_DRAM_ACTIVE", DcgmCoverage::kProfiling,
                       "DCGM profiling (its own SM sampling); not in NVML"},
    DcgmDefaultCounter{"DCGM_FI_PROF_PCIE_TX_BYTES", DcgmCoverage::kProfiling,
                       "DCGM profiling; NVML's PCIe throughput is not read yet"},
    DcgmDefaultCounter{"DCGM_FI_PROF_PCIE_RX_BYTES", DcgmCoverage::kProfiling,
                       "DCGM profiling; NVML's PCIe throughput is not read yet"},
};

}  // namespace

std::span<const DcgmField> DcgmGpuFields() { return kGpuFields; }
std::span<const DcgmDefaultCounter> DcgmDefaultCounters() { return kDefaults; }

}  // namespace gw::fleet
