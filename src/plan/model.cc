#include "plan/model.h"

#include <fmt/format.h>

#include <array>
#include <cmath>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <set>

#include "core/text.h"

namespace gw::plan {

namespace {

// The parameters of one MLP `width` wide (two or three matrices, their biases).
uint64_t MlpParams(const Architecture& a, uint64_t width) {
  const uint64_t matrices = a.mlp == Mlp::kGated ? 3 : 2;
  uint64_t p = matrices * a.hidden * width;
  if (a.linear_bias) p += (matrices - 1) * width + a.hidden;
  return p;
}

}  // namespace

ParamCounts CountParams(const Architecture& a) {
  ParamCounts c;
  const uint64_t q = a.heads * a.head_dim;
  const uint64_t kv = a.kv_heads * a.head_dim;
  const uint64_t norm = a.norm == Norm::kLayerNorm ? 2 * a.hidden : a.hidden;
  c.embedding = (a.vocab + a.learned_positions + a.token_types) * a.hidden;
  if (a.encoder) c.embedding += norm;  // BERT normalises its embeddings.
  uint64_t attention = a.hidden * q + 2 * a.hidden * kv + q * a.hidden;
  if (a.linear_bias) {
    attention += q + 2 * kv + a.hidden;
  } else if (a.qkv_bias) {
    attention += q + 2 * kv;
  }
  const uint64_t moe_layers = a.experts > 0 ? a.moe_layers : 0;
  uint64_t moe = 0, idle_experts = 0;
  if (moe_layers > 0) {
    const uint64_t expert = MlpParams(a, a.expert_ffn);
    moe = a.experts * expert + (a.shared_ffn > 0 ? MlpParams(a, a.shared_ffn) : 0) +
          a.hidden * a.experts;  // The router.
    idle_experts = moe_layers * (a.experts - a.experts_per_token) * expert;
  }
  c.block_linear =
      a.layers * attention + (a.layers - moe_layers) * MlpParams(a, a.ffn) + moe_layers * moe;
  // Two norms a block; decoders end with one more (post-norm BERT does not).
  c.norms = a.layers * 2 * norm + (a.encoder ? 0 : norm);
  if (a.encoder) {
    c.head = a.hidden * a.hidden + a.hidden;  // The pooler.
  } else if (!a.tied_embeddings) {
    c.head = a.vocab * a.hidden;
  }
  c.total = c.embedding + c.block_linear + c.norms + c.head;
  c.active = c.total - idle_experts;
  return c;
}

uint64_t LoraParams(const Architecture& a, uint64_t rank) {
  const uint64_t q = a.heads * a.head_dim;
  const uint64_t kv = a.kv_heads * a.head_dim;
  const uint64_t matrices = a.mlp == Mlp::kGated ? 3 : 2;
  // A rank-r adapter of an m x n matrix adds r * (m + n) parameters.
  const uint64_t attention = rank * (a.hidden + q) * 2 + rank * (a.hidden + kv) * 2;
  auto mlp = [&](uint64_t width) { return matrices * rank * (a.hidden + width); };
  const uint64_t moe_layers = a.experts > 0 ? a.moe_layers : 0;
  uint64_t moe = 0;
  if (moe_layers > 0) moe = a.experts * mlp(a.expert_ffn) + (a.shared_ffn ? mlp(a.shared_ffn) : 0);
  return a.layers * attention + (a.layers - moe_layers) * mlp(a.ffn) + moe_layers * moe;
}

Result<uint64_t> ParseParamCount(std::string_view text) {
  const std::string quoted = "\"" + SanitizeForTerminal(std::string(text)) + "\"";
  std::string s(text);
  while (!s.empty() && s.back() == ' ') s.pop_back();
  while (!s.empty() && s.front() == ' ') s.erase(0, 1);
  if (s.empty()) return MakeError("malformed", quoted + " is not a parameter count: 7B, 350M");
  double scale = 1;
  switch (s.back()) {
    case 'k':
    case 'K':
      scale = 1e3;
      break;
    case 'm':
    case 'M':
      scale = 1e6;
      break;
    case 'b':
    case 'B':
    case 'g':
    case 'G':
      scale = 1e9;
      break;
    case 't':
    case 'T':
      scale = 1e12;
      break;
    default:
      break;
  }
  if (scale != 1) s.pop_back();
  char* end = nullptr;
  const double value = std::strtod(s.c_str(), &end);
  if (s.empty() || end != s.c_str() + s.size() || !std::isfinite(value) || s[0] == '-' ||
      s[0] == '+') {
    return MakeError("malformed", quoted + " is not a parameter count: 7B, 350M");
  }
  const double params = value * scale;
  if (params < 1 || params > 1e15) {
    return MakeError("out_of_range", quoted + " is out of range: 1 to 1000T parameters");
  }
  return static_cast<uint64_t>(std::llround(params));
}

std::string FormatParamCount(uint64_t params) {
  const double p = static_cast<double>(params);
  if (p >= 1e12) return fmt::format("{:.2f}T", p / 1e12);
  if (p >= 1e9) return fmt::format("{:.2f}B", p / 1e9);
  if (p >= 1e6) return fmt::format("{:.1f}M", p / 1e6);
  if (p >= 1e3) return fmt::format("{:.1f}k", p / 1e3);
  return std::to_string(params);
}

std::string ArchitectureProblem(const Architecture& a) {
  const std::pair<const char*, uint64_t> sizes[] = {
      {"layers", a.layers}, {"hidden", a.hidden}, {"heads", a.heads},      {"kv_heads", a.kv_heads},
      {"vocab", a.vocab},   {"ffn", a.ffn},       {"head_dim", a.head_dim}};
  for (const auto& [name, value] : sizes) {
    if (value == 0) return fmt::format("{} must be a positive integer", name);
    if (value > (uint64_t{1} << 24))
      return fmt::format("{} = {} is implausibly large", name, value);
  }
  if (a.heads % a.kv_heads != 0) {
    return fmt::format("heads ({}) is not a multiple of kv_heads ({})", a.heads, a.kv_heads);
  }
  if (a.experts == 0) {
    if (a.experts_per_token || a.expert_ffn || a.shared_ffn || a.moe_layers)
      return "experts_per_token, expert_ffn, shared_ffn and moe_layers need experts";
  } else {
    if (a.experts > 4096) return fmt::format("experts = {} is implausibly large", a.experts);
    if (a.experts_per_token == 0 || a.experts_per_token > a.experts) {
      return fmt::format("experts_per_token ({}) must be 1 to experts ({})", a.experts_per_token,
                         a.experts);
    }
    if (a.expert_ffn == 0 || a.expert_ffn > (uint64_t{1} << 24))
      return "expert_ffn must be a positive integer";
    if (a.shared_ffn > (uint64_t{1} << 24)) return "shared_ffn is implausibly large";
    if (a.moe_layers == 0 || a.moe_layers > a.layers) {
      return fmt::format("moe_layers ({}) must be 1 to layers ({})", a.moe_layers, a.layers);
    }
  }
  // Sizes that are each plausible can still multiply past what any model
  // has (and past what 64 bits count): bound the count from above first.
  using F = long double;
  const F h = a.hidden, q = F(a.heads) * a.head_dim, kv = F(a.kv_heads) * a.head_dim;
  const F per_layer = h * (2 * q + 2 * kv) + q + 2 * kv + 6 * h + 3 * h * a.ffn + 2 * F(a.ffn);
  const F per_moe_layer = F(a.experts) * (3 * h * a.expert_ffn + 2 * F(a.expert_ffn) + 2 * h) +
                          3 * h * a.shared_ffn + 2 * F(a.shared_ffn) + h;
  const F bound = F(a.layers) * per_layer + F(a.moe_layers) * per_moe_layer +
                  2 * h * (F(a.vocab) + a.learned_positions + a.token_types) + h * h + 3 * h;
  if (bound > 1e15L) return "its sizes make more than 1000T parameters, implausibly many";
  return "";
}

namespace {

// How transformers builds a model_type: which MLP and norm, where it puts
// biases, where positions come from, and the defaults config.json may leave
// out. kv: how the key/value heads are given.
enum class KvHeads : uint8_t {
  kGrouped,     // num_key_value_heads (absent: as many as the query heads).
  kMultiQuery,  // multi_query (default true): one.
  kFalcon,      // new_decoder_architecture: num_kv_heads; else multi_query: one.
};
struct Family {
  std::string_view type;
  Mlp mlp;
  Norm norm;
  bool linear_bias;  // Default; "bias", "use_bias" or "enable_bias" may say otherwise.
  bool qkv_bias;     // Default; "attention_bias" may say otherwise.
  bool learned_positions;
  uint64_t position_offset;  // Rows the position table holds beyond the context (OPT: 2).
  bool tied;                 // tie_word_embeddings' default.
  bool dropout;              // When config.json names no dropout probability.
  bool encoder;
  KvHeads kv;
};
constexpr Mlp G = Mlp::kGated, T = Mlp::kGelu;
constexpr Norm R = Norm::kRmsNorm, N = Norm::kLayerNorm;
constexpr KvHeads kGqa = KvHeads::kGrouped;
constexpr std::array<Family, 27> kFamilies = {{
    // Llama-like: SwiGLU, RMSNorm, rotary, no biases.
    {"llama", G, R, false, false, false, 0, false, false, false, kGqa},
    {"mistral", G, R, false, false, false, 0, false, false, false, kGqa},
    {"mixtral", G, R, false, false, false, 0, false, false, false, kGqa},
    {"qwen2", G, R, false, true, false, 0, false, false, false, kGqa},
    {"qwen2_moe", G, R, false, true, false, 0, false, false, false, kGqa},
    {"qwen3", G, R, false, false, false, 0, false, false, false, kGqa},
    {"qwen3_moe", G, R, false, false, false, 0, false, false, false, kGqa},
    {"gemma", G, R, false, false, false, 0, true, false, false, kGqa},
    {"gemma2", G, R, false, false, false, 0, true, false, false, kGqa},
    {"gemma3_text", G, R, false, false, false, 0, true, false, false, kGqa},
    {"phi3", G, R, false, false, false, 0, false, false, false, kGqa},
    {"olmo2", G, R, false, false, false, 0, false, false, false, kGqa},
    {"olmoe", G, R, false, false, false, 0, false, false, false, kGqa},
    {"granite", G, R, false, false, false, 0, false, false, false, kGqa},
    {"deepseek", G, R, false, false, false, 0, false, false, false, kGqa},
    {"yi", G, R, false, false, false, 0, false, false, false, kGqa},
    // Two-matrix MLPs (GELU, ReLU), LayerNorm, biases.
    {"gpt2", T, N, true, false, true, 0, true, true, false, kGqa},
    {"gpt_bigcode", T, N, true, false, true, 0, true, true, false, KvHeads::kMultiQuery},
    {"gpt_neox", T, N, true, false, false, 0, false, false, false, kGqa},
    {"gptj", T, N, true, false, false, 0, false, false, false, kGqa},
    {"phi", T, N, true, false, false, 0, false, false, false, kGqa},
    {"opt", T, N, true, false, true, 2, true, true, false, kGqa},
    {"bloom", T, N, true, false, false, 0, true, false, false, kGqa},
    {"falcon", T, N, false, false, false, 0, true, false, false, KvHeads::kFalcon},
    {"starcoder2", T, N, true, false, false, 0, true, false, false, kGqa},
    // Encoders.
    {"bert", T, N, true, false, true, 0, true, true, true, kGqa},
    {"roberta", T, N, true, false, true, 0, true, true, true, kGqa},
}};
// Another model_type, read as a Llama-like decoder.
constexpr Family kLlamaLike = kFamilies[0];

using nlohmann::json;

// The first of `keys` that `config` has, as a positive integer; an error
// naming the first key otherwise. `fallback` when none is present and given.
Result<uint64_t> Size(const json& config, std::initializer_list<const char*> keys,
                      const std::string& path, std::optional<uint64_t> fallback = std::nullopt) {
  for (const char* key : keys) {
    auto it = config.find(key);
    if (it == config.end() || it->is_null()) continue;
    if (!it->is_number_integer() && !it->is_number_unsigned()) {
      return MakeError("bad_input", fmt::format("{}: \"{}\" is not an integer", path, key));
    }
    const int64_t v = it->get<int64_t>();
    if (v <= 0) return MakeError("bad_input", fmt::format("{}: \"{}\" must be above 0", path, key));
    return static_cast<uint64_t>(v);
  }
  if (fallback) return *fallback;
  return MakeError("bad_input", fmt::format("{}: \"{}\" is missing", path, *keys.begin()));
}

// The first of `keys` that is a boolean; `fallback` when none is.
bool Flag(const json& config, std::initializer_list<const char*> keys, bool fallback) {
  for (const char* key : keys) {
    auto it = config.find(key);
    if (it != config.end() && it->is_boolean()) return it->get<bool>();
  }
  return fallback;
}

// Whether the model trains with dropout: any dropout probability above 0;
// `fallback` when config.json names none.
bool Dropout(const json& config, bool fallback) {
  bool named = false;
  for (const char* key :
       {"hidden_dropout_prob", "attention_probs_dropout_prob", "resid_pdrop", "embd_pdrop",
        "attn_pdrop", "dropout", "hidden_dropout", "attention_dropout", "activation_dropout"}) {
    auto it = config.find(key);
    if (it == config.end() || !it->is_number()) continue;
    named = true;
    if (it->get<double>() > 0) return true;
  }
  return named ? false : fallback;
}

// The layer indexes of `key` (Qwen-MoE's mlp_only_layers) below `layers`.
std::set<uint64_t> LayerList(const json& config, const char* key, uint64_t layers) {
  std::set<uint64_t> out;
  auto it = config.find(key);
  if (it == config.end() || !it->is_array()) return out;
  for (const json& v : *it) {
    if (v.is_number_unsigned() && v.get<uint64_t>() < layers) out.insert(v.get<uint64_t>());
  }
  return out;
}

// The experts of a mixture, as transformers places them. `shown`: the path.
Status ReadExperts(const json& config, const std::string& shown, Architecture& a) {
  auto read = [&](uint64_t& field, std::initializer_list<const char*> keys,
                  std::optional<uint64_t> fallback = std::nullopt) -> Status {
    Result<uint64_t> v = Size(config, keys, shown, fallback);
    if (!v.ok()) return v.error();
    field = *v;
    return Status::Ok();
  };
  for (const char* key : {"num_local_experts", "num_experts", "n_routed_experts"}) {
    auto it = config.find(key);
    if (it == config.end() || it->is_null()) continue;
    if (it->is_number_integer() && it->get<int64_t>() == 0) return Status::Ok();  // Dense.
    if (Status s = read(a.experts, {key}); !s.ok()) return s;
    break;
  }
  if (a.experts == 0) return Status::Ok();
  for (Status s : {read(a.experts_per_token, {"num_experts_per_tok", "num_experts_per_token"}),
                   read(a.expert_ffn, {"moe_intermediate_size"}, a.ffn)}) {
    if (!s.ok()) return s;
  }
  uint64_t shared = 0;
  if (Status s = read(a.shared_ffn, {"shared_expert_intermediate_size"}, 0); !s.ok()) return s;
  if (Status s = read(shared, {"n_shared_experts"}, 0); !s.ok()) return s;
  if (shared > 0) a.shared_ffn = shared * a.expert_ffn;  // DeepSeek-MoE: whole experts.
  uint64_t first_dense = 0, step = 1;
  if (config.contains("first_k_dense_replace")) {  // DeepSeek-MoE.
    if (Status s = read(step, {"moe_layer_freq"}, 1); !s.ok()) return s;
    if (Status s = read(first_dense, {"first_k_dense_replace"}, 0); !s.ok()) return s;
    for (uint64_t i = first_dense; i < a.layers; ++i) a.moe_layers += i % step == 0 ? 1 : 0;
    return Status::Ok();
  }
  // Qwen-MoE: a layer is sparse unless listed in mlp_only_layers, every
  // decoder_sparse_step-th one.
  if (Status s = read(step, {"decoder_sparse_step"}, 1); !s.ok()) return s;
  const std::set<uint64_t> dense = LayerList(config, "mlp_only_layers", a.layers);
  for (uint64_t i = 0; i < a.layers; ++i) {
    a.moe_layers += !dense.contains(i) && (i + 1) % step == 0 ? 1 : 0;
  }
  return Status::Ok();
}

}  // namespace

std::vector<std::string_view> KnownModelTypes() {
  std::vector<std::string_view> out;
  for (const Family& f : kFamilies) out.push_back(f.type);
  return out;
}

Result<ModelSpec> ParseHfConfig(std::string_view text, const std::string& path) {
  const std::string shown = SanitizeForTerminal(path);
  const json config = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (config.is_discarded()) return MakeError("bad_input", shown + ": not valid JSON");
  if (!config.is_object()) {
    return MakeError("bad_input", shown + ": a config.json is a JSON object, not " +
                                      std::string(config.type_name()));
  }
  if (config.contains("text_config")) {
    return MakeError("bad_input", shown +
                                      ": a multimodal wrapper (text_config); give the language "
                                      "model's own config.json");
  }
  if (Flag(config, {"is_encoder_decoder"}, false) || config.contains("num_decoder_layers") ||
      config.contains("decoder_layers")) {
    return MakeError("bad_input", shown +
                                      ": an encoder-decoder model (T5, BART), which gpuwarden "
                                      "advise does not model; give --params for weights only");
  }
  if (config.contains("kv_lora_rank") && !config["kv_lora_rank"].is_null()) {
    return MakeError("bad_input",
                     shown +
                         ": multi-head latent attention (\"kv_lora_rank\", DeepSeek-V2/V3), "
                         "which gpuwarden advise does not model; give --params for weights "
                         "only");
  }
  const json& type_node = config.contains("model_type") ? config["model_type"] : json();
  const std::string type = type_node.is_string() ? type_node.get<std::string>() : std::string();
  const Family* family = nullptr;
  for (const Family& f : kFamilies) {
    if (f.type == type) family = &f;
  }
  ModelSpec spec;
  if (family == nullptr) {
    family = &kLlamaLike;
    spec.assumption = fmt::format(
        "{}: read as a Llama-like decoder (gated MLP, RMSNorm, rotary positions, no biases); "
        "the count is off if the model differs",
        type.empty() ? std::string("no model_type")
                     : fmt::format("model_type \"{}\" is not one gpuwarden knows",
                                   SanitizeForTerminal(type)));
  }
  const Family& f = *family;
  Architecture a;
  auto read = [&](uint64_t& field, std::initializer_list<const char*> keys,
                  std::optional<uint64_t> fallback = std::nullopt) -> Status {
    Result<uint64_t> v = Size(config, keys, shown, fallback);
    if (!v.ok()) return v.error();
    field = *v;
    return Status::Ok();
  };
  for (Status s :
       {read(a.layers, {"num_hidden_layers", "n_layer"}),
        read(a.hidden, {"hidden_size", "n_embd", "n_embed"}),
        read(a.heads, {"num_attention_heads", "n_head"}), read(a.vocab, {"vocab_size"})}) {
    if (!s.ok()) return s.error();
  }
  uint64_t kv_fallback = a.heads;
  if (f.kv == KvHeads::kMultiQuery && Flag(config, {"multi_query"}, true)) kv_fallback = 1;
  if (f.kv == KvHeads::kFalcon && !Flag(config, {"new_decoder_architecture"}, false)) {
    kv_fallback = Flag(config, {"multi_query"}, true) ? 1 : a.heads;
  }
  for (Status s :
       {read(a.kv_heads, {"num_key_value_heads", "num_kv_heads"}, kv_fallback),
        read(a.head_dim, {"head_dim"}, a.hidden / a.heads),
        read(a.ffn, {"intermediate_size", "n_inner", "ffn_dim", "ffn_hidden_size"}, 4 * a.hidden),
        read(a.context, {"max_position_embeddings", "n_positions"}, 0)}) {
    if (!s.ok()) return s.error();
  }
  if (f.kv == KvHeads::kFalcon && !Flag(config, {"new_decoder_architecture"}, false)) {
    a.kv_heads = kv_fallback;  // Older Falcons carry a num_kv_heads they do not use.
  }
  a.mlp = f.mlp;
  a.norm = f.norm;
  a.linear_bias = Flag(config, {"bias", "use_bias", "enable_bias"}, f.linear_bias);
  a.qkv_bias = !a.linear_bias && Flag(config, {"attention_bias"}, f.qkv_bias);
  a.dropout = Dropout(config, f.dropout);
  a.encoder = f.encoder;
  a.learned_positions = f.learned_positions ? a.context + f.position_offset : 0;
  if (f.encoder) {
    if (Status s = read(a.token_types, {"type_vocab_size"}, 2); !s.ok()) return s.error();
  }
  a.tied_embeddings = Flag(config, {"tie_word_embeddings"}, f.tied);
  if (Status s = ReadExperts(config, shown, a); !s.ok()) return s.error();
  if (std::string problem = ArchitectureProblem(a); !problem.empty()) {
    return MakeError("bad_input", shown + ": " + problem);
  }
  const json& name = config.contains("_name_or_path") ? config["_name_or_path"] : json();
  spec.name = name.is_string() ? SanitizeForTerminal(name.get<std::string>()) : std::string();
  if (spec.name.empty()) spec.name = type.empty() ? "model" : SanitizeForTerminal(type);
  spec.source = path;
  spec.arch = a;
  spec.params = CountParams(a).total;
  return spec;
}

}  // namespace gw::plan
