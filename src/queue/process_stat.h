// What a process's stat state letter (proc::StatFields::state, read with
// proc::ProcReader::ReadStat) says about the queue's processes.
#ifndef GPUWARDEN_QUEUE_PROCESS_STAT_H_
#define GPUWARDEN_QUEUE_PROCESS_STAT_H_

#include <sys/types.h>

namespace gw::queue {

// A process that has ended but is not yet reaped (or is being torn down).
inline bool IsZombie(char state) { return state == 'Z' || state == 'X' || state == 'x'; }

}  // namespace gw::queue

#endif  // GPUWARDEN_QUEUE_PROCESS_STAT_H_
