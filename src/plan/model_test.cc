#include "plan/model.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "plan/test_catalog.h"

namespace gw::plan {
namespace {

using ::testing::HasSubstr;

// Published parameter counts: bert-base-cased from Accelerate's documented
// 413.18 MB fp32 load size (108,310,272 x 4 B); the others as their
// checkpoints report them.
TEST(CountParams, MatchesPublishedCounts) {
  EXPECT_EQ(RepoModel("gpt2").params, 124'439'808u);
  EXPECT_EQ(RepoModel("bert-base-cased").params, 108'310'272u);
  EXPECT_EQ(RepoModel("llama-2-7b").params, 6'738'415'616u);
  EXPECT_EQ(RepoModel("llama-3-8b").params, 8'030'261'248u);
  EXPECT_EQ(RepoModel("qwen2.5-7b").params, 7'615'616'512u);
  EXPECT_EQ(RepoModel("mistral-7b").params, 7'241'732'096u);
}

TEST(CountParams, SplitsLinearLayersFromEmbeddingsAndHead) {
  const ParamCounts c = CountParams(*RepoModel("llama-2-7b").arch);
  EXPECT_EQ(c.embedding, 32000u * 4096);
  EXPECT_EQ(c.head, 32000u * 4096);  // Untied.
  EXPECT_EQ(c.norms, (32u * 2 + 1) * 4096);
  EXPECT_EQ(c.embedding + c.block_linear + c.norms + c.head, c.total);
}

TEST(LoraParams, RankTimesInPlusOutOnEveryLinearLayer) {
  // Llama-2-7B, rank 8: q, k, v, o are 4096x4096 (8 x 8192 each), the MLP's
  // three matrices 4096x11008 (8 x 15104 each), 32 layers.
  EXPECT_EQ(LoraParams(*RepoModel("llama-2-7b").arch, 8), 32u * (4 * 8 * 8192 + 3 * 8 * 15104));
}

TEST(ParseParamCount, TakesSuffixesAndPlainNumbers) {
  EXPECT_EQ(*ParseParamCount("7B"), 7'000'000'000u);
  EXPECT_EQ(*ParseParamCount("1.5b"), 1'500'000'000u);
  EXPECT_EQ(*ParseParamCount("125M"), 125'000'000u);
  EXPECT_EQ(*ParseParamCount("350k"), 350'000u);
  EXPECT_EQ(*ParseParamCount("8e9"), 8'000'000'000u);
  EXPECT_EQ(*ParseParamCount("1000"), 1000u);
  for (const char* bad : {"", "B", "seven", "-7B", "7X", "nanB"}) {
    EXPECT_FALSE(ParseParamCount(bad).ok()) << bad;
  }
  EXPECT_EQ(ParseParamCount("0").error().code, "out_of_range");
  EXPECT_THAT(ParseParamCount("lots").error().message, HasSubstr("\"lots\""));
}

TEST(FormatParamCount, ShortForPeople) {
  EXPECT_EQ(FormatParamCount(6'738'415'616), "6.74B");
  EXPECT_EQ(FormatParamCount(124'439'808), "124.4M");
}

constexpr const char* kLlama3Config = R"({
  "architectures": ["LlamaForCausalLM"], "model_type": "llama",
  "hidden_size": 4096, "intermediate_size": 14336, "num_attention_heads": 32,
  "num_hidden_layers": 32, "num_key_value_heads": 8, "vocab_size": 128256,
  "max_position_embeddings": 8192, "tie_word_embeddings": false, "torch_dtype": "bfloat16"
})";

TEST(ParseHfConfig, ReadsALlamaConfigAsTheCatalogHasIt) {
  Result<ModelSpec> m = ParseHfConfig(kLlama3Config, "/models/llama3/config.json");
  ASSERT_TRUE(m.ok()) << m.error().message;
  EXPECT_EQ(m->params, RepoModel("llama-3-8b").params);
  EXPECT_EQ(m->arch->head_dim, 128u);
  EXPECT_EQ(m->arch->kv_heads, 8u);
  EXPECT_EQ(m->source, "/models/llama3/config.json");
}

TEST(ParseHfConfig, ReadsGpt2AndBertNames) {
  Result<ModelSpec> gpt2 = ParseHfConfig(
      R"({"model_type": "gpt2", "n_embd": 768, "n_head": 12, "n_layer": 12, "n_positions": 1024,
          "n_inner": null, "vocab_size": 50257})",
      "gpt2.json");
  ASSERT_TRUE(gpt2.ok()) << gpt2.error().message;
  EXPECT_EQ(gpt2->params, 124'439'808u);
  Result<ModelSpec> bert = ParseHfConfig(
      R"({"model_type": "bert", "hidden_size": 768, "num_attention_heads": 12,
          "num_hidden_layers": 12, "intermediate_size": 3072, "max_position_embeddings": 512,
          "type_vocab_size": 2, "vocab_size": 28996})",
      "bert.json");
  ASSERT_TRUE(bert.ok()) << bert.error().message;
  EXPECT_EQ(bert->params, 108'310'272u);
  EXPECT_TRUE(bert->arch->encoder);
}

// Mixtures of experts hold every expert and run the routed ones: the totals and
// the active counts their authors publish (Mixtral 8x7B: 46.7B, 12.9B active;
// Qwen1.5-MoE-A2.7B: 14.3B, 2.7B active), from their config.json.
TEST(ParseHfConfig, ReadsMixturesOfExpertsWithTheirPublishedCounts) {
  Result<ModelSpec> mixtral = ParseHfConfig(
      R"({"model_type": "mixtral", "hidden_size": 4096, "intermediate_size": 14336,
          "num_attention_heads": 32, "num_hidden_layers": 32, "num_key_value_heads": 8,
          "num_local_experts": 8, "num_experts_per_tok": 2, "vocab_size": 32000,
          "max_position_embeddings": 32768, "tie_word_embeddings": false})",
      "mixtral.json");
  ASSERT_TRUE(mixtral.ok()) << mixtral.error().message;
  EXPECT_EQ(mixtral->params, 46'702'792'704u);
  EXPECT_EQ(mixtral->params, RepoModel("mixtral-8x7b").params);
  EXPECT_EQ(FormatParamCount(CountParams(*mixtral->arch).active), "12.88B");
  EXPECT_EQ(mixtral->arch->moe_layers, 32u);
  EXPECT_TRUE(mixtral->assumption.empty());

  Result<ModelSpec> qwen = ParseHfConfig(
      R"({"model_type": "qwen2_moe", "hidden_size": 2048, "intermediate_size": 5632,
          "moe_intermediate_size": 1408, "shared_expert_intermediate_size": 5632,
          "num_experts": 60, "num_experts_per_tok": 4, "decoder_sparse_step": 1,
          "mlp_only_layers": [], "num_attention_heads": 16, "num_hidden_layers": 24,
          "num_key_value_heads": 16, "vocab_size": 151936, "max_position_embeddings": 8192,
          "tie_word_embeddings": false})",
      "qwen-moe.json");
  ASSERT_TRUE(qwen.ok()) << qwen.error().message;
  EXPECT_EQ(qwen->params, RepoModel("qwen1.5-moe-a2.7b").params);
  EXPECT_EQ(FormatParamCount(qwen->params), "14.32B");
  EXPECT_EQ(FormatParamCount(CountParams(*qwen->arch).active), "2.69B");

  // Qwen3-30B-A3B (30.5B, 3.3B active) and DeepSeek-MoE-16B (16.4B, 2.8B active; its first
  // layer dense, two shared experts), from their config.json: within the 0.1B their authors
  // round to.
  Result<ModelSpec> qwen3 = ParseHfConfig(
      R"({"model_type": "qwen3_moe", "hidden_size": 2048, "intermediate_size": 6144,
          "moe_intermediate_size": 768, "num_experts": 128, "num_experts_per_tok": 8,
          "decoder_sparse_step": 1, "mlp_only_layers": [], "num_attention_heads": 32,
          "num_key_value_heads": 4, "head_dim": 128, "num_hidden_layers": 48,
          "vocab_size": 151936, "tie_word_embeddings": false})",
      "qwen3.json");
  ASSERT_TRUE(qwen3.ok()) << qwen3.error().message;
  EXPECT_NEAR(static_cast<double>(qwen3->params) / 1e9, 30.5, 0.05);
  EXPECT_NEAR(static_cast<double>(CountParams(*qwen3->arch).active) / 1e9, 3.3, 0.06);
  Result<ModelSpec> deepseek16 = ParseHfConfig(
      R"({"model_type": "deepseek", "hidden_size": 2048, "intermediate_size": 10944,
          "moe_intermediate_size": 1408, "n_routed_experts": 64, "n_shared_experts": 2,
          "num_experts_per_tok": 6, "first_k_dense_replace": 1, "moe_layer_freq": 1,
          "num_attention_heads": 16, "num_key_value_heads": 16, "num_hidden_layers": 28,
          "vocab_size": 102400, "tie_word_embeddings": false})",
      "deepseek-moe-16b.json");
  ASSERT_TRUE(deepseek16.ok()) << deepseek16.error().message;
  EXPECT_NEAR(static_cast<double>(deepseek16->params) / 1e9, 16.4, 0.05);
  EXPECT_NEAR(static_cast<double>(CountParams(*deepseek16->arch).active) / 1e9, 2.8, 0.05);

  // Layers listed in mlp_only_layers keep the dense MLP; DeepSeek-MoE's first
  // layers do too, and its shared experts are whole experts.
  Result<ModelSpec> sparse = ParseHfConfig(
      R"({"model_type": "qwen2_moe", "hidden_size": 64, "intermediate_size": 128,
          "moe_intermediate_size": 32, "num_experts": 4, "num_experts_per_tok": 2,
          "decoder_sparse_step": 2, "mlp_only_layers": [1, 9], "num_attention_heads": 4,
          "num_hidden_layers": 8, "vocab_size": 100})",
      "sparse.json");
  ASSERT_TRUE(sparse.ok()) << sparse.error().message;
  EXPECT_EQ(sparse->arch->moe_layers, 3u);  // Layers 3, 5 and 7 (of 0-7): 1 is dense.
  Result<ModelSpec> deepseek = ParseHfConfig(
      R"({"model_type": "deepseek", "hidden_size": 64, "intermediate_size": 256,
          "moe_intermediate_size": 16, "n_routed_experts": 8, "n_shared_experts": 2,
          "num_experts_per_tok": 2, "first_k_dense_replace": 1, "moe_layer_freq": 1,
          "num_attention_heads": 4, "num_hidden_layers": 4, "vocab_size": 100})",
      "deepseek.json");
  ASSERT_TRUE(deepseek.ok()) << deepseek.error().message;
  EXPECT_EQ(deepseek->arch->moe_layers, 3u);
  EXPECT_EQ(deepseek->arch->shared_ffn, 32u);
  // "num_experts": 0 is a dense model.
  Result<ModelSpec> dense = ParseHfConfig(
      R"({"model_type": "qwen2_moe", "hidden_size": 64, "num_experts": 0,
          "num_attention_heads": 4, "num_hidden_layers": 2, "vocab_size": 100})",
      "dense.json");
  ASSERT_TRUE(dense.ok()) << dense.error().message;
  EXPECT_EQ(dense->arch->experts, 0u);
}

