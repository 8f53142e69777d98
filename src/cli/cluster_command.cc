#include "cli/cluster_command.h"

#include <cstdio>
#include <ctime>
#include <optional>
#include <string>
#include <vector>

#include <unistd.h>

#include "cli/exit_codes.h"
#include "core/json_out.h"
#include "core/text.h"
#include "proc/users.h"
#include "render/cluster_text.h"
#include "render/slurm_why.h"
#include "slurm/cluster_view.h"
#include "slurm/pending_explain.h"
#include "slurm/slurm_reader.h"

namespace gw::cli {

namespace {

// Slurm's documents, or nullopt after the failure was reported (one line on
// stderr; with --json also a document holding the error).
std::optional<slurm::SlurmLook> Look(os::CommandRunner& runner, double timeout_s, bool as_json,
                                     const char* schema) {
  slurm::ReaderOptions options;
  options.timeout_ms = static_cast<int>(timeout_s * 1000);
  Result<slurm::SlurmLook> look = slurm::ReadSlurm(runner, options);
  if (look.ok()) return std::move(*look);
  if (as_json) {
    nlohmann::json doc = {
        {"schema", schema},
        {"schema_version", 1},
        {"errors", {{{"code", look.error().code}, {"message", JsonText(look.error().message)}}}}};
    std::printf("%s\n", DumpJsonForTerminal(doc, /*pretty=*/true, schema).c_str());
  }
  std::fprintf(stderr, "gpuwarden: cannot read the Slurm cluster: %s\n",
               SanitizeForTerminal(look.error().message).c_str());
  return std::nullopt;
}

}  // namespace

int RunCluster(const GlobalOptions& /*global*/, const ClusterArgs& args,
               os::CommandRunner& runner) {
  std::optional<slurm::SlurmLook> look =
      Look(runner, args.slurm_timeout_s, args.json, render::kClusterSchemaName);
  if (!look) return kExitSlurmUnavailable;
  const slurm::ClusterView view = slurm::BuildClusterView(look->sinfo, look->squeue);
  if (args.json) {
    std::printf("%s\n", DumpJsonForTerminal(render::ClusterJson(view), /*pretty=*/true,
                                            render::kClusterSchemaName)
                            .c_str());
  } else {
    std::fputs(render::RenderClusterText(view, static_cast<int64_t>(std::time(nullptr))).c_str(),
               stdout);
  }
  return kExitOk;
}

int RunSlurmWhy(const SlurmWhyArgs& args, os::CommandRunner& runner) {
  std::optional<int64_t> wanted;
  if (!args.job.empty()) {
    if (args.job.size() > 18 || args.job.find_first_not_of("0123456789") != std::string::npos) {
      std::fprintf(stderr, "gpuwarden: why --slurm: \"%s\" is not a Slurm job id\n",
                   SanitizeForTerminal(args.job).c_str());
      return kExitUsage;
    }
    wanted = std::stoll(args.job);
  }
  std::optional<slurm::SlurmLook> look =
      Look(runner, args.slurm_timeout_s, args.json, render::kSlurmWhySchemaName);
  if (!look) return kExitSlurmUnavailable;
  const slurm::ClusterView view = slurm::BuildClusterView(look->sinfo, look->squeue);
  const int64_t now = static_cast<int64_t>(std::time(nullptr));
  const std::optional<std::string> me = proc::LookupUserName(getuid());
  slurm::ReaderOptions options;
  options.timeout_ms = static_cast<int>(args.slurm_timeout_s * 1000);
  const slurm::WaitDetails details = slurm::ReadWaitDetails(runner, look->squeue.jobs, options);
  slurm::WaitContext context;
  context.priorities = details.priorities ? &*details.priorities : nullptr;
  context.limits = details.limits ? &*details.limits : nullptr;
  context.priorities_unread = details.priorities_unread;
  context.limits_unread = details.limits_unread;
  const slurm::PendingExplainer explainer(view, look->squeue.jobs, context);
  std::vector<slurm::PendingExplanation> explained;
  for (const slurm::Job& job : look->squeue.jobs) {
    if (wanted ? job.id != *wanted : (job.state != "PENDING" || job.user != me)) continue;
    explained.push_back(explainer.Explain(job, now));
  }
  if (wanted && explained.empty()) {
    std::fprintf(stderr,
                 "gpuwarden: why --slurm: no job %lld in squeue (it ended a while ago, or never "
                 "existed)\n",
                 static_cast<long long>(*wanted));
    return kExitUsage;
  }
  if (args.json) {
    std::printf("%s\n", DumpJsonForTerminal(render::SlurmWhyJson(explained), /*pretty=*/true,
                                            render::kSlurmWhySchemaName)
                            .c_str());
  } else if (explained.empty()) {
    std::printf(
        "%s has no waiting Slurm job. `gpuwarden why --slurm JOBID` explains any "
        "job; `gpuwarden cluster` shows them all.\n",
        SanitizeForTerminal(me.value_or("uid " + std::to_string(getuid()))).c_str());
  } else {
    std::fputs(render::RenderSlurmWhyText(explained, now).c_str(), stdout);
  }
  return kExitOk;
}

}  // namespace gw::cli
