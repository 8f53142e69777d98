#include "render/status_json.h"

#include <ctime>
#include <optional>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "core/text.h"
#include "render/summary.h"

namespace gw::render {
namespace {

using nlohmann::json;

json Str(std::string_view s) { return ToValidUtf8(s); }

template <typename T>
json Or(const std::optional<T>& v) {
  if (!v.has_value()) return nullptr;
  return *v;
}

json Or(const std::optional<std::string>& v) {
  if (!v.has_value()) return nullptr;
  return Str(*v);
}

json StrList(const std::vector<std::string>& list) {
  json out = json::array();
  for (const std::string& s : list) out.push_back(Str(s));
  return out;
}

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

std::string IsoTimeUtc(int64_t unix_ms) {
  int64_t secs = unix_ms / 1000;
  int64_t ms = unix_ms % 1000;
  if (ms < 0) {
    ms += 1000;
    secs -= 1;
  }
  const std::time_t t = static_cast<std::time_t>(secs);
  std::tm tm{};
  if (gmtime_r(&t, &tm) == nullptr) return "";
  char buf[32];
  if (std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%S", &tm) == 0) return "";
  return fmt::format("{}.{:03}Z", buf, ms);
}

json ErrorJson(const ProbeError& e) {
  return json{{"source", Str(e.source)},
              {"code", Str(e.code)},
              {"message", Str(e.message)},
              {"gpu_index", Or(e.gpu_index)},
              {"nvml_return", Or(e.nvml_return)}};
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
  j["user"] = have ? Or(p->user) : json(nullptr);
  j["uid"] = have ? Or(p->uid) : json(nullptr);
  json command = nullptr;
  if (have && !p->cmdline.empty()) {
    command = Str(JoinRaw(p->cmdline));
  } else if (have && p->comm.has_value()) {
    command = Str(*p->comm);
  } else if (name.has_value()) {
    command = Str(*name);
  }
  j["command"] = command;
  j["argv"] = have ? StrList(p->cmdline) : json(nullptr);
  j["comm"] = have ? Or(p->comm) : json(nullptr);
  j["state"] = have ? StateJson(p->state) : json(nullptr);
  j["ppid"] = have ? Or(p->ppid) : json(nullptr);
  j["start_time_unix_ms"] = have ? Or(p->start_time_unix_ms) : json(nullptr);
  j["age_s"] = have ? Or(p->age_s) : json(nullptr);
  j["cpu_pct"] = have ? Or(p->cpu_pct) : json(nullptr);
  j["cpu_time_ms"] = have ? Or(p->cpu_time_ms) : json(nullptr);
  j["rss_bytes"] = have ? Or(p->rss_bytes) : json(nullptr);
  json container = nullptr;
  if (have && (p->owner.container_runtime || p->owner.container_id)) {
    container =
        json{{"runtime", Or(p->owner.container_runtime)}, {"id", Or(p->owner.container_id)}};
  }
  j["container"] = container;
  j["systemd_unit"] = have ? Or(p->owner.systemd_unit) : json(nullptr);
  j["slurm_job_id"] = have ? Or(p->owner.slurm_job_id) : json(nullptr);
  j["cgroup_path"] = have ? Or(p->owner.cgroup_path) : json(nullptr);
  j["device_files"] = have ? StrList(p->device_files) : json(nullptr);
}

json ProcessJson(const Snapshot& s, const GpuProcess& gp) {
  json j = {{"pid", gp.pid},
            {"type", ProcessTypeName(gp.type)},
            {"used_memory_bytes", Or(gp.used_memory_bytes)},
            {"sm_util_pct", Or(gp.sm_util_pct)},
            {"mem_util_pct", Or(gp.mem_util_pct)},
            {"gpu_instance_id", Or(gp.gpu_instance_id)},
            {"compute_instance_id", Or(gp.compute_instance_id)},
            {"name", Or(gp.name)}};
  AddHostFields(j, s, gp.pid, gp.name);
  return j;
}

json GpuJson(const Snapshot& s, const Gpu& g) {
  json j;
  j["index"] = g.index;
  j["name"] = Or(g.name);
  j["uuid"] = Or(g.uuid);
  j["serial"] = Or(g.serial);
  j["pci_bus_id"] = Or(g.pci_bus_id);
  j["pci_device_id"] = Or(g.pci_device_id);
  j["minor_number"] = Or(g.minor_number);
  j["memory"] = {{"total_bytes", Or(g.memory.total_bytes)},
                 {"used_bytes", Or(g.memory.used_bytes)},
                 {"free_bytes", Or(g.memory.free_bytes)},
                 {"reserved_bytes", Or(g.memory.reserved_bytes)}};
  j["utilization_pct"] = Or(g.utilization_gpu_pct);
  j["memory_utilization_pct"] = Or(g.utilization_memory_pct);
  j["temperature_c"] = Or(g.temperature_c);
  j["temperature_slowdown_c"] = Or(g.temperature_slowdown_c);
  j["temperature_shutdown_c"] = Or(g.temperature_shutdown_c);
  j["fan_speed_pct"] = Or(g.fan_speed_pct);
  j["power_draw_w"] = Or(g.power_draw_w);
  j["power_limit_w"] = Or(g.power_limit_w);
  j["clocks"] = {{"graphics_mhz", Or(g.clocks.graphics_mhz)},
                 {"sm_mhz", Or(g.clocks.sm_mhz)},
                 {"memory_mhz", Or(g.clocks.memory_mhz)},
                 {"video_mhz", Or(g.clocks.video_mhz)},
                 {"max_graphics_mhz", Or(g.clocks.max_graphics_mhz)},
                 {"max_sm_mhz", Or(g.clocks.max_sm_mhz)},
                 {"max_memory_mhz", Or(g.clocks.max_memory_mhz)}};
  j["pstate"] = Or(g.pstate);
  j["persistence_mode"] = Or(g.persistence_mode);
  j["compute_mode"] = ComputeModeJson(g.compute_mode);
  j["mig_mode"] = {{"current", Or(g.mig_mode_current)}, {"pending", Or(g.mig_mode_pending)}};
  j["ecc"] = {{"enabled", Or(g.ecc.mode_current)},
              {"enabled_pending", Or(g.ecc.mode_pending)},
              {"volatile_corrected", Or(g.ecc.volatile_corrected)},
              {"volatile_uncorrected", Or(g.ecc.volatile_uncorrected)},
              {"aggregate_corrected", Or(g.ecc.aggregate_corrected)},
              {"aggregate_uncorrected", Or(g.ecc.aggregate_uncorrected)}};
  j["retired_pages"] = {{"single_bit", Or(g.retired_pages.single_bit)},
                        {"double_bit", Or(g.retired_pages.double_bit)},
                        {"pending", Or(g.retired_pages.pending)}};
  j["remapped_rows"] = {{"correctable", Or(g.remapped_rows.correctable)},
                        {"uncorrectable", Or(g.remapped_rows.uncorrectable)},
                        {"pending", Or(g.remapped_rows.pending)},
                        {"failure", Or(g.remapped_rows.failure)}};
  j["clock_event_reasons"] = {{"active", Or(g.clock_event_reasons)},
                              {"supported", Or(g.clock_event_reasons_supported)},
                              {"active_names", ClockReasonNames(g.clock_event_reasons)}};
  j["pcie"] = {{"link_gen_current", Or(g.pcie.link_gen_current)},
               {"link_gen_max", Or(g.pcie.link_gen_max)},
               {"link_gen_gpu_max", Or(g.pcie.link_gen_gpu_max)},
               {"link_width_current", Or(g.pcie.link_width_current)},
               {"link_width_max", Or(g.pcie.link_width_max)},
               {"replay_counter", Or(g.pcie.replay_counter)}};
  json links = json::array();
  for (const NvLinkState& l : g.nvlinks)
    links.push_back({{"link", l.link}, {"active", Or(l.active)}});
  j["nvlinks"] = links;
  j["unreachable"] = g.unreachable ? ErrorJson(*g.unreachable) : json(nullptr);
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
  return json{{"user", Str(t.user)},
              {"uid", Or(t.uid)},
              {"process_count", t.pids.size()},
              {"pids", t.pids},
              {"gpu_count", t.gpu_indices.size()},
              {"gpu_indices", t.gpu_indices},
              {"used_memory_bytes", t.memory_known > 0 ? json(t.used_memory_bytes) : json(nullptr)},
              {"used_memory_complete", t.memory_unknown == 0},
              {"unlisted_holder_pids", t.unlisted_holder_pids}};
}

// Writes code points that a terminal could act on as \uXXXX. The input is
// valid UTF-8 JSON, where bytes >= 0x80 and DEL only occur inside strings,
// so a \u escape there denotes the very same string value.
std::string EscapeTerminalControls(const std::string& in) {
  std::string out;
  out.reserve(in.size());
  for (size_t i = 0; i < in.size(); ++i) {
    const auto c = static_cast<unsigned char>(in[i]);
    const auto next = [&](size_t k) {
      return i + k < in.size() ? static_cast<unsigned char>(in[i + k]) : 0;
    };
    if (c == 0x7F) {
      out += "\\u007f";
    } else if (c == 0xC2 && next(1) >= 0x80 && next(1) <= 0x9F) {
      out += fmt::format("\\u00{:02x}", next(1));
      i += 1;
    } else if (c == 0xE2 && (next(1) == 0x80 || next(1) == 0x81)) {
      const unsigned cp = 0x2000 + ((next(1) & 0x3Fu) << 6) + (next(2) & 0x3Fu);
      const bool bidi = cp == 0x200E || cp == 0x200F || (cp >= 0x202A && cp <= 0x202E) ||
                        (cp >= 0x2066 && cp <= 0x2069) || cp == 0x2028 || cp == 0x2029;
      if (bidi) {
        out += fmt::format("\\u{:04x}", cp);
        i += 2;
      } else {
        out += static_cast<char>(c);
      }
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
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
  j["source_detail"] = Str(s.source_detail);
  // 0 is the Snapshot's default: a collector never set it.
  j["time"] = s.time_unix_ms > 0 ? json(IsoTimeUtc(s.time_unix_ms)) : json(nullptr);
  j["time_unix_ms"] = s.time_unix_ms > 0 ? json(s.time_unix_ms) : json(nullptr);
  j["probe_duration_ms"] = s.probe_duration_ms;
  j["timed_out"] = s.timed_out;
  json errors = json::array();
  for (const ProbeError& e : s.errors) errors.push_back(ErrorJson(e));
  j["errors"] = errors;
  j["host"] = {{"hostname", Or(s.host.hostname)},
               {"boot_time_unix_s", Or(s.host.boot_time_unix_s)},
               {"cpu_count", Or(s.host.cpu_count)}};
  j["driver"] = {{"version", Or(s.system.driver_version)},
                 {"nvml_version", Or(s.system.nvml_version)},
                 {"cuda_version", Or(CudaVersionString(s.system.cuda_driver_version))},
                 {"cuda_driver_version", Or(s.system.cuda_driver_version)},
                 {"gpu_count", Or(s.system.gpu_count)}};
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
  return j;
}

std::string RenderStatusJson(const Snapshot& snapshot, bool pretty) {
  try {
    const json j = StatusJson(snapshot);
    // Every string went through ToValidUtf8; the replace handler is a second
    // guard so that dump() cannot throw on bytes that slipped past.
    return EscapeTerminalControls(
        j.dump(pretty ? 2 : -1, ' ', false, json::error_handler_t::replace));
  } catch (...) {
    // Not reachable with valid UTF-8 strings; only allocation can fail here.
    // A fixed document keeps the promise of valid JSON without allocating much.
    return R"({"errors":[{"code":"internal","message":"could not serialise the status",)"
           R"("source":"render"}],"schema":"gpuwarden.status","schema_version":1})";
  }
}

}  // namespace gw::render
