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
      {R"({"model_type": "mixtral", "num_local_experts": 8})", "a mixture-of-experts model"},
      {R"({"model_type": "llava", "text_config": {}})", "a multimodal wrapper"},
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
