#include "queue/admission.h"

#include <fmt/format.h>

#include "core/units.h"

namespace gw::queue {
namespace {

Error Unsatisfiable(std::string message) { return MakeError("unsatisfiable", std::move(message)); }

}  // namespace

std::optional<Error> CheckAdmission(const JobSpec& spec, const AdmissionFacts& facts) {
  if (!facts.gpus.empty() && spec.gpus > 0) {
    const placement::Server server(facts.gpus, {}, facts.margin_bytes);
    // No topology here: an NVLink need is never refused for it (the policy
    // says why it waits once the topology is known).
    const placement::NeverWhy why =
        server.WhyNever(placement::Request{spec.gpus, spec.vram_bytes, /*nvlink=*/false});
    using Kind = placement::NeverWhy::Kind;
    if (why.kind == Kind::kTooFewGpus) {
      return Unsatisfiable(fmt::format("--gpus {}: this server has {} GPU{}", spec.gpus,
                                       why.server_gpus, why.server_gpus == 1 ? "" : "s"));
    }
    if (why.kind == Kind::kTooSmall && why.big_enough == 0) {
      return Unsatisfiable(fmt::format(
          "--vram {}: no GPU here has that much (the largest has {} usable; {} is kept free on "
          "each)",
          FormatBytes(spec.vram_bytes), FormatBytes(why.largest_capacity.value_or(0)),
          FormatBytes(facts.margin_bytes)));
    }
    if (why.kind == Kind::kTooSmall) {
      return Unsatisfiable(
          fmt::format("--gpus {} --vram {}: only {} GPU{} here ha{} {}", spec.gpus,
                      FormatBytes(spec.vram_bytes), why.big_enough, why.big_enough == 1 ? "" : "s",
                      why.big_enough == 1 ? "s" : "ve", FormatBytes(spec.vram_bytes)));
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
