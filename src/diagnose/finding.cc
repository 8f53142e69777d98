#include "diagnose/finding.h"

#include <fmt/format.h>

namespace gw::diagnose {

std::string_view SeverityName(Severity severity) {
  switch (severity) {
    case Severity::kInfo:
      return "info";
    case Severity::kWarning:
      return "warning";
    case Severity::kCritical:
      return "critical";
  }
  return "?";
}

std::string_view CategoryName(Category category) {
  switch (category) {
    case Category::kShortage:
      return "shortage";
    case Category::kContention:
      return "contention";
    case Category::kHolder:
      return "holder";
    case Category::kConfiguration:
      return "configuration";
    case Category::kApplication:
      return "application";
    case Category::kEngine:
      return "engine";
    case Category::kDriver:
      return "driver";
    case Category::kMemory:
      return "memory";
    case Category::kBus:
      return "bus";
    case Category::kThermal:
      return "thermal";
    case Category::kPower:
      return "power";
    case Category::kNvlink:
      return "nvlink";
    case Category::kHardware:
      return "hardware";
  }
  return "?";
}

std::string_view VerdictName(Verdict verdict) {
  switch (verdict) {
    case Verdict::kOk:
      return "OK";
    case Verdict::kBusy:
      return "BUSY";
    case Verdict::kReclaimable:
      return "RECLAIMABLE";
    case Verdict::kDegraded:
      return "DEGRADED";
    case Verdict::kFault:
      return "FAULT";
    case Verdict::kUnknown:
      return "UNKNOWN";
    case Verdict::kNeverFits:
      return "NEVER_FITS";
  }
  return "?";
}

std::string_view GpuStateName(GpuState state) {
  switch (state) {
    case GpuState::kFree:
      return "free";
    case GpuState::kInUse:
      return "in_use";
    case GpuState::kBusy:
      return "busy";
    case GpuState::kReclaimable:
      return "reclaimable";
    case GpuState::kDegraded:
      return "degraded";
    case GpuState::kFault:
      return "fault";
    case GpuState::kUnknown:
      return "unknown";
  }
  return "unknown";
}

std::string_view ActorName(Actor actor) {
  switch (actor) {
    case Actor::kUser:
      return "user";
    case Actor::kOwner:
      return "owner";
    case Actor::kAdmin:
      return "admin";
    case Actor::kVendor:
      return "vendor";
  }
  return "?";
}

int VerdictRank(Verdict verdict) {
  switch (verdict) {
    case Verdict::kOk:
      return 0;
    case Verdict::kUnknown:
      return 1;
    case Verdict::kBusy:
    case Verdict::kReclaimable:
    case Verdict::kNeverFits:
      return 2;
    case Verdict::kDegraded:
      return 3;
    case Verdict::kFault:
      return 4;
  }
  return 0;
}

Opt<double> EvidenceNumber(const Finding& finding, std::string_view name) {
  for (const Evidence& e : finding.evidence) {
    if (e.name == name) return e.number;
  }
  return std::nullopt;
}

std::string MessageWithoutSubject(const std::string& message, unsigned gpu) {
  const std::string subject = fmt::format("GPU {}", gpu);
  if (message.compare(0, subject.size(), subject) != 0) return message;
  std::string rest = message.substr(subject.size());
  // "GPU 5 (PCI 0000:bb:00) fell off the bus": the line names the GPU already.
  if (rest.starts_with(" (PCI ")) {
    if (const size_t close = rest.find(')'); close != std::string::npos) {
      rest.erase(0, close + 1);
    }
  }
  for (std::string_view joint : {"'s ", ": ", " "}) {
    if (rest.compare(0, joint.size(), joint) == 0) return rest.substr(joint.size());
  }
  return message;  // "GPU 10 ..." is not GPU 1.
}

}  // namespace gw::diagnose
