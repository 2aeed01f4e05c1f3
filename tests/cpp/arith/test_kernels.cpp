// Every SIMD body the build has is compared bit for bit with the scalar reference; the AVX-512 bodies are
// also compiled against SIMDe into this test, so they are checked on machines without AVX-512 too.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <utility>
#include <vector>

#include "kasoku/arith/kernels.hpp"
#include "kasoku/arith/ntt.hpp"
#include "kasoku/arith/primes.hpp"
#include "kasoku/arith/simd.hpp"
#include "kasoku/support/aligned.hpp"
#include "kasoku/support/error.hpp"
#include "kernels_internal.hpp"

using namespace kasoku::arith;

namespace {
std::vector<const KernelTable*> bodies_under_test() {
    std::vector<const KernelTable*> out;
    for (SimdLevel l : {SimdLevel::avx2, SimdLevel::avx512, SimdLevel::ifma}) {
        if (!simd_compiled(l)) {
            std::printf("[  SKIP    ] native body %s: not compiled in\n", simd_name(l));
            continue;
        }
        if (!simd_cpu_supports(l)) {
            std::printf("[  SKIP    ] native body %s: this CPU cannot run it\n", simd_name(l));
            continue;
        }
        out.push_back(&kernel_table(l));
    }
    out.push_back(&kasoku::arith::detail::emulated::kAvx512Kernels);
    out.push_back(&kasoku::arith::detail::emulated::kIfmaKernels);
    return out;
}

// Random residues with planted worst cases (0, 1, q-1, q-2) at the vector's ends and inside.
std::vector<u64> residues(std::mt19937_64& rng, size_t n, u64 q) {
    std::vector<u64> v(n);
    for (auto& x : v) x = rng() % q;
    const u64 planted[] = {0, 1, q - 1, q - 2, q / 2, (q + 1) / 2};
    for (size_t i = 0; i < std::size(planted) && i < n; ++i) {
        v[i] = planted[i];
        v[n - 1 - i] = planted[(i + 2) % std::size(planted)];
    }
    return v;
}
}  // namespace

TEST(Kernels, EveryBodyMatchesScalar) {
    const KernelTable& ref = kernel_table(SimdLevel::scalar);
    std::mt19937_64 rng(7);
    for (const KernelTable* body : bodies_under_test()) {
        const KernelTable& k = *body;
        for (int bits : {30, 36, 45, 47, 48, 49, 50, 51, 55, 60, 61}) {  // up to 50: the AVX2 double-precision paths
            const u64 q = generate_ntt_primes(bits, 1, 1024)[0];
            const Modulus m(q);
            // odd lengths exercise the scalar tails; 32771 words (aligned output) the streaming stores
            for (size_t n : {1, 3, 4, 7, 64, 1027, 32771}) {
                auto a = residues(rng, n, q), b = residues(rng, n, q), c = residues(rng, n, q);
                kasoku::AlignedWords r1(n), r2(n);
                const u64 w = rng() % q, wp = shoup(w, q);
#define KASOKU_CHECK(call_ref, call_simd) \
    call_ref;                             \
    call_simd;                            \
    ASSERT_EQ(r1, r2) << #call_simd << " body=" << k.name << " bits=" << bits << " n=" << n;
                KASOKU_CHECK(ref.add(a.data(), b.data(), n, q, r1.data()), k.add(a.data(), b.data(), n, q, r2.data()))
                KASOKU_CHECK(ref.sub(a.data(), b.data(), n, q, r1.data()), k.sub(a.data(), b.data(), n, q, r2.data()))
                KASOKU_CHECK(ref.negate(a.data(), n, q, r1.data()), k.negate(a.data(), n, q, r2.data()))
                KASOKU_CHECK(ref.mul(a.data(), b.data(), n, m, r1.data()), k.mul(a.data(), b.data(), n, m, r2.data()))
                KASOKU_CHECK(ref.mul_scalar(a.data(), w, wp, n, q, r1.data()),
                             k.mul_scalar(a.data(), w, wp, n, q, r2.data()))
                KASOKU_CHECK(ref.fma(a.data(), b.data(), c.data(), n, m, r1.data()),
                             k.fma(a.data(), b.data(), c.data(), n, m, r2.data()))
#undef KASOKU_CHECK
            }
        }
    }
}

