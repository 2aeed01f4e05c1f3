// The GPU kernels (src/kasoku/gpu/kernels.hpp) run here as CPU loops over their grids, block by block and phase by
// phase over a shared-memory tile, against the CPU's arithmetic, bit for bit (kernel_cases.hpp): the device computes
// with this very code, so these tests cover its arithmetic on machines without a GPU. test_gpu_device runs the same
// cases on a device; test_gpu_backend composes the kernels into every CKKS operation.
#include <gtest/gtest.h>

#include "kernel_cases.hpp"

using namespace kasoku;

namespace {

class GpuKernelsOnTheHost : public ::testing::TestWithParam<std::size_t> {};

// n = 256 and 4096: the NTT in one pass (a limb in one tile); 8192 and 65536: two passes (columns, then chunks).
TEST_P(GpuKernelsOnTheHost, ElementwiseAndTensor) {
    gpu::test::HostSpace sp;
    gpu::test::check_elementwise(sp, GetParam());
}
TEST_P(GpuKernelsOnTheHost, NttPassesAndTheirEpilogues) {
    gpu::test::HostSpace sp;
    gpu::test::check_ntt(sp, GetParam());
}
TEST_P(GpuKernelsOnTheHost, Conversions) {
    gpu::test::HostSpace sp;
    gpu::test::check_conversions(sp, GetParam());
}
TEST_P(GpuKernelsOnTheHost, InnerProductsRoundingAndSums) {
    gpu::test::HostSpace sp;
    gpu::test::check_products(sp, GetParam());
}

INSTANTIATE_TEST_SUITE_P(N, GpuKernelsOnTheHost, ::testing::Values(256, 4096, 8192, 65536),
                         [](const auto& info) { return "n" + std::to_string(info.param); });

// The NTT's two passes cover every stage once: the tile of a block holds exactly the words its stages pair.
TEST(GpuKernels, NttPassesSplitTheStages) {
    for (kasoku::gpu::kern::u32 log_n = 8; log_n <= 17; ++log_n)
        for (bool forward : {true, false}) {
            const int passes = gpu::kern::ntt_passes(log_n);
            kasoku::gpu::kern::u32 covered = 0;
            for (int p = 0; p < passes; ++p) {
                const auto pass = gpu::kern::ntt_pass(log_n, forward, p, passes);
                covered += pass.s1 - pass.s0;
                EXPECT_EQ(pass.groups << (pass.s1 - pass.s0), passes == 1 ? 1u << log_n : gpu::kern::kNttTile);
                EXPECT_LE(pass.groups, (1u << log_n) >> (pass.s1 - pass.s0)) << "more groups per block than per limb";
            }
            EXPECT_EQ(covered, log_n);
        }
}

}  // namespace
