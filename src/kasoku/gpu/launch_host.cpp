// The kernels of kernels.hpp as CPU loops over their grids, in host memory: the emulated GPU backend, which runs the
// GPU backend's logic (gpu_backend.cpp) where there is no GPU (tests/cpp/gpu). Block kernels run block by block, phase
// by phase, thread by thread over the same shared-memory tile, as the device's barriers order them. Its memory counts
// what the CUDA memory would ask of the device (allocations, transfers and their waits; copies and fills are kernels),
// so that the launch budget is read here as on a device (counters.hpp).
#include <algorithm>
#include <cstring>
#include <vector>

#include "gpu/backends.hpp"
#include "gpu/counters.hpp"
#include "gpu/device_memory.hpp"
#include "gpu/launch.hpp"
#include "kasoku/support/aligned.hpp"

namespace kasoku::gpu {

namespace {
thread_local bool kernels_skipped = false;
}

KernelsSkipped::KernelsSkipped() : previous_(kernels_skipped) { kernels_skipped = true; }
KernelsSkipped::~KernelsSkipped() { kernels_skipped = previous_; }

inline namespace KASOKU_GPU_VARIANT {
namespace launch {

namespace {

template <class K>
concept BlockKernel = requires {
    K::kSmemWords;
};

template <class K>
void run_one(const typename K::Shared& s, const typename K::Item* items, std::size_t count) {
    std::size_t bytes = 0, mults = 0;
    launch_cost<K>(s, items, count, bytes, mults);
    count_launch(K::kName, bytes, mults);
    if (sync_each_launch()) count_sync();
    if (kernels_skipped) return;
    for (std::size_t i = 0; i < count; ++i) {
        if constexpr (BlockKernel<K>) {
            std::vector<kern::u64> smem(K::kSmemWords);
            const kern::u32 phases = K::phases(s);
            for (std::size_t b = 0; b < K::blocks(s, items[i]); ++b)
                for (kern::u32 ph = 0; ph < phases; ++ph)
                    for (kern::u32 t = 0; t < K::kThreads; ++t) K::phase(s, items[i], b, t, ph, smem.data());
        } else {
            const std::size_t words = K::words(s, items[i]);
            for (std::size_t w = 0; w < words; ++w) K::word(s, items[i], w);
        }
    }
}

}  // namespace

// One launch per chunk of items that fits the device's kernel arguments, as kernels.cu does.
template <class K>
void issue(const PolyMemory&, const typename K::Shared& s, const typename K::Item* items, std::size_t count) {
    constexpr std::size_t large = kern::kLargeCap<K>;
    for (std::size_t first = 0; first < count; first += large)
        run_one<K>(s, items + first, std::min(large, count - first));
}

#define KASOKU_INSTANTIATE(K) \
    template void issue<K>(const PolyMemory&, const typename K::Shared&, const typename K::Item*, std::size_t);
KASOKU_GPU_KERNELS(KASOKU_INSTANTIATE)
#undef KASOKU_INSTANTIATE

}  // namespace launch
}  // namespace KASOKU_GPU_VARIANT

namespace {

// Host memory that counts as the CUDA memory does (runtime.cu): allocations from the device allocator (the arena's
// misses), each transfer and the wait that ends it.
class EmulatedDeviceMemory final : public DeviceMemory {
public:
    ~EmulatedDeviceMemory() override { release_kept(); }
    bool host_accessible() const override { return true; }
    bool equal(const std::uint64_t* a, const std::uint64_t* b, std::size_t words) const override {
        not_recording("comparing device memory");
        count_transfer(false, 16 * words);
        count_sync();
        count_sync();
        return words == 0 || std::memcmp(a, b, words * sizeof(std::uint64_t)) == 0;
    }
    void to_host(const std::uint64_t* src, std::size_t words, std::uint64_t* host_dst) const override {
        not_recording("a transfer to the host");
        count_transfer(false, 8 * words);
        count_sync();
        if (words) std::memcpy(host_dst, src, words * sizeof(std::uint64_t));
    }
    void from_host(const std::uint64_t* host_src, std::size_t words, std::uint64_t* dst) const override {
        count_transfer(true, 8 * words);
        count_sync();
        if (words) std::memcpy(dst, host_src, words * sizeof(std::uint64_t));
    }
    void synchronize() const override {
        not_recording("synchronize");
        count_sync();
    }

protected:
    std::uint64_t* device_allocate(std::size_t words) const override {
        return static_cast<std::uint64_t*>(kasoku::detail::pool_allocate(words * sizeof(std::uint64_t)));
    }
    void device_free(std::uint64_t* p, std::size_t words) const noexcept override {
        kasoku::detail::pool_free(p, words * sizeof(std::uint64_t));
    }
    void failed(const std::string&) const noexcept override {}  // host memory: nothing fails after the call
};

}  // namespace

std::unique_ptr<const rns::Backend> make_emulated_gpu_backend(std::shared_ptr<const rns::RnsContext> ring) {
    return make_gpu_backend(std::move(ring), std::make_shared<const EmulatedDeviceMemory>(), "gpu-emulated");
}

std::unique_ptr<const rns::Backend> make_emulated_gpu_backend_over(std::shared_ptr<const rns::RnsContext> ring,
                                                                   std::shared_ptr<const rns::PolyMemory> memory) {
    return make_gpu_backend(std::move(ring), std::move(memory), "gpu-emulated");
}

}  // namespace kasoku::gpu
