// Kawamura et al.'s NTT in its four loop structures against the schoolbook DFT and arith's NTT, its cycle model against
// the seed's tables, and big-integer multiplication through the NTT against GMP.
#include <gmpxx.h>
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <thread>

#include "kasoku/arith/ntt.hpp"
#include "kasoku/arith/primes.hpp"
#include "kasoku/hls/bigmul.hpp"
#include "kasoku/hls/cycle_model.hpp"
#include "kasoku/hls/ntt.hpp"
#include "kasoku/support/error.hpp"

using namespace kasoku;
using namespace kasoku::hls;

namespace {

std::vector<word> random_input(const Field& f, std::uint64_t seed, bool zero_top_half = false) {
    std::mt19937_64 rng(seed);
    std::vector<word> x(std::size_t(1) << f.m);
    for (std::size_t t = 0; t < x.size(); ++t) x[t] = zero_top_half && t >= x.size() / 2 ? 0 : word(rng() % f.p);
    return x;
}

constexpr Structure kStructures[] = {Structure::nested, Structure::inner_flattened, Structure::fully_flattened,
                                     Structure::two_butterflies};

}  // namespace

TEST(HlsField, SmallestPrimeOfTheSeed) {
    for (int m = 2; m <= kMaxLogPoints; ++m) {
        const Field f = seed_field(m);
        const wide M = wide(1) << m;
        EXPECT_EQ(f.p, f.s * M + 1);
        EXPECT_GE(f.p, 81 * M);
        EXPECT_TRUE(arith::is_prime(f.p));
        for (word s = 81; s < f.s; ++s) EXPECT_FALSE(arith::is_prime(wide(s) * M + 1)) << m;  // the smallest
        EXPECT_EQ(pow_mod(f.alpha, M, f.p), 1u);
        EXPECT_EQ(pow_mod(f.alpha, M / 2, f.p), f.p - 1) << m;  // order exactly M (eq. 7, 11)
    }
    EXPECT_THROW(seed_field(1), ParameterError);
    EXPECT_THROW(seed_field(17), ParameterError);
}

TEST(HlsNtt, EveryStructureEqualsTheSchoolbookDft) {
    for (int m = 2; m <= kMaxLogPoints; ++m) {
        const Field f = seed_field(m);
        const auto x = random_input(f, 100 + m);
        const std::size_t M = x.size();
        // Full DFT up to 2^11 points; above, 64 random outputs by their direct sums.
        std::vector<std::size_t> ks;
        std::vector<word> want;
        if (m <= 11) {
            want = dft(f, x);
            for (std::size_t k = 0; k < M; ++k) ks.push_back(k);
        } else {
            std::mt19937_64 rng(m);
            want.assign(M, 0);
            for (int i = 0; i < 64; ++i) {
                const std::size_t k = rng() % M;
                const word w = pow_mod(f.alpha, k, f.p);
                word acc = 0, wt = 1;
                for (std::size_t t = 0; t < M; ++t, wt = mul_mod(wt, w, f.p))
                    acc = add_mod(acc, mul_mod(x[t], wt, f.p), f.p);
                want[k] = acc;
                ks.push_back(k);
            }
        }
        for (Structure s : kStructures) {
            const auto got = ntt(s, f, x);
            ASSERT_EQ(got.size(), M);
            for (std::size_t k : ks)
                ASSERT_EQ(got[bit_reverse(k, m)], want[k]) << structure_name(s) << " m = " << m << " k = " << k;
        }
    }
}

TEST(HlsNtt, OddOutputsOfAPaddedInputEqualArithsNegacyclicNtt) {
    // The seed's inputs are zero in their top half (eq. 2); X(2j + 1) is then the negacyclic NTT of size M/2 at
    // alpha, which arith computes (bit-reversed, the same root): the upper half of the output equals it word for word.
    for (int m = 2; m <= kMaxLogPoints; ++m) {
        const Field f = seed_field(m);
        const auto x = random_input(f, 7 + m, true);
        const std::size_t half = x.size() / 2;
        const arith::NttTables tables(f.p, half);
        ASSERT_EQ(tables.psi(), f.alpha);
        std::vector<arith::u64> a(x.begin(), x.begin() + half);
        arith::ntt_forward(a.data(), tables);
        for (Structure s : kStructures) {
            const auto got = ntt(s, f, x);
            for (std::size_t i = 0; i < half; ++i) ASSERT_EQ(got[half + i], a[i]) << structure_name(s) << " m = " << m;
        }
    }
}

