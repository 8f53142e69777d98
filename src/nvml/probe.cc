#include "nvml/probe.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "nvml/nvml_collector.h"
#include "nvml/nvml_library.h"

namespace gw::nvml {
namespace {

// Counts running workers for ExitProcess and WaitForProbeWorkers. Leaked on
// purpose: a stuck worker may touch it after static destructors would have run.
struct WorkerRegistry {
  std::mutex mu;
  std::condition_variable idle_cv;
  int running = 0;
};

WorkerRegistry& Registry() {
  static auto* registry = new WorkerRegistry;
  return *registry;
}

// Counted by the caller before the thread exists, so ProbeWorkersRunning never
// misses a worker that has not been scheduled yet; released by the worker.
void WorkerStarting() {
  std::lock_guard<std::mutex> lock(Registry().mu);
  ++Registry().running;
}

struct WorkerFinished {
  WorkerFinished() = default;
  WorkerFinished(const WorkerFinished&) = delete;
  WorkerFinished& operator=(const WorkerFinished&) = delete;
  ~WorkerFinished() {
    std::lock_guard<std::mutex> lock(Registry().mu);
    if (--Registry().running == 0) Registry().idle_cv.notify_all();
  }
};

}  // namespace

// A call in flight, published by the thread that makes it.
struct InFlight {
  const char* call = nullptr;  // kLoading, an NVML symbol name (static storage), or null.
  std::optional<unsigned> gpu;
  std::optional<unsigned> other_gpu;
};

// One GPU's part of a look, read on a thread of its own.
struct GpuSlot {
  enum class Phase {
    kQueued,      // Handed to its reader, which has made no call yet.
    kReading,     // Its reader is at work (or stuck in a call).
    kFinished,    // Its reader is done with it (read, or stopped).
    kStuck,       // Not tried: its reader is still stuck in a call of an earlier look.
    kNotStarted,  // Not tried: no thread could be started to read it.
  };
  Phase phase = Phase::kQueued;
  InFlight in_flight;
  std::vector<ProbeError> errors;
  NvmlCollector::GpuExtras extras;
  // kStuck: the call its reader is still in, as a timeout error.
  std::optional<ProbeError> stuck;
};

// What the caller and the threads of one look share (outside the unnamed
// namespace: it is named by ProbeSession::Shared, which the header declares).
// Every thread holds `mu` whenever it is not inside a call that may block
// (dlopen or an NVML call), so the caller, taking `mu` at the deadline,
// always sees a consistent look and every call that is holding things up.
struct ProbeState {
  std::mutex mu;
  // Signalled when the look is done, abandoned, or a GPU's reader finished.
  std::condition_variable cv;
  bool done = false;       // The snapshot is complete.
  bool abandoned = false;  // The caller gave up; every thread stops at its next call.
  // The system facts, then the GPUs in enumeration order: each reader writes
  // only its own GPU. Errors of the GPUs and the topology are kept apart
  // (slots, topology_errors) and merged in order when the look is handed over.
  Snapshot snapshot;
  InFlight in_flight;          // The look's own calls: load, init, system, topology.
  std::vector<GpuSlot> slots;  // By enumeration position, once the count is known.
  // By pair of positions, so their order does not depend on which GPU answered first.
  std::map<std::pair<unsigned, unsigned>, TopologyLink> topology;
  std::map<std::pair<unsigned, unsigned>, std::vector<ProbeError>> topology_errors;
  CollectorOptions options;
  std::shared_ptr<NvmlApi> api;  // For the GPUs' readers.
  uint64_t generation = 0;       // Which initialisation of NVML the handles belong to.
};

namespace {

constexpr char kLoading[] = "dlopen";

// Releases the look's lock for exactly the duration of each NVML call, and
// publishes the call in `in_flight` meanwhile.
class PublishingObserver final : public CallObserver {
 public:
  PublishingObserver(ProbeState& state, InFlight& in_flight, std::unique_lock<std::mutex>& lock,
                     const NvmlApi& api)
      : state_(state), in_flight_(in_flight), lock_(lock), api_(api) {}

  bool BeforeCall(EntryPoint ep, std::optional<unsigned> gpu,
                  std::optional<unsigned> other_gpu) override {
    if (state_.abandoned) return false;
    in_flight_ = InFlight{api_.SymbolName(ep), gpu, other_gpu};
    lock_.unlock();
    return true;
  }
  void AfterCall() override {
    lock_.lock();
    in_flight_.call = nullptr;
  }

