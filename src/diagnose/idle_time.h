// Idle time: how long a GPU holder has been seen without GPU work, and how
// that was seen. "Idle for 10 minutes" is a measured quantity, never a
// guess from the process's age: a training run that pauses for a
// checkpoint sits at 0 % for a while and is live work all the same.
//
// Looks are read one at a time into an ActivityLog (ObserveLook): per
// holder (GPU, PID, start time) when it was first and last seen, the last
// look that saw it work, and since when it has been idle without a break.
// gpuwardend keeps one log for as long as it runs (a look a second) and
// serves it with its trends; `why` and `clean` make one from the looks of
// their own window. HolderIdleTime joins the two, and the GPU's own history
// (a GPU held and idle since 09:40 had every holder idle since then), into
// one IdleTime that names its source and how far that source could see.
//
// A look says "work" for a holder when the process's own SM figure is above
// 0 (where NVML gives per-process utilisation and it can be believed), or
// else when the GPU's utilisation is above idle; "idle" on the same figures
// at 0 / at or below idle; and "cannot tell" otherwise. Cannot tell breaks
// an idle run as work does: idle means seen idle. Pure: no clock, no I/O.
#ifndef GPUWARDEN_DIAGNOSE_IDLE_TIME_H_
#define GPUWARDEN_DIAGNOSE_IDLE_TIME_H_

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "core/snapshot.h"

namespace gw::diagnose {

struct DiagnoseOptions;

// Looks further apart than this do not join one idle run: what happened
// between them was not seen.
inline constexpr int64_t kIdleMaxGapMs = 30'000;

// What the looks so far saw of one holder's GPU work.
struct HolderActivity {
  unsigned gpu = 0;  // GPU index.
  pid_t pid = 0;
  Opt<uint64_t> start_ticks;  // With the PID, names one process for its whole life.
  int64_t first_seen_ms = 0;  // The first look that listed it.
  int64_t last_seen_ms = 0;   // The latest look that listed it.
  // The first look of the unbroken idle run that reaches last_seen_ms;
  // unset when the latest look saw work or could not tell.
  Opt<int64_t> idle_since_ms;
  Opt<int64_t> last_work_ms;  // The latest look that saw it do work.
  // Every look of the idle run read the process's own SM figure (else some
  // read only the GPU's utilisation).
  bool idle_per_process = true;
};

// The holders of a series of looks, keyed by (GPU index, PID).
struct ActivityLog {
  std::map<std::pair<unsigned, pid_t>, HolderActivity> holders;
  int64_t first_look_ms = 0;  // The first look read (0: none yet).
  int64_t last_look_ms = 0;
};

// Reads one look (looks in time order; an older one is ignored). A holder
// no longer listed on a GPU whose process list was read is forgotten; one
// whose GPU was not read is kept as it was.
void ObserveLook(ActivityLog& log, const Snapshot& look, const DiagnoseOptions& options);

// The log's holders, in (GPU, PID) order.
std::vector<HolderActivity> HoldersOf(const ActivityLog& log);

// How a holder's idle time was seen.
enum class IdleSource {
  kWindow,          // The looks of this command (`why`'s ~3 s window, --window, one look).
  kProcessHistory,  // gpuwardend's looks, each with the process's own SM figure.
  kGpuHistory,      // gpuwardend's looks or history where only the GPU's utilisation told.
};
std::string_view IdleSourceName(IdleSource source);  // "window", "process_history", "gpu_history"
// "this look's 3 s window", "gpuwardend's per-process history", ...
std::string IdleSourceText(IdleSource source);

// A GPU held and idle in every point of gpuwardend's history since this time
// (diagnose/trends.h GpuTrend::idle_held), up to as_of.
struct GpuIdleRun {
  int64_t since_ms = 0;
  bool open_start = false;  // The history reaches no further back.
};

// What gpuwardend's history says about the time before this look.
struct ActivityHistory {
  int64_t as_of_ms = 0;                     // Its latest look.
  std::vector<HolderActivity> holders;      // Its own looks, since it started.
  std::map<unsigned, GpuIdleRun> gpu_idle;  // By GPU index.
  // GPUs the history describes (a GPU absent here is not judged from it).
  std::vector<unsigned> gpus;
};

struct IdleTime {
  // The latest look saw it idle (else it saw work or could not tell, and
  // idle_s is 0).
  bool idle_now = false;
  double idle_s = 0;  // Seen without GPU work for this long, up to the latest look.
  double seen_s = 0;  // How long the source watched the holder.
  IdleSource source = IdleSource::kWindow;
  // Idle as far back as the source could see: it may have been idle longer.
  bool at_least = false;
  // Bounded by the process's age: idle since it started.
  bool whole_life = false;
  // Seconds before the latest look that work was last seen, when it was.
  Opt<double> last_work_ago_s;
};

// The idle time of the holder `pid` on GPU `gpu` as of `window`'s latest
// look: from the window's own log; extended back through `history`'s log
// (the same process: same start time where both know it) when the window
// saw it idle throughout and the history reaches the window (its last look
// at most kIdleMaxGapMs before the window's first); then through the GPU's
// idle run when the history's per-holder log saw it idle throughout too.
// Never longer than `age_s`. Unset when the window's log has no such holder.
Opt<IdleTime> HolderIdleTime(const ActivityLog& window, const ActivityHistory* history,
                             unsigned gpu, pid_t pid, Opt<uint64_t> start_ticks, Opt<double> age_s);

// "idle for 12m (gpuwardend's per-process history)", "idle for at least 3s
// (this look's window)", "did GPU work 40s ago (gpuwardend's per-process
// history)".
std::string IdleTimeText(const IdleTime& idle);

}  // namespace gw::diagnose

#endif  // GPUWARDEN_DIAGNOSE_IDLE_TIME_H_
