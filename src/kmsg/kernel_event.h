// KernelEvent: one NVIDIA-driver (NVRM) fact read from a kernel log, the unit
// that the kernel-log reader hands to the diagnosis engine and to renderers.
//
// Contract (every field): std::nullopt means "the log did not say" and is never
// rendered as 0. Strings (`detail`, `process_name`, `raw`) are bytes copied from
// the log: they may hold control characters or invalid UTF-8 and must pass
// gw::SanitizeForTerminal / gw::ToValidUtf8 before they are printed or put in
// JSON.
#ifndef GPUWARDEN_KMSG_KERNEL_EVENT_H_
#define GPUWARDEN_KMSG_KERNEL_EVENT_H_

#include <cstdint>
#include <optional>
#include <string>

namespace gw::kmsg {

template <typename T>
using Opt = std::optional<T>;

// The values of KernelEvent::kind.
inline constexpr const char kKindXid[] = "xid";  // `NVRM: Xid (...): N, ...`
// The GPU stopped answering on PCIe: `GPU has fallen off the bus` notices (not
// the Xid 79 line itself, which is kind "xid").
inline constexpr const char kKindFallenOffBus[] = "fallen_off_bus";
inline constexpr const char kKindRmInitAdapterFailed[] = "rm_init_adapter_failed";
inline constexpr const char kKindNoAdapterProbed[] = "no_adapter_probed";
// `The NVIDIA probe routine failed for N device(s).`, printed with the driver's
// load banner: N GPUs the kernel found that the driver could not take
// (ProbeFailedDevices in nvrm_parser.h reads N).
inline constexpr const char kKindProbeFailed[] = "probe_failed";
// `GPUn GSP RPC buffer contains function ...`, printed after a GSP RPC timeout
// (the timeout itself is an Xid 119 event).
inline constexpr const char kKindGspRpcTimeout[] = "gsp_rpc_timeout";
// `Rate limiting GSP RPC error prints for GPU at PCI:...`: more GSP timeouts
// happened than were printed.
inline constexpr const char kKindGspRpcRateLimited[] = "gsp_rpc_rate_limited";
inline constexpr const char kKindCrashDump[] = "crash_dump";
inline constexpr const char kKindGpuUuid[] = "gpu_uuid";          // detail = "GPU-<uuid>".
inline constexpr const char kKindBoardSerial[] = "board_serial";  // detail = the serial.
inline constexpr const char kKindOsScheduleAtomic[] = "os_schedule_atomic";
// `The NVIDIA GPU ... installed in this system is not supported by the ...`.
inline constexpr const char kKindGpuUnsupported[] = "gpu_unsupported";
// A boot started: the kernel's `Linux version` line, a kernel clock that went
// back to ~0 in a file, or a boot the journal / the running kernel reported.
inline constexpr const char kKindBoot[] = "boot";
// The driver module was loaded: `NVRM: loading NVIDIA UNIX [Open ]Kernel Module
// for x86_64  570.158.01 ...` (detail: the banner without "loading "). GPUs
// are probed (and probe failures printed) just before it.
inline constexpr const char kKindDriverLoad[] = "driver_load";

struct KernelEvent {
  Opt<int64_t> time_unix_ms;  // Wall time, when the log gave or implied it.
  Opt<double> monotonic_s;    // Kernel timestamp (seconds since that boot).
  // time_unix_ms was not in the line: it is the running boot's start plus
  // monotonic_s (/dev/kmsg records, whose boot is the running one).
  bool time_from_boot_start = false;
  std::string kind;  // One of the kKind* values above.
  // The GPU, normalised as NVML prints it: "00000000:3B:00.0".
  Opt<std::string> pci_bus_id;
  Opt<unsigned> xid;
  Opt<long> pid;                  // Absent for `pid='<unknown>'` and for formats without pid.
  Opt<std::string> process_name;  // Absent for `name=<unknown>`.
  Opt<unsigned> gpu_instance, compute_instance;  // MIG `GPU-I:` / `GPU-CI:`.
  // The device minor number (/dev/nvidia<N>) an `rm_init_adapter failed ...
  // minor number N` line names; older drivers name no bus id, only this.
  Opt<unsigned> minor_number;
  // The message in the driver's words, without the prefix fields (for Xid
  // lines: the text after pid/name).
  std::string detail;
  // The line(s) as read (multi-line messages joined with '\n'), cut at
  // kMaxLineBytes per line.
  std::string raw;
  // Where it was read: "kmsg", "journal", or a file path ("/var/log/kern.log").
  std::string source;
  // The boot the event belongs to: the kernel's boot id (32 hex digits) for
  // /dev/kmsg and the journal, "<file>#<n>" for the n-th boot seen in a file.
  // Equal ids mean the same boot within one ReadKernelEvents result.
  std::string boot_id;
};

}  // namespace gw::kmsg

#endif  // GPUWARDEN_KMSG_KERNEL_EVENT_H_