 private:
  ProbeState& state_;
  InFlight& in_flight_;
  std::unique_lock<std::mutex>& lock_;
  const NvmlApi& api_;
};

std::string TimeoutMessage(const InFlight& in_flight, const std::string& path,
                           int64_t deadline_ms) {
  std::string what;
  if (in_flight.call == kLoading) {
    what = fmt::format("loading {} did not finish", path);
  } else if (in_flight.call != nullptr) {
    what = in_flight.call;
    if (in_flight.gpu && in_flight.other_gpu) {
      what += fmt::format(" on GPU {} and GPU {}", *in_flight.gpu, *in_flight.other_gpu);
    } else if (in_flight.gpu) {
      what += fmt::format(" on GPU {}", *in_flight.gpu);
    }
    what += " did not return";
  } else {
    what = "the NVML probe did not finish";
  }
  return fmt::format("driver not responding: {} within {:.1f} s", what, deadline_ms / 1000.0);
}

// Reads GPU `position` of the look on the calling thread (the GPU's reader);
// MarkGpuRead then says it is done with it. `statics` is the reader's own
// (null: none kept).
void ReadGpuOfLook(ProbeState& state, unsigned position, StaticFacts* statics) {
  std::unique_lock<std::mutex> lock(state.mu);
  GpuSlot& slot = state.slots[position];
  slot.phase = GpuSlot::Phase::kReading;
  try {
    PublishingObserver observer(state, slot.in_flight, lock, *state.api);
    NvmlCollector collector(*state.api, state.options, &observer, statics);
    collector.CollectGpu(position, &state.snapshot.gpus[position], &slot.extras, &slot.errors);
  } catch (const std::exception& e) {
    // Nothing may escape a thread; the lock is held again (AfterCall) unless
    // the call itself threw.
    if (!lock.owns_lock()) lock.lock();
    slot.in_flight.call = nullptr;
    slot.errors.push_back(ProbeError{"probe", "internal",
                                     fmt::format("reading GPU {} failed: {}", position, e.what()),
                                     position, std::nullopt});
  }
}

void MarkGpuRead(ProbeState& state, unsigned position) {
  std::lock_guard<std::mutex> lock(state.mu);
  state.slots[position].phase = GpuSlot::Phase::kFinished;
  state.cv.notify_all();
}

// The body of one of ProbeNvml's GPU threads.
void ReadGpuOnce(ProbeState& state, unsigned position) {
  ReadGpuOfLook(state, position, nullptr);
  MarkGpuRead(state, position);
}

// Starts the readers of a look's GPUs (state.slots is sized); called with
// the look's lock not held. Marks a GPU it cannot hand over kStuck or
// kNotStarted.
using Dispatcher = std::function<void(ProbeState& state)>;

// Gives the look its GPUs' readers and waits for them, asking the topology
// of each pair of GPUs as soon as both are read, until every reader
// finished (then the look is done) or the caller abandoned it. Holds `lock`
// (on state.mu) on entry and return. False when abandoned.
bool ReadGpusOfLook(ProbeState& state, std::unique_lock<std::mutex>& lock, NvmlCollector& collector,
                    const Dispatcher& dispatch) {
  const auto count = static_cast<unsigned>(state.snapshot.gpus.size());
  state.slots.resize(count);
  lock.unlock();
  dispatch(state);
  lock.lock();
  std::vector<bool> paired(count, false);
  std::vector<unsigned> read;  // Positions read and paired, in the order they finished.
  for (;;) {
    if (state.abandoned) return false;
    for (unsigned p = 0; p < count && !state.abandoned; ++p) {
      if (state.slots[p].phase != GpuSlot::Phase::kFinished || paired[p]) continue;
      paired[p] = true;
      for (unsigned q : read) {
        const unsigned a = std::min(p, q), b = std::max(p, q);
        // The readers of both are done: nothing else touches these GPUs.
        std::vector<ProbeError> errors;
        auto link =
            collector.CollectTopology(state.snapshot.gpus[a], state.slots[a].extras,
                                      state.snapshot.gpus[b], state.slots[b].extras, &errors);
        if (link) state.topology[{a, b}] = *link;
        if (!errors.empty()) state.topology_errors[{a, b}] = std::move(errors);
      }
      read.push_back(p);
    }
    if (state.abandoned) return false;
    // Looked at again without letting go of the lock: a topology call above
    // released it, and a reader that finished meanwhile has already
    // signalled (waiting now for that signal would wait for ever).
    bool waiting = false, unpaired = false;
    for (unsigned p = 0; p < count; ++p) {
      const GpuSlot::Phase phase = state.slots[p].phase;
      waiting = waiting || phase == GpuSlot::Phase::kQueued || phase == GpuSlot::Phase::kReading;
      unpaired = unpaired || (phase == GpuSlot::Phase::kFinished && !paired[p]);
    }
    if (unpaired) continue;
    if (!waiting) return true;
    state.cv.wait(lock);
  }
}

// The look's snapshot as the caller gets it, from a lock holder: the look's
// own errors, then each GPU's in GPU order, then the topology's by pair.
// `path` and `deadline_ms` name the calls still in flight when `timed_out`
// (the caller's deadline passed): the GPU whose call did not return carries
// it in Gpu::unreachable, with what was read before it.
Snapshot AssembleLook(const ProbeState& state, bool timed_out, const std::string& path,
                      int64_t deadline_ms) {
  Snapshot out = state.snapshot;
  out.timed_out = out.timed_out || timed_out;
  for (size_t p = 0; p < state.slots.size() && p < out.gpus.size(); ++p) {
    const GpuSlot& slot = state.slots[p];
    Gpu& gpu = out.gpus[p];
    out.errors.insert(out.errors.end(), slot.errors.begin(), slot.errors.end());
    std::optional<ProbeError> hung = slot.stuck;
    if (timed_out && slot.in_flight.call != nullptr) {
      hung = ProbeError{"nvml", "timeout", TimeoutMessage(slot.in_flight, path, deadline_ms),
                        slot.in_flight.gpu.value_or(gpu.index), std::nullopt};
    }
    if (hung) {
      // Its own call did not return: this GPU, not another, is the one that
      // timed out. A GPU whose reader had not started (kQueued) or that was
      // never tried (kNotStarted) gets no error of its own: it is not blamed.
      out.timed_out = true;
      if (!gpu.unreachable) gpu.unreachable = *hung;
      out.errors.push_back(std::move(*hung));
    }
  }
  for (const auto& [pair, errors] : state.topology_errors) {
    out.errors.insert(out.errors.end(), errors.begin(), errors.end());
  }
  for (const auto& [pair, link] : state.topology) out.topology.push_back(link);
  if (timed_out && state.in_flight.call != nullptr) {
    // The look's own call: loading, init, the system facts or a topology
    // pair. Before the count no GPU is known; a pair's call blames the first
    // GPU of the pair, as a call about a GPU does.
    ProbeError timeout{"nvml", "timeout", TimeoutMessage(state.in_flight, path, deadline_ms),
                       state.in_flight.gpu, std::nullopt};
    if (state.in_flight.gpu) {
      for (Gpu& gpu : out.gpus) {
        if (gpu.index == *state.in_flight.gpu && !gpu.unreachable) gpu.unreachable = timeout;
      }
    }
    out.errors.push_back(std::move(timeout));
  } else if (timed_out && !state.done &&
             std::none_of(state.slots.begin(), state.slots.end(),
                          [](const GpuSlot& s) { return s.in_flight.call != nullptr; })) {
    // Between calls at the deadline (a machine too loaded to run the probe's
    // threads): no call to name, but the look is not whole.
    out.errors.push_back(ProbeError{"nvml", "timeout", TimeoutMessage({}, path, deadline_ms),
                                    std::nullopt, std::nullopt});
  }
  return out;
}

// Hands the finished look over: the snapshot assembled into state.snapshot,
// the GPUs placed by their own index, done. From the look's lock holder.
void FinishLook(ProbeState& state, NvmlCollector* collector, const std::string& path,
                int64_t deadline_ms) {
  Snapshot out = AssembleLook(state, /*timed_out=*/false, path, deadline_ms);
  if (collector != nullptr) {
    std::vector<NvmlCollector::GpuExtras> extras;
    for (const GpuSlot& slot : state.slots) extras.push_back(slot.extras);
    collector->PlaceByIndex(&out, extras);
  }
  state.snapshot = std::move(out);
  state.done = true;
  state.cv.notify_all();
}

// The caller's side of a look: waits until it is done or `deadline_ms`
// from `started` passed; past it, the look is abandoned and the caller gets
// what was read and the calls in flight.
ProbeResult AwaitLook(ProbeState& state, const std::string& path, int64_t deadline_ms,
                      std::chrono::steady_clock::time_point started) {
  ProbeResult result;
  const auto deadline = started + std::chrono::milliseconds(deadline_ms < 0 ? 0 : deadline_ms);
  std::unique_lock<std::mutex> lock(state.mu);
  const bool done = state.cv.wait_until(lock, deadline, [&] { return state.done; });
  if (done) {
    // No thread touches the snapshot once done.
    result.snapshot = std::move(state.snapshot);
  } else {
    state.abandoned = true;
    state.cv.notify_all();
    result.snapshot = AssembleLook(state, /*timed_out=*/true, path, deadline_ms);
  }
  lock.unlock();
  result.snapshot.probe_duration_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started).count();
  return result;
}

// Loads the library into state.api (true), or records why it could not and
// finishes the look (false). Called with `lock` held.
bool LoadForLook(ProbeState& state, std::unique_lock<std::mutex>& lock, const std::string& path,
                 const NvmlOpener& open) {
  state.in_flight.call = kLoading;
  lock.unlock();
  auto library = open(path);
  lock.lock();
  state.in_flight.call = nullptr;
  if (!library.ok()) {
    state.snapshot.errors.push_back(ProbeError{
        "nvml", library.error().code, library.error().message, std::nullopt, std::nullopt});
    state.done = true;
    state.cv.notify_all();
    return false;
  }
  state.api = std::move(library).value();
  return true;
}

// nvmlInit for a look; on failure the error names the library file when the
// collector could not know it.
bool InitialiseForLook(ProbeState& state, NvmlCollector& collector, const std::string& path) {
  const bool initialised = collector.Initialize(&state.snapshot);
  if (!initialised && !state.snapshot.errors.empty() &&
      state.snapshot.errors.back().code == "library_not_found") {
    // The collector cannot know which file it was given; the user needs it.
    state.snapshot.errors.back().message.insert(0, path + ": ");
  }
  return initialised;
}

// ProbeNvml's look, on its own worker: every GPU on a thread of its own,
// joined before NVML is shut down (after the caller has its answer).
void CollectOnWorker(ProbeState& state, const std::string& path, const NvmlOpener& open,
                     int64_t deadline_ms) {
  std::unique_lock<std::mutex> lock(state.mu);
  if (!LoadForLook(state, lock, path, open)) return;
  if (state.abandoned) return;
  std::shared_ptr<NvmlApi> api = state.api;
  PublishingObserver observer(state, state.in_flight, lock, *api);
  NvmlCollector collector(*api, state.options, &observer);
  const bool initialised = InitialiseForLook(state, collector, path);
  std::vector<std::thread> readers;
  if (initialised && collector.CollectSystem(&state.snapshot)) {
    const bool whole = ReadGpusOfLook(state, lock, collector, [&](ProbeState& look) {
      for (unsigned p = 0; p < look.slots.size(); ++p) {
        try {
          readers.emplace_back(ReadGpuOnce, std::ref(look), p);
        } catch (const std::system_error& e) {
          std::lock_guard<std::mutex> slot_lock(look.mu);
          look.slots[p].phase = GpuSlot::Phase::kNotStarted;
          look.slots[p].errors.push_back(ProbeError{
              "probe", "thread_failed",
              fmt::format("GPU {} was not read: cannot start a thread for it: {}", p, e.what()), p,
              std::nullopt});
        }
      }
    });
    if (whole) FinishLook(state, &collector, path, deadline_ms);
  } else if (!state.abandoned) {
    FinishLook(state, nullptr, path, deadline_ms);
  }
  lock.unlock();
  // A reader stuck in the driver keeps this worker (and NVML) until it
  // returns: NVML is not shut down under a call in flight.
  for (std::thread& reader : readers) reader.join();
  // After the caller has its answer: shutting down can take a while on real
  // hardware without persistence mode.
  if (initialised) collector.Shutdown();
}

// The thread's body. Nothing may escape a thread function (std::terminate);
// a failure becomes the probe's error instead.
void RunWorker(std::shared_ptr<ProbeState> state, std::string path, NvmlOpener open,
               int64_t deadline_ms) {
  WorkerFinished finished;
  std::string failure;
  try {
    CollectOnWorker(*state, path, open, deadline_ms);
    return;
  } catch (const std::exception& e) {
    failure = e.what();
  } catch (...) {
    failure = "unknown exception";
  }
  std::lock_guard<std::mutex> lock(state->mu);
  state->in_flight.call = nullptr;
  state->snapshot.errors.push_back(ProbeError{"probe", "internal",
                                              fmt::format("the NVML probe failed: {}", failure),
                                              std::nullopt, std::nullopt});
  state->done = true;
  state->cv.notify_all();
}

Result<std::shared_ptr<NvmlApi>> OpenLibrary(const std::string& path) {
  auto library = NvmlLibrary::Open(path);
  if (!library.ok()) return library.error();
  return std::shared_ptr<NvmlApi>(std::move(library).value());
}

// A look's state before any NVML call: the time and where the facts come from.
std::shared_ptr<ProbeState> NewLook(const std::string& path, const Clock& clock,
                                    uint64_t process_samples_since_us) {
  auto state = std::make_shared<ProbeState>();
  Snapshot& initial = state->snapshot;
  initial.time_unix_ms = clock.NowUnixMs();
  if (const char* scenario = std::getenv("GPUWARDEN_SIM_SCENARIO");
      scenario != nullptr && scenario[0] != '\0') {
    initial.source = SnapshotSource::kSimulated;
    initial.source_detail = scenario;
  } else {
    initial.source = SnapshotSource::kNvml;
    initial.source_detail = path;
  }
  state->options.process_samples_since_us = process_samples_since_us;
  return state;
}

std::string LibraryPath(const ProbeOptions& options) {
  return options.library_path.empty() ? std::string(kDefaultLibraryPath) : options.library_path;
}

}  // namespace

