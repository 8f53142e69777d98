#include "kmsg/xid_catalog.h"

#include <algorithm>
#include <array>
#include <string>

namespace gw::kmsg {

namespace {

using C = CauseClass;
using A = XidAction;
using W = Actor;

constexpr XidInfo X(unsigned code, std::string_view mnemonic, std::string_view name,
                    std::string_view meaning, CauseClass cause, XidAction action, Actor actor,
                    bool hardware_fault, bool reboot_recoverable, std::string_view advice) {
  XidInfo x;
  x.code = code;
  x.known = true;
  x.mnemonic = mnemonic;
  x.name = name;
  x.meaning = meaning;
  x.cause = cause;
  x.action = action;
  x.actor = actor;
  x.hardware_fault = hardware_fault;
  x.reboot_recoverable = reboot_recoverable;
  x.advice = advice;
  x.impact = ImpactOf(cause, action, hardware_fault);
  return x;
}

// An entry whose impact NVIDIA's containment sets apart from its action.
constexpr XidInfo WithImpact(XidInfo x, XidImpact impact) {
  x.impact = impact;
  return x;
}

constexpr bool kHw = true, kNotHw = false;
constexpr bool kRecoverable = true, kNotRecoverable = false;

// Actions where NVIDIA's short list in our sources names no immediate action
// default to kContactSupport (as NVIDIA's NVSentinel does for unknown codes);
// their advice says so.
constexpr auto kCatalog = std::to_array<XidInfo>({
    X(8, "ROBUST_CHANNEL_FIFO_ERROR_IDLE_TIMEOUT", "GPU stopped processing",
      "A channel timed out: the GPU stopped making progress on a job's work.", C::kDriver,
      A::kRestartApp, W::kUser, kNotHw, kNotRecoverable,
      "Restart the application; if it repeats on this GPU, an admin resets the GPU."),
    X(13, "ROBUST_CHANNEL_GR_EXCEPTION", "graphics engine exception",
      "A GPU kernel faulted (illegal instruction, illegal address, SM warp exception).",
      C::kApplication, A::kRestartApp, W::kUser, kNotHw, kNotRecoverable,
      "Usually a bug in the application: restart and debug it. If bursts hit the same GPU from "
      "different jobs with known-good code, run diagnostics (dcgmi diag)."),
    X(31, "ROBUST_CHANNEL_FIFO_ERROR_MMU_ERR_FLT", "GPU memory page fault",
      "A GPU kernel accessed an address it has no mapping for.", C::kApplication, A::kRestartApp,
      W::kUser, kNotHw, kNotRecoverable,
      "Usually a bug in the application: restart and debug it. Repeated faults on the same GPU "
      "from different jobs: run DCGM diagnostics (EUD); on different GPUs: check the "
      "application/CUDA."),
    X(32, "ROBUST_CHANNEL_PBDMA_ERROR", "corrupted push buffer",
      "The command stream reaching the GPU was invalid or corrupted.", C::kBus, A::kRestartApp,
      W::kUser, kNotHw, kNotRecoverable,
      "Restart the application; if it repeats, an admin checks PCIe errors and system memory."),
    X(38, "ROBUST_CHANNEL_FECS_ERR_WATCHDOG_TIMEOUT", "driver firmware error",
      "A driver firmware watchdog (FECS) timed out.", C::kFirmware, A::kIgnore, W::kAdmin, kNotHw,
      kNotRecoverable, "No action by itself; if it recurs, update the driver."),
    X(39, "", "unused Xid",
      "NVIDIA's listing marks this code unused; a driver that logs it reports an error it does "
      "not name.",
      C::kDriver, A::kContactSupport, W::kAdmin, kNotHw, kNotRecoverable,
      "Read the message; contact support if it recurs."),
    X(42, "", "video processor exception",
      "The video processor raised an exception for a job's stream (legacy listing: driver).",
      C::kDriver, A::kRestartApp, W::kUser, kNotHw, kNotRecoverable,
      "Restart the application; update the driver if it repeats."),
    X(43, "ROBUST_CHANNEL_RESETCHANNEL_VERIF_ERROR", "channel reset after an application fault",
      "The GPU stopped one application's channel after that application faulted; the GPU is "
      "healthy.",
      C::kApplication, A::kIgnore, W::kUser, kNotHw, kNotRecoverable,
      "Nothing to do for the GPU; the affected job has to be fixed or restarted."),
    X(45, "ROBUST_CHANNEL_PREEMPTIVE_REMOVAL", "pre-emptive cleanup",
      "The driver tore down a process's GPU work because of an earlier error or because the "
      "process was killed.",
      C::kApplication, A::kRestartApp, W::kUser, kNotHw, kNotRecoverable,
      "Look at the Xid that preceded it (\"caused by previous Xid N\"); alone, it only means a "
      "process's GPU work was cleaned up."),
    X(46, "", "GPU stopped processing", "The GPU stopped processing and needs a reset.", C::kDriver,
      A::kResetGpu, W::kAdmin, kNotHw, kRecoverable,
      "Drain the GPU and reset it; if it recurs after reboots, inspect the hardware."),
    X(48, "ROBUST_CHANNEL_GPU_ECC_DBE", "double-bit ECC error",
      "An uncorrectable (double-bit) ECC error hit GPU memory.", C::kMemory, A::kDrain, W::kAdmin,
      kHw, kRecoverable,
      "Drain the GPU and reset it to activate row remapping; replace it (RMA) if remapping fails "
      "or the error repeats."),
    X(54, "", "auxiliary power not connected",
      "The GPU's auxiliary power cable is not connected or not delivering power.", C::kThermalPower,
      A::kCheckMechanicals, W::kAdmin, kHw, kNotRecoverable,
      "Check the GPU's power cables and seating."),
    X(56, "DISPLAY_CHANNEL_EXCEPTION", "display engine error",
      "The display engine reported an error (unused on Ampere and later).", C::kDriver,
      A::kContactSupport, W::kAdmin, kNotHw, kNotRecoverable,
      "Rare on servers; update the driver and contact support if it recurs."),
    X(57, "FB_LINK_TRAINING_FAILURE_ERROR", "video memory interface error",
      "Programming the video-memory interface failed (unused on Ampere and later).", C::kMemory,
      A::kContactSupport, W::kVendor, kHw, kNotRecoverable,
      "Contact support; the GPU's memory interface is faulty (RMA)."),
    X(58, "", "unstable video memory interface",
      "The GPU detected an unstable video-memory interface or an EDC error (the message says "
      "which).",
      C::kMemory, A::kContactSupport, W::kVendor, kHw, kNotRecoverable,
      "Drain the GPU and contact support; run diagnostics (dcgmi diag -r 3); replace (RMA) if it "
      "repeats."),
    X(60, "", "video processor exception",
      "The video processor raised an exception (legacy listing: driver).", C::kDriver,
      A::kRestartApp, W::kUser, kNotHw, kNotRecoverable,
      "Restart the application; reset the GPU or update the driver if it repeats."),
    X(61, "PMU_BREAKPOINT", "micro-controller breakpoint",
      "An internal micro-controller (PMU) hit a breakpoint or warning (unused on Ampere and "
      "later).",
      C::kFirmware, A::kContactSupport, W::kAdmin, kNotHw, kNotRecoverable,
      "Contact support; reset the GPU if a hang follows."),
    X(62, "PMU_HALT_ERROR", "micro-controller halt", "An internal micro-controller (PMU) halted.",
      C::kFirmware, A::kResetGpu, W::kAdmin, kNotHw, kRecoverable,
      "Reset the GPU; reboot the node if the reset fails; check cooling (it can be thermal)."),
    X(63, "INFOROM_DRAM_RETIREMENT_EVENT", "page retirement / row remap event",
      "After ECC errors a memory page was retired or a row was marked for remapping.", C::kMemory,
      A::kIgnore, W::kAdmin, kNotHw, kNotRecoverable,
      "Informational; a GPU reset (when idle) activates a pending row remap."),
    X(64, "INFOROM_DRAM_RETIREMENT_FAILURE", "page retirement / row remap failure",
      "Retiring a bad memory page or remapping a bad row failed.", C::kMemory, A::kResetGpu,
      W::kVendor, kHw, kRecoverable,
      "Reset the GPU; if remapping keeps failing, the GPU meets the replacement (RMA) criterion."),
    X(67, "", "illegal access by driver",
      "The driver made an illegal access on a job's behalf (legacy listing: driver or "
      "application).",
      C::kDriver, A::kRestartApp, W::kUser, kNotHw, kNotRecoverable,
      "Restart the application; update the driver if it repeats."),
    X(68, "ROBUST_CHANNEL_NVDEC0_ERROR", "video decoder exception",
      "The video decoder (NVDEC0) raised an exception for an application's stream.",
      C::kApplication, A::kRestartApp, W::kUser, kNotHw, kNotRecoverable,
      "Restart the application; check its input stream."),
    X(69, "ROBUST_CHANNEL_GR_CLASS_ERROR", "graphics engine class error",
      "The graphics engine received a command it does not accept.", C::kDriver, A::kRestartApp,
      W::kUser, kNotHw, kNotRecoverable,
      "Restart the application; check the application/CUDA versions if it repeats."),
    X(73, "", "video encoder error", "The video encoder (NVENC2) reported an error.", C::kDriver,
      A::kRestartApp, W::kUser, kNotHw, kNotRecoverable,
      "Restart the application; reset the GPU if the encoder keeps failing."),
    X(74, "NVLINK_ERROR", "NVLink error", "An NVLink link reported an error.", C::kNvlink,
      A::kResetGpu, W::kAdmin, kHw, kRecoverable,
      "Decode the register fields in the message; reset the GPU; reseat or diagnose the link if "
      "it repeats."),
    X(78, "", "vGPU start error", "A virtual GPU (vGPU) failed to start.", C::kDriver,
      A::kContactSupport, W::kAdmin, kNotHw, kNotRecoverable,
      "Check the vGPU manager's log and configuration; contact support if it recurs."),
    X(79, "ROBUST_CHANNEL_GPU_HAS_FALLEN_OFF_THE_BUS", "GPU fell off the bus",
      "The GPU stopped answering on PCIe.", C::kBus, A::kRebootNode, W::kAdmin, kHw, kRecoverable,
      "Drain and reboot the node; check power, cooling and PCIe seating/riser; replace (RMA) if "
      "it recurs."),
    X(92, "EXCESSIVE_SBE_INTERRUPTS", "high single-bit ECC error rate",
      "GPU memory is correcting single-bit errors at a high rate.", C::kMemory, A::kIgnore,
      W::kAdmin, kNotHw, kNotRecoverable, "Monitor; plan a replacement if the rate keeps growing."),
    // Contained: only the process using the memory died; the GPU serves others
    // until a reset (when convenient) remaps the row.
    WithImpact(X(94, "ROBUST_CHANNEL_CONTAINED_ERROR", "contained memory error",
                 "An uncorrectable memory error was contained: only the process using that "
                 "memory was affected.",
                 C::kMemory, A::kRestartApp, W::kUser, kNotHw, kRecoverable,
                 "Restart the affected application (other work keeps running); reset the GPU "
                 "when convenient (idle) to remap the row."),
               XidImpact::kDegraded),
    X(95, "ROBUST_CHANNEL_UNCONTAINED_ERROR", "uncontained memory error",
      "An uncorrectable memory error could not be contained: every process on the GPU is "
      "affected.",
      C::kMemory, A::kResetGpu, W::kAdmin, kHw, kRecoverable,
      "Drain the GPU and reset it; replace (RMA) if it repeats."),
    X(109, "ROBUST_CHANNEL_CTXSW_TIMEOUT_ERROR", "context-switch timeout",
      "The GPU could not switch away from a job's work in time.", C::kApplication, A::kResetGpu,
      W::kAdmin, kNotHw, kNotRecoverable,
      "Usually the application hung the GPU: restart it; if the GPU stays hung, reset it."),
    X(110, "", "security fault", "The GPU reported a security fault.", C::kFirmware, A::kResetGpu,
      W::kAdmin, kNotHw, kRecoverable, "Reset the GPU; contact support if it recurs."),
    X(119, "GSP_RPC_TIMEOUT", "GSP RPC timeout",
      "The GPU System Processor (GSP) firmware did not answer the driver in time.", C::kFirmware,
      A::kResetGpu, W::kAdmin, kNotHw, kRecoverable,
      "Reset the GPU (reboot if the reset fails) and update the driver; if it recurs after "
      "reboots, inspect the hardware."),
    X(120, "GSP_ERROR", "GSP error", "The GPU System Processor (GSP) firmware reported an error.",
      C::kFirmware, A::kResetGpu, W::kAdmin, kNotHw, kRecoverable,
      "Reset the GPU or reboot the node; update the driver if it recurs."),
    X(121, "C2C_ERROR", "C2C link error",
      "The chip-to-chip (C2C) link of a Grace Hopper / Blackwell module reported an error.",
      C::kBus, A::kIgnore, W::kAdmin, kNotHw, kNotRecoverable,
      "Monitor; contact support if it repeats."),
    X(122, "SPI_PMU_RPC_READ_FAIL", "SPI PMU RPC read failure",
      "A firmware read over SPI failed (unused on Ampere and later).", C::kFirmware,
      A::kContactSupport, W::kVendor, kNotHw, kNotRecoverable, "Contact support."),
    X(123, "SPI_PMU_RPC_WRITE_FAIL", "SPI PMU RPC write failure",
      "A firmware write over SPI failed (unused on Ampere and later).", C::kFirmware,
      A::kContactSupport, W::kVendor, kNotHw, kNotRecoverable, "Contact support."),
    X(136, "", "link training failed", "A link of the GPU failed to train.", C::kBus, A::kResetGpu,
      W::kAdmin, kNotHw, kRecoverable,
      "Reset the GPU; if it recurs after reboots, check seating and the link."),
    X(137, "", "NVLink privilege error", "An NVLink access violated its privilege level.",
      C::kNvlink, A::kIgnore, W::kAdmin, kNotHw, kNotRecoverable, "No action by itself."),
    X(140, "UNRECOVERABLE_ECC_ERROR_ESCAPE", "unrecovered ECC error",
      "An uncorrectable ECC error escaped containment.", C::kMemory, A::kResetGpu, W::kAdmin, kHw,
      kRecoverable, "Drain the GPU and reset it; replace (RMA) if it repeats."),
    X(143, "GPU_INIT_ERROR", "GPU initialisation failure", "The GPU failed to initialise.",
      C::kDriver, A::kResetGpu, W::kAdmin, kNotHw, kRecoverable,
      "Reset the GPU, then reboot the node; replace (RMA) if it keeps failing."),
    X(144, "NVLINK_SAW_ERROR", "NVLink SAW error", "The NVLink SAW unit reported an error.",
      C::kNvlink, A::kResetGpu, W::kAdmin, kNotHw, kRecoverable,
      "Decode unit and error status: fatal -> reset the GPU; non-fatal -> monitor (may lead to "
      "Xid 48/94/95)."),
    X(145, "NVLINK_RLW_ERROR", "NVLink RLW error", "The NVLink RLW unit reported an error.",
      C::kNvlink, A::kResetGpu, W::kAdmin, kNotHw, kRecoverable,
      "Decode unit and error status: fatal -> reset the GPU; non-fatal -> follow Xid 154."),
    X(146, "NVLINK_TLW_ERROR", "NVLink TLW error", "The NVLink TLW unit reported an error.",
      C::kNvlink, A::kResetGpu, W::kAdmin, kNotHw, kRecoverable,
      "Decode unit and error status; fatal -> reset the GPU."),
    X(147, "NVLINK_TREX_ERROR", "NVLink TREX error", "The NVLink TREX unit reported an error.",
      C::kNvlink, A::kResetGpu, W::kAdmin, kNotHw, kRecoverable,
      "Decode unit and error status; fatal -> reset the GPU."),
    X(148, "NVLINK_NVLPW_CTRL_ERROR", "NVLink NVLPW_CTRL error",
      "The NVLink NVLPW_CTRL unit reported an error.", C::kNvlink, A::kResetGpu, W::kAdmin, kNotHw,
      kRecoverable, "Decode unit and error status; fatal -> reset the GPU."),
    X(149, "NVLINK_NETIR_ERROR", "NVLink NETIR error",
      "The NVLink NETIR unit reported link down, bit-error-rate events or similar.", C::kNvlink,
      A::kResetGpu, W::kAdmin, kNotHw, kRecoverable,
      "Link down / link fatal -> reset the GPU; BER events -> monitor and check cables / signal "
      "integrity."),
    X(150, "NVLINK_MSE_ERROR", "NVLink MSE error", "The NVLink MSE watchdog fired.", C::kNvlink,
      A::kResetGpu, W::kAdmin, kNotHw, kRecoverable, "Reset the GPU."),
    X(151, "", "key rotation error", "A confidential-computing key rotation failed.", C::kFirmware,
      A::kRebootNode, W::kAdmin, kNotHw, kNotRecoverable, "Restart the (confidential) VM."),
    X(154, "GPU_RECOVERY_ACTION_CHANGED", "recovery action changed",
      "The driver changed the GPU's recovery action; the message names the new one.",
      C::kInformational, A::kResetGpu, W::kAdmin, kNotHw, kNotRecoverable,
      "Act on the new recovery action named in the message (reset, reboot, drain)."),
    X(155, "", "NVLink software-defined error", "NVLink reported a software-defined error.",
      C::kNvlink, A::kResetGpu, W::kAdmin, kNotHw, kRecoverable, "Reset the GPU."),
    X(156, "", "resource retirement event", "The GPU retired a failing internal resource.",
      C::kMemory, A::kResetGpu, W::kAdmin, kNotHw, kRecoverable,
      "Reset the GPU to make the retirement take effect."),
    X(157, "", "resource retirement failure", "Retiring a failing internal resource failed.",
      C::kMemory, A::kContactSupport, W::kVendor, kHw, kNotRecoverable,
      "Contact support (no immediate action in NVIDIA's short list); likely replacement."),
    X(158, "", "GPU fatal timeout", "The GPU hit a fatal timeout.", C::kDriver, A::kResetGpu,
      W::kAdmin, kNotHw, kRecoverable, "Reset the GPU; inspect the hardware if it recurs."),
    X(159, "", "CHI non-data error", "The coherent hub interface (CHI) reported a non-data error.",
      C::kBus, A::kContactSupport, W::kAdmin, kNotHw, kNotRecoverable,
      "Check the unified-memory (UVM) driver state."),
    X(160, "", "channel retirement event", "The driver retired a GPU channel.", C::kDriver,
      A::kContactSupport, W::kAdmin, kNotHw, kNotRecoverable,
      "Contact support if it recurs (no immediate action in NVIDIA's short list)."),
    X(161, "", "channel retirement failure", "Retiring a GPU channel failed.", C::kDriver,
      A::kContactSupport, W::kAdmin, kNotHw, kNotRecoverable,
      "Contact support (no immediate action in NVIDIA's short list)."),
    X(162, "", "power-smoothing event", "The GPU's power-smoothing circuitry reported an event.",
      C::kThermalPower, A::kContactSupport, W::kAdmin, kNotHw, kNotRecoverable,
      "Check power delivery; contact support if it recurs."),
    X(163, "", "power-smoothing event", "The GPU's power-smoothing circuitry reported an event.",
      C::kThermalPower, A::kContactSupport, W::kAdmin, kNotHw, kNotRecoverable,
      "Check power delivery; contact support if it recurs."),
    X(164, "", "power-smoothing event", "The GPU's power-smoothing circuitry reported an event.",
      C::kThermalPower, A::kContactSupport, W::kAdmin, kNotHw, kNotRecoverable,
      "Check power delivery; contact support if it recurs."),
    X(165, "", "power-smoothing event", "The GPU's power-smoothing circuitry reported an event.",
      C::kThermalPower, A::kContactSupport, W::kAdmin, kNotHw, kNotRecoverable,
      "Check power delivery; contact support if it recurs."),
    X(166, "", "confidential-compute NVLink error",
      "NVLink reported an error in confidential-computing mode.", C::kNvlink, A::kContactSupport,
      W::kAdmin, kNotHw, kNotRecoverable, "Contact support if it recurs."),
    X(167, "PCIE_FATAL_TIMEOUT", "PCIe fatal timeout",
      "A PCIe transaction to the GPU timed out fatally.", C::kBus, A::kContactSupport, W::kAdmin,
      kHw, kNotRecoverable, "Check PCIe seating, riser and platform; contact support."),
    X(168, "", "reduced GPU memory capacity",
      "The GPU runs with less usable memory than it has (WPR).", C::kMemory, A::kContactSupport,
      W::kAdmin, kNotHw, kNotRecoverable, "Contact support."),
    X(169, "", "SEC2 halt", "The GPU's security micro-controller (SEC2) halted.", C::kFirmware,
      A::kContactSupport, W::kAdmin, kNotHw, kNotRecoverable,
      "Reset the GPU; contact support if it recurs."),
    X(170, "", "confidential-compute NVLink error",
      "NVLink reported an error in confidential-computing mode.", C::kNvlink, A::kContactSupport,
      W::kAdmin, kNotHw, kNotRecoverable, "Contact support if it recurs."),
    X(171, "", "uncorrectable DRAM error detail",
      "Details of an uncorrectable DRAM error (accompanies Xid 48).", C::kMemory, A::kDrain,
      W::kAdmin, kHw, kRecoverable, "Handle as Xid 48: drain, reset; RMA if it repeats."),
    X(172, "", "uncorrectable SRAM error detail",
      "Details of an uncorrectable SRAM error (accompanies Xid 48).", C::kMemory, A::kDrain,
      W::kAdmin, kHw, kRecoverable, "Handle as Xid 48: drain, reset; RMA if it repeats."),
    X(173, "", "C2C fatal link failure", "The chip-to-chip (C2C) link failed fatally.", C::kBus,
      A::kContactSupport, W::kVendor, kHw, kNotRecoverable, "Contact support; likely replacement."),
});

static_assert(std::is_sorted(kCatalog.begin(), kCatalog.end(),
                             [](const XidInfo& a, const XidInfo& b) { return a.code < b.code; }));

// "caused by previous Xid 149" -> 149.
std::optional<unsigned> CausedBy(std::string_view detail) {
  const size_t p = detail.find("previous Xid ");
  if (p == std::string_view::npos) return std::nullopt;
  unsigned v = 0;
  size_t i = p + 13, n = 0;
  while (i < detail.size() && n < 6 && detail[i] >= '0' && detail[i] <= '9') {
    v = v * 10 + static_cast<unsigned>(detail[i++] - '0');
    ++n;
  }
  if (n == 0) return std::nullopt;
  return v;
}

// "... changed from 0x4 (Drain and Reset) to 0x1 (GPU Reset Required)" -> the
// nvmlDeviceGpuRecoveryAction_t after "to".
std::optional<XidAction> RecoveryAction(std::string_view detail) {
  const size_t p = detail.rfind(" to 0x");
  if (p == std::string_view::npos || p + 6 >= detail.size()) return std::nullopt;
  switch (detail[p + 6]) {
    case '0':
      return XidAction::kIgnore;  // NONE
    case '1':
      return XidAction::kResetGpu;  // GPU_RESET
    case '2':
      return XidAction::kRebootNode;  // NODE_REBOOT
    case '3':                         // DRAIN_P2P
    case '4':                         // DRAIN_AND_RESET
      return XidAction::kDrain;
    default:
      return XidAction::kContactSupport;
  }
}

// `word` delimited by spaces (or the text's ends).
bool ContainsWord(std::string_view text, std::string_view word) {
  for (size_t p = text.find(word); p != std::string_view::npos; p = text.find(word, p + 1)) {
    const bool starts = p == 0 || text[p - 1] == ' ';
    const size_t end = p + word.size();
    const bool ends = end == text.size() || text[end] == ' ';
    if (starts && ends) return true;
  }
  return false;
}

}  // namespace

std::span<const XidInfo> XidCatalog() { return kCatalog; }

XidInfo LookupXid(unsigned code) {
  auto it = std::lower_bound(kCatalog.begin(), kCatalog.end(), code,
                             [](const XidInfo& x, unsigned c) { return x.code < c; });
  if (it != kCatalog.end() && it->code == code) return *it;
  XidInfo unknown;
  unknown.code = code;
  unknown.known = false;
  unknown.name = "unknown Xid";
  unknown.meaning = code == 999 ? "NVML could not name this Xid (999)."
                                : "This Xid is not in gpuwarden's catalog.";
  unknown.cause = CauseClass::kUnknown;
  unknown.action = XidAction::kContactSupport;
  unknown.actor = Actor::kAdmin;
  unknown.advice = "unknown Xid, contact support";
  unknown.impact = XidImpact::kDegraded;
  return unknown;
}

XidAssessment AssessXid(const KernelEvent& ev) {
  XidAssessment a;
  a.xid = ev.xid.value_or(0);
  a.attributed_xid = a.xid;
  if (a.xid == 45) {
    if (auto n = CausedBy(ev.detail); n && *n != 45) a.attributed_xid = *n;
  }
  a.info = LookupXid(a.attributed_xid);
  const XidInfo own = a.attributed_xid == a.xid ? a.info : LookupXid(a.xid);
  a.cause = own.cause;
  a.impact = own.impact;
  if (a.xid == 154) {
    a.recovery_action = RecoveryAction(ev.detail);
    if (a.recovery_action) {
      a.impact = *a.recovery_action == XidAction::kIgnore           ? XidImpact::kNone
                 : *a.recovery_action == XidAction::kContactSupport ? XidImpact::kDegraded
                                                                    : XidImpact::kFault;
    }
  }
  if (a.xid >= 144 && a.xid <= 150) {
    // "145, RLW_RXPIPE Nonfatal XC0 ...", "149, NETIR_LINK_EVT Fatal XC0 ...".
    if (ContainsWord(ev.detail, "Nonfatal")) {
      // NVIDIA: a nonfatal SAW/RLW/NETIR event is to be ignored (watched):
      // this event's action, for why and events alike.
      a.impact = XidImpact::kNone;
      a.info.action = XidAction::kIgnore;
      a.info.advice = "Nonfatal: nothing to do now; watch for Xid 154 (a recovery action).";
    } else if (ContainsWord(ev.detail, "Fatal")) {
      a.impact = XidImpact::kFault;
    }
  }
  return a;
}

std::string_view CauseClassName(CauseClass c) {
  switch (c) {
    case CauseClass::kApplication:
      return "application";
    case CauseClass::kDriver:
      return "driver";
    case CauseClass::kFirmware:
      return "firmware_gsp";
    case CauseClass::kMemory:
      return "memory_ecc";
    case CauseClass::kBus:
      return "bus_pcie";
    case CauseClass::kThermalPower:
      return "thermal_power";
    case CauseClass::kNvlink:
      return "nvlink";
    case CauseClass::kInformational:
      return "informational";
    case CauseClass::kUnknown:
      return "unknown";
  }
  return "unknown";
}

std::string_view XidActionName(XidAction a) {
  switch (a) {
    case XidAction::kRestartApp:
      return "restart_app";
    case XidAction::kResetGpu:
      return "reset_gpu";
    case XidAction::kRebootNode:
      return "reboot_node";
    case XidAction::kDrain:
      return "drain";
    case XidAction::kCheckMechanicals:
      return "check_mechanicals";
    case XidAction::kContactSupport:
      return "contact_support";
    case XidAction::kIgnore:
      return "ignore";
  }
  return "contact_support";
}

std::string_view XidImpactName(XidImpact i) {
  switch (i) {
    case XidImpact::kNone:
      return "none";
    case XidImpact::kDegraded:
      return "degraded";
    case XidImpact::kFault:
      return "fault";
  }
  return "degraded";
}

std::string_view CategoryWord(CauseClass c) {
  switch (c) {
    case CauseClass::kApplication:
      return "application";
    case CauseClass::kDriver:
    case CauseClass::kFirmware:
      return "driver";
    case CauseClass::kMemory:
      return "memory";
    case CauseClass::kBus:
      return "bus";
    case CauseClass::kThermalPower:
      return "power";
    case CauseClass::kNvlink:
      return "nvlink";
    case CauseClass::kInformational:
    case CauseClass::kUnknown:
      return "hardware";
  }
  return "hardware";
}

std::string_view ActorName(Actor a) {
  switch (a) {
    case Actor::kUser:
      return "user";
    case Actor::kAdmin:
      return "admin";
    case Actor::kVendor:
      return "vendor";
  }
  return "admin";
}

}  // namespace gw::kmsg
