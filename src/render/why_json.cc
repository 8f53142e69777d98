#include "render/why_json.h"

#include "fleet/trends.h"

#include <algorithm>

#include "core/json_out.h"
#include "diagnose/catalog.h"

namespace gw::render {
namespace {

using diagnose::Diagnosis;
using diagnose::Finding;
using nlohmann::json;

const Gpu* FindGpu(const Snapshot& s, unsigned index) {
  const auto it =
      std::find_if(s.gpus.begin(), s.gpus.end(), [&](const Gpu& g) { return g.index == index; });
  return it == s.gpus.end() ? nullptr : &*it;
}

json UserJson(const diagnose::UserHolding& u) {
  // Nothing known about any of the user's entries: the sum is unknown, not 0.
  const bool none_known = u.vram_bytes == 0 && u.memory_unknown > 0;
  return json{{"user", JsonText(u.user)},
              {"uid", JsonOrNull(u.uid)},
              {"gpus", u.gpus},
              {"pids", u.pids},
              {"vram_bytes", none_known ? json(nullptr) : json(u.vram_bytes)},
              {"idle_vram_bytes", none_known ? json(nullptr) : json(u.idle_vram_bytes)},
              {"memory_unknown", u.memory_unknown}};
}

json WhyJsonUnchecked(const Diagnosis& d, const Snapshot& latest, const WhyJsonContext& ctx) {
  json j;
  j["schema"] = kWhySchemaName;
  j["schema_version"] = kWhySchemaVersion;
  j["verdict"] = diagnose::VerdictName(d.server);
  j["summary"] = JsonText(d.summary);
  j["time_unix_ms"] = latest.time_unix_ms > 0 ? json(latest.time_unix_ms) : json(nullptr);
  j["hostname"] = JsonOrNull(latest.host.hostname);
  j["need"] = JsonOrNull(ctx.need);

  json gpus = json::array();
  for (const diagnose::GpuVerdict& v : d.gpus) {
    const Gpu* g = FindGpu(latest, v.index);
    json findings = json::array();
    for (size_t k : v.findings) {
      if (k < d.findings.size()) findings.push_back(FindingJson(d.findings[k]));
    }
    gpus.push_back({{"index", v.index},
                    {"pci_bus_id", g ? JsonOrNull(g->pci_bus_id) : json(nullptr)},
                    {"uuid", g ? JsonOrNull(g->uuid) : json(nullptr)},
                    {"name", g ? JsonOrNull(g->name) : json(nullptr)},
                    {"verdict", diagnose::VerdictName(v.verdict)},
                    {"state", diagnose::GpuStateName(v.state)},
                    {"room",
                     {{"free_bytes", JsonOrNull(v.room_free_bytes)},
                      {"compute_free_pct", JsonOrNull(v.room_compute_free_pct)}}},
                    {"line", JsonText(v.line)},
                    {"reclaimable_bytes", v.reclaimable_bytes},
                    {"findings", std::move(findings)}});
  }
  j["gpus"] = std::move(gpus);

  json server = json::array();
  json ranked = json::array();
  for (const Finding& f : d.findings) {
    ranked.push_back(JsonText(f.code));
    if (f.gpus.empty()) server.push_back(FindingJson(f));
  }
  j["findings"] = std::move(server);
  j["all_findings_ranked"] = std::move(ranked);

  json users = json::array();
  for (const diagnose::UserHolding& u : d.users) users.push_back(UserJson(u));
  j["users"] = std::move(users);

  // One sample read from a dump: judged as such (docs/diagnosis.md "The window").
  j["window"] = {{"samples", ctx.samples},
                 {"seconds", ctx.window_s},
                 {"offline", latest.source == SnapshotSource::kXmlDump}};
  // An empty list says the kernel log was not read; null would say "unknown".
  j["kernel_log"] = {{"read", !ctx.kernel_log_sources.empty()},
                     {"sources", JsonTextList(ctx.kernel_log_sources)}};
  // Null: no daemon's history was read (none runs, or --no-history).
  j["trends"] = ctx.trends != nullptr ? fleet::TrendsToJson(*ctx.trends) : json(nullptr);
  j["trends_note"] = ctx.trends_note.empty() ? json(nullptr) : JsonText(ctx.trends_note);
  json errors = json::array();
  for (const ProbeError& e : latest.errors) errors.push_back(ProbeErrorJson(e));
  j["errors"] = std::move(errors);
  return j;
}

}  // namespace

json FindingJson(const Finding& f) {
  json evidence = json::array();
  for (const diagnose::Evidence& e : f.evidence) {
    evidence.push_back({{"name", JsonText(e.name)},
                        {"value", JsonText(e.value)},
                        {"number", JsonOrNull(e.number)},
                        {"unit", e.unit.empty() ? json(nullptr) : JsonText(e.unit)}});
  }
  const diagnose::FindingSpec* spec = diagnose::FindSpec(f.code);
  return json{{"code", JsonText(f.code)},
              {"category", diagnose::CategoryName(f.category)},
              {"severity", diagnose::SeverityName(f.severity)},
              {"implies", diagnose::VerdictName(f.implies)},
              {"actor", diagnose::ActorName(f.actor)},
              {"title", spec ? JsonText(spec->title) : json(nullptr)},
              {"message", JsonText(f.message)},
              {"evidence", std::move(evidence)},
              {"next_steps", JsonTextList(f.next_steps)},
              {"gpus", f.gpus},
              {"pids", f.pids}};
}

json ProbeErrorJson(const ProbeError& e) {
  return json{{"source", JsonText(e.source)},
              {"code", JsonText(e.code)},
              {"message", JsonText(e.message)},
              {"gpu_index", JsonOrNull(e.gpu_index)},
              {"nvml_return", JsonOrNull(e.nvml_return)},
              {"pids", e.pids}};
}

json WhyJson(const Diagnosis& diagnosis, const Snapshot& latest, const WhyJsonContext& context) {
  try {
    return WhyJsonUnchecked(diagnosis, latest, context);
  } catch (...) {
    // Only allocation can fail (every string went through JsonText).
    return json{{"schema", kWhySchemaName},
                {"schema_version", kWhySchemaVersion},
                {"verdict", "UNKNOWN"},
                {"errors", json::array({{{"source", "render"},
                                         {"code", "internal"},
                                         {"message", "could not build the document"}}})}};
  }
}

std::string RenderWhyJson(const Diagnosis& diagnosis, const Snapshot& latest,
                          const WhyJsonContext& context, bool pretty) {
  return DumpJsonForTerminal(WhyJson(diagnosis, latest, context), pretty, kWhySchemaName);
}

}  // namespace gw::render
