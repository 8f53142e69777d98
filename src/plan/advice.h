// Everything `gpuwarden advise` says, computed before it is rendered
// (render/advise_text.h, render/advise_json.h): the estimate, what else
// would save, which catalog GPUs fit, the need on this server now, and the
// requests that ask for it.
#ifndef GPUWARDEN_PLAN_ADVICE_H_
#define GPUWARDEN_PLAN_ADVICE_H_

#include <optional>
#include <string>
#include <vector>

#include "plan/catalog.h"
#include "plan/estimate.h"
#include "plan/fit.h"
#include "plan/model.h"

namespace gw::plan {

// "On this server now": the need placed by the placement core, as
// `why --need` places it.
struct ServerAdvice {
  bool looked = false;
  std::string note;  // Why it was not looked at, or what limits the answer.
  bool simulated = false;
  unsigned gpu_count = 0;
  std::string gpu_name;          // NVML's name of the smallest GPU ("" unknown).
  uint64_t gpu_capacity = 0;     // Its total memory: what the plan sizes for.
  std::optional<Layout> layout;  // The plan on such GPUs; nullopt: not even kMaxPlanGpus.
  std::string need;              // "2x40G+nvlink", as `why --need` takes it.
  std::string verdict;           // "OK", "RECLAIMABLE", "BUSY", "NEVER_FITS", ...
  std::string summary;           // The verdict's line.
  std::string placement;         // "fits", "fragmented", "not enough free", ...
  std::vector<unsigned> chosen;  // GPU indices when it fits now.
};

// The requests that ask for the need: the local queue, Slurm through
// gpuwarden, sbatch directly.
struct Requests {
  std::string basis;  // "this server's GPUs" or "catalog GPU h100-sxm"
  std::string run;
  std::string run_slurm;
  std::string sbatch;
  std::string note;  // Multi-server plans: what the requests cannot say.
};

struct Advice {
  ModelSpec model;
  Workload workload;
  Estimate estimate;
  std::vector<Alternative> alternatives;
  std::vector<GpuFit> fits;
  ServerAdvice server;
  std::optional<Requests> requests;
};

}  // namespace gw::plan

#endif  // GPUWARDEN_PLAN_ADVICE_H_
