#include "plan/catalog.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>

#include "core/units.h"
#include "plan/test_catalog.h"
#include "slurm/gpu_types.h"

namespace gw::plan {
namespace {

using ::testing::HasSubstr;
// Every entry of the repository's catalog has a source and sane values.
TEST(RepoCatalog, EveryModelHasASourceAndASaneArchitecture) {
  const Catalog& c = RepoCatalog();
  ASSERT_GE(c.models.size(), 12u);
  for (const ModelSpec& m : c.models) {
    SCOPED_TRACE(m.name);
    EXPECT_TRUE(m.source.starts_with("https://huggingface.co/")) << m.source;
    EXPECT_TRUE(m.source.ends_with("/config.json")) << m.source;
    ASSERT_TRUE(m.arch.has_value());
    EXPECT_EQ(ArchitectureProblem(*m.arch), "");
    EXPECT_GE(m.params, 100'000'000u);
    EXPECT_LE(m.params, 100'000'000'000u);
    EXPECT_GE(m.arch->ffn, m.arch->hidden);
    EXPECT_GE(m.arch->context, 512u);
    EXPECT_EQ(m.arch->heads % m.arch->kv_heads, 0u);
  }
}

TEST(RepoCatalog, EveryGpuHasASourceAndSaneFigures) {
  const Catalog& c = RepoCatalog();
  ASSERT_GE(c.gpus.size(), 12u);
  unsigned cross_checked = 0;
  for (const GpuSpec& g : c.gpus) {
    SCOPED_TRACE(g.name);
    EXPECT_TRUE(g.source.starts_with("https://")) << g.source;
    EXPECT_GE(g.memory_bytes, 16 * kGiB);
    EXPECT_LE(g.memory_bytes, 192 * kGiB);
    EXPECT_GE(g.bandwidth_gbs, 250);
    EXPECT_LE(g.bandwidth_gbs, 10000);
    const double tensor = g.tflops_bf16 ? *g.tflops_bf16 : *g.tflops_fp16;
    // Tensor cores outrun plain fp32 math; fp8 doubles 16-bit where listed.
    EXPECT_GT(tensor, *g.tflops_fp32);
    EXPECT_LE(tensor, 5000);
    if (g.tflops_fp8) {
      EXPECT_NEAR(*g.tflops_fp8 / tensor, 2.0, 0.05);
    }
    EXPECT_GE(g.tdp_w, 60);
    EXPECT_LE(g.tdp_w, 1200);
    if (g.link != Link::kPcie) {
      EXPECT_GE(*g.link_gbs, 100);
    }
    // One fact, one value: where `run --slurm` knows the gres type's memory,
    // the catalog says the same.
    if (std::optional<uint64_t> slurm = slurm::GpuTypeMemoryBytes(g.name)) {
      EXPECT_EQ(*slurm, g.memory_bytes);
      ++cross_checked;
    }
    EXPECT_EQ(c.FindGpu(g.name), &g);
    for (const std::string& alias : g.aliases) EXPECT_EQ(c.FindGpu(alias), &g) << alias;
  }
  EXPECT_GE(cross_checked, 6u);
}

TEST(Catalog, FindsNamesWhateverTheirCase) {
  EXPECT_NE(RepoCatalog().FindModel("Llama-3-8B"), nullptr);
  EXPECT_NE(RepoCatalog().FindGpu("nvidia h100 80gb hbm3"), nullptr);
  EXPECT_EQ(RepoCatalog().FindModel("llama-9-1t"), nullptr);
}

constexpr const char* kGpu = R"(
[[gpu]]
name = "x1"
memory_gb = 24
memory_type = "GDDR6"
bandwidth_gbs = 600
tflops_bf16 = 125
tflops_fp32 = 31.2
link = "pcie"
tdp_w = 150
source = "https://example.com/x1"
)";

TEST(ParseGpuCatalog, ReadsAnEntry) {
  Result<std::vector<GpuSpec>> gpus = ParseGpuCatalog(kGpu, "gpus.toml");
  ASSERT_TRUE(gpus.ok()) << gpus.error().message;
  ASSERT_EQ(gpus->size(), 1u);
  EXPECT_EQ((*gpus)[0].memory_bytes, 24 * kGiB);
  EXPECT_FALSE((*gpus)[0].tflops_fp8.has_value());  // Unknown, not 0.
}

TEST(ParseGpuCatalog, BadEntriesNameTheFileLineEntryAndField) {
  struct Case {
    std::string text;
    std::string problem;
  };
  std::string no_source = kGpu;
  no_source.erase(no_source.find("source"));
  std::string bad_link = kGpu;
  bad_link.replace(bad_link.find("\"pcie\""), 6, "\"usb\"");
  std::string zero_memory = kGpu;
  zero_memory.replace(zero_memory.find("= 24"), 4, "= 0");
  std::string http = kGpu;
  http.replace(http.find("https"), 5, "http");
  const Case cases[] = {
      {no_source, "gpus.toml:2: entry x1: \"source\" must be a text"},
      {bad_link, "entry x1: \"link\" must be \"pcie\", \"nvlink-bridge\" or \"nvlink\""},
      {zero_memory, "entry x1: \"memory_gb\" = 0 is outside 1 to 4096"},
      {http, "entry x1: \"source\" must be an https:// URL"},
      {std::string(kGpu) + kGpu, "gpus.toml: entry x1 is listed twice"},
      {"name = 3\n", "gpus.toml: no [[gpu]] entries"},
      {"[[gpu]\n", "gpus.toml:1: "},
  };
  for (const Case& c : cases) {
    Result<std::vector<GpuSpec>> gpus = ParseGpuCatalog(c.text, "gpus.toml");
    ASSERT_FALSE(gpus.ok()) << c.text;
    EXPECT_EQ(gpus.error().code, "bad_input");
    EXPECT_THAT(gpus.error().message, HasSubstr(c.problem));
    EXPECT_EQ(gpus.error().message.find('\n'), std::string::npos) << gpus.error().message;
  }
}

TEST(ParseModelCatalog, ABadArchitectureIsRefused) {
  const std::string text = R"(
[[model]]
name = "m"
layers = 2
hidden = 64
heads = 6
kv_heads = 4
vocab = 100
ffn = 256
mlp = "gated"
norm = "rmsnorm"
tied_embeddings = false
learned_positions = 0
token_types = 0
qkv_bias = false
linear_bias = false
dropout = false
encoder = false
context = 1024
source = "https://example.com/config.json"
)";
  Result<std::vector<ModelSpec>> models = ParseModelCatalog(text, "models.toml");
  ASSERT_FALSE(models.ok());
  EXPECT_THAT(models.error().message,
              HasSubstr("models.toml:2: entry m: heads (6) is not a multiple of kv_heads (4)"));
}

class FakeTextFiles : public TextFiles {
 public:
  std::map<std::string, std::string> files;
  Result<std::string> Read(const std::string& path) const override {
    auto it = files.find(path);
    if (it == files.end()) return MakeError("bad_input", path + ": cannot open: No such file");
    return it->second;
  }
};

TEST(LoadCatalog, AMissingFileIsNamed) {
  FakeTextFiles files;
  files.files["/d/gpus.toml"] = kGpu;
  Result<Catalog> c = LoadCatalog(files, "/d");
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(c.error().message, HasSubstr("/d/models.toml: cannot open"));
}

}  // namespace
}  // namespace gw::plan
