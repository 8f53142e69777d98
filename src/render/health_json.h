// `gpuwarden health --json` (schema "gpuwarden.health", schema_version 1; see
// docs/json.md).
#ifndef GPUWARDEN_RENDER_HEALTH_JSON_H_
#define GPUWARDEN_RENDER_HEALTH_JSON_H_

#include <string>

#include <nlohmann/json.hpp>

#include "core/snapshot.h"
#include "diagnose/verdict.h"

namespace gw::render {

inline constexpr char kHealthSchemaName[] = "gpuwarden.health";
inline constexpr int kHealthSchemaVersion = 1;

// {schema, schema_version, health, gpus [{index, pci_bus_id, health, unread,
// unread_reason, findings [FindingJson]}], unread_gpus, findings
// (server-level), errors}, judged by diagnose::AssessHealth from the
// diagnosis's findings. Never throws.
nlohmann::json HealthJson(const diagnose::Diagnosis& diagnosis, const Snapshot& latest);

// HealthJson serialised (DumpJsonForTerminal); no trailing newline.
std::string RenderHealthJson(const diagnose::Diagnosis& diagnosis, const Snapshot& latest,
                             bool pretty);

}  // namespace gw::render

#endif  // GPUWARDEN_RENDER_HEALTH_JSON_H_
