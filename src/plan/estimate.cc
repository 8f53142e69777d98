#include "plan/estimate.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>

namespace gw::plan {
namespace {

template <typename E, size_t N>
std::optional<E> Named(const std::array<std::pair<E, std::string_view>, N>& names,
                       std::string_view name) {
  for (const auto& [value, text] : names) {
    if (text == name) return value;
  }
  return std::nullopt;
}
template <typename E, size_t N>
std::string_view NameOf(const std::array<std::pair<E, std::string_view>, N>& names, E value) {
  for (const auto& [v, text] : names) {
    if (v == value) return text;
  }
  return names[0].second;
}

constexpr std::array<std::pair<Task, std::string_view>, 5> kTasks = {{{Task::kTrain, "train"},
                                                                      {Task::kFinetune, "finetune"},
                                                                      {Task::kLora, "lora"},
                                                                      {Task::kQlora, "qlora"},
                                                                      {Task::kInfer, "infer"}}};
constexpr std::array<std::pair<Precision, std::string_view>, 6> kPrecisions = {
    {{Precision::kFp32, "fp32"},
     {Precision::kBf16, "bf16"},
     {Precision::kFp16, "fp16"},
     {Precision::kFp8, "fp8"},
     {Precision::kInt8, "int8"},
     {Precision::kInt4, "int4"}}};
constexpr std::array<std::pair<Optimizer, std::string_view>, 4> kOptimizers = {
    {{Optimizer::kAdamW, "adamw"},
     {Optimizer::kAdamW8bit, "adamw-8bit"},
     {Optimizer::kSgd, "sgd"},
     {Optimizer::kSgdMomentum, "sgd-momentum"}}};
constexpr std::array<std::pair<Attention, std::string_view>, 2> kAttentions = {
    {{Attention::kFlash, "flash"}, {Attention::kEager, "eager"}}};

bool Quantized(Precision p) {
  return p == Precision::kFp8 || p == Precision::kInt8 || p == Precision::kInt4;
}

// Bytes of one weight of the blocks' linear layers stored at `p`.
double WeightBytes(Precision p) {
  switch (p) {
    case Precision::kFp32:
      return 4;
    case Precision::kBf16:
    case Precision::kFp16:
      return 2;
    case Precision::kFp8:
    case Precision::kInt8:
      return 1;
    case Precision::kInt4:
      return kInt4BitsPerWeight / 8;
  }
  return 2;
}

// Bytes of an optimizer's state per trainable parameter (without a master copy).
uint64_t OptimizerStateBytes(Optimizer o) {
  switch (o) {
    case Optimizer::kAdamW:
      return 8;
    case Optimizer::kAdamW8bit:
      return 2;
    case Optimizer::kSgd:
      return 0;
    case Optimizer::kSgdMomentum:
      return 4;
  }
  return 8;
}

std::string_view OptimizerLabel(Optimizer o) {
  switch (o) {
    case Optimizer::kAdamW:
      return "AdamW: 2 fp32 moments";
    case Optimizer::kAdamW8bit:
      return "8-bit AdamW: 2 int8 moments";
    case Optimizer::kSgd:
      return "SGD: no state";
    case Optimizer::kSgdMomentum:
      return "SGD with momentum: 1 fp32 buffer";
  }
  return "";
}

std::string Count(uint64_t n) { return FormatParamCount(n); }

std::string Bytes(double b) {
  if (b == std::floor(b)) return fmt::format("{:.0f} B", b);
  return fmt::format("{:.4g} B", b);
}

// The precision the base weights of a task are kept in.
Precision BasePrecision(const Workload& w) {
  if (w.task == Task::kQlora) return Precision::kInt4;
  return w.precision;
}

// Activation bytes: the element size of the forward pass.
uint64_t ActivationElementBytes(const Workload& w) {
  return w.precision == Precision::kFp32 ? 4 : 2;
}

}  // namespace

std::string_view TaskName(Task task) { return NameOf(kTasks, task); }
std::string_view PrecisionName(Precision p) { return NameOf(kPrecisions, p); }
std::string_view OptimizerName(Optimizer o) { return NameOf(kOptimizers, o); }
std::string_view AttentionName(Attention a) { return NameOf(kAttentions, a); }
std::optional<Task> TaskNamed(std::string_view name) { return Named(kTasks, name); }
std::optional<Precision> PrecisionNamed(std::string_view name) { return Named(kPrecisions, name); }
std::optional<Optimizer> OptimizerNamed(std::string_view name) { return Named(kOptimizers, name); }
std::optional<Attention> AttentionNamed(std::string_view name) { return Named(kAttentions, name); }

bool IsTraining(Task task) { return task != Task::kInfer; }

Status CheckWorkload(const ModelSpec& model, const Workload& w) {
  if ((w.task == Task::kTrain || w.task == Task::kFinetune) && Quantized(w.precision)) {
    return MakeError("usage", fmt::format("--precision {}: full training needs fp32, bf16 or fp16; "
                                          "for quantized weights use --task lora or qlora",
                                          PrecisionName(w.precision)));
  }
  if (w.task == Task::kQlora && w.precision != Precision::kInt4) {
    return MakeError("usage", fmt::format("--precision {}: qlora keeps its base in int4 (NF4); "
                                          "for a {} base use --task lora",
                                          PrecisionName(w.precision), PrecisionName(w.precision)));
  }
  if ((w.task == Task::kLora || w.task == Task::kQlora) && !model.arch) {
    return MakeError("usage",
                     "--params: lora and qlora need the architecture (a catalog model "
                     "or a config.json) to count the adapters");
  }
  if (w.batch == 0 || w.seq == 0 || w.concurrency == 0 || w.lora_rank == 0) {
    return MakeError("usage", "--batch, --seq, --concurrency and --lora-rank must be at least 1");
  }
  return Status::Ok();
}

Estimate EstimateMemory(const ModelSpec& model, const Workload& w) {
  Estimate est;
  const bool training = IsTraining(w.task);
  const bool adapters = w.task == Task::kLora || w.task == Task::kQlora;
  const std::optional<Architecture>& arch = model.arch;
  const uint64_t P = model.params;
  const Precision base = BasePrecision(w);
  const bool mixed = w.precision != Precision::kFp32;

  // Weights.
  Component weights{"weights", "", 0, "", true};
  double weight_bytes = 0;
  if ((w.task == Task::kTrain || w.task == Task::kFinetune)) {
    const double b = mixed ? 2 : 4;
    weight_bytes = b * static_cast<double>(P);
    weights.label = mixed ? "weights (bf16/fp16 working copy)" : "weights (fp32)";
    weights.formula = fmt::format("P x {} = {} x {}", Bytes(b), Count(P), Bytes(b));
  } else if (Quantized(base) && arch) {
    const ParamCounts c = CountParams(*arch);
    const uint64_t rest = c.total - c.block_linear;
    const double qb = WeightBytes(base);
    weight_bytes = qb * static_cast<double>(c.block_linear) + 2.0 * static_cast<double>(rest);
    weights.label = fmt::format("weights ({} linear layers; embeddings, head, norms 16-bit)",
                                PrecisionName(base));
    weights.formula = fmt::format("P_linear x {} + P_other x 2 B = {} x {} + {} x 2 B", Bytes(qb),
                                  Count(c.block_linear), Bytes(qb), Count(rest));
  } else {
    const double b = WeightBytes(base);
    weight_bytes = b * static_cast<double>(P);
    weights.label = fmt::format("weights ({})", PrecisionName(base));
    weights.formula = fmt::format("P x {} = {} x {}", Bytes(b), Count(P), Bytes(b));
  }
  if (adapters) {
    est.trainable_params = LoraParams(*arch, w.lora_rank);
    weight_bytes += 2.0 * static_cast<double>(est.trainable_params);
    weights.label += ", + LoRA adapters (bf16)";
    weights.formula += fmt::format(" + P_lora x 2 B = {} x 2 B (rank {}, every linear layer)",
                                   Count(est.trainable_params), w.lora_rank);
  } else if (training) {
    est.trainable_params = P;
  }
  est.weights = static_cast<uint64_t>(std::llround(weight_bytes));
  weights.bytes = est.weights;
  est.components.push_back(weights);

  if (training) {
    const uint64_t T = est.trainable_params;
    const std::string who = adapters ? "P_lora" : "P";
    const uint64_t gb = mixed ? 2 : 4;
    est.gradients = gb * T;
    est.components.push_back({"gradients", mixed ? "gradients (bf16/fp16)" : "gradients (fp32)",
                              est.gradients,
                              fmt::format("{} x {} B = {} x {} B", who, gb, Count(T), gb), true});
    const uint64_t state = OptimizerStateBytes(w.optimizer);
    const uint64_t master = mixed ? 4 : 0;
    est.optimizer = (master + state) * T;
    est.components.push_back(
        {"optimizer",
         fmt::format("optimizer state ({}{})", OptimizerLabel(w.optimizer),
                     mixed ? "; fp32 master weights" : ""),
         est.optimizer,
         mixed ? fmt::format("{} x (4 B master + {} B state) = {} x {} B", who, state, Count(T),
                             master + state)
               : fmt::format("{} x {} B = {} x {} B", who, state, Count(T), state),
         true});
  }

  // Activations (and, for inference, the KV cache).
  const uint64_t e = ActivationElementBytes(w);
  if (!arch) {
    est.complete = false;
    if (training) {
      est.components.push_back(
          {"activations", "activations", std::nullopt,
           "unknown: needs the architecture (a catalog model or a config.json)", !w.checkpointing});
    } else {
      est.components.push_back(
          {"kv_cache", "KV cache", std::nullopt,
           "unknown: needs the architecture (a catalog model or a config.json)", true});
    }
  } else if (training) {
    const Architecture& a = *arch;
    const uint64_t q = a.heads * a.head_dim, kv = a.kv_heads * a.head_dim;
    const uint64_t g = a.mlp == Mlp::kGated ? 4 : 2;  // Elements an MLP stores per unit of width.
    const uint64_t attention_elems = 4 * a.hidden + 2 * q + 2 * kv;
    const uint64_t masks = a.dropout ? 2 * a.hidden : 0;
    const uint64_t scores =
        w.attention == Attention::kEager ? a.heads * w.seq * (e + (a.dropout ? e + 1 : 0)) : 0;
    const uint64_t tokens = w.batch * w.seq;
    const uint64_t moe_layers = a.experts > 0 ? a.moe_layers : 0;
    const uint64_t dense_layers = a.layers - moe_layers;
    // A token stores what its top-k experts and the shared MLP compute, and the router's logits.
    const uint64_t moe_mlp_elems =
        a.experts_per_token * g * a.expert_ffn + g * a.shared_ffn + a.experts;
    auto layer_bytes = [&](uint64_t mlp_elems) {
      return tokens * (e * (attention_elems + mlp_elems) + masks + scores);
    };
    auto layer_formula = [&](const std::string& mlp_text, uint64_t mlp_elems) {
      return fmt::format("b*s*({} B x (4h + 2q + 2kv + {}){}{}) = {}x{}x({} x {}{}{})", e, mlp_text,
                         a.dropout ? " + 2h masks" : "",
                         scores ? (a.dropout ? " + a*s*(2e+1) scores" : " + a*s*e scores") : "",
                         w.batch, w.seq, e, attention_elems + mlp_elems,
                         masks ? fmt::format(" + {}", masks) : "",
                         scores ? fmt::format(" + {}", scores) : "");
    };
    const uint64_t dense_layer = layer_bytes(g * a.ffn);
    const uint64_t moe_layer = layer_bytes(moe_mlp_elems);
    const uint64_t logits = a.encoder ? 0 : tokens * a.vocab * 8;
    const std::string logits_formula =
        logits ? fmt::format(" + logits b*s*V x 8 B = {}x{}x{} x 8 B", w.batch, w.seq, a.vocab)
               : "";
    std::string layers_formula;
    if (moe_layers == 0) {
      layers_formula = fmt::format("L x per-layer{} ; per-layer = {}", logits_formula,
                                   layer_formula(fmt::format("{}f", g), g * a.ffn));
    } else {
      const std::string moe_text =
          fmt::format("k x {}f_e{} + E", g, a.shared_ffn ? fmt::format(" + {}f_shared", g) : "");
      layers_formula = fmt::format(
          "{} MoE layers x per-MoE-layer{}{} ; per-MoE-layer = {}", moe_layers,
          dense_layers ? fmt::format(" + {} dense layers x per-layer", dense_layers) : "",
          logits_formula, layer_formula(moe_text, moe_mlp_elems));
      if (dense_layers) {
        layers_formula += " ; per-layer = " + layer_formula(fmt::format("{}f", g), g * a.ffn);
      }
    }
    const uint64_t full = dense_layers * dense_layer + moe_layers * moe_layer + logits;
    const uint64_t widest = std::max(dense_layers ? dense_layer : 0, moe_layers ? moe_layer : 0);
    const uint64_t ckpt = a.layers * tokens * a.hidden * e + widest + logits;
    est.components.push_back({"activations", "activations (stored for the backward pass)", full,
                              layers_formula, !w.checkpointing});
    est.components.push_back(
        {"activations_checkpointed", "activations with full checkpointing", ckpt,
         fmt::format("L x b*s*h x {} B (layer inputs) + one layer recomputed{}", e, logits_formula),
         w.checkpointing});
    est.activations = w.checkpointing ? ckpt : full;
  } else {
    const Architecture& a = *arch;
    const uint64_t g = a.mlp == Mlp::kGated ? 2 : 1;  // The MLP's intermediates alive at once.
    // The widest MLP a layer runs for one token: the dense one, or its top-k experts and the
    // shared one.
    uint64_t mlp = a.layers > (a.experts ? a.moe_layers : 0) ? g * a.ffn : 0;
    std::string mlp_text = fmt::format("{}f", g);
    if (a.experts > 0) {
      const uint64_t moe = a.experts_per_token * g * a.expert_ffn + g * a.shared_ffn;
      if (moe > mlp) {
        mlp = moe;
        mlp_text =
            fmt::format("k x {}f_e{}", g, a.shared_ffn ? fmt::format(" + {}f_shared", g) : "");
      }
    }
    const uint64_t act =
        w.seq * (2 * a.hidden + mlp) * e + (a.encoder ? 0 : w.concurrency * a.vocab * 4);
    est.activations = act;
    est.components.push_back(
        {"activations", "activations (one sequence's prefill, last-token logits)", act,
         fmt::format("s x (2h + {}) x {} B{} = {} x {} x {} B{}", mlp_text, e,
                     a.encoder ? "" : " + concurrency x V x 4 B", w.seq, 2 * a.hidden + mlp, e,
                     a.encoder ? "" : fmt::format(" + {} x {} x 4 B", w.concurrency, a.vocab)),
         true});
    if (!a.encoder) {
      const uint64_t kv_e = w.precision == Precision::kFp32 ? 4 : 2;
      est.kv_cache = 2 * a.layers * a.kv_heads * a.head_dim * w.seq * w.concurrency * kv_e;
      est.components.push_back(
          {"kv_cache", "KV cache", est.kv_cache,
           fmt::format("2 x L x kv_heads x head_dim x s x concurrency x {} B = 2 x {} x {} x {} x "
                       "{} x {} x {} B",
                       kv_e, a.layers, a.kv_heads, a.head_dim, w.seq, w.concurrency, kv_e),
           true});
    }
  }

  est.overhead = kFrameworkOverheadBytes;
  est.components.push_back({"overhead", "CUDA context, libraries' workspaces, allocator slack",
                            est.overhead, "1 GiB a process (budgeted)", true});
  for (const Component& c : est.components) {
    if (!c.in_total) continue;
    if (c.bytes) {
      est.total_bytes += *c.bytes;
    } else {
      est.complete = false;
    }
  }
  return est;
}

std::vector<Alternative> Alternatives(const ModelSpec& model, const Workload& w) {
  std::vector<Alternative> out;
  auto add = [&](std::string label, Workload alt) {
    if (!CheckWorkload(model, alt).ok()) return;
    const bool current =
        alt.task == w.task && alt.precision == w.precision && alt.checkpointing == w.checkpointing;
    out.push_back({std::move(label), alt, EstimateMemory(model, alt), current});
  };
  if (w.task == Task::kInfer) {
    for (const auto& [p, name] : kPrecisions) {
      if (p == Precision::kFp16) continue;  // The same as bf16.
      Workload alt = w;
      alt.precision = p;
      add(std::string(name), alt);
    }
    return out;
  }
  Workload alt = w;
  alt.task = w.task == Task::kTrain ? Task::kTrain : Task::kFinetune;
  alt.precision = Precision::kFp32;
  add("full, fp32", alt);
  alt.precision = Precision::kBf16;
  add("full, bf16 mixed precision", alt);
  alt.task = Task::kLora;
  add("lora, bf16 base", alt);
  alt.task = Task::kQlora;
  alt.precision = Precision::kInt4;
  add("qlora, int4 (NF4) base", alt);
  // The workload asked for, with checkpointing the other way.
  alt = w;
  alt.checkpointing = !w.checkpointing;
  add(alt.checkpointing ? "as asked, with checkpointing" : "as asked, without checkpointing", alt);
  if (std::none_of(out.begin(), out.end(), [](const Alternative& a) { return a.current; })) {
    out.insert(out.begin(), {"as asked", w, EstimateMemory(model, w), true});
  }
  return out;
}

}  // namespace gw::plan
