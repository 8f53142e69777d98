#include "diagnose/health.h"

#include <algorithm>
#include <utility>

#include "diagnose/rule_context.h"

namespace gw::diagnose {
namespace {

Health Worse(Health a, Health b) { return static_cast<int>(a) >= static_cast<int>(b) ? a : b; }

using internal::About;
using internal::UsageUnread;

}  // namespace

std::string_view HealthName(Health health) {
  switch (health) {
    case Health::kHealthy:
      return "healthy";
    case Health::kUnknown:
      return "unknown";
    case Health::kDegraded:
      return "degraded";
    case Health::kFailed:
      return "failed";
  }
  return "unknown";
}

Health HealthOfVerdict(Verdict verdict) {
  switch (verdict) {
    case Verdict::kFault:
      return Health::kFailed;
    case Verdict::kDegraded:
      return Health::kDegraded;
    case Verdict::kUnknown:
      return Health::kUnknown;
    case Verdict::kOk:
    case Verdict::kBusy:
    case Verdict::kReclaimable:
    case Verdict::kNeverFits:  // About a request, not the hardware.
      return Health::kHealthy;
  }
  return Health::kUnknown;
}

Verdict VerdictOfHealth(Health health) {
  switch (health) {
    case Health::kFailed:
      return Verdict::kFault;
    case Health::kDegraded:
      return Verdict::kDegraded;
    case Health::kUnknown:
      return Verdict::kUnknown;
    case Health::kHealthy:
      return Verdict::kOk;
  }
  return Verdict::kUnknown;
}

bool IsHealthCategory(Category category) {
  switch (category) {
    case Category::kDriver:
    case Category::kMemory:
    case Category::kBus:
    case Category::kThermal:
    case Category::kPower:
    case Category::kNvlink:
    case Category::kHardware:
    case Category::kApplication:
    case Category::kEngine:
      return true;
    case Category::kShortage:
    case Category::kContention:
    case Category::kHolder:
    case Category::kConfiguration:
      return false;
  }
  return false;
}

bool IsHealthFinding(const Finding& finding) {
  // "Could not read" is about health whatever its category (NO_PERMISSION is
  // a configuration matter, but a GPU nobody can read is not a healthy one).
  return IsHealthCategory(finding.category) || finding.implies == Verdict::kUnknown;
}

HealthReport AssessHealth(std::span<const Finding> findings, const Snapshot& latest) {
  HealthReport report;
  Health overall = Health::kHealthy;
  for (const Gpu& gpu : latest.gpus) {
    GpuHealth g;
    g.index = gpu.index;
    g.pci_bus_id = gpu.pci_bus_id;
    if (gpu.unreachable) {
      g.unread = true;
      g.unread_reason =
          gpu.unreachable->message.empty() ? gpu.unreachable->code : gpu.unreachable->message;
    } else if (UsageUnread(gpu)) {
      // Not looked at is not healthy: a GPU the probe never tried (its own
      // call, init or the count, did not return), or NVML with nothing to say.
      g.unread = true;
      g.unread_reason = internal::UnreadReason(gpu, latest);
    }
    Health health = g.unread ? Health::kUnknown : Health::kHealthy;
    for (const Finding& f : findings) {
      if (!IsHealthFinding(f) || !About(f, gpu.index)) continue;
      g.findings.push_back(&f);
      health = Worse(health, HealthOfVerdict(f.implies));
    }
    g.health = health;
    if (g.unread) report.unread.push_back(g.index);
    overall = Worse(overall, health);
    report.gpus.push_back(std::move(g));
  }
  for (const Finding& f : findings) {
    if (!IsHealthFinding(f) || !f.gpus.empty()) continue;
    report.server.push_back(&f);
    overall = Worse(overall, HealthOfVerdict(f.implies));
  }
  // Findings about a GPU the snapshot does not list (a GPU the kernel saw
  // that NVML does not): they still count for the server.
  for (const Finding& f : findings) {
    if (!IsHealthFinding(f) || f.gpus.empty()) continue;
    const bool listed = std::any_of(f.gpus.begin(), f.gpus.end(), [&](unsigned i) {
      return std::any_of(latest.gpus.begin(), latest.gpus.end(),
                         [&](const Gpu& gpu) { return gpu.index == i; });
    });
    if (!listed) {
      report.server.push_back(&f);
      overall = Worse(overall, HealthOfVerdict(f.implies));
    }
  }
  if (latest.gpus.empty()) overall = Worse(overall, Health::kUnknown);
  std::sort(report.unread.begin(), report.unread.end());
  report.overall = overall;
  return report;
}

bool AllowedByPlacement(const Finding& finding, const PlacementHealth& placement) {
  if (!IsHealthFinding(finding) || HealthOfVerdict(finding.implies) != Health::kDegraded) {
    return false;
  }
  return finding.code == "ROW_REMAP_PENDING" && placement.use_remap_pending;
}

bool BlocksPlacement(const Finding& finding, const PlacementHealth& placement) {
  if (!IsHealthFinding(finding)) return false;
  const Health h = HealthOfVerdict(finding.implies);
  if (h != Health::kDegraded && h != Health::kFailed) return false;
  return !AllowedByPlacement(finding, placement);
}

std::map<unsigned, std::string> UnhealthyGpus(std::span<const Finding> findings,
                                              const PlacementHealth& placement) {
  std::map<unsigned, std::pair<Health, const Finding*>> worst;
  for (const Finding& f : findings) {
    if (!BlocksPlacement(f, placement)) continue;
    const Health h = HealthOfVerdict(f.implies);
    for (unsigned g : f.gpus) {
      auto [it, inserted] = worst.try_emplace(g, h, &f);
      // The worst finding names the reason; the first of equals (ranked order).
      if (!inserted && static_cast<int>(h) > static_cast<int>(it->second.first)) {
        it->second = {h, &f};
      }
    }
  }
  std::map<unsigned, std::string> out;
  for (const auto& [gpu, why] : worst)
    out.emplace(gpu, why.second->code + ": " + why.second->message);
  return out;
}

std::map<unsigned, std::string> ResetPendingGpus(std::span<const Finding> findings,
                                                 const PlacementHealth& placement) {
  const std::map<unsigned, std::string> unhealthy = UnhealthyGpus(findings, placement);
  std::map<unsigned, std::string> out;
  for (const Finding& f : findings) {
    if (!AllowedByPlacement(f, placement)) continue;
    for (unsigned g : f.gpus) {
      if (!unhealthy.count(g)) out.try_emplace(g, f.code + ": " + f.message);
    }
  }
  return out;
}

}  // namespace gw::diagnose
