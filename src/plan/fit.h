// Which GPUs fit a job, how many, with what parallelism, and what
// interconnect that needs. Pure.
//
// A GPU of capacity C holds 90 % of it for the job (the rest: headroom for
// fragmentation and spikes, docs/advise.md). The plan is the smallest number
// of GPUs that holds the estimate, preferring, at each count: no tensor
// parallelism, then the lowest ZeRO stage.
//   Training: data parallel with ZeRO-1 (optimizer state sharded), ZeRO-2
//   (+ gradients), ZeRO-3 / FSDP (+ weights); tensor parallel (TP, at most 8,
//   dividing the attention heads) divides weights, gradients, optimizer state
//   and activations. --batch is per GPU, so data parallelism never divides
//   activations.
//   Inference: tensor parallel up to 8 GPUs, then pipeline stages of 8
//   (layers split across servers). KV heads that TP cannot split are copied.
// GPU counts tried: 1, 2, 4, 8, then multiples of 8 up to kMaxPlanGpus.
#ifndef GPUWARDEN_PLAN_FIT_H_
#define GPUWARDEN_PLAN_FIT_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "plan/catalog.h"
#include "plan/estimate.h"

namespace gw::plan {

inline constexpr unsigned kMaxPlanGpus = 64;
inline constexpr unsigned kGpusPerServer = 8;
inline constexpr double kUsableFraction = 0.9;

struct Layout {
  unsigned gpus = 1;
  unsigned tp = 1;          // Tensor parallel degree.
  unsigned pp = 1;          // Pipeline stages.
  unsigned dp = 1;          // Data parallel degree.
  unsigned zero_stage = 0;  // 0: plain data parallel (DDP).
  uint64_t per_gpu_bytes = 0;
  std::string strategy;  // "1 GPU", "FSDP (ZeRO-3) over 4 GPUs", "TP 8 x PP 2"
  // What joins the GPUs: tensor parallelism needs NVLink (activations cross
  // GPUs in every layer); ZeRO-3 wants it (weights are gathered every step:
  // PCIe works, slower); ZeRO-0..2 and pipeline stages do with PCIe; several
  // servers need a fast network.
  bool needs_nvlink = false;
  bool wants_nvlink = false;
  bool multi_server = false;
  std::string interconnect;  // "none (1 GPU)", "NVLink", "NVLink recommended", "PCIe", + network
};

// The plan on GPUs of `capacity_bytes` each; nullopt when even kMaxPlanGpus
// cannot hold it. `heads` (0: unknown, then no tensor parallelism) and
// `kv_heads` bound the TP degree.
std::optional<Layout> PlanLayout(const Estimate& estimate, bool training, uint64_t capacity_bytes,
                                 uint64_t heads, uint64_t kv_heads);

// One catalog GPU judged: its plan, and what its interconnect lacks for it.
struct GpuFit {
  const GpuSpec* gpu = nullptr;
  std::optional<Layout> layout;
  std::string warning;  // "no NVLink: ..."; "" when none.
};
std::vector<GpuFit> FitCatalog(const std::vector<GpuSpec>& gpus, const ModelSpec& model,
                               const Workload& workload, const Estimate& estimate);

}  // namespace gw::plan

#endif  // GPUWARDEN_PLAN_FIT_H_
