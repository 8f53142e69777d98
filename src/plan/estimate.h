// What a job needs in GPU memory: the VRAM breakdown of a model under a
// workload (task, precision, batch, sequence, optimizer, concurrency), each
// part with the formula it came from. Pure. The formulas and the figures
// they rest on are in docs/advise.md.
#ifndef GPUWARDEN_PLAN_ESTIMATE_H_
#define GPUWARDEN_PLAN_ESTIMATE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"
#include "plan/model.h"

namespace gw::plan {

enum class Task : uint8_t { kTrain, kFinetune, kLora, kQlora, kInfer };
enum class Precision : uint8_t { kFp32, kBf16, kFp16, kFp8, kInt8, kInt4 };
enum class Optimizer : uint8_t { kAdamW, kAdamW8bit, kSgd, kSgdMomentum };
enum class Attention : uint8_t { kFlash, kEager };

std::string_view TaskName(Task task);         // "train", "finetune", "lora", ...
std::string_view PrecisionName(Precision p);  // "fp32", "bf16", ...
std::string_view OptimizerName(Optimizer o);  // "adamw", "adamw-8bit", "sgd", "sgd-momentum"
std::string_view AttentionName(Attention a);  // "flash", "eager"
std::optional<Task> TaskNamed(std::string_view name);
std::optional<Precision> PrecisionNamed(std::string_view name);
std::optional<Optimizer> OptimizerNamed(std::string_view name);
std::optional<Attention> AttentionNamed(std::string_view name);

// The CUDA context, cuBLAS/cuDNN workspaces and allocator slack of one
// process (docs/advise.md: 0.3 to 2 GiB are reported; 1 GiB is budgeted).
inline constexpr uint64_t kFrameworkOverheadBytes = uint64_t{1} << 30;
// NF4 with double quantization, bits per weight (QLoRA).
inline constexpr double kInt4BitsPerWeight = 4.127;

struct Workload {
  Task task = Task::kInfer;
  Precision precision = Precision::kBf16;
  uint64_t batch = 1;   // Sequences per GPU per step (training: the micro-batch).
  uint64_t seq = 2048;  // Tokens per sequence (inference: prompt + output).
  Optimizer optimizer = Optimizer::kAdamW;
  uint64_t concurrency = 1;    // Inference: sequences served at once.
  bool checkpointing = false;  // Training: activation checkpointing in the total.
  Attention attention = Attention::kFlash;
  uint64_t lora_rank = 16;
};

// Training tasks update weights; the rest only read them.
bool IsTraining(Task task);

// Whether the workload makes sense for the model: a usage error naming the
// flag ("--precision int8: full training needs fp32, bf16 or fp16; for
// quantized weights use --task lora or qlora"), or ok.
Status CheckWorkload(const ModelSpec& model, const Workload& w);

// One part of the breakdown.
struct Component {
  std::string key;                // "weights", "gradients", "optimizer", "activations",
                                  // "activations_checkpointed", "kv_cache", "overhead"
  std::string label;              // For people: "optimizer state (AdamW, fp32 master)"
  std::optional<uint64_t> bytes;  // nullopt: unknown (only the parameter count is known).
  std::string formula;            // "P x 2 B = 6.74B x 2 B"
  bool in_total = true;           // false: shown for comparison only.
};

struct Estimate {
  std::vector<Component> components;
  uint64_t total_bytes = 0;  // Of the known parts in the total.
  bool complete = true;      // false: some part of the total is unknown (a lower bound).
  uint64_t trainable_params = 0;
  // The parts the parallel plan divides (fit.h); 0 when unknown.
  uint64_t weights = 0, gradients = 0, optimizer = 0, activations = 0, kv_cache = 0, overhead = 0;
};

// REQUIRES: CheckWorkload(model, w).ok().
Estimate EstimateMemory(const ModelSpec& model, const Workload& w);

// The same job done differently, for "what each precision, LoRA and QLoRA
// saves": inference at every precision; training in fp32, in bf16, with
// LoRA and with QLoRA; with and without checkpointing.
struct Alternative {
  std::string label;  // "bf16", "lora (bf16 base)", "checkpointing on"
  Workload workload;
  Estimate estimate;
  bool current = false;  // The workload asked for.
};
std::vector<Alternative> Alternatives(const ModelSpec& model, const Workload& w);

}  // namespace gw::plan

#endif  // GPUWARDEN_PLAN_ESTIMATE_H_
