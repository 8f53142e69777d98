#include "collect/kernel_log.h"

namespace gw::collect {

Result<KernelLog> ReadKernelLog(const std::string& file, std::optional<int64_t> since_unix_ms) {
  kmsg::ReadOptions options;
  options.kernel_log_file = file;
  options.since_unix_ms = since_unix_ms;
  auto read = kmsg::ReadKernelEvents(options);
  if (!read.ok()) return read.error();
  KernelLog log;
  log.events = std::move(read->events);
  log.sources = std::move(read->sources);
  log.used = std::move(read->used);
  return log;
}

std::vector<diagnose::KernelEvent> ToDiagnosisEvents(const std::vector<kmsg::KernelEvent>& events) {
  std::vector<diagnose::KernelEvent> out;
  for (const kmsg::KernelEvent& e : events) {
    std::optional<unsigned> xid = e.xid;
    if (!xid && e.kind == kmsg::kKindFallenOffBus) xid = 79;
    if (!xid) continue;
    diagnose::KernelEvent d;
    d.time_unix_ms = e.time_unix_ms.value_or(0);
    d.pci_bus_id = e.pci_bus_id;
    d.xid = xid;
    d.kind = "xid";
    d.text = e.raw;
    out.push_back(std::move(d));
  }
  return out;
}

}  // namespace gw::collect
