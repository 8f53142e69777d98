#include "render/summary.h"

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

#include <fmt/format.h>

#include "proc/device_files.h"

namespace gw::render {

const HostProcess* FindHostProcess(const Snapshot& snapshot, pid_t pid) {
  const auto it = snapshot.processes.find(pid);
  return it == snapshot.processes.end() ? nullptr : &it->second;
}

std::string UserLabel(const Snapshot& snapshot, pid_t pid) {
  const HostProcess* p = FindHostProcess(snapshot, pid);
  if (p == nullptr) return "?";
  if (p->user.has_value() && !p->user->empty()) return *p->user;
  if (p->uid.has_value()) return fmt::format("{}", *p->uid);
  return "?";
}

bool ListedByDriver(const Snapshot& snapshot, pid_t pid) {
  const HostProcess* p = FindHostProcess(snapshot, pid);
  if (p != nullptr && p->listed_by_driver) return true;
  for (const Gpu& gpu : snapshot.gpus) {
    for (const GpuProcess& gp : gpu.processes) {
      if (gp.pid == pid) return true;
    }
  }
  return false;
}

std::vector<const HostProcess*> UnlistedDeviceHolders(const Snapshot& snapshot) {
  std::vector<const HostProcess*> out;
  for (const auto& [pid, p] : snapshot.processes) {  // std::map: ascending PID.
    if (!p.device_files.empty() && !ListedByDriver(snapshot, pid)) out.push_back(&p);
  }
  return out;
}

std::optional<unsigned> GpuIndexForDeviceFile(const Snapshot& snapshot, std::string_view path) {
  const std::optional<unsigned> minor = proc::GpuDeviceMinor(path, snapshot.device_dir);
  if (!minor) return std::nullopt;  // nvidiactl, nvidia-uvm, nvidia-caps...
  for (const Gpu& gpu : snapshot.gpus) {
    if (gpu.minor_number == minor) return gpu.index;
  }
  return std::nullopt;
}

std::vector<UserTotal> ComputeUserTotals(const Snapshot& snapshot) {
  struct Acc {
    UserTotal total;
    std::set<pid_t> pids;
    std::set<unsigned> gpus;
    std::set<pid_t> holders;
  };
  std::map<std::string, Acc> by_user;
  auto acc_for = [&](pid_t pid) -> Acc& {
    Acc& acc = by_user[UserLabel(snapshot, pid)];
    if (!acc.total.uid.has_value()) {
      if (const HostProcess* p = FindHostProcess(snapshot, pid)) acc.total.uid = p->uid;
    }
    return acc;
  };
  for (const Gpu& gpu : snapshot.gpus) {
    for (const GpuProcess& gp : gpu.processes) {
      Acc& acc = acc_for(gp.pid);
      acc.pids.insert(gp.pid);
      acc.gpus.insert(gpu.index);
      if (gp.used_memory_bytes.has_value()) {
        acc.total.used_memory_bytes += *gp.used_memory_bytes;
        ++acc.total.memory_known;
      } else {
        ++acc.total.memory_unknown;
      }
    }
  }
  for (const HostProcess* p : UnlistedDeviceHolders(snapshot))
    acc_for(p->pid).holders.insert(p->pid);

  std::vector<UserTotal> out;
  out.reserve(by_user.size());
  for (auto& [user, acc] : by_user) {
    acc.total.user = user;
    acc.total.pids.assign(acc.pids.begin(), acc.pids.end());
    acc.total.gpu_indices.assign(acc.gpus.begin(), acc.gpus.end());
    acc.total.unlisted_holder_pids.assign(acc.holders.begin(), acc.holders.end());
    out.push_back(std::move(acc.total));
  }
  std::stable_sort(out.begin(), out.end(), [](const UserTotal& a, const UserTotal& b) {
    return std::tie(b.used_memory_bytes, a.user) < std::tie(a.used_memory_bytes, b.user);
  });
  return out;
}

std::optional<std::string> CudaVersionString(std::optional<int> cuda_driver_version) {
  if (!cuda_driver_version.has_value()) return std::nullopt;
  const int v = *cuda_driver_version;
  return fmt::format("{}.{}", v / 1000, (v % 1000) / 10);
}

}  // namespace gw::render
