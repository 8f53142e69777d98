#include "import/nvsmi_xml.h"

#include <exception>
#include <initializer_list>
#include <limits>
#include <map>
#include <new>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <pugixml.hpp>

#include "core/units.h"
#include "import/nvsmi_values.h"
#include "os/file_io.h"

namespace gw::import {
namespace {

constexpr char kSource[] = "xml";
constexpr char kRootName[] = "nvidia_smi_log";
// NVML enumerates far fewer; the cap keeps a hostile file from turning a few
// bytes per <gpu/> into a large Gpu each.
constexpr unsigned kMaxGpus = 4096;
// What a GPU's sensor can report; a value outside is a broken field.
constexpr int64_t kMinCelsius = -40, kMaxCelsius = 200;

// ---------------------------------------------------------------------------
// Odd values met while reading one GPU (or the top of the file).
//
// A lost GPU prints "GPU is lost" in every one of its ~60 fields; the user needs
// to hear it once, with how many fields it hit. Issues are therefore grouped by
// their text. The number of distinct texts is capped so that a hostile file
// with millions of different junk values stays linear.
class IssueLog {
 public:
  void Add(std::string_view path, std::string_view text) {
    text = TrimXmlSpace(text);
    for (Issue& issue : issues_) {
      if (issue.text == text) {
        ++issue.count;
        return;
      }
    }
    if (issues_.size() >= kMaxDistinct) {
      ++dropped_;
      return;
    }
    Issue issue;
    issue.text = std::string(text);
    issue.first_path = std::string(path);
    if (auto nvml = MatchNvmlError(text)) {
      issue.code = std::string(nvml->code);
      issue.nvml_return = nvml->nvml_return;
    } else {
      issue.code = "unexpected_value";
    }
    issues_.push_back(std::move(issue));
  }

  // Appends one ProbeError per distinct text. `subject` starts each message
  // ("GPU 1 (00000000:02:00.0)" or the file name). Returns the first "gpu_lost" one.
  std::optional<ProbeError> AppendTo(std::vector<ProbeError>* errors, Opt<unsigned> gpu_index,
                                     const std::string& subject) const {
    std::optional<ProbeError> lost;
    for (const Issue& issue : issues_) {
      ProbeError error;
      error.source = kSource;
      error.code = issue.code;
      error.gpu_index = gpu_index;
      error.nvml_return = issue.nvml_return;
      std::string others;
      if (issue.count > 1) {
        others = " and " + std::to_string(issue.count - 1) + " other field" +
                 (issue.count > 2 ? "s" : "");
      }
      if (issue.nvml_return) {
        error.message = subject + ": the dump reads " + QuoteForMessage(issue.text) + " for " +
                        issue.first_path + others;
      } else {
        error.message = subject + ": value " + QuoteForMessage(issue.text) + " at " +
                        issue.first_path + others + " is not understood; treated as unknown";
      }
      if (issue.code == "gpu_lost" && !lost) lost = error;
      errors->push_back(std::move(error));
    }
    if (dropped_ > 0) {
      ProbeError error;
      error.source = kSource;
      error.code = "unexpected_value";
      error.gpu_index = gpu_index;
      error.message = subject + ": " + std::to_string(dropped_) +
                      " more fields hold values that are not understood; treated as unknown";
      errors->push_back(std::move(error));
    }
    return lost;
  }

 private:
  static constexpr size_t kMaxDistinct = 16;
  struct Issue {
    std::string text;
    std::string code;
    std::string first_path;
    Opt<int> nvml_return;
    uint64_t count = 1;
  };
  std::vector<Issue> issues_;
  uint64_t dropped_ = 0;
};

// ---------------------------------------------------------------------------
// Typed access to the values below one element. Paths are "a/b/c".
class Reader {
 public:
  Reader(pugi::xml_node base, std::string prefix, IssueLog* log)
      : base_(base), prefix_(std::move(prefix)), log_(log) {}

  bool Has(std::string_view path) const { return static_cast<bool>(Find(path).node); }

  // The element is there and says "N/A": nvidia-smi's word for a value the
  // GPU does not report (not an error string).
  bool SaysNotAvailable(std::string_view path) const {
    const Found found = Find(path);
    return found.node && TrimXmlSpace(found.node.child_value()) == "N/A";
  }

  // The trimmed text at `path` when it is a value: absent elements and the
  // "N/A"-like words give nullopt silently; NVML error strings give nullopt and
  // are logged. A section that collapsed to text ("<remapped_rows>N/A</...>",
  // "<ecc_errors>Unknown Error</...>") is classified the same way.
  std::optional<std::string_view> Text(std::string_view path) {
    Found found = Find(path);
    if (!found.node) {
      if (found.deepest != base_) {
        std::string_view section_text = TrimXmlSpace(found.deepest.child_value());
        if (!section_text.empty()) Classify(path, section_text);
      }
      return std::nullopt;
    }
    std::string_view text = TrimXmlSpace(found.node.child_value());
    if (!Classify(path, text)) return std::nullopt;
    return text;
  }

