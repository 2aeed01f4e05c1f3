// The CUDA runtime and kernels. Without CUDA or without a device, the API must say so (typed error, reason); on a
// device, every kernel launch must give the bits of its body run by a CPU loop (which test_gpu_bodies compares with
// the CPU backend). The device tests skip with the reason where there is no GPU.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

#include "gpu/bodies.hpp"
#include "gpu/launch.hpp"
#include "kasoku/arith/ntt.hpp"
#include "kasoku/arith/primes.hpp"
#include "kasoku/gpu/cuda.hpp"
#include "kasoku/support/error.hpp"

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
        EXPECT_NE(std::string(e.what()).find(info.compiled ? "no CUDA device" : "without CUDA"), std::string::npos) << e.what();
    }
}

#ifdef KASOKU_HAVE_CUDA

// Device copies of host vectors, freed with the memory.
struct Device {
    std::shared_ptr<const rns::PolyMemory> mem;
    std::vector<std::pair<u64*, std::size_t>> owned;
    ~Device() {
        for (auto& [p, w] : owned) mem->deallocate(p, w);
    }
    template <class T>
    T* put(const std::vector<T>& v) {
        const std::size_t words = (v.size() * sizeof(T) + 7) / 8;
        std::vector<u64> buf(words, 0);
        std::memcpy(buf.data(), v.data(), v.size() * sizeof(T));
        u64* p = mem->allocate(words);
        mem->from_host(buf.data(), words, p);
        owned.emplace_back(p, words);
        return reinterpret_cast<T*>(p);
    }
    std::vector<u64> get(const u64* p, std::size_t words) {
        std::vector<u64> v(words);
        mem->to_host(p, words, v.data());
        return v;
    }
};

class GpuKernels : public ::testing::Test {
protected:
    void SetUp() override {
        const gpu::CudaInfo info = gpu::cuda_info();
        if (!info.available) GTEST_SKIP() << "no CUDA device: " << info.reason;
        dev.mem = gpu::cuda_memory();
    }
    Device dev;
};

