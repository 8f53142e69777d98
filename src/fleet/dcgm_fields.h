// The GPU fields gpuwarden exports under dcgm-exporter's names, so that a
// dashboard or an alert written for dcgm-exporter reads gpuwarden unchanged.
// One table: each entry's DCGM field name, its type and unit as DCGM gives
// them, and how it is read from a Gpu. A field whose value the snapshot does
// not know is left out of the scrape (never 0).
//
// dcgm-exporter's own default set (its etc/default-counters.csv) is listed
// separately, with what gpuwarden does about each of its counters, so a test
// can hold the two lists together (docs/metrics.md).
#ifndef GPUWARDEN_FLEET_DCGM_FIELDS_H_
#define GPUWARDEN_FLEET_DCGM_FIELDS_H_

#include <optional>
#include <span>
#include <string_view>

#include "core/snapshot.h"
#include "fleet/prom_text.h"

namespace gw::fleet {

struct DcgmField {
  std::string_view name;  // "DCGM_FI_DEV_GPU_UTIL"
  MetricType type;
  std::string_view help;  // Ends with the unit in parentheses, as DCGM's do.
  std::optional<double> (*read)(const Gpu& gpu);
};

// Every field read from a Gpu, in the order they are written.
std::span<const DcgmField> DcgmGpuFields();

// Fields that are not read from a Gpu but from elsewhere.
inline constexpr std::string_view kDcgmXidErrors = "DCGM_FI_DEV_XID_ERRORS";  // Kernel log.
inline constexpr std::string_view kDcgmXidErrorsCount = "DCGM_EXP_XID_ERRORS_COUNT";
inline constexpr std::string_view kDcgmDriverVersionLabel = "DCGM_FI_DRIVER_VERSION";

// dcgm-exporter's default counters and where gpuwarden stands on each.
enum class DcgmCoverage {
  kExported,       // Written under this name (DcgmGpuFields, or the Xid fields).
  kLabel,          // A label on every GPU sample (the driver version).
  kNotInSnapshot,  // Not read by gpuwarden's NVML collector yet; `why` says which call.
  kProfiling,      // A DCGM profiling metric (DCGM's own sampling of the SMs); NVML has none.
  kNotApplicable,  // vGPU licensing: a vGPU guest's field.
};
struct DcgmDefaultCounter {
  std::string_view name;
  DcgmCoverage coverage;
  std::string_view why;  // For the counters not exported.
};
std::span<const DcgmDefaultCounter> DcgmDefaultCounters();

}  // namespace gw::fleet

#endif  // GPUWARDEN_FLEET_DCGM_FIELDS_H_
