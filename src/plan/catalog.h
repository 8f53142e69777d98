// The catalogs `gpuwarden advise` reads: model architectures
// (catalog/models.toml) and GPUs (catalog/gpus.toml), data files in the
// repository, installed to share/gpuwarden/catalog. Each entry names its
// source. Parsing is pure; files come through a TextFiles, so that tests
// hand in their own.
#ifndef GPUWARDEN_PLAN_CATALOG_H_
#define GPUWARDEN_PLAN_CATALOG_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"
#include "plan/model.h"

namespace gw::plan {

// How a GPU talks to the others of its server.
enum class Link : uint8_t {
  kPcie,          // No NVLink: PCIe only.
  kNvlinkBridge,  // Cards joined in pairs by a bridge.
  kNvlink,        // Every GPU of the board joined (SXM).
};
std::string_view LinkName(Link link);  // "pcie", "nvlink-bridge", "nvlink"

struct GpuSpec {
  std::string name;                  // "h100-sxm"
  std::vector<std::string> aliases;  // NVML's names: "NVIDIA H100 80GB HBM3"
  uint64_t memory_bytes = 0;         // memory_gb read as GiB (as slurm/gpu_types.h).
  std::string memory_type;
  double bandwidth_gbs = 0;
  std::optional<double> tflops_bf16, tflops_fp16, tflops_fp8, tflops_fp32;
  Link link = Link::kPcie;
  std::optional<double> link_gbs;
  double tdp_w = 0;
  std::string source;
};

struct Catalog {
  std::vector<ModelSpec> models;
  std::vector<GpuSpec> gpus;
  std::string dir;  // Where it was read from.

  // By name, case-insensitively; nullptr when absent.
  const ModelSpec* FindModel(std::string_view name) const;
  // By catalog name or NVML alias ("NVIDIA A100-SXM4-80GB"), case-insensitively.
  const GpuSpec* FindGpu(std::string_view name) const;
};

// Reads whole files. The real one (RealTextFiles) reads with a size bound.
class TextFiles {
 public:
  virtual ~TextFiles() = default;
  // The text of `path`; errors name the path.
  virtual Result<std::string> Read(const std::string& path) const = 0;
};

class RealTextFiles : public TextFiles {
 public:
  Result<std::string> Read(const std::string& path) const override;
};

// The entries of a models.toml / gpus.toml text read from `path`. Errors
// (code "bad_input"), one line: "PATH:LINE: PROBLEM" or "PATH: entry NAME:
// PROBLEM" (a field missing, of the wrong type or not sane, a name twice).
Result<std::vector<ModelSpec>> ParseModelCatalog(std::string_view text, const std::string& path);
Result<std::vector<GpuSpec>> ParseGpuCatalog(std::string_view text, const std::string& path);

// Both files of `dir` (dir/models.toml, dir/gpus.toml).
Result<Catalog> LoadCatalog(const TextFiles& files, const std::string& dir);

}  // namespace gw::plan

#endif  // GPUWARDEN_PLAN_CATALOG_H_
