#include "render/reset_plan.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "core/json_out.h"
#include "core/text.h"
#include "core/units.h"

namespace gw::render {

using nlohmann::json;

std::string RenderResetPlanText(const act::ResetPlan& plan) {
  std::string out = fmt::format("Reset plan for GPU {}", plan.gpu);
  std::string what = plan.name;
  if (!plan.pci_bus_id.empty()) what += (what.empty() ? "" : ", ") + plan.pci_bus_id;
  if (!what.empty()) out += " (" + what + ")";
  out += plan.live ? " on this machine now" : " from a dump";
  out += " — gpuwarden prints it and never performs it.\n";
  for (const std::string& b : plan.blockers) out += "A reset cannot help: " + b + ".\n";
  unsigned n = 0;
  for (const act::ResetStep& s : plan.steps) {
    out += fmt::format("{:>2}. {}", ++n, s.title);
    if (!s.why.empty()) out += ": " + s.why;
    out += "\n";
    for (const act::ResetHolder& h : s.holders) {
      out += "      " + h.text;
      if (h.bytes) out += ", " + FormatBytes(*h.bytes) + " on the GPU";
      out += "\n";
    }
    for (const std::string& c : s.commands) out += "      $ " + c + "\n";
  }
  for (const std::string& note : plan.notes) out += "Note: " + note + ".\n";
  return out;
}

std::string RenderResetPlanJson(const act::ResetPlan& plan) {
  json j;
  try {
    j["schema"] = kResetPlanSchemaName;
    j["schema_version"] = kResetPlanSchemaVersion;
    j["gpu"] = {{"index", plan.gpu},
                {"name", ToValidUtf8(plan.name)},
                {"pci_bus_id", ToValidUtf8(plan.pci_bus_id)},
                {"uuid", ToValidUtf8(plan.uuid)}};
    j["live"] = plan.live;
    j["reset_can_help"] = plan.reset_can_help;
    json blockers = json::array();
    for (const std::string& b : plan.blockers) blockers.push_back(ToValidUtf8(b));
    j["blockers"] = std::move(blockers);
    json steps = json::array();
    for (const act::ResetStep& s : plan.steps) {
      json holders = json::array();
      for (const act::ResetHolder& h : s.holders) {
        holders.push_back({{"pid", h.pid},
                           {"process", ToValidUtf8(h.text)},
                           {"bytes", h.bytes ? json(*h.bytes) : json(nullptr)}});
      }
      json commands = json::array();
      for (const std::string& c : s.commands) commands.push_back(ToValidUtf8(c));
      steps.push_back({{"kind", act::ResetStepKindName(s.kind)},
                       {"title", ToValidUtf8(s.title)},
                       {"why", ToValidUtf8(s.why)},
                       {"holders", std::move(holders)},
                       {"commands", std::move(commands)}});
    }
    j["steps"] = std::move(steps);
    json notes = json::array();
    for (const std::string& note : plan.notes) notes.push_back(ToValidUtf8(note));
    j["notes"] = std::move(notes);
  } catch (...) {
    // Only allocation can fail; DumpJsonForTerminal has its own fallback.
  }
  return DumpJsonForTerminal(j, /*pretty=*/true, kResetPlanSchemaName);
}

}  // namespace gw::render
