// The simulator's runtime: the library's init state (ref-counted), the scenario
// of the current session, the timeline clock, process liveness and event sets.
//
// Thread safety: every method may be called from any thread. A call takes the
// state lock only to copy the session pointer; a session is immutable apart
// from its liveness cache (own lock), so blocking calls sleep holding no lock
// and other threads and GPUs keep answering.
#ifndef GPUWARDEN_SIM_ENGINE_H_
#define GPUWARDEN_SIM_ENGINE_H_

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <unordered_set>
#include <utility>
#include <vector>

#include "nvml/nvml_abi.h"
#include "sim/scenario.h"

namespace gw::sim {

// Wall-clock time, seconds since the Unix epoch.
double WallNowS();

// Process-utilization samples are taken every this many microseconds.
inline constexpr uint64_t kSamplePeriodUs = 100'000;

// One init..shutdown of the library: the scenario as read at init and its clock.
class Session {
 public:
  Session(std::shared_ptr<const Scenario> scenario, double t0_unix_s, double block_scale);

  const Scenario& scenario() const { return *scenario_; }
  // Seconds on the scenario's timeline (may be negative before t = 0).
  double Now() const { return WallNowS() - t0_unix_s_; }
  double block_scale() const { return block_scale_; }
  // GPUs the driver reports (0 when the driver's failure is "no_gpus" at init).
  unsigned gpu_count() const { return gpu_count_; }

  const GpuState& GpuAt(unsigned index, double t) const {
    return scenario_->gpus[index].timeline.At(t);
  }
  const DriverState& DriverAt(double t) const { return scenario_->driver.At(t); }

  // True once `pid` has been seen gone (no /proc entry, or a zombie). Sticky:
  // a PID that was reused later does not bring the process back.
  bool ProcessGone(pid_t pid) const;

  // Processes registered at run time in $GPUWARDEN_SIM_PROCESS_DIR (see
  // docs/scenarios.md): one file per PID, each line "GPU-UUID USED_MIB
  // [SM_PCT]". Listed on the GPU of that UUID while the PID lives, their
  // memory added to the GPU's used memory — so the simulated free memory
  // follows real jobs that "allocate" by writing their file.
  std::vector<const ProcessSpec*> RegisteredProcesses(const std::string& gpu_uuid) const;

 private:
  std::shared_ptr<const Scenario> scenario_;
  double t0_unix_s_;
  double block_scale_;
  unsigned gpu_count_;
  mutable std::mutex gone_mu_;
  mutable std::unordered_set<pid_t> gone_;
  std::string process_dir_;
  mutable std::mutex registry_mu_;
  // Keyed by (pid, uuid, line); entries stay so their pointers stay valid
  // for the session.
  mutable std::map<std::tuple<pid_t, std::string, std::string>, std::unique_ptr<ProcessSpec>>
      registry_;
};

// The processes the driver lists on a GPU right now, in scenario order.
struct ListedProcess {
  pid_t pid;
  const ProcessSpec* spec;
};

// Lists the processes of `state`: leaves out those whose env: PID is unset and
// while_alive ones whose PID is gone. `unlisted_bytes` (optional) receives the
// memory the left-out ones held.
std::vector<ListedProcess> ListProcesses(const Session& session, const GpuState& state,
                                         uint64_t* unlisted_bytes);

// memory.used as the driver reports it now (docs/scenarios.md): the scenario's
// used_mib plus the listed processes when used_from_processes, else used_mib
// less what left-out processes held (unless keeps_memory_after_exit).
Opt<uint64_t> EffectiveUsedBytes(const Session& session, const GpuState& state);

struct EventSet {
  struct Registration {
    unsigned gpu;
    unsigned long long mask;
    double t_registered;
  };
  std::mutex mu;
  std::vector<Registration> registrations;
  std::set<std::pair<unsigned, size_t>> delivered;  // (gpu, index in its events).
};

class Simulator {
 public:
  static Simulator& Get();

  // nvmlInit*: the first call reads the scenario named by GPUWARDEN_SIM_SCENARIO
  // (printing one stderr line on failure), honours init_block_s and the
  // driver's failure; later calls only count.
  nvmlReturn_t Init();
  nvmlReturn_t Shutdown();

  // The current session, or nullptr when not initialised.
  std::shared_ptr<const Session> Current() const;

  // Event sets live until freed or until the last shutdown.
  EventSet* CreateEventSet();
  std::shared_ptr<EventSet> FindEventSet(const void* handle) const;
  bool FreeEventSet(const void* handle);

 private:
  Simulator() = default;

  mutable std::mutex mu_;  // Guards everything below except init_mu_.
  std::mutex init_mu_;     // Serialises Init/Shutdown (never held while serving calls).
  int refcount_ = 0;
  std::shared_ptr<const Session> session_;
  std::map<const void*, std::shared_ptr<EventSet>> event_sets_;
  std::optional<double> first_init_unix_s_;
};

}  // namespace gw::sim

#endif  // GPUWARDEN_SIM_ENGINE_H_
