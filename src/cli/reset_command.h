// `gpuwarden reset --plan GPU`: what keeps a GPU reset from working on this
// machine and the order to clear it (act/reset_plan.h). It prints the plan
// and never resets anything. See docs/cleanup.md, "Resetting a GPU".
#ifndef GPUWARDEN_CLI_RESET_COMMAND_H_
#define GPUWARDEN_CLI_RESET_COMMAND_H_

#include <string>

#include "cli/global_options.h"
#include "cli/judge.h"

namespace gw::cli {

struct ResetArgs {
  std::string gpu;  // --plan GPU: index, UUID or PCI bus id.
  bool json = false;
  JudgeArgs judge;  // --from, --now, --window.
};

int RunReset(const GlobalOptions& global, const ResetArgs& args);

}  // namespace gw::cli

#endif  // GPUWARDEN_CLI_RESET_COMMAND_H_
