// Lookups in a Snapshot's Slurm section (Snapshot::slurm): the one place that
// joins a process's job id, or a GPU, to the job slurmctld reports there.
#ifndef GPUWARDEN_CORE_SLURM_LOOKUP_H_
#define GPUWARDEN_CORE_SLURM_LOOKUP_H_

#include <string>
#include <string_view>
#include <vector>

#include "core/snapshot.h"

namespace gw {

// The job `id` of this node, or nullptr: no Slurm section, Slurm not read,
// or no such job here (it may have ended since the process was read).
const SlurmJob* FindSlurmJob(const Snapshot& snapshot, std::string_view id);

// The jobs Slurm gave GPU `gpu` (Gpu::index), in the section's order; empty
// when none, or when the snapshot has no (readable) Slurm section.
std::vector<const SlurmJob*> SlurmJobsOnGpu(const Snapshot& snapshot, unsigned gpu);

// Whether the snapshot knows which jobs hold its GPUs: a Slurm section that
// was read. Without it "no job on this GPU" is unknown, not "none".
bool SlurmAllocationsKnown(const Snapshot& snapshot);

// "job 15 (alice, train)", "job 15 (alice)", "job 15": sanitised for a
// terminal, the name cut to 40 characters.
std::string DescribeSlurmJob(const SlurmJob& job);

}  // namespace gw

#endif  // GPUWARDEN_CORE_SLURM_LOOKUP_H_
