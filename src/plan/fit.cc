#include "plan/fit.h"

#include <fmt/format.h>

#include <cmath>

namespace gw::plan {
namespace {

std::vector<unsigned> Counts() {
  std::vector<unsigned> counts = {1, 2, 4, 8};
  for (unsigned n = 16; n <= kMaxPlanGpus; n += 8) counts.push_back(n);
  return counts;
}

uint64_t Div(uint64_t bytes, unsigned by) { return (bytes + by - 1) / by; }

void Describe(Layout& l, bool training) {
  std::string s;
  if (l.gpus == 1) {
    l.strategy = "1 GPU";
  } else if (training) {
    std::string data;
    if (l.dp > 1) {
      data = l.zero_stage == 0   ? fmt::format("data parallel (DDP) over {}", l.dp)
             : l.zero_stage == 3 ? fmt::format("FSDP (ZeRO-3) over {}", l.dp)
                                 : fmt::format("ZeRO-{} data parallel over {}", l.zero_stage, l.dp);
    }
    if (l.tp > 1) {
      l.strategy = fmt::format("tensor parallel {}", l.tp) + (data.empty() ? "" : " x " + data);
    } else {
      l.strategy = data + " GPUs";
    }
  } else {
    l.strategy = l.pp > 1 ? fmt::format("tensor parallel {} x pipeline {}", l.tp, l.pp)
                          : fmt::format("tensor parallel {}", l.tp);
  }
  l.needs_nvlink = l.tp > 1;
  l.wants_nvlink = l.zero_stage == 3 && l.dp > 1;
  l.multi_server = l.gpus > kGpusPerServer;
  if (l.gpus == 1) {
    l.interconnect = "none (1 GPU)";
  } else {
    l.interconnect = l.needs_nvlink ? "NVLink" : l.wants_nvlink ? "NVLink recommended" : "PCIe";
    if (l.multi_server) l.interconnect += " + InfiniBand-class network between servers";
  }
}

}  // namespace

std::optional<Layout> PlanLayout(const Estimate& e, bool training, uint64_t capacity_bytes,
                                 uint64_t heads, uint64_t kv_heads) {
  const double usable = kUsableFraction * static_cast<double>(capacity_bytes);
  for (unsigned n : Counts()) {
    for (unsigned tp : {1u, 2u, 4u, 8u}) {
      if (tp > n || n % tp != 0) continue;
      if (tp > 1 && (heads == 0 || heads % tp != 0)) continue;
      Layout l;
      l.gpus = n;
      l.tp = tp;
      if (training) {
        l.dp = n / tp;
        for (unsigned stage = 0; stage <= (l.dp > 1 ? 3u : 0u); ++stage) {
          const uint64_t w = Div(e.weights, tp), g = Div(e.gradients, tp), o = Div(e.optimizer, tp);
          const uint64_t bytes = (stage >= 3 ? Div(w, l.dp) : w) + (stage >= 2 ? Div(g, l.dp) : g) +
                                 (stage >= 1 ? Div(o, l.dp) : o) + Div(e.activations, tp) +
                                 e.overhead;
          if (static_cast<double>(bytes) <= usable) {
            l.zero_stage = stage;
            l.per_gpu_bytes = bytes;
            Describe(l, training);
            return l;
          }
        }
      } else {
        // Tensor parallelism first, up to a server; then pipeline stages.
        if (tp != std::min(n, kGpusPerServer)) continue;
        l.pp = n / tp;
        const unsigned kv_split = kv_heads == 0 ? 1 : std::min<uint64_t>(tp, kv_heads);
        const uint64_t bytes = Div(e.weights, n) + Div(Div(e.kv_cache, l.pp), kv_split) +
                               Div(e.activations, tp) + e.overhead;
        if (static_cast<double>(bytes) <= usable) {
          l.per_gpu_bytes = bytes;
          Describe(l, training);
          return l;
        }
      }
    }
  }
  return std::nullopt;
}

std::vector<GpuFit> FitCatalog(const std::vector<GpuSpec>& gpus, const ModelSpec& model,
                               const Workload& workload, const Estimate& estimate) {
  std::vector<GpuFit> fits;
  const uint64_t heads = model.arch ? model.arch->heads : 0;
  const uint64_t kv_heads = model.arch ? model.arch->kv_heads : 0;
  for (const GpuSpec& gpu : gpus) {
    GpuFit fit;
    fit.gpu = &gpu;
    fit.layout = PlanLayout(estimate, IsTraining(workload.task), gpu.memory_bytes, heads, kv_heads);
    if (fit.layout && (fit.layout->needs_nvlink || fit.layout->wants_nvlink)) {
      const unsigned joined = fit.layout->tp > 1 ? fit.layout->tp : fit.layout->dp;
      const char* what = fit.layout->needs_nvlink ? "tensor parallelism" : "ZeRO-3";
      if (gpu.link == Link::kPcie) {
        fit.warning = fmt::format("no NVLink: {} over PCIe, slower", what);
      } else if (gpu.link == Link::kNvlinkBridge && joined > 2) {
        fit.warning = fmt::format("bridges join pairs only: {} over PCIe beyond them", what);
      }
    }
    fits.push_back(std::move(fit));
  }
  return fits;
}

}  // namespace gw::plan
