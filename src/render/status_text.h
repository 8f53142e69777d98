// `gpuwarden status` for a person: every GPU and every process that holds one,
// in one screen.
#ifndef GPUWARDEN_RENDER_STATUS_TEXT_H_
#define GPUWARDEN_RENDER_STATUS_TEXT_H_

#include <string>

#include "core/snapshot.h"

namespace gw::render {

struct TextOptions {
  bool color = false;    // ANSI colours; when false the output holds no ESC byte at all.
  int width = 100;       // Terminal columns; no line is wider (by display width).
  bool verbose = false;  // Under a warning about processes, every one of their PIDs.
};

// Renders `snapshot` as text, one '\n'-terminated line after another:
//   1. a header: host, driver/CUDA/NVML versions, GPU count, time (UTC); a
//      `SIMULATED server (scenario FILE)` line for the simulator, an
//      `offline: nvidia-smi dump FILE` line for an XML dump;
//   2. `! ...` lines for a timed-out probe and every probe error (verbose:
//      then the PIDs of every process it is about);
//   3. per GPU: identity and sensors, a VRAM and a utilisation bar, markers
//      (unreachable/lost with the reason, MIG, ECC, remap, slowdown), then its
//      processes (PID, user, VRAM, SM %, age, state, owner tags, command),
//      and a note for /dev/nvidia<N> holders the driver does not list;
//   4. the unlisted device-file holders, each once;
//   5. per-user totals over all GPUs.
// Unknown values print `N/A`, never 0. Text from other processes is
// sanitised (gw::SanitizeForTerminal) and lines are cut to `width` without
// splitting a character. Pure: same Snapshot and options, same string.
std::string RenderStatusText(const Snapshot& snapshot, const TextOptions& options);

}  // namespace gw::render

#endif  // GPUWARDEN_RENDER_STATUS_TEXT_H_
