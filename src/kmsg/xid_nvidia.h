// NVIDIA's Xid catalog, as NVIDIA publishes it: one row per code with NVIDIA's
// mnemonic, its short description, the immediate resolution and the
// investigatory one. Facts only, transcribed; what gpuwarden makes of them (a
// category, an impact, who acts) is derived from these rows by one rule in
// xid_catalog.h, never set here.
//
// Source: NVIDIA, "Analyzing Xid Errors with the Xid Catalog"
// (docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html), sheet
// "Catalog", as of 2025-10-29. docs/xid-catalog.md lists every row; a test
// holds that page equal to this table.
#ifndef GPUWARDEN_KMSG_XID_NVIDIA_H_
#define GPUWARDEN_KMSG_XID_NVIDIA_H_

#include <optional>
#include <span>
#include <string_view>

namespace gw::kmsg {

// NVIDIA's immediate-resolution buckets.
enum class NvidiaResolution {
  kRestartApp,        // RESTART_APP: the application's fault or a transient; the GPU serves on.
  kIgnore,            // IGNORE: informational.
  kResetGpu,          // RESET_GPU.
  kRestartBareMetal,  // RESTART_BM: reboot the (bare-metal) node.
  kRestartVm,         // RESTART_VM: restart the virtual machine.
  kContactSupport,    // CONTACT_SUPPORT.
  kCheckMechanicals,  // CHECK_MECHANICALS: cables, seating.
  kUpdateSwFw,        // UPDATE_SWFW: update the driver / firmware / vGPU software.
  kCheckUvm,          // CHECK_UVM: the unified-memory (UVM) driver's log says more.
  kWorkflowXid45,     // WORKFLOW_XID_45: follow the Xid it was caused by.
  kWorkflowXid48,     // WORKFLOW_XID_48: the double-bit ECC workflow.
  kWorkflowNvlink,    // WORKFLOW_NVLINK_ERR: the NVLink (Xid 74) workflow.
  kWorkflowNvlink5,   // WORKFLOW_NVLINK5_ERR: by the event's Fatal / Nonfatal severity.
  kFollowXid154,      // XID_154: the recovery action Xid 154 names.
  kNotGiven,          // The catalog gives none (newest codes).
};

struct NvidiaXid {
  unsigned code = 0;
  std::string_view mnemonic;     // "ROBUST_CHANNEL_GPU_ECC_DBE"
  std::string_view description;  // NVIDIA's short description; "Unused" for retired codes.
  NvidiaResolution immediate = NvidiaResolution::kNotGiven;
  std::string_view
      investigatory;  // NVIDIA's token ("CONTACT_SUPPORT", "CHECK_APP/CUDA"); may be empty.

  bool unused() const { return description == "Unused"; }
};

// Every row, ascending by code, 1 to 172 without gaps.
std::span<const NvidiaXid> NvidiaXidCatalog();

// The row of `code`, if NVIDIA lists it.
std::optional<NvidiaXid> FindNvidiaXid(unsigned code);

// NVIDIA's token for a bucket: "RESTART_APP", "WORKFLOW_XID_48", "" for kNotGiven.
std::string_view NvidiaResolutionToken(NvidiaResolution r);

// Where the rows come from, for docs and `events --json` (catalog_source).
inline constexpr std::string_view kNvidiaXidCatalogSource =
    "NVIDIA, Analyzing Xid Errors with the Xid Catalog, 2025-10-29";

}  // namespace gw::kmsg

#endif  // GPUWARDEN_KMSG_XID_NVIDIA_H_
