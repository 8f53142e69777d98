// `gpuwarden why` for a person: the verdict first, then each GPU's verdict,
// the findings ranked with their evidence and next steps, who holds what, and
// what was looked at.
#ifndef GPUWARDEN_RENDER_WHY_TEXT_H_
#define GPUWARDEN_RENDER_WHY_TEXT_H_

#include <string>
#include <vector>

#include "core/snapshot.h"
#include "diagnose/trends.h"
#include "diagnose/verdict.h"

namespace gw::render {

struct WhyTextOptions {
  bool color = false;    // ANSI colours; when false the output holds no ESC byte at all.
  int width = 100;       // Terminal columns; no line is wider (by display width).
  bool verbose = false;  // Every finding with every step; default: the top ones, 2 steps each.
  unsigned samples = 1;  // Snapshots judged.
  double window_s = 0;   // Time from the first to the last of them.
  // Kernel-log sources read ("kmsg", "journal", a file); empty: not read.
  std::vector<std::string> kernel_log_sources = {};
  // Why the kernel log was not read, when it was not ("kernel log not read
  // (simulated server)"); empty: the generic "kernel log not read".
  std::string kernel_log_note = {};
  // gpuwardend's history, when it was read (null: no daemon, --no-history),
  // and why it was not used when the daemon was there.
  const diagnose::Trends* trends = nullptr;
  std::string trends_note = {};
};

// How many findings the compact view shows, and how many steps each.
inline constexpr size_t kWhyCompactFindings = 5;
inline constexpr size_t kWhyCompactSteps = 2;

// Renders the diagnosis, one '\n'-terminated line after another:
//   1. `VERDICT — summary`, coloured by the verdict;
//   2. one line per GPU (GpuVerdict::line);
//   3. the findings in the diagnosis's (ranked) order: a severity marker
//      (`✗` critical, `!` warning, `·` info), the code and the message, the
//      evidence (`name: value`), `next:` steps and who acts; compact unless
//      verbose, with a line saying how many were left out;
//   4. per-user holdings (GPUs, VRAM, idle VRAM);
//   5. with gpuwardend's history, "Over time:": since when GPUs have sat held
//      and idle or full, and how the queue moved over the last hour;
//   6. a footer: samples and window (or the offline dump / simulator) and the
//      kernel-log sources, or "kernel log not read".
// Text from other processes is sanitised; lines are cut or wrapped to `width`.
// Pure.
std::string RenderWhyText(const diagnose::Diagnosis& diagnosis, const Snapshot& latest,
                          const WhyTextOptions& options);

}  // namespace gw::render

#endif  // GPUWARDEN_RENDER_WHY_TEXT_H_
