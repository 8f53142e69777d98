// TEMPORARY (branch h-daemon only): the contract's CheckAdmission, so that
// the daemon links before H-client's admission.cc is merged. The build uses
// this file only while admission.cc does not exist (CMakeLists.txt); delete
// it at the merge.
#include <algorithm>

#include <fmt/format.h>

#include "core/units.h"
#include "queue/admission.h"

namespace gw::queue {

std::optional<Error> CheckAdmission(const JobSpec& spec, const AdmissionFacts& facts) {
  const std::vector<uint64_t>& gpus = facts.gpu_total_bytes;
  if (!gpus.empty() && spec.gpus > gpus.size()) {
    return MakeError("unsatisfiable", fmt::format("--gpus {}: this server has {} GPU{}", spec.gpus,
                                                  gpus.size(), gpus.size() == 1 ? "" : "s"));
  }
  if (!gpus.empty() && spec.vram_bytes > 0 && spec.gpus > 0) {
    // A GPU of unknown size counts as big enough: a refusal must be certain.
    const auto big = std::count_if(gpus.begin(), gpus.end(), [&](uint64_t total) {
      return total == 0 || total >= spec.vram_bytes;
    });
    if (big < static_cast<long>(spec.gpus)) {
      const uint64_t largest = *std::max_element(gpus.begin(), gpus.end());
      return MakeError("unsatisfiable",
                       fmt::format("--vram {}: no GPU here has that much (largest {})",
                                   FormatBytes(spec.vram_bytes), FormatBytes(largest)));
    }
  }
  if (facts.job_exists) {
    for (JobId id : spec.after) {
      if (!facts.job_exists(id)) {
        return MakeError("unsatisfiable", fmt::format("--after {}: no such job", id));
      }
    }
  }
  return std::nullopt;
}

}  // namespace gw::queue