// mul_scalar on inputs that are not residues mod q, up to 2^50 - 1 (the rescale reduces another prime's residues by a
// product by 1): every body against the exact product, at every modulus size.
TEST(Kernels, MulScalarReducesInputsBelow2To50) {
    std::mt19937_64 rng(8);
    auto bodies = bodies_under_test();
    bodies.insert(bodies.begin(), &kernel_table(SimdLevel::scalar));
    for (int bits : {30, 40, 47, 48, 49, 50, 60}) {
        const u64 q = generate_ntt_primes(bits, 1, 1024)[0];
        const Modulus m(q);
        const size_t n = 1027;
        std::vector<u64> a(n);
        for (auto& x : a) x = rng() >> 14;  // < 2^50
        a[0] = (u64{1} << 50) - 1;
        a[1] = q;
        a[2] = 2 * q - 1;
        for (u64 w : {u64{1}, q - 1, rng() % q}) {
            std::vector<u64> expect(n), got(n);
            for (size_t c = 0; c < n; ++c) expect[c] = reduce_128(static_cast<u128>(a[c]) * w, m);
            for (const KernelTable* k : bodies) {
                k->mul_scalar(a.data(), w, shoup(w, q), n, q, got.data());
                ASSERT_EQ(got, expect) << "body=" << k->name << " bits=" << bits << " w=" << w;
            }
        }
    }
}

// Base-conversion dot products: sources up to 2^61 - 1 (residues of other moduli), constants below t,
// long and short sums, with and without the subtracted table entry (overflow correction, tables that fit a
// register and larger ones); the scalar body against a product-by-product reference, every body against it, also
// in place (out one of the sources).
TEST(Kernels, DotConstMatchesReference) {
    const KernelTable& ref = kernel_table(SimdLevel::scalar);
    std::mt19937_64 rng(11);
    const auto bodies = bodies_under_test();
    for (int bits : {30, 40, 49, 50, 60, 61}) {
        const Modulus m(generate_ntt_primes(bits, 1, 1024)[0]);
        for (size_t s : {1, 2, 3, 5, 7, 8, 9, 12, 17, 33, 40}) {
            const size_t n = 67;  // 8 vectors and a tail
            std::vector<std::vector<u64>> y(s, std::vector<u64>(n));
            std::vector<const u64*> yp(s);
            std::vector<u64> f(s);
            for (size_t i = 0; i < s; ++i) {
                for (auto& v : y[i]) v = rng() >> 3;  // < 2^61
                y[i][0] = (u64{1} << 61) - 1;         // worst case: every term at its maximum
                y[i][n - 1] = 0;
                f[i] = i % 4 == 0 ? m.value - 1 : rng() % m.value;
                yp[i] = y[i].data();
            }
            std::vector<u64> table(s + 1);
            for (auto& v : table) v = rng() % m.value;
            table[s] = m.value - 1;
            std::vector<std::uint8_t> index(n);
            for (size_t c = 0; c < n; ++c) index[c] = static_cast<std::uint8_t>(c % 3 == 0 ? s : rng() % (s + 1));
            std::vector<u64> expect(n), r1(n), r2(n);
            for (size_t c = 0; c < n; ++c)
                for (size_t i = 0; i < s; ++i)
                    expect[c] = add_mod(expect[c], reduce_128(static_cast<u128>(y[i][c]) * f[i], m), m.value);
            for (bool corrected : {false, true}) {
                const std::uint8_t* idx = corrected ? index.data() : nullptr;
                const u64* tab = corrected ? table.data() : nullptr;
                if (corrected)
                    for (size_t c = 0; c < n; ++c) expect[c] = sub_mod(expect[c], table[index[c]], m.value);
                ref.dot_const(yp.data(), f.data(), s, n, m, r1.data(), idx, tab);
                ASSERT_EQ(r1, expect) << "scalar bits=" << bits << " s=" << s << " corrected=" << corrected;
                for (const KernelTable* k : bodies) {
                    k->dot_const(yp.data(), f.data(), s, n, m, r2.data(), idx, tab);
                    ASSERT_EQ(r2, expect)
                        << "body=" << k->name << " bits=" << bits << " s=" << s << " corrected=" << corrected;
                    // in place: out is the last source (ModDown's combine writes over the transformed limb)
                    std::vector<const u64*> in_place = yp;
                    r2 = y[s - 1];
                    in_place[s - 1] = r2.data();
                    k->dot_const(in_place.data(), f.data(), s, n, m, r2.data(), idx, tab);
                    ASSERT_EQ(r2, expect) << "in place, body=" << k->name << " bits=" << bits << " s=" << s;
                }
            }
        }
    }
}

