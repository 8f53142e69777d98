#include "queue/admission.h"

#include <algorithm>

#include <fmt/format.h>

#include "core/units.h"

namespace gw::queue {
namespace {

Error Unsatisfiable(std::string message) { return MakeError("unsatisfiable", std::move(message)); }

}  // namespace

std::optional<Error> CheckAdmission(const JobSpec& spec, const AdmissionFacts& facts) {
  const std::vector<uint64_t>& totals = facts.gpu_total_bytes;
  if (!totals.empty() && spec.gpus > 0) {
    const size_t have = totals.size();
    if (spec.gpus > have) {
      return Unsatisfiable(fmt::format("--gpus {}: this server has {} GPU{}", spec.gpus, have,
                                       have == 1 ? "" : "s"));
    }
    if (spec.vram_bytes > 0) {
      // A GPU of unknown total (0) may be big enough.
      const auto big_enough =
          static_cast<size_t>(std::count_if(totals.begin(), totals.end(), [&](uint64_t t) {
            return t == 0 || t >= spec.vram_bytes;
          }));
      const uint64_t largest = *std::max_element(totals.begin(), totals.end());
      if (big_enough == 0) {
        return Unsatisfiable(fmt::format("--vram {}: no GPU here has that much (largest {})",
                                         FormatBytes(spec.vram_bytes), FormatBytes(largest)));
      }
      if (big_enough < spec.gpus) {
        return Unsatisfiable(fmt::format("--gpus {} --vram {}: only {} GPU{} here ha{} {}",
                                         spec.gpus, FormatBytes(spec.vram_bytes), big_enough,
                                         big_enough == 1 ? "" : "s", big_enough == 1 ? "s" : "ve",
                                         FormatBytes(spec.vram_bytes)));
      }
    }
  }
  if (facts.job_exists) {
    for (JobId id : spec.after) {
      if (!facts.job_exists(id)) return Unsatisfiable(fmt::format("--after {}: no such job", id));
    }
  }
  return std::nullopt;
}

}  // namespace gw::queue
