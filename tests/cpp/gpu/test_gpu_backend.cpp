// The GPU backend against the CPU backend, bit for bit, through every kind of CKKS and algo operation
// (seam_check.hpp), over parameter shapes: emulated (the backend's logic with its kernels as CPU loops, on every
// machine) and on CUDA (skipped with the reason where there is no GPU).
#include <gtest/gtest.h>

#include "gpu/backends.hpp"
#include "kasoku/gpu/cuda.hpp"
#include "kasoku/support/error.hpp"
#include "seam_check.hpp"

using namespace kasoku;
using namespace kasoku::ckks;

namespace {

// dnum = number of digits: one prime per digit (4), several (2 digits of 2), alpha 2 below 3 special primes (dnum 2).
struct Shape {
    const char* name;
    Parameters params;
};
const Shape kShapes[] = {
    {"dnum4_k1", test::with_dnum(test::research_params(8, 50, 32, 3, 50, 1), 4)},
    {"dnum2_k2", test::with_dnum(test::research_params(8, 50, 32, 3, 50, 2), 2)},
    {"dnum2_k3", test::with_dnum(test::research_params(8, 50, 32, 3, 50, 3), 2)},
};

void PrintTo(const Shape& s, std::ostream* os) { *os << s.name; }

class GpuBackendShapes : public ::testing::TestWithParam<Shape> {};

TEST_P(GpuBackendShapes, EmulatedGivesTheCpuBits) {
    const auto ctx = test::expect_same_bits_as_cpu(GetParam().params, gpu::make_emulated_gpu_backend);
    EXPECT_STREQ(ctx->backend().name(), "gpu-emulated");
}

TEST_P(GpuBackendShapes, CudaGivesTheCpuBits) {
    const gpu::CudaInfo info = gpu::cuda_info();
    if (!info.available) GTEST_SKIP() << "no CUDA device: " << info.reason;
    const auto ctx = test::expect_same_bits_as_cpu(GetParam().params, gpu::make_cuda_backend);
    EXPECT_STREQ(ctx->backend().name(), "cuda");
}

INSTANTIATE_TEST_SUITE_P(Shapes, GpuBackendShapes, ::testing::ValuesIn(kShapes),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(GpuBackend, CudaFactoryWithoutADeviceIsADeviceError) {
    if (gpu::cuda_info().available) GTEST_SKIP() << "a CUDA device is present";
    EXPECT_THROW(Context::create(test::research_params(8, 50, 32, 2, 50, 1), 1, gpu::make_cuda_backend), kasoku::DeviceError);
}

}  // namespace
