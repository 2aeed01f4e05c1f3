// The CUDA kernels' bodies (src/kasoku/gpu/bodies.hpp) run here by CPU loops over their grids, against the CPU
// backend's kernels, bit for bit: the device computes with this very code, so these tests cover its arithmetic on
// machines without a GPU. (The launches themselves are tested on a device: tests/cpp/gpu/test_gpu_backend.cpp.)
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "gpu/bodies.hpp"
#include "kasoku/arith/kernels.hpp"
#include "kasoku/arith/ntt.hpp"
#include "kasoku/arith/primes.hpp"
#include "kasoku/arith/simd.hpp"
#include "kasoku/rns/backend.hpp"
#include "kasoku/rns/base_conv.hpp"

using namespace kasoku;
using arith::Modulus;
using arith::u64;

namespace {

struct Limbs {
    std::size_t n;
    std::vector<u64> q;
    std::vector<Modulus> m;
    Limbs(std::size_t n_, const std::vector<int>& bits) : n(n_) {
        for (int b : bits) {
            q.push_back(arith::generate_ntt_primes(b, 1, n, q)[0]);
            m.emplace_back(q.back());
        }
    }
    std::size_t count() const { return q.size(); }
    std::vector<u64> random(std::mt19937_64& rng, bool worst = false) const {
        std::vector<u64> v(count() * n);
        for (std::size_t w = 0; w < v.size(); ++w) v[w] = worst && w % 7 == 0 ? q[w / n] - 1 : rng() % q[w / n];
        return v;
    }
};

const arith::KernelTable& ref() { return arith::kernel_table(arith::SimdLevel::scalar); }

TEST(GpuBodies, ElementwiseMatchScalarKernels) {
    std::mt19937_64 rng(1);
    const Limbs L(1024, {30, 40, 50, 60, 61});
    const std::size_t n = L.n, words = L.count() * n;
    const auto a = L.random(rng, true), b = L.random(rng, true), c = L.random(rng);
    std::vector<u64> r(L.count()), rp(L.count());
    for (std::size_t l = 0; l < L.count(); ++l) {
        r[l] = rng() % L.q[l];
        rp[l] = arith::shoup(r[l], L.q[l]);
    }
    std::vector<u64> got(words), want(words);
    auto check = [&](const char* what, auto body, auto kernel) {
        for (std::size_t w = 0; w < words; ++w) body(w);
        for (std::size_t l = 0; l < L.count(); ++l) kernel(l, want.data() + l * n);
        ASSERT_EQ(got, want) << what;
    };
    check("add", [&](std::size_t w) { gpu::body::add(a.data(), b.data(), got.data(), L.q.data(), n, w); },
          [&](std::size_t l, u64* o) { ref().add(a.data() + l * n, b.data() + l * n, n, L.q[l], o); });
    check("sub", [&](std::size_t w) { gpu::body::sub(a.data(), b.data(), got.data(), L.q.data(), n, w); },
          [&](std::size_t l, u64* o) { ref().sub(a.data() + l * n, b.data() + l * n, n, L.q[l], o); });
    check("negate", [&](std::size_t w) { gpu::body::negate(a.data(), got.data(), L.q.data(), n, w); },
          [&](std::size_t l, u64* o) { ref().negate(a.data() + l * n, n, L.q[l], o); });
    check("mul", [&](std::size_t w) { gpu::body::mul(a.data(), b.data(), got.data(), L.m.data(), n, w); },
          [&](std::size_t l, u64* o) { ref().mul(a.data() + l * n, b.data() + l * n, n, L.m[l], o); });
    check("fma", [&](std::size_t w) { gpu::body::fma(a.data(), b.data(), c.data(), got.data(), L.m.data(), n, w); },
          [&](std::size_t l, u64* o) { ref().fma(a.data() + l * n, b.data() + l * n, c.data() + l * n, n, L.m[l], o); });
    check("mul_constant",
          [&](std::size_t w) { gpu::body::mul_constant(a.data(), r.data(), rp.data(), got.data(), L.q.data(), n, w); },
          [&](std::size_t l, u64* o) { ref().mul_scalar(a.data() + l * n, r[l], rp[l], n, L.q[l], o); });
    // 40 terms (two chunks of the body's 32, five of the kernel's 8): a, b, c in turn, constants per term and limb
    const std::size_t terms = 40;
    std::vector<const u64*> x(terms);
    std::vector<u64> f(terms * L.count());
    for (std::size_t t = 0; t < terms; ++t) {
        x[t] = (t % 3 == 0 ? a : t % 3 == 1 ? b : c).data();
        for (std::size_t l = 0; l < L.count(); ++l) f[t * L.count() + l] = t == 5 ? L.q[l] - 1 : rng() % L.q[l];
    }
    check("linear_combination",
          [&](std::size_t w) { got[w] = gpu::body::linear_combination(x.data(), f.data(), terms, L.count(), L.m.data(), n, w); },
          [&](std::size_t l, u64* o) {
              std::vector<const u64*> xl(terms);
              std::vector<u64> fl(terms);
              for (std::size_t t = 0; t < terms; ++t) {
                  xl[t] = x[t] + l * n;
                  fl[t] = f[t * L.count() + l];
              }
              ref().dot_const(xl.data(), fl.data(), terms, n, L.m[l], o, nullptr, nullptr);
          });
}

// All limbs of a polynomial in one grid per stage, as the kernel launches them.
void ntt_by_bodies(std::vector<u64>& a, const Limbs& L, const std::vector<arith::NttTables>& t, bool forward) {
    const std::size_t n = L.n, limbs = L.count();
    std::vector<u64> w(limbs * n), wp(limbs * n), ninv(limbs), ninvp(limbs);
    for (std::size_t l = 0; l < limbs; ++l) {
        const u64* src = forward ? t[l].root_powers() : t[l].inv_root_powers();
        const u64* srcp = forward ? t[l].root_shoup() : t[l].inv_root_shoup();
        std::copy(src, src + n, w.begin() + l * n);
        std::copy(srcp, srcp + n, wp.begin() + l * n);
        ninv[l] = t[l].n_inv();
        ninvp[l] = t[l].n_inv_shoup();
    }
    if (forward) {
        for (std::size_t m = 1; m < n; m <<= 1)
            for (std::size_t l = 0; l < limbs; ++l)
                for (std::size_t k = 0; k < n / 2; ++k) gpu::body::ntt_forward_butterfly(a.data(), w.data(), wp.data(), L.q.data(), n, m, l, k);
        for (std::size_t x = 0; x < limbs * n; ++x) gpu::body::ntt_forward_finish(a.data(), L.q.data(), n, x);
    } else {
        for (std::size_t m = n / 2; m >= 1; m >>= 1)
            for (std::size_t l = 0; l < limbs; ++l)
                for (std::size_t k = 0; k < n / 2; ++k) gpu::body::ntt_inverse_butterfly(a.data(), w.data(), wp.data(), L.q.data(), n, m, l, k);
        for (std::size_t x = 0; x < limbs * n; ++x) gpu::body::ntt_inverse_finish(a.data(), ninv.data(), ninvp.data(), L.q.data(), n, x);
    }
}

TEST(GpuBodies, NttMatchesScalarKernel) {
    std::mt19937_64 rng(2);
    for (std::size_t n : {8, 1024, 4096}) {
        const Limbs L(n, {30, 40, 47, 50, 60, 61});
        std::vector<arith::NttTables> t;
        for (u64 q : L.q) t.emplace_back(q, n);
        for (bool worst : {false, true}) {
            auto a = L.random(rng, worst), want = a;
            ntt_by_bodies(a, L, t, true);
            for (std::size_t l = 0; l < L.count(); ++l) ref().ntt_forward(want.data() + l * n, t[l]);
            ASSERT_EQ(a, want) << "forward n=" << n;
            ntt_by_bodies(a, L, t, false);
            for (std::size_t l = 0; l < L.count(); ++l) ref().ntt_inverse(want.data() + l * n, t[l]);
            ASSERT_EQ(a, want) << "inverse n=" << n;
        }
    }
}

TEST(GpuBodies, DotMatchesDotKernel) {
    std::mt19937_64 rng(3);
    for (int bits : {40, 60, 61}) {
        const Limbs L(256, std::vector<int>(1, bits));
        const std::size_t n = L.n;
        for (std::size_t digits : {1, 3, 5, 33}) {
            std::vector<u64> d(digits * n), k(digits * n), acc(n);
            for (auto* v : {&d, &k})
                for (std::size_t i = 0; i < v->size(); ++i) (*v)[i] = i % 5 == 0 ? L.q[0] - 1 : rng() % L.q[0];
            for (auto& x : acc) x = rng() % L.q[0];
            std::vector<const u64*> dp(digits), kp(digits);
            for (std::size_t j = 0; j < digits; ++j) {
                dp[j] = d.data() + j * n;
                kp[j] = k.data() + j * n;
            }
            for (bool accumulate : {false, true}) {
                std::vector<u64> want = acc, got(n);
                ref().dot(dp.data(), kp.data(), digits, n, L.m[0], want.data(), accumulate);
                for (std::size_t c = 0; c < n; ++c)
                    got[c] = gpu::body::dot(dp.data(), c, kp.data(), c, digits, L.m[0], accumulate ? acc[c] : 0);
                ASSERT_EQ(got, want) << "bits=" << bits << " digits=" << digits << " accumulate=" << accumulate;
            }
        }
    }
}

TEST(GpuBodies, BaseConversionMatchesConverter) {
    std::mt19937_64 rng(4);
    const std::size_t n = 512;
    const Limbs src(n, {60, 60, 60, 60, 60, 60, 60}), dst(n, {40, 40, 40, 50, 61});
    const rns::BaseConverter conv(src.m, dst.m);
    const std::size_t s = src.count();
    auto y = src.random(rng, true);
    std::vector<const u64*> yp(s);
    std::vector<u64*> ypm(s);
    for (std::size_t i = 0; i < s; ++i) ypm[i] = const_cast<u64*>(yp[i] = y.data() + i * n);
    conv.scale_source(yp.data(), n, ypm.data());
    std::vector<std::uint8_t> v(n), vb(n);
    conv.overflow_count(yp.data(), n, v.data());
    for (std::size_t c = 0; c < n; ++c) vb[c] = gpu::body::overflow_count(y.data(), s, n, conv.inverse_primes().data(), c);
    ASSERT_EQ(vb, v);
    for (bool exact : {false, true})
        for (std::size_t t = 0; t < dst.count(); ++t) {
            std::vector<u64> want(n), got(n);
            conv.convert_to(t, yp.data(), n, want.data(), exact ? v.data() : nullptr);
            for (std::size_t c = 0; c < n; ++c)
                got[c] = gpu::body::convert(y.data(), s, n, conv.factors().data() + t * s, dst.m[t], c, exact ? vb.data() : nullptr,
                                            conv.q_multiples().data() + t * (s + 1));
            ASSERT_EQ(got, want) << "target " << t << " exact=" << exact;
        }
}

// The bodies composed into a whole ModDown with an addend and an automorphism, as the GPU backend composes its
// kernels, against the CPU backend's fused pipeline.
TEST(GpuBodies, ComposeModDownLikeTheCpuBackend) {
    std::mt19937_64 rng(5);
    const std::size_t n = 1024;
    const Limbs all(n, {60, 40, 40, 40, 40, 60, 60});  // q0..q4, p0, p1
    const std::size_t nq = 5, np = 2;
    auto ring = std::make_shared<const rns::RnsContext>(
        n, std::vector<u64>(all.q.begin(), all.q.begin() + nq), std::vector<u64>(all.q.begin() + nq, all.q.end()), 2);
    auto be = rns::make_cpu_backend(ring);
    const auto a_host = all.random(rng, true);
    std::vector<u64> add_host(nq * n);
    for (std::size_t w = 0; w < add_host.size(); ++w) add_host[w] = rng() % all.q[w / n];
    rns::RnsPoly a = be->poly(nq, np, true), addend = be->poly(nq, 0, true), out;
    be->upload(a, [&](std::size_t l, u64* dst) { std::copy(a_host.begin() + l * n, a_host.begin() + (l + 1) * n, dst); });
    be->upload(addend, [&](std::size_t l, u64* dst) { std::copy(add_host.begin() + l * n, add_host.begin() + (l + 1) * n, dst); });
    const u64 g = 5;
    be->mod_down(a, &addend, g, out, 1);
    std::vector<u64> want(nq * n);
    be->download(out, [&](const u64* const* limbs) {
        for (std::size_t l = 0; l < nq; ++l) std::copy(limbs[l], limbs[l] + n, want.begin() + l * n);
    });

    // P limbs to coefficient form (bodies), scale, overflow count, convert to each q, NTT (bodies), combine, permute.
    const Limbs P(n, {}), Q(n, {});
    std::vector<arith::NttTables> tp, tq;
    Limbs p_limbs = P, q_limbs = Q;
    for (std::size_t j = 0; j < np; ++j) {
        p_limbs.q.push_back(all.q[nq + j]);
        p_limbs.m.push_back(all.m[nq + j]);
        tp.emplace_back(all.q[nq + j], n);
    }
    for (std::size_t i = 0; i < nq; ++i) {
        q_limbs.q.push_back(all.q[i]);
        q_limbs.m.push_back(all.m[i]);
        tq.emplace_back(all.q[i], n);
    }
    std::vector<u64> y(a_host.begin() + nq * n, a_host.end());
    ntt_by_bodies(y, p_limbs, tp, false);
    const rns::BaseConverter conv(p_limbs.m, q_limbs.m);
    for (std::size_t w = 0; w < y.size(); ++w) {
        const std::size_t j = w / n;
        y[w] = arith::mul_shoup(y[w], conv.source_inverses()[j], conv.source_inverses_shoup()[j], p_limbs.q[j]);
    }
    std::vector<std::uint8_t> v(n);
    for (std::size_t c = 0; c < n; ++c) v[c] = gpu::body::overflow_count(y.data(), np, n, conv.inverse_primes().data(), c);
    std::vector<u64> t(nq * n);
    for (std::size_t w = 0; w < t.size(); ++w) {
        const std::size_t i = w / n, c = w % n;
        t[w] = gpu::body::convert(y.data(), np, n, conv.factors().data() + i * np, q_limbs.m[i], c, v.data(),
                                  conv.q_multiples().data() + i * (np + 1));
    }
    ntt_by_bodies(t, q_limbs, tq, true);
    std::vector<u64> combined(nq * n), got(nq * n);
    for (std::size_t w = 0; w < combined.size(); ++w) {
        const std::size_t i = w / n;
        u64 p_mod = 1;
        for (std::size_t j = 0; j < np; ++j) p_mod = arith::mul_mod(p_mod, p_limbs.q[j] % q_limbs.q[i], q_limbs.m[i]);
        const u64 inv = arith::inv_mod(p_mod, q_limbs.m[i]);
        combined[w] = gpu::body::divide_exact_word(a_host[w], t[w], inv, arith::shoup(inv, q_limbs.q[i]), q_limbs.q[i], add_host.data(), w);
    }
    const auto perm = ring->automorphism_permutation(g);
    for (std::size_t w = 0; w < got.size(); ++w) gpu::body::permute(combined.data(), perm->data(), got.data(), n, w);
    ASSERT_EQ(got, want);
}

}  // namespace
