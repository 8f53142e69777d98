#include "render/clean.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "core/json_out.h"
#include "core/text.h"
#include "core/units.h"
#include "render/status_json.h"

namespace gw::render {
namespace {

using nlohmann::json;

std::string CommandText(const act::PlanItem& item) {
  if (!item.cmdline.empty()) return JoinCommandLine(item.cmdline);
  if (item.comm) return "[" + SanitizeForTerminal(*item.comm) + "]";
  return "?";
}

std::string ShortName(const act::PlanItem& item) {
  if (item.comm) return SanitizeForTerminal(*item.comm);
  return "?";
}

std::string GpuText(const std::vector<unsigned>& gpus) {
  if (gpus.empty()) return "-";
  return fmt::format("{}", fmt::join(gpus, ","));
}

std::string_view ReasonWords(act::Reason r) {
  switch (r) {
    case act::Reason::kIdleHolder:
      return "idle holder";
    case act::Reason::kOrphanHolder:
      return "orphan";
    case act::Reason::kStaleDeviceHolder:
      return "stale device holder";
    case act::Reason::kZombieParent:
      return "zombie's parent";
    case act::Reason::kNamed:
      return "named";
    case act::Reason::kRunMember:
      return "run member";
    case act::Reason::kNotYours:
      return "not yours";
    case act::Reason::kNeedsUserFlag:
      return "another user";
    case act::Reason::kProtected:
      return "protected";
    case act::Reason::kSelf:
      return "gpuwarden itself";
    case act::Reason::kInit:
      return "init";
    case act::Reason::kKernelThread:
      return "kernel thread";
    case act::Reason::kZombie:
      return "zombie";
    case act::Reason::kGone:
      return "gone";
    case act::Reason::kUnknownOwner:
      return "owner unknown";
  }
  return "";
}

void AppendRows(std::string& out, const std::vector<act::PlanItem>& items, int width) {
  out += "  PID      USER        GPU   VRAM        SM%  AGE       STATE       COMMAND\n";
  const int fixed = 2 + 9 + 12 + 6 + 12 + 5 + 10 + 12;
  const int command_width = std::max(20, width - fixed);
  for (const act::PlanItem& i : items) {
    out += "  ";
    out += PadRight(std::to_string(i.pid), 9);
    out += PadRight(SanitizeForTerminal(i.user), 12);
    out += PadRight(GpuText(i.gpus), 6);
    out += PadRight(i.vram_bytes ? FormatBytes(*i.vram_bytes) : "-", 12);
    out += PadRight(i.sm_pct ? std::to_string(*i.sm_pct) : "-", 5);
    out += PadRight(i.age_s ? FormatDuration(*i.age_s) : "-", 10);
    out += PadRight(i.state ? std::string(ProcessStateName(*i.state)) : "-", 12);
    out += TruncateToWidth(CommandText(i), command_width);
    out += '\n';
    out += fmt::format("           {}: {}\n", ReasonWords(i.reason), i.detail);
  }
}

std::string Seconds(double s) { return fmt::format("{:.1f} s", s); }

json ItemJson(const act::PlanItem& i) {
  return json{
      {"pid", i.pid},
      {"start_ticks", JsonOrNull(i.start_ticks)},
      {"uid", JsonOrNull(i.uid)},
      {"user", ToValidUtf8(i.user)},
      {"gpus", i.gpus},
      {"vram_bytes", JsonOrNull(i.vram_bytes)},
      {"sm_pct", JsonOrNull(i.sm_pct)},
      {"age_s", JsonOrNull(i.age_s)},
      {"state", i.state ? json(ProcessStateName(*i.state)) : json(nullptr)},
      {"command", ToValidUtf8(CommandText(i))},
      {"role", act::RoleName(i.role)},
      {"because_of", JsonOrNull(i.because_of)},
      {"reason_code", act::ReasonCode(i.reason)},
      {"reason", ToValidUtf8(i.detail)},
  };
}

}  // namespace

std::string RenderPlanText(const act::Plan& plan, const CleanRenderOptions& settings) {
  std::string out;
  if (plan.act.empty() && plan.skip.empty()) {
    out += plan.mode == act::PlanMode::kClean
               ? "Nothing to clean: no idle, orphaned, zombie or stale GPU holders found.\n"
               : "Nothing to stop.\n";
  }
  if (!plan.act.empty()) {
    out += fmt::format("Will stop {} process{} ({}, then SIGKILL after {}):\n", plan.act.size(),
                       plan.act.size() == 1 ? "" : "es", act::SignalName(settings.first_signal),
                       Seconds(settings.grace_s));
    AppendRows(out, plan.act, settings.width);
  }
  if (!plan.skip.empty()) {
    if (!plan.act.empty()) out += '\n';
    out += "Will not touch:\n";
    AppendRows(out, plan.skip, settings.width);
  }
  for (const std::string& note : plan.notes) out += "Note: " + note + "\n";
  return out;
}

std::string RenderResultLine(const act::TargetResult& r) {
  const std::string who = fmt::format("PID {} ({})", r.item.pid, ShortName(r.item));
  const std::string first = r.signals.empty() ? "" : act::SignalName(r.signals.front());
  switch (r.outcome) {
    case act::Outcome::kExited:
      return fmt::format("{}: exited {} after {}", who, Seconds(r.seconds.value_or(0)), first);
    case act::Outcome::kKilled:
      return fmt::format("{}: ignored {}; killed with SIGKILL, gone {} after the first signal", who,
                         first, Seconds(r.seconds.value_or(0)));
    case act::Outcome::kGone:
      return fmt::format("{}: already gone", who);
    case act::Outcome::kReused:
      return fmt::format("{}: not signalled: {}", who, r.detail);
    case act::Outcome::kDenied:
      return fmt::format("{}: the kernel refused the signal: {}", who, r.detail);
    case act::Outcome::kSurvived:
      return fmt::format("{}: {}; an administrator must look (it may need a reboot)", who,
                         r.detail);
    case act::Outcome::kError:
      return fmt::format("{}: not stopped: {}", who, r.detail);
  }
  return who;
}

std::string RenderReleaseText(const act::ReleaseReport& release, double settled_s) {
  std::string out;
  for (const act::GpuRelease& g : release.gpus) {
    const std::string usage =
        g.used_before_bytes && g.used_after_bytes
            ? fmt::format(" ({} → {} used)", FormatBytes(*g.used_before_bytes),
                          FormatBytes(*g.used_after_bytes))
            : "";
    if (g.released) {
      out += g.freed_bytes
                 ? fmt::format("GPU {}: {} freed{}\n", g.index, FormatBytes(*g.freed_bytes), usage)
                 : fmt::format("GPU {}: the processes ended (memory use unknown)\n", g.index);
      continue;
    }
    out += fmt::format(
        "GPU {}: the processes ended, but {} is still held after {}{}: the driver did not "
        "release it (a process stuck in the kernel, or a driver leak).\n",
        g.index, FormatBytes(g.still_held_bytes), Seconds(settled_s), usage);
    if (!g.still_listed.empty()) {
      out +=
          fmt::format("  The driver still lists PID {} on it.\n", fmt::join(g.still_listed, ", "));
    }
    out += fmt::format(
        "  Ask an administrator to reset GPU {} (gpuwarden reset --plan {} lists what is in the "
        "way) or to reboot the node; gpuwarden never does either.\n",
        g.index, g.index);
  }
  return out;
}

std::string RenderCleanJson(const CleanDocument& doc) {
  json j;
  try {
    j["schema"] = kCleanSchemaName;
    j["schema_version"] = kCleanSchemaVersion;
    j["command"] = doc.command;
    j["dry_run"] = doc.dry_run;
    j["confirmed"] = doc.confirmed;
    j["signal"] = act::SignalName(doc.settings.first_signal);
    j["grace_s"] = doc.settings.grace_s;
    json act_items = json::array();
    json skip_items = json::array();
    json notes = json::array();
    if (doc.plan != nullptr) {
      for (const auto& i : doc.plan->act) act_items.push_back(ItemJson(i));
      for (const auto& i : doc.plan->skip) skip_items.push_back(ItemJson(i));
      for (const auto& n : doc.plan->notes) notes.push_back(ToValidUtf8(n));
    }
    j["plan"] = {{"act", std::move(act_items)},
                 {"skip", std::move(skip_items)},
                 {"notes", std::move(notes)}};
    json results = json::array();
    if (doc.report != nullptr) {
      for (const act::TargetResult& r : doc.report->results) {
        json signals = json::array();
        for (int s : r.signals) signals.push_back(act::SignalName(s));
        results.push_back({{"pid", r.item.pid},
                           {"command", ToValidUtf8(CommandText(r.item))},
                           {"outcome", act::OutcomeName(r.outcome)},
                           {"signals", std::move(signals)},
                           {"seconds", JsonOrNull(r.seconds)},
                           {"state", r.state ? json(ProcessStateName(*r.state)) : json(nullptr)},
                           {"detail", ToValidUtf8(r.detail)}});
      }
    }
    j["results"] = std::move(results);
    json gpus = json::array();
    if (doc.release != nullptr) {
      for (const act::GpuRelease& g : doc.release->gpus) {
        gpus.push_back({{"index", g.index},
                        {"used_before_bytes", JsonOrNull(g.used_before_bytes)},
                        {"used_after_bytes", JsonOrNull(g.used_after_bytes)},
                        {"expected_bytes", g.expected_bytes},
                        {"freed_bytes", JsonOrNull(g.freed_bytes)},
                        {"still_held_bytes", g.still_held_bytes},
                        {"still_listed", g.still_listed},
                        {"released", g.released}});
      }
    }
    j["gpus"] = std::move(gpus);
    json errors = json::array();
    for (const std::string& e : doc.audit_errors) errors.push_back(ToValidUtf8(e));
    j["audit_log"] = {{"path", doc.audit_log_path.empty() ? json(nullptr)
                                                          : json(ToValidUtf8(doc.audit_log_path))},
                      {"errors", std::move(errors)}};
  } catch (...) {
    // Only allocation can fail; DumpJsonForTerminal has its own fallback.
  }
  return DumpJsonForTerminal(j, /*pretty=*/true, kCleanSchemaName);
}

}  // namespace gw::render
