#include "slurm/gpu_types.h"
#include "core/units.h"

#include <array>
#include <cctype>
#include <string>
#include <utility>

namespace gw::slurm {
namespace {
// Model (lower case, no separators, no "nvidia"/"tesla"/"geforce"/"quadro")
// and its memory as NVIDIA markets it, in GB, read as GiB: the driver's
// figure is within a few percent of it (H100 80GB: 81,559 MiB).
constexpr std::array<std::pair<std::string_view, unsigned>, 46> kModels = {{
    {"b200", 180},     {"gh200", 96},   {"h200", 141},     {"h100", 80},    {"h800", 80},
    {"h100nvl", 94},   {"a100", 40},    {"a800", 40},      {"a40", 48},     {"a30", 24},
    {"a10", 24},       {"a10g", 24},    {"a16", 16},       {"a2", 16},      {"l40s", 48},
    {"l40", 48},       {"l4", 24},      {"t4", 16},        {"v100", 16},    {"v100s", 32},
    {"p100", 12},      {"p40", 24},     {"p4", 8},         {"k80", 12},     {"rtx6000ada", 48},
    {"rtxa6000", 48},  {"a6000", 48},   {"rtxa5000", 24},  {"a5000", 24},   {"rtxa4000", 16},
    {"a4000", 16},     {"rtx8000", 48}, {"rtx6000", 24},   {"rtx5000", 16}, {"rtx4090", 24},
    {"4090", 24},      {"rtx4080", 16}, {"rtx3090", 24},   {"3090", 24},    {"rtx3080", 10},
    {"rtx2080ti", 11}, {"2080ti", 11},  {"gtx1080ti", 11}, {"1080ti", 11},  {"titanrtx", 24},
    {"titanv", 12},
}};

std::string Normalized(std::string_view name) {
  std::string out;
  for (char c : name) {
    const unsigned char u = static_cast<unsigned char>(c);
    if (std::isalnum(u)) out.push_back(static_cast<char>(std::tolower(u)));
  }
  for (std::string_view prefix : {"nvidia", "tesla", "geforce", "quadro"}) {
    if (out.rfind(prefix, 0) == 0) out.erase(0, prefix.size());
  }
  return out;
}

// "a100_80g", "v100-32gb", "h100 94GB": the size after the last separator.
std::optional<uint64_t> SizeSuffix(std::string_view name) {
  const size_t sep = name.find_last_of("-_ ");
  if (sep == std::string_view::npos) return std::nullopt;
  std::string_view tail = name.substr(sep + 1);
  size_t digits = 0;
  while (digits < tail.size() && std::isdigit(static_cast<unsigned char>(tail[digits]))) ++digits;
  if (digits == 0 || digits > 4) return std::nullopt;
  std::string unit;
  for (char c : tail.substr(digits))
    unit.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  if (unit != "g" && unit != "gb") return std::nullopt;
  const uint64_t gib = std::stoull(std::string(tail.substr(0, digits)));
  if (gib == 0) return std::nullopt;
  return gib * kGiB;
}

}  // namespace

std::optional<uint64_t> GpuTypeMemoryBytes(std::string_view gres_type) {
  if (std::optional<uint64_t> sized = SizeSuffix(gres_type)) return sized;
  const std::string key = Normalized(gres_type);
  for (const auto& [model, gib] : kModels) {
    if (model == key) return uint64_t{gib} * kGiB;
  }
  return std::nullopt;
}

}  // namespace gw::slurm