TEST_F(GpuKernels, EveryKernelGivesItsBodysBits) {
    std::mt19937_64 rng(7);
    const std::size_t n = 4096;
    std::vector<u64> q;
    for (int b : {60, 40, 40, 50, 61}) q.push_back(arith::generate_ntt_primes(b, 1, n, q)[0]);
    const std::size_t limbs = q.size(), words = limbs * n;
    std::vector<Modulus> m(q.begin(), q.end());
    std::vector<u64> a(words), b(words), c(words), r(limbs), rp(limbs);
    for (std::size_t w = 0; w < words; ++w) {
        a[w] = w % 9 == 0 ? q[w / n] - 1 : rng() % q[w / n];
        b[w] = rng() % q[w / n];
        c[w] = rng() % q[w / n];
    }
    for (std::size_t l = 0; l < limbs; ++l) rp[l] = arith::shoup(r[l] = rng() % q[l], q[l]);
    u64 *da = dev.put(a), *db = dev.put(b), *dc = dev.put(c), *dq = dev.put(q), *dr = dev.put(r), *drp = dev.put(rp);
    Modulus* dm = dev.put(m);
    u64* dout = dev.put(std::vector<u64>(words));
    std::vector<u64> want(words);
    auto expect = [&](const char* what) { ASSERT_EQ(dev.get(dout, words), want) << what; };

    gpu::launch::add(*dev.mem, da, db, dout, dq, n, words);
    for (std::size_t w = 0; w < words; ++w) gpu::body::add(a.data(), b.data(), want.data(), q.data(), n, w);
    expect("add");
    gpu::launch::sub(*dev.mem, da, db, dout, dq, n, words);
    for (std::size_t w = 0; w < words; ++w) gpu::body::sub(a.data(), b.data(), want.data(), q.data(), n, w);
    expect("sub");
    gpu::launch::negate(*dev.mem, da, dout, dq, n, words);
    for (std::size_t w = 0; w < words; ++w) gpu::body::negate(a.data(), want.data(), q.data(), n, w);
    expect("negate");
    gpu::launch::mul(*dev.mem, da, db, dout, dm, n, words);
    for (std::size_t w = 0; w < words; ++w) gpu::body::mul(a.data(), b.data(), want.data(), m.data(), n, w);
    expect("mul");
    gpu::launch::fma(*dev.mem, da, db, dc, dout, dm, n, words);
    for (std::size_t w = 0; w < words; ++w) gpu::body::fma(a.data(), b.data(), c.data(), want.data(), m.data(), n, w);
    expect("fma");
    gpu::launch::mul_constant(*dev.mem, da, dr, drp, dout, dq, n, words);
    for (std::size_t w = 0; w < words; ++w) gpu::body::mul_constant(a.data(), r.data(), rp.data(), want.data(), q.data(), n, w);
    expect("mul_constant");
    // three terms (a, b, c) with constants per term and limb (term-major), below each limb's prime
    std::vector<u64> lc(3 * limbs);
    for (std::size_t t = 0; t < lc.size(); ++t) lc[t] = t == 0 ? q[0] - 1 : rng() % q[t % limbs];
    const u64* host_terms[] = {a.data(), b.data(), c.data()};
    const std::vector<const u64*> dev_terms = {da, db, dc};
    gpu::launch::linear_combination(*dev.mem, dev.put(dev_terms), dev.put(lc), 3, dm, n, limbs, dout);
    for (std::size_t w = 0; w < words; ++w)
        want[w] = gpu::body::linear_combination(host_terms, lc.data(), 3, limbs, m.data(), n, w);
    expect("linear_combination");

    // NTT and INTT of all limbs against arith's transform
    std::vector<u64> w(words), wp(words), iw(words), iwp(words), ninv(limbs), ninvp(limbs);
    for (std::size_t l = 0; l < limbs; ++l) {
        const arith::NttTables t(q[l], n);
        std::copy(t.root_powers(), t.root_powers() + n, w.begin() + l * n);
        std::copy(t.root_shoup(), t.root_shoup() + n, wp.begin() + l * n);
        std::copy(t.inv_root_powers(), t.inv_root_powers() + n, iw.begin() + l * n);
        std::copy(t.inv_root_shoup(), t.inv_root_shoup() + n, iwp.begin() + l * n);
        ninv[l] = t.n_inv();
        ninvp[l] = t.n_inv_shoup();
    }
    want = a;
    for (std::size_t l = 0; l < limbs; ++l) arith::ntt_forward(want.data() + l * n, arith::NttTables(q[l], n));
    dev.mem->copy(da, words, dout);
    gpu::launch::ntt_forward(*dev.mem, dout, dev.put(w), dev.put(wp), dq, n, limbs);
    expect("NTT");
    for (std::size_t l = 0; l < limbs; ++l) arith::ntt_inverse(want.data() + l * n, arith::NttTables(q[l], n));
    gpu::launch::ntt_inverse(*dev.mem, dout, dev.put(iw), dev.put(iwp), dev.put(ninv), dev.put(ninvp), dq, n, limbs);
    expect("INTT");
    ASSERT_EQ(want, a);

    // automorphism (any permutation), base conversion from the first two limbs, inner product over three digits
    std::vector<std::uint32_t> perm(n);
    for (std::size_t k = 0; k < n; ++k) perm[k] = static_cast<std::uint32_t>((k * 5 + 3) % n);
    gpu::launch::permute(*dev.mem, da, dev.put(perm), dout, n, limbs);
    for (std::size_t x = 0; x < words; ++x) gpu::body::permute(a.data(), perm.data(), want.data(), n, x);
    expect("automorphism");

    const std::size_t s = 2, targets = limbs - s;
    std::vector<u64> f(targets * s), qv(targets * (s + 1));
    for (auto& x : f) x = rng() % q.back();
    for (auto& x : qv) x = rng() % q.back();
    std::vector<double> inv_q = {1.0 / static_cast<double>(q[0]), 1.0 / static_cast<double>(q[1])};
    std::vector<std::uint8_t> v(n), vw(n);
    std::uint8_t* dv = dev.put(v);
    gpu::launch::overflow_count(*dev.mem, da, s, n, dev.put(inv_q), dv);
    for (std::size_t x = 0; x < n; ++x) vw[x] = gpu::body::overflow_count(a.data(), s, n, inv_q.data(), x);
    std::vector<u64> vbuf((n + 7) / 8);
    dev.mem->to_host(reinterpret_cast<const u64*>(dv), vbuf.size(), vbuf.data());
    ASSERT_EQ(0, std::memcmp(vbuf.data(), vw.data(), n)) << "overflow count";
    std::vector<Modulus> mt(m.begin() + s, m.end());
    gpu::launch::convert(*dev.mem, da, s, n, dev.put(f), dev.put(mt), targets, dv, dev.put(qv), dout);
    for (std::size_t x = 0; x < targets * n; ++x) {
        const std::size_t t = x / n;
        want[x] = gpu::body::convert(a.data(), s, n, f.data() + t * s, mt[t], x % n, vw.data(), qv.data() + t * (s + 1));
    }
    ASSERT_EQ(dev.get(dout, targets * n), std::vector<u64>(want.begin(), want.begin() + targets * n)) << "base conversion";

    const std::vector<const u64*> digits = {da, db, dc}, keys = {dc, da, db};
    const std::vector<const u64*> hd = {a.data(), b.data(), c.data()}, hk = {c.data(), a.data(), b.data()};
    std::vector<std::uint32_t> key_limb(limbs);
    for (std::size_t l = 0; l < limbs; ++l) key_limb[l] = static_cast<std::uint32_t>(l);
    for (bool accumulate : {false, true}) {
        const std::vector<u64> before = dev.get(dout, words);
        gpu::launch::dot(*dev.mem, dev.put(digits), dev.put(keys), dev.put(key_limb), 3, dm, n, limbs, accumulate, dout);
        for (std::size_t x = 0; x < words; ++x)
            want[x] = gpu::body::dot(hd.data(), x, hk.data(), x, 3, m[x / n], accumulate ? before[x] : 0);
        expect(accumulate ? "inner product, accumulated" : "inner product");
    }
}

