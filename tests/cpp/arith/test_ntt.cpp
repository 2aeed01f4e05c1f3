// NTT against the schoolbook negacyclic convolution.
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "kasoku/arith/kernels.hpp"
#include "kasoku/arith/ntt.hpp"
#include "kasoku/arith/primes.hpp"
#include "kasoku/arith/simd.hpp"
#include "kasoku/support/error.hpp"

using namespace kasoku::arith;

namespace {
std::vector<u64> schoolbook(const std::vector<u64>& a, const std::vector<u64>& b, const Modulus& m) {
    const size_t n = a.size();
    const u64 q = m.value;
    std::vector<u64> r(n, 0);
    for (size_t i = 0; i < n; ++i)
        for (size_t j = 0; j < n; ++j) {
            u64 p = mul_mod(a[i], b[j], m);
            size_t k = i + j;
            if (k < n) r[k] = add_mod(r[k], p, q);
            else r[k - n] = sub_mod(r[k - n], p, q);  // X^n = -1
        }
    return r;
}
}  // namespace

class NttConvolution : public ::testing::TestWithParam<std::tuple<int, int, int>> {};

TEST_P(NttConvolution, MatchesSchoolbook) {
    auto [log_n, bits, simd] = GetParam();
    const SimdLevel level = static_cast<SimdLevel>(simd);
    if (!simd_compiled(level) || !simd_cpu_supports(level)) GTEST_SKIP() << simd_name(level) << " not runnable here";
    const KernelTable& k = kernel_table(level);
    const size_t n = size_t{1} << log_n;
    const NttTables t(generate_ntt_primes(bits, 1, n)[0], n);
    const Modulus& m = t.modulus();
    std::mt19937_64 rng(log_n * 100 + bits);
    for (int trial = 0; trial < 3; ++trial) {
        std::vector<u64> a(n), b(n);
        for (size_t i = 0; i < n; ++i) {
            // trial 0: worst case (all q-1); others random
            a[i] = trial == 0 ? m.value - 1 : rng() % m.value;
            b[i] = trial == 0 ? m.value - 1 : rng() % m.value;
        }
        auto expect = schoolbook(a, b, m);
        auto fa = a, fb = b;
        k.ntt_forward(fa.data(), t);
        k.ntt_forward(fb.data(), t);
        for (size_t i = 0; i < n; ++i) ASSERT_LT(fa[i], m.value);
        std::vector<u64> fc(n);
        k.mul(fa.data(), fb.data(), n, m, fc.data());
        k.ntt_inverse(fc.data(), t);
        ASSERT_EQ(fc, expect) << "log_n=" << log_n << " bits=" << bits << " body=" << k.name;
        k.ntt_inverse(fa.data(), t);
        ASSERT_EQ(fa, a) << "round trip";
    }
}

INSTANTIATE_TEST_SUITE_P(Sizes, NttConvolution,
                         ::testing::Combine(::testing::Values(2, 3, 4, 5, 8, 10),
                                            ::testing::Values(30, 45, 49, 50, 59, 60, 61),
                                            ::testing::Values(0, 1, 2, 3)));

// The SIMD bodies' transform with a subring's tables gives the scalar prefix transform's words (a(X^(n/m)) from its m
// coefficients), and their inverse undoes it.
TEST(Ntt, SubringTablesGiveThePrefixTransform) {
    const size_t n = 4096;
    for (int bits : {40, 50, 60}) {
        const NttTables t(generate_ntt_primes(bits, 1, n)[0], n);
        const Modulus& mod = t.modulus();
        std::mt19937_64 rng(static_cast<u64>(bits));
        for (size_t m : {16, 32, 256, 2048, 4096}) {
            const NttTables sub = t.subring(m);
            ASSERT_EQ(sub.n(), m);
            ASSERT_EQ(sub.psi(), pow_mod(t.psi(), n / m, mod));
            std::vector<u64> a(m);
            for (auto& x : a) x = rng() % mod.value;
            a[0] = mod.value - 1;
            auto want = a;
            ntt_forward_prefix(want.data(), m, t);
            for (int simd = 0; simd < 4; ++simd) {
                const SimdLevel level = static_cast<SimdLevel>(simd);
                if (!simd_compiled(level) || !simd_cpu_supports(level)) continue;
                const KernelTable& k = kernel_table(level);
                auto got = a;
                k.ntt_forward(got.data(), sub);
                ASSERT_EQ(got, want) << "bits=" << bits << " m=" << m << " body=" << k.name;
                k.ntt_inverse(got.data(), sub);
                ASSERT_EQ(got, a) << "round trip, bits=" << bits << " m=" << m << " body=" << k.name;
            }
        }
    }
    const NttTables t(generate_ntt_primes(40, 1, 64)[0], 64);
    for (size_t m : {0, 1, 3, 48, 128}) EXPECT_THROW(t.subring(m), kasoku::ParameterError) << m;
}

TEST(Ntt, ForwardEvaluatesAtOddPowersOfPsi) {
    // NTT(X)[k] must be psi^e for an odd e, and the map k -> e a bijection onto the odd residues.
    const size_t n = 64;
    const NttTables t(generate_ntt_primes(40, 1, n)[0], n);
    std::vector<u64> x(n, 0);
    x[1] = 1;
    ntt_forward(x.data(), t);
    std::vector<int> seen(2 * n, 0);
    for (size_t k = 0; k < n; ++k) {
        u64 p = 1;
        int e = -1;
        for (size_t j = 0; j < 2 * n; ++j) {
            if (p == x[k]) {
                e = static_cast<int>(j);
                break;
            }
            p = mul_mod(p, t.psi(), t.modulus());
        }
        ASSERT_EQ(e % 2, 1);
        seen[e]++;
    }
    for (size_t j = 1; j < 2 * n; j += 2) EXPECT_EQ(seen[j], 1);
}

TEST(Ntt, SmallStagesSplit) {
    // Each twiddle of the three last forward (first inverse) stages is its block's twiddle times its lane's factor.
    for (size_t n : {16, 64, 4096, 65536})
        for (int bits : {40, 50, 60}) {
            const NttTables t(generate_ntt_primes(bits, 1, n)[0], n);
            const Modulus& m = t.modulus();
            for (bool inverse : {false, true})
                for (size_t gap : {1, 2, 4}) {
                    const NttTables::SplitStage s = t.split_stage(gap, inverse);
                    const u64* r = inverse ? t.inv_root_powers() : t.root_powers();
                    const size_t first = n / (2 * gap), per = 8 / gap;
                    for (size_t c = 0; c < n / 16; ++c) {
                        const u64 block = r[first + per * c];
                        ASSERT_EQ(s.block_shoup[c], shoup(block, m.value));
                        for (size_t j = 0; j < per; ++j)
                            ASSERT_EQ(mul_mod(block, s.lane[j], m), r[first + per * c + j])
                                << "n=" << n << " bits=" << bits << " inverse=" << inverse << " gap=" << gap
                                << " c=" << c << " j=" << j;
                    }
                    for (size_t j = 0; j < per; ++j) EXPECT_EQ(s.lane_shoup[j], shoup(s.lane[j], m.value));
                }
        }
    const NttTables t(generate_ntt_primes(40, 1, 64)[0], 64);
    EXPECT_THROW(t.split_stage(8, false), kasoku::ParameterError);
    EXPECT_THROW(NttTables(generate_ntt_primes(40, 1, 8)[0], 8).split_stage(1, false), kasoku::ParameterError);
}
