// A model as the VRAM estimator sees it: its architecture (from the catalog,
// catalog/models.toml, or a Hugging Face config.json) or only its parameter
// count (`advise --params 7B`), and the parameters that architecture holds.
// Pure: the caller reads files.
#ifndef GPUWARDEN_PLAN_MODEL_H_
#define GPUWARDEN_PLAN_MODEL_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"

namespace gw::plan {

enum class Mlp : uint8_t { kGelu, kGated };  // Two matrices; three (SwiGLU, GeGLU).
enum class Norm : uint8_t { kLayerNorm, kRmsNorm };

// A transformer (decoder, or BERT-style encoder), dense or a mixture of
// experts. Field meanings: catalog/models.toml's header.
struct Architecture {
  uint64_t layers = 0;
  uint64_t hidden = 0;
  uint64_t heads = 0;
  uint64_t kv_heads = 0;
  uint64_t head_dim = 0;  // hidden / heads unless the config says otherwise.
  uint64_t vocab = 0;
  uint64_t ffn = 0;
  Mlp mlp = Mlp::kGated;
  Norm norm = Norm::kRmsNorm;
  bool tied_embeddings = false;
  uint64_t learned_positions = 0;
  uint64_t token_types = 0;
  bool qkv_bias = false;
  bool linear_bias = false;
  bool dropout = false;
  bool encoder = false;
  uint64_t context = 0;  // 0: unknown.
  // A mixture of experts: `moe_layers` of the `layers` replace their MLP of
  // `ffn` with a router over `experts` MLPs of `expert_ffn` (all resident in
  // memory; each token goes through `experts_per_token` of them) and an
  // always-on shared MLP of `shared_ffn` (0: none). experts == 0: dense.
  uint64_t experts = 0;
  uint64_t experts_per_token = 0;
  uint64_t expert_ffn = 0;
  uint64_t shared_ffn = 0;
  uint64_t moe_layers = 0;
};

struct ModelSpec {
  std::string name;
  std::string source;                // Where the figures come from (a URL or a file).
  std::optional<Architecture> arch;  // nullopt: only the parameter count is known.
  uint64_t params = 0;               // Total; CountParams(*arch).total when arch is known.
  // What was assumed to read it, for people ("model_type \"x\" is not one
  // gpuwarden knows: read as a Llama-like decoder ..."); "" when nothing was.
  std::string assumption;
};

// The parameters of an architecture, by where they sit: the transformer
// blocks' linear layers are what weight quantization (int8, int4, fp8)
// applies to; embeddings, the output head and norms stay in 16 bits.
struct ParamCounts {
  uint64_t embedding = 0;     // Token (+ position, token-type) tables and their norm.
  uint64_t block_linear = 0;  // Attention and MLP matrices and their biases, all layers.
  uint64_t norms = 0;         // The blocks' and the final norms.
  uint64_t head = 0;          // An untied LM head, or an encoder's pooler.
  uint64_t total = 0;
  uint64_t active = 0;  // Used for one token: total less the experts it is not routed to.
};
ParamCounts CountParams(const Architecture& arch);

// Parameters a LoRA adapter of `rank` adds on every linear layer of every
// block (query, key, value, output; the MLP's two or three matrices, in
// every expert of a mixture; not the router).
uint64_t LoraParams(const Architecture& arch, uint64_t rank);

// A parameter count for --params: "7B", "1.5b", "125M", "350k", "8e9" or a
// plain number. Errors (code "malformed", "out_of_range") quote the input.
Result<uint64_t> ParseParamCount(std::string_view text);

// "6.74B", "124.4M": a count for people.
std::string FormatParamCount(uint64_t params);

// A model from the text of a Hugging Face config.json read at `path` (named
// in errors). The model_types it knows are listed in KnownModelTypes(); the
// mixtures of experts among them (mixtral, qwen2_moe, qwen3_moe, olmoe,
// deepseek) are read with their experts. Another model_type is read as a
// Llama-like decoder when it gives the fields one needs, and
// ModelSpec::assumption says so. Errors (code "bad_input"), one line,
// "PATH: PROBLEM": not JSON, a field missing or not a positive integer, an
// encoder-decoder model, multi-head latent attention (DeepSeek-V2/V3), a
// multimodal wrapper (text_config).
Result<ModelSpec> ParseHfConfig(std::string_view text, const std::string& path);

// The model_types ParseHfConfig reads by their own rules, in its order.
std::vector<std::string_view> KnownModelTypes();

// Checks an architecture read from anywhere: every size positive, heads
// dividing evenly. "" when sane, else the first problem.
std::string ArchitectureProblem(const Architecture& arch);

}  // namespace gw::plan

#endif  // GPUWARDEN_PLAN_MODEL_H_
