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

#include "core/result.h"

namespace gw::plan {

enum class Mlp : uint8_t { kGelu, kGated };  // Two matrices; three (SwiGLU, GeGLU).
enum class Norm : uint8_t { kLayerNorm, kRmsNorm };

// A dense transformer (decoder, or BERT-style encoder). Field meanings:
// catalog/models.toml's header.
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
};

struct ModelSpec {
  std::string name;
  std::string source;                // Where the figures come from (a URL or a file).
  std::optional<Architecture> arch;  // nullopt: only the parameter count is known.
  uint64_t params = 0;               // Total; CountParams(*arch).total when arch is known.
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
};
ParamCounts CountParams(const Architecture& arch);

// Parameters a LoRA adapter of `rank` adds on every linear layer of every
// block (query, key, value, output; the MLP's two or three matrices).
uint64_t LoraParams(const Architecture& arch, uint64_t rank);

// A parameter count for --params: "7B", "1.5b", "125M", "350k", "8e9" or a
// plain number. Errors (code "malformed", "out_of_range") quote the input.
Result<uint64_t> ParseParamCount(std::string_view text);

// "6.74B", "124.4M": a count for people.
std::string FormatParamCount(uint64_t params);

// A model from the text of a Hugging Face config.json read at `path` (named
// in errors). Architectures it knows: llama, mistral, qwen2, gemma, phi3,
// gpt2, bert, roberta (model_type); other decoders are read as Llama-like
// when they give the fields it needs. Errors (code "bad_input"), one line,
// "PATH: PROBLEM": not JSON, a field missing or not a positive integer, a
// mixture-of-experts model, a multimodal wrapper (text_config).
Result<ModelSpec> ParseHfConfig(std::string_view text, const std::string& path);

// Checks an architecture read from anywhere: every size positive, heads
// dividing evenly. "" when sane, else the first problem.
std::string ArchitectureProblem(const Architecture& arch);

}  // namespace gw::plan

#endif  // GPUWARDEN_PLAN_MODEL_H_
