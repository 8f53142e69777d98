// From findings to verdicts: per GPU and for the server, one-line summaries,
// findings ranked by impact, and what each user holds.
//
// Verdict order: FAULT beats DEGRADED beats BUSY / RECLAIMABLE beats OK;
// UNKNOWN when nothing could be looked at. A GPU is RECLAIMABLE when what
// makes it busy is held by idle, orphaned, zombie or invisible holders, BUSY
// when it is genuine use. A healthy server is OK with no warnings.
#ifndef GPUWARDEN_DIAGNOSE_VERDICT_H_
#define GPUWARDEN_DIAGNOSE_VERDICT_H_

#include <sys/types.h>

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/snapshot.h"
#include "diagnose/finding.h"
#include "diagnose/rules.h"
#include "kmsg/kernel_event.h"

namespace gw::diagnose {

struct GpuVerdict {
  unsigned index = 0;
  Verdict verdict = Verdict::kOk;
  // "GPU 3 FAULT — fell off the bus (Xid 79) [XID_FATAL, GPU_LOST]".
  std::string line;
  std::vector<size_t> findings;    // Indices into the ranked findings about this GPU.
  uint64_t reclaimable_bytes = 0;  // Held by idle, orphaned, zombie or invisible holders.
  // What it is doing (docs/diagnosis.md "GPU states"); the verdict follows from
  // it, except that with a stated need a GPU without room for it is BUSY for
  // the caller whatever its state.
  GpuState state = GpuState::kFree;
  // Its room for new work: free memory and compute headroom (100 − utilisation),
  // when known.
  Opt<uint64_t> room_free_bytes;
  Opt<double> room_compute_free_pct;
};

// What one user holds on the latest snapshot (driver-listed processes).
struct UserHolding {
  std::string user;  // "alice", "uid 1001", or "?" when /proc did not say.
  Opt<uid_t> uid;
  std::vector<unsigned> gpus;  // Ascending.
  // The GPUs of `gpus` on which every process of the user is an idle,
  // orphaned or zombie holder (held, but no work done), ascending.
  std::vector<unsigned> idle_gpus;
  std::vector<pid_t> pids;       // Ascending.
  uint64_t vram_bytes = 0;       // Sum of known per-process memory.
  uint64_t idle_vram_bytes = 0;  // Part of it in IDLE, ORPHAN and ZOMBIE holders.
  unsigned memory_unknown = 0;   // Process entries whose memory is unknown.
};

struct Diagnosis {
  // With a stated need (options.need) this answers the need first: OK (fits
  // now), RECLAIMABLE (fits once idle holders are freed), BUSY (not now:
  // work holds the room), FAULT / DEGRADED / UNKNOWN (the GPUs it needs are
  // broken or unreadable, or it cannot be checked), NEVER_FITS (not on this
  // server even when every GPU is empty and healthy).
  Verdict server = Verdict::kUnknown;
  std::string summary;  // "BUSY — resource shortage: 7/8 GPUs ≥ 95 % VRAM; ..."
  std::vector<GpuVerdict> gpus;
  std::vector<Finding> findings;   // Ranked (RankFindings).
  std::vector<UserHolding> users;  // Most VRAM first.
};

// The whole diagnosis of `history` (oldest first). Empty history: UNKNOWN.
Diagnosis Diagnose(std::span<const Snapshot> history, const DiagnoseOptions& options,
                   std::span<const kmsg::KernelEvent> kernel_events = {});

// The pieces, for renderers and tests.

// Sorts by the verdict a finding implies (FAULT first), then severity, then
// impact (higher first), then code, GPUs and PIDs, so the order is stable.
void RankFindings(std::vector<Finding>& findings);

// One verdict per GPU of `latest`, from the ranked findings.
std::vector<GpuVerdict> JudgeGpus(const Snapshot& latest, std::span<const Finding> ranked,
                                  const DiagnoseOptions& options);

// The server's verdict.
Verdict JudgeServer(const Snapshot& latest, std::span<const GpuVerdict> gpus,
                    std::span<const Finding> ranked, const DiagnoseOptions& options);

// "FAULT — hardware: GPU 3 fell off the bus (Xid 79); 7 other GPUs OK",
// "BUSY — resource shortage: 7/8 GPUs ≥ 95 % VRAM; 2 idle holders could free 38.0 GiB",
// "OK — 8 GPUs healthy, none busy".
std::string ServerSummary(Verdict server, std::span<const GpuVerdict> gpus,
                          std::span<const Finding> ranked, const DiagnoseOptions& options);

// Per-user holdings of `latest`, most VRAM first, then by user.
std::vector<UserHolding> ComputeUserHoldings(const Snapshot& latest,
                                             std::span<const Finding> findings);

}  // namespace gw::diagnose

#endif  // GPUWARDEN_DIAGNOSE_VERDICT_H_