// dot_const_small (sources below 2^kSmallSourceBits = 2^50: the AVX2 body's double-precision path for t < 2^50, its
// integer path above): every body against the exact sums, with and without the overflow correction, with columns of the
// largest sources and constants (the largest sums of a chunk of terms and across chunks: 7 a chunk for t near 2^50, 31
// for t below 2^48).
TEST(Kernels, DotConstSmallSourcesMatchesReference) {
    std::mt19937_64 rng(12);
    auto bodies = bodies_under_test();
    bodies.insert(bodies.begin(), &kernel_table(SimdLevel::scalar));
    for (int bits : {30, 40, 45, 47, 48, 49, 50, 51, 60}) {
        const Modulus m(generate_ntt_primes(bits, 1, 1024)[0]);
        for (size_t s : {1, 2, 7, 8, 15, 16, 17, 31, 32, 33}) {
            const size_t n = 67;
            std::vector<std::vector<u64>> y(s, std::vector<u64>(n));
            std::vector<const u64*> yp(s);
            std::vector<u64> f(s);
            for (size_t i = 0; i < s; ++i) {
                for (auto& v : y[i]) v = rng() >> (64 - kSmallSourceBits);
                y[i][0] = (u64{1} << kSmallSourceBits) - 1;
                y[i][1] = 0;
                f[i] = i % 3 == 0 ? m.value - 1 : rng() % m.value;
                yp[i] = y[i].data();
            }
            std::vector<u64> table(s + 1);
            for (auto& v : table) v = rng() % m.value;
            std::vector<std::uint8_t> index(n);
            for (size_t c = 0; c < n; ++c) index[c] = static_cast<std::uint8_t>(rng() % (s + 1));
            std::vector<u64> expect(n), got(n);
            for (size_t c = 0; c < n; ++c)
                for (size_t i = 0; i < s; ++i)
                    expect[c] = add_mod(expect[c], reduce_128(static_cast<u128>(y[i][c]) * f[i], m), m.value);
            for (bool corrected : {false, true}) {
                if (corrected)
                    for (size_t c = 0; c < n; ++c) expect[c] = sub_mod(expect[c], table[index[c]], m.value);
                for (const KernelTable* k : bodies) {
                    k->dot_const_small(yp.data(), f.data(), s, n, m, got.data(), corrected ? index.data() : nullptr,
                                       corrected ? table.data() : nullptr);
                    ASSERT_EQ(got, expect)
                        << "body=" << k->name << " bits=" << bits << " s=" << s << " corrected=" << corrected;
                    std::vector<const u64*> in_place = yp;  // out is the last source
                    got = y[s - 1];
                    in_place[s - 1] = got.data();
                    k->dot_const_small(in_place.data(), f.data(), s, n, m, got.data(),
                                       corrected ? index.data() : nullptr, corrected ? table.data() : nullptr);
                    ASSERT_EQ(got, expect) << "in place, body=" << k->name << " bits=" << bits << " s=" << s;
                }
            }
        }
    }
}

// dot (key-switching inner products): against products reduced one by one, every body, with and without
// accumulation, in place (out = a[0]) and not, at q - 1 everywhere in some columns (the largest 128-bit sums).
TEST(Kernels, DotMatchesReference) {
    const KernelTable& ref = kernel_table(SimdLevel::scalar);
    std::mt19937_64 rng(13);
    auto bodies = bodies_under_test();
    bodies.insert(bodies.begin(), &ref);
    for (int bits : {30, 36, 40, 44, 48, 49, 50, 51, 52, 60, 61}) {  // the AVX2 body takes doubles below 2^50
        const Modulus m(generate_ntt_primes(bits, 1, 1024)[0]);
        const u64 q = m.value;
        for (size_t k : {1, 2, 3, 4, 7, 8, 9, 16, 17, 33}) {
            for (size_t n : {1, 3, 4, 67, 4099}) {
                std::vector<std::vector<u64>> a(k), b(k);
                std::vector<const u64*> ap(k), bp(k);
                for (size_t j = 0; j < k; ++j) {
                    a[j] = residues(rng, n, q);
                    b[j] = residues(rng, n, q);
                    a[j][0] = b[j][0] = q - 1;
                    if (n > 4) a[j][n - 1] = b[j][n - 2] = q - 1;
                    ap[j] = a[j].data();
                    bp[j] = b[j].data();
                }
                const auto acc = residues(rng, n, q);
                for (bool accumulate : {false, true}) {
                    std::vector<u64> expect = accumulate ? acc : std::vector<u64>(n, 0);
                    for (size_t c = 0; c < n; ++c)
                        for (size_t j = 0; j < k; ++j)
                            expect[c] = add_mod(expect[c], reduce_128(static_cast<u128>(a[j][c]) * b[j][c], m), q);
                    for (const KernelTable* body : bodies) {
                        std::vector<u64> out = accumulate ? acc : std::vector<u64>(n, 7);
                        body->dot(ap.data(), bp.data(), k, n, m, out.data(), accumulate);
                        ASSERT_EQ(out, expect) << "body=" << body->name << " bits=" << bits << " k=" << k << " n=" << n
                                               << " accumulate=" << accumulate;
                        if (accumulate) continue;
                        auto in_place = a[0];  // out = a[0]
                        std::vector<const u64*> ap2 = ap;
                        ap2[0] = in_place.data();
                        body->dot(ap2.data(), bp.data(), k, n, m, in_place.data(), false);
                        ASSERT_EQ(in_place, expect)
                            << "in place, body=" << body->name << " bits=" << bits << " k=" << k;
                    }
                }
            }
        }
    }
}

