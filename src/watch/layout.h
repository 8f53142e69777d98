// The screen of `gpuwarden watch` as a pure function:
//   (model, history, rows, UI state, width, height) -> Screen.
// No terminal, no clock, no I/O: the same inputs always give the same cells,
// so the layout is tested at 80x24 and 200x60 from fixed snapshots.
//
// Top to bottom: a header (host, driver, GPUs, refresh, data time); a
// "driver not responding" alert while the driver does not answer; the
// server's verdict; per GPU its health marker and VRAM, utilisation,
// temperature and power, each as a bar, its value and a history sparkline;
// the process table; the top findings; the queue; a footer with the keys or
// the last message. Dialogs (help, confirmation, results) are drawn over it.
// Panels shrink in that order of need: with little height the GPUs take one
// line each, the findings and the queue one or two lines.
#ifndef GPUWARDEN_WATCH_LAYOUT_H_
#define GPUWARDEN_WATCH_LAYOUT_H_

#include <cstdint>
#include <string>
#include <vector>

#include "watch/history.h"
#include "watch/model.h"
#include "watch/rows.h"
#include "watch/screen.h"
#include "watch/ui_state.h"

namespace gw::watch {

struct ViewOptions {
  double interval_s = 1.0;  // The refresh (-n), for the header and the history's time span.
  bool readonly = false;
  // Block and box-drawing characters; false: ASCII only (a terminal whose
  // locale is not UTF-8).
  bool unicode = true;
  // Local time zone offset for the header clock, in seconds east of UTC;
  // passed in so that rendering stays pure.
  int64_t utc_offset_s = 0;
};

struct WatchView {
  const WatchModel& model;
  const History& history;
  const std::vector<ProcessRow>& rows;  // BuildRows(*model.snapshot, ui)
  ViewOptions options;
};

// Where each panel goes for a size. Rows are screen rows.
struct LayoutPlan {
  int width = 0;
  int height = 0;
  bool gpu_compact = false;  // One line per GPU.
  int metrics_per_line = 2;  // Full mode: metric cells per line (1, 2 or 4).
  int gpu_top = 0;
  int gpu_lines = 0;
  int gpus_shown = 0;  // GPUs that fit; the rest are counted in a note.
  int table_top = 0;   // The table's header row.
  int table_rows = 0;  // Process rows below it.
  int findings_top = 0;
  int findings_lines = 0;
  int queue_top = 0;
  int queue_lines = 0;
  int footer = 0;
};

// `ui` matters for the GPU filter, which narrows the GPU panel too.
LayoutPlan PlanLayout(const WatchView& view, const UiState& ui, int width, int height);

// The whole screen. `ui.scroll` should already fit the plan (FitScroll).
Screen Render(const WatchView& view, const UiState& ui, int width, int height);

// The help screen's lines (also in docs/watch.md).
std::vector<std::string> HelpLines(bool readonly);

// A sparkline of `metric` on `gpu` in `columns` cells, newest on the right.
// Each cell covers `bucket` consecutive samples (its largest known value);
// buckets are aligned to the sample count so that they do not shift while
// they fill. Values are scaled to [0, scale_max]; unknown cells are spaces.
std::string Sparkline(const History& history, unsigned gpu, Metric metric, int columns,
                      uint64_t bucket, double scale_max, bool unicode);

// Samples per sparkline cell so that `columns` cells cover what is held:
// 1, 2, 3, 5, 10, 15, 30, 60, ... (steps that read as whole seconds).
uint64_t BucketFor(size_t held, int columns);

// A horizontal bar of `columns` cells for `fraction` (0..1); eighths with
// Unicode, '#' and '.' without. Unknown: all empty.
std::string Bar(std::optional<double> fraction, int columns, bool unicode);

}  // namespace gw::watch

#endif  // GPUWARDEN_WATCH_LAYOUT_H_
