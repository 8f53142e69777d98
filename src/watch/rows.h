// The process table of `gpuwarden watch`: one row per (GPU, process) that
// the driver lists, plus the processes that hold a GPU's device file without
// being listed; filtered by user and GPU, sorted, and optionally grouped as a
// tree (a run's parent above its workers). Pure functions of a Snapshot and
// the UI state.
#ifndef GPUWARDEN_WATCH_ROWS_H_
#define GPUWARDEN_WATCH_ROWS_H_

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/snapshot.h"
#include "watch/ui_state.h"

namespace gw::watch {

struct ProcessRow {
  pid_t pid = 0;
  std::string gpu;  // "0", "0,3" (a holder of several device files), "-" (unknown).
  std::optional<unsigned> gpu_index;  // The GPU of a driver-listed row.
  std::string user;                   // Sanitised; "?" when /proc did not say.
  std::optional<uid_t> uid;
  std::optional<uint64_t> vram_bytes;
  std::optional<unsigned> sm_pct;
  std::optional<double> cpu_pct;
  std::optional<double> age_s;
  std::optional<ProcessState> state;
  std::string command;  // Sanitised command line, "[comm]", or why it is unknown.
  bool listed = true;   // False: holds a device file, not listed by the driver.
  bool in_proc = true;  // False: the driver lists a PID that /proc does not show.

  // Tree view: 0 for a top row, 1 for a worker under its run's parent.
  int depth = 0;
  // A run's parent that holds no GPU itself, shown to group its workers
  // (its VRAM and SM are its workers' sum and maximum).
  bool group = false;
  // What stopping this row stops: the process, with its run for a group.
  bool stop_tree = false;
};

// The rows for `snapshot` under the filters, sort and tree setting of `ui`.
std::vector<ProcessRow> BuildRows(const Snapshot& snapshot, const UiState& ui);

}  // namespace gw::watch

#endif  // GPUWARDEN_WATCH_ROWS_H_