ProbeResult ProbeNvml(const ProbeOptions& options, const Clock& clock) {
  return ProbeNvml(options, clock, OpenLibrary);
}

ProbeResult ProbeNvml(const ProbeOptions& options, const Clock& clock, NvmlOpener open) {
  const auto started = std::chrono::steady_clock::now();
  const std::string path = LibraryPath(options);
  std::shared_ptr<ProbeState> state = NewLook(path, clock, options.process_samples_since_us);

  WorkerStarting();
  try {
    std::thread(RunWorker, state, path, std::move(open), options.deadline_ms).detach();
  } catch (const std::system_error& e) {
    { WorkerFinished never_started; }
    ProbeResult result;
    result.snapshot = state->snapshot;
    result.snapshot.errors.push_back(ProbeError{
        "probe", "thread_failed", fmt::format("cannot start the NVML probe thread: {}", e.what()),
        std::nullopt, std::nullopt});
    return result;
  }
  return AwaitLook(*state, path, options.deadline_ms, started);
}

// --- ProbeSession ------------------------------------------------------------

// The reader of one GPU (one enumeration position) of a session: one thread,
// kept between looks, so a GPU stuck in the driver holds one thread however
// many looks ask for it.
struct GpuReader {
  std::shared_ptr<ProbeState> job;      // Posted, not yet taken.
  std::shared_ptr<ProbeState> serving;  // Being read (maybe stuck in the driver).
  bool thread_failed = false;           // Its thread could not be started.
};

