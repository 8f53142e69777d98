// fuzz_capacity_sacct: `gpuwarden capacity --slurm`'s reading of
// `sacct -X -n -P` (capacity/capacity_sources.h), then the analysis and both
// renderers over it. Users, job ids, states and node lists are Slurm's
// record of any user's jobs. Invariants: a rejected input is "malformed",
// one line; an accepted one gives spans in order inside the window, with
// GPUs held never below zero; wait percentiles that are ordered and not
// negative; shares within 0 to 1; JSON that parses and text that is safe on
// a terminal.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>

#include "capacity/capacity.h"
#include "capacity/capacity_sources.h"
#include "core/json_out.h"
#include "fuzz/fuzz_check.h"
#include "render/capacity_text.h"
#include "slurm/slurm_json.h"

namespace {

// A cluster of four nodes with four A100s each, the window the 30 days
// before 2023-11-14 22:13:20 UTC.
constexpr int64_t kTo = 1'700'000'000;
constexpr int64_t kFrom = kTo - 30 * 86400;

gw::slurm::SinfoDocument Cluster() {
  gw::slurm::SinfoDocument doc;
  for (const char* name : {"gpu1", "gpu2", "gpu3", "gpu4"}) {
    gw::slurm::Node n;
    n.name = name;
    n.gres = std::vector<gw::slurm::Gres>{{"gpu", std::string("a100"), 4, std::nullopt}};
    doc.nodes.push_back(n);
  }
  return doc;
}

void CheckShare(const std::optional<double>& v, const char* what) {
  if (v) GW_FUZZ_CHECK(*v >= 0 && *v <= 1 + 1e-9, std::string(what) + std::to_string(*v));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace gw;
  static const slurm::SinfoDocument cluster = Cluster();
  Result<std::vector<capacity::SacctJob>> jobs = capacity::ParseSacct(fuzz::AsText(data, size));
  if (!jobs.ok()) {
    fuzz::CheckError(jobs.error(), {"malformed"}, "sacct line ", "sacct");
    return 0;
  }
  Result<capacity::CapacityInput> in =
      capacity::InputFromSlurm(*jobs, cluster, kFrom, kTo, /*utc_offset_s=*/3600);
  if (!in.ok()) {
    fuzz::CheckError(in.error(), {"malformed"}, "sacct job ", "sacct");
    return 0;
  }
  int64_t last = kFrom;
  for (const capacity::Span& s : in->spans) {
    GW_FUZZ_CHECK(s.start_s >= last && s.end_s > s.start_s && s.end_s <= kTo,
                  std::to_string(s.start_s) + ".." + std::to_string(s.end_s));
    GW_FUZZ_CHECK(s.held_gpus >= 0 && std::isfinite(s.held_gpus), std::to_string(s.held_gpus));
    last = s.end_s;
  }

  const capacity::CapacityReport r = capacity::AnalyzeCapacity(*in);
  GW_FUZZ_CHECK(r.capacity_gpus == 16, std::to_string(r.capacity_gpus));
  GW_FUZZ_CHECK(r.held_gpu_hours >= 0 && r.unheld_gpu_hours >= 0, "GPU-hours");
  GW_FUZZ_CHECK(r.saturated_waiting_hours <= r.saturated_hours + 1e-9, "saturated");
  GW_FUZZ_CHECK(!r.idle_held_gpu_hours, "Slurm does not know idle GPUs");
  if (r.waits) {
    const capacity::WaitStats& w = *r.waits;
    GW_FUZZ_CHECK(w.p50_s.has_value() == (w.started > 0), std::to_string(w.started));
    if (w.p50_s) {
      GW_FUZZ_CHECK(*w.p50_s >= 0 && *w.p50_s <= *w.p90_s && *w.p90_s <= *w.p99_s &&
                        *w.p99_s <= *w.max_s && *w.mean_s <= *w.max_s,
                    std::to_string(*w.p50_s) + " " + std::to_string(*w.max_s));
    }
    if (w.longest_waiting_s) GW_FUZZ_CHECK(*w.longest_waiting_s >= 0, "longest wait");
  }
  for (const capacity::HourOfDay& h : r.hours) {
    CheckShare(h.held_fraction, "held share ");
    GW_FUZZ_CHECK(h.observed_s >= 0 && h.observed_s <= 31 * 3600, std::to_string(h.observed_s));
  }
  for (const capacity::Recommendation& rec : r.recommendations) {
    for (const auto& [name, value] : rec.figures) {
      GW_FUZZ_CHECK(std::isfinite(value), rec.code + " " + name);
    }
  }
  fuzz::CheckJsonParses(DumpJsonForTerminal(render::CapacityJson(r), true, "gpuwarden.capacity"),
                        "capacity JSON");
  fuzz::CheckTerminalSafe(render::RenderCapacityText(r), "capacity text");
  return 0;
}
