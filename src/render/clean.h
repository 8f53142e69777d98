// `gpuwarden clean` and `gpuwarden kill`: the plan (what will and will not be
// signalled, and why), what happened to each process, and whether the GPU
// memory came back. Text for people and JSON (schema "gpuwarden.clean",
// docs/json.md). Pure functions of the act module's values.
#ifndef GPUWARDEN_RENDER_CLEAN_H_
#define GPUWARDEN_RENDER_CLEAN_H_

#include <optional>
#include <string>
#include <vector>

#include "act/execute.h"
#include "act/plan.h"
#include "act/verify.h"

namespace gw::render {

inline constexpr char kCleanSchemaName[] = "gpuwarden.clean";
inline constexpr int kCleanSchemaVersion = 1;

struct CleanRenderOptions {
  int first_signal = 15;
  double grace_s = 10;
  double settle_s = 5;
  int width = 100;  // Terminal columns for the tables.
};

// The plan as a table: "Will stop N processes (SIGTERM, then SIGKILL after
// 10 s):", one row per process with its reason below, then "Will not touch:"
// and the notes. "Nothing to clean ..." when both lists are empty.
std::string RenderPlanText(const act::Plan& plan, const CleanRenderOptions& settings);

// One line per target: "PID 4242 (python): exited 0.4 s after SIGTERM".
std::string RenderResultLine(const act::TargetResult& result);

// Per GPU: "GPU 0: 20.0 GiB freed (70.0 GiB -> 50.0 GiB used)", or the
// memory still held and what an administrator must do about it.
std::string RenderReleaseText(const act::ReleaseReport& release, double settled_s);

// The whole run as one JSON document (pretty, terminal-safe).
struct CleanDocument {
  std::string command;  // "clean" or "kill"
  bool dry_run = false;
  bool confirmed = false;
  CleanRenderOptions settings;
  const act::Plan* plan = nullptr;
  const act::ExecuteReport* report = nullptr;   // null: nothing was done.
  const act::ReleaseReport* release = nullptr;  // null: not checked.
  std::string audit_log_path;
  std::vector<std::string> audit_errors;
};
std::string RenderCleanJson(const CleanDocument& doc);

}  // namespace gw::render

#endif  // GPUWARDEN_RENDER_CLEAN_H_
