// `gpuwarden why --json`: the diagnosis as a documented, versioned JSON
// document (schema "gpuwarden.why", schema_version 1; see docs/json.md).
#ifndef GPUWARDEN_RENDER_WHY_JSON_H_
#define GPUWARDEN_RENDER_WHY_JSON_H_

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/snapshot.h"
#include "diagnose/trends.h"
#include "diagnose/verdict.h"

namespace gw::render {

inline constexpr char kWhySchemaName[] = "gpuwarden.why";
inline constexpr int kWhySchemaVersion = 1;

// What the diagnosis looked at, besides the snapshots themselves.
struct WhyJsonContext {
  unsigned samples = 1;                         // Snapshots judged.
  double window_s = 0;                          // Time from the first to the last of them.
  std::vector<std::string> kernel_log_sources;  // Empty: the kernel log was not read.
  Opt<std::string> need;                        // The --need text, as given.
  // gpuwardend's history (fleet/trends.h form), when it was read; else null,
  // with the reason when the daemon was there but its history not used.
  const diagnose::Trends* trends = nullptr;
  std::string trends_note;
};

// One finding: code, category, severity, implies, actor, title, message,
// evidence [{name, value, number, unit}], next_steps, gpus, pids. Unknown
// numbers and empty units are null. Strings are made valid UTF-8.
nlohmann::json FindingJson(const diagnose::Finding& finding);

// A probe error, as in the status document: {source, code, message,
// gpu_index, nvml_return}.
nlohmann::json ProbeErrorJson(const ProbeError& error);

// The why document. `latest` supplies each GPU's identity (null when the GPU
// is not in it) and the probe errors. Never throws.
nlohmann::json WhyJson(const diagnose::Diagnosis& diagnosis, const Snapshot& latest,
                       const WhyJsonContext& context);

// WhyJson serialised (see DumpJsonForTerminal): pretty = 2-space indent, else
// one line; no trailing newline. Never throws.
std::string RenderWhyJson(const diagnose::Diagnosis& diagnosis, const Snapshot& latest,
                          const WhyJsonContext& context, bool pretty);

}  // namespace gw::render

#endif  // GPUWARDEN_RENDER_WHY_JSON_H_
