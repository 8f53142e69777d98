#include "render/filter.h"

#include <algorithm>
#include <optional>
#include <set>
#include <string_view>

#include <fmt/format.h>

#include "core/pci_address.h"
#include "render/summary.h"

namespace gw::render {
namespace {

// Selectors are compared as text (to_string of the number), so "01" is not
// index 1 and no number can overflow.
bool AllDigits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    auto lower = [](char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c + 32) : c; };
    if (lower(a[i]) != lower(b[i])) return false;
  }
  return true;
}

bool GpuMatches(const Gpu& gpu, std::string_view selector) {
  if (AllDigits(selector)) return std::to_string(gpu.index) == selector;
  if (gpu.uuid.has_value() && EqualsIgnoreCase(*gpu.uuid, selector)) return true;
  // A bus id as NVML, lspci or the kernel writes it (core/pci_address.h).
  const std::optional<PciAddressRead> want = ReadPciAddress(selector);
  if (!want || want->length != selector.size() || !gpu.pci_bus_id.has_value()) return false;
  const std::optional<PciAddress> have = ParsePciAddress(*gpu.pci_bus_id);
  if (!have) return false;
  PciAddress wanted = want->address;
  // "4c:00.0" (as lspci prints domain 0) names that bus on whichever domain.
  if (!want->has_domain) wanted.domain = have->domain;
  return wanted == *have;
}

std::string KnownGpus(const Snapshot& snapshot) {
  if (snapshot.gpus.empty()) return "there are no GPUs";
  std::string list;
  for (const Gpu& gpu : snapshot.gpus) {
    if (!list.empty()) list += ", ";
    list += std::to_string(gpu.index);
  }
  return fmt::format("known GPUs: {} (by index, UUID or PCI bus id)", list);
}

bool UserMatches(const Snapshot& snapshot, pid_t pid, const std::vector<std::string>& users) {
  const HostProcess* p = FindHostProcess(snapshot, pid);
  if (p == nullptr) return false;
  for (const std::string& u : users) {
    if (p->user.has_value() && *p->user == u) return true;
    if (AllDigits(u) && p->uid.has_value() && std::to_string(*p->uid) == u) return true;
  }
  return false;
}

}  // namespace

Result<Snapshot> FilterSnapshot(const Snapshot& snapshot, const SnapshotFilter& filter) {
  for (const std::string& s : filter.gpus) {
    if (s.empty()) return MakeError("malformed", "empty GPU selector \"\"");
  }
  for (const std::string& s : filter.users) {
    if (s.empty()) return MakeError("malformed", "empty user selector \"\"");
  }

  std::set<unsigned> keep_gpus;
  for (const Gpu& gpu : snapshot.gpus) keep_gpus.insert(gpu.index);
  if (!filter.gpus.empty()) {
    keep_gpus.clear();
    for (const std::string& selector : filter.gpus) {
      bool found = false;
      for (const Gpu& gpu : snapshot.gpus) {
        if (GpuMatches(gpu, selector)) {
          keep_gpus.insert(gpu.index);
          found = true;
        }
      }
      if (!found) {
        return MakeError("not_found",
                         fmt::format("no GPU matches \"{}\"; {}", selector, KnownGpus(snapshot)));
      }
    }
  }

  Snapshot out = snapshot;
  out.gpus.clear();
  for (const Gpu& gpu : snapshot.gpus) {
    if (keep_gpus.count(gpu.index) == 0) continue;
    Gpu g = gpu;
    if (!filter.users.empty()) {
      std::erase_if(g.processes, [&](const GpuProcess& gp) {
        return !UserMatches(snapshot, gp.pid, filter.users);
      });
    }
    out.gpus.push_back(std::move(g));
  }

  if (!filter.gpus.empty()) {
    std::erase_if(out.topology, [&](const TopologyLink& l) {
      return keep_gpus.count(l.gpu_a) == 0 || keep_gpus.count(l.gpu_b) == 0;
    });
    std::erase_if(out.errors, [&](const ProbeError& e) {
      return e.gpu_index.has_value() && keep_gpus.count(*e.gpu_index) == 0;
    });
  }

  std::set<pid_t> on_kept_gpus;
  for (const Gpu& gpu : snapshot.gpus) {
    if (keep_gpus.count(gpu.index) == 0) continue;
    for (const GpuProcess& gp : gpu.processes) on_kept_gpus.insert(gp.pid);
  }
  std::erase_if(out.processes, [&](const auto& entry) {
    const auto& [pid, p] = entry;
    if (!filter.users.empty() && !UserMatches(snapshot, pid, filter.users)) return true;
    if (filter.gpus.empty()) return false;
    if (on_kept_gpus.count(pid) > 0) return false;
    for (const std::string& file : p.device_files) {
      const auto idx = GpuIndexForDeviceFile(snapshot, file);
      if (idx.has_value() && keep_gpus.count(*idx) > 0) return false;
    }
    return true;
  });
  return out;
}

}  // namespace gw::render
