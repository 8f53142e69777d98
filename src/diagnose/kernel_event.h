// A kernel-log event about a GPU, as the kernel-log reader (a separate input)
// will hand them to the diagnosis. Only Xid events are diagnosed today; other
// kinds pass through unused, so readers can add them before rules exist.
#ifndef GPUWARDEN_DIAGNOSE_KERNEL_EVENT_H_
#define GPUWARDEN_DIAGNOSE_KERNEL_EVENT_H_

#include <cstdint>
#include <string>

#include "core/snapshot.h"

namespace gw::diagnose {

struct KernelEvent {
  int64_t time_unix_ms = 0;
  // The GPU's PCI address as the log names it: "0000:3b:00" (kernel log) or
  // "00000000:3B:00.0" (NVML); matched to Gpu::pci_bus_id by domain, bus and
  // device numbers. Absent: the event is about the server, not one GPU.
  Opt<std::string> pci_bus_id;
  Opt<unsigned> xid;  // For kind "xid".
  std::string kind;   // "xid" (the only kind diagnosed), "sxid", "nvrm", ...
  std::string text;   // The log line, raw: sanitise before a terminal.
};

}  // namespace gw::diagnose

#endif  // GPUWARDEN_DIAGNOSE_KERNEL_EVENT_H_
