#include "plan/estimate.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "core/units.h"
#include "plan/fit.h"
#include "plan/test_catalog.h"

namespace gw::plan {
namespace {

using ::testing::HasSubstr;
const Component& Part(const Estimate& e, const std::string& key) {
  for (const Component& c : e.components) {
    if (c.key == key) return c;
  }
  ADD_FAILURE() << "no component " << key;
  static const Component none;
  return none;
}

Workload Infer(uint64_t seq, uint64_t concurrency = 1) {
  Workload w;
  w.task = Task::kInfer;
  w.seq = seq;
  w.concurrency = concurrency;
  return w;
}

// KV cache per token in bf16: Llama-2-7B 512 KiB, Llama-3-8B 128 KiB,
// Llama-3-70B 320 KiB (2 x layers x kv_heads x head_dim x 2 B).
TEST(EstimateMemory, KvCachePerTokenOfPublishedModels) {
  EXPECT_EQ(EstimateMemory(RepoModel("llama-2-7b"), Infer(1)).kv_cache, 512 * kKiB);
  EXPECT_EQ(EstimateMemory(RepoModel("llama-3-8b"), Infer(1)).kv_cache, 128 * kKiB);
  EXPECT_EQ(EstimateMemory(RepoModel("llama-3-70b"), Infer(1)).kv_cache, 320 * kKiB);
  // Llama-3-8B, an 8k context: 1 GiB a sequence; four at once, 4 GiB.
  EXPECT_EQ(EstimateMemory(RepoModel("llama-3-8b"), Infer(8192, 4)).kv_cache, 4 * kGiB);
}

// ZeRO's accounting: mixed-precision AdamW is 16 B a parameter (2 weights +
// 2 gradients + 12 master and moments); pure fp32 AdamW 16 B too (4 + 4 + 8);
// 8-bit AdamW in mixed precision 10 B.
TEST(EstimateMemory, TrainingStateBytesPerParameter) {
  const ModelSpec& m = RepoModel("llama-2-7b");
  const uint64_t P = m.params;
  Workload w;
  w.task = Task::kTrain;
  for (Precision p : {Precision::kBf16, Precision::kFp32}) {
    w.precision = p;
    const Estimate e = EstimateMemory(m, w);
    EXPECT_EQ(e.weights + e.gradients + e.optimizer, 16 * P) << PrecisionName(p);
  }
  w.precision = Precision::kBf16;
  w.optimizer = Optimizer::kAdamW8bit;
  const Estimate e = EstimateMemory(m, w);
  EXPECT_EQ(e.weights + e.gradients + e.optimizer, 10 * P);
  EXPECT_THAT(Part(e, "optimizer").formula, HasSubstr("4 B master + 2 B state"));
}

// Korthikanti et al.: a GPT layer in 16 bits stores s*b*h*(34 + 5*a*s/h)
// bytes without recomputation (eager attention, dropout, a 4h GELU MLP).
TEST(EstimateMemory, ActivationsOfAGptLayerFollowKorthikanti) {
  ModelSpec m = RepoModel("gpt2");
  m.arch->vocab = 1;  // Leave the logits out of the sum.
  m.arch->learned_positions = 0;
  Workload w;
  w.task = Task::kTrain;
  w.attention = Attention::kEager;
  w.batch = 4;
  w.seq = 1024;
  const Architecture& a = *m.arch;
  const uint64_t sbh = w.seq * w.batch * a.hidden;
  const uint64_t per_layer = sbh * 34 + 5 * a.heads * w.seq * w.seq * w.batch;
  const uint64_t logits = w.batch * w.seq * a.vocab * 8;
  EXPECT_EQ(EstimateMemory(m, w).activations, a.layers * per_layer + logits);
  // FlashAttention never stores the s x s scores: 34 s*b*h a layer.
  w.attention = Attention::kFlash;
  EXPECT_EQ(EstimateMemory(m, w).activations, a.layers * sbh * 34 + logits);
}

TEST(EstimateMemory, CheckpointingKeepsLayerInputsOnly) {
  Workload w;
  w.task = Task::kFinetune;
  w.batch = 8;
  w.seq = 4096;
  const ModelSpec& m = RepoModel("llama-3-8b");
  const Estimate full = EstimateMemory(m, w);
  w.checkpointing = true;
  const Estimate ckpt = EstimateMemory(m, w);
  // Layer inputs instead of every tensor; the logits (b*s*V*8 B, 33.6 GB
  // here with a 128k vocabulary) are kept either way.
  const uint64_t logits = 8 * 4096 * m.arch->vocab * 8;
  EXPECT_LT((ckpt.activations - logits) * 5, full.activations - logits);
  EXPECT_EQ(ckpt.weights, full.weights);
  // Both are shown; only the chosen one counts.
  EXPECT_FALSE(Part(ckpt, "activations").in_total);
  EXPECT_TRUE(Part(ckpt, "activations_checkpointed").in_total);
  EXPECT_EQ(ckpt.total_bytes, full.total_bytes - full.activations + ckpt.activations);
}

// QLoRA: NF4 base (4.127 bits a weight on the blocks' linear layers,
// embeddings and head in 16 bits), adapters trained at 16 B a parameter.
TEST(EstimateMemory, QloraKeepsTheBaseIn4Bits) {
  const ModelSpec& m = RepoModel("llama-2-7b");
  const ParamCounts c = CountParams(*m.arch);
  Workload w;
  w.task = Task::kQlora;
  w.precision = Precision::kInt4;
  w.lora_rank = 16;
  const Estimate e = EstimateMemory(m, w);
  const uint64_t lora = LoraParams(*m.arch, 16);
  EXPECT_EQ(e.trainable_params, lora);
  const double base = c.block_linear * kInt4BitsPerWeight / 8 + 2.0 * (c.total - c.block_linear);
  EXPECT_NEAR(static_cast<double>(e.weights), base + 2.0 * lora, 1.0);
  EXPECT_EQ(e.gradients + e.optimizer, 14 * lora);
  // Less than a third of bf16 inference weights.
  EXPECT_LT(e.weights * 3, EstimateMemory(m, Infer(1)).weights);
}

TEST(EstimateMemory, OnlyAParameterCountLeavesActivationsUnknown) {
  ModelSpec m;
  m.name = "7B";
  m.params = 7'000'000'000;
  Workload w = Infer(2048);
  const Estimate e = EstimateMemory(m, w);
  EXPECT_FALSE(e.complete);
  EXPECT_FALSE(Part(e, "kv_cache").bytes.has_value());
  EXPECT_EQ(e.total_bytes, 14'000'000'000u + kFrameworkOverheadBytes);
}

TEST(CheckWorkload, RefusesWhatCannotBeTrainedNamingTheFlag) {
  const ModelSpec& m = RepoModel("llama-2-7b");
  Workload w;
  w.task = Task::kTrain;
  w.precision = Precision::kInt8;
  Status s = CheckWorkload(m, w);
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.error().message, HasSubstr("--precision int8: full training needs"));
  w.task = Task::kQlora;
  w.precision = Precision::kBf16;
  EXPECT_THAT(CheckWorkload(m, w).error().message, HasSubstr("--precision bf16: qlora keeps"));
  w.task = Task::kLora;
  ModelSpec bare;
  bare.params = 1000;
  EXPECT_THAT(CheckWorkload(bare, w).error().message, HasSubstr("--params: lora and qlora need"));
  w.precision = Precision::kInt8;
  EXPECT_TRUE(CheckWorkload(m, w).ok());
}

TEST(Alternatives, InferenceAtEveryPrecisionSmallerEachStep) {
  const std::vector<Alternative> alts = Alternatives(RepoModel("llama-3-8b"), Infer(4096));
  ASSERT_EQ(alts.size(), 5u);  // fp32, bf16, fp8, int8, int4
  EXPECT_EQ(alts[1].label, "bf16");
  EXPECT_TRUE(alts[1].current);
  for (size_t i = 1; i < alts.size(); ++i) {
    EXPECT_LE(alts[i].estimate.total_bytes, alts[i - 1].estimate.total_bytes) << alts[i].label;
  }
}

TEST(Alternatives, TrainingComparesFullLoraQloraAndCheckpointing) {
  Workload w;
  w.task = Task::kFinetune;
  const std::vector<Alternative> alts = Alternatives(RepoModel("llama-2-7b"), w);
  ASSERT_EQ(alts.size(), 5u);
  EXPECT_TRUE(alts[1].current);                                           // full, bf16
  EXPECT_LT(alts[2].estimate.total_bytes, alts[1].estimate.total_bytes);  // lora
  EXPECT_LT(alts[3].estimate.total_bytes, alts[2].estimate.total_bytes);  // qlora
  EXPECT_EQ(alts[4].label, "as asked, with checkpointing");
}

// Llama-2-70B in bf16 (128 GiB of weights) needs two 80 GB GPUs joined by
// NVLink, and does not fit one 141 GB GPU's 90 %; Llama-3-8B fits one 24 GB GPU.
TEST(PlanLayout, TensorParallelInferenceOnTwoGpus) {
  const ModelSpec& m = RepoModel("llama-2-70b");
  const Estimate e = EstimateMemory(m, Infer(4096));
  std::optional<Layout> l = PlanLayout(e, false, 80 * kGiB, m.arch->heads, m.arch->kv_heads);
  ASSERT_TRUE(l.has_value());
  EXPECT_EQ(l->gpus, 2u);
  EXPECT_EQ(l->tp, 2u);
  EXPECT_TRUE(l->needs_nvlink);
  EXPECT_EQ(l->strategy, "tensor parallel 2");
  l = PlanLayout(e, false, 141 * kGiB, m.arch->heads, m.arch->kv_heads);
  ASSERT_TRUE(l.has_value());
  EXPECT_EQ(l->gpus, 2u);
  const ModelSpec& small = RepoModel("llama-3-8b");
  l = PlanLayout(EstimateMemory(small, Infer(4096)), false, 24 * kGiB, small.arch->heads,
                 small.arch->kv_heads);
  ASSERT_TRUE(l.has_value());
  EXPECT_EQ(l->gpus, 1u);
  EXPECT_EQ(l->interconnect, "none (1 GPU)");
}

// Full fine-tuning of a 7B model (16 B a parameter: 100 GiB of state) on
// 80 GB GPUs: sharded over two, at the lowest ZeRO stage that fits.
TEST(PlanLayout, TrainingShardsStateBeforeSplittingLayers) {
  const ModelSpec& m = RepoModel("llama-2-7b");
  Workload w;
  w.task = Task::kFinetune;
  w.batch = 1;
  w.seq = 2048;
  w.checkpointing = true;
  const Estimate e = EstimateMemory(m, w);
  std::optional<Layout> l = PlanLayout(e, true, 80 * kGiB, m.arch->heads, m.arch->kv_heads);
  ASSERT_TRUE(l.has_value());
  EXPECT_EQ(l->gpus, 2u);
  EXPECT_EQ(l->tp, 1u);
  EXPECT_GE(l->zero_stage, 1u);
  EXPECT_LE(static_cast<double>(l->per_gpu_bytes), kUsableFraction * 80 * kGiB);
  // On 24 GB cards: more of them, never more than the plan allows.
  l = PlanLayout(e, true, 24 * kGiB, m.arch->heads, m.arch->kv_heads);
  ASSERT_TRUE(l.has_value());
  EXPECT_GT(l->gpus, 2u);
  EXPECT_EQ(l->zero_stage, 3u);
  EXPECT_FALSE(l->needs_nvlink);  // ZeRO-3 runs over PCIe too, slower.
  EXPECT_TRUE(l->wants_nvlink);
  EXPECT_EQ(l->interconnect, "NVLink recommended");
}

TEST(PlanLayout, NothingWhenEvenTheLargestPlanCannotHoldIt) {
  ModelSpec m;
  m.params = 2'000'000'000'000;  // 2T parameters, bf16: 3.7 TiB of weights.
  const Estimate e = EstimateMemory(m, Infer(1));
  EXPECT_FALSE(PlanLayout(e, false, 24 * kGiB, 0, 0).has_value());
}

TEST(FitCatalog, WarnsWhenTheLayoutNeedsNvlinkTheGpuLacks) {
  const ModelSpec& m = RepoModel("llama-2-70b");
  const Workload w = Infer(4096);
  const Estimate e = EstimateMemory(m, w);
  for (const GpuFit& fit : FitCatalog(RepoCatalog().gpus, m, w, e)) {
    ASSERT_TRUE(fit.layout.has_value()) << fit.gpu->name;
    if (fit.gpu->name == "l40s") {
      EXPECT_GT(fit.layout->tp, 1u);
      EXPECT_EQ(fit.warning, "no NVLink: tensor parallelism over PCIe, slower");
    }
    if (fit.gpu->name == "h100-sxm") {
      EXPECT_EQ(fit.warning, "");
    }
  }
}

}  // namespace
}  // namespace gw::plan
