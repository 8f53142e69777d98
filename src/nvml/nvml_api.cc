#include "nvml/nvml_api.h"

#include <fmt/format.h>

namespace gw::nvml {

std::string BuiltinErrorString(nvmlReturn_t result) {
  // The texts NVML's own nvmlErrorString gives, so messages read the same
  // whether or not the library could be asked.
  switch (result) {
    case NVML_SUCCESS:
      return "Success";
    case NVML_ERROR_UNINITIALIZED:
      return "Uninitialized";
    case NVML_ERROR_INVALID_ARGUMENT:
      return "Invalid Argument";
    case NVML_ERROR_NOT_SUPPORTED:
      return "Not Supported";
    case NVML_ERROR_NO_PERMISSION:
      return "Insufficient Permissions";
    case NVML_ERROR_ALREADY_INITIALIZED:
      return "Already Initialized";
    case NVML_ERROR_NOT_FOUND:
      return "Not Found";
    case NVML_ERROR_INSUFFICIENT_SIZE:
      return "Insufficient Size";
    case NVML_ERROR_INSUFFICIENT_POWER:
      return "Insufficient External Power";
    case NVML_ERROR_DRIVER_NOT_LOADED:
      return "Driver Not Loaded";
    case NVML_ERROR_TIMEOUT:
      return "Timeout";
    case NVML_ERROR_IRQ_ISSUE:
      return "Interrupt Request Issue";
    case NVML_ERROR_LIBRARY_NOT_FOUND:
      return "NVML Shared Library Not Found";
    case NVML_ERROR_FUNCTION_NOT_FOUND:
      return "Function Not Found";
    case NVML_ERROR_CORRUPTED_INFOROM:
      return "Corrupted infoROM";
    case NVML_ERROR_GPU_IS_LOST:
      return "GPU is lost";
    case NVML_ERROR_RESET_REQUIRED:
      return "GPU requires reset";
    case NVML_ERROR_OPERATING_SYSTEM:
      return "Operating System Error";
    case NVML_ERROR_LIB_RM_VERSION_MISMATCH:
      return "RM has detected an NVML/RM version mismatch";
    case NVML_ERROR_IN_USE:
      return "In use";
    case NVML_ERROR_MEMORY:
      return "Insufficient Memory";
    case NVML_ERROR_NO_DATA:
      return "No data";
    case NVML_ERROR_VGPU_ECC_NOT_SUPPORTED:
      return "vGPU ECC Not Supported";
    case NVML_ERROR_INSUFFICIENT_RESOURCES:
      return "Insufficient Resources";
    case NVML_ERROR_FREQ_NOT_SUPPORTED:
      return "Frequency not supported";
    case NVML_ERROR_ARGUMENT_VERSION_MISMATCH:
      return "Argument Version Mismatch";
    case NVML_ERROR_DEPRECATED:
      return "Deprecated";
    case NVML_ERROR_NOT_READY:
      return "Not Ready";
    case NVML_ERROR_GPU_NOT_FOUND:
      return "GPU not found";
    case NVML_ERROR_INVALID_STATE:
      return "Invalid State";
    case 30:  // NVML_ERROR_RESET_TYPE_NOT_SUPPORTED (13.0).
      return "Reset Type Not Supported";
    case NVML_ERROR_UNKNOWN:
      return "Unknown Error";
    default:
      return fmt::format("Unknown Error ({})", result);
  }
}

std::string ErrorText(NvmlApi& api, nvmlReturn_t result) {
  const char* text = api.ErrorString(result);
  if (text != nullptr && text[0] != '\0') return text;
  return BuiltinErrorString(result);
}

bool IsUnavailable(nvmlReturn_t result) {
  return result == NVML_ERROR_NOT_SUPPORTED || result == NVML_ERROR_FUNCTION_NOT_FOUND ||
         result == NVML_ERROR_NO_PERMISSION;
}

std::string ErrorCodeFor(nvmlReturn_t result) {
  switch (result) {
    case NVML_ERROR_DRIVER_NOT_LOADED:
      return "driver_not_loaded";
    case NVML_ERROR_LIB_RM_VERSION_MISMATCH:
      return "version_mismatch";
    case NVML_ERROR_LIBRARY_NOT_FOUND:
      return "library_not_found";
    case NVML_ERROR_NO_PERMISSION:
      return "no_permission";
    case NVML_ERROR_GPU_IS_LOST:
      return "gpu_lost";
    case NVML_ERROR_TIMEOUT:
      return "timeout";
    case NVML_ERROR_NOT_SUPPORTED:
    case NVML_ERROR_FUNCTION_NOT_FOUND:
      return "unsupported";
    case NVML_ERROR_INSUFFICIENT_POWER:
      return "insufficient_power";
    case NVML_ERROR_RESET_REQUIRED:
      return "reset_required";
    case NVML_ERROR_CORRUPTED_INFOROM:
      return "corrupted_inforom";
    case NVML_ERROR_UNINITIALIZED:
      return "uninitialized";
    default:
      return "nvml_error";
  }
}

}  // namespace gw::nvml
