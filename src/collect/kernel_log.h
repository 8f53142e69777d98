// Reads the kernel log (kmsg, journal, log files, or one named file) into
// NVRM events for the diagnosis (diagnose takes kmsg::KernelEvent as is), and
// says which boot is this machine's current one.
#ifndef GPUWARDEN_COLLECT_KERNEL_LOG_H_
#define GPUWARDEN_COLLECT_KERNEL_LOG_H_

#include <optional>
#include <string>
#include <vector>

#include "core/result.h"
#include "core/snapshot.h"
#include "kmsg/event_age.h"
#include "kmsg/kernel_event.h"
#include "kmsg/sources.h"

namespace gw::collect {

struct KernelLog {
  std::vector<kmsg::KernelEvent> events;    // As parsed, chronological.
  std::vector<kmsg::SourceReport> sources;  // What was read, and what could not be.
  std::vector<std::string> used;            // Names of the sources read.
  // The system's own logs were read (not one named file): their boots can be
  // matched against the running kernel's.
  bool own_logs = false;
  std::string running_boot_id;  // As kmsg events carry it ("current" when unreadable).
};

// `file` empty: the system's sources in order of preference. Error when the
// named file cannot be read (bad input) or, without a file, when no source
// could be read at all (code "unavailable": not fatal for callers that can
// judge without it).
Result<KernelLog> ReadKernelLog(const std::string& file, std::optional<int64_t> since_unix_ms);

// What the running kernel's own ring buffer (/dev/kmsg) holds now, as events
// of the running boot: to tell whether a file (--kernel-log) is of this boot
// (kmsg::BootsOfRunningKernel). Error "unavailable" when it cannot be read
// (it needs root, or kernel.dmesg_restrict=0).
Result<std::vector<kmsg::KernelEvent>> ReadRunningKernelLog();

// The running kernel's boot id (/proc/sys/kernel/random/boot_id, 32 hex
// digits without dashes), or "current" when it cannot be read: the id
// kmsg::KmsgSource gives the events of this boot.
std::string RunningBootId(const std::string& path = "/proc/sys/kernel/random/boot_id");

// What "current" means for `log`'s events judged beside `latest`: for the
// system's own logs, the running boot (id, and the snapshot's boot time when
// it was read live); for a named file, its own last boot. Plus --since.
kmsg::EventAgeOptions EventAgeFor(const KernelLog& log, const Snapshot& latest,
                                  std::optional<double> since_s);

}  // namespace gw::collect

#endif  // GPUWARDEN_COLLECT_KERNEL_LOG_H_