  // As Text, but the value as stored (untrimmed), for process names.
  std::optional<std::string> RawString(std::string_view path) {
    if (!Text(path)) return std::nullopt;
    return std::string(Find(path).node.child_value());
  }

  std::optional<std::string> String(std::string_view path) {
    auto text = Text(path);
    if (!text) return std::nullopt;
    return std::string(*text);
  }

  template <typename T>
  std::optional<T> Unsigned(std::string_view path, std::string_view unit = "") {
    auto text = Text(path);
    if (!text) return std::nullopt;
    auto value = ParseUnsignedWithUnit(*text, unit);
    if (!value || *value > std::numeric_limits<T>::max()) return Unexpected<T>(path, *text);
    return static_cast<T>(*value);
  }

  std::optional<int> Signed(std::string_view path, std::string_view unit) {
    auto text = Text(path);
    if (!text) return std::nullopt;
    auto value = ParseSignedWithUnit(*text, unit);
    if (!value || *value > std::numeric_limits<int>::max() ||
        *value < std::numeric_limits<int>::min()) {
      return Unexpected<int>(path, *text);
    }
    return static_cast<int>(*value);
  }

  // A percentage: 0..100, else not understood (a reading of 250 % is not a
  // busy GPU but a broken field).
  std::optional<unsigned> Percent(std::string_view path) {
    auto text = Text(path);
    if (!text) return std::nullopt;
    auto value = ParseUnsignedWithUnit(*text, "%");
    if (!value || *value > 100) return Unexpected<unsigned>(path, *text);
    return static_cast<unsigned>(*value);
  }

  // A GPU temperature in C, within what a sensor can report (-40..200).
  std::optional<int> Celsius(std::string_view path) {
    auto text = Text(path);
    if (!text) return std::nullopt;
    auto value = ParseSignedWithUnit(*text, "C");
    if (!value || *value < kMinCelsius || *value > kMaxCelsius) return Unexpected<int>(path, *text);
    return static_cast<int>(*value);
  }

  std::optional<double> Decimal(std::string_view path, std::string_view unit) {
    auto text = Text(path);
    if (!text) return std::nullopt;
    auto value = ParseDecimalWithUnit(*text, unit);
    if (!value) return Unexpected<double>(path, *text);
    return value;
  }

  std::optional<uint64_t> Memory(std::string_view path) {
    auto text = Text(path);
    if (!text) return std::nullopt;
    auto value = ParseMemoryBytes(*text);
    if (!value) return Unexpected<uint64_t>(path, *text);
    return value;
  }

  std::optional<uint32_t> Hex32(std::string_view path) {
    auto text = Text(path);
    if (!text) return std::nullopt;
    auto value = ParseHex(*text);
    if (!value || *value > std::numeric_limits<uint32_t>::max()) {
      return Unexpected<uint32_t>(path, *text);
    }
    return static_cast<uint32_t>(*value);
  }

  std::optional<unsigned> Pstate(std::string_view path) {
    auto text = Text(path);
    if (!text) return std::nullopt;
    auto value = ParsePstate(*text);
    if (!value) return Unexpected<unsigned>(path, *text);
    return value;
  }

  std::optional<bool> Flag(std::string_view path, std::string_view yes, std::string_view no) {
    auto text = Text(path);
    if (!text) return std::nullopt;
    auto value = ParseFlag(*text, yes, no);
    if (!value) return Unexpected<bool>(path, *text);
    return value;
  }

  template <typename T>
  std::optional<T> Unexpected(std::string_view path, std::string_view text) {
    log_->Add(prefix_ + std::string(path), text);
    return std::nullopt;
  }

 private:
  struct Found {
    pugi::xml_node node;     // The element at the path, or empty.
    pugi::xml_node deepest;  // The deepest element of the path that exists.
  };

  static pugi::xml_node Child(pugi::xml_node parent, std::string_view name) {
    for (pugi::xml_node child = parent.first_child(); child; child = child.next_sibling()) {
      if (child.type() == pugi::node_element && name == child.name()) return child;
    }
    return {};
  }

  Found Find(std::string_view path) const {
    pugi::xml_node node = base_;
    while (!path.empty()) {
      size_t slash = path.find('/');
      pugi::xml_node next = Child(node, path.substr(0, slash));
      if (!next) return Found{{}, node};
      node = next;
      path = slash == std::string_view::npos ? std::string_view() : path.substr(slash + 1);
    }
    return Found{node, node};
  }

