// The Xid catalog: what each Xid code means, whose problem it is, and what
// to do first. Every code NVIDIA's catalog lists (xid_nvidia.h) is here, and
// nothing else. What gpuwarden makes of a code (its cause, action, impact and
// who acts) is derived from NVIDIA's row by one rule (CauseOf, ActionOf,
// ImpactOf, ActorOf below; docs/xid-catalog.md), never set per code. The
// plain-word names, meanings and advice are the project's own.
#ifndef GPUWARDEN_KMSG_XID_CATALOG_H_
#define GPUWARDEN_KMSG_XID_CATALOG_H_

#include <optional>
#include <span>
#include <string_view>

#include "kmsg/kernel_event.h"
#include "kmsg/xid_nvidia.h"

namespace gw::kmsg {

enum class CauseClass {
  kApplication,    // The job's code or data: the Kubernetes device plugin's set (13, 31, 43,
                   // 45, 68, 109), which leaves the GPU healthy.
  kEngine,         // An engine ran a job's work and raised an exception: copy, video, JPEG,
                   // optical-flow, graphics, push-buffer / channel (CE, NVDEC, GR_, PBDMA...).
  kDriver,         // Driver software, vGPU, channels.
  kFirmware,       // GPU firmware and micro-controllers: GSP, PMU, SEC2, FECS, InfoROM.
  kMemory,         // GPU memory, ECC, page retirement / row remapping.
  kBus,            // PCIe / C2C / CHI: the link between host and GPU.
  kThermalPower,   // Cooling, power delivery, auxiliary power, power smoothing.
  kNvlink,         // NVLink / NVSwitch fabric.
  kInformational,  // A notice about another event (154: the recovery action changed).
  kUnknown,        // Not in NVIDIA's catalog.
};

// What to do first: NVIDIA's immediate resolution made one action (ActionOf).
enum class XidAction {
  kRestartApp,        // Kill / restart the affected application.
  kResetGpu,          // Drain the GPU's work and reset it (nvidia-smi -r).
  kRebootNode,        // Reboot the node (or the VM).
  kDrain,             // Take the GPU out of service now, then reset it.
  kCheckMechanicals,  // Power cables, seating.
  kUpdateSoftware,    // Update the driver, firmware or vGPU software.
  kContactSupport,    // Hardware/driver investigation; possible RMA.
  kIgnore,            // Informational; nothing to do.
};

// What an Xid says about its GPU while it is current (this boot, this driver
// load; see event_age.h): NVIDIA's immediate action and the error's
// containment, not the Xid's name. Older events are history, never a verdict.
enum class XidImpact {
  kNone,      // The GPU is fine: application faults, informational events, ignore/restart-app.
  kDegraded,  // It serves work but needs attention: a contained error (94), contact-support codes.
  kFault,     // Out of service until reset, reboot, drain or repair (48, 79, 95, 119, ...).
};

// Who must act first.
enum class Actor {
  kUser,    // The GPU's user: restart or fix the job.
  kAdmin,   // The node's administrator: reset, reboot, drain, update.
  kVendor,  // NVIDIA / the system vendor: replacement (RMA).
};

struct XidInfo {
  unsigned code = 0;
  bool known = false;            // In NVIDIA's catalog.
  bool unused = false;           // NVIDIA lists the code as unused: no current driver logs it.
  std::string_view mnemonic;     // NVIDIA's mnemonic; empty for unknown codes.
  std::string_view description;  // NVIDIA's short description.
  NvidiaResolution immediate = NvidiaResolution::kNotGiven;  // NVIDIA's first step.
  std::string_view investigatory;                            // NVIDIA's next step when it persists.
  std::string_view name;                                     // A few words of ours.
  std::string_view meaning;                                  // One plain sentence.
  CauseClass cause = CauseClass::kUnknown;
  XidAction action = XidAction::kContactSupport;
  Actor actor = Actor::kAdmin;
  // The Xid says by itself that hardware is failing (without repetition).
  bool hardware_fault = false;
  // A reset or reboot is expected to clear it: if it recurs on the same GPU
  // across reboots, the hardware needs inspection (escalation.h).
  bool reboot_recoverable = false;
  std::string_view advice;  // What to do, incl. what to check if it repeats.
  XidImpact impact = XidImpact::kDegraded;
};

// The rule, one function per derived field, each from NVIDIA's row alone:
//
// CauseOf: the Kubernetes device plugin's application set (13, 31, 43, 45, 68,
//   109) -> application; else by the mnemonic's tokens, first match: an
//   engine's channel (ROBUST_CHANNEL_ followed by CEn, NVDECn, NVENCn, NVJPGn,
//   OFAn, VIC, DLA, MSVLD, MSPDEC, MSPPP, SEC, SEC2, MPEG, ME, VP, VP2, BSP,
//   GR, PBDMA or FIFO; or PBDMA_...) -> engine; NVLINK, ALI -> nvlink; ECC,
//   DRAM, SRAM, SBE, CONTAINED, UNCONTAINED, FB, MEMORY, LTC or
//   RESOURCE_RETIREMENT -> memory; BUS, PCIE, C2C, CHI -> bus; PWR, TEMP,
//   TEMPERATURE, PSHC or SILENT_RUNNING -> thermal/power; GSP, PMU, SEC2,
//   FECS, SEC, KEY, INFOROM, SPI, SMBPBI -> firmware; RECOVERY_ACTION ->
//   informational; anything else -> driver.
// ActionOf: NVIDIA's immediate resolution: RESTART_APP, CHECK_UVM,
//   WORKFLOW_XID_45 -> restart_app; IGNORE -> ignore; RESET_GPU,
//   WORKFLOW_NVLINK_ERR, WORKFLOW_NVLINK5_ERR -> reset_gpu; RESTART_BM,
//   RESTART_VM -> reboot_node; WORKFLOW_XID_48 -> drain; CHECK_MECHANICALS ->
//   check_mechanicals; UPDATE_SWFW -> update_software; CONTACT_SUPPORT,
//   XID_154 -> contact_support. None given: a description "Additional to Xid
//   N" takes N's; a capability "reengaged" (back in service) is ignore; else
//   contact_support.
// ImpactOf: ignore -> none; restart_app -> none, except for a memory error
//   (its row is remapped only at the next reset) -> degraded; reset_gpu,
//   reboot_node, drain, check_mechanicals -> fault; contact_support,
//   update_software -> degraded; informational -> degraded until its text
//   says more (AssessXid).
// ActorOf: restart_app -> user; contact_support about memory, bus, power or
//   NVLink -> vendor; else admin.
// hardware_fault: impact fault and cause memory, bus, power or NVLink.
// reboot_recoverable: action reset_gpu, reboot_node or drain, or a memory
//   error whose application restarts (its row is remapped at the next reset).
CauseClass CauseOf(const NvidiaXid& row);
XidAction ActionOf(const NvidiaXid& row);
XidImpact ImpactOf(CauseClass cause, XidAction action);
Actor ActorOf(CauseClass cause, XidAction action);

// Every code of NVIDIA's catalog, ascending (1 to 172).
std::span<const XidInfo> XidCatalog();

// The entry for `code`; for codes not in NVIDIA's catalog (and NVML's 999) an
// entry with known = false, cause kUnknown (category driver: the driver
// reported something nobody has catalogued), action kContactSupport, impact
// kDegraded (an error report nobody can explain: someone should look) and
// advice that says it is unknown.
XidInfo LookupXid(unsigned code);

// One Xid event read with its own text.
struct XidAssessment {
  unsigned xid = 0;             // As logged.
  unsigned attributed_xid = 0;  // Xid 45 "caused by previous Xid N" -> N; else xid.
  // Catalog entry of attributed_xid; for a "Nonfatal" NVLink5 Xid its action
  // and advice are this event's (ignore, watch for 154).
  XidInfo info;
  // Xid 154 "GPU recovery action changed from ... to 0xN (...)": the new
  // action (NVML's nvmlDeviceGpuRecoveryAction_t 0-7).
  std::optional<XidAction> recovery_action;
  // The impact of this event: info.impact (for an Xid 45 caused by Xid N,
  // N's: the cleanup after N says what N says), refined by the text: Xid 154
  // by its new recovery action (none -> kNone, reset / reboot / drain ->
  // kFault); NVLink5 Xids 144-150 marked "Nonfatal" -> kNone (NVIDIA: ignore,
  // watch for 154), "Fatal" -> kFault.
  XidImpact impact = XidImpact::kDegraded;
  // The cause used for the finding's category: info.cause.
  CauseClass cause = CauseClass::kUnknown;
};

// REQUIRES: ev.xid.
XidAssessment AssessXid(const KernelEvent& ev);

// Stable lower-case words for JSON and tests: "application", "restart_app", "user", ...
std::string_view CauseClassName(CauseClass c);
std::string_view XidActionName(XidAction a);
std::string_view ActorName(Actor a);
std::string_view XidImpactName(XidImpact i);  // "none", "degraded", "fault"

// The finding category an Xid's cause maps to, as the word diagnose uses
// (findings[].category): application -> "application"; engine -> "engine";
// driver, firmware / GSP and unknown codes (the driver reported something
// nobody catalogued) -> "driver"; memory -> "memory"; bus (PCIe, C2C) ->
// "bus"; thermal and power -> "power"; NVLink -> "nvlink"; informational
// (154, when no Xid before it says more) -> "hardware".
std::string_view CategoryWord(CauseClass c);

}  // namespace gw::kmsg

#endif  // GPUWARDEN_KMSG_XID_CATALOG_H_
