#include "sim/engine.h"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>

namespace gw::sim {
namespace {

// The one stderr line a failed init prints.
void Complain(const std::string& what, const std::string& problem) {
  std::string line = "gpuwarden-sim: " + what + ": " + problem + "\n";
  // One write, so lines from concurrent inits never interleave.
  ssize_t ignored = write(STDERR_FILENO, line.data(), line.size());
  (void)ignored;
}

// A non-negative number from the environment; nullopt when unset.
Result<Opt<double>> EnvNumber(const char* name) {
  const char* v = std::getenv(name);
  if (v == nullptr || v[0] == '\0') return Opt<double>();
  char* end = nullptr;
  double x = std::strtod(v, &end);
  if (end == v || *end != '\0' || !(x >= 0) || x > 1e12) {
    return Error{"invalid", std::string("not a non-negative number: '") + v + "'"};
  }
  return Opt<double>(x);
}

// Reads /proc/PID/stat; a process is gone when it has no entry or is a zombie
// (Z) or dead (X): the driver releases a context when the process exits.
bool ProcGoneNow(pid_t pid) {
  char path[64];
  snprintf(path, sizeof path, "/proc/%d/stat", static_cast<int>(pid));
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return true;
  char buf[512];
  ssize_t n = read(fd, buf, sizeof buf - 1);
  close(fd);
  if (n <= 0) return true;
  buf[n] = '\0';
  // The state follows the last ')' (the command name may contain ')').
  const char* close_paren = strrchr(buf, ')');
  if (close_paren == nullptr || close_paren[1] == '\0' || close_paren[2] == '\0') return false;
  char state = close_paren[2];
  return state == 'Z' || state == 'X' || state == 'x';
}

void SleepSeconds(double s) {
  if (s > 0) std::this_thread::sleep_for(std::chrono::duration<double>(s));
}

}  // namespace

double WallNowS() {
  using namespace std::chrono;
  return duration<double>(system_clock::now().time_since_epoch()).count();
}

Session::Session(std::shared_ptr<const Scenario> scenario, double t0_unix_s, double block_scale)
    : scenario_(std::move(scenario)), t0_unix_s_(t0_unix_s), block_scale_(block_scale) {
  if (const char* dir = std::getenv("GPUWARDEN_SIM_PROCESS_DIR"); dir != nullptr)
    process_dir_ = dir;
  const DriverState& d = scenario_->driver.At(Now());
  gpu_count_ =
      d.failure == DriverFailure::kNoGpus ? 0 : static_cast<unsigned>(scenario_->gpus.size());
}

bool Session::ProcessGone(pid_t pid) const {
  {
    std::lock_guard<std::mutex> lock(gone_mu_);
    if (gone_.count(pid) != 0) return true;
  }
  if (!ProcGoneNow(pid)) return false;
  std::lock_guard<std::mutex> lock(gone_mu_);
  gone_.insert(pid);
  return true;
}

std::vector<const ProcessSpec*> Session::RegisteredProcesses(const std::string& gpu_uuid) const {
  std::vector<const ProcessSpec*> out;
  if (process_dir_.empty()) return out;
  DIR* dir = opendir(process_dir_.c_str());
  if (dir == nullptr) return out;
  std::vector<std::pair<pid_t, std::string>> files;
  while (dirent* e = readdir(dir)) {
    char* end = nullptr;
    const long pid = std::strtol(e->d_name, &end, 10);
    if (pid <= 0 || end == e->d_name || *end != '\0') continue;
    files.emplace_back(static_cast<pid_t>(pid), process_dir_ + "/" + e->d_name);
  }
  closedir(dir);
  std::sort(files.begin(), files.end());
  for (const auto& [pid, path] : files) {
    if (ProcessGone(pid)) continue;
    FILE* f = std::fopen(path.c_str(), "re");
    if (f == nullptr) continue;
    char line[512];
    while (std::fgets(line, sizeof line, f) != nullptr) {
      char uuid[128];
      unsigned long long mib = 0;
      unsigned sm = 0;
      const int n = std::sscanf(line, "%127s %llu %u", uuid, &mib, &sm);
      if (n < 2 || gpu_uuid != uuid) continue;
      std::lock_guard<std::mutex> lock(registry_mu_);
      auto& slot = registry_[{pid, gpu_uuid, line}];
      if (!slot) {
        slot = std::make_unique<ProcessSpec>();
        slot->pid = pid;
        slot->used_bytes = static_cast<uint64_t>(mib) << 20;
        slot->sm_pct = n >= 3 ? sm : 0;
        slot->mem_pct = 0;
        slot->while_alive = true;
      }
      out.push_back(slot.get());
    }
    std::fclose(f);
  }
  return out;
}

std::vector<ListedProcess> ListProcesses(const Session& session, const GpuState& state,
                                         uint64_t* unlisted_bytes) {
  std::vector<ListedProcess> out;
  uint64_t unlisted = 0;
  if (state.uuid) {
    for (const ProcessSpec* p : session.RegisteredProcesses(*state.uuid)) {
      out.push_back({*p->pid, p});
    }
  }
  if (state.processes) {
    out.reserve(state.processes->size());
    for (const ProcessSpec& p : *state.processes) {
      bool listed = p.pid.has_value() && !(p.while_alive && session.ProcessGone(*p.pid));
      if (listed) {
        out.push_back({*p.pid, &p});
      } else {
        unlisted += p.used_bytes.value_or(0);
      }
    }
  }
  if (unlisted_bytes != nullptr) *unlisted_bytes = unlisted;
  return out;
}

Opt<uint64_t> EffectiveUsedBytes(const Session& session, const GpuState& state) {
  if (!state.memory_used_bytes) return std::nullopt;
  uint64_t used = *state.memory_used_bytes;
  uint64_t unlisted = 0;
  std::vector<ListedProcess> listed = ListProcesses(session, state, &unlisted);
  if (state.memory_used_from_processes) {
    for (const ListedProcess& p : listed) used += p.spec->used_bytes.value_or(0);
  } else {
    // Registered processes (no env: name, yet while_alive) come on top of
    // the scenario's used_mib.
    for (const ListedProcess& p : listed) {
      if (p.spec->pid_env.empty() && p.spec->while_alive) used += p.spec->used_bytes.value_or(0);
    }
    if (!state.keeps_memory_after_exit) used = used > unlisted ? used - unlisted : 0;
  }
  return used;
}

Simulator& Simulator::Get() {
  // Destroyed when the library is unloaded (dlclose or exit), so a client that
  // unloads it leaks nothing; calls after that are the client's bug, as with NVML.
  static Simulator sim;
  return sim;
}

std::shared_ptr<const Session> Simulator::Current() const {
  std::lock_guard<std::mutex> lock(mu_);
  return session_;
}

nvmlReturn_t Simulator::Init() {
  std::lock_guard<std::mutex> init_lock(init_mu_);
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (refcount_ > 0) {
      ++refcount_;
      return NVML_SUCCESS;
    }
    if (!first_init_unix_s_) first_init_unix_s_ = WallNowS();
  }

