#include "render/filter.h"

#include <algorithm>
#include <optional>
#include <set>
#include <string_view>

#include <fmt/format.h>

#include "render/summary.h"

namespace gw::render {
namespace {

struct BusId {
  std::optional<uint64_t> domain;
  uint64_t bus = 0;
  uint64_t device = 0;
  uint64_t function = 0;
};

std::optional<uint64_t> ParseHex(std::string_view s, size_t max_digits) {
  if (s.empty() || s.size() > max_digits) return std::nullopt;
  uint64_t v = 0;
  for (char c : s) {
    int d = 0;
    if (c >= '0' && c <= '9') {
      d = c - '0';
    } else if (c >= 'a' && c <= 'f') {
      d = c - 'a' + 10;
    } else if (c >= 'A' && c <= 'F') {
      d = c - 'A' + 10;
    } else {
      return std::nullopt;
    }
    v = v * 16 + static_cast<uint64_t>(d);
  }
  return v;
}

// "[domain:]bus:device.function", all hex; NVML spells the domain with 8
// digits, lspci and sysfs with 4.
std::optional<BusId> ParseBusId(std::string_view s) {
  BusId id;
  const size_t last_colon = s.rfind(':');
  if (last_colon == std::string_view::npos) return std::nullopt;
  const std::string_view head = s.substr(0, last_colon);
  const std::string_view tail = s.substr(last_colon + 1);
  const size_t dot = tail.find('.');
  if (dot == std::string_view::npos) return std::nullopt;
  const auto device = ParseHex(tail.substr(0, dot), 2);
  const auto function = ParseHex(tail.substr(dot + 1), 1);
  const size_t first_colon = head.find(':');
  const auto bus =
      ParseHex(first_colon == std::string_view::npos ? head : head.substr(first_colon + 1), 2);
  if (!device || !function || !bus) return std::nullopt;
  if (first_colon != std::string_view::npos) {
    id.domain = ParseHex(head.substr(0, first_colon), 8);
    if (!id.domain) return std::nullopt;
  }
  id.bus = *bus;
  id.device = *device;
  id.function = *function;
  return id;
}

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
  const auto want = ParseBusId(selector);
  if (!want || !gpu.pci_bus_id.has_value()) return false;
  const auto have = ParseBusId(*gpu.pci_bus_id);
  if (!have) return false;
  if (want->domain.has_value() && want->domain != have->domain) return false;
  return want->bus == have->bus && want->device == have->device && want->function == have->function;
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
