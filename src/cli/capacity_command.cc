#include "cli/capacity_command.h"

#include <cmath>
#include <cstdio>
#include <ctime>
#include <vector>

#include <nlohmann/json.hpp>

#include "capacity/capacity.h"
#include "capacity/capacity_sources.h"
#include "cli/exit_codes.h"
#include "cli/queue_command.h"
#include "core/json_out.h"
#include "core/text.h"
#include "core/units.h"
#include "fleet/history_point.h"
#include "queue/client.h"
#include "queue/protocol.h"
#include "render/capacity_text.h"
#include "slurm/slurm_reader.h"

namespace gw::cli {
namespace {

using nlohmann::json;

int64_t UtcOffsetAt(int64_t unix_s) {
  const time_t t = static_cast<time_t>(unix_s);
  tm local{};
  if (localtime_r(&t, &local) == nullptr) return 0;
  return local.tm_gmtoff;
}

// gpuwardend's history and jobs over the last `since_s` seconds.
Result<capacity::CapacityInput> FromDaemon(const std::string& socket, int64_t since_s,
                                           int64_t now_s) {
  Result<queue::Client> c = queue::Client::Connect(queue::ResolveSocketPath(socket), 60'000);
  if (!c.ok()) return c.error();
  Result<json> history = c->Call({{"op", "history"}, {"since_s", since_s}});
  if (!history.ok()) return history.error();
  std::vector<fleet::HistoryPoint> points;
  for (const json& p : history->value("points", json::array())) {
    Result<fleet::HistoryPoint> point = fleet::PointFromJson(p);
    if (!point.ok()) return MakeError("protocol", "history: " + point.error().message);
    points.push_back(std::move(*point));
  }
  Result<json> jobs = c->Call({{"op", "jobs"}});
  std::vector<capacity::JobRecord> records;
  const bool no_queue = !jobs.ok() && jobs.error().code == "no_queue";
  if (!jobs.ok() && !no_queue) return jobs.error();
  if (jobs.ok()) {
    Result<std::vector<capacity::JobRecord>> r = capacity::JobsFromQueueJson(
        jobs->value("jobs", json::array()), capacity::GpuMemoryOf(points));
    if (!r.ok()) return MakeError("protocol", r.error().message);
    records = std::move(*r);
  }
  // The window the daemon answered for; ours when it names none.
  auto unix_s = [&](const char* key, int64_t fallback) {
    const auto it = history->find(key);
    return it != history->end() && it->is_number_integer() ? it->get<int64_t>() : fallback;
  };
  const int64_t to = unix_s("to_unix_s", now_s);
  const int64_t from = unix_s("from_unix_s", to - since_s);
  capacity::CapacityInput in =
      capacity::InputFromHistory(points, std::move(records), from, to, UtcOffsetAt(to));
  in.jobs_known = !no_queue;
  return in;
}

Result<capacity::CapacityInput> FromSlurm(os::CommandRunner& runner, int64_t since_s, int64_t now_s,
                                          double timeout_s) {
  const int timeout_ms = static_cast<int>(timeout_s * 1000);
  slurm::ReaderOptions o;
  o.timeout_ms = timeout_ms;
  Result<slurm::SinfoDocument> sinfo = slurm::ReadSinfo(runner, o);
  if (!sinfo.ok()) return sinfo.error();
  Result<std::vector<capacity::SacctJob>> jobs = capacity::ReadSacct(runner, since_s, timeout_ms);
  if (!jobs.ok()) return jobs.error();
  return capacity::InputFromSlurm(*jobs, *sinfo, now_s - since_s, now_s, UtcOffsetAt(now_s));
}

}  // namespace

int RunCapacity(const CapacityArgs& args, os::CommandRunner& runner) {
  Result<double> since = ParseDuration(args.since);
  if (!since.ok() || *since < 1) {
    std::fprintf(stderr, "gpuwarden: capacity --since: %s\n",
                 SanitizeForTerminal(since.ok() ? "\"" + args.since + "\" is shorter than 1s"
                                                : since.error().message)
                     .c_str());
    return kExitUsage;
  }
  const auto since_s = static_cast<int64_t>(std::ceil(*since));
  const auto now_s = static_cast<int64_t>(std::time(nullptr));
  Result<capacity::CapacityInput> in = args.slurm
                                           ? FromSlurm(runner, since_s, now_s, args.slurm_timeout_s)
                                           : FromDaemon(args.socket, since_s, now_s);
  if (!in.ok()) {
    if (args.slurm) {
      std::fprintf(stderr, "gpuwarden: cannot read Slurm's accounting: %s\n",
                   SanitizeForTerminal(in.error().message).c_str());
      return kExitSlurmUnavailable;
    }
    std::fprintf(stderr, "gpuwarden: %s\n", SanitizeForTerminal(in.error().message).c_str());
    return ExitCodeForError(in.error());
  }
  const capacity::CapacityReport report = capacity::AnalyzeCapacity(*in);
  if (args.json) {
    std::printf("%s\n", DumpJsonForTerminal(render::CapacityJson(report), /*pretty=*/true,
                                            render::kCapacitySchemaName)
                            .c_str());
  } else {
    std::fputs(render::RenderCapacityText(report).c_str(), stdout);
  }
  return kExitOk;
}

}  // namespace gw::cli