TEST(HlsNtt, RejectsBadInput) {
    const Field f = seed_field(4);
    EXPECT_THROW(ntt(Structure::nested, f, std::vector<word>(8)), ParameterError);
    EXPECT_THROW(ntt(Structure::nested, f, std::vector<word>(16, f.p)), ParameterError);
    EXPECT_THROW(ntt(Structure::nested, Field{}, std::vector<word>(16)), ParameterError);
}

TEST(HlsCycleModel, OrderingsOfTheSeedsTables) {
    const Latencies lat = fit_to_paper();
    // Tables 1-2 (16 and 1,024 points): (5) < (3) < (1), and the stage-crossing pipelines (2), (4), (6) no better
    // than (1) in time (cycles times the 20 ns clock they ran at, against (1)'s 10 ns).
    for (int m : {4, 10}) {
        const double c1 = model_cycles(1, m, lat), c3 = model_cycles(3, m, lat), c5 = model_cycles(5, m, lat);
        EXPECT_LT(c5, c3);
        EXPECT_LT(c3, c1);
        for (int crossing : {2, 4, 6}) EXPECT_GE(20 * model_cycles(crossing, m, lat), 10 * c1) << crossing;
        // Tables 3-4: (7) no better than (5), (8) better.
        EXPECT_GE(model_cycles(7, m, lat), 0.99 * c5);
        EXPECT_LT(model_cycles(8, m, lat), c5);
    }
    // Tables 1-4 (fitted, four lines for 16 rows) within 3%; Table 5 (4,096 to 65,536 points, not fitted: a
    // prediction, e.g. (8) at 65,536 points against the seed's 410,480) within 1%.
    for (const auto& r : paper_cycles()) {
        EXPECT_NEAR(model_cycles(r.method, r.log_points(), lat) / r.cycles, 1.0, r.table == 5 ? 0.01 : 0.03)
            << "method " << r.method << " at " << r.points << " points (Table " << r.table << ")";
    }
    EXPECT_THROW(model_cycles(9, 10, lat), ParameterError);
    EXPECT_EQ(methods()[7].number, 8);
    EXPECT_EQ(methods()[7].structure, Structure::two_butterflies);
}

// The RTL's cycles are checked against Verilator in CTest's RtlNtt.* (hw/sim.sh); here what the model promises.
TEST(HlsCycleModel, RtlDesigns) {
    for (int m = 3; m <= kMaxLogPoints; ++m) {
        const RtlCycles fig7 = rtl_cycles(Rtl::fig7, m);
        EXPECT_EQ(fig7.load, 1L << (m - 1));
        for (int lanes = 2; 4 * lanes <= (1 << m); lanes *= 2) {
            const RtlCycles ours = rtl_cycles(Rtl::lanes, m, lanes);
            EXPECT_EQ(ours.load, (1L << m) / lanes);
            // Two lanes beat the seed's structure by its slow last stage; every doubling nearly halves the issue time.
            if (lanes == 2) EXPECT_LT(ours.transform, fig7.transform);
            else EXPECT_LT(ours.transform, rtl_cycles(Rtl::lanes, m, lanes / 2).transform);
        }
    }
    // The bar: 16 lanes at 65,536 points, load and unload included, in at most 1/8 of method (8)'s 410,480.
    EXPECT_LE(8 * rtl_cycles(Rtl::lanes, 16, 16).total(), 410480);
    EXPECT_THROW(rtl_cycles(Rtl::lanes, 16, 3), ParameterError);
    EXPECT_THROW(rtl_cycles(Rtl::lanes, 4, 8), ParameterError);
    EXPECT_THROW(rtl_cycles(Rtl::fig7, 2), ParameterError);
    EXPECT_THROW(rtl_cycles(Rtl::fig7, 17), ParameterError);
}