struct ProbeSession::Shared {
  std::mutex mu;
  std::condition_variable cv;
  std::shared_ptr<ProbeState> request;  // Posted, not yet taken by the look's worker.
  std::shared_ptr<ProbeState> current;  // Being served by the look's worker.
  bool stop = false;
  bool exited = false;
  std::string path;
  NvmlOpener open;
  int64_t deadline_ms = 0;
  // By enumeration position; only ever grows (a deque: a reader keeps a
  // reference to its own).
  std::deque<GpuReader> readers;
  int readers_alive = 0;  // Reader threads not yet ended.
  // The GPUs (by index) of the last look that listed them: a look whose own
  // call (init, the count) did not return lists them as not tried.
  std::vector<unsigned> last_gpus;
};

namespace {

// Answers that mean the NVML the session holds no longer matches the driver:
// initialise again before the next look.
bool DriverChanged(const Snapshot& s) {
  for (const ProbeError& e : s.errors) {
    if (!e.nvml_return) continue;
    const int r = *e.nvml_return;
    if (r == NVML_ERROR_UNINITIALIZED || r == NVML_ERROR_DRIVER_NOT_LOADED ||
        r == NVML_ERROR_LIB_RM_VERSION_MISMATCH) {
      return true;
    }
  }
  return false;
}

// A reader of the session is inside NVML, or about to be. From a holder of shared.mu.
bool AnyReaderBusy(const ProbeSession::Shared& shared) {
  return std::any_of(shared.readers.begin(), shared.readers.end(),
                     [](const GpuReader& r) { return r.job || r.serving; });
}

void ReaderLoop(std::shared_ptr<ProbeSession::Shared> shared, unsigned position) {
  StaticFacts statics;  // This GPU's facts that cannot change (nvml_collector.h).
  uint64_t generation = 0;
  std::unique_lock<std::mutex> lock(shared->mu);
  GpuReader& reader = shared->readers[position];
  for (;;) {
    shared->cv.wait(lock, [&] { return shared->stop || reader.job != nullptr; });
    if (reader.job == nullptr) break;  // Stopped with nothing posted.
    std::shared_ptr<ProbeState> look = std::move(reader.job);
    reader.job.reset();
    reader.serving = look;
    lock.unlock();
    {
      // Counted by the look's worker when it posted the job.
      WorkerFinished finished;
      if (look->generation != generation) {
        statics = StaticFacts{};  // Handles of an earlier initialisation are void.
        generation = look->generation;
      }
      ReadGpuOfLook(*look, position, &statics);
      // Free before the look hears it is read, so that a look that is done
      // finds no reader of its own still busy (ShutDownForReinit).
      lock.lock();
      reader.serving.reset();
      MarkGpuRead(*look, position);  // Lock order: the session's, then a look's.
    }
    shared->cv.notify_all();
  }
  --shared->readers_alive;
  shared->cv.notify_all();
}

// Hands each GPU of the look to its reader, starting readers the first time
// a position is seen. A GPU whose reader is still stuck in a call of an
// earlier look is not asked again: it is reported at once as still stuck in
// that call (kStuck), so a wedged GPU holds one thread, not one per look.
void DispatchToReaders(const std::shared_ptr<ProbeState>& look,
                       const std::shared_ptr<ProbeSession::Shared>& shared) {
  const auto count = static_cast<unsigned>(look->slots.size());
  std::vector<std::optional<ProbeError>> stuck(count);
  std::vector<bool> not_started(count, false);
  {
    std::lock_guard<std::mutex> lock(shared->mu);
    while (shared->readers.size() < count) {
      const auto position = static_cast<unsigned>(shared->readers.size());
      shared->readers.emplace_back();
      try {
        std::thread(ReaderLoop, shared, position).detach();
        ++shared->readers_alive;
      } catch (const std::system_error&) {
        shared->readers.back().thread_failed = true;
      }
    }
    for (unsigned p = 0; p < count; ++p) {
      GpuReader& reader = shared->readers[p];
      if (reader.thread_failed) {
        not_started[p] = true;
        continue;
      }
      if (reader.serving) {
        // Lock order: the session's, then a look's.
        std::lock_guard<std::mutex> old_lock(reader.serving->mu);
        const InFlight& in_flight = reader.serving->slots[p].in_flight;
        if (in_flight.call != nullptr) {
          stuck[p] = ProbeError{"nvml", "timeout",
                                TimeoutMessage(in_flight, shared->path, shared->deadline_ms) +
                                    " (and is still in the driver)",
                                in_flight.gpu.value_or(p), std::nullopt};
          continue;
        }
        // Between two calls of an abandoned look: it stops at the next one
        // and then takes this job.
      }
      // A job still posted belongs to an abandoned look whose reader never
      // took it: this look's replaces it and keeps its count.
      if (!reader.job) WorkerStarting();
      reader.job = look;
    }
  }
  shared->cv.notify_all();
  std::lock_guard<std::mutex> lock(look->mu);
  for (unsigned p = 0; p < count; ++p) {
    GpuSlot& slot = look->slots[p];
    if (stuck[p]) {
      slot.phase = GpuSlot::Phase::kStuck;
      slot.stuck = std::move(stuck[p]);
    } else if (not_started[p]) {
      slot.phase = GpuSlot::Phase::kNotStarted;
      slot.errors.push_back(
          ProbeError{"probe", "thread_failed",
                     fmt::format("GPU {} was not read: no thread could be started for it", p), p,
                     std::nullopt});
    }
  }
  look->cv.notify_all();
}

// What the look's worker keeps between looks.
struct SessionNvml {
  std::shared_ptr<NvmlApi> api;
  bool initialised = false;
  uint64_t generation = 0;  // Counts initialisations.
  StaticFacts statics;      // The system facts and the topology (nvml_collector.h).
  bool reinit = false;      // The driver changed: initialise again when no reader is busy.
};

// Shuts NVML down for initialising again, unless a reader is inside NVML
// (then a later look does it).
void ShutDownForReinit(ProbeSession::Shared& shared, SessionNvml& nvml) {
  if (!nvml.reinit || !nvml.initialised) return;
  {
    std::lock_guard<std::mutex> lock(shared.mu);
    if (AnyReaderBusy(shared)) return;
  }
  nvml.api->Shutdown();
  nvml.initialised = false;
  nvml.reinit = false;
}

// One look on the session's worker: the library and NVML kept between looks
// in `nvml`, each GPU handed to its reader.
void ServeLook(const std::shared_ptr<ProbeState>& look,
               const std::shared_ptr<ProbeSession::Shared>& shared, SessionNvml& nvml) {
  ProbeState& state = *look;
  ShutDownForReinit(*shared, nvml);
  std::unique_lock<std::mutex> lock(state.mu);
  if (!nvml.api) {
    if (!LoadForLook(state, lock, shared->path, shared->open)) return;
    nvml.api = state.api;
  }
  state.api = nvml.api;
  if (state.abandoned) return;
  PublishingObserver observer(state, state.in_flight, lock, *nvml.api);
  NvmlCollector collector(*nvml.api, state.options, &observer, &nvml.statics);
  bool failed_init = false;
  if (!nvml.initialised) {
    nvml.statics = StaticFacts{};  // Handles and facts of an earlier initialisation are void.
    nvml.initialised = InitialiseForLook(state, collector, shared->path);
    failed_init = !nvml.initialised;
    if (nvml.initialised) ++nvml.generation;
  }
  state.generation = nvml.generation;
  bool whole = true;
  if (nvml.initialised && collector.CollectSystem(&state.snapshot)) {
    whole = ReadGpusOfLook(state, lock, collector,
                           [&](ProbeState&) { DispatchToReaders(look, shared); });
  }
  std::optional<std::vector<unsigned>> listed;
  if (whole && !state.abandoned) {
    FinishLook(state, &collector, shared->path, shared->deadline_ms);
    nvml.reinit = nvml.initialised && DriverChanged(state.snapshot);
    if (state.snapshot.system.gpu_count) {
      listed.emplace();
      for (const Gpu& gpu : state.snapshot.gpus) listed->push_back(gpu.index);
    }
  }
  lock.unlock();
  if (listed) {
    std::lock_guard<std::mutex> shared_lock(shared->mu);
    shared->last_gpus = std::move(*listed);
  }
  ShutDownForReinit(*shared, nvml);
  // A library that loads but cannot initialise (no driver yet) is loaded
  // again next time: the driver may come with another one.
  if (failed_init) nvml.api.reset();
}

void SessionWorker(std::shared_ptr<ProbeSession::Shared> shared) {
  SessionNvml nvml;
  for (;;) {
    std::shared_ptr<ProbeState> state;
    {
      std::unique_lock<std::mutex> lock(shared->mu);
      shared->cv.wait(lock, [&] { return shared->stop || shared->request != nullptr; });
      if (shared->stop) break;
      state = std::move(shared->request);
      shared->request.reset();
      shared->current = state;
    }
    {
      // Counted by Probe() when it posted the look.
      WorkerFinished finished;
      try {
        ServeLook(state, shared, nvml);
      } catch (const std::exception& e) {
        std::lock_guard<std::mutex> lock(state->mu);
        state->in_flight.call = nullptr;
        state->snapshot.errors.push_back(
            ProbeError{"probe", "internal", fmt::format("the NVML probe failed: {}", e.what()),
                       std::nullopt, std::nullopt});
        state->done = true;
        state->cv.notify_all();
      }
    }
    std::lock_guard<std::mutex> lock(shared->mu);
    shared->current.reset();
    shared->cv.notify_all();
  }
  // The readers end once idle; one stuck in the driver ends when it returns,
  // and NVML is shut down only after that.
  std::unique_lock<std::mutex> lock(shared->mu);
  shared->cv.wait(lock, [&] { return shared->readers_alive == 0; });
  lock.unlock();
  if (nvml.initialised && nvml.api) nvml.api->Shutdown();
  lock.lock();
  shared->exited = true;
  shared->cv.notify_all();
}

// A look cut short before NVML said how many GPUs there are (its own call
// did not return: init, the count): the GPUs an earlier look listed are
// listed again, with nothing read and no error of their own, so that they
// read as not tried (the look's timeout error says why) instead of vanishing.
void ListNotTried(Snapshot& snapshot, const std::vector<unsigned>& last_gpus) {
  if (!snapshot.timed_out || !snapshot.gpus.empty() || snapshot.system.gpu_count) return;
  for (unsigned index : last_gpus) {
    Gpu gpu;
    gpu.index = index;
    snapshot.gpus.push_back(std::move(gpu));
  }
}

}  // namespace

