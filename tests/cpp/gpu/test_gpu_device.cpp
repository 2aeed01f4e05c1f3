// The CUDA runtime and kernels. Without CUDA or without a device, the API must say so (typed error, reason); on a
// device, every kernel must give the CPU's bits (kernel_cases.hpp, the cases test_gpu_bodies runs on the host). The
// device tests skip with the reason where there is no GPU.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

#include "gpu/launch.hpp"
#include "kasoku/gpu/cuda.hpp"
#include "kasoku/support/error.hpp"
#include "kernel_cases.hpp"

using namespace kasoku;
using arith::Modulus;
using arith::u64;

namespace {

TEST(GpuRuntime, InfoAndMemorySaySoWithoutADevice) {
    const gpu::CudaInfo info = gpu::cuda_info();
#ifdef KASOKU_HAVE_CUDA
    EXPECT_TRUE(info.compiled);
    EXPECT_GT(info.runtime_version, 0);
#else
    EXPECT_FALSE(info.compiled);
#endif
    if (info.available) {
        EXPECT_GE(info.devices, 1);
        EXPECT_FALSE(info.name.empty());
        EXPECT_GT(info.memory_bytes, 0u);
        EXPECT_THROW(gpu::cuda_memory(info.devices), DeviceError);  // one past the last device
        return;
    }
    EXPECT_FALSE(info.reason.empty());
    try {
        gpu::cuda_memory();
        FAIL() << "cuda_memory() without a device must throw";
    } catch (const DeviceError& e) {
        EXPECT_NE(std::string(e.what()).find(info.compiled ? "no CUDA device" : "without CUDA"), std::string::npos)
            << e.what();
    }
}

#ifdef KASOKU_HAVE_CUDA

// The kernels on the device: buffers in CUDA memory, each kernel issued as the CUDA backend issues it.
class DeviceSpace {
public:
    explicit DeviceSpace(std::shared_ptr<const rns::PolyMemory> mem) : mem_(std::move(mem)) {}
    ~DeviceSpace() {
        for (auto& [p, w] : owned_) mem_->deallocate(p, w);
    }
    template <class T>
    T* put(const std::vector<T>& v) {
        const std::size_t words = (v.size() * sizeof(T) + 7) / 8 + 1;
        std::vector<u64> buf(words, 0);
        std::memcpy(buf.data(), v.data(), v.size() * sizeof(T));
        u64* p = mem_->allocate(words);
        owned_.emplace_back(p, words);
        mem_->from_host(buf.data(), words, p);
        return reinterpret_cast<T*>(p);
    }
    std::vector<u64> get(const u64* p, std::size_t words) {
        std::vector<u64> v(words);
        mem_->to_host(p, words, v.data());
        return v;
    }
    template <class K>
    void run(const typename K::Shared& s, const std::vector<typename K::Item>& items) {
        gpu::launch::issue<K>(*mem_, s, items.data(), items.size());
    }

private:
    std::shared_ptr<const rns::PolyMemory> mem_;
    std::vector<std::pair<u64*, std::size_t>> owned_;
};

class GpuKernels : public ::testing::TestWithParam<std::size_t> {
protected:
    void SetUp() override {
        const gpu::CudaInfo info = gpu::cuda_info();
        if (!info.available) GTEST_SKIP() << "no CUDA device: " << info.reason;
        sp = std::make_unique<DeviceSpace>(gpu::cuda_memory());
    }
    std::unique_ptr<DeviceSpace> sp;
};

// Every kernel on the device against the CPU's arithmetic (the cases test_gpu_bodies runs on the host).
TEST_P(GpuKernels, ElementwiseAndTensor) { gpu::test::check_elementwise(*sp, GetParam()); }
TEST_P(GpuKernels, NttPassesAndTheirEpilogues) { gpu::test::check_ntt(*sp, GetParam()); }
TEST_P(GpuKernels, Conversions) { gpu::test::check_conversions(*sp, GetParam()); }
TEST_P(GpuKernels, InnerProductsRoundingAndSums) { gpu::test::check_products(*sp, GetParam()); }

INSTANTIATE_TEST_SUITE_P(N, GpuKernels, ::testing::Values(256, 4096, 8192, 65536),
                         [](const auto& info) { return "n" + std::to_string(info.param); });

#endif  // KASOKU_HAVE_CUDA

}  // namespace

namespace {

// cuda_info's check of the compiled architectures (CMake's CMAKE_CUDA_ARCHITECTURES entries) against a device.
TEST(GpuRuntime, CompiledArchitecturesAgainstTheDevice) {
    using gpu::architecture_mismatch;
    EXPECT_EQ(architecture_mismatch("80,89,90", 9, 0), "");
    EXPECT_EQ(architecture_mismatch("80;89;90", 8, 6), "");  // sm_80 machine code runs on 8.6
    EXPECT_EQ(architecture_mismatch("90", 10, 0), "");       // PTX of compute_90, compiled by the driver
    EXPECT_EQ(architecture_mismatch("native", 7, 5), "");    // CUDA decides
    EXPECT_NE(architecture_mismatch("90-real", 10, 0), "");  // no PTX: machine code of another major version
    EXPECT_NE(architecture_mismatch("90a", 10, 0), "");      // architecture-specific: sm_90 only
    EXPECT_EQ(architecture_mismatch("90a", 9, 0), "");
    const std::string old = architecture_mismatch("80,89,90", 7, 5);
    EXPECT_NE(old.find("80,89,90"), std::string::npos) << old;
    EXPECT_NE(old.find("-DCMAKE_CUDA_ARCHITECTURES=75"), std::string::npos) << old;
    EXPECT_NE(architecture_mismatch("89-virtual", 8, 6), "");  // PTX newer than the device
    EXPECT_EQ(architecture_mismatch("86-virtual", 8, 9), "");
}

}  // namespace