  const char* path = std::getenv("GPUWARDEN_SIM_SCENARIO");
  if (path == nullptr || path[0] == '\0') {
    Complain("GPUWARDEN_SIM_SCENARIO", "not set (name the scenario file to simulate)");
    return NVML_ERROR_UNKNOWN;
  }
  auto start = EnvNumber("GPUWARDEN_SIM_START");
  if (!start.ok()) {
    Complain("GPUWARDEN_SIM_START", start.error().message);
    return NVML_ERROR_UNKNOWN;
  }
  auto scale = EnvNumber("GPUWARDEN_SIM_BLOCK_SCALE");
  if (!scale.ok()) {
    Complain("GPUWARDEN_SIM_BLOCK_SCALE", scale.error().message);
    return NVML_ERROR_UNKNOWN;
  }
  auto scenario = LoadScenarioFile(path, RealEnv);
  if (!scenario.ok()) {
    Complain(path, scenario.error().message);
    return NVML_ERROR_UNKNOWN;
  }

  double t0 = start->value_or(*first_init_unix_s_);
  auto session = std::make_shared<const Session>(
      std::make_shared<const Scenario>(std::move(*scenario)), t0, scale->value_or(1.0));
  const DriverState& driver = session->DriverAt(session->Now());
  // A wedged driver: the caller waits; nothing else is locked meanwhile.
  SleepSeconds(driver.init_block_s * session->block_scale());
  switch (driver.failure) {
    case DriverFailure::kDriverNotLoaded:
      return NVML_ERROR_DRIVER_NOT_LOADED;
    case DriverFailure::kVersionMismatch:
      return NVML_ERROR_LIB_RM_VERSION_MISMATCH;
    default:
      break;
  }
  std::lock_guard<std::mutex> lock(mu_);
  session_ = std::move(session);
  refcount_ = 1;
  return NVML_SUCCESS;
}

nvmlReturn_t Simulator::Shutdown() {
  std::lock_guard<std::mutex> init_lock(init_mu_);
  std::lock_guard<std::mutex> lock(mu_);
  if (refcount_ == 0) return NVML_ERROR_UNINITIALIZED;
  if (--refcount_ == 0) {
    session_.reset();
    event_sets_.clear();
  }
  return NVML_SUCCESS;
}

EventSet* Simulator::CreateEventSet() {
  auto set = std::make_shared<EventSet>();
  std::lock_guard<std::mutex> lock(mu_);
  event_sets_[set.get()] = set;
  return set.get();
}

std::shared_ptr<EventSet> Simulator::FindEventSet(const void* handle) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = event_sets_.find(handle);
  return it == event_sets_.end() ? nullptr : it->second;
}

bool Simulator::FreeEventSet(const void* handle) {
  std::lock_guard<std::mutex> lock(mu_);
  return event_sets_.erase(handle) != 0;
}

}  // namespace gw::sim