ProbeSession::ProbeSession(ProbeOptions options) : ProbeSession(std::move(options), OpenLibrary) {}

ProbeSession::ProbeSession(ProbeOptions options, NvmlOpener open)
    : options_(std::move(options)), shared_(std::make_shared<Shared>()) {
  shared_->path = LibraryPath(options_);
  shared_->open = std::move(open);
  shared_->deadline_ms = options_.deadline_ms;
  // Detached: the worker owns what it touches through shared_, and one stuck
  // in the driver must not hold up the destructor.
  std::thread(SessionWorker, shared_).detach();
}

ProbeSession::~ProbeSession() {
  std::unique_lock<std::mutex> lock(shared_->mu);
  shared_->stop = true;
  shared_->cv.notify_all();
  // No Probe() runs now, so a look not yet done outlived its deadline, and a
  // reader still serving a look is stuck in the driver: they end on their
  // own. Waiting for them would only hold up the caller (a `watch` quitting
  // on a hung driver). A look that is done but still current is a worker
  // about to go idle.
  if (std::shared_ptr<ProbeState> look = shared_->current) {
    std::lock_guard<std::mutex> look_lock(look->mu);
    if (!look->done) return;
  }
  if (AnyReaderBusy(*shared_)) return;
  // Let an idle worker shut NVML down (under the deadline: nvmlShutdown can
  // hang too).
  shared_->cv.wait_for(lock, std::chrono::milliseconds(options_.deadline_ms),
                       [&] { return shared_->exited; });
}

