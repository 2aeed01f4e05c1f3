// The CUDA backend: the GPU backend over the memory of a CUDA device.
#include "gpu/backends.hpp"
#include "kasoku/gpu/cuda.hpp"

namespace kasoku::gpu {

std::unique_ptr<const rns::Backend> make_cuda_backend(std::shared_ptr<const rns::RnsContext> ring) {
    return make_gpu_backend(std::move(ring), cuda_memory(0), "cuda");
}

}  // namespace kasoku::gpu
