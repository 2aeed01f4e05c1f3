// The GPU backend against the CPU backend, bit for bit, through every kind of CKKS and algo operation
// (seam_check.hpp), over parameter shapes: emulated (the backend's logic with its kernels as CPU loops, on every
// machine) and on CUDA (skipped with the reason where there is no GPU).
#include <gtest/gtest.h>

#include "gpu/backends.hpp"
#include "gpu/counters.hpp"
#include "kasoku/algo/bootstrap.hpp"
#include "kasoku/gpu/cuda.hpp"
#include "kasoku/support/error.hpp"
#include "seam_check.hpp"

using namespace kasoku;
using namespace kasoku::ckks;

namespace {

// dnum = number of digits: one prime per digit (4), several (2 digits of 2), alpha 2 below 3 special primes (dnum 2);
// N = 2^8, and 2^13 and 2^14 where the NTT takes two passes over shared memory and the conversions of key switching
// run between them (kern::ModUpColumns, kern::ModDownColumns).
struct Shape {
    const char* name;
    Parameters params;
};
const Shape kShapes[] = {
    {"dnum4_k1", test::with_dnum(test::research_params(8, 50, 32, 3, 50, 1), 4)},
    {"dnum2_k2", test::with_dnum(test::research_params(8, 50, 32, 3, 50, 2), 2)},
    {"dnum2_k3", test::with_dnum(test::research_params(8, 50, 32, 3, 50, 3), 2)},
    {"n8192_dnum2_k2", test::with_dnum(test::research_params(13, 60, 40, 3, 60, 2), 2)},  // the NTT in two passes
    // an even split, and more targets than a fused conversion's tiles hold at once (kern::fused_rounds: 2 and 2)
    {"n16384_dnum3_k4", test::with_dnum(test::research_params(14, 60, 40, 11, 60, 4), 3)},
    {"n65536_dnum3_k4", test::with_dnum(test::research_params(16, 60, 40, 11, 60, 4), 3)},  // H16's tiles
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

// A whole bootstrap (ModRaise, transforms, polynomials: algo and ckks only) gives the CPU backend's bytes: full slots,
// and sparse slots with the arcsine correction and SlotToCoeff first (the trace, the final scaling).
void expect_same_bootstrap(const rns::BackendFactory& factory) {
    // Bootstrapping levels of their own and sparse-secret encapsulation (every bootstrapping operation).
    Parameters p = test::research_params(10, 60, 40, 2, 60, 3);
    p.boot_levels = 15;
    p.boot_bits = 55;
    p.boot_secret_weight = 32;
    const algo::BootstrapConfig configs[] = {{}, {.slots = 16, .arcsine_degree = 3, .slot_to_coeff_first = true}};
    std::vector<std::uint64_t> elements;
    for (const auto& cfg : configs)
        for (std::uint64_t g : algo::Bootstrapper::galois_elements(*Context::create(p, 1), cfg)) elements.push_back(g);
    test::Env cpu(p, {}, elements, 7, 1);
    EvaluationKeys keys = *cpu.ek;
    KeyGenerator(cpu.ctx).encapsulation_keys(cpu.sk, keys);
    auto ctx = Context::create(p, 1, factory);
    const auto ek =
        std::make_shared<const EvaluationKeys>(test::moved(*cpu.ctx, *ctx, keys, test::load_evaluation_keys));
    const Evaluator ev(cpu.ctx, std::make_shared<const EvaluationKeys>(std::move(keys)));
    for (const auto& cfg : configs) {
        const algo::Bootstrapper boot(cpu.ctx, cfg), boot2(ctx, cfg);
        const int level = boot.input_level();
        const Ciphertext a =
            cpu.encryptor.encrypt(cpu.enc.encode(cpu.random(true), cpu.ctx->scale_at(level), level), cpu.pk);
        const Ciphertext a2 = test::moved(*cpu.ctx, *ctx, a, deserialize_ciphertext);
        const Ciphertext out = boot.bootstrap(ev, a);
        const Ciphertext out2 = boot2.bootstrap(Evaluator(ctx, ek), a2);
        EXPECT_EQ(out.level(), ctx->user_level());
        EXPECT_EQ(serialize(*cpu.ctx, out), serialize(*ctx, out2))
            << "bootstrap on " << ctx->backend().name() << ", " << boot.slots() << " slots";
    }
}

TEST(GpuBackend, EmulatedBootstrapGivesTheCpuBits) { expect_same_bootstrap(gpu::make_emulated_gpu_backend); }

TEST(GpuBackend, CudaBootstrapGivesTheCpuBits) {
    const gpu::CudaInfo info = gpu::cuda_info();
    if (!info.available) GTEST_SKIP() << "no CUDA device: " << info.reason;
    expect_same_bootstrap(gpu::make_cuda_backend);
}

INSTANTIATE_TEST_SUITE_P(Shapes, GpuBackendShapes, ::testing::ValuesIn(kShapes),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(GpuBackend, CudaFactoryWithoutADeviceIsADeviceError) {
    if (gpu::cuda_info().available) GTEST_SKIP() << "a CUDA device is present";
    EXPECT_THROW(Context::create(test::research_params(8, 50, 32, 2, 50, 1), 1, gpu::make_cuda_backend),
                 kasoku::DeviceError);
}

}  // namespace

namespace {

// Batches (the *_many operations) are recorded and issued as one launch sequence: each element equals the CPU's single
// operation bit for bit, a batch of five takes the launches of one operation, elements at different levels (launch
// sequences that differ) still give their bits, and reading device memory back inside a batch is refused.
TEST(GpuBackend, EmulatedBatchesAreOneLaunchSequenceWithTheCpuBits) {
    const Parameters p = test::with_dnum(test::research_params(8, 50, 32, 3, 50, 2), 2);
    test::Env cpu(p, {3}, {}, 11, 1);
    auto ctx = Context::create(p, 1, gpu::make_emulated_gpu_backend);
    const auto ek =
        std::make_shared<const EvaluationKeys>(test::moved(*cpu.ctx, *ctx, *cpu.ek, test::load_evaluation_keys));
    const Evaluator ev(ctx, ek);
    const std::size_t count = 5;
    std::vector<Ciphertext> a, b, a2, b2;
    std::vector<test::cvec> values;
    for (std::size_t i = 0; i < count; ++i) {
        a.push_back(cpu.encrypt(cpu.random(true)));
        b.push_back(cpu.encrypt(cpu.random(true)));
        values.push_back(cpu.random());
        a2.push_back(test::moved(*cpu.ctx, *ctx, a.back(), deserialize_ciphertext));
        b2.push_back(test::moved(*cpu.ctx, *ctx, b.back(), deserialize_ciphertext));
    }
    const auto A = Evaluator::batch(a2), B = Evaluator::batch(b2);
    auto same = [&](const std::vector<Ciphertext>& got, auto single, const char* what) {
        ASSERT_EQ(got.size(), count) << what;
        for (std::size_t i = 0; i < count; ++i)
            EXPECT_EQ(serialize(*ctx, got[i]), serialize(*cpu.ctx, single(i))) << what << " element " << i;
    };
    same(
        ev.add_many(A, B), [&](std::size_t i) { return cpu.ev.add(a[i], b[i]); }, "add_many");
    same(
        ev.multiply_many(A, B), [&](std::size_t i) { return cpu.ev.multiply(a[i], b[i]); }, "multiply_many");
    const auto tensors = ev.tensor_many(A, B);
    same(
        ev.relinearize_many(Evaluator::batch(tensors)),
        [&](std::size_t i) { return cpu.ev.relinearize(cpu.ev.tensor(a[i], b[i])); }, "tensor_many, relinearize_many");
    same(
        ev.rescale_many(A), [&](std::size_t i) { return cpu.ev.rescale(a[i]); }, "rescale_many");
    same(
        ev.rotate_many(A, 3), [&](std::size_t i) { return cpu.ev.rotate(a[i], 3); }, "rotate_many");
    same(
        ev.multiply_plain_many(A, values), [&](std::size_t i) { return cpu.ev.multiply_plain(a[i], values[i]); },
        "multiply_plain_many");

    auto launches = [](const std::function<void()>& f) {
        f();
        gpu::CountScope scope;
        f();
        return scope.counts().launches;
    };
    EXPECT_EQ(launches([&] { ev.multiply_many(A, B); }), launches([&] { ev.multiply(a2[0], b2[0]); }));
    EXPECT_EQ(launches([&] { ev.rotate_many(A, 3); }), launches([&] { ev.rotate(a2[0], 3); }));

    // one element a level lower: its launches differ from the others', and every element keeps its bits
    std::vector<Ciphertext> mixed = a2;
    mixed[2] = ev.drop_level(a2[2], 1);
    const Ciphertext low = cpu.ev.drop_level(a[2], 1);
    same(
        ev.multiply_many(Evaluator::batch(mixed), B),
        [&](std::size_t i) { return i == 2 ? cpu.ev.multiply(low, b[i]) : cpu.ev.multiply(a[i], b[i]); },
        "multiply_many at two levels");

    int refused = 0;
    ctx->backend().for_each(2, 1, [&](std::size_t i, Exec) {
        try {
            ctx->backend().download(a2[i].polys[0], [](const rns::u64* const*) {});
        } catch (const InternalError&) {
            ++refused;
        }
    });
    EXPECT_EQ(refused, 2) << "a batch read device memory back";
}

// Host memory whose transfers to the device fail from the `fail_at`-th on (as a device that runs out or goes away),
// counting the words allocated and not yet released.
class FailingMemory final : public rns::PolyMemory {
public:
    explicit FailingMemory(int fail_at) : fail_at_(fail_at) {}
    bool host_accessible() const override { return true; }
    std::uint64_t* allocate(std::size_t words) const override {
        live_ += static_cast<long>(words);
        return new std::uint64_t[words];
    }
    void deallocate(std::uint64_t* p, std::size_t words) const noexcept override {
        live_ -= static_cast<long>(words);
        delete[] p;
    }
    void copy(const std::uint64_t* src, std::size_t words, std::uint64_t* dst) const override {
        std::copy_n(src, words, dst);
    }
    void zero(std::uint64_t* p, std::size_t words) const override { std::fill_n(p, words, 0); }
    void wipe(std::uint64_t* p, std::size_t words) const noexcept override { std::fill_n(p, words, 0); }
    bool equal(const std::uint64_t* a, const std::uint64_t* b, std::size_t words) const override {
        return std::equal(a, a + words, b);
    }
    void to_host(const std::uint64_t* src, std::size_t words, std::uint64_t* dst) const override {
        copy(src, words, dst);
    }
    void from_host(const std::uint64_t* src, std::size_t words, std::uint64_t* dst) const override {
        if (++transfers_ >= fail_at_) throw DeviceError("out of device memory (a test's failing memory)");
        copy(src, words, dst);
    }
    long live() const { return live_; }

private:
    int fail_at_;
    mutable int transfers_ = 0;
    mutable long live_ = 0;
};

// A device failure while the backend uploads its tables raises DeviceError and leaks no device memory.
TEST(GpuBackend, ADeviceFailureWhileUploadingTheTablesLeaksNothing) {
    const auto ctx = Context::create(test::research_params(8, 50, 32, 3, 50, 2), 1);
    for (int fail_at : {1, 2, 7, 30}) {
        const auto mem = std::make_shared<FailingMemory>(fail_at);
        EXPECT_THROW(gpu::make_emulated_gpu_backend_over(ctx->backend().ring_ptr(), mem), DeviceError)
            << "failing at transfer " << fail_at;
        EXPECT_EQ(mem->live(), 0) << "words left allocated after a failure at transfer " << fail_at;
    }
    const auto mem = std::make_shared<FailingMemory>(1 << 30);
    {
        const auto backend = gpu::make_emulated_gpu_backend_over(ctx->backend().ring_ptr(), mem);
        EXPECT_GT(mem->live(), 0);
    }
    EXPECT_EQ(mem->live(), 0);
}

}  // namespace