#endif  // KASOKU_HAVE_CUDA

}  // namespace

namespace {

// cuda_info's check of the compiled architectures (CMake's CMAKE_CUDA_ARCHITECTURES entries) against a device.
TEST(GpuRuntime, CompiledArchitecturesAgainstTheDevice) {
    using gpu::architecture_mismatch;
    EXPECT_EQ(architecture_mismatch("80,89,90", 9, 0), "");
    EXPECT_EQ(architecture_mismatch("80;89;90", 8, 6), "");      // sm_80 machine code runs on 8.6
    EXPECT_EQ(architecture_mismatch("90", 10, 0), "");           // PTX of compute_90, compiled by the driver
    EXPECT_EQ(architecture_mismatch("native", 7, 5), "");        // CUDA decides
    EXPECT_NE(architecture_mismatch("90-real", 10, 0), "");      // no PTX: machine code of another major version
    EXPECT_NE(architecture_mismatch("90a", 10, 0), "");          // architecture-specific: sm_90 only
    EXPECT_EQ(architecture_mismatch("90a", 9, 0), "");
    const std::string old = architecture_mismatch("80,89,90", 7, 5);
    EXPECT_NE(old.find("80,89,90"), std::string::npos) << old;
    EXPECT_NE(old.find("-DCMAKE_CUDA_ARCHITECTURES=75"), std::string::npos) << old;
    EXPECT_NE(architecture_mismatch("89-virtual", 8, 6), "");    // PTX newer than the device
    EXPECT_EQ(architecture_mismatch("86-virtual", 8, 9), "");
}

}  // namespace
