// `gpuwarden advise`: what a job needs in GPU memory, which GPUs fit it, and
// whether it fits on this server now (docs/advise.md, docs/plan.md).
#ifndef GPUWARDEN_CLI_ADVISE_COMMAND_H_
#define GPUWARDEN_CLI_ADVISE_COMMAND_H_

#include <cstdint>
#include <optional>
#include <string>

#include <CLI/CLI.hpp>

#include "cli/global_options.h"

namespace gw::cli {

struct AdviseArgs {
  std::string model;   // A catalog name or the path of a config.json.
  std::string params;  // --params 7B: only the parameter count.
  std::string task = "infer";
  std::string precision;          // "" = bf16 (int4 for qlora).
  std::optional<uint64_t> batch;  // Training only (default 1).
  uint64_t seq = 2048;
  std::string optimizer = "adamw";
  std::optional<uint64_t> concurrency;  // Inference only (default 1).
  bool checkpointing = false;
  std::string attention = "flash";
  uint64_t lora_rank = 16;
  bool json = false;
  bool offline = false;  // --offline: do not look at this server.
};

// Adds the subcommand and its flags to `app`.
CLI::App* AddAdviseSubcommand(CLI::App& app, AdviseArgs& args);

// 0 once advice is given (whether or not it fits here: see the JSON's
// server.verdict); 2 a bad command line or an unknown model; 3 a config.json
// or catalog file that cannot be read or is malformed.
int RunAdvise(const GlobalOptions& global, const AdviseArgs& args);

}  // namespace gw::cli

#endif  // GPUWARDEN_CLI_ADVISE_COMMAND_H_