  // True when `text` is a value to parse; otherwise logs it if it is not one of
  // the benign "N/A" words.
  bool Classify(std::string_view path, std::string_view text) {
    if (IsUnsupportedText(text)) return false;
    if (MatchNvmlError(text)) {
      log_->Add(prefix_ + std::string(path), text);
      return false;
    }
    return true;
  }

  pugi::xml_node base_;
  std::string prefix_;
  IssueLog* log_;
};

// Sum of the parts that hold a number; unknown when none does, or on overflow.
std::optional<uint64_t> SumKnown(std::initializer_list<std::optional<uint64_t>> parts) {
  std::optional<uint64_t> sum;
  for (const auto& part : parts) {
    if (!part) continue;
    uint64_t total = 0;
    if (__builtin_add_overflow(sum.value_or(0), *part, &total)) return std::nullopt;
    sum = total;
  }
  return sum;
}

// Either side may be unknown; a known "true" wins.
std::optional<bool> AnyTrue(std::optional<bool> a, std::optional<bool> b) {
  if (a.value_or(false) || b.value_or(false)) return true;
  if (a || b) return false;
  return std::nullopt;
}

template <typename T>
std::optional<T> FirstKnown(std::initializer_list<std::optional<T>> candidates) {
  for (const auto& candidate : candidates) {
    if (candidate) return candidate;
  }
  return std::nullopt;
}

void ReadEccCounts(Reader& r, const std::string& base, Opt<uint64_t>* corrected,
                   Opt<uint64_t>* uncorrected, Opt<uint64_t>* sram_uncorrected = nullptr,
                   Opt<uint64_t>* dram_uncorrected = nullptr) {
  auto count = [&](const char* leaf) { return r.Unsigned<uint64_t>(base + "/" + leaf); };
  if (r.Has(base + "/single_bit") || r.Has(base + "/double_bit")) {
    // R418 and older: per-location counters with a total, single = corrected.
    auto old_total = [&](const std::string& kind) {
      auto total = r.Unsigned<uint64_t>(base + "/" + kind + "/total");
      if (total) return total;
      auto part = [&](const char* leaf) {
        return r.Unsigned<uint64_t>(base + "/" + kind + "/" + leaf);
      };
      return SumKnown({part("device_memory"), part("register_file"), part("l1_cache"),
                       part("l2_cache"), part("texture_memory"), part("texture_shm"), part("cbu")});
    };
    *corrected = old_total("single_bit");
    *uncorrected = old_total("double_bit");
    return;
  }
  auto sram_uncorrectable = count("sram_uncorrectable");
  if (!sram_uncorrectable) {
    // v13 splits SRAM uncorrectable errors by how they were detected.
    sram_uncorrectable =
        SumKnown({count("sram_uncorrectable_parity"), count("sram_uncorrectable_secded")});
  }
  *corrected = SumKnown({count("sram_correctable"), count("dram_correctable")});
  *uncorrected = SumKnown({sram_uncorrectable, count("dram_uncorrectable")});
  if (sram_uncorrected != nullptr) *sram_uncorrected = sram_uncorrectable;
  if (dram_uncorrected != nullptr) *dram_uncorrected = count("dram_uncorrectable");
}

std::optional<ComputeMode> ReadComputeMode(Reader& r) {
  auto text = r.Text("compute_mode");
  if (!text) return std::nullopt;
  if (*text == "Default") return ComputeMode::kDefault;
  if (*text == "Exclusive_Thread") return ComputeMode::kExclusiveThread;
  if (*text == "Prohibited") return ComputeMode::kProhibited;
  if (*text == "Exclusive_Process") return ComputeMode::kExclusiveProcess;
  return r.Unexpected<ComputeMode>("compute_mode", *text);
}

void ReadClockEventReasons(pugi::xml_node gpu_node, Reader& r, Gpu* gpu) {
  struct Reason {
    const char* suffix;
    uint64_t bit;
  };
  static constexpr Reason kReasons[] = {
      {"gpu_idle", clock_event::kGpuIdle},
      {"applications_clocks_setting", clock_event::kApplicationsClocksSetting},
      {"sw_power_cap", clock_event::kSwPowerCap},
      {"hw_slowdown", clock_event::kHwSlowdown},
      {"sync_boost", clock_event::kSyncBoost},
      {"sw_thermal_slowdown", clock_event::kSwThermalSlowdown},
      {"hw_thermal_slowdown", clock_event::kHwThermalSlowdown},
      {"hw_power_brake_slowdown", clock_event::kHwPowerBrakeSlowdown},
      {"display_clocks_setting", clock_event::kDisplayClockSetting},
  };
  // Renamed at R535 (clocks_throttle_reasons -> clocks_event_reasons), same suffixes.
  const bool renamed = static_cast<bool>(gpu_node.child("clocks_event_reasons"));
  const std::string section = renamed ? "clocks_event_reasons/clocks_event_reason_"
                                      : "clocks_throttle_reasons/clocks_throttle_reason_";
  std::optional<uint64_t> mask;
  for (const Reason& reason : kReasons) {
    auto active = r.Flag(section + reason.suffix, "Active", "Not Active");
    if (!active) continue;
    mask = mask.value_or(0) | (*active ? reason.bit : 0);
  }
  gpu->clock_event_reasons = mask;
}

GpuProcessType ReadProcessType(Reader& r, const std::string& path) {
  auto text = r.Text(path);
  if (!text) return GpuProcessType::kCompute;
  if (*text == "C") return GpuProcessType::kCompute;
  if (*text == "G") return GpuProcessType::kGraphics;
  if (*text == "C+G") return GpuProcessType::kComputeAndGraphics;
  // Newer drivers may add letters (e.g. MPS "M+C"); keep what C and G say.
  const bool compute = text->find('C') != std::string_view::npos;
  const bool graphics = text->find('G') != std::string_view::npos;
  if (compute && graphics) return GpuProcessType::kComputeAndGraphics;
  if (graphics) return GpuProcessType::kGraphics;
  if (!compute) r.Unexpected<bool>(path, *text);
  return GpuProcessType::kCompute;
}

GpuProcessType CombineTypes(GpuProcessType a, GpuProcessType b) {
  return a == b ? a : GpuProcessType::kComputeAndGraphics;
}

void ReadProcesses(pugi::xml_node gpu_node, IssueLog* log, Gpu* gpu) {
  pugi::xml_node list = gpu_node.child("processes");
  if (!list) return;  // processes_known stays false.
  if (!list.child("process_info")) {
    // "<processes />" or "None" is an empty list; "N/A" or an error string is an
    // unknown one.
    std::string_view text = TrimXmlSpace(list.child_value());
    if (text.empty() || text == "None") {
      gpu->processes_known = true;
    } else if (!IsUnsupportedText(text)) {
      log->Add("processes", text);
    }
    return;
  }
  gpu->processes_known = true;
  // (pid, GPU instance, compute instance); kNoInstance stands for "N/A".
  using ProcessKey = std::tuple<pid_t, uint64_t, uint64_t>;
  constexpr uint64_t kNoInstance = std::numeric_limits<uint64_t>::max();
  std::map<ProcessKey, size_t> seen;
  unsigned position = 0;
  for (pugi::xml_node info = list.child("process_info"); info;
       info = info.next_sibling("process_info"), ++position) {
    Reader p(info, "processes/process_info[" + std::to_string(position) + "]/", log);
    auto pid = p.Unsigned<uint64_t>("pid");
    if (!pid || *pid == 0 || *pid > static_cast<uint64_t>(std::numeric_limits<pid_t>::max())) {
      if (pid) p.Unexpected<bool>("pid", std::to_string(*pid));
      continue;  // Without a PID the entry cannot be told apart from others.
    }
    GpuProcess process;
    process.pid = static_cast<pid_t>(*pid);
    process.type = ReadProcessType(p, "type");
    process.used_memory_bytes = p.Memory("used_memory");
    process.gpu_instance_id = p.Unsigned<unsigned>("gpu_instance_id");
    process.compute_instance_id = p.Unsigned<unsigned>("compute_instance_id");
    process.name = p.RawString("process_name");

    // Keyed lookup: a hostile file may list millions of entries.
    const ProcessKey key{process.pid, process.gpu_instance_id.value_or(kNoInstance),
                         process.compute_instance_id.value_or(kNoInstance)};
    auto [slot, inserted] = seen.emplace(key, gpu->processes.size());
    if (inserted) {
      gpu->processes.push_back(std::move(process));
      continue;
    }
    GpuProcess* same = &gpu->processes[slot->second];
    // The driver reports a process's memory once per list; the figures are the
    // same allocation, not two to add.
    same->type = CombineTypes(same->type, process.type);
    if (process.used_memory_bytes &&
        (!same->used_memory_bytes || *process.used_memory_bytes > *same->used_memory_bytes)) {
      same->used_memory_bytes = process.used_memory_bytes;
    }
    if (!same->name) same->name = std::move(process.name);
  }
}

Gpu ReadGpu(pugi::xml_node node, unsigned index, IssueLog* log) {
  Gpu gpu;
  gpu.index = index;
  Reader r(node, "", log);

  std::string_view own_text = TrimXmlSpace(node.child_value());
  if (!own_text.empty() && !IsUnsupportedText(own_text)) log->Add("gpu", own_text);

  gpu.name = r.String("product_name");
  gpu.uuid = r.String("uuid");
  gpu.serial = r.String("serial");
  gpu.pci_bus_id = r.String("pci/pci_bus_id");
  if (!gpu.pci_bus_id) {
    std::string_view id = TrimXmlSpace(node.attribute("id").value());
    if (!id.empty()) gpu.pci_bus_id = std::string(id);
  }
  gpu.pci_device_id = r.Hex32("pci/pci_device_id");
  gpu.minor_number = r.Unsigned<unsigned>("minor_number");

  gpu.memory.total_bytes = r.Memory("fb_memory_usage/total");
  gpu.memory.reserved_bytes = r.Memory("fb_memory_usage/reserved");
  gpu.memory.used_bytes = r.Memory("fb_memory_usage/used");
  gpu.memory.free_bytes = r.Memory("fb_memory_usage/free");
  if (const MemoryInfo& m = gpu.memory;
      m.total_bytes && m.used_bytes &&
      (*m.used_bytes > *m.total_bytes ||
       m.reserved_bytes.value_or(0) > *m.total_bytes - *m.used_bytes)) {
    // More in use than the GPU has: no reading of this memory can be
    // trusted (a damaged or hand-edited dump), so none is used.
    r.Unexpected<uint64_t>("fb_memory_usage/used", FormatBytes(*m.used_bytes) + " used (+ " +
                                                       FormatBytes(m.reserved_bytes.value_or(0)) +
                                                       " reserved) of " +
                                                       FormatBytes(*m.total_bytes) + " in total");
    gpu.memory.used_bytes.reset();
    gpu.memory.free_bytes.reset();
  }

  gpu.utilization_gpu_pct = r.Percent("utilization/gpu_util");
  // nvidia-smi prints N/A for a value the GPU does not report.
  gpu.utilization_not_supported = r.SaysNotAvailable("utilization/gpu_util");
  gpu.utilization_memory_pct = r.Percent("utilization/memory_util");

  gpu.temperature_c = r.Celsius("temperature/gpu_temp");
  gpu.temperature_slowdown_c = r.Celsius("temperature/gpu_temp_slow_threshold");
  gpu.temperature_shutdown_c = r.Celsius("temperature/gpu_temp_max_threshold");
  gpu.fan_speed_pct = r.Percent("fan_speed");

  // Renamed at R535: power_readings -> gpu_power_readings (+ module/memory readings).
  const bool v12_power = static_cast<bool>(node.child("gpu_power_readings"));
  const std::string power = v12_power ? "gpu_power_readings/" : "power_readings/";
  gpu.power_draw_w = FirstKnown<double>({r.Decimal(power + "power_draw", "W"),
                                         r.Decimal(power + "average_power_draw", "W"),
                                         r.Decimal(power + "instant_power_draw", "W")});
  gpu.power_limit_w = FirstKnown<double>({r.Decimal(power + "current_power_limit", "W"),
                                          r.Decimal(power + "enforced_power_limit", "W"),
                                          r.Decimal(power + "power_limit", "W")});
  gpu.power_default_limit_w = r.Decimal(power + "default_power_limit", "W");

  gpu.clocks.graphics_mhz = r.Unsigned<unsigned>("clocks/graphics_clock", "MHz");
  gpu.clocks.sm_mhz = r.Unsigned<unsigned>("clocks/sm_clock", "MHz");
  gpu.clocks.memory_mhz = r.Unsigned<unsigned>("clocks/mem_clock", "MHz");
  gpu.clocks.video_mhz = r.Unsigned<unsigned>("clocks/video_clock", "MHz");
  gpu.clocks.max_graphics_mhz = r.Unsigned<unsigned>("max_clocks/graphics_clock", "MHz");
  gpu.clocks.max_sm_mhz = r.Unsigned<unsigned>("max_clocks/sm_clock", "MHz");
  gpu.clocks.max_memory_mhz = r.Unsigned<unsigned>("max_clocks/mem_clock", "MHz");

  gpu.pstate = r.Pstate("performance_state");
  gpu.persistence_mode = r.Flag("persistence_mode", "Enabled", "Disabled");
  gpu.compute_mode = ReadComputeMode(r);
  gpu.mig_mode_current = r.Flag("mig_mode/current_mig", "Enabled", "Disabled");
  gpu.mig_mode_pending = r.Flag("mig_mode/pending_mig", "Enabled", "Disabled");

  gpu.ecc.mode_current = r.Flag("ecc_mode/current_ecc", "Enabled", "Disabled");
  gpu.ecc.mode_pending = r.Flag("ecc_mode/pending_ecc", "Enabled", "Disabled");
  ReadEccCounts(r, "ecc_errors/volatile", &gpu.ecc.volatile_corrected,
                &gpu.ecc.volatile_uncorrected, &gpu.ecc.volatile_sram_uncorrected,
                &gpu.ecc.volatile_dram_uncorrected);
  gpu.ecc.sram_threshold_exceeded =
      r.Flag("ecc_errors/aggregate/sram_threshold_exceeded", "Yes", "No");
  ReadEccCounts(r, "ecc_errors/aggregate", &gpu.ecc.aggregate_corrected,
                &gpu.ecc.aggregate_uncorrected);

  gpu.retired_pages.single_bit =
      r.Unsigned<uint64_t>("retired_pages/multiple_single_bit_retirement/retired_count");
  gpu.retired_pages.double_bit =
      r.Unsigned<uint64_t>("retired_pages/double_bit_retirement/retired_count");
  // Both name the same NVML state (pages waiting for the next driver load).
  gpu.retired_pages.pending = AnyTrue(r.Flag("retired_pages/pending_blacklist", "Yes", "No"),
                                      r.Flag("retired_pages/pending_retirement", "Yes", "No"));

  gpu.remapped_rows.correctable = r.Unsigned<uint64_t>("remapped_rows/remapped_row_corr");
  gpu.remapped_rows.uncorrectable = r.Unsigned<uint64_t>("remapped_rows/remapped_row_unc");
  gpu.remapped_rows.pending = r.Flag("remapped_rows/remapped_row_pending", "Yes", "No");
  gpu.remapped_rows.failure = r.Flag("remapped_rows/remapped_row_failure", "Yes", "No");

  ReadClockEventReasons(node, r, &gpu);

  const std::string link = "pci/pci_gpu_link_info/";
  gpu.pcie.link_gen_current = r.Unsigned<unsigned>(link + "pcie_gen/current_link_gen");
  gpu.pcie.link_gen_max = r.Unsigned<unsigned>(link + "pcie_gen/max_link_gen");
  gpu.pcie.link_gen_gpu_max = r.Unsigned<unsigned>(link + "pcie_gen/max_device_link_gen");
  gpu.pcie.link_width_current = r.Unsigned<unsigned>(link + "link_widths/current_link_width", "x");
  gpu.pcie.link_width_max = r.Unsigned<unsigned>(link + "link_widths/max_link_width", "x");
  gpu.pcie.replay_counter = r.Unsigned<uint64_t>("pci/replay_counter");

  ReadProcesses(node, log, &gpu);
  return gpu;
}

std::string GpuSubject(const Gpu& gpu) {
  std::string subject = "GPU " + std::to_string(gpu.index);
  if (gpu.pci_bus_id) subject += " (" + EscapeForMessage(*gpu.pci_bus_id, 40) + ")";
  return subject;
}

// ---------------------------------------------------------------------------
// Input checks before and around the XML parser.

Error Malformed(const std::string& name, const std::string& problem) {
  return MakeError("malformed", name + ": " + problem);
}

// PowerShell 5's `>` writes UTF-16LE with a BOM. Converting up front gives one
// code path and one meaning of line:column for every input. Unpaired surrogates
// become U+FFFD. Returns nullopt when `data` has no UTF-16 BOM.
std::optional<std::string> Utf16WithBomToUtf8(std::string_view data) {
  if (data.size() < 2) return std::nullopt;
  const auto b0 = static_cast<unsigned char>(data[0]);
  const auto b1 = static_cast<unsigned char>(data[1]);
  bool little_endian;
  if (b0 == 0xFF && b1 == 0xFE) {
    little_endian = true;
  } else if (b0 == 0xFE && b1 == 0xFF) {
    little_endian = false;
  } else {
    return std::nullopt;
  }
  auto unit = [&](size_t at) -> uint32_t {
    const auto lo = static_cast<unsigned char>(data[at + (little_endian ? 0 : 1)]);
    const auto hi = static_cast<unsigned char>(data[at + (little_endian ? 1 : 0)]);
    return (static_cast<uint32_t>(hi) << 8) | lo;
  };
  std::string out;
  out.reserve(data.size() / 2 + 8);
  size_t at = 2;
  while (at < data.size()) {
    uint32_t cp = 0xFFFD;
    if (at + 1 < data.size()) {
      cp = unit(at);
      at += 2;
      if (cp >= 0xD800 && cp <= 0xDBFF && at + 1 < data.size() && unit(at) >= 0xDC00 &&
          unit(at) <= 0xDFFF) {
        cp = 0x10000 + ((cp - 0xD800) << 10) + (unit(at) - 0xDC00);
        at += 2;
      } else if (cp >= 0xD800 && cp <= 0xDFFF) {
        cp = 0xFFFD;
      }
    } else {
      at += 1;  // A lone trailing byte.
    }
    if (cp < 0x80) {
      out += static_cast<char>(cp);
    } else if (cp < 0x800) {
      out += static_cast<char>(0xC0 | (cp >> 6));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      out += static_cast<char>(0xE0 | (cp >> 12));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
      out += static_cast<char>(0xF0 | (cp >> 18));
      out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    }
  }
  return out;
}

std::string_view FirstLine(std::string_view text) {
  text = TrimXmlSpace(text);
  size_t end = text.find_first_of("\r\n");
  return end == std::string_view::npos ? text : text.substr(0, end);
}

bool Contains(std::string_view text, std::string_view what) {
  return text.find(what) != std::string_view::npos;
}

// A file with text but no element: say what it looks like, since the usual
// mistake is capturing the wrong nvidia-smi output (or its failure message).
Error NotXml(std::string_view text, const std::string& name) {
  std::string_view first = FirstLine(text);
  std::string quoted = QuoteForMessage(first, 100);
  if (Contains(text, "NVSMI LOG")) {
    return MakeError("not_nvidia_smi", name +
                                           ": this is `nvidia-smi -q` text output, not XML; "
                                           "capture with `nvidia-smi -q -x`");
  }
  if (Contains(first, "NVIDIA-SMI has failed") || Contains(first, "Failed to initialize NVML") ||
      Contains(first, "No devices were found") || Contains(first, "Unable to determine")) {
    return MakeError("not_nvidia_smi",
                     name + ": holds an nvidia-smi error message, not a dump: " + quoted);
  }
  if (Contains(first, "NVIDIA-SMI") || Contains(text, "Driver Version")) {
    return MakeError("not_nvidia_smi", name +
                                           ": this is nvidia-smi's table output, not XML; "
                                           "capture with `nvidia-smi -q -x`");
  }
  return MakeError("not_nvidia_smi", name + ": holds no XML element (first line: " + quoted + ")");
}

Error ParseFailure(std::string_view xml, const std::string& name,
                   const pugi::xml_parse_result& result) {
  if (result.status == pugi::status_no_document_element) return NotXml(xml, name);
  if (result.status == pugi::status_out_of_memory) {
    return MakeError("too_large", name + ": out of memory while parsing the XML");
  }
  size_t offset = result.offset < 0 ? 0 : static_cast<size_t>(result.offset);
  if (offset > xml.size()) offset = xml.size();
  size_t line = 1;
  size_t line_start = 0;
  for (size_t i = 0; i < offset; ++i) {
    if (xml[i] == '\n') {
      ++line;
      line_start = i + 1;
    }
  }
  const size_t column = offset - line_start + 1;
  std::string problem = "not well-formed XML at line " + std::to_string(line) + ", column " +
                        std::to_string(column) + ": " + result.description();
  // When the data ends with elements still open, pugixml reports the error in
  // the last tag or text: no other tag starts after the error position.
  if (xml.find('<', offset + 1) == std::string_view::npos) {
    problem += " (the file ends early; truncated?)";
  }
  return Malformed(name, problem);
}

std::string LimitText(uint64_t max_bytes) {
  if (max_bytes % (uint64_t{1} << 20) == 0) return std::to_string(max_bytes >> 20) + " MiB";
  return std::to_string(max_bytes) + " bytes";
}

Result<Snapshot> ParseChecked(std::string_view xml, const std::string& name, uint64_t max_bytes) {
  if (xml.size() > max_bytes) {
    return MakeError("too_large", name + ": " + std::to_string(xml.size()) + " bytes; dumps over " +
                                      LimitText(max_bytes) + " are refused");
  }
  if (xml.empty()) return Malformed(name, "the file is empty");
  std::optional<std::string> converted = Utf16WithBomToUtf8(xml);
  if (converted) xml = *converted;
  if (xml.size() >= 3 && xml.substr(0, 3) == "\xEF\xBB\xBF") xml.remove_prefix(3);
  if (TrimXmlSpace(xml).empty()) return Malformed(name, "the file holds only white space");
  if (xml.size() >= 2 && static_cast<unsigned char>(xml[0]) == 0x1F &&
      static_cast<unsigned char>(xml[1]) == 0x8B) {
    return Malformed(name, "gzip-compressed data; decompress it first");
  }
  if (size_t nul = xml.find('\0'); nul != std::string_view::npos) {
    return Malformed(name,
                     "binary data, not XML text (NUL byte at offset " + std::to_string(nul) + ")");
  }

  pugi::xml_document doc;
  pugi::xml_parse_result parsed =
      doc.load_buffer(xml.data(), xml.size(), pugi::parse_default, pugi::encoding_utf8);
  if (!parsed) return ParseFailure(xml, name, parsed);

  pugi::xml_node root = doc.document_element();
  // `nvidia-smi -q -x >> FILE` appends dump after dump; judging the first
  // would give a confident verdict of an old moment.
  size_t roots = 0;
  for (pugi::xml_node n = doc.first_child(); n; n = n.next_sibling()) {
    roots += n.type() == pugi::node_element ? 1 : 0;
  }
  if (roots > 1) {
    return MakeError("not_one_dump",
                     name + ": holds " + std::to_string(roots) +
                         " XML documents one after another (dumps appended with >>?); give one "
                         "`nvidia-smi -q -x` dump");
  }
  if (std::string_view(root.name()) != kRootName) {
    return MakeError("not_nvidia_smi",
                     name + ": XML root element is " +
                         QuoteForMessage(std::string("<") + root.name() + ">", 60) +
                         ", expected <nvidia_smi_log> (an `nvidia-smi -q -x` dump)");
  }

  Snapshot snapshot;
  snapshot.source = SnapshotSource::kXmlDump;
  snapshot.source_detail = name;
  snapshot.processes_scanned = false;

  IssueLog top_log;
  Reader top(root, "", &top_log);
  snapshot.system.driver_version = top.String("driver_version");
  if (auto cuda = top.Text("cuda_version")) {
    snapshot.system.cuda_driver_version = ParseCudaVersion(*cuda);
    if (!snapshot.system.cuda_driver_version) top.Unexpected<int>("cuda_version", *cuda);
  }
  snapshot.system.gpu_count = top.Unsigned<unsigned>("attached_gpus");
  if (auto stamp = top.Text("timestamp")) {
    auto ms = ParseTimestampLocal(*stamp);
    if (ms) {
      snapshot.time_unix_ms = *ms;
    } else {
      top.Unexpected<int64_t>("timestamp", *stamp);  // time_unix_ms stays 0 = unknown.
    }
  } else {
    ProbeError error;
    error.source = kSource;
    error.code = "no_timestamp";
    error.message = name +
                    ": no <timestamp>: the dump's time is unknown, so the age of kernel-log "
                    "events cannot be judged against it";
    snapshot.errors.push_back(std::move(error));
  }
  (void)top_log.AppendTo(&snapshot.errors, std::nullopt, name);

  unsigned index = 0;
  for (pugi::xml_node node = root.child("gpu"); node; node = node.next_sibling("gpu"), ++index) {
    if (index == kMaxGpus) {
      return Malformed(
          name, "lists more than " + std::to_string(kMaxGpus) + " GPUs; not a dump of one machine");
    }
    IssueLog log;
    Gpu gpu = ReadGpu(node, index, &log);
    gpu.unreachable = log.AppendTo(&snapshot.errors, index, GpuSubject(gpu));
    snapshot.gpus.push_back(std::move(gpu));
  }

  if (snapshot.system.gpu_count && *snapshot.system.gpu_count != snapshot.gpus.size()) {
    ProbeError error;
    error.source = kSource;
    error.code = "gpu_count_mismatch";
    // Not necessarily a fault: `nvidia-smi -q -x -i 0` lists one GPU of many.
    error.message = name + ": attached_gpus is " + std::to_string(*snapshot.system.gpu_count) +
                    " but the dump describes " + std::to_string(snapshot.gpus.size()) +
                    " GPU(s) (captured with -i, or nvidia-smi could not read the others)";
    snapshot.errors.push_back(std::move(error));
  }
  return snapshot;
}

// The dump, read whole and bounded. Pipes and devices are read too (a dump
// can come through a process substitution); only the bound ends those.
Result<std::string> ReadWholeFile(const std::string& path, uint64_t max_bytes) {
  Result<std::string> data = os::ReadFileBounded(path, static_cast<size_t>(max_bytes));
  if (data.ok()) return data;
  const Error& e = data.error();
  if (e.code == "not_found") return e;
  if (e.code == "too_large") {
    return MakeError("too_large", path + ": more than " + LimitText(max_bytes) +
                                      "; dumps that large are refused");
  }
  return MakeError("unreadable", e.message);
}

}  // namespace

namespace internal {

Result<Snapshot> ParseNvidiaSmiXml(std::string_view xml, const std::string& name_for_errors,
                                   uint64_t max_bytes) {
  try {
    return ParseChecked(xml, name_for_errors, max_bytes);
  } catch (const std::bad_alloc&) {
    return MakeError("too_large", name_for_errors + ": out of memory while reading the dump");
  } catch (const std::exception& e) {
    return MakeError("malformed", name_for_errors + ": cannot be read: " + e.what());
  }
}

Result<Snapshot> ReadNvidiaSmiXmlFile(const std::string& path, uint64_t max_bytes) {
  try {
    Result<std::string> data = ReadWholeFile(path, max_bytes);
    if (!data.ok()) return data.error();
    return ParseChecked(*data, path, max_bytes);
  } catch (const std::bad_alloc&) {
    return MakeError("too_large", path + ": out of memory while reading the dump");
  } catch (const std::exception& e) {
    return MakeError("unreadable", path + ": cannot be read: " + e.what());
  }
}

}  // namespace internal

Result<Snapshot> ParseNvidiaSmiXml(std::string_view xml, const std::string& name_for_errors) {
  return internal::ParseNvidiaSmiXml(xml, name_for_errors, kMaxXmlBytes);
}

Result<Snapshot> ReadNvidiaSmiXmlFile(const std::string& path) {
  return internal::ReadNvidiaSmiXmlFile(path, kMaxXmlBytes);
}

}  // namespace gw::import
