// The launchers of launch.hpp as CPU loops over their grids, in host memory: the emulated GPU backend, which runs
// the GPU backend's logic (gpu_backend.cpp) where there is no GPU (tests/cpp/gpu/test_gpu_emulated.cpp). Its memory
// counts what the CUDA memory would ask of the device (allocations, transfers and their waits, copies and fills), so
// that the launch budget is read here as on a device (counters.hpp).
#include <cstring>

#include "gpu/backends.hpp"
#include "gpu/bodies.hpp"
#include "gpu/counters.hpp"
#include "gpu/launch.hpp"
#include "kasoku/support/aligned.hpp"
#include "kasoku/support/random.hpp"

namespace kasoku::gpu {

namespace {
thread_local bool kernels_skipped = false;
}

KernelsSkipped::KernelsSkipped() : previous_(kernels_skipped) { kernels_skipped = true; }
KernelsSkipped::~KernelsSkipped() { kernels_skipped = previous_; }

inline namespace KASOKU_GPU_VARIANT {
namespace launch {
namespace {

#define KASOKU_LAMBDA(...) [=](__VA_ARGS__)

template <class F>
void run(const PolyMemory&, std::size_t count, F f, const char* kernel, std::size_t bytes, std::size_t mults) {
    if (count == 0) return;
    count_launch(kernel, bytes, mults);
    if (sync_each_launch()) count_sync();
    if (kernels_skipped) return;
    for (std::size_t i = 0; i < count; ++i) f(i);
}

}  // namespace

#include "gpu/launchers.inl"

}  // namespace launch
}  // namespace KASOKU_GPU_VARIANT

namespace {

// Host memory that counts as the CUDA memory does (runtime.cu): each allocation, copy and fill, each transfer and the
// wait that ends it.
class EmulatedDeviceMemory final : public rns::PolyMemory {
public:
    bool host_accessible() const override { return true; }
    std::uint64_t* allocate(std::size_t words) const override {
        count_allocation(8 * words);
        return static_cast<std::uint64_t*>(kasoku::detail::pool_allocate(words * sizeof(std::uint64_t)));
    }
    void deallocate(std::uint64_t* p, std::size_t words) const noexcept override {
        kasoku::detail::pool_free(p, words * sizeof(std::uint64_t));
    }
    void copy(const std::uint64_t* src, std::size_t words, std::uint64_t* dst) const override {
        if (!words) return;
        count_launch("copy", 16 * words, 0);
        std::memcpy(dst, src, words * sizeof(std::uint64_t));
    }
    void zero(std::uint64_t* p, std::size_t words) const override {
        if (!words) return;
        count_launch("fill", 8 * words, 0);
        std::memset(p, 0, words * sizeof(std::uint64_t));
    }
    void wipe(std::uint64_t* p, std::size_t words) const noexcept override {
        if (!words) return;
        count_launch("fill", 8 * words, 0);
        secure_wipe(p, words * sizeof(std::uint64_t));
    }
    bool equal(const std::uint64_t* a, const std::uint64_t* b, std::size_t words) const override {
        count_transfer(false, 16 * words);
        count_sync();
        count_sync();
        return words == 0 || std::memcmp(a, b, words * sizeof(std::uint64_t)) == 0;
    }
    void to_host(const std::uint64_t* src, std::size_t words, std::uint64_t* host_dst) const override {
        count_transfer(false, 8 * words);
        count_sync();
        if (words) std::memcpy(host_dst, src, words * sizeof(std::uint64_t));
    }
    void from_host(const std::uint64_t* host_src, std::size_t words, std::uint64_t* dst) const override {
        count_transfer(true, 8 * words);
        count_sync();
        if (words) std::memcpy(dst, host_src, words * sizeof(std::uint64_t));
    }
    void synchronize() const override { count_sync(); }
};

}  // namespace

std::unique_ptr<const rns::Backend> make_emulated_gpu_backend(std::shared_ptr<const rns::RnsContext> ring) {
    static const std::shared_ptr<const rns::PolyMemory> memory = std::make_shared<const EmulatedDeviceMemory>();
    return make_gpu_backend(std::move(ring), memory, "gpu-emulated");
}

std::unique_ptr<const rns::Backend> make_emulated_gpu_backend_over(std::shared_ptr<const rns::RnsContext> ring,
                                                              std::shared_ptr<const rns::PolyMemory> memory) {
    return make_gpu_backend(std::move(ring), std::move(memory), "gpu-emulated");
}

}  // namespace kasoku::gpu
