#include "cli/cluster_command.h"

#include <cstdio>
#include <ctime>
#include <string>

#include "cli/exit_codes.h"
#include "core/json_out.h"
#include "core/text.h"
#include "render/cluster_text.h"
#include "slurm/cluster_view.h"
#include "slurm/slurm_reader.h"

namespace gw::cli {

int RunCluster(const GlobalOptions& /*global*/, const ClusterArgs& args,
               os::CommandRunner& runner) {
  slurm::ReaderOptions options;
  options.timeout_ms = static_cast<int>(args.slurm_timeout_s * 1000);
  Result<slurm::SlurmLook> look = slurm::ReadSlurm(runner, options);
  if (!look.ok()) {
    if (args.json) {
      nlohmann::json doc = {
          {"schema", render::kClusterSchemaName},
          {"schema_version", render::kClusterSchemaVersion},
          {"errors", {{{"code", look.error().code}, {"message", JsonText(look.error().message)}}}}};
      std::printf("%s\n",
                  DumpJsonForTerminal(doc, /*pretty=*/true, render::kClusterSchemaName).c_str());
    }
    std::fprintf(stderr, "gpuwarden: cannot read the Slurm cluster: %s\n",
                 SanitizeForTerminal(look.error().message).c_str());
    return kExitSlurmUnavailable;
  }
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

}  // namespace gw::cli