// Families with other names, MLPs, norms and biases, against the counts their
// checkpoints report: Pythia-1B (GPT-NeoX), OPT-1.3B (learned positions with
// two extra rows, tied head), Falcon-7B (multi-query: one KV head; it has one
// norm a layer where this counts two, 0.004 % more).
TEST(ParseHfConfig, ReadsOtherFamiliesWithTheirPublishedCounts) {
  Result<ModelSpec> pythia = ParseHfConfig(
      R"({"model_type": "gpt_neox", "hidden_size": 2048, "intermediate_size": 8192,
          "num_attention_heads": 8, "num_hidden_layers": 16, "vocab_size": 50304,
          "max_position_embeddings": 2048, "tie_word_embeddings": false})",
      "pythia.json");
  ASSERT_TRUE(pythia.ok()) << pythia.error().message;
  EXPECT_EQ(pythia->params, 1'011'781'632u);
  Result<ModelSpec> opt = ParseHfConfig(
      R"({"model_type": "opt", "hidden_size": 2048, "ffn_dim": 8192, "num_attention_heads": 32,
          "num_hidden_layers": 24, "vocab_size": 50272, "max_position_embeddings": 2048,
          "dropout": 0.1, "enable_bias": true})",
      "opt.json");
  ASSERT_TRUE(opt.ok()) << opt.error().message;
  EXPECT_EQ(opt->params, 1'315'758'080u);
  EXPECT_TRUE(opt->arch->dropout);
  Result<ModelSpec> falcon = ParseHfConfig(
      R"({"model_type": "falcon", "hidden_size": 4544, "num_attention_heads": 71,
          "num_hidden_layers": 32, "vocab_size": 65024, "multi_query": true,
          "new_decoder_architecture": false, "num_kv_heads": 71, "bias": false,
          "parallel_attn": true})",
      "falcon.json");
  ASSERT_TRUE(falcon.ok()) << falcon.error().message;
  EXPECT_EQ(falcon->arch->kv_heads, 1u);
  EXPECT_NEAR(static_cast<double>(falcon->params), 6'921'720'704.0, 6'921'720'704.0 * 1e-4);
  for (ModelSpec* m : {&*pythia, &*opt, &*falcon}) EXPECT_TRUE(m->assumption.empty()) << m->name;
}

