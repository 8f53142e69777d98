// GPU memory by Slurm gres type name ("a100", "l40s", "h100_80gb"): what
// `run --slurm --vram` asks for. Sites name their gres types as they like;
// the names below are the usual ones (the NVIDIA model, lower case, with or
// without separators and the vendor's line name). A name that ends in a
// size ("a100_80g", "v100-32gb") means that size, whatever the model. A model
// sold with several sizes (A100 40/80 GB, V100 16/32 GB) counts as its
// smallest: a job is never sent to a GPU that may be too small for it.
#ifndef GPUWARDEN_SLURM_GPU_TYPES_H_
#define GPUWARDEN_SLURM_GPU_TYPES_H_

#include <cstdint>
#include <optional>
#include <string_view>

namespace gw::slurm {

// The memory of one GPU of this gres type in bytes; nullopt when the name
// is not one gpuwarden knows.
std::optional<uint64_t> GpuTypeMemoryBytes(std::string_view gres_type);

}  // namespace gw::slurm

#endif  // GPUWARDEN_SLURM_GPU_TYPES_H_
