#include "nvml/probe.h"

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <memory>
#include <mutex>
#include <optional>
#include <system_error>
#include <thread>
#include <utility>

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

// What the caller and the worker share (outside the unnamed namespace: it is
// a member of ProbeSession::Shared, which the header declares). The worker
// holds `mu` whenever it is not inside a call that may block (dlopen or an
// NVML call), so the caller, taking `mu` at the deadline, always sees a
// consistent snapshot and the call that is holding things up.
struct ProbeState {
  std::mutex mu;
  std::condition_variable done_cv;
  bool done = false;       // The snapshot is complete.
  bool abandoned = false;  // The caller gave up; stop at the next call.
  Snapshot snapshot;
  // The call in flight: kLoading, an NVML symbol name (static storage), or null.
  const char* in_flight = nullptr;
  std::optional<unsigned> in_flight_gpu;
  std::optional<unsigned> in_flight_other_gpu;
  CollectorOptions options;
};

namespace {

constexpr char kLoading[] = "dlopen";

// Releases the state's lock for exactly the duration of each NVML call.
class PublishingObserver final : public CallObserver {
 public:
  PublishingObserver(ProbeState& state, std::unique_lock<std::mutex>& lock, const NvmlApi& api)
      : state_(state), lock_(lock), api_(api) {}

  bool BeforeCall(EntryPoint ep, std::optional<unsigned> gpu,
                  std::optional<unsigned> other_gpu) override {
    if (state_.abandoned) return false;
    state_.in_flight = api_.SymbolName(ep);
    state_.in_flight_gpu = gpu;
    state_.in_flight_other_gpu = other_gpu;
    lock_.unlock();
    return true;
  }
  void AfterCall() override {
    lock_.lock();
    state_.in_flight = nullptr;
  }

 private:
  ProbeState& state_;
  std::unique_lock<std::mutex>& lock_;
  const NvmlApi& api_;
};

void CollectOnWorker(ProbeState* state, const std::string& path, const NvmlOpener& open) {
  std::unique_lock<std::mutex> lock(state->mu);
  state->in_flight = kLoading;
  lock.unlock();
  auto library = open(path);
  lock.lock();
  state->in_flight = nullptr;
  if (!library.ok()) {
    state->snapshot.errors.push_back(ProbeError{
        "nvml", library.error().code, library.error().message, std::nullopt, std::nullopt});
    state->done = true;
    state->done_cv.notify_all();
    return;
  }
  if (state->abandoned) return;

  std::shared_ptr<NvmlApi> api = std::move(library).value();
  PublishingObserver observer(*state, lock, *api);
  NvmlCollector collector(*api, state->options, &observer);
  const bool initialised = collector.Initialize(&state->snapshot);
  if (!initialised && !state->snapshot.errors.empty() &&
      state->snapshot.errors.back().code == "library_not_found") {
    // The collector cannot know which file it was given; the user needs it.
    state->snapshot.errors.back().message.insert(0, path + ": ");
  }
  if (initialised) collector.Collect(&state->snapshot);
  state->done = true;
  state->done_cv.notify_all();
  lock.unlock();
  // After the caller has its answer: shutting down can take a while on real
  // hardware without persistence mode.
  if (initialised) collector.Shutdown();
}

// The thread's body. Nothing may escape a thread function (std::terminate);
// a failure becomes the probe's error instead.
void RunWorker(std::shared_ptr<ProbeState> state, std::string path, NvmlOpener open) {
  WorkerFinished finished;
  std::string failure;
  try {
    CollectOnWorker(state.get(), path, open);
    return;
  } catch (const std::exception& e) {
    failure = e.what();
  } catch (...) {
    failure = "unknown exception";
  }
  std::lock_guard<std::mutex> lock(state->mu);
  state->in_flight = nullptr;
  state->snapshot.errors.push_back(ProbeError{"probe", "internal",
                                              fmt::format("the NVML probe failed: {}", failure),
                                              std::nullopt, std::nullopt});
  state->done = true;
  state->done_cv.notify_all();
}

std::string TimeoutMessage(const ProbeState& state, const std::string& path, int64_t deadline_ms) {
  std::string what;
  if (state.in_flight == kLoading) {
    what = fmt::format("loading {} did not finish", path);
  } else if (state.in_flight != nullptr) {
    what = state.in_flight;
    if (state.in_flight_gpu && state.in_flight_other_gpu) {
      what +=
          fmt::format(" on GPU {} and GPU {}", *state.in_flight_gpu, *state.in_flight_other_gpu);
    } else if (state.in_flight_gpu) {
      what += fmt::format(" on GPU {}", *state.in_flight_gpu);
    }
    what += " did not return";
  } else {
    what = "the NVML probe did not finish";
  }
  return fmt::format("driver not responding: {} within {:.1f} s", what, deadline_ms / 1000.0);
}

Result<std::shared_ptr<NvmlApi>> OpenLibrary(const std::string& path) {
  auto library = NvmlLibrary::Open(path);
  if (!library.ok()) return library.error();
  return std::shared_ptr<NvmlApi>(std::move(library).value());
}

}  // namespace

