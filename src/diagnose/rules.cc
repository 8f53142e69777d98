#include "diagnose/rules.h"

#include <algorithm>
#include <charconv>

#include <fmt/format.h>

#include "core/text.h"
#include "core/units.h"
#include "diagnose/rule_context.h"

namespace gw::diagnose {
namespace {

using internal::RuleFn;

struct Rule {
  std::string_view name;
  RuleFn run;
  std::vector<std::string_view> codes;
};

// The registry, in the order findings are produced. Holder rules run from the
// most specific to the least (zombie, D, orphan, idle) and each skips what a
// more specific one reports.
const std::vector<Rule>& Rules() {
  static const std::vector<Rule> kRules = {
      {"probe_errors",
       internal::RuleProbeErrors,
       {"GPU_LOST", "GPU_UNREACHABLE", "NO_PERMISSION", "GPU_RESET_REQUIRED",
        "GPU_INSUFFICIENT_POWER", "INFOROM_CORRUPTED", "DRIVER_TIMEOUT", "DRIVER_NOT_LOADED",
        "DRIVER_VERSION_MISMATCH", "NVML_NOT_FOUND", "PROC_SCAN_TIMEOUT"}},
      {"no_gpu", internal::RuleNoGpu, {"NO_GPU_VISIBLE"}},
      {"ecc", internal::RuleEcc, {"ECC_DBE_VOLATILE", "ECC_SRAM_CONTAINED", "ECC_DBE_CONTAINED"}},
      {"retired_pages",
       internal::RuleRetiredPages,
       {"RETIRED_PAGES_PENDING", "RETIRED_PAGES_LIMIT", "RETIRED_PAGES_DBE"}},
      {"row_remap",
       internal::RuleRowRemap,
       {"ROW_REMAP_PENDING", "ROW_REMAP_FAILED", "ROW_REMAP_LIMIT"}},
      {"pcie_link", internal::RulePcieLink, {"PCIE_LINK_DEGRADED"}},
      {"pcie_replay", internal::RulePcieReplay, {"PCIE_REPLAY_RATE"}},
      {"nvlink", internal::RuleNvlink, {"NVLINK_DOWN"}},
      {"idle_thermal", internal::RuleIdleThermal, {"HOT_WHILE_IDLE", "FAN_HIGH_WHILE_IDLE"}},
      {"clock_events",
       internal::RuleClockEvents,
       {"HW_SLOWDOWN", "HW_THERMAL_SLOWDOWN", "HW_POWER_BRAKE", "SW_THERMAL_SLOWDOWN",
        "POWER_CAPPED"}},
      {"xid",
       internal::RuleXid,
       {"XID_FATAL", "XID_WARNING", "XID_APPLICATION", "XID_OTHER", "XID_RECOVERED", "XID_HISTORY",
        "GPU_MISSING"}},
      {"vram_exhausted", internal::RuleVramExhausted, {"VRAM_EXHAUSTED"}},
      {"compute_saturated", internal::RuleComputeSaturated, {"COMPUTE_SATURATED"}},
      {"zombie_holder", internal::RuleZombieHolder, {"ZOMBIE_HOLDER"}},
      {"uninterruptible_holder", internal::RuleUninterruptibleHolder, {"UNINTERRUPTIBLE_HOLDER"}},
      {"orphan_holder", internal::RuleOrphanHolder, {"ORPHAN_HOLDER"}},
      {"idle_holder",
       internal::RuleIdleHolder,
       {"IDLE_HOLDER", "HOLDER_IDLE_ONE_SAMPLE", "HOLDER_IDLE_SHORT"}},
      {"invisible_holder", internal::RuleInvisibleHolder, {"INVISIBLE_HOLDER", "HIDDEN_USE"}},
      {"unlisted_device_holder", internal::RuleUnlistedDeviceHolder, {"UNLISTED_DEVICE_HOLDER"}},
      {"foreign_pid", internal::RuleForeignPid, {"GONE_PROCESS_HOLDER", "FOREIGN_PID"}},
      {"service_holder", internal::RuleServiceHolder, {"MPS_SERVER_HOLDER", "GRAPHICS_HOLDER"}},
      {"slurm_allocated", internal::RuleSlurmAllocated, {"SLURM_ALLOCATED"}},
      {"slurm_outside_allocation",
       internal::RuleSlurmOutsideAllocation,
       {"SLURM_OUTSIDE_ALLOCATION"}},
      {"need",
       internal::RuleNeed,
       {"NEED_FITS", "FRAGMENTED", "NEED_UNSATISFIABLE", "NEED_EXCEEDS_SERVER", "NEED_UNCHECKED"}},
      {"compute_mode",
       internal::RuleComputeMode,
       {"COMPUTE_MODE_EXCLUSIVE", "COMPUTE_MODE_PROHIBITED"}},
      {"mig", internal::RuleMig, {"MIG_ENABLED"}},
      {"persistence", internal::RulePersistence, {"PERSISTENCE_OFF"}},
      {"cuda_visible_devices",
       internal::RuleCudaVisibleDevices,
       {"CUDA_VISIBLE_DEVICES_NONE", "CUDA_VISIBLE_DEVICES_INVALID", "CUDA_VISIBLE_DEVICES_BUSY",
        "CUDA_VISIBLE_DEVICES_ORDER"}},
  };
  return kRules;
}

constexpr unsigned kMaxNeedGpus = 1024;

}  // namespace

Result<NeedRequest> ParseNeed(std::string_view text) {
  // Sanitised: the message stays one line whatever bytes were given.
  const std::string quoted = fmt::format("\"{}\"", SanitizeForTerminal(text));
  auto malformed = [&](std::string_view why) {
    return MakeError("malformed",
                     fmt::format("need {}: {}; expected SIZE or NxSIZE with an optional "
                                 "+nvlink, e.g. 20G, 2x24G, 4x40GiB+nvlink",
                                 quoted, why));
  };
  NeedRequest need;
  std::string_view rest = text;
  constexpr std::string_view kNvlink = "+nvlink";
  if (rest.size() >= kNvlink.size()) {
    std::string tail(rest.substr(rest.size() - kNvlink.size()));
    std::transform(tail.begin(), tail.end(), tail.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    if (tail == kNvlink) {
      need.nvlink = true;
      rest.remove_suffix(kNvlink.size());
    }
  }
  size_t x = rest.find_first_of("xX");
  if (x != std::string_view::npos) {
    std::string_view count = rest.substr(0, x);
    unsigned gpus = 0;
    auto [end, ec] = std::from_chars(count.data(), count.data() + count.size(), gpus);
    if (count.empty() || ec == std::errc::invalid_argument || end != count.data() + count.size()) {
      return malformed("the GPU count before 'x' is not a whole number");
    }
    if (ec == std::errc::result_out_of_range || gpus == 0 || gpus > kMaxNeedGpus) {
      return MakeError("out_of_range",
                       fmt::format("need {}: the GPU count must be 1 to {}", quoted, kMaxNeedGpus));
    }
    need.gpus = gpus;
    rest.remove_prefix(x + 1);
  }
  if (rest.empty()) return malformed("the size is missing");
  Result<uint64_t> bytes = ParseSize(rest);
  if (!bytes.ok()) {
    if (bytes.error().code == "out_of_range") {
      return MakeError("out_of_range", fmt::format("need {}: the size is too large", quoted));
    }
    return malformed(fmt::format("\"{}\" is not a size", SanitizeForTerminal(rest)));
  }
  if (*bytes == 0) {
    return MakeError("out_of_range", fmt::format("need {}: the size must be above 0", quoted));
  }
  need.bytes_per_gpu = *bytes;
  return need;
}

std::string FormatNeed(const NeedRequest& need) {
  // The largest binary unit that divides the size exactly keeps it parseable.
  static constexpr const char* kUnits[] = {"", "K", "M", "G", "T", "P"};
  uint64_t value = need.bytes_per_gpu;
  size_t unit = 0;
  while (unit + 1 < std::size(kUnits) && value != 0 && value % 1024 == 0) {
    value /= 1024;
    ++unit;
  }
  std::string text = need.gpus == 1 ? "" : fmt::format("{}x", need.gpus);
  text += fmt::format("{}{}", value, kUnits[unit]);
  if (need.nvlink) text += "+nvlink";
  return text;
}

namespace {

// The catalog's steps, fitted to who runs gpuwarden and where (a live look
// only: a dump is read by someone elsewhere). Root needs no sudo, and "run it
// as root" tells root nothing; "In a container:" speaks to a caller in one.
void FitStepsToCaller(std::vector<Finding>& findings, const DiagnoseOptions& o) {
  constexpr std::string_view kSudo = "sudo ";
  for (Finding& f : findings) {
    std::vector<std::string> kept;
    for (std::string& step : f.next_steps) {
      if (!o.in_container && step.starts_with("In a container:")) continue;
      if (o.caller_is_root) {
        if (step.find("sudo gpuwarden why") != std::string::npos) continue;
        for (size_t at = step.find(kSudo); at != std::string::npos; at = step.find(kSudo, at)) {
          // Only a command's own "sudo ": at the start, or after ": ".
          if (at == 0 || (at >= 2 && step.compare(at - 2, 2, ": ") == 0)) {
            step.erase(at, kSudo.size());
          } else {
            at += kSudo.size();
          }
        }
      }
      kept.push_back(std::move(step));
    }
    f.next_steps = std::move(kept);
  }
}

}  // namespace

std::vector<Finding> RunRules(std::span<const Snapshot> history, const DiagnoseOptions& options,
                              std::span<const kmsg::KernelEvent> kernel_events) {
  std::vector<Finding> findings;
  if (history.empty()) return findings;
  internal::RuleContext ctx(history, options, kernel_events);
  for (const Rule& rule : Rules()) rule.run(ctx, findings);
  if (ctx.live()) FitStepsToCaller(findings, options);
  return findings;
}

std::vector<RuleInfo> ListRules() {
  std::vector<RuleInfo> out;
  for (const Rule& rule : Rules()) out.push_back({rule.name, rule.codes});
  return out;
}

}  // namespace gw::diagnose
