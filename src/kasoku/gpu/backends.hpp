// The GPU backend over a memory (never installed): the CUDA backend is it over CUDA memory (cuda.hpp), the emulated
// one over host memory with the kernels run as CPU loops (tests only).
#pragma once
#include <memory>

#include "kasoku/rns/backend.hpp"

#include "gpu/launch.hpp"  // KASOKU_GPU_VARIANT

namespace kasoku::gpu {

inline namespace KASOKU_GPU_VARIANT {
std::unique_ptr<const rns::Backend> make_gpu_backend(std::shared_ptr<const rns::RnsContext> ring,
                                                     std::shared_ptr<const rns::PolyMemory> memory, const char* name);
}  // namespace KASOKU_GPU_VARIANT

// The GPU backend's logic on the host: host memory, every kernel a CPU loop over its grid (kasoku_gpu_emulated).
std::unique_ptr<const rns::Backend> make_emulated_gpu_backend(std::shared_ptr<const rns::RnsContext> ring);

}  // namespace kasoku::gpu
