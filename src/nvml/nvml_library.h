// NvmlLibrary: NvmlApi bound to a libnvidia-ml.so.1 (NVIDIA's, or gpuwarden's
// simulator) with dlopen, so gpuwarden builds and runs on machines without the
// driver and degrades entry point by entry point on older drivers.
//
// Each entry point's symbol is looked up on its first use (thread-safe), trying
// the candidates of entry_points.h newest first. A symbol the library lacks
// makes only that entry point answer NVML_ERROR_FUNCTION_NOT_FOUND.
#ifndef GPUWARDEN_NVML_NVML_LIBRARY_H_
#define GPUWARDEN_NVML_NVML_LIBRARY_H_

#include <array>
#include <atomic>
#include <memory>
#include <mutex>
#include <string>

#include "core/result.h"
#include "nvml/entry_points.h"
#include "nvml/nvml_api.h"

namespace gw::nvml {

inline constexpr char kDefaultLibraryPath[] = "libnvidia-ml.so.1";

// The NVML library to load: $GPUWARDEN_NVML_LIB when set and non-empty,
// otherwise kDefaultLibraryPath (found through the dynamic linker's search).
// The only place that reads the variable; the CLI calls it once.
std::string ResolveLibraryPath();

class NvmlLibrary final : public NvmlApi {
 public:
  // Loads `path` (RTLD_NOW | RTLD_LOCAL), or returns the instance already
  // loaded from that path. Error code "library_not_found" with a message naming
  // the path and dlerror's text. Does not call nvmlInit. Thread-safe.
  static Result<std::shared_ptr<NvmlLibrary>> Open(const std::string& path);

  // The library stays mapped for the life of the process (see the .cc).
  ~NvmlLibrary() override = default;
  NvmlLibrary(const NvmlLibrary&) = delete;
  NvmlLibrary& operator=(const NvmlLibrary&) = delete;

#define GW_NVML_OVERRIDE_(name, ret, params, args, ...) ret name params override;
  GW_NVML_ENTRY_POINTS(GW_NVML_OVERRIDE_)
#undef GW_NVML_OVERRIDE_

  // Binds `ep` if not yet done, then names the bound symbol (the newest
  // candidate when none is exported).
  const char* SymbolName(EntryPoint ep) const override;

  // The bound symbol for `ep`, or nullptr when the library exports none of its
  // candidates. Binds on first use.
  const char* BoundSymbol(EntryPoint ep) const;

  const std::string& path() const { return path_; }

 private:
  struct Slot {
    std::once_flag once;
    void* fn = nullptr;            // Written once under `once`.
    const char* symbol = nullptr;  // Likewise.
  };

  NvmlLibrary(std::string path, void* handle) : path_(std::move(path)), handle_(handle) {}
  // The function for `ep`, or nullptr. Thread-safe; dlsym runs at most once per slot.
  void* Resolve(EntryPoint ep) const;

  std::string path_;
  void* handle_;
  mutable std::array<Slot, kEntryPointCount> slots_;
};

}  // namespace gw::nvml

#endif  // GPUWARDEN_NVML_NVML_LIBRARY_H_
