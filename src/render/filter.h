// Narrowing a Snapshot to some GPUs and/or some users, for `status --gpu/--user`.
#ifndef GPUWARDEN_RENDER_FILTER_H_
#define GPUWARDEN_RENDER_FILTER_H_

#include <string>
#include <vector>

#include "core/result.h"
#include "core/snapshot.h"

namespace gw::render {

struct SnapshotFilter {
  // GPU selectors; empty = all GPUs. Each is one of:
  //   an index ("0"), a UUID ("GPU-5d1f...", case-insensitive), or a PCI bus
  //   id in any usual spelling ("00000000:3B:00.0", "0000:3b:00.0", "3b:00.0";
  //   without a domain it matches that bus/device/function in any domain).
  std::vector<std::string> gpus;
  // User selectors; empty = all users. A user name, or a numeric uid (which
  // also matches a user literally named so).
  std::vector<std::string> users;
};

// Returns a copy of `snapshot` narrowed by `filter`:
//   - gpus: only the selected GPUs are kept (in their original order), with
//     the topology links among them and the errors that concern them (errors
//     without a GPU index are always kept). Host processes are kept when they
//     are listed on a kept GPU or hold a kept GPU's /dev/nvidia<minor>;
//     holders of only control files (/dev/nvidiactl, -uvm) cannot be tied to
//     a GPU and are dropped.
//   - users: every kept GPU stays (so the user sees where their processes
//     run, and which GPUs they have nothing on), but its process list keeps
//     only the selected users' processes; host processes likewise. A process
//     whose owner /proc did not report matches no user.
// Everything else (host, driver, time, timed_out, system.gpu_count) is kept.
// Errors: "malformed" for an empty selector, "not_found" for a GPU selector
// that matches no GPU; the message quotes the selector. A user selector that
// matches nothing is not an error (the user may simply have no processes).
Result<Snapshot> FilterSnapshot(const Snapshot& snapshot, const SnapshotFilter& filter);

}  // namespace gw::render

#endif  // GPUWARDEN_RENDER_FILTER_H_
