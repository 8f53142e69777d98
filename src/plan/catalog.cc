#include "plan/catalog.h"

#include <fmt/format.h>

#include <toml++/toml.h>
#include <cctype>
#include <set>

#include "core/text.h"
#include "core/units.h"
#include "os/file_io.h"

namespace gw::plan {
namespace {
constexpr size_t kMaxCatalogBytes = size_t{4} << 20;

bool SameName(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) !=
        std::tolower(static_cast<unsigned char>(b[i]))) {
      return false;
    }
  }
  return true;
}

// One [[model]] or [[gpu]] table, with errors that name the file, the entry
// and the field.
class Entry {
 public:
  Entry(const toml::table& table, const std::string& path, size_t index)
      : table_(table), path_(SanitizeForTerminal(path)) {
    name_ = table.get_as<std::string>("name") ? **table.get_as<std::string>("name")
                                              : fmt::format("#{}", index + 1);
  }
  const std::string& name() const { return name_; }
  const toml::table& table() const { return table_; }

  Error Fail(std::string_view what) const {
    const int line = table_.source().begin.line;
    return MakeError("bad_input", fmt::format("{}:{}: entry {}: {}", path_, line,
                                              SanitizeForTerminal(name_), what));
  }
  Result<std::string> Text(const char* key) const {
    auto v = table_.get_as<std::string>(key);
    if (v == nullptr || (*v)->empty()) return Fail(fmt::format("\"{}\" must be a text", key));
    return **v;
  }
  // A whole number in [lo, hi]; `fallback` when absent and given.
  Result<uint64_t> Count(const char* key, uint64_t lo, uint64_t hi,
                         std::optional<uint64_t> fallback = std::nullopt) const {
    const toml::node* node = table_.get(key);
    if (node == nullptr && fallback) return *fallback;
    auto v = node ? node->as_integer() : nullptr;
    if (v == nullptr) return Fail(fmt::format("\"{}\" must be a whole number", key));
    const int64_t n = **v;
    if (n < static_cast<int64_t>(lo) || n > static_cast<int64_t>(hi)) {
      return Fail(fmt::format("\"{}\" = {} is outside {} to {}", key, n, lo, hi));
    }
    return static_cast<uint64_t>(n);
  }
  // A number in (0, hi]; nullopt when absent and optional.
  Result<std::optional<double>> Number(const char* key, double hi, bool required) const {
    const toml::node* node = table_.get(key);
    if (node == nullptr) {
      if (required) return Fail(fmt::format("\"{}\" is missing", key));
      return std::optional<double>();
    }
    std::optional<double> v = node->value<double>();
    if (!v || !(*v > 0) || *v > hi) {
      return Fail(fmt::format("\"{}\" must be a number above 0 and at most {}", key, hi));
    }
    return v;
  }
  Result<bool> Bool(const char* key) const {
    auto v = table_.get_as<bool>(key);
    if (v == nullptr) return Fail(fmt::format("\"{}\" must be true or false", key));
    return **v;
  }
  Result<std::string> Source() const {
    Result<std::string> source = Text("source");
    if (!source.ok()) return source;
    if (!source->starts_with("https://")) return Fail("\"source\" must be an https:// URL");
    return source;
  }

 private:
  const toml::table& table_;
  std::string path_;
  std::string name_;
};

Result<toml::table> ParseToml(std::string_view text, const std::string& path) {
  try {
    return toml::parse(text, path);
  } catch (const toml::parse_error& e) {
    return MakeError("bad_input",
                     fmt::format("{}:{}: {}", SanitizeForTerminal(path), e.source().begin.line,
                                 SanitizeForTerminal(e.description())));
  }
}

// The [[KEY]] array of tables of `root`, or an error.
Result<const toml::array*> Entries(const toml::table& root, const char* key,
                                   const std::string& path) {
  const toml::array* list = root.get_as<toml::array>(key);
  if (list == nullptr || list->empty() || !list->is_array_of_tables()) {
    return MakeError("bad_input",
                     fmt::format("{}: no [[{}]] entries", SanitizeForTerminal(path), key));
  }
  return list;
}

template <typename T>
Status CheckUniqueNames(const std::vector<T>& entries, const std::string& path) {
  std::set<std::string> seen;
  for (const T& e : entries) {
    std::string lower;
    for (char c : e.name)
      lower.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
    if (!seen.insert(lower).second) {
      return MakeError("bad_input",
                       fmt::format("{}: entry {} is listed twice", SanitizeForTerminal(path),
                                   SanitizeForTerminal(e.name)));
    }
  }
  return Status::Ok();
}

