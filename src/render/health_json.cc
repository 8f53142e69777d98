#include "render/health_json.h"

#include "core/json_out.h"
#include "diagnose/health.h"
#include "render/why_json.h"

namespace gw::render {
namespace {

using nlohmann::json;

json HealthJsonUnchecked(const diagnose::Diagnosis& d, const Snapshot& latest) {
  const diagnose::HealthReport report = diagnose::AssessHealth(d.findings, latest);
  json j;
  j["schema"] = kHealthSchemaName;
  j["schema_version"] = kHealthSchemaVersion;
  j["health"] = diagnose::HealthName(report.overall);
  j["time_unix_ms"] = latest.time_unix_ms > 0 ? json(latest.time_unix_ms) : json(nullptr);
  j["hostname"] = JsonOrNull(latest.host.hostname);
  json gpus = json::array();
  for (const diagnose::GpuHealth& g : report.gpus) {
    json findings = json::array();
    for (const diagnose::Finding* f : g.findings) findings.push_back(FindingJson(*f));
    gpus.push_back({{"index", g.index},
                    {"pci_bus_id", JsonOrNull(g.pci_bus_id)},
                    {"health", diagnose::HealthName(g.health)},
                    {"unread", g.unread},
                    {"unread_reason", g.unread ? JsonText(g.unread_reason) : json(nullptr)},
                    {"findings", std::move(findings)}});
  }
  j["gpus"] = std::move(gpus);
  j["unread_gpus"] = report.unread;
  json server = json::array();
  for (const diagnose::Finding* f : report.server) server.push_back(FindingJson(*f));
  j["findings"] = std::move(server);
  json errors = json::array();
  for (const ProbeError& e : latest.errors) errors.push_back(ProbeErrorJson(e));
  j["errors"] = std::move(errors);
  return j;
}

}  // namespace

json HealthJson(const diagnose::Diagnosis& diagnosis, const Snapshot& latest) {
  try {
    return HealthJsonUnchecked(diagnosis, latest);
  } catch (...) {
    // Only allocation can fail (strings are made valid UTF-8).
    return json{{"schema", kHealthSchemaName},
                {"schema_version", kHealthSchemaVersion},
                {"health", "unknown"}};
  }
}

std::string RenderHealthJson(const diagnose::Diagnosis& diagnosis, const Snapshot& latest,
                             bool pretty) {
  return DumpJsonForTerminal(HealthJson(diagnosis, latest), pretty, kHealthSchemaName);
}

}  // namespace gw::render
