#include "act/protected.h"

#include <algorithm>

#include "proc/known_processes.h"

namespace gw::act {
const std::vector<std::string>& DefaultProtectedNames() {
  static const std::vector<std::string> kNames = [] {
    std::vector<std::string> names;
    for (const proc::KnownProcess& k : proc::KnownProcesses()) names.emplace_back(k.name);
    return names;
  }();
  return kNames;
}

ProtectedList::ProtectedList(const std::vector<std::string>& extra) {
  for (const std::string& name : extra) {
    if (!name.empty() && std::find(extra_.begin(), extra_.end(), name) == extra_.end()) {
      extra_.push_back(name);
    }
  }
}

std::optional<std::string> ProtectedList::Match(const HostProcess& process) const {
  return proc::ProtectedName(process, extra_);
}

}  // namespace gw::act