TEST(HlsBigmul, DecimalSchemeOfTheSeed) {
    EXPECT_EQ(multiply_decimal(std::string("123"), std::string("456")), "56088");
    EXPECT_EQ(multiply_decimal(std::string("-99"), std::string("99")), "-9801");
    EXPECT_EQ(multiply_decimal(std::string("0"), std::string("-5")), "0");
    EXPECT_EQ(multiply_decimal(std::string("000120"), std::string("10")), "1200");
    // 10^k - 1 squared: 9...980...01, at sizes up to the seed's 65,536 points (32,768 digits per operand).
    for (std::size_t k : {1, 7, 100, 1000, 32768}) {
        const std::string nines(k, '9');
        const std::string want = std::string(k - 1, '9') + "8" + std::string(k - 1, '0') + "1";
        EXPECT_EQ(multiply_decimal(nines, nines), want) << k;
    }
    EXPECT_THROW(multiply_decimal(std::string("12a"), std::string("1")), ParameterError);
    EXPECT_THROW(multiply_decimal(std::string("-"), std::string("1")), ParameterError);
    EXPECT_THROW(multiply_decimal(std::string(32769, '1'), std::string("1")), ParameterError);
    EXPECT_THROW(multiply_decimal(std::vector<std::uint8_t>{10}, std::vector<std::uint8_t>{1}), ParameterError);
}

TEST(HlsBigmul, WideBaseEqualsGmp) {
    auto gmp = [](const std::vector<std::uint32_t>& a, const std::vector<std::uint32_t>& b) {  // mpz_mul
        mpz_class x, y, z;
        mpz_import(x.get_mpz_t(), a.size(), -1, 4, 0, 0, a.data());
        mpz_import(y.get_mpz_t(), b.size(), -1, 4, 0, 0, b.data());
        z = x * y;
        std::vector<std::uint32_t> out((mpz_sizeinbase(z.get_mpz_t(), 2) + 31) / 32);
        std::size_t count = 0;
        mpz_export(out.data(), &count, -1, 4, 0, 0, z.get_mpz_t());
        out.resize(count);
        return out;
    };
    std::mt19937_64 rng(5);
    for (auto [n, k] :
         {std::pair<std::size_t, std::size_t>{1, 1}, {3, 200}, {49, 49}, {100, 1000}, {2500, 1777}, {9000, 8000}}) {
        std::vector<std::uint32_t> a(n), b(k);
        for (auto& v : a) v = static_cast<std::uint32_t>(rng());
        for (auto& v : b) v = static_cast<std::uint32_t>(rng());
        for (int threads : {1, 2}) EXPECT_EQ(multiply(a, b, threads), gmp(a, b)) << n << " x " << k;
        // The largest coefficients: every limb 2^32 - 1.
        std::fill(a.begin(), a.end(), 0xffffffffu);
        std::fill(b.begin(), b.end(), 0xffffffffu);
        EXPECT_EQ(multiply(a, b), gmp(a, b)) << n << " x " << k << " (all ones)";
    }
    EXPECT_TRUE(multiply({}, {1, 2}).empty());
    EXPECT_TRUE(multiply({0, 0}, {1}).empty());
    EXPECT_THROW(multiply({1}, {1}, 0), ParameterError);
}

// A Multiplier that keeps its tables gives multiply()'s products, over more sizes than it keeps and from two threads
// at once.
TEST(HlsBigmul, MultiplierKeepsTablesAndTheProducts) {
    std::mt19937_64 rng(6);
    const Multiplier mult;
    std::vector<std::pair<std::vector<std::uint32_t>, std::vector<std::uint32_t>>> cases;
    for (std::size_t n : {60, 130, 300, 700, 1500, 3000, 130}) {  // 7 transform sizes, one repeated, > kKeptSizes
        std::vector<std::uint32_t> a(n), b(n + 5);
        for (auto& v : a) v = static_cast<std::uint32_t>(rng());
        for (auto& v : b) v = static_cast<std::uint32_t>(rng());
        cases.emplace_back(std::move(a), std::move(b));
    }
    std::vector<std::vector<std::uint32_t>> want;
    for (const auto& [a, b] : cases) want.push_back(multiply(a, b));
    auto check = [&] {
        for (int round = 0; round < 2; ++round)
            for (std::size_t i = 0; i < cases.size(); ++i)
                EXPECT_EQ(mult.multiply(cases[i].first, cases[i].second), want[i]) << i;
    };
    std::thread other(check);
    check();
    other.join();
}
