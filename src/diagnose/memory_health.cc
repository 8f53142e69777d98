#include "diagnose/memory_health.h"

#include <algorithm>
#include <vector>

#include <fmt/format.h>

namespace gw::diagnose::internal {
namespace {

// "Contained: SM (0x1). RST: No, D-RST: No": the error's own word on whether
// the GPU needs a reset. "D-RST" (drain and reset) is a different field.
bool AsksForReset(std::string_view detail) {
  for (size_t at = detail.find("RST: Yes"); at != std::string_view::npos;
       at = detail.find("RST: Yes", at + 1)) {
    if (at == 0 || detail[at - 1] != '-') return true;
  }
  return false;
}

std::string Plural(uint64_t n, std::string_view one, std::string_view many) {
  return fmt::format("{} {}", n, n == 1 ? one : many);
}

}  // namespace

bool IsDoubleBitReport(unsigned xid) { return xid == 48 || xid == 171 || xid == 172; }

bool IsMemoryXid(unsigned xid) {
  switch (xid) {
    case 48:
    case 63:
    case 64:
    case 92:
    case 94:
    case 95:
    case 140:
    case 171:
    case 172:
      return true;
    default:
      return false;
  }
}

MemoryHealth JudgeMemory(const Gpu& gpu, std::span<const XidIncident* const> incidents,
                         const DiagnoseOptions& o) {
  MemoryHealth h;
  const EccInfo& ecc = gpu.ecc;
  const RemappedRows& rows = gpu.remapped_rows;
  const RetiredPages& pages = gpu.retired_pages;

  unsigned contained_94 = 0, reset_94 = 0;
  for (const XidIncident* inc : incidents) {
    if (!IsMemoryXid(inc->xid)) continue;
    ++h.xids[inc->xid];
    if (inc->xid == 94) {
      if (AsksForReset(inc->event->detail)) {
        ++reset_94;
      } else {
        ++contained_94;
      }
    }
  }
  auto xid = [&](unsigned code) {
    auto it = h.xids.find(code);
    return it == h.xids.end() ? 0u : it->second;
  };

  const uint64_t dbe = ecc.volatile_uncorrected.value_or(0);
  h.contained_by_counters = dbe > 0 && ecc.volatile_sram_uncorrected &&
                            ecc.volatile_dram_uncorrected && *ecc.volatile_dram_uncorrected == 0 &&
                            !ecc.sram_threshold_exceeded.value_or(false);
  h.uncontained = xid(95) > 0 || xid(140) > 0 || reset_94 > 0;
  const bool error_seen = dbe > 0 || contained_94 > 0 || h.uncontained ||
                          std::any_of(h.xids.begin(), h.xids.end(),
                                      [](const auto& kv) { return IsDoubleBitReport(kv.first); });
  h.contained = error_seen && !h.uncontained && (h.contained_by_counters || contained_94 > 0);

  const uint64_t retired = pages.single_bit.value_or(0) + pages.double_bit.value_or(0);
  const bool replace = rows.failure.value_or(false) || xid(64) > 0 ||
                       rows.uncorrectable.value_or(0) >= o.row_remap_uncorrectable_limit ||
                       retired >= o.retired_pages_limit ||
                       pages.double_bit.value_or(0) > o.retired_pages_dbe_limit ||
                       ecc.sram_threshold_exceeded.value_or(false);
  const bool pending = rows.pending.value_or(false) || pages.pending.value_or(false);

  if (replace) {
    h.verdict = MemoryVerdict::kReplace;
  } else if (error_seen && !h.contained) {
    h.verdict = MemoryVerdict::kUncontained;
  } else if (h.contained) {
    h.verdict = MemoryVerdict::kContained;
  } else if (pending) {
    h.verdict = MemoryVerdict::kResetPending;
  }

  std::vector<std::string> said;
  if (dbe > 0)
    said.push_back(
        Plural(dbe, "volatile uncorrectable ECC error", "volatile uncorrectable ECC errors"));
  if (h.contained_by_counters) said.push_back("all in SRAM (contained)");
  if (contained_94 > 0) {
    said.push_back(fmt::format("contained: Xid 94 x{} (RST: No)", contained_94));
  }
  if (reset_94 > 0) said.push_back(fmt::format("Xid 94 x{} asks for a reset (RST: Yes)", reset_94));
  if (xid(95) > 0) said.push_back(fmt::format("uncontained: Xid 95 x{}", xid(95)));
  if (xid(140) > 0) said.push_back(fmt::format("unrecovered: Xid 140 x{}", xid(140)));
  for (unsigned code : {48u, 171u, 172u, 63u, 64u, 92u}) {
    if (xid(code) > 0) said.push_back(fmt::format("Xid {} x{}", code, xid(code)));
  }
  if (dbe > 0 && !h.contained && !h.uncontained) {
    said.push_back("no Xid 94 in the kernel log shows it contained");
  }
  if (rows.failure.value_or(false)) said.push_back("row remapping failed");
  if (rows.pending.value_or(false)) said.push_back("row remap pending");
  if (rows.uncorrectable.value_or(0) > 0) {
    said.push_back(Plural(*rows.uncorrectable, "row remapped for uncorrectable errors",
                          "rows remapped for uncorrectable errors"));
  }
  if (pages.pending.value_or(false)) said.push_back("page retirement pending");
  if (retired > 0) said.push_back(Plural(retired, "page retired", "pages retired"));
  if (ecc.sram_threshold_exceeded.value_or(false)) said.push_back("SRAM threshold exceeded");
  if (!said.empty()) {
    h.summary = fmt::format("{}: {}", MemoryVerdictName(h.verdict), fmt::join(said, "; "));
  }
  return h;
}

std::string_view MemoryVerdictName(MemoryVerdict v) {
  switch (v) {
    case MemoryVerdict::kOk:
      return "ok";
    case MemoryVerdict::kResetPending:
      return "usable until a reset";
    case MemoryVerdict::kContained:
      return "contained";
    case MemoryVerdict::kUncontained:
      return "not shown contained";
    case MemoryVerdict::kReplace:
      return "cannot repair itself";
  }
  return "ok";
}

}  // namespace gw::diagnose::internal