ProbeResult ProbeNvml(const ProbeOptions& options, const Clock& clock) {
  return ProbeNvml(options, clock, OpenLibrary);
}

namespace {

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

// Waits for the worker to finish the look until `deadline`; past it, the look
// is abandoned and the caller gets what was read and the call in flight.
ProbeResult AwaitLook(ProbeState& state, const std::string& path, int64_t deadline_ms,
                      std::chrono::steady_clock::time_point started) {
  ProbeResult result;
  const auto deadline = started + std::chrono::milliseconds(deadline_ms < 0 ? 0 : deadline_ms);
  std::unique_lock<std::mutex> lock(state.mu);
  const bool done = state.done_cv.wait_until(lock, deadline, [&] { return state.done; });
  if (done) {
    // The worker no longer touches the snapshot once done.
    result.snapshot = std::move(state.snapshot);
  } else {
    state.abandoned = true;
    result.snapshot = state.snapshot;
    Snapshot& snapshot = result.snapshot;
    snapshot.timed_out = true;
    ProbeError timeout{"nvml", "timeout", TimeoutMessage(state, path, deadline_ms),
                       state.in_flight_gpu, std::nullopt};
    // The GPU whose call did not return is the one that timed out. The GPUs
    // after it were not reached: they did nothing wrong and are not blamed
    // (no error of their own, nothing read: unknown, never healthy).
    if (state.in_flight_gpu) {
      for (Gpu& gpu : snapshot.gpus) {
        if (gpu.index == *state.in_flight_gpu && !gpu.unreachable) gpu.unreachable = timeout;
      }
    }
    snapshot.errors.push_back(std::move(timeout));
  }
  lock.unlock();
  result.snapshot.probe_duration_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started).count();
  return result;
}

std::string LibraryPath(const ProbeOptions& options) {
  return options.library_path.empty() ? std::string(kDefaultLibraryPath) : options.library_path;
}

}  // namespace

