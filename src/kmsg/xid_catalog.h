// The Xid catalog: what each Xid code means, whose problem it is, and what
// NVIDIA says to do first. Facts from NVIDIA's Xid catalog (r590) and the
// legacy Xid listing (cause flags), restated in plain words.
//
// The distinction that matters most for gpuwarden: `hardware_fault` says
// whether the Xid *by itself* indicates failing or mis-installed hardware.
// Application Xids (13, 31, 43, 45, 68, 109) never do; repetition patterns are
// judged separately (escalation.h).
#ifndef GPUWARDEN_KMSG_XID_CATALOG_H_
#define GPUWARDEN_KMSG_XID_CATALOG_H_

#include <optional>
#include <span>
#include <string_view>

#include "kmsg/kernel_event.h"

namespace gw::kmsg {

enum class CauseClass {
  kApplication,    // The job's code or data (illegal address, hang, ...).
  kDriver,         // Driver software.
  kFirmware,       // GPU firmware, incl. the GSP.
  kMemory,         // GPU memory, ECC, page retirement / row remapping.
  kBus,            // PCIe / C2C: the link between host and GPU.
  kThermalPower,   // Cooling, power delivery, auxiliary power.
  kNvlink,         // NVLink / NVSwitch fabric.
  kInformational,  // A notice, not a fault.
  kUnknown,        // Not in the catalog.
};

// NVIDIA's immediate action (catalog "immediate resolution" buckets).
enum class XidAction {
  kRestartApp,        // Kill / restart the affected application.
  kResetGpu,          // Drain the GPU's work and reset it (nvidia-smi -r).
  kRebootNode,        // Reboot the node (or the VM).
  kDrain,             // Take the GPU out of service now, then reset it.
  kCheckMechanicals,  // Power cables, seating.
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
  bool known = false;         // In the catalog.
  std::string_view mnemonic;  // NVIDIA's catalog name; empty where our sources give none.
  std::string_view name;      // A few words.
  std::string_view meaning;   // One plain sentence.
  CauseClass cause = CauseClass::kUnknown;
  XidAction action = XidAction::kContactSupport;
  Actor actor = Actor::kAdmin;
  bool hardware_fault = false;  // By itself, without repetition.
  // A reset or reboot is expected to clear it: if it recurs on the same GPU
  // across reboots, the hardware needs inspection (escalation.h).
  bool reboot_recoverable = false;
  std::string_view advice;  // What to do, incl. what to check if it repeats.
  // Derived from cause, action and hardware_fault (ImpactOf), with explicit
  // exceptions (94 contained -> kDegraded) written in the table.
  XidImpact impact = XidImpact::kDegraded;
};

// The impact NVIDIA's action implies: application and informational causes,
// kIgnore and kRestartApp -> kNone; kResetGpu, kRebootNode, kDrain,
// kCheckMechanicals -> kFault; kContactSupport -> kFault when hardware_fault,
// else kDegraded. Informational Xids (154) are refined by their text.
constexpr XidImpact ImpactOf(CauseClass cause, XidAction action, bool hardware_fault) {
  if (cause == CauseClass::kApplication || cause == CauseClass::kInformational) {
    return cause == CauseClass::kApplication ? XidImpact::kNone : XidImpact::kDegraded;
  }
  switch (action) {
    case XidAction::kIgnore:
    case XidAction::kRestartApp:
      return XidImpact::kNone;
    case XidAction::kResetGpu:
    case XidAction::kRebootNode:
    case XidAction::kDrain:
    case XidAction::kCheckMechanicals:
      return XidImpact::kFault;
    case XidAction::kContactSupport:
      return hardware_fault ? XidImpact::kFault : XidImpact::kDegraded;
  }
  return XidImpact::kDegraded;
}

// Every catalogued Xid, ascending by code.
std::span<const XidInfo> XidCatalog();

// The entry for `code`; for codes not in the catalog (and NVML's 999) an
// entry with known = false, cause kUnknown, action kContactSupport, impact
// kDegraded (an error report nobody explained: someone should look) and advice
// "unknown Xid, contact support".
XidInfo LookupXid(unsigned code);

// One Xid event read with its own text.
struct XidAssessment {
  unsigned xid = 0;             // As logged.
  unsigned attributed_xid = 0;  // Xid 45 "caused by previous Xid N" -> N; else xid.
  // Catalog entry of attributed_xid; for a "Nonfatal" NVLink5 Xid its action
  // and advice are this event's (ignore, watch for 154).
  XidInfo info;
  // Xid 154 "GPU recovery action changed from ... to 0xN (...)": the new action.
  std::optional<XidAction> recovery_action;
  // The impact of this event: info.impact of the Xid as logged (an Xid 45
  // stays an application event; the Xid it names is judged on its own line),
  // refined by the text: Xid 154 by its new recovery action (None -> kNone,
  // reset / reboot / drain -> kFault); NVLink5 Xids 144-150 marked "Nonfatal"
  // -> kNone (NVIDIA: ignore, watch for 154), "Fatal" -> kFault.
  XidImpact impact = XidImpact::kDegraded;
  // The cause used for the finding's category: that of the Xid as logged.
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
// (findings[].category): application -> "application"; driver and firmware /
// GSP -> "driver"; memory -> "memory"; bus (PCIe, C2C) -> "bus"; thermal and
// power -> "power"; NVLink -> "nvlink"; informational and unknown -> "hardware".
std::string_view CategoryWord(CauseClass c);

}  // namespace gw::kmsg

#endif  // GPUWARDEN_KMSG_XID_CATALOG_H_
