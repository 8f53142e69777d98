// `gpuwarden history` and `gpuwarden usage`: what gpuwardend remembers
// (docs/metrics.md "History"), asked over its socket.
#ifndef GPUWARDEN_CLI_HISTORY_COMMAND_H_
#define GPUWARDEN_CLI_HISTORY_COMMAND_H_

#include <optional>
#include <string>

namespace gw::cli {

struct HistoryArgs {
  std::string socket;
  std::string since = "1h";
  std::optional<unsigned> gpu;
  bool csv = false;
  bool json = false;
};
int RunHistory(const HistoryArgs& args);

struct UsageArgs {
  std::string socket;
  std::string since = "7d";
  bool json = false;
};
int RunUsage(const UsageArgs& args);

}  // namespace gw::cli

#endif  // GPUWARDEN_CLI_HISTORY_COMMAND_H_
