#include "cli/global_options.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <system_error>
#include <vector>

#include "os/file_io.h"

namespace gw::cli {
namespace {

namespace fs = std::filesystem;

Result<std::string> FindSimulatorLibrary() {
  if (const char* lib = std::getenv("GPUWARDEN_NVML_LIB"); lib != nullptr && lib[0] != '\0') {
    return std::string(lib);
  }
  const std::string dir = ExecutableDir();
  std::vector<std::string> candidates = {
      dir + "/sim/libnvidia-ml.so.1",
      dir + "/../lib/gpuwarden/sim/libnvidia-ml.so.1",
  };
  for (const auto& c : candidates) {
    if (access(c.c_str(), R_OK) == 0) return fs::weakly_canonical(c).string();
  }
  return MakeError("no_simulator",
                   fmt::format("--sim: the simulated NVML library was not found (looked in {}); "
                               "build the gw_nvml_sim target",
                               candidates.front()));
}

// The scenario must at least be a readable JSON file; the simulator checks the
// rest and names the problem itself (and refuses more than 64 MiB: so here).
Status CheckScenarioFile(const std::string& path) {
  Result<std::string> text = os::ReadFileBounded(path, size_t{64} << 20);
  if (!text.ok()) return MakeError("bad_input", "--sim " + text.error().message);
  auto parsed = nlohmann::json::parse(*text, nullptr, /*allow_exceptions=*/false);
  if (parsed.is_discarded()) {
    return MakeError("bad_input", fmt::format("--sim {}: not valid JSON", path));
  }
  if (!parsed.is_object()) {
    return MakeError("bad_input", fmt::format("--sim {}: a scenario is a JSON object, not {}", path,
                                              parsed.type_name()));
  }
  return Status::Ok();
}

}  // namespace

std::string ExecutableDir() {
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  return ec ? std::string(".") : exe.parent_path().string();
}

Result<collect::CollectOptions> ResolveCollectOptions(const GlobalOptions& options) {
  collect::CollectOptions out;
  out.deadline_ms = static_cast<int64_t>(options.timeout_s * 1000.0);
  out.proc_root = options.proc_root;
  out.device_dir = options.dev_dir;

  if (!options.sim_scenario.empty()) {
    if (Status s = CheckScenarioFile(options.sim_scenario); !s.ok()) return s.error();
    auto lib = FindSimulatorLibrary();
    if (!lib.ok()) return lib.error();
    std::error_code ec;
    std::string scenario = fs::absolute(options.sim_scenario, ec).string();
    if (ec) scenario = options.sim_scenario;
    setenv("GPUWARDEN_SIM_SCENARIO", scenario.c_str(), 1);
    out.nvml_library = *lib;
    out.simulated = true;
    out.scenario = options.sim_scenario;
    return out;
  }

  if (const char* lib = std::getenv("GPUWARDEN_NVML_LIB"); lib != nullptr && lib[0] != '\0') {
    out.nvml_library = lib;
  }
  if (const char* scenario = std::getenv("GPUWARDEN_SIM_SCENARIO");
      scenario != nullptr && scenario[0] != '\0') {
    out.simulated = true;
    out.scenario = scenario;
  }
  return out;
}

}  // namespace gw::cli
