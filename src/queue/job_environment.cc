#include "queue/job_environment.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>
#include <string_view>

namespace gw::queue {
namespace {

constexpr char kDefaultPath[] = "/usr/local/bin:/usr/bin:/bin";

std::string_view EnvKey(std::string_view entry) {
  const size_t eq = entry.find('=');
  return eq == std::string_view::npos ? entry : entry.substr(0, eq);
}

std::string FormatFraction(uint64_t vram, uint64_t total) {
  // Rounded down to 1/10000, so that the cap never exceeds the budget.
  if (vram >= total) return "1";
  uint64_t ten_thousandths = static_cast<uint64_t>((static_cast<unsigned __int128>(vram) * 10000) /
                                                   static_cast<unsigned __int128>(total));
  ten_thousandths = std::max<uint64_t>(ten_thousandths, 1);
  std::string digits = fmt::format("{:04d}", ten_thousandths);
  while (!digits.empty() && digits.back() == '0') digits.pop_back();
  return "0." + digits;
}

}  // namespace

std::vector<std::string> BuildJobEnvironment(const JobSpec& spec, JobId id,
                                             const std::vector<std::string>& gpu_uuids,
                                             uint64_t gpu_total_bytes, bool mps_active) {
  const bool budget = spec.vram_bytes > 0 && !gpu_uuids.empty();
  const bool fraction = budget && gpu_total_bytes > 0;
  const bool mps_limit = budget && mps_active;
  std::set<std::string_view> user_keys;
  for (const std::string& e : spec.env) user_keys.insert(EnvKey(e));
  auto ours = [&](std::string_view key) {
    return key == "CUDA_VISIBLE_DEVICES" || key == "CUDA_DEVICE_ORDER" ||
           key == "GPUWARDEN_JOB_ID" || key == "GPUWARDEN_VRAM_LIMIT_BYTES" ||
           key == "GPUWARDEN_VRAM_FRACTION" ||
           (mps_limit && key == "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT");
  };
  auto user_set = [&](std::string_view key) { return user_keys.count(key) != 0; };

  std::vector<std::string> env;
  for (const std::string& e : spec.env) {
    if (!ours(EnvKey(e))) env.push_back(e);
  }
  std::string devices;
  for (const std::string& uuid : gpu_uuids) {
    if (!devices.empty()) devices += ',';
    devices += uuid;
  }
  env.push_back("CUDA_VISIBLE_DEVICES=" + devices);
  env.push_back("CUDA_DEVICE_ORDER=PCI_BUS_ID");
  env.push_back("GPUWARDEN_JOB_ID=" + std::to_string(id));
  if (!budget) return env;
  const std::string frac = fraction ? FormatFraction(spec.vram_bytes, gpu_total_bytes) : "";
  env.push_back("GPUWARDEN_VRAM_LIMIT_BYTES=" + std::to_string(spec.vram_bytes));
  if (fraction) env.push_back("GPUWARDEN_VRAM_FRACTION=" + frac);
  if (mps_limit) {
    const uint64_t mib = std::max<uint64_t>(1, spec.vram_bytes >> 20);
    std::string limits;
    for (const std::string& uuid : gpu_uuids) {
      if (!limits.empty()) limits += ',';
      limits += fmt::format("{}={}M", uuid, mib);
    }
    env.push_back("CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=" + limits);
  }
  if (!user_set("XLA_PYTHON_CLIENT_PREALLOCATE")) {
    env.push_back("XLA_PYTHON_CLIENT_PREALLOCATE=false");
  }
  if (fraction && !user_set("XLA_PYTHON_CLIENT_MEM_FRACTION") &&
      !user_set("XLA_CLIENT_MEM_FRACTION")) {
    env.push_back("XLA_PYTHON_CLIENT_MEM_FRACTION=" + frac);
    env.push_back("XLA_CLIENT_MEM_FRACTION=" + frac);
  }
  if (!user_set("TF_FORCE_GPU_ALLOW_GROWTH")) env.push_back("TF_FORCE_GPU_ALLOW_GROWTH=true");
  return env;
}

std::vector<std::string> ExecCandidates(const std::string& argv0,
                                        const std::vector<std::string>& env) {
  if (argv0.empty()) return {};
  if (argv0.find('/') != std::string::npos) return {argv0};
  std::string_view path = kDefaultPath;
  for (const std::string& e : env) {
    if (e.rfind("PATH=", 0) == 0) {
      path = std::string_view(e).substr(5);
      break;  // The first, as getenv would find it.
    }
  }
  std::vector<std::string> out;
  size_t start = 0;
  for (;;) {
    const size_t colon = path.find(':', start);
    const std::string_view dir = path.substr(
        start, colon == std::string_view::npos ? std::string_view::npos : colon - start);
    if (dir.empty()) {
      out.push_back(argv0);  // Relative: the job's working directory.
    } else {
      std::string candidate(dir);
      if (candidate.back() != '/') candidate += '/';
      out.push_back(candidate + argv0);
    }
    if (colon == std::string_view::npos) break;
    start = colon + 1;
  }
  return out;
}

}  // namespace gw::queue