ProbeResult ProbeNvml(const ProbeOptions& options, const Clock& clock, NvmlOpener open) {
  const auto started = std::chrono::steady_clock::now();
  const std::string path = LibraryPath(options);
  std::shared_ptr<ProbeState> state = NewLook(path, clock, options.process_samples_since_us);

  WorkerStarting();
  try {
    std::thread(RunWorker, state, path, std::move(open)).detach();
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

struct ProbeSession::Shared {
  std::mutex mu;
  std::condition_variable cv;
  std::shared_ptr<ProbeState> request;  // Posted, not yet taken by the worker.
  std::shared_ptr<ProbeState> current;  // Being served.
  bool stop = false;
  bool exited = false;
  std::string path;
  NvmlOpener open;
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

// One look on the session's worker, with the library and NVML kept between
// looks in `api` and `initialised`.
void ServeLook(ProbeState& state, ProbeSession::Shared& shared, std::shared_ptr<NvmlApi>& api,
               bool& initialised, StaticFacts& statics) {
  std::unique_lock<std::mutex> lock(state.mu);
  if (!api) {
    state.in_flight = kLoading;
    lock.unlock();
    auto library = shared.open(shared.path);
    lock.lock();
    state.in_flight = nullptr;
    if (!library.ok()) {
      state.snapshot.errors.push_back(ProbeError{
          "nvml", library.error().code, library.error().message, std::nullopt, std::nullopt});
      state.done = true;
      state.done_cv.notify_all();
      return;
    }
    api = std::move(library).value();
  }
  if (state.abandoned) return;
  PublishingObserver observer(state, lock, *api);
  NvmlCollector collector(*api, state.options, &observer, &statics);
  bool failed_init = false;
  if (!initialised) {
    statics = StaticFacts{};  // Handles and facts of an earlier initialisation are void.
    initialised = collector.Initialize(&state.snapshot);
    failed_init = !initialised;
    if (failed_init && !state.snapshot.errors.empty() &&
        state.snapshot.errors.back().code == "library_not_found") {
      state.snapshot.errors.back().message.insert(0, shared.path + ": ");
    }
  }
  if (initialised) collector.Collect(&state.snapshot);
  const bool reinit = initialised && DriverChanged(state.snapshot);
  state.done = true;
  state.done_cv.notify_all();
  lock.unlock();
  if (reinit) {
    collector.Shutdown();
    initialised = false;
  }
  // A library that loads but cannot initialise (no driver yet) is loaded
  // again next time: the driver may come with another one.
  if (failed_init) api.reset();
}

void SessionWorker(std::shared_ptr<ProbeSession::Shared> shared) {
  std::shared_ptr<NvmlApi> api;
  bool initialised = false;
  StaticFacts statics;  // What NVML says once per initialisation (nvml_collector.h).
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
        ServeLook(*state, *shared, api, initialised, statics);
      } catch (const std::exception& e) {
        std::lock_guard<std::mutex> lock(state->mu);
        state->in_flight = nullptr;
        state->snapshot.errors.push_back(
            ProbeError{"probe", "internal", fmt::format("the NVML probe failed: {}", e.what()),
                       std::nullopt, std::nullopt});
        state->done = true;
        state->done_cv.notify_all();
      }
    }
    std::lock_guard<std::mutex> lock(shared->mu);
    shared->current.reset();
    shared->cv.notify_all();
  }
  if (initialised && api) api->Shutdown();
  std::lock_guard<std::mutex> lock(shared->mu);
  shared->exited = true;
  shared->cv.notify_all();
}

}  // namespace

ProbeSession::ProbeSession(ProbeOptions options) : ProbeSession(std::move(options), OpenLibrary) {}

ProbeSession::ProbeSession(ProbeOptions options, NvmlOpener open)
    : options_(std::move(options)), shared_(std::make_shared<Shared>()) {
  shared_->path = LibraryPath(options_);
  shared_->open = std::move(open);
  // Detached: the worker owns what it touches through shared_, and one stuck
  // in the driver must not hold up the destructor.
  std::thread(SessionWorker, shared_).detach();
}

ProbeSession::~ProbeSession() {
  std::unique_lock<std::mutex> lock(shared_->mu);
  shared_->stop = true;
  shared_->cv.notify_all();
  // No Probe() runs now, so a look not yet done outlived its deadline: the
  // worker is stuck in the driver and ends on its own. Waiting for it would
  // only hold up the caller (a `watch` quitting on a hung driver). A look
  // that is done but still current is a worker about to go idle.
  if (std::shared_ptr<ProbeState> look = shared_->current) {
    std::lock_guard<std::mutex> look_lock(look->mu);
    if (!look->done) return;
  }
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
  {
    std::unique_lock<std::mutex> lock(shared_->mu);
    // One look at a time: wait for one still in the driver.
    const bool free = shared_->cv.wait_until(
        lock, deadline, [&] { return shared_->current == nullptr && shared_->request == nullptr; });
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
        message = TimeoutMessage(*stuck, shared_->path, options_.deadline_ms) +
                  " (and is still in the driver)";
        gpu = stuck->in_flight_gpu;
      }
      result.snapshot.errors.push_back(ProbeError{"nvml", "timeout", message, gpu, std::nullopt});
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
