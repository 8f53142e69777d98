#include "nvml/nvml_api.h"

#include <cstdlib>
#include <cstring>
#include <set>
#include <string>

#include <gtest/gtest.h>

#include "nvml/entry_points.h"
#include "nvml/nvml_library.h"

namespace gw::nvml {
namespace {

TEST(EntryPoints, EveryEntryHasUniqueNvmlSymbols) {
  std::set<std::string> names;
  std::set<std::string> symbols;
  for (const EntryPointInfo& info : kEntryPoints) {
    EXPECT_TRUE(names.insert(info.name).second) << info.name;
    ASSERT_NE(info.symbols[0], nullptr) << info.name;
    for (const char* symbol : info.symbols) {
      if (symbol == nullptr) break;
      EXPECT_EQ(std::strncmp(symbol, "nvml", 4), 0) << symbol;
      // A symbol bound by two entries would give one of them the wrong ABI.
      EXPECT_TRUE(symbols.insert(symbol).second) << symbol;
    }
  }
  EXPECT_EQ(names.size(), kEntryPointCount);
}

TEST(EntryPoints, NewestCandidateFirstAndLayoutsKeptApart) {
  const auto& compute = InfoOf(EntryPoint::kDeviceGetComputeRunningProcesses);
  EXPECT_STREQ(compute.symbols[0], "nvmlDeviceGetComputeRunningProcesses_v3");
  EXPECT_STREQ(compute.symbols[1], "nvmlDeviceGetComputeRunningProcesses_v2");
  EXPECT_EQ(compute.symbols[2], nullptr);  // v1 has its own entry (16-byte layout).
  EXPECT_STREQ(InfoOf(EntryPoint::kDeviceGetComputeRunningProcessesV1).symbols[0],
               "nvmlDeviceGetComputeRunningProcesses");
  EXPECT_STREQ(InfoOf(EntryPoint::kDeviceGetMemoryInfoV2).symbols[0], "nvmlDeviceGetMemoryInfo_v2");
  EXPECT_EQ(InfoOf(EntryPoint::kDeviceGetMemoryInfoV2).symbols[1], nullptr);
  EXPECT_STREQ(InfoOf(EntryPoint::kInit).symbols[0], "nvmlInit_v2");
  EXPECT_STREQ(InfoOf(EntryPoint::kInit).symbols[1], "nvmlInit");
  EXPECT_STREQ(InfoOf(EntryPoint::kDeviceGetCurrentClocksEventReasons).symbols[1],
               "nvmlDeviceGetCurrentClocksThrottleReasons");
  EXPECT_STREQ(InfoOf(EntryPoint::kEventSetWait).symbols[0], "nvmlEventSetWait_v2");
}

TEST(BuiltinErrorString, NamesTheCodesNvidiaSmiPrints) {
  EXPECT_EQ(BuiltinErrorString(NVML_ERROR_GPU_IS_LOST), "GPU is lost");
  EXPECT_EQ(BuiltinErrorString(NVML_ERROR_UNKNOWN), "Unknown Error");
  EXPECT_EQ(BuiltinErrorString(NVML_ERROR_NOT_FOUND), "Not Found");
  EXPECT_EQ(BuiltinErrorString(NVML_ERROR_NO_PERMISSION), "Insufficient Permissions");
  EXPECT_EQ(BuiltinErrorString(NVML_ERROR_DRIVER_NOT_LOADED), "Driver Not Loaded");
  EXPECT_EQ(BuiltinErrorString(12345), "Unknown Error (12345)");
}

TEST(ErrorText, FallsBackToBuiltinTableWithoutLibraryString) {
  UnsupportedNvmlApi api;
  EXPECT_EQ(api.ErrorString(NVML_ERROR_GPU_IS_LOST), nullptr);
  EXPECT_EQ(ErrorText(api, NVML_ERROR_GPU_IS_LOST), "GPU is lost");

  struct WithStrings : UnsupportedNvmlApi {
    const char* ErrorString(nvmlReturn_t) override { return "from the library"; }
  } with_strings;
  EXPECT_EQ(ErrorText(with_strings, NVML_ERROR_GPU_IS_LOST), "from the library");
}

TEST(Classification, UnavailableIsNotAnError) {
  EXPECT_TRUE(IsUnavailable(NVML_ERROR_NOT_SUPPORTED));
  EXPECT_TRUE(IsUnavailable(NVML_ERROR_FUNCTION_NOT_FOUND));
  EXPECT_TRUE(IsUnavailable(NVML_ERROR_NO_PERMISSION));
  EXPECT_FALSE(IsUnavailable(NVML_SUCCESS));
  EXPECT_FALSE(IsUnavailable(NVML_ERROR_GPU_IS_LOST));
  EXPECT_FALSE(IsUnavailable(NVML_ERROR_UNKNOWN));
}

TEST(Classification, StableCodes) {
  EXPECT_EQ(ErrorCodeFor(NVML_ERROR_DRIVER_NOT_LOADED), "driver_not_loaded");
  EXPECT_EQ(ErrorCodeFor(NVML_ERROR_LIB_RM_VERSION_MISMATCH), "version_mismatch");
  EXPECT_EQ(ErrorCodeFor(NVML_ERROR_LIBRARY_NOT_FOUND), "library_not_found");
  EXPECT_EQ(ErrorCodeFor(NVML_ERROR_NO_PERMISSION), "no_permission");
  EXPECT_EQ(ErrorCodeFor(NVML_ERROR_GPU_IS_LOST), "gpu_lost");
  EXPECT_EQ(ErrorCodeFor(NVML_ERROR_TIMEOUT), "timeout");
  EXPECT_EQ(ErrorCodeFor(NVML_ERROR_FUNCTION_NOT_FOUND), "unsupported");
  EXPECT_EQ(ErrorCodeFor(NVML_ERROR_UNKNOWN), "nvml_error");
  EXPECT_EQ(ErrorCodeFor(NVML_ERROR_IRQ_ISSUE), "nvml_error");
}

TEST(UnsupportedNvmlApi, AnswersFunctionNotFound) {
  UnsupportedNvmlApi api;
  unsigned count = 7;
  EXPECT_EQ(api.Init(), NVML_ERROR_FUNCTION_NOT_FOUND);
  EXPECT_EQ(api.DeviceGetCount(&count), NVML_ERROR_FUNCTION_NOT_FOUND);
  EXPECT_EQ(count, 7u);
  EXPECT_STREQ(api.SymbolName(EntryPoint::kDeviceGetMemoryInfoV2), "nvmlDeviceGetMemoryInfo_v2");
}

TEST(NvmlLibrary, MissingLibraryIsLibraryNotFound) {
  auto library = NvmlLibrary::Open("/nonexistent/dir/libnvidia-ml.so.1");
  ASSERT_FALSE(library.ok());
  EXPECT_EQ(library.error().code, "library_not_found");
  EXPECT_NE(library.error().message.find("/nonexistent/dir/libnvidia-ml.so.1"), std::string::npos)
      << library.error().message;
}

TEST(NvmlLibrary, LibraryWithoutNvmlSymbolsAnswersFunctionNotFound) {
  // Any loadable library that is not NVML: every entry point is missing, and
  // each says so on its own instead of failing the load.
  auto library = NvmlLibrary::Open("libm.so.6");
  ASSERT_TRUE(library.ok()) << library.error().message;
  NvmlLibrary& api = **library;
  unsigned count = 3;
  EXPECT_EQ(api.Init(), NVML_ERROR_FUNCTION_NOT_FOUND);
  EXPECT_EQ(api.DeviceGetCount(&count), NVML_ERROR_FUNCTION_NOT_FOUND);
  EXPECT_EQ(count, 3u);
  EXPECT_EQ(api.ErrorString(NVML_ERROR_GPU_IS_LOST), nullptr);
  EXPECT_EQ(ErrorText(api, NVML_ERROR_GPU_IS_LOST), "GPU is lost");
  EXPECT_EQ(api.BoundSymbol(EntryPoint::kInit), nullptr);
  EXPECT_STREQ(api.SymbolName(EntryPoint::kInit), "nvmlInit_v2");
  EXPECT_EQ(api.path(), "libm.so.6");
}

TEST(ResolveLibraryPath, HonoursEnvironment) {
  const char* saved = std::getenv("GPUWARDEN_NVML_LIB");
  std::string saved_value = saved != nullptr ? saved : "";
  setenv("GPUWARDEN_NVML_LIB", "/opt/x/libnvidia-ml.so.1", 1);
  EXPECT_EQ(ResolveLibraryPath(), "/opt/x/libnvidia-ml.so.1");
  setenv("GPUWARDEN_NVML_LIB", "", 1);
  EXPECT_EQ(ResolveLibraryPath(), "libnvidia-ml.so.1");
  unsetenv("GPUWARDEN_NVML_LIB");
  EXPECT_EQ(ResolveLibraryPath(), "libnvidia-ml.so.1");
  if (saved != nullptr) setenv("GPUWARDEN_NVML_LIB", saved_value.c_str(), 1);
}

}  // namespace
}  // namespace gw::nvml