// A model_type it does not know is read as a Llama-like decoder, and says so.
TEST(ParseHfConfig, AnUnknownTypeIsReadAsLlamaLikeAndSaysSo) {
  Result<ModelSpec> m = ParseHfConfig(
      R"({"model_type": "newthing\u001b[31m", "hidden_size": 4096, "intermediate_size": 11008,
          "num_attention_heads": 32, "num_hidden_layers": 32, "vocab_size": 32000})",
      "new.json");
  ASSERT_TRUE(m.ok()) << m.error().message;
  EXPECT_EQ(m->params, RepoModel("llama-2-7b").params);
  EXPECT_THAT(m->assumption, HasSubstr("is not one gpuwarden knows: read as a Llama-like"));
  EXPECT_EQ(m->assumption.find('\x1b'), std::string::npos);
  EXPECT_EQ(m->name.find('\x1b'), std::string::npos);
}

// Bad files: one line naming the file and the problem.
TEST(ParseHfConfig, BadFilesAreOneErrorNamingTheFile) {
  struct Case {
    const char* text;
    const char* problem;
  };
  const Case cases[] = {
      {"{not json", "not valid JSON"},
      {"[1, 2]", "a config.json is a JSON object, not array"},
      {R"({"model_type": "llama", "hidden_size": 4096})", "\"num_hidden_layers\" is missing"},
      {R"({"num_hidden_layers": 2, "hidden_size": "big", "num_attention_heads": 2,
           "vocab_size": 10})",
       "\"hidden_size\" is not an integer"},
      {R"({"num_hidden_layers": 0, "hidden_size": 8, "num_attention_heads": 2, "vocab_size": 10})",
       "\"num_hidden_layers\" must be above 0"},
      {R"({"num_hidden_layers": 2, "hidden_size": 8, "num_attention_heads": 4,
           "num_key_value_heads": 3, "vocab_size": 10})",
       "heads (4) is not a multiple of kv_heads (3)"},
      {R"({"model_type": "mixtral", "num_hidden_layers": 2, "hidden_size": 8,
           "num_attention_heads": 2, "vocab_size": 10, "num_local_experts": 8})",
       "\"num_experts_per_tok\" is missing"},
      {R"({"model_type": "mixtral", "num_hidden_layers": 2, "hidden_size": 8,
           "num_attention_heads": 2, "vocab_size": 10, "num_local_experts": 4,
           "num_experts_per_tok": 5})",
       "experts_per_token (5) must be 1 to experts (4)"},
      {R"({"model_type": "t5", "d_model": 512, "is_encoder_decoder": true})",
       "an encoder-decoder model"},
      {R"({"model_type": "deepseek_v3", "kv_lora_rank": 512})", "multi-head latent attention"},
      {R"({"model_type": "llava", "text_config": {}})", "a multimodal wrapper"},
      {R"({"num_hidden_layers": 16777216, "hidden_size": 16777216, "num_attention_heads": 1,
           "intermediate_size": 16777216, "vocab_size": 10})",
       "more than 1000T parameters"},
  };
  for (const Case& c : cases) {
    Result<ModelSpec> m = ParseHfConfig(c.text, "/tmp/x/config.json");
    ASSERT_FALSE(m.ok()) << c.text;
    EXPECT_EQ(m.error().code, "bad_input");
    EXPECT_THAT(m.error().message, HasSubstr("/tmp/x/config.json: "));
    EXPECT_THAT(m.error().message, HasSubstr(c.problem));
    EXPECT_EQ(m.error().message.find('\n'), std::string::npos);
  }
}

}  // namespace
}  // namespace gw::plan
