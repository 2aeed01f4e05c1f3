// The CUDA kernels: grid-stride loops over the bodies of bodies.hpp (the same code the CPU tests run). Compiled with
// --fmad=false, so that the floating-point overflow count rounds each product and sum as the host does.
#include "gpu/bodies.hpp"
#include "gpu/counters.hpp"
#include "gpu/launch.hpp"
#include "gpu/runtime_internal.hpp"

namespace kasoku::gpu {
inline namespace KASOKU_GPU_VARIANT {
namespace launch {

namespace {

constexpr int kThreads = 256;

template <class F>
__global__ void each(std::size_t count, F f) {
    const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
    for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += stride) f(i);
}

#define KASOKU_LAMBDA(...) [=] __device__(__VA_ARGS__)

// One launch of f over [0, count) on mem's stream and device, checked, counted (counters.hpp); with the debug switch
// on, waited for, so that a failure names this kernel.
template <class F>
void run(const PolyMemory& mem, std::size_t count, F f, const char* kernel, std::size_t bytes, std::size_t mults) {
    if (count == 0) return;
    count_launch(kernel, bytes, mults);
    const Placement at = placement_of(mem);
    const DeviceGuard guard(at.device);
    const std::size_t blocks = (count + kThreads - 1) / kThreads;
    const unsigned grid = static_cast<unsigned>(blocks < 65535 * 32 ? blocks : 65535 * 32);
    each<<<grid, kThreads, 0, at.stream>>>(count, f);
    check(cudaGetLastError(), (std::string("launch of the ") + kernel + " kernel").c_str());
    if (sync_each_launch()) {
        count_sync();
        check(cudaStreamSynchronize(at.stream), (std::string("the ") + kernel + " kernel (KASOKU_CUDA_SYNC)").c_str());
    }
}

}  // namespace

#include "gpu/launchers.inl"

}  // namespace launch
}  // namespace KASOKU_GPU_VARIANT

cudaError_t probe_kernel_image(int device) {
    const DeviceGuard guard(device);
    cudaFuncAttributes attr{};
    const auto f = KASOKU_LAMBDA(std::size_t) {};
    return cudaFuncGetAttributes(&attr, launch::each<decltype(f)>);
}

}  // namespace kasoku::gpu
