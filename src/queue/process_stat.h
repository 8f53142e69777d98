// The runner's one read of /proc/PID/stat (start time, state, parent,
// process group), through the proc root a ProcReader was made for.
//
// MERGE(h-os): ProcReader gains `Result<StatFields> ReadStat(pid_t) const` on
// branch h-os. At merge, ReadProcessStat(procs, pid) becomes
// procs.ReadStat(pid) (process_stat.cc goes away; IsZombie stays here or
// moves beside ProcessState in proc/proc_parse.h).
#ifndef GPUWARDEN_QUEUE_PROCESS_STAT_H_
#define GPUWARDEN_QUEUE_PROCESS_STAT_H_

#include <sys/types.h>

#include "core/result.h"
#include "proc/proc_parse.h"
#include "proc/proc_reader.h"

namespace gw::queue {

// <proc root>/PID/stat, parsed. Errors: "not_found" (no such process),
// "malformed", "io".
Result<proc::StatFields> ReadProcessStat(const proc::ProcReader& procs, pid_t pid);

// A process that has ended but is not yet reaped (or is being torn down).
inline bool IsZombie(char state) { return state == 'Z' || state == 'X' || state == 'x'; }

}  // namespace gw::queue

#endif  // GPUWARDEN_QUEUE_PROCESS_STAT_H_