// permute: small outputs (plain stores) and large ones (streamed), against the plain loop.
TEST(Kernels, PermuteMatchesPlainLoop) {
    std::mt19937_64 rng(12);
    for (size_t n : {size_t{16}, size_t{1} << 16}) {
        std::vector<u64> src(n), got(n), want(n);
        std::vector<std::uint32_t> perm(n);
        for (size_t k = 0; k < n; ++k) {
            src[k] = rng();
            perm[k] = static_cast<std::uint32_t>(k);
        }
        std::shuffle(perm.begin(), perm.end(), rng);
        for (size_t k = 0; k < n; ++k) want[k] = src[perm[k]];
        kasoku::arith::permute(src.data(), perm.data(), n, got.data());
        ASSERT_EQ(got, want) << "n=" << n;
    }
}

TEST(Kernels, ScalarIsCorrect) {
    const KernelTable& k = kernel_table(SimdLevel::scalar);
    std::mt19937_64 rng(8);
    const u64 q = generate_ntt_primes(61, 1, 1024)[0];
    const Modulus m(q);
    const size_t n = 257;
    auto a = residues(rng, n, q), b = residues(rng, n, q), c = residues(rng, n, q);
    std::vector<u64> r(n);
    k.fma(a.data(), b.data(), c.data(), n, m, r.data());
    for (size_t i = 0; i < n; ++i) ASSERT_EQ(r[i], static_cast<u64>((static_cast<u128>(a[i]) * b[i] + c[i]) % q));
    k.sub(a.data(), b.data(), n, q, r.data());
    for (size_t i = 0; i < n; ++i) ASSERT_EQ(r[i], (a[i] + q - b[i]) % q);
    k.negate(a.data(), n, q, r.data());
    for (size_t i = 0; i < n; ++i) ASSERT_EQ(r[i], (q - a[i]) % q);
}

TEST(Kernels, NttBodiesMatchScalar) {
    const KernelTable& ref = kernel_table(SimdLevel::scalar);
    std::mt19937_64 rng(9);
    for (const KernelTable* body : bodies_under_test()) {
        const KernelTable& k = *body;
        // 47, 48: the AVX2 body's double-precision path at its largest primes (where its lazy values are reduced
        // most often); 49 and up: its integer path. Sizes: below one vector block and each way the stages split into
        // passes over the whole transform and blocks of 2048 words; random inputs, and every input at q - 1.
        const std::pair<size_t, bool> cases[] = {{8, false},     {16, false},   {32, false},   {64, false},
                                                 {1024, true},   {4096, false}, {8192, false}, {16384, false},
                                                 {65536, false}, {65536, true}};
        for (int bits : {30, 40, 47, 48, 49, 50, 51, 60, 61}) {
            for (const auto& [n, largest] : cases) {
                const NttTables t(generate_ntt_primes(bits, 1, n)[0], n);
                auto a = residues(rng, n, t.q());
                if (largest) std::fill(a.begin(), a.end(), t.q() - 1);
                auto b = a;
                ref.ntt_forward(a.data(), t);
                k.ntt_forward(b.data(), t);
                ASSERT_EQ(a, b) << "forward body=" << k.name << " n=" << n << " bits=" << bits;
                ref.ntt_inverse(a.data(), t);
                k.ntt_inverse(b.data(), t);
                ASSERT_EQ(a, b) << "inverse body=" << k.name << " n=" << n << " bits=" << bits;
            }
        }
    }
}

TEST(Simd, DispatcherReportsAvailableBodies) {
    auto av = simd_available();
    ASSERT_FALSE(av.empty());
    EXPECT_EQ(av.front(), SimdLevel::scalar);
    EXPECT_EQ(parse_simd("avx2"), SimdLevel::avx2);
    EXPECT_THROW(parse_simd("sse9"), kasoku::ParameterError);
    EXPECT_TRUE(simd_compiled(active_simd()));
}
