// ProbeNvml: one look at the GPUs through NVML that never hangs the caller,
// and in which one wedged GPU costs that GPU only.
//
// All NVML work (dlopen, nvmlInit, every query, nvmlShutdown) runs on a worker
// thread; the caller waits until it is done or the deadline passes, whichever
// comes first. After nvmlInit and the system facts (versions, GPU count) each
// GPU is read on a thread of its own, all at once (NVML is thread-safe), each
// under the look's one deadline; the topology of a pair of GPUs is asked as
// soon as both are read. Every thread publishes progress as it goes, so on a
// deadline the caller gets everything read so far, Snapshot::timed_out, and a
// ProbeError {source "nvml", code "timeout"} for each call in flight
// ("driver not responding: nvmlDeviceGetMemoryInfo_v2 on GPU 2 did not return
// within 2.0 s"). The GPU such a call was about carries that error in
// Gpu::unreachable (with what was read before it): its own call did not
// return. The other GPUs are read all the same. A GPU that was never tried —
// the look's own call (loading, nvmlInit, the count) did not return first, no
// thread could be started for it (error code "thread_failed" naming it), or
// the deadline came before its thread began — has nothing read and no
// unreachable: it is not blamed for another call's hang.
//
// Abandoned, not cancelled: a thread stuck in the driver (D state) cannot be
// stopped. The worker is detached and owns all it touches through
// shared_ptr, so nothing dangles when ProbeNvml returns; a GPU's thread that
// ever comes back stops at its next call, and once every GPU's thread has
// ended the worker shuts NVML down and ends (it counts in
// ProbeWorkersRunning() until then). A process that saw a timeout must not
// run static destructors or unload libraries under such a thread: end it
// with ExitProcess below (std::quick_exit when a worker is still running).
#ifndef GPUWARDEN_NVML_PROBE_H_
#define GPUWARDEN_NVML_PROBE_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "core/clock.h"
#include "core/result.h"
#include "core/snapshot.h"
#include "nvml/nvml_api.h"

namespace gw::nvml {

struct ProbeOptions {
  // The library to dlopen; empty = "libnvidia-ml.so.1". The CLI passes
  // ResolveLibraryPath() (nvml_library.h), which honours GPUWARDEN_NVML_LIB.
  std::string library_path;
  // For the whole probe, loading the library included. Real (steady) time: a
  // fake clock cannot make a stuck driver return.
  int64_t deadline_ms = 2000;
  // lastSeenTimeStamp for per-process utilisation samples (CPU µs); 0 = all.
  uint64_t process_samples_since_us = 0;
};

struct ProbeResult {
  Snapshot snapshot;
};

// Never throws, never crashes on a missing or broken library. The snapshot's
// time_unix_ms comes from `clock`; probe_duration_ms is measured in real time.
// source is kSimulated (source_detail: the scenario file) when
// $GPUWARDEN_SIM_SCENARIO is set, else kNvml (source_detail: the library path).
// Failures to load or initialise appear as one ProbeError: library_not_found
// (path and dlerror text), driver_not_loaded, version_mismatch, no_permission
// or nvml_error.
ProbeResult ProbeNvml(const ProbeOptions& options, const Clock& clock);

// Loads the NVML implementation for a path; runs on the worker thread. The
// default is NvmlLibrary::Open. Tests pass one that returns a fake.
using NvmlOpener = std::function<Result<std::shared_ptr<NvmlApi>>(const std::string& path)>;

// ProbeNvml with another opener; everything else as above.
ProbeResult ProbeNvml(const ProbeOptions& options, const Clock& clock, NvmlOpener open);

// ProbeSession: looks at the GPUs again and again with NVML loaded and
// initialised once, for callers that look often (gpuwardend every --poll-ms,
// `gpuwarden watch` every second). nvmlInit costs from milliseconds to
// seconds (a driver without persistence mode sets every GPU up), and a fresh
// ProbeNvml per look would pay it every time.
//
// Each Probe() keeps ProbeNvml's contract: it returns by its deadline with
// what was read, timed_out and the calls in flight. One worker thread makes
// the looks' own calls (load, init, system facts, topology) in turn, and each
// GPU has one reader thread, kept between looks, so a wedged GPU holds one
// thread however many looks ask. A look whose GPU's reader is still stuck in
// a call of an earlier look does not wait for it: that GPU is reported at
// once as still stuck in that call (Gpu::unreachable, "... (and is still in
// the driver)", timed_out) while the other GPUs are read; the look is done as
// soon as they are. A look that finds the worker itself still stuck in the
// driver (init, the count) waits for it until its own deadline, then reports
// that call, and lists the GPUs of the last look that listed them as not
// tried. When a look says the driver changed under the session (NVML
// uninitialised, driver unloaded, library/driver version mismatch) or loading
// or nvmlInit failed, a later look loads and initialises again (once no GPU's
// reader is inside NVML). Each thread counts in ProbeWorkersRunning() only
// while it serves a look. The destructor shuts NVML down unless a thread is
// stuck, in which case it is left to end on its own (as ProbeNvml leaves a
// stuck thread), and NVML is shut down after it ends.
class ProbeSession {
 public:
  explicit ProbeSession(ProbeOptions options);
  ProbeSession(ProbeOptions options, NvmlOpener open);
  ~ProbeSession();
  ProbeSession(const ProbeSession&) = delete;
  ProbeSession& operator=(const ProbeSession&) = delete;

  // One look; `process_samples_since_us` as ProbeOptions' (the session's
  // option is the default when 0 is passed).
  ProbeResult Probe(const Clock& clock, uint64_t process_samples_since_us = 0);

  struct Shared;  // With the worker thread.

 private:
  ProbeOptions options_;
  std::shared_ptr<Shared> shared_;
};

// Probe threads still running: ProbeNvml's workers (until their GPUs' threads
// end), a session's worker or GPU readers while they serve a look — stuck in
// the driver after a timeout, or about to finish. At most one per GPU and one
// per session or ProbeNvml call is ever stuck.
int ProbeWorkersRunning();

// Waits until no probe worker runs or `timeout_ms` passes; true when none runs.
// For tests that must not start the next probe while the last one still holds
// NVML initialised.
bool WaitForProbeWorkers(int64_t timeout_ms);

// Ends the process with `status`. Flushes stdio, then uses std::exit when no
// probe worker runs, std::quick_exit when one might still be inside the driver
// (static destructors and library finalisers would run under its feet; exit
// could also wait on locks it holds).
[[noreturn]] void ExitProcess(int status);

}  // namespace gw::nvml

#endif  // GPUWARDEN_NVML_PROBE_H_
