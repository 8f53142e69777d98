#include "render/slurm_why.h"

#include "core/json_out.h"
#include "core/text.h"
#include "core/units.h"

namespace gw::render {

using nlohmann::json;
using slurm::PendingExplanation;

std::string RenderSlurmWhyText(const std::vector<PendingExplanation>& jobs, int64_t now_unix_s) {
  std::string out;
  for (const PendingExplanation& e : jobs) {
    if (!out.empty()) out += "\n";
    std::string head = "job " + std::to_string(e.job_id);
    if (e.job_name) head += " \"" + SanitizeForTerminal(*e.job_name) + "\"";
    head += " (" + SanitizeForTerminal(e.user.value_or("?")) + ")";
    if (e.state != "PENDING") {
      out += head + " does not wait: it is " + SanitizeForTerminal(e.state) + ".\n";
      continue;
    }
    const std::string code =
        e.code.empty() ? std::string("no reason given") : SanitizeForTerminal(e.code);
    out += head + " waits: " + code + " — wants " + SanitizeForTerminal(e.wants) + "\n";
    if (e.reason != nullptr) {
      out += "  " + e.reason->meaning + "\n";
    } else if (!e.code.empty()) {
      out += "  Slurm's reason \"" + code +
             "\" is not in gpuwarden's catalog (Slurm 22.05's codes); see `man squeue`, JOB "
             "REASON CODES.\n";
    }
    for (const std::string& line : e.evidence) out += "  " + SanitizeForTerminal(line) + "\n";
    if (!e.must_end.empty()) {
      out += "  For it to start, on one of these nodes:\n";
      for (const std::string& line : e.must_end) out += "    " + SanitizeForTerminal(line) + "\n";
    }
    if (e.expected_start_unix_s) {
      out += "  Slurm expects it to start in " +
             FormatDuration(static_cast<double>(*e.expected_start_unix_s - now_unix_s)) +
             " (`squeue --start`).\n";
    } else if (!e.no_estimate_why.empty()) {
      out += "  Slurm has no start estimate: " + e.no_estimate_why + ".\n";
    }
    if (e.reason != nullptr) out += "  Next: " + e.reason->next + "\n";
  }
  return out;
}

namespace {

json NumberOrNull(const std::optional<double>& v) { return v ? json(*v) : json(nullptr); }

json FactorsJson(const std::optional<slurm::PriorityFactors>& f) {
  if (!f) return nullptr;
  return {{"priority", f->priority},
          {"site", f->site},
          {"age", f->age},
          {"association", f->association},
          {"fairshare", f->fairshare},
          {"job_size", f->job_size},
          {"partition", f->partition_factor},
          {"qos", f->qos},
          {"nice", f->nice},
          {"tres", f->tres.empty() ? json(nullptr) : JsonText(f->tres)}};
}

json LimitJson(const std::optional<slurm::LimitEvidence>& l) {
  if (!l) return nullptr;
  return {{"holder", JsonText(l->holder)},
          {"key", JsonText(l->key)},
          {"tres", l->tres.empty() ? json(nullptr) : JsonText(l->tres)},
          {"limit", NumberOrNull(l->limit)},
          {"used", NumberOrNull(l->used)},
          {"asks", NumberOrNull(l->asks)},
          {"running_jobs", l->running_jobs}};
}

}  // namespace

json SlurmWhyJson(const std::vector<PendingExplanation>& jobs) {
  json list = json::array();
  for (const PendingExplanation& e : jobs) {
    json reason = {
        {"code", e.code.empty() ? json(nullptr) : JsonText(e.code)},
        {"known", e.reason != nullptr},
        {"kind", e.reason ? json(slurm::WaitKindName(e.reason->kind)) : json(nullptr)},
        {"outlook", e.reason ? json(slurm::OutlookName(e.reason->outlook)) : json(nullptr)},
        {"meaning", e.reason ? json(e.reason->meaning) : json(nullptr)},
        {"next", e.reason ? json(e.reason->next) : json(nullptr)}};
    list.push_back({{"job_id", e.job_id},
                    {"user", JsonOrNull(e.user)},
                    {"job_name", JsonOrNull(e.job_name)},
                    {"state", JsonText(e.state)},
                    {"reason", std::move(reason)},
                    {"wants", JsonText(e.wants)},
                    {"evidence", JsonTextList(e.evidence)},
                    {"must_end", JsonTextList(e.must_end)},
                    {"expected_start_unix_s", JsonOrNull(e.expected_start_unix_s)},
                    {"no_estimate_why",
                     e.no_estimate_why.empty() ? json(nullptr) : JsonText(e.no_estimate_why)},
                    {"priority_factors", FactorsJson(e.priority_factors)},
                    {"limit", LimitJson(e.limit)}});
  }
  return {{"schema", kSlurmWhySchemaName},
          {"schema_version", kSlurmWhySchemaVersion},
          {"jobs", std::move(list)}};
}

}  // namespace gw::render
