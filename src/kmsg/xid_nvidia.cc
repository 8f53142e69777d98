// NVIDIA's Xid catalog, transcribed (the contract is in xid_nvidia.h).
#include "kmsg/xid_nvidia.h"

#include <algorithm>
#include <array>

namespace gw::kmsg {
namespace {

using R = NvidiaResolution;

constexpr auto kRows = std::to_array<NvidiaXid>({
    {1, "ROBUST_CHANNEL_FIFO_ERROR_FIFO_METHOD", "Unused", R::kContactSupport, ""},
    {2, "ROBUST_CHANNEL_FIFO_ERROR_SW_METHOD", "Unused", R::kContactSupport, ""},
    {3, "ROBUST_CHANNEL_FIFO_ERROR_UNK_METHOD", "Unused", R::kContactSupport, ""},
    {4, "ROBUST_CHANNEL_FIFO_ERROR_CHANNEL_BUSY", "Unused", R::kContactSupport, ""},
    {5, "ROBUST_CHANNEL_FIFO_ERROR_RUNOUT_OVERFLOW", "Unused", R::kContactSupport, ""},
    {6, "ROBUST_CHANNEL_FIFO_ERROR_PARSE_ERR", "Unused", R::kContactSupport, ""},
    {7, "ROBUST_CHANNEL_FIFO_ERROR_PTE_ERR", "Unused", R::kContactSupport, ""},
    {8, "ROBUST_CHANNEL_FIFO_ERROR_IDLE_TIMEOUT", "GPU stopped processing", R::kRestartApp,
     "CONTACT_SUPPORT"},
    {9, "ROBUST_CHANNEL_GR_ERROR_INSTANCE", "Unused", R::kContactSupport, ""},
    {10, "ROBUST_CHANNEL_GR_ERROR_SINGLE_STEP", "Unused", R::kContactSupport, ""},
    {11, "ROBUST_CHANNEL_GR_ERROR_MISSING_HW", "Invalid or corrupted push buffer stream",
     R::kRestartApp, "CHECK_APP/CUDA"},
    {12, "ROBUST_CHANNEL_GR_ERROR_SW_METHOD", "Unused", R::kContactSupport, ""},
    {13, "ROBUST_CHANNEL_GR_EXCEPTION / ROBUST_CHANNEL_GR_ERROR_SW_NOTIFY",
     "Graphics Engine Exception", R::kRestartApp, "WORKFLOW_XID_13"},
    {14, "ROBUST_CHANNEL_FAKE_ERROR", "Unused", R::kIgnore, "CONTACT_SUPPORT"},
    {15, "ROBUST_CHANNEL_SCANLINE_TIMEOUT", "Unused", R::kContactSupport, ""},
    {16, "ROBUST_CHANNEL_VBLANK_CALLBACK_TIMEOUT", "Unused", R::kContactSupport, "CONTACT_SUPPORT"},
    {17, "ROBUST_CHANNEL_PARAMETER_ERROR", "Unused", R::kContactSupport, ""},
    {18, "ROBUST_CHANNEL_BUS_MASTER_TIMEOUT_ERROR", "Unused", R::kContactSupport, ""},
    {19, "ROBUST_CHANNEL_DISP_MISSED_NOTIFIER", "Unused", R::kContactSupport, ""},
    {20, "ROBUST_CHANNEL_MPEG_ERROR_SW_METHOD", "Unused", R::kContactSupport, ""},
    {21, "ROBUST_CHANNEL_ME_ERROR_SW_METHOD", "Unused", R::kContactSupport, ""},
    {22, "ROBUST_CHANNEL_VP_ERROR_SW_METHOD", "Unused", R::kContactSupport, ""},
    {23, "ROBUST_CHANNEL_RC_LOGGING_ENABLED", "Unused", R::kContactSupport, ""},
    {24, "ROBUST_CHANNEL_GR_SEMAPHORE_TIMEOUT", "Unused", R::kContactSupport, ""},
    {25, "ROBUST_CHANNEL_GR_ILLEGAL_NOTIFY", "Invalid or illegal push buffer stream",
     R::kRestartApp, "CHECK_APP/CUDA"},
    {26, "ROBUST_CHANNEL_FIFO_ERROR_FBISTATE_TIMEOUT", "Unused", R::kContactSupport, ""},
    {27, "ROBUST_CHANNEL_VP_ERROR", "Unused", R::kContactSupport, ""},
    {28, "ROBUST_CHANNEL_VP2_ERROR", "Unused", R::kContactSupport, ""},
    {29, "ROBUST_CHANNEL_BSP_ERROR", "Unused", R::kContactSupport, ""},
    {30, "ROBUST_CHANNEL_BAD_ADDR_ACCESS", "Unused", R::kContactSupport, ""},
    {31, "ROBUST_CHANNEL_FIFO_ERROR_MMU_ERR_FLT", "GPU memory page fault", R::kRestartApp,
     "WORKFLOW_XID_31"},
    {32, "ROBUST_CHANNEL_PBDMA_ERROR", "Invalid or corrupted push buffer stream", R::kRestartApp,
     "CHECK_APP/CUDA"},
    {33, "ROBUST_CHANNEL_SEC_ERROR", "Unused", R::kContactSupport, ""},
    {34, "ROBUST_CHANNEL_MSVLD_ERROR", "Unused", R::kContactSupport, ""},
    {35, "ROBUST_CHANNEL_MSPDEC_ERROR", "Unused", R::kContactSupport, ""},
    {36, "ROBUST_CHANNEL_MSPPP_ERROR", "Unused", R::kContactSupport, ""},
    {37, "ROBUST_CHANNEL_FECS_ERR_UNIMP_FIRMWARE_METHOD", "Driver firmware error", R::kIgnore,
     "CHECK_APP/CUDA"},
    {38, "ROBUST_CHANNEL_FECS_ERR_WATCHDOG_TIMEOUT", "Driver firmware error", R::kIgnore,
     "CONTACT_SUPPORT"},
    {39, "ROBUST_CHANNEL_CE0_ERROR", "Copy Engine Exception", R::kRestartApp, "CONTACT_SUPPORT"},
    {40, "ROBUST_CHANNEL_CE1_ERROR", "Copy Engine Exception", R::kRestartApp, "CONTACT_SUPPORT"},
    {41, "ROBUST_CHANNEL_CE2_ERROR", "Copy Engine Exception", R::kRestartApp, "CONTACT_SUPPORT"},
    {42, "ROBUST_CHANNEL_VIC_ERROR", "Unused", R::kContactSupport, ""},
    {43, "ROBUST_CHANNEL_RESETCHANNEL_VERIF_ERROR", "GPU stopped processing", R::kIgnore,
     "CONTACT_SUPPORT"},
    {44, "ROBUST_CHANNEL_GR_FAULT_DURING_CTXSW", "Graphics Engine fault during context switch",
     R::kIgnore, "CONTACT_SUPPORT"},
    {45, "ROBUST_CHANNEL_PREEMPTIVE_REMOVAL",
     "Preemptive cleanup, due to previous errors -- Most likely to see when running multiple cuda "
     "applications and hitting a DBE",
     R::kWorkflowXid45, "Solo: RESTART_FM; Not Solo: IGNORE (follow other Xid)"},
    {46, "ROBUST_CHANNEL_GPU_TIMEOUT_ERROR", "GPU stopped processing", R::kResetGpu,
     "CONTACT_SUPPORT"},
    {47, "ROBUST_CHANNEL_NVENC0_ERROR", "Unused", R::kContactSupport, ""},
    {48, "ROBUST_CHANNEL_GPU_ECC_DBE", "Double Bit ECC Error", R::kWorkflowXid48,
     "WORKFLOW_XID_48"},
    {49, "SILENT_RUNNING_CONSTANT_LEVEL_SET_BY_REGISTRY", "Unused", R::kContactSupport, ""},
    {50, "SILENT_RUNNING_LEVEL_TRANSITION_DUE_TO_RC_ERROR", "Unused", R::kContactSupport, ""},
    {51, "SILENT_RUNNING_STRESS_TEST_FAILURE", "Unused", R::kContactSupport, ""},
    {52, "SILENT_RUNNING_LEVEL_TRANS_DUE_TO_TEMP_RISE", "Unused", R::kContactSupport, ""},
    {53, "SILENT_RUNNING_TEMP_REDUCED_CLOCKING", "Unused", R::kContactSupport, ""},
    {54, "SILENT_RUNNING_PWR_REDUCED_CLOCKING", "Auxiliary power is not connected to the GPU board",
     R::kCheckMechanicals, "CONTACT_SUPPORT"},
    {55, "SILENT_RUNNING_TEMPERATURE_READ_ERROR", "Unused", R::kContactSupport, ""},
    {56, "DISPLAY_CHANNEL_EXCEPTION", "Unused", R::kContactSupport, ""},
    {57, "FB_LINK_TRAINING_FAILURE_ERROR", "Unused", R::kContactSupport, ""},
    {58, "FB_MEMORY_ERROR", "Unused", R::kContactSupport, ""},
    {59, "PMU_ERROR", "Unused", R::kContactSupport, ""},
    {60, "ROBUST_CHANNEL_SEC2_ERROR", "Video processor exception", R::kRestartApp,
     "INVESTIGATE_SW"},
    {61, "PMU_BREAKPOINT", "Unused", R::kContactSupport, ""},
    {62, "PMU_HALT_ERROR", "Internal micro-controller halt (newer drivers)", R::kResetGpu,
     "CONTACT_SUPPORT"},
    {63, "INFOROM_DRAM_RETIREMENT_EVENT", "GPU memory remapping event", R::kIgnore, "IGNORE"},
    {64, "INFOROM_DRAM_RETIREMENT_FAILURE", "GPU memory remapping failure", R::kResetGpu,
     "CONTACT_SUPPORT"},
    {65, "ROBUST_CHANNEL_NVENC1_ERROR", "Unused", R::kContactSupport, ""},
    {66, "ROBUST_CHANNEL_FECS_ERR_REG_ACCESS_VIOLATION", "Illegal access by driver", R::kIgnore,
     "INVESTIGATE_SW"},
    {67, "ROBUST_CHANNEL_FECS_ERR_VERIF_VIOLATION", "Illegal access by driver", R::kIgnore,
     "CONTACT_SUPPORT"},
    {68, "ROBUST_CHANNEL_NVDEC0_ERROR", "NVDEC0 Exception", R::kRestartApp, "CONTACT_SUPPORT"},
    {69, "ROBUST_CHANNEL_GR_CLASS_ERROR", "Graphics Engine class error", R::kRestartApp,
     "CHECK_APP/CUDA"},
    {70, "ROBUST_CHANNEL_CE3_ERROR", "CE3: Unknown Error", R::kRestartApp, "CONTACT_SUPPORT"},
    {71, "ROBUST_CHANNEL_CE4_ERROR", "CE4: Unknown Error", R::kRestartApp, "CONTACT_SUPPORT"},
    {72, "ROBUST_CHANNEL_CE5_ERROR", "CE5: Unknown Error", R::kRestartApp, "CONTACT_SUPPORT"},
    {73, "ROBUST_CHANNEL_NVENC2_ERROR", "Unused", R::kContactSupport, ""},
    {74, "NVLINK_ERROR", "NVLINK Error", R::kWorkflowNvlink, "CONTACT_SUPPORT"},
    {75, "ROBUST_CHANNEL_CE6_ERROR", "CE6: Unknown Error", R::kRestartApp, "CONTACT_SUPPORT"},
    {76, "ROBUST_CHANNEL_CE7_ERROR", "CE7: Unknown Error", R::kRestartApp, "CONTACT_SUPPORT"},
    {77, "ROBUST_CHANNEL_CE8_ERROR", "CE8: Unknown Error", R::kRestartApp, "CONTACT_SUPPORT"},
    {78, "VGPU_START_ERROR", "vGPU Start Error", R::kUpdateSwFw, "UPDATE_SWFW"},
    {79, "ROBUST_CHANNEL_GPU_HAS_FALLEN_OFF_THE_BUS", "GPU has fallen off the bus",
     R::kRestartBareMetal, "CONTACT_SUPPORT"},
    {80, "PBDMA_PUSHBUFFER_CRC_MISMATCH", "Corrupted data sent to GPU", R::kRestartApp,
     "CHECK_APP/CUDA"},
    {81, "ROBUST_CHANNEL_VGA_SUBSYSTEM_ERROR", "Unused", R::kContactSupport, ""},
    {82, "ROBUST_CHANNEL_NVJPG0_ERROR", "NVJPG0 Error", R::kRestartApp, "CONTACT_SUPPORT"},
    {83, "ROBUST_CHANNEL_NVDEC1_ERROR", "NVDEC1 Error", R::kRestartApp, "CONTACT_SUPPORT"},
    {84, "ROBUST_CHANNEL_NVDEC2_ERROR", "NVDEC2 Error", R::kRestartApp, "CONTACT_SUPPORT"},
    {85, "ROBUST_CHANNEL_CE9_ERROR", "CE9: Unknown Error", R::kRestartApp, "CONTACT_SUPPORT"},
    {86, "ROBUST_CHANNEL_OFA0_ERROR", "OFA Exception", R::kRestartApp, "CONTACT_SUPPORT"},
    {87, "NVTELEMETRY_DRIVER_REPORT", "Unused", R::kContactSupport, ""},
    {88, "ROBUST_CHANNEL_NVDEC3_ERROR", "NVDEC3 Error", R::kRestartApp, "CONTACT_SUPPORT"},
    {89, "ROBUST_CHANNEL_NVDEC4_ERROR", "NVDEC4 Error", R::kRestartApp, "CONTACT_SUPPORT"},
    {90, "LTC_ERROR", "Unused", R::kContactSupport, ""},
    {91, "RESERVED_XID", "Unused", R::kContactSupport, ""},
    {92, "EXCESSIVE_SBE_INTERRUPTS", "High single-bit ECC error rate", R::kIgnore,
     "CONTACT_SUPPORT"},
    {93, "INFOROM_ERASE_LIMIT_EXCEEDED", "Non-fatal violation of provisioned InfoROM wear limit",
     R::kIgnore, "CONTACT_SUPPORT"},
    {94, "ROBUST_CHANNEL_CONTAINED_ERROR", "Contained memory error", R::kRestartApp,
     "IGNORE (sympathetic)"},
    {95, "ROBUST_CHANNEL_UNCONTAINED_ERROR", "Uncontained memory error", R::kResetGpu,
     "IGNORE (sympathetic)"},
    {96, "ROBUST_CHANNEL_NVDEC5_ERROR", "NVDEC5 Error", R::kRestartApp, "CONTACT_SUPPORT"},
    {97, "ROBUST_CHANNEL_NVDEC6_ERROR", "NVDEC6 Error", R::kRestartApp, "CONTACT_SUPPORT"},
    {98, "ROBUST_CHANNEL_NVDEC7_ERROR", "NVDEC7 Error", R::kRestartApp, "CONTACT_SUPPORT"},
    {99, "ROBUST_CHANNEL_NVJPG1_ERROR", "NVJPG1 Error", R::kRestartApp, "CONTACT_SUPPORT"},
    {100, "ROBUST_CHANNEL_NVJPG2_ERROR", "NVJPG2 Error", R::kRestartApp, "CONTACT_SUPPORT"},
    {101, "ROBUST_CHANNEL_NVJPG3_ERROR", "NVJPG3 Error", R::kRestartApp, "CONTACT_SUPPORT"},
    {102, "ROBUST_CHANNEL_NVJPG4_ERROR", "NVJPG4 Error", R::kRestartApp, "CONTACT_SUPPORT"},
    {103, "ROBUST_CHANNEL_NVJPG5_ERROR", "NVJPG5 Error", R::kRestartApp, "CONTACT_SUPPORT"},
    {104, "ROBUST_CHANNEL_NVJPG6_ERROR", "NVJPG6 Error", R::kRestartApp, "CONTACT_SUPPORT"},
    {105, "ROBUST_CHANNEL_NVJPG7_ERROR", "NVJPG7 Error", R::kRestartApp, "CONTACT_SUPPORT"},
    {106, "SMBPBI_TEST_MESSAGE", "SMBPBI Test Message", R::kIgnore, "IGNORE"},
    {107, "SMBPBI_TEST_MESSAGE_SILENT", "SMBPBI Test Message Silent", R::kIgnore, "IGNORE"},
    {108, "NVLINK_REMOTE_TRANSLATION_ERROR", "Unused", R::kIgnore, "XID_137_FLOW"},
    {109, "ROBUST_CHANNEL_CTXSW_TIMEOUT_ERROR", "Context Switch Timeout Error", R::kResetGpu,
     "CONTACT_SUPPORT"},
    {110, "SEC_FAULT_ERROR", "Security Fault Error", R::kResetGpu, "INVESTIGATE_SW"},
    {111, "BUNDLE_ERROR_EVENT", "Unused", R::kContactSupport, ""},
    {112, "DISP_SUPERVISOR_ERROR", "Unused", R::kContactSupport, ""},
    {113, "DP_LT_FAILURE", "Unused", R::kContactSupport, ""},
    {114, "HEAD_RG_UNDERFLOW", "Unused", R::kContactSupport, ""},
    {115, "CORE_CHANNEL_REGS", "Unused", R::kContactSupport, ""},
    {116, "WINDOW_CHANNEL_REGS", "Unused", R::kContactSupport, ""},
    {117, "CURSOR_CHANNEL_REGS", "Unused", R::kContactSupport, ""},
    {118, "HEAD_REGS", "Unused", R::kContactSupport, ""},
    {119, "GSP_RPC_TIMEOUT", "GSP RPC Timeout", R::kResetGpu, "INVESTIGATE_SW"},
    {120, "GSP_ERROR", "GSP Error", R::kResetGpu, "INVESTIGATE_SW"},
    {121, "C2C_ERROR", "C2C Error", R::kIgnore, "CONTACT_SUPPORT"},
    {122, "SPI_PMU_RPC_READ_FAIL", "Unused", R::kContactSupport, ""},
    {123, "SPI_PMU_RPC_WRITE_FAIL", "Unused", R::kContactSupport, ""},
    {124, "SPI_PMU_RPC_ERASE_FAIL", "Unused", R::kContactSupport, ""},
    {125, "INFOROM_FS_ERROR", "Unused", R::kContactSupport, ""},
    {126, "ROBUST_CHANNEL_CE10_ERROR", "CE10: Unknown Error", R::kRestartApp, "CONTACT_SUPPORT"},
    {127, "ROBUST_CHANNEL_CE11_ERROR", "CE11: Unknown Error", R::kRestartApp, "CONTACT_SUPPORT"},
    {128, "ROBUST_CHANNEL_CE12_ERROR", "CE12: Unknown Error", R::kRestartApp, "CONTACT_SUPPORT"},
    {129, "ROBUST_CHANNEL_CE13_ERROR", "CE13: Unknown Error", R::kRestartApp, "CONTACT_SUPPORT"},
    {130, "ROBUST_CHANNEL_CE14_ERROR", "CE14: Unknown Error", R::kRestartApp, "CONTACT_SUPPORT"},
    {131, "ROBUST_CHANNEL_CE15_ERROR", "CE15: Unknown Error", R::kRestartApp, "CONTACT_SUPPORT"},
    {132, "ROBUST_CHANNEL_CE16_ERROR", "CE16: Unknown Error", R::kRestartApp, "CONTACT_SUPPORT"},
    {133, "ROBUST_CHANNEL_CE17_ERROR", "CE17: Unknown Error", R::kRestartApp, "CONTACT_SUPPORT"},
    {134, "ROBUST_CHANNEL_CE18_ERROR", "CE18: Unknown Error", R::kRestartApp, "CONTACT_SUPPORT"},
    {135, "ROBUST_CHANNEL_CE19_ERROR", "CE19: Unknown Error", R::kRestartApp, "CONTACT_SUPPORT"},
    {136, "ALI_TRAINING_FAIL", "Link Training Failed", R::kResetGpu, "INVESTIGATE_LINK_SI"},
    {137, "NVLINK_PRIV_ERR", "NVLink Privilege Error", R::kIgnore, "XID_137_FLOW"},
    {138, "ROBUST_CHANNEL_DLA_ERROR", "Unused", R::kContactSupport, ""},
    {139, "ROBUST_CHANNEL_OFA1_ERROR", "OFA1 Error", R::kRestartApp, "CONTACT_SUPPORT"},
    {140, "UNRECOVERABLE_ECC_ERROR_ESCAPE", "ECC Unrecovered Error", R::kResetGpu,
     "CONTACT_SUPPORT"},
    {141, "ROBUST_CHANNEL_FAST_PATH_ERROR", "CUDA Fast Path Error", R::kIgnore, "CONTACT_SUPPORT"},
    {142, "ROBUST_CHANNEL_NVENC3_ERROR", "NVENC3 Error", R::kContactSupport, ""},
    {143, "GPU_INIT_ERROR", "GPU Initialization Error", R::kResetGpu, "CONTACT_SUPPORT"},
    {144, "NVLINK_SAW_ERROR", "NVLINK: SAW Error", R::kWorkflowNvlink5, "WORKFLOW_NVLINK5_ERR"},
    {145, "NVLINK_RLW_ERROR", "NVLINK: RLW Error", R::kWorkflowNvlink5, "WORKFLOW_NVLINK5_ERR"},
    {146, "NVLINK_TLW_ERROR", "NVLINK: TLW Error", R::kWorkflowNvlink5, "WORKFLOW_NVLINK5_ERR"},
    {147, "NVLINK_TREX_ERROR", "NVLINK: TREX Error", R::kWorkflowNvlink5, "WORKFLOW_NVLINK5_ERR"},
    {148, "NVLINK_NVLPW_CTRL_ERROR", "NVLINK: NVLPW_CTRL Error", R::kWorkflowNvlink5,
     "WORKFLOW_NVLINK5_ERR"},
    {149, "NVLINK_NETIR_ERROR", "NVLINK: NETIR Error", R::kWorkflowNvlink5, "WORKFLOW_NVLINK5_ERR"},
    {150, "NVLINK_MSE_ERROR", "NVLINK: MSE Error", R::kWorkflowNvlink5, "WORKFLOW_NVLINK5_ERR"},
    {151, "ROBUST_CHANNEL_KEY_ROTATION_ERROR", "Key rotation Error", R::kRestartVm,
     "CONTACT_SUPPORT"},
    {152, "ROBUST_CHANNEL_DLA_SMMU_ERROR", "DLA SMMU Error", R::kIgnore, "CONTACT_SUPPORT"},
    {153, "ROBUST_CHANNEL_DLA_TIMEOUT", "DLA timeout Error", R::kIgnore, "CONTACT_SUPPORT"},
    {154, "GPU_RECOVERY_ACTION_CHANGED", "GPU Recovery Action Changed", R::kFollowXid154,
     "N/A Informational only regarding another Xid"},
    {155, "NVLINK_SW_DEFINED_ERROR", "NVLINK: SW Defined Error", R::kResetGpu,
     "INVESTIGATE_SW_USER"},
    {156, "RESOURCE_RETIREMENT_EVENT", "Resource Retirement Event", R::kResetGpu, "IGNORE"},
    {157, "RESOURCE_RETIREMENT_FAILURE", "Resource Retirement Failure", R::kIgnore,
     "CONTACT_SUPPORT"},
    {158, "GPU_FATAL_TIMEOUT", "GPU Fatal Timeout", R::kResetGpu, "CONTACT_SUPPORT"},
    {159, "ROBUST_CHANNEL_CHI_NON_DATA_ERROR", "CHI Non-Data Error", R::kCheckUvm,
     "SYMPATHETIC_REPORT_SOLO"},
    {160, "CHANNEL_RETIREMENT_EVENT", "Channel Retirement Event", R::kIgnore, "INVESTIGATE_SW"},
    {161, "CHANNEL_RETIREMENT_FAILURE", "Channel Retirement Failure", R::kIgnore, "INVESTIGATE_SW"},
    {162, "PSHC_REENGAGED", "Power Smoothing HW Circuitry capability reengaged", R::kNotGiven, ""},
    {163, "PSHC_DISENGAGED", "Power Smoothing HW Circuitry capability disengaged", R::kNotGiven,
     ""},
    {164, "PSHC_LOW_LIFETIME", "Power Smoothing HW Circuitry low lifetime reached", R::kNotGiven,
     ""},
    {165, "PSHC_ZERO_LIFETIME", "Power Smoothing HW Circuitry lifetime exhausted", R::kNotGiven,
     ""},
    {166, "NVLINK_SECURE_CRYPTO_ERR",
     "CC traffic seen prior to link properly being configured for encrypted traffic", R::kNotGiven,
     ""},
    {167, "PCIE_FATAL_TIMEOUT", "PCIE_FATAL_TIMEOUT", R::kNotGiven, ""},
    {168, "REDUCED_GPU_MEMORY_CAPACITY", "Errors found in WPR (write protected region)",
     R::kNotGiven, ""},
    {169, "SEC2_HALT_ERROR", "Internal micro-controller halt", R::kNotGiven, ""},
    {170, "NVLINK_SECURE_OTHER", "Interrupt seen in CC mode", R::kNotGiven, ""},
    {171, "UNCORRECTABLE_DRAM_ERROR",
     "Additional to Xid 48 providing more details on particulars of fault to differentiate "
     "DRAM/SRAM",
     R::kNotGiven, ""},
    {172, "UNCORRECTABLE_SRAM_ERROR",
     "Additional to Xid 48 providing more details on particulars of fault to differentiate "
     "DRAM/SRAM",
     R::kNotGiven, ""},
});

static_assert(kRows.size() == 172);
static_assert(std::is_sorted(kRows.begin(), kRows.end(),
                             [](const NvidiaXid& a, const NvidiaXid& b) {
                               return a.code < b.code;
                             }));

}  // namespace

std::span<const NvidiaXid> NvidiaXidCatalog() { return kRows; }

std::optional<NvidiaXid> FindNvidiaXid(unsigned code) {
  // Codes are 1..172 without gaps (a test holds it): the row is at code - 1.
  if (code == 0 || code > kRows.size()) return std::nullopt;
  return kRows[code - 1];
}

std::string_view NvidiaResolutionToken(NvidiaResolution r) {
  switch (r) {
    case R::kRestartApp:
      return "RESTART_APP";
    case R::kIgnore:
      return "IGNORE";
    case R::kResetGpu:
      return "RESET_GPU";
    case R::kRestartBareMetal:
      return "RESTART_BM";
    case R::kRestartVm:
      return "RESTART_VM";
    case R::kContactSupport:
      return "CONTACT_SUPPORT";
    case R::kCheckMechanicals:
      return "CHECK_MECHANICALS";
    case R::kUpdateSwFw:
      return "UPDATE_SWFW";
    case R::kCheckUvm:
      return "CHECK_UVM";
    case R::kWorkflowXid45:
      return "WORKFLOW_XID_45";
    case R::kWorkflowXid48:
      return "WORKFLOW_XID_48";
    case R::kWorkflowNvlink:
      return "WORKFLOW_NVLINK_ERR";
    case R::kWorkflowNvlink5:
      return "WORKFLOW_NVLINK5_ERR";
    case R::kFollowXid154:
      return "XID_154";
    case R::kNotGiven:
      return "";
  }
  return "";
}

}  // namespace gw::kmsg
