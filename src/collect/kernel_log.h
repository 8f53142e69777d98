// Reads the kernel log (kmsg, journal, log files, or one named file) and turns
// NVRM events into the diagnosis engine's input.
#ifndef GPUWARDEN_COLLECT_KERNEL_LOG_H_
#define GPUWARDEN_COLLECT_KERNEL_LOG_H_

#include <optional>
#include <string>
#include <vector>

#include "core/result.h"
#include "diagnose/kernel_event.h"
#include "kmsg/kernel_event.h"
#include "kmsg/sources.h"

namespace gw::collect {

struct KernelLog {
  std::vector<kmsg::KernelEvent> events;    // As parsed, chronological.
  std::vector<kmsg::SourceReport> sources;  // What was read, and what could not be.
  std::vector<std::string> used;            // Names of the sources read.
};

// `file` empty: the system's sources in order of preference. Error when the
// named file cannot be read (bad input) or, without a file, when no source
// could be read at all (code "unavailable": not fatal for callers that can
// judge without it).
Result<KernelLog> ReadKernelLog(const std::string& file, std::optional<int64_t> since_unix_ms);

// The events the diagnosis rules understand. A "fallen off the bus" notice
// (the probe-time form carries no Xid line) counts as Xid 79, the driver's own
// code for it. Pure.
std::vector<diagnose::KernelEvent> ToDiagnosisEvents(const std::vector<kmsg::KernelEvent>& events);

}  // namespace gw::collect

#endif  // GPUWARDEN_COLLECT_KERNEL_LOG_H_