Result<ModelSpec> ReadModel(const Entry& e) {
  constexpr uint64_t kBig = uint64_t{1} << 24;
  ModelSpec m;
  Architecture& a = m.arch.emplace();
  Result<std::string> name = e.Text("name");
  if (!name.ok()) return name.error();
  m.name = *name;
  struct Field {
    const char* key;
    uint64_t* out;
    uint64_t lo;
    std::optional<uint64_t> fallback;
  };
  for (const Field& f :
       {Field{"layers", &a.layers, 1, {}}, Field{"hidden", &a.hidden, 1, {}},
        Field{"heads", &a.heads, 1, {}}, Field{"kv_heads", &a.kv_heads, 1, {}},
        Field{"vocab", &a.vocab, 1, {}}, Field{"ffn", &a.ffn, 1, {}},
        Field{"learned_positions", &a.learned_positions, 0, {}},
        Field{"token_types", &a.token_types, 0, {}}, Field{"context", &a.context, 1, {}}}) {
    Result<uint64_t> v = e.Count(f.key, f.lo, kBig, f.fallback);
    if (!v.ok()) return v.error();
    *f.out = *v;
  }
  Result<uint64_t> head_dim = e.Count("head_dim", 1, kBig, a.hidden / a.heads);
  if (!head_dim.ok()) return head_dim.error();
  a.head_dim = *head_dim;
  Result<std::string> mlp = e.Text("mlp");
  if (!mlp.ok()) return mlp.error();
  if (*mlp != "gelu" && *mlp != "gated") return e.Fail("\"mlp\" must be \"gelu\" or \"gated\"");
  a.mlp = *mlp == "gelu" ? Mlp::kGelu : Mlp::kGated;
  Result<std::string> norm = e.Text("norm");
  if (!norm.ok()) return norm.error();
  if (*norm != "layernorm" && *norm != "rmsnorm") {
    return e.Fail("\"norm\" must be \"layernorm\" or \"rmsnorm\"");
  }
  a.norm = *norm == "layernorm" ? Norm::kLayerNorm : Norm::kRmsNorm;
  struct Flag {
    const char* key;
    bool* out;
  };
  for (const Flag& f : {Flag{"tied_embeddings", &a.tied_embeddings}, Flag{"qkv_bias", &a.qkv_bias},
                        Flag{"linear_bias", &a.linear_bias}, Flag{"dropout", &a.dropout},
                        Flag{"encoder", &a.encoder}}) {
    Result<bool> v = e.Bool(f.key);
    if (!v.ok()) return v.error();
    *f.out = *v;
  }
  // A mixture of experts; all absent for a dense model.
  for (const Field& f :
       {Field{"experts", &a.experts, 0, 0}, Field{"experts_per_token", &a.experts_per_token, 0, 0},
        Field{"expert_ffn", &a.expert_ffn, 0, 0}, Field{"shared_ffn", &a.shared_ffn, 0, 0}}) {
    Result<uint64_t> v = e.Count(f.key, f.lo, kBig, f.fallback);
    if (!v.ok()) return v.error();
    *f.out = *v;
  }
  Result<uint64_t> moe_layers = e.Count("moe_layers", 0, kBig, a.experts ? a.layers : 0);
  if (!moe_layers.ok()) return moe_layers.error();
  a.moe_layers = *moe_layers;
  if (std::string problem = ArchitectureProblem(a); !problem.empty()) return e.Fail(problem);
  Result<std::string> source = e.Source();
  if (!source.ok()) return source.error();
  m.source = *source;
  m.params = CountParams(a).total;
  return m;
}

