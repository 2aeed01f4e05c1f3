// The kernels of kernels.hpp on a CUDA device: issue<K> of launch.hpp as checked, counted launches on the stream and
// device of the memory that holds the operands. Item kernels put the items on the grid's y axis and their words on x
// (grid-stride loops); block kernels (the NTT) put each item's blocks on x, run the phases with a barrier between
// them in static shared memory. Compiled with --fmad=false, so that the floating-point overflow count rounds each
// product and sum as the host does.
#include <algorithm>
#include <string>

#include "gpu/counters.hpp"
#include "gpu/launch.hpp"
#include "gpu/runtime_internal.hpp"

namespace kasoku::gpu {
inline namespace KASOKU_GPU_VARIANT {
namespace launch {

namespace {

constexpr unsigned kThreads = 256;
constexpr std::size_t kMaxGrid = 65535;

template <class K>
concept BlockKernel = requires {
    K::kSmemWords;
};

template <class K, int Cap>
__global__ void item_kernel(const __grid_constant__ kern::Params<K, Cap> p) {
    for (std::size_t i = blockIdx.y; i < p.count; i += gridDim.y) {
        const auto& it = p.items[i];
        const std::size_t words = K::words(p.s, it), stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
        for (std::size_t w = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; w < words; w += stride)
            K::word(p.s, it, w);
    }
}

template <class K, int Cap>
__global__ void __launch_bounds__(K::kThreads) block_kernel(const __grid_constant__ kern::Params<K, Cap> p) {
    __shared__ kern::u64 smem[K::kSmemWords];
    const kern::u32 phases = K::phases(p.s);
    for (std::size_t i = blockIdx.y; i < p.count; i += gridDim.y) {
        const auto& it = p.items[i];
        const std::size_t blocks = K::blocks(p.s, it);
        for (std::size_t b = blockIdx.x; b < blocks; b += gridDim.x)
            for (kern::u32 ph = 0; ph < phases; ++ph) {
                K::phase(p.s, it, b, threadIdx.x, ph, smem);
                __syncthreads();
            }
    }
}

template <class K, int Cap>
void launch_one(const PolyMemory& mem, const typename K::Shared& s, const typename K::Item* items, std::size_t count) {
    kern::Params<K, Cap> p;
    p.s = s;
    p.count = static_cast<kern::u32>(count);
    std::size_t bytes = 0, mults = 0, width = 0;
    launch_cost<K>(s, items, count, bytes, mults);
    for (std::size_t i = 0; i < count; ++i) {
        p.items[i] = items[i];
        if constexpr (BlockKernel<K>) width = std::max(width, K::blocks(s, items[i]));
        else width = std::max(width, (K::words(s, items[i]) + kThreads - 1) / kThreads);
    }
    if (width == 0) return;
    count_launch(K::kName, bytes, mults);
    const Placement at = placement_of(mem);
    const DeviceGuard guard(at.device);
    // x: the widest item's blocks (grid-stride beyond 2^20); y: the items (at most 65,535, strided beyond)
    const dim3 grid(static_cast<unsigned>(std::min<std::size_t>(width, std::size_t{1} << 20)),
                    static_cast<unsigned>(std::min(count, kMaxGrid)));
    if constexpr (BlockKernel<K>) block_kernel<K, Cap><<<grid, K::kThreads, 0, at.stream>>>(p);
    else item_kernel<K, Cap><<<grid, kThreads, 0, at.stream>>>(p);
    check(cudaGetLastError(), (std::string("launch of the ") + K::kName + " kernel").c_str());
    if (sync_each_launch()) {
        count_sync();
        check(cudaStreamSynchronize(at.stream),
              (std::string("the ") + K::kName + " kernel (KASOKU_CUDA_SYNC)").c_str());
    }
}

}  // namespace

template <class K>
void issue(const PolyMemory& mem, const typename K::Shared& s, const typename K::Item* items, std::size_t count) {
    constexpr std::size_t large = kern::kLargeCap<K>;
    static_assert(large > kern::kMediumCap, "a kernel's items do not fit its arguments");
    for (std::size_t first = 0; first < count; first += large) {
        const std::size_t n = std::min(large, count - first);
        if (n <= kern::kSmallCap) launch_one<K, kern::kSmallCap>(mem, s, items + first, n);
        else if (n <= kern::kMediumCap) launch_one<K, kern::kMediumCap>(mem, s, items + first, n);
        else launch_one<K, kern::kLargeCap<K>>(mem, s, items + first, n);
    }
}

#define KASOKU_INSTANTIATE(K) \
    template void issue<K>(const PolyMemory&, const typename K::Shared&, const typename K::Item*, std::size_t);
KASOKU_GPU_KERNELS(KASOKU_INSTANTIATE)
#undef KASOKU_INSTANTIATE

}  // namespace launch
}  // namespace KASOKU_GPU_VARIANT

cudaError_t probe_kernel_image(int device) {
    const DeviceGuard guard(device);
    cudaFuncAttributes attr{};
    return cudaFuncGetAttributes(&attr, launch::item_kernel<kern::Ewise<kern::Op::copy>, kern::kSmallCap>);
}

}  // namespace kasoku::gpu
