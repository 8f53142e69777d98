#include "render/status_json.h"

#include <optional>
#include <string_view>
#include <vector>

#include "core/json_out.h"
#include "core/slurm_lookup.h"
#include "render/summary.h"
#include "render/why_json.h"

namespace gw::render {
namespace {

using nlohmann::json;

std::string_view SourceName(SnapshotSource s) {
  switch (s) {
    case SnapshotSource::kNvml:
      return "nvml";
    case SnapshotSource::kSimulated:
      return "simulated";
    case SnapshotSource::kXmlDump:
      return "xml_dump";
  }
  return "unknown";
}

json ComputeModeJson(const std::optional<ComputeMode>& m) {
  if (!m.has_value()) return nullptr;
  switch (*m) {
    case ComputeMode::kDefault:
      return "default";
    case ComputeMode::kExclusiveThread:
      return "exclusive_thread";
    case ComputeMode::kProhibited:
      return "prohibited";
    case ComputeMode::kExclusiveProcess:
      return "exclusive_process";
  }
  return nullptr;
}

std::string_view ProcessTypeName(GpuProcessType t) {
  switch (t) {
    case GpuProcessType::kCompute:
      return "compute";
    case GpuProcessType::kGraphics:
      return "graphics";
    case GpuProcessType::kComputeAndGraphics:
      return "compute+graphics";
  }
  return "compute";
}

json StateJson(const std::optional<ProcessState>& s) {
  if (!s.has_value()) return nullptr;
  return ProcessStateName(*s);
}

std::string_view TopologyName(TopologyLevel l) {
  switch (l) {
    case TopologyLevel::kInternal:
      return "internal";
    case TopologyLevel::kSingle:
      return "single";
    case TopologyLevel::kMultiple:
      return "multiple";
    case TopologyLevel::kHostBridge:
      return "host_bridge";
    case TopologyLevel::kNode:
      return "node";
    case TopologyLevel::kSystem:
      return "system";
  }
  return "system";
}

json ClockReasonNames(const std::optional<uint64_t>& mask) {
  if (!mask.has_value()) return nullptr;
  namespace ce = clock_event;
  static constexpr std::pair<uint64_t, std::string_view> kNames[] = {
      {ce::kGpuIdle, "gpu_idle"},
      {ce::kApplicationsClocksSetting, "applications_clocks_setting"},
      {ce::kSwPowerCap, "sw_power_cap"},
      {ce::kHwSlowdown, "hw_slowdown"},
      {ce::kSyncBoost, "sync_boost"},
      {ce::kSwThermalSlowdown, "sw_thermal_slowdown"},
      {ce::kHwThermalSlowdown, "hw_thermal_slowdown"},
      {ce::kHwPowerBrakeSlowdown, "hw_power_brake_slowdown"},
      {ce::kDisplayClockSetting, "display_clock_setting"},
  };
  json out = json::array();
  for (const auto& [bit, name] : kNames) {
    if (*mask & bit) out.push_back(name);
  }
  return out;
}

// argv joined for reading, quoting arguments with spaces; raw text.
std::string JoinRaw(const std::vector<std::string>& argv) {
  std::string out;
  for (size_t i = 0; i < argv.size(); ++i) {
    if (i > 0) out += ' ';
    const std::string& a = argv[i];
    if (!a.empty() && a.find_first_of(" '\"") == std::string::npos) {
      out += a;
      continue;
    }
    out += '\'';
    for (char c : a) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
    out += '\'';
  }
  return out;
}

// Fields that come from /proc; all null when the process was not found there.
void AddHostFields(json& j, const Snapshot& s, pid_t pid, const std::optional<std::string>& name) {
  const HostProcess* p = FindHostProcess(s, pid);
  j["in_proc"] = s.processes_scanned ? json(p != nullptr && p->readable) : json(nullptr);
  const bool have = p != nullptr;
  j["user"] = have ? JsonOrNull(p->user) : json(nullptr);
  j["uid"] = have ? JsonOrNull(p->uid) : json(nullptr);
  json command = nullptr;
  if (have && !p->cmdline.empty()) {
    command = JsonText(JoinRaw(p->cmdline));
  } else if (have && p->comm.has_value()) {
    command = JsonText(*p->comm);
  } else if (name.has_value()) {
    command = JsonText(*name);
  }
  j["command"] = command;
  j["argv"] = have ? JsonTextList(p->cmdline) : json(nullptr);
  j["comm"] = have ? JsonOrNull(p->comm) : json(nullptr);
  j["state"] = have ? StateJson(p->state) : json(nullptr);
  j["ppid"] = have ? JsonOrNull(p->ppid) : json(nullptr);
  j["start_time_unix_ms"] = have ? JsonOrNull(p->start_time_unix_ms) : json(nullptr);
  j["age_s"] = have ? JsonOrNull(p->age_s) : json(nullptr);
  j["cpu_pct"] = have ? JsonOrNull(p->cpu_pct) : json(nullptr);
  j["cpu_time_ms"] = have ? JsonOrNull(p->cpu_time_ms) : json(nullptr);
  j["rss_bytes"] = have ? JsonOrNull(p->rss_bytes) : json(nullptr);
  json container = nullptr;
  if (have && (p->owner.container_runtime || p->owner.container_id)) {
    container = json{{"runtime", JsonOrNull(p->owner.container_runtime)},
                     {"id", JsonOrNull(p->owner.container_id)}};
  }
  j["container"] = container;
  j["systemd_unit"] = have ? JsonOrNull(p->owner.systemd_unit) : json(nullptr);
  j["slurm_job_id"] = have ? JsonOrNull(p->owner.slurm_job_id) : json(nullptr);
  j["slurm_step"] = have ? JsonOrNull(p->owner.slurm_step) : json(nullptr);
  j["cgroup_path"] = have ? JsonOrNull(p->owner.cgroup_path) : json(nullptr);
  j["device_files"] = have ? JsonTextList(p->device_files) : json(nullptr);
}

json ProcessJson(const Snapshot& s, const GpuProcess& gp) {
  json j = {{"pid", gp.pid},
            {"type", ProcessTypeName(gp.type)},
            {"used_memory_bytes", JsonOrNull(gp.used_memory_bytes)},
            {"sm_util_pct", JsonOrNull(gp.sm_util_pct)},
            {"mem_util_pct", JsonOrNull(gp.mem_util_pct)},
            {"gpu_instance_id", JsonOrNull(gp.gpu_instance_id)},
            {"compute_instance_id", JsonOrNull(gp.compute_instance_id)},
            {"name", JsonOrNull(gp.name)}};
  AddHostFields(j, s, gp.pid, gp.name);
  return j;
}

json GpuJson(const Snapshot& s, const Gpu& g) {
  json j;
  j["index"] = g.index;
  j["name"] = JsonOrNull(g.name);
  j["uuid"] = JsonOrNull(g.uuid);
  j["serial"] = JsonOrNull(g.serial);
  j["pci_bus_id"] = JsonOrNull(g.pci_bus_id);
  j["pci_device_id"] = JsonOrNull(g.pci_device_id);
  j["minor_number"] = JsonOrNull(g.minor_number);
  j["memory"] = {{"total_bytes", JsonOrNull(g.memory.total_bytes)},
                 {"used_bytes", JsonOrNull(g.memory.used_bytes)},
                 {"free_bytes", JsonOrNull(g.memory.free_bytes)},
                 {"reserved_bytes", JsonOrNull(g.memory.reserved_bytes)}};
  j["utilization_pct"] = JsonOrNull(g.utilization_gpu_pct);
  j["memory_utilization_pct"] = JsonOrNull(g.utilization_memory_pct);
  j["temperature_c"] = JsonOrNull(g.temperature_c);
  j["temperature_slowdown_c"] = JsonOrNull(g.temperature_slowdown_c);
  j["temperature_shutdown_c"] = JsonOrNull(g.temperature_shutdown_c);
  j["fan_speed_pct"] = JsonOrNull(g.fan_speed_pct);
  j["power_draw_w"] = JsonOrNull(g.power_draw_w);
  j["power_limit_w"] = JsonOrNull(g.power_limit_w);
  j["clocks"] = {{"graphics_mhz", JsonOrNull(g.clocks.graphics_mhz)},
                 {"sm_mhz", JsonOrNull(g.clocks.sm_mhz)},
                 {"memory_mhz", JsonOrNull(g.clocks.memory_mhz)},
                 {"video_mhz", JsonOrNull(g.clocks.video_mhz)},
                 {"max_graphics_mhz", JsonOrNull(g.clocks.max_graphics_mhz)},
                 {"max_sm_mhz", JsonOrNull(g.clocks.max_sm_mhz)},
                 {"max_memory_mhz", JsonOrNull(g.clocks.max_memory_mhz)}};
  j["pstate"] = JsonOrNull(g.pstate);
  j["persistence_mode"] = JsonOrNull(g.persistence_mode);
  j["compute_mode"] = ComputeModeJson(g.compute_mode);
  j["mig_mode"] = {{"current", JsonOrNull(g.mig_mode_current)},
                   {"pending", JsonOrNull(g.mig_mode_pending)}};
  j["ecc"] = {{"enabled", JsonOrNull(g.ecc.mode_current)},
              {"enabled_pending", JsonOrNull(g.ecc.mode_pending)},
              {"volatile_corrected", JsonOrNull(g.ecc.volatile_corrected)},
              {"volatile_uncorrected", JsonOrNull(g.ecc.volatile_uncorrected)},
              {"aggregate_corrected", JsonOrNull(g.ecc.aggregate_corrected)},
              {"aggregate_uncorrected", JsonOrNull(g.ecc.aggregate_uncorrected)}};
  j["retired_pages"] = {{"single_bit", JsonOrNull(g.retired_pages.single_bit)},
                        {"double_bit", JsonOrNull(g.retired_pages.double_bit)},
                        {"pending", JsonOrNull(g.retired_pages.pending)}};
  j["remapped_rows"] = {{"correctable", JsonOrNull(g.remapped_rows.correctable)},
                        {"uncorrectable", JsonOrNull(g.remapped_rows.uncorrectable)},
                        {"pending", JsonOrNull(g.remapped_rows.pending)},
                        {"failure", JsonOrNull(g.remapped_rows.failure)}};
  j["clock_event_reasons"] = {{"active", JsonOrNull(g.clock_event_reasons)},
                              {"supported", JsonOrNull(g.clock_event_reasons_supported)},
                              {"active_names", ClockReasonNames(g.clock_event_reasons)}};
  j["pcie"] = {{"link_gen_current", JsonOrNull(g.pcie.link_gen_current)},
               {"link_gen_max", JsonOrNull(g.pcie.link_gen_max)},
               {"link_gen_gpu_max", JsonOrNull(g.pcie.link_gen_gpu_max)},
               {"link_width_current", JsonOrNull(g.pcie.link_width_current)},
               {"link_width_max", JsonOrNull(g.pcie.link_width_max)},
               {"replay_counter", JsonOrNull(g.pcie.replay_counter)}};
  json links = json::array();
  for (const NvLinkState& l : g.nvlinks)
    links.push_back({{"link", l.link}, {"active", JsonOrNull(l.active)}});
  j["nvlinks"] = links;
  j["unreachable"] = g.unreachable ? ProbeErrorJson(*g.unreachable) : json(nullptr);
  // The Slurm jobs given this GPU; null when not known (no Slurm section, or
  // Slurm not read).
  if (SlurmAllocationsKnown(s)) {
    json ids = json::array();
    for (const SlurmJob* job : SlurmJobsOnGpu(s, g.index)) ids.push_back(JsonText(job->id));
    j["slurm_jobs"] = ids;
  } else {
    j["slurm_jobs"] = nullptr;
  }
  j["processes_known"] = g.processes_known;
  if (g.processes_known) {
    json procs = json::array();
    for (const GpuProcess& gp : g.processes) procs.push_back(ProcessJson(s, gp));
    j["processes"] = procs;
  } else {
    j["processes"] = nullptr;  // Unknown, not "none".
  }
  return j;
}

json SlurmNodeJson(const SlurmNode& node) {
  json jobs = json::array();
  for (const SlurmJob& job : node.jobs) {
    jobs.push_back({{"id", JsonText(job.id)},
                    {"user", JsonOrNull(job.user)},
                    {"name", JsonOrNull(job.name)},
                    {"state", JsonOrNull(job.state)},
                    {"start_time_unix_s", JsonOrNull(job.start_time_unix_s)},
                    {"gres_indexes", job.gres_indexes},
                    {"gpus", job.gpus}});
  }
  return {{"node", JsonText(node.name)},
          {"unread", JsonOrNull(node.unread)},
          {"jobs", node.unread ? json(nullptr) : jobs},
          {"gpu_map", node.unread ? json(nullptr) : JsonText(node.gpu_map)},
          {"notes", JsonTextList(node.notes)}};
}

json HolderJson(const Snapshot& s, const HostProcess& p) {
  json j = {{"pid", p.pid}};
  AddHostFields(j, s, p.pid, std::nullopt);
  json gpus = json::array();
  for (const std::string& f : p.device_files) {
    if (const auto idx = GpuIndexForDeviceFile(s, f)) gpus.push_back(*idx);
  }
  j["gpu_indices"] = gpus;
  return j;
}

json UserJson(const UserTotal& t) {
  return json{{"user", JsonText(t.user)},
              {"uid", JsonOrNull(t.uid)},
              {"process_count", t.pids.size()},
              {"pids", t.pids},
              {"gpu_count", t.gpu_indices.size()},
              {"gpu_indices", t.gpu_indices},
              {"used_memory_bytes", t.memory_known > 0 ? json(t.used_memory_bytes) : json(nullptr)},
              {"used_memory_complete", t.memory_unknown == 0},
              {"unlisted_holder_pids", t.unlisted_holder_pids}};
}

}  // namespace

std::string_view ProcessStateName(ProcessState state) {
  switch (state) {
    case ProcessState::kRunning:
      return "running";
    case ProcessState::kSleeping:
      return "sleeping";
    case ProcessState::kDiskSleep:
      return "disk_sleep";
    case ProcessState::kZombie:
      return "zombie";
    case ProcessState::kStopped:
      return "stopped";
    case ProcessState::kIdle:
      return "idle";
    case ProcessState::kDead:
      return "dead";
    case ProcessState::kOther:
      return "other";
  }
  return "other";
}

json StatusJson(const Snapshot& s) {
  json j;
  j["schema"] = kStatusSchemaName;
  j["schema_version"] = kStatusSchemaVersion;
  j["source"] = SourceName(s.source);
  j["source_detail"] = JsonText(s.source_detail);
  // 0 is the Snapshot's default: a collector never set it.
  j["time"] = s.time_unix_ms > 0 ? JsonOrNull(IsoTimeUtc(s.time_unix_ms)) : json(nullptr);
  j["time_unix_ms"] = s.time_unix_ms > 0 ? json(s.time_unix_ms) : json(nullptr);
  j["probe_duration_ms"] = s.probe_duration_ms;
  j["timed_out"] = s.timed_out;
  json errors = json::array();
  for (const ProbeError& e : s.errors) errors.push_back(ProbeErrorJson(e));
  j["errors"] = errors;
  j["host"] = {{"hostname", JsonOrNull(s.host.hostname)},
               {"boot_time_unix_s", JsonOrNull(s.host.boot_time_unix_s)},
               {"cpu_count", JsonOrNull(s.host.cpu_count)}};
  j["driver"] = {{"version", JsonOrNull(s.system.driver_version)},
                 {"nvml_version", JsonOrNull(s.system.nvml_version)},
                 {"cuda_version", JsonOrNull(CudaVersionString(s.system.cuda_driver_version))},
                 {"cuda_driver_version", JsonOrNull(s.system.cuda_driver_version)},
                 {"gpu_count", JsonOrNull(s.system.gpu_count)}};
  j["processes_scanned"] = s.processes_scanned;
  json gpus = json::array();
  for (const Gpu& g : s.gpus) gpus.push_back(GpuJson(s, g));
  j["gpus"] = gpus;
  json holders = json::array();
  for (const HostProcess* p : UnlistedDeviceHolders(s)) holders.push_back(HolderJson(s, *p));
  j["device_holders_not_listed"] = holders;
  json users = json::array();
  for (const UserTotal& t : ComputeUserTotals(s)) users.push_back(UserJson(t));
  j["users"] = users;
  json topo = json::array();
  for (const TopologyLink& l : s.topology) {
    topo.push_back({{"gpu_a", l.gpu_a},
                    {"gpu_b", l.gpu_b},
                    {"level", TopologyName(l.level)},
                    {"nvlinks", l.nvlinks}});
  }
  j["topology"] = topo;
  j["slurm"] = s.slurm ? SlurmNodeJson(*s.slurm) : json(nullptr);
  return j;
}

std::string RenderStatusJson(const Snapshot& snapshot, bool pretty) {
  try {
    return DumpJsonForTerminal(StatusJson(snapshot), pretty, kStatusSchemaName);
  } catch (...) {
    // Building the document can run out of memory too.
    return JsonErrorDocument(kStatusSchemaName);
  }
}

}  // namespace gw::render
