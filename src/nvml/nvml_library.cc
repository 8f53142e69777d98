#include "nvml/nvml_library.h"

#include <dlfcn.h>

#include <cstdlib>
#include <map>
#include <mutex>
#include <utility>

#include <fmt/format.h>

namespace gw::nvml {

std::string ResolveLibraryPath() {
  const char* env = std::getenv("GPUWARDEN_NVML_LIB");
  if (env != nullptr && env[0] != '\0') return env;
  return kDefaultLibraryPath;
}

Result<std::shared_ptr<NvmlLibrary>> NvmlLibrary::Open(const std::string& path) {
  // One NvmlLibrary per path for the life of the process, so repeated probes
  // (watch mode) bind each symbol once. Leaked on purpose, like the mapping.
  static auto* mu = new std::mutex;
  static auto* opened = new std::map<std::string, std::shared_ptr<NvmlLibrary>>;
  std::lock_guard<std::mutex> lock(*mu);
  if (auto it = opened->find(path); it != opened->end()) return it->second;

  // RTLD_LOCAL keeps the library's symbols out of the global scope, so two
  // libraries with the same soname (the simulator and its legacy build, in
  // tests) each bind their own functions. RTLD_NOW surfaces a broken library
  // here rather than at the first call.
  dlerror();
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* why = dlerror();
    return MakeError("library_not_found",
                     fmt::format("cannot load the NVML library {}: {} (is the NVIDIA driver "
                                 "installed?)",
                                 path, why != nullptr ? why : "unknown dlopen error"));
  }
  // No dlclose, ever: a probe abandoned at its deadline may still be inside
  // the library on a detached thread, and NVIDIA's library may start threads of
  // its own. Unmapping code under either would crash; a mapping that lives
  // until exit costs nothing (dlopen of the same path only bumps a count).
  auto library = std::shared_ptr<NvmlLibrary>(new NvmlLibrary(path, handle));
  opened->emplace(path, library);
  return library;
}

void* NvmlLibrary::Resolve(EntryPoint ep) const {
  Slot& slot = slots_[static_cast<size_t>(ep)];
  std::call_once(slot.once, [&] {
    for (const char* symbol : InfoOf(ep).symbols) {
      if (symbol == nullptr) break;
      if (void* fn = dlsym(handle_, symbol); fn != nullptr) {
        slot.fn = fn;
        slot.symbol = symbol;
        break;
      }
    }
  });
  return slot.fn;
}

const char* NvmlLibrary::BoundSymbol(EntryPoint ep) const {
  Resolve(ep);
  return slots_[static_cast<size_t>(ep)].symbol;
}

const char* NvmlLibrary::SymbolName(EntryPoint ep) const {
  const char* bound = BoundSymbol(ep);
  return bound != nullptr ? bound : InfoOf(ep).symbols[0];
}

// One stub per entry point: bind lazily, answer FUNCTION_NOT_FOUND when the
// library lacks every candidate, otherwise forward the arguments unchanged.
#define GW_NVML_STUB_(name, ret, params, args, ...)               \
  ret NvmlLibrary::name params {                                  \
    using Fn = ret(*) params;                                     \
    auto fn = reinterpret_cast<Fn>(Resolve(EntryPoint::k##name)); \
    if (fn == nullptr) return MissingEntryPointResult<ret>();     \
    return fn args;                                               \
  }
GW_NVML_ENTRY_POINTS(GW_NVML_STUB_)
#undef GW_NVML_STUB_

}  // namespace gw::nvml
