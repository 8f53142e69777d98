// NvmlApi: the seam between gpuwarden and an NVML implementation. One virtual
// method per entry point of entry_points.h, with NVML's own signature, so code
// written against it reads like plain NVML code.
//
// Implementations: NvmlLibrary (nvml_library.h) binds the real or simulated
// libnvidia-ml.so.1 with dlopen; UnsupportedNvmlApi below answers
// NVML_ERROR_FUNCTION_NOT_FOUND everywhere and is the base for test fakes.
//
// Contract shared by all implementations: methods are thread-safe to call
// concurrently (NVML itself is), and an entry point the implementation lacks
// returns NVML_ERROR_FUNCTION_NOT_FOUND (ErrorString: nullptr) — it never
// disables the other entry points.
#ifndef GPUWARDEN_NVML_NVML_API_H_
#define GPUWARDEN_NVML_NVML_API_H_

#include <string>
#include <type_traits>

#include "nvml/entry_points.h"
#include "nvml/nvml_abi.h"

namespace gw::nvml {

// What an entry point the implementation lacks returns, by return type:
// NVML_ERROR_FUNCTION_NOT_FOUND, or nullptr for ErrorString.
template <typename R>
R MissingEntryPointResult() {
  if constexpr (std::is_pointer_v<R>) {
    return nullptr;
  } else {
    return NVML_ERROR_FUNCTION_NOT_FOUND;
  }
}

class NvmlApi {
 public:
  virtual ~NvmlApi() = default;

#define GW_NVML_DECLARE_(name, ret, params, args, ...) virtual ret name params = 0;
  GW_NVML_ENTRY_POINTS(GW_NVML_DECLARE_)
#undef GW_NVML_DECLARE_

  // The exported symbol that answers `ep` (e.g. "nvmlDeviceGetComputeRunningProcesses_v2"
  // on an older driver), for messages. When no candidate is bound, the newest
  // candidate's name. Never blocks on the driver; the returned string is static.
  virtual const char* SymbolName(EntryPoint ep) const { return InfoOf(ep).symbols[0]; }
};

// Answers NVML_ERROR_FUNCTION_NOT_FOUND (ErrorString: nullptr) for every entry
// point. Fakes derive from it and override only what a test needs.
class UnsupportedNvmlApi : public NvmlApi {
 public:
#define GW_NVML_UNSUPPORTED_(name, ret, params, args, ...) \
  ret name params override { return MissingEntryPointResult<ret>(); }
  GW_NVML_ENTRY_POINTS(GW_NVML_UNSUPPORTED_)
#undef GW_NVML_UNSUPPORTED_
};

// NVML's name for a return code ("GPU is lost", "Insufficient Permissions"),
// from gpuwarden's built-in table of the documented codes; "Unknown Error (N)"
// for a code the table lacks.
std::string BuiltinErrorString(nvmlReturn_t result);

// The text for `result`: the library's nvmlErrorString when it has one,
// otherwise BuiltinErrorString.
std::string ErrorText(NvmlApi& api, nvmlReturn_t result);

// True for the answers that mean "this value is not available here" rather
// than "something is wrong": NOT_SUPPORTED, FUNCTION_NOT_FOUND, NO_PERMISSION.
// A value read with such an answer is reported as unknown (nullopt), never 0.
bool IsUnavailable(nvmlReturn_t result);

// The stable ProbeError code for an NVML failure: "driver_not_loaded",
// "version_mismatch", "library_not_found", "no_permission", "gpu_lost",
// "timeout", "unsupported", "insufficient_power", "reset_required",
// "corrupted_inforom", "uninitialized", or "nvml_error" for the rest.
std::string ErrorCodeFor(nvmlReturn_t result);

}  // namespace gw::nvml

#endif  // GPUWARDEN_NVML_NVML_API_H_
