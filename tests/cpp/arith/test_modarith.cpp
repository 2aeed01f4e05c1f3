#include <gtest/gtest.h>

#include <random>

#include "kasoku/arith/modarith.hpp"
#include "kasoku/arith/primes.hpp"
#include "kasoku/support/error.hpp"

using namespace kasoku::arith;

TEST(ModArith, BarrettMatchesDivision) {
    std::mt19937_64 rng(1);
    for (int bits : {30, 40, 50, 59, 60, 61}) {
        const u64 q = generate_ntt_primes(bits, 1, 1024)[0];
        const Modulus m(q);
        for (int i = 0; i < 20000; ++i) {
            u64 a = rng() % q, b = rng() % q;
            u128 x = static_cast<u128>(a) * b;
            ASSERT_EQ(reduce_128(x, m), static_cast<u64>(x % q));
            // worst cases: largest operands, 128-bit sums of several products
            u128 y = static_cast<u128>(q - 1) * (q - 1) * 8 + rng();
            ASSERT_EQ(reduce_128(y, m), static_cast<u64>(y % q));
        }
    }
}

TEST(ModArith, ShoupMatchesDivision) {
    std::mt19937_64 rng(2);
    const u64 q = generate_ntt_primes(61, 1, 4096)[0];
    for (int i = 0; i < 20000; ++i) {
        u64 w = rng() % q, x = rng();  // any 64-bit x
        u64 r = mul_shoup_lazy(x, w, shoup(w, q), q);
        ASSERT_LT(r, 2 * q);
        ASSERT_EQ(r % q, static_cast<u64>(static_cast<u128>(w) * x % q));
    }
}

TEST(Primes, NttFriendlyAndDistinct) {
    for (int bits : {30, 40, 60, 61}) {
        auto ps = generate_ntt_primes(bits, 5, 1 << 12);
        for (size_t i = 0; i < ps.size(); ++i) {
            EXPECT_TRUE(is_prime(ps[i]));
            EXPECT_EQ(ps[i] % (2 << 12), 1u);
            EXPECT_EQ(64 - __builtin_clzll(ps[i]), bits);
            for (size_t j = 0; j < i; ++j) EXPECT_NE(ps[i], ps[j]);
        }
        auto more = generate_ntt_primes(bits, 2, 1 << 12, ps);
        for (u64 p : more) EXPECT_EQ(std::count(ps.begin(), ps.end(), p), 0);
    }
    EXPECT_THROW(generate_ntt_primes(62, 1, 1024), kasoku::ParameterError);
    EXPECT_THROW(generate_ntt_primes(12, 50, 1 << 10), kasoku::ParameterError);
}

TEST(Primes, MillerRabin) {
    EXPECT_TRUE(is_prime(2305843009213693951ull));  // 2^61 - 1
    EXPECT_FALSE(is_prime(2305843009213693953ull));
    EXPECT_FALSE(is_prime(3215031751ull));  // strong pseudoprime to bases 2, 3, 5, 7
    EXPECT_TRUE(is_prime(1000000007ull));
}
