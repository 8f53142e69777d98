#include "collect/kernel_log.h"

#include <fstream>

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
  log.own_logs = file.empty();
  if (log.own_logs) log.running_boot_id = RunningBootId(options.boot_id_path);
  return log;
}

Result<std::vector<kmsg::KernelEvent>> ReadRunningKernelLog() {
  kmsg::DevKmsg device;
  kmsg::KmsgSource kmsg(device);
  kmsg::ReadOptions options;
  options.sources = {&kmsg};
  auto read = kmsg::ReadKernelEvents(options);
  if (!read.ok()) return read.error();
  return std::move(read->events);
}

std::string RunningBootId(const std::string& path) {
  std::ifstream in(path);
  std::string text;
  std::getline(in, text);
  std::string id;
  for (char c : text) {
    if ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')) {
      id.push_back(c);
    } else if (c >= 'A' && c <= 'F') {
      id.push_back(static_cast<char>(c - 'A' + 'a'));
    } else if (c != '-') {
      return "current";
    }
  }
  return id.size() == 32 ? id : "current";
}

kmsg::EventAgeOptions EventAgeFor(const KernelLog& log, const Snapshot& latest,
                                  std::optional<double> since_s) {
  kmsg::EventAgeOptions o;
  o.since_s = since_s;
  if (log.own_logs) {
    o.running_boot_id = log.running_boot_id;
    if (latest.source != SnapshotSource::kXmlDump && latest.host.boot_time_unix_s) {
      o.running_boot_start_unix_ms = static_cast<int64_t>(*latest.host.boot_time_unix_s) * 1000;
    }
  }
  return o;
}

}  // namespace gw::collect
