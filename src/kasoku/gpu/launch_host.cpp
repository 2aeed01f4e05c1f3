// The launchers of launch.hpp as CPU loops over their grids, in host memory: the emulated GPU backend, which runs
// the GPU backend's logic (gpu_backend.cpp) where there is no GPU (tests/cpp/gpu/test_gpu_emulated.cpp).
#include "gpu/backends.hpp"
#include "gpu/bodies.hpp"
#include "gpu/launch.hpp"

namespace kasoku::gpu {

inline namespace KASOKU_GPU_VARIANT {
namespace launch {
namespace {

#define KASOKU_LAMBDA(...) [=](__VA_ARGS__)

template <class F>
void run(const PolyMemory&, std::size_t count, F f, const char*) {
    for (std::size_t i = 0; i < count; ++i) f(i);
}

}  // namespace

#include "gpu/launchers.inl"

}  // namespace launch
}  // namespace KASOKU_GPU_VARIANT

std::unique_ptr<const rns::Backend> make_emulated_gpu_backend(std::shared_ptr<const rns::RnsContext> ring) {
    return make_gpu_backend(std::move(ring), rns::host_memory(), "gpu-emulated");
}

}  // namespace kasoku::gpu
