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
};

// Every catalogued Xid, ascending by code.
std::span<const XidInfo> XidCatalog();

// The entry for `code`; for codes not in the catalog (and NVML's 999) an
// entry with known = false, cause kUnknown, action kContactSupport and advice
// "unknown Xid, contact support".
XidInfo LookupXid(unsigned code);

// One Xid event read with its own text.
struct XidAssessment {
  unsigned xid = 0;             // As logged.
  unsigned attributed_xid = 0;  // Xid 45 "caused by previous Xid N" -> N; else xid.
  XidInfo info;                 // Catalog entry of attributed_xid.
  // Xid 154 "GPU recovery action changed from ... to 0xN (...)": the new action.
  std::optional<XidAction> recovery_action;
};

// REQUIRES: ev.xid.
XidAssessment AssessXid(const KernelEvent& ev);

// Stable lower-case words for JSON and tests: "application", "restart_app", "user", ...
std::string_view CauseClassName(CauseClass c);
std::string_view XidActionName(XidAction a);
std::string_view ActorName(Actor a);

}  // namespace gw::kmsg

#endif  // GPUWARDEN_KMSG_XID_CATALOG_H_
