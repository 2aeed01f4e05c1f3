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

// The GPU backend's logic on the host: host memory that counts as a device's does (counters.hpp), every kernel a CPU
// loop over its grid (kasoku_gpu_emulated).
std::unique_ptr<const rns::Backend> make_emulated_gpu_backend(std::shared_ptr<const rns::RnsContext> ring);
// The same over a memory of the caller's (tests: a memory that fails).
std::unique_ptr<const rns::Backend> make_emulated_gpu_backend_over(std::shared_ptr<const rns::RnsContext> ring,
                                                                   std::shared_ptr<const rns::PolyMemory> memory);

// While one lives, the emulated backend's kernels on the calling thread are counted but not run (the words they
// would write are left as they are): the launch budget at sizes where running every kernel as a CPU loop would take
// long. The counts do not depend on the data (tests/cpp/gpu/test_gpu_counts.cpp checks it).
class KernelsSkipped {
public:
    KernelsSkipped();
    ~KernelsSkipped();
    KernelsSkipped(const KernelsSkipped&) = delete;
    KernelsSkipped& operator=(const KernelsSkipped&) = delete;

private:
    bool previous_;
};

}  // namespace kasoku::gpu
