// Slurm rules: on a Slurm node (Snapshot::slurm read), which GPUs Slurm gave
// to running jobs, and processes that use a GPU their job was not given.
#include <algorithm>
#include <set>

#include <fmt/format.h>

#include "core/slurm_lookup.h"
#include "core/units.h"
#include "diagnose/rule_context.h"

namespace gw::diagnose::internal {
namespace {

bool IsCompute(const GpuProcess& p) { return p.type != GpuProcessType::kGraphics; }

std::string JobList(const std::vector<const SlurmJob*>& jobs) {
  std::string text;
  for (const SlurmJob* j : jobs) text += (text.empty() ? "" : ", ") + DescribeSlurmJob(*j);
  return text;
}

}  // namespace

void RuleSlurmAllocated(const RuleContext& ctx, std::vector<Finding>& out) {
  const Snapshot& latest = ctx.latest();
  if (!SlurmAllocationsKnown(latest)) return;
  for (const Gpu& gpu : latest.gpus) {
    const std::vector<const SlurmJob*> jobs = SlurmJobsOnGpu(latest, gpu.index);
    if (jobs.empty()) continue;
    // Its own processes on the GPU: the job uses what it was given.
    std::vector<pid_t> own;
    for (const GpuProcess& p : gpu.processes) {
      const HostProcess* host = FindHost(latest, p.pid);
      if (host == nullptr || !host->owner.slurm_job_id) continue;
      for (const SlurmJob* j : jobs) {
        if (j->id == *host->owner.slurm_job_id) own.push_back(p.pid);
      }
    }
    std::sort(own.begin(), own.end());
    std::string use;
    if (!own.empty()) {
      use = fmt::format("; {} of its processes {} on it", own.size(),
                        own.size() == 1 ? "runs" : "run");
    } else if (gpu.processes_known && gpu.processes.empty()) {
      use = "; none of its processes is on it";
    }
    Finding f = MakeFinding(
        "SLURM_ALLOCATED", {gpu.index}, own,
        fmt::format("GPU {} is allocated by Slurm to {}{}", gpu.index, JobList(jobs), use), 1);
    for (const SlurmJob* j : jobs) {
      f.evidence.push_back(TextEvidence("slurm_job", DescribeSlurmJob(*j)));
      if (j->state) f.evidence.push_back(TextEvidence("slurm_job_state", Safe(*j->state)));
      if (j->start_time_unix_s && *j->start_time_unix_s * 1000 <= latest.time_unix_ms) {
        const double age = static_cast<double>(latest.time_unix_ms / 1000 - *j->start_time_unix_s);
        f.evidence.push_back(NumberEvidence("slurm_job_running", age, "s", FormatDuration(age)));
      }
      auto at = std::find(j->gpus.begin(), j->gpus.end(), gpu.index);
      if (at != j->gpus.end()) {
        const size_t k = static_cast<size_t>(at - j->gpus.begin());
        if (k < j->gres_indexes.size()) {
          f.evidence.push_back(NumberEvidence("slurm_gres_index", j->gres_indexes[k], "index",
                                              fmt::format("{}", j->gres_indexes[k])));
        }
      }
    }
    f.evidence.push_back(TextEvidence("slurm_node", Safe(latest.slurm->name)));
    f.evidence.push_back(TextEvidence("slurm_gpu_map", latest.slurm->gpu_map));
    AddCatalogSteps(f, {.job = jobs.front()->id});
    out.push_back(std::move(f));
  }
}

void RuleSlurmOutsideAllocation(const RuleContext& ctx, std::vector<Finding>& out) {
  const Snapshot& latest = ctx.latest();
  if (!SlurmAllocationsKnown(latest) || !latest.processes_scanned) return;
  // Only on a map read from slurmd with every index matched: a guessed or
  // partial map must not accuse a process of using what its job was given.
  if (latest.slurm->gpu_map != "device files" || !latest.slurm->notes.empty()) return;
  for (const Gpu& gpu : latest.gpus) {
    const std::vector<const SlurmJob*> jobs = SlurmJobsOnGpu(latest, gpu.index);
    for (const GpuProcess& p : gpu.processes) {
      if (!IsCompute(p)) continue;
      const HostProcess* host = FindHost(latest, p.pid);
      // Unknown is not "outside": a process whose cgroup and parents could
      // not be read may well be the job's.
      if (host == nullptr || !host->readable) continue;
      const Opt<std::string>& job_id = host->owner.slurm_job_id;
      const bool given = job_id && std::any_of(jobs.begin(), jobs.end(),
                                               [&](const SlurmJob* j) { return j->id == *job_id; });
      if (given) continue;
      // A process of no job on a GPU no job holds is the node's own business
      // (a monitoring agent, an administrator's test).
      if (!job_id && jobs.empty()) continue;
      const std::string who = ProcessText(latest, p.pid, host, &p);
      std::string whose = jobs.empty() ? "no job" : JobList(jobs);
      std::string message;
      if (job_id) {
        const SlurmJob* own = FindSlurmJob(latest, *job_id);
        std::string given_text = "Slurm gave it no GPU here";
        if (own != nullptr && !own->gpus.empty()) {
          given_text = "Slurm gave it GPU " + GpuList(own->gpus);
        }
        message = fmt::format("{} of Slurm job {} uses GPU {}, which Slurm gave to {} ({})", who,
                              Safe(*job_id), gpu.index, whose, given_text);
      } else {
        message = fmt::format("{} runs outside Slurm on GPU {}, which Slurm gave to {}", who,
                              gpu.index, whose);
      }
      Finding f = MakeFinding("SLURM_OUTSIDE_ALLOCATION", {gpu.index}, {p.pid}, message,
                              p.used_memory_bytes ? Gib(*p.used_memory_bytes) : 0);
      f.evidence.push_back(TextEvidence("process", who));
      if (p.used_memory_bytes) f.evidence.push_back(BytesEvidence("held", *p.used_memory_bytes));
      f.evidence.push_back(
          TextEvidence("process_slurm_job", job_id ? Safe(*job_id) : std::string("none")));
      f.evidence.push_back(TextEvidence("gpu_slurm_jobs", whose));
      AddCatalogSteps(f, {.pid = p.pid});
      out.push_back(std::move(f));
    }
  }
}

}  // namespace gw::diagnose::internal
