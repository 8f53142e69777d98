#include "cli/history_command.h"

#include <cstdio>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/exit_codes.h"
#include "cli/queue_command.h"
#include "cli/terminal.h"
#include "core/text.h"
#include "core/units.h"
#include "fleet/history_point.h"
#include "queue/client.h"
#include "queue/protocol.h"
#include "render/history_text.h"

namespace gw::cli {
namespace {

using nlohmann::json;

// Asks gpuwardend `op` over the last `since`; exits as the queue's commands do.
Result<json> Ask(const std::string& socket, const std::string& op, const std::string& since) {
  Result<double> seconds = ParseDuration(since);
  if (!seconds.ok()) return MakeError("usage", "--since: " + seconds.error().message);
  Result<queue::Client> c = queue::Client::Connect(queue::ResolveSocketPath(socket), 30'000);
  if (!c.ok()) return c.error();
  return c->Call({{"op", op}, {"since_s", *seconds}});
}

int Failed(const Error& e) {
  std::fprintf(stderr, "gpuwarden: %s\n", SanitizeForTerminal(e.message).c_str());
  return e.code == "usage" ? kExitUsage : ExitCodeForError(e);
}

}  // namespace

int RunHistory(const HistoryArgs& args) {
  Result<json> reply = Ask(args.socket, "history", args.since);
  if (!reply.ok()) return Failed(reply.error());
  std::vector<fleet::HistoryPoint> points;
  for (const json& p : reply->value("points", json::array())) {
    Result<fleet::HistoryPoint> point = fleet::PointFromJson(p);
    if (!point.ok()) return Failed(MakeError("protocol", point.error().message));
    points.push_back(std::move(*point));
  }
  if (args.json) {
    std::fputs((reply->dump(2) + "\n").c_str(), stdout);
  } else if (args.csv) {
    std::fputs(render::HistoryCsv(points, args.gpu).c_str(), stdout);
  } else {
    std::fputs(render::HistoryText(points, args.gpu, ChartWidth()).c_str(), stdout);
  }
  return kExitOk;
}

int RunUsage(const UsageArgs& args) {
  Result<json> reply = Ask(args.socket, "usage", args.since);
  if (!reply.ok()) return Failed(reply.error());
  std::fputs(args.json ? (reply->dump(2) + "\n").c_str() : render::UsageText(*reply).c_str(),
             stdout);
  return kExitOk;
}

}  // namespace gw::cli