ProbeResult ProbeSession::Probe(const Clock& clock, uint64_t process_samples_since_us) {
  const auto started = std::chrono::steady_clock::now();
  const auto deadline =
      started + std::chrono::milliseconds(options_.deadline_ms < 0 ? 0 : options_.deadline_ms);
  std::shared_ptr<ProbeState> state = NewLook(
      shared_->path, clock,
      process_samples_since_us != 0 ? process_samples_since_us : options_.process_samples_since_us);
  std::vector<unsigned> last_gpus;
  {
    std::unique_lock<std::mutex> lock(shared_->mu);
    // One look at a time: wait for one whose own call (load, init, the
    // system facts, topology) is still in the driver. (A look whose GPU's
    // call is stuck leaves the worker free at its deadline.)
    const bool free = shared_->cv.wait_until(
        lock, deadline, [&] { return shared_->current == nullptr && shared_->request == nullptr; });
    last_gpus = shared_->last_gpus;
    if (!free) {
      std::shared_ptr<ProbeState> stuck = shared_->current;
      lock.unlock();
      ProbeResult result;
      result.snapshot = state->snapshot;
      result.snapshot.timed_out = true;
      std::string message = "driver not responding";
      std::optional<unsigned> gpu;
      if (stuck) {
        std::lock_guard<std::mutex> stuck_lock(stuck->mu);
        message = TimeoutMessage(stuck->in_flight, shared_->path, options_.deadline_ms) +
                  " (and is still in the driver)";
        gpu = stuck->in_flight.gpu;
      }
      result.snapshot.errors.push_back(ProbeError{"nvml", "timeout", message, gpu, std::nullopt});
      ListNotTried(result.snapshot, last_gpus);
      result.snapshot.probe_duration_ms =
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started)
              .count();
      return result;
    }
    WorkerStarting();
    shared_->request = state;
  }
  shared_->cv.notify_all();
  ProbeResult result = AwaitLook(*state, shared_->path, options_.deadline_ms, started);
  ListNotTried(result.snapshot, last_gpus);
  std::lock_guard<std::mutex> lock(shared_->mu);
  if (shared_->request == state) {
    // Never taken (the worker was slow to wake): withdraw it.
    shared_->request.reset();
    WorkerFinished withdrawn;
  }
  return result;
}

int ProbeWorkersRunning() {
  std::lock_guard<std::mutex> lock(Registry().mu);
  return Registry().running;
}

bool WaitForProbeWorkers(int64_t timeout_ms) {
  std::unique_lock<std::mutex> lock(Registry().mu);
  return Registry().idle_cv.wait_for(lock, std::chrono::milliseconds(timeout_ms),
                                     [] { return Registry().running == 0; });
}

void ExitProcess(int status) {
  std::fflush(nullptr);
  if (ProbeWorkersRunning() > 0) std::quick_exit(status);
  std::exit(status);
}

}  // namespace gw::nvml
