#include "plan/model.h"

#include <fmt/format.h>

#include <cmath>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <set>

#include "core/text.h"

namespace gw::plan {

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
  const uint64_t matrices = a.mlp == Mlp::kGated ? 3 : 2;
  uint64_t mlp = matrices * a.hidden * a.ffn;
  if (a.linear_bias) mlp += (matrices - 1) * a.ffn + a.hidden;
  c.block_linear = a.layers * (attention + mlp);
  // Two norms a block; decoders end with one more (post-norm BERT does not).
  c.norms = a.layers * 2 * norm + (a.encoder ? 0 : norm);
  if (a.encoder) {
    c.head = a.hidden * a.hidden + a.hidden;  // The pooler.
  } else if (!a.tied_embeddings) {
    c.head = a.vocab * a.hidden;
  }
  c.total = c.embedding + c.block_linear + c.norms + c.head;
  return c;
}

uint64_t LoraParams(const Architecture& a, uint64_t rank) {
  const uint64_t q = a.heads * a.head_dim;
  const uint64_t kv = a.kv_heads * a.head_dim;
  // A rank-r adapter of an m x n matrix adds r * (m + n) parameters.
  uint64_t per_layer = rank * (a.hidden + q) * 2 + rank * (a.hidden + kv) * 2;
  per_layer += (a.mlp == Mlp::kGated ? 3 : 2) * rank * (a.hidden + a.ffn);
  return a.layers * per_layer;
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
  return "";
}

namespace {

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

bool Flag(const json& config, const char* key, bool fallback) {
  auto it = config.find(key);
  return it != config.end() && it->is_boolean() ? it->get<bool>() : fallback;
}

}  // namespace

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
  for (const char* moe : {"num_local_experts", "num_experts", "n_routed_experts"}) {
    if (config.contains(moe) && !config[moe].is_null()) {
      return MakeError("bad_input", fmt::format("{}: a mixture-of-experts model (\"{}\"), which "
                                                "gpuwarden advise does not model",
                                                shown, moe));
    }
  }
  std::string type = config.value("model_type", std::string());
  const bool bert = type == "bert" || type == "roberta";
  const bool gpt2 = type == "gpt2";
  Architecture a;
  auto read = [&](uint64_t& field, std::initializer_list<const char*> keys,
                  std::optional<uint64_t> fallback = std::nullopt) -> Status {
    Result<uint64_t> v = Size(config, keys, shown, fallback);
    if (!v.ok()) return v.error();
    field = *v;
    return Status::Ok();
  };
  for (Status s :
       {read(a.layers, {"num_hidden_layers", "n_layer"}), read(a.hidden, {"hidden_size", "n_embd"}),
        read(a.heads, {"num_attention_heads", "n_head"}), read(a.vocab, {"vocab_size"})}) {
    if (!s.ok()) return s.error();
  }
  for (Status s : {read(a.kv_heads, {"num_key_value_heads"}, a.heads),
                   read(a.head_dim, {"head_dim"}, a.hidden / a.heads),
                   read(a.ffn, {"intermediate_size", "n_inner"}, 4 * a.hidden),
                   read(a.context, {"max_position_embeddings", "n_positions"}, 0)}) {
    if (!s.ok()) return s.error();
  }
  a.mlp = bert || gpt2 ? Mlp::kGelu : Mlp::kGated;
  a.norm = bert || gpt2 ? Norm::kLayerNorm : Norm::kRmsNorm;
  a.linear_bias = bert || gpt2;
  a.dropout = bert || gpt2;
  a.encoder = bert;
  a.qkv_bias = type == "qwen2" || Flag(config, "attention_bias", false);
  a.learned_positions = bert || gpt2 ? a.context : 0;
  if (bert) {
    if (Status s = read(a.token_types, {"type_vocab_size"}, 2); !s.ok()) return s.error();
  }
  // transformers' defaults where config.json leaves it out.
  const bool tied_default = gpt2 || bert || type == "gemma" || type == "gemma2";
  a.tied_embeddings = Flag(config, "tie_word_embeddings", tied_default);
  if (std::string problem = ArchitectureProblem(a); !problem.empty()) {
    return MakeError("bad_input", shown + ": " + problem);
  }
  ModelSpec spec;
  spec.name = config.value("_name_or_path", std::string());
  if (spec.name.empty()) spec.name = type.empty() ? "model" : type;
  spec.source = path;
  spec.arch = a;
  spec.params = CountParams(a).total;
  return spec;
}

}  // namespace gw::plan
