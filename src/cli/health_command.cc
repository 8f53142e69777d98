// `gpuwarden health`: the health of the node, judged by diagnose::AssessHealth
// (diagnose/health.h) from the same diagnosis `why` makes.
#include <cstdio>
#include <string>

#include "cli/exit_codes.h"
#include "cli/judge.h"
#include "cli/terminal.h"
#include "cli/why_command.h"
#include "diagnose/health.h"
#include "render/health_json.h"
#include "render/health_text.h"

namespace gw::cli {
namespace {

void Print(const std::string& text) {
  std::fwrite(text.data(), 1, text.size(), stdout);
  if (!text.empty() && text.back() != '\n') std::fputc('\n', stdout);
}

}  // namespace

int HealthExitCode(diagnose::Health health) {
  // One mapping of verdicts to exit codes: healthy 0, degraded 12, failed 13, unknown 14.
  return VerdictExitCode(diagnose::VerdictOfHealth(health));
}

int RunHealth(const GlobalOptions& global, const HealthArgs& args) {
  JudgeArgs judge = args.judge;
  judge.progress = !args.json;
  auto judged = Judge(global, judge);
  if (!judged.ok()) {
    std::fprintf(stderr, "gpuwarden: %s\n", judged.error().message.c_str());
    if (judged.error().code == "usage") return kExitUsage;
    if (judged.error().code == "bad_input") return kExitBadInput;
    return kExitNvmlUnavailable;
  }
  const Snapshot& latest = judged->history.back();
  if (args.json) {
    Print(render::RenderHealthJson(judged->diagnosis, latest, /*pretty=*/true));
  } else {
    Print(render::RenderHealthText(judged->diagnosis, latest, args.verbose,
                                   ShouldUseColor(global.color)));
  }
  // Busy or reclaimable is healthy hardware; a GPU that could not be read is
  // not: UNKNOWN (14) unless something worse was found.
  return HealthExitCode(diagnose::AssessHealth(judged->diagnosis.findings, latest).overall);
}

}  // namespace gw::cli
