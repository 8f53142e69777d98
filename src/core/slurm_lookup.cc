#include "core/slurm_lookup.h"

#include <algorithm>

#include "core/text.h"

namespace gw {

const SlurmJob* FindSlurmJob(const Snapshot& snapshot, std::string_view id) {
  if (!SlurmAllocationsKnown(snapshot)) return nullptr;
  for (const SlurmJob& j : snapshot.slurm->jobs) {
    if (j.id == id) return &j;
  }
  return nullptr;
}

std::vector<const SlurmJob*> SlurmJobsOnGpu(const Snapshot& snapshot, unsigned gpu) {
  std::vector<const SlurmJob*> out;
  if (!SlurmAllocationsKnown(snapshot)) return out;
  for (const SlurmJob& j : snapshot.slurm->jobs) {
    if (std::find(j.gpus.begin(), j.gpus.end(), gpu) != j.gpus.end()) out.push_back(&j);
  }
  return out;
}

bool SlurmAllocationsKnown(const Snapshot& snapshot) {
  return snapshot.slurm.has_value() && !snapshot.slurm->unread.has_value();
}

std::string DescribeSlurmJob(const SlurmJob& job) {
  constexpr int kNameColumns = 40;
  std::string text = "job " + SanitizeForTerminal(job.id);
  std::vector<std::string> parts;
  if (job.user) parts.push_back(SanitizeForTerminal(*job.user));
  if (job.name && !job.name->empty()) {
    parts.push_back(TruncateToWidth(SanitizeForTerminal(*job.name), kNameColumns));
  }
  if (!parts.empty()) {
    text += " (" + parts[0];
    for (size_t i = 1; i < parts.size(); ++i) text += ", " + parts[i];
    text += ")";
  }
  return text;
}

}  // namespace gw
