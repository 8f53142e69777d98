// `gpuwarden health`: the health of the node, judged by diagnose::AssessHealth
// (diagnose/health.h) from the same diagnosis `why` makes.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "cli/exit_codes.h"
#include "cli/judge.h"
#include "cli/slurm_node.h"
#include "cli/terminal.h"
#include "cli/why_command.h"
#include "core/text.h"
#include "diagnose/health.h"
#include "render/health_json.h"
#include "render/health_text.h"
#include "slurm/node_drain.h"
#include "slurm/slurm_reader.h"

namespace gw::cli {
namespace {

// Slurm's reason field is shown in one line by sinfo -R; a long one only wraps.
constexpr int kDrainReasonColumns = 200;

slurm::NodeHealth ToNodeHealth(diagnose::Health h) {
  switch (h) {
    case diagnose::Health::kHealthy:
      return slurm::NodeHealth::kHealthy;
    case diagnose::Health::kDegraded:
      return slurm::NodeHealth::kDegraded;
    case diagnose::Health::kFailed:
      return slurm::NodeHealth::kFailed;
    case diagnose::Health::kUnknown:
      break;
  }
  return slurm::NodeHealth::kUnknown;
}

// Reads the node from Slurm, decides, and drains or resumes it. One line on
// stdout says what was done; false (and one line on stderr) when Slurm could
// not be read or changed.
bool ApplyToSlurm(const HealthArgs& args, slurm::NodeHealth health, const std::string& problem,
                  os::CommandRunner& runner) {
  const std::string node = SlurmNodeName(args.slurm_node);
  if (node.empty()) {
    std::fprintf(stderr,
                 "gpuwarden: health --slurm-drain: no node name (give --slurm-node, or "
                 "run it from slurmd, which sets SLURMD_NODENAME)\n");
    return false;
  }
  slurm::ReaderOptions options;
  options.timeout_ms = static_cast<int>(args.slurm_timeout_s * 1000);
  Result<slurm::SinfoDocument> sinfo = slurm::ReadSinfo(runner, options);
  if (!sinfo.ok()) {
    std::fprintf(stderr, "gpuwarden: health --slurm-drain: cannot read node %s: %s\n",
                 SanitizeForTerminal(node).c_str(),
                 SanitizeForTerminal(sinfo.error().message).c_str());
    return false;
  }
  const slurm::Node* found = nullptr;
  for (const slurm::Node& n : sinfo->nodes) {
    if (n.name == node) found = &n;
  }
  if (found == nullptr) {
    std::fprintf(stderr,
                 "gpuwarden: health --slurm-drain: sinfo lists no node \"%s\" (name it with "
                 "--slurm-node)\n",
                 SanitizeForTerminal(node).c_str());
    return false;
  }
  const slurm::DegradedPolicy policy =
      args.on_degraded == "drain" ? slurm::DegradedPolicy::kDrain : slurm::DegradedPolicy::kIgnore;
  const slurm::DrainDecision decision = slurm::DecideDrain(*found, health, problem, policy);
  const std::vector<std::string> argv = slurm::ScontrolArgv("scontrol", node, decision);
  if (!argv.empty()) {
    os::CommandOptions o;
    o.timeout_ms = options.timeout_ms;
    Result<os::CommandOutput> r = runner.Run(argv, o);
    const std::string failure = !r.ok()           ? r.error().message
                                : !r->succeeded() ? "scontrol update " + r->Describe()
                                                  : "";
    if (!failure.empty()) {
      std::fprintf(stderr, "gpuwarden: health --slurm-drain: node %s was not changed: %s\n",
                   SanitizeForTerminal(node).c_str(), SanitizeForTerminal(failure).c_str());
      return false;
    }
  }
  std::string line =
      "slurm: node " + SanitizeForTerminal(node) + ": " + SanitizeForTerminal(decision.why);
  if (decision.action == slurm::DrainAction::kDrain) {
    line += ": " + SanitizeForTerminal(decision.reason);
  }
  // With --json, stdout holds the document alone.
  if (args.json) {
    std::fprintf(stderr, "%s\n", line.c_str());
  } else {
    Print(line);
  }
  return true;
}

}  // namespace

int HealthExitCode(diagnose::Health health) {
  // One mapping of verdicts to exit codes: healthy 0, degraded 12, failed 13, unknown 14.
  return VerdictExitCode(diagnose::VerdictOfHealth(health));
}

int RunHealth(const GlobalOptions& global, const HealthArgs& args, os::CommandRunner& runner) {
  JudgeArgs judge = args.judge;
  judge.progress = !args.json && !args.slurm_drain;
  auto judged = Judge(global, judge);
  if (!judged.ok()) {
    std::fprintf(stderr, "gpuwarden: %s\n", judged.error().message.c_str());
    if (judged.error().code == "usage") return kExitUsage;
    if (judged.error().code == "bad_input") return kExitBadInput;
    // Could not look: the node is judged unknown, which never drains nor
    // resumes it; Slurm is still asked, so that a broken node name shows.
    if (args.slurm_drain && !ApplyToSlurm(args, slurm::NodeHealth::kUnknown, "", runner)) {
      return kExitSlurmUnavailable;
    }
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
  const diagnose::Health overall =
      diagnose::AssessHealth(judged->diagnosis.findings, latest).overall;
  if (args.slurm_drain &&
      !ApplyToSlurm(args, ToNodeHealth(overall),
                    render::RenderHealthReason(judged->diagnosis, latest, kDrainReasonColumns),
                    runner)) {
    return kExitSlurmUnavailable;
  }
  return HealthExitCode(overall);
}

}  // namespace gw::cli