Result<GpuSpec> ReadGpu(const Entry& e) {
  const toml::table& table = e.table();
  GpuSpec g;
  Result<std::string> name = e.Text("name");
  if (!name.ok()) return name.error();
  g.name = *name;
  if (const toml::array* aliases = table.get_as<toml::array>("aliases")) {
    for (const toml::node& alias : *aliases) {
      std::optional<std::string> text = alias.value<std::string>();
      if (!text || text->empty()) return e.Fail("\"aliases\" must be a list of texts");
      g.aliases.push_back(*text);
    }
  }
  Result<uint64_t> memory = e.Count("memory_gb", 1, 4096);
  if (!memory.ok()) return memory.error();
  g.memory_bytes = *memory * kGiB;
  Result<std::string> memory_type = e.Text("memory_type");
  if (!memory_type.ok()) return memory_type.error();
  g.memory_type = *memory_type;
  Result<std::optional<double>> bandwidth = e.Number("bandwidth_gbs", 100000, true);
  if (!bandwidth.ok()) return bandwidth.error();
  g.bandwidth_gbs = **bandwidth;
  struct Rate {
    const char* key;
    std::optional<double>* out;
  };
  for (const Rate& r : {Rate{"tflops_bf16", &g.tflops_bf16}, Rate{"tflops_fp16", &g.tflops_fp16},
                        Rate{"tflops_fp8", &g.tflops_fp8}, Rate{"tflops_fp32", &g.tflops_fp32},
                        Rate{"link_gbs", &g.link_gbs}}) {
    Result<std::optional<double>> v = e.Number(r.key, 100000, false);
    if (!v.ok()) return v.error();
    *r.out = *v;
  }
  if (!g.tflops_bf16 && !g.tflops_fp16) return e.Fail("needs tflops_bf16 or tflops_fp16");
  if (!g.tflops_fp32) return e.Fail("\"tflops_fp32\" is missing");
  Result<std::string> link = e.Text("link");
  if (!link.ok()) return link.error();
  if (*link == "pcie") {
    g.link = Link::kPcie;
  } else if (*link == "nvlink-bridge") {
    g.link = Link::kNvlinkBridge;
  } else if (*link == "nvlink") {
    g.link = Link::kNvlink;
  } else {
    return e.Fail("\"link\" must be \"pcie\", \"nvlink-bridge\" or \"nvlink\"");
  }
  if (g.link != Link::kPcie && !g.link_gbs) return e.Fail("an NVLink GPU needs \"link_gbs\"");
  Result<std::optional<double>> tdp = e.Number("tdp_w", 5000, true);
  if (!tdp.ok()) return tdp.error();
  g.tdp_w = **tdp;
  Result<std::string> source = e.Source();
  if (!source.ok()) return source.error();
  g.source = *source;
  return g;
}

// The [[KEY]] entries of a catalog text, each read by `read`, names unique.
template <typename T, typename Read>
Result<std::vector<T>> ParseEntries(std::string_view text, const std::string& path, const char* key,
                                    Read read) {
  Result<toml::table> root = ParseToml(text, path);
  if (!root.ok()) return root.error();
  Result<const toml::array*> list = Entries(*root, key, path);
  if (!list.ok()) return list.error();
  std::vector<T> entries;
  for (size_t i = 0; i < (*list)->size(); ++i) {
    Result<T> entry = read(Entry(*(*list)->get(i)->as_table(), path, i));
    if (!entry.ok()) return entry.error();
    entries.push_back(std::move(*entry));
  }
  if (Status s = CheckUniqueNames(entries, path); !s.ok()) return s.error();
  return entries;
}

}  // namespace

std::string_view LinkName(Link link) {
  switch (link) {
    case Link::kPcie:
      return "pcie";
    case Link::kNvlinkBridge:
      return "nvlink-bridge";
    case Link::kNvlink:
      return "nvlink";
  }
  return "pcie";
}

const ModelSpec* Catalog::FindModel(std::string_view name) const {
  for (const ModelSpec& m : models) {
    if (SameName(m.name, name)) return &m;
  }
  return nullptr;
}

const GpuSpec* Catalog::FindGpu(std::string_view name) const {
  for (const GpuSpec& g : gpus) {
    if (SameName(g.name, name)) return &g;
    for (const std::string& alias : g.aliases) {
      if (SameName(alias, name)) return &g;
    }
  }
  return nullptr;
}

Result<std::string> RealTextFiles::Read(const std::string& path) const {
  Result<std::string> text = os::ReadFileBounded(path, kMaxCatalogBytes);
  if (!text.ok()) return MakeError("bad_input", SanitizeForTerminal(text.error().message));
  return text;
}

Result<std::vector<ModelSpec>> ParseModelCatalog(std::string_view text, const std::string& path) {
  return ParseEntries<ModelSpec>(text, path, "model", ReadModel);
}

Result<std::vector<GpuSpec>> ParseGpuCatalog(std::string_view text, const std::string& path) {
  return ParseEntries<GpuSpec>(text, path, "gpu", ReadGpu);
}

Result<Catalog> LoadCatalog(const TextFiles& files, const std::string& dir) {
  Catalog catalog;
  catalog.dir = dir;
  const std::string models_path = dir + "/models.toml";
  const std::string gpus_path = dir + "/gpus.toml";
  Result<std::string> models_text = files.Read(models_path);
  if (!models_text.ok()) return models_text.error();
  Result<std::vector<ModelSpec>> models = ParseModelCatalog(*models_text, models_path);
  if (!models.ok()) return models.error();
  Result<std::string> gpus_text = files.Read(gpus_path);
  if (!gpus_text.ok()) return gpus_text.error();
  Result<std::vector<GpuSpec>> gpus = ParseGpuCatalog(*gpus_text, gpus_path);
  if (!gpus.ok()) return gpus.error();
  catalog.models = std::move(*models);
  catalog.gpus = std::move(*gpus);
  return catalog;
}

}  // namespace gw::plan
