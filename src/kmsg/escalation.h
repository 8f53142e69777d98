// Escalation: patterns across events that change the advice of single Xids.
//
//  * Hardware inspection (GPUd-style): a reboot-recoverable fault (catalog
//    reboot_recoverable: Xid 48, 64, 74, 79, 94, 95, 119, 120, ...; also the
//    fallen-off-the-bus notice (as 79), GSP RPC timeout notices (as 119) and
//    RmInitAdapter failures) seen on the same GPU in boots at least
//    `min_reboots` reboots apart: the reset/reboot that should have cleared it
//    did not, so the hardware needs inspection.
//  * Xid 13 / 31 (NVIDIA's WORKFLOW_XID_13/31): events on one GPU are grouped
//    into bursts (same boot, gaps <= burst_gap_ms). A GPU whose faults came in
//    >= 2 bursts from >= 2 different processes is "repeated". Exactly one
//    repeated GPU, with at most one other GPU showing any burst -> run
//    diagnostics on that GPU. Repeated on >= 2 GPUs, or bursts on >= 2 GPUs
//    otherwise -> check the application. One GPU with one process -> nothing
//    (the catalog advice, restart the application, stands).
//
// Boot order: boots are numbered in the order their boot_id first appears in
// `events`, which must be chronological (ReadKernelEvents returns them so);
// "boot" events count, so boots without GPU events still count as reboots.
// Events without a bus id are not attributed to a GPU and are ignored here.
#ifndef GPUWARDEN_KMSG_ESCALATION_H_
#define GPUWARDEN_KMSG_ESCALATION_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "kmsg/kernel_event.h"

namespace gw::kmsg {

enum class EscalationKind {
  kHardwareInspection,  // Recurs after reboots: inspect / replace the GPU.
  kRunDiagnostics,      // Application-type faults concentrate on one GPU.
  kCheckApplication,    // Application-type faults spread over GPUs.
};

struct Escalation {
  EscalationKind kind = EscalationKind::kHardwareInspection;
  std::vector<std::string> pci_bus_ids;  // The GPU (or the GPUs, for kCheckApplication).
  std::vector<unsigned> xids;            // The Xids involved (79 for fallen-off notices, ...).
  std::string event_kind;                // "xid", or "rm_init_adapter_failed".
  int boots = 0;                         // Distinct boots with the fault.
  int reboots = 0;                       // Reboots between its first and last boot.
  int occurrences = 0;                   // Events.
  int bursts = 0;                        // Xid 13/31 only.
  int processes = 0;                     // Xid 13/31 only: distinct processes.
  std::string reason;                    // One sentence for a person.
};

struct EscalationPolicy {
  int min_reboots = 2;
  int64_t burst_gap_ms = 60'000;
};

std::vector<Escalation> Escalate(const std::vector<KernelEvent>& events,
                                 const EscalationPolicy& policy = {});

// "hardware_inspection", "run_diagnostics", "check_application".
std::string_view EscalationKindName(EscalationKind k);

}  // namespace gw::kmsg

#endif  // GPUWARDEN_KMSG_ESCALATION_H_
