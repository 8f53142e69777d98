#include "render/health.h"

#include <algorithm>

namespace gw::render {
namespace {

using diagnose::Category;
using diagnose::Finding;
using diagnose::Verdict;

}  // namespace

Health HealthOfVerdict(Verdict v) {
  switch (v) {
    case Verdict::kFault:
      return Health::kFailed;
    case Verdict::kDegraded:
      return Health::kDegraded;
    case Verdict::kUnknown:
      return Health::kUnknown;
    default:
      return Health::kHealthy;
  }
}

namespace {

Health Worse(Health a, Health b) { return static_cast<int>(a) >= static_cast<int>(b) ? a : b; }

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
      return true;
    case Category::kShortage:
    case Category::kContention:
    case Category::kHolder:
    case Category::kConfiguration:
      return false;
  }
  return false;
}

HealthReport AssessHealth(const diagnose::Diagnosis& d, const Snapshot& latest) {
  HealthReport r;
  Health overall = Health::kHealthy;
  for (const diagnose::GpuVerdict& v : d.gpus) {
    GpuHealth g;
    g.index = v.index;
    const auto it = std::find_if(latest.gpus.begin(), latest.gpus.end(),
                                 [&](const Gpu& x) { return x.index == v.index; });
    if (it != latest.gpus.end()) g.pci_bus_id = it->pci_bus_id;
    g.health = v.verdict == Verdict::kUnknown ? Health::kUnknown : Health::kHealthy;
    for (const Finding& f : d.findings) {
      if (!IsHealthCategory(f.category)) continue;
      if (std::find(f.gpus.begin(), f.gpus.end(), v.index) == f.gpus.end()) continue;
      g.findings.push_back(&f);
      g.health = Worse(g.health, HealthOfVerdict(f.implies));
    }
    overall = Worse(overall, g.health);
    r.gpus.push_back(std::move(g));
  }
  for (const Finding& f : d.findings) {
    if (!IsHealthCategory(f.category) || !f.gpus.empty()) continue;
    r.server.push_back(&f);
    overall = Worse(overall, HealthOfVerdict(f.implies));
  }
  if (overall == Health::kHealthy && (d.server == Verdict::kUnknown || d.gpus.empty())) {
    overall = Health::kUnknown;
  }
  r.overall = overall;
  return r;
}

}  // namespace gw::render
