#include "act/protected.h"

#include <algorithm>

#include "proc/known_processes.h"

namespace gw::act {

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
