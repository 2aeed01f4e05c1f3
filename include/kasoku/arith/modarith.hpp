// 64-bit modular arithmetic for NTT-friendly primes q < 2^61 (docs/DESIGN.md §1 "arith").
// Barrett reduction (two-word constant floor(2^128/q)) for products of two variables,
// Shoup ("precon") constants floor(w * 2^64 / q) for products by a fixed w, lazy variants
// that leave results in [0, 2q) for the NTT butterflies. Nothing here throws or checks its inputs.
// The per-word functions are KASOKU_HD: the CUDA kernels (src/kasoku/gpu) compute with this very code, so that the
// device gives the same bits as the host (and the CPU tests cover the device's arithmetic).
#pragma once
#include <cstdint>

#if defined(__CUDACC__)
#define KASOKU_HD __host__ __device__
#else
#define KASOKU_HD
#endif

namespace kasoku::arith {

using u64 = std::uint64_t;
using u128 = unsigned __int128;

// Largest modulus bit size supported: 4q must fit in 63 bits for the lazy NTT and AVX2 compares.
inline constexpr int kMaxModulusBits = 61;

KASOKU_HD inline u64 mul_hi(u64 a, u64 b) {
#if defined(__CUDA_ARCH__)
    return __umul64hi(a, b);
#else
    return static_cast<u64>((static_cast<u128>(a) * b) >> 64);
#endif
}

// A modulus with its precomputed reduction constants.
struct Modulus {
    u64 value = 0;
    u64 ratio_lo = 0;  // floor(2^128 / q), low word
    u64 ratio_hi = 0;  // floor(2^128 / q), high word
    int bits = 0;

    Modulus() = default;
    explicit Modulus(u64 q) : value(q) {
        // floor(2^128 / q) = floor((2^128 - 1) / q) for q not a power of two.
        u128 r = ~static_cast<u128>(0) / q;
        ratio_lo = static_cast<u64>(r);
        ratio_hi = static_cast<u64>(r >> 64);
        bits = 64 - __builtin_clzll(q);
    }
};

// x mod q for x < 2^128 (Barrett with the two-word constant; result in [0, q)).
KASOKU_HD inline u64 reduce_128(u128 x, const Modulus& m) {
    u64 x0 = static_cast<u64>(x), x1 = static_cast<u64>(x >> 64);
    // quotient estimate = floor(x * ratio / 2^128), computed from the partial products
    u128 t = static_cast<u128>(x0) * m.ratio_lo;
    u64 carry = static_cast<u64>(t >> 64);
    u128 a = static_cast<u128>(x0) * m.ratio_hi + carry;
    u128 b = static_cast<u128>(x1) * m.ratio_lo + static_cast<u64>(a);
    u64 qhat = x1 * m.ratio_hi + static_cast<u64>(a >> 64) + static_cast<u64>(b >> 64);
    u64 r = x0 - qhat * m.value;
    if (r >= m.value) r -= m.value;
    return r;
}

// x mod q for x < 2^64: reduce_128 with a zero high word (two products instead of four).
KASOKU_HD inline u64 reduce_64(u64 x, const Modulus& m) {
    const u128 a = static_cast<u128>(x) * m.ratio_hi + mul_hi(x, m.ratio_lo);
    u64 r = x - static_cast<u64>(a >> 64) * m.value;
    return r >= m.value ? r - m.value : r;
}

KASOKU_HD inline u64 mul_mod(u64 a, u64 b, const Modulus& m) { return reduce_128(static_cast<u128>(a) * b, m); }
KASOKU_HD inline u64 add_mod(u64 a, u64 b, u64 q) {
    u64 s = a + b;
    return s >= q ? s - q : s;
}
KASOKU_HD inline u64 sub_mod(u64 a, u64 b, u64 q) { return a >= b ? a - b : a + q - b; }
KASOKU_HD inline u64 neg_mod(u64 a, u64 q) { return a == 0 ? 0 : q - a; }
// v mod q for a small signed v (|v| < q).
KASOKU_HD inline u64 signed_residue(std::int64_t v, u64 q) {
    return v >= 0 ? static_cast<u64>(v) : q - static_cast<u64>(-v);
}

// Shoup constant for multiplying by a fixed w < q.
inline u64 shoup(u64 w, u64 q) { return static_cast<u64>((static_cast<u128>(w) << 64) / q); }
// w * x mod q in [0, 2q) for any x < 2^64 (Harvey).
KASOKU_HD inline u64 mul_shoup_lazy(u64 x, u64 w, u64 wp, u64 q) { return w * x - mul_hi(x, wp) * q; }
KASOKU_HD inline u64 mul_shoup(u64 x, u64 w, u64 wp, u64 q) {
    u64 r = mul_shoup_lazy(x, w, wp, q);
    return r >= q ? r - q : r;
}

inline u64 pow_mod(u64 base, u64 exp, const Modulus& m) {
    u64 r = 1 % m.value, b = base % m.value;
    while (exp) {
        if (exp & 1) r = mul_mod(r, b, m);
        b = mul_mod(b, b, m);
        exp >>= 1;
    }
    return r;
}

// Inverse of a modulo a prime q (Fermat); a must be nonzero mod q.
inline u64 inv_mod(u64 a, const Modulus& m) { return pow_mod(a, m.value - 2, m); }

// Signed integer (|x| < 2^127) reduced mod q.
KASOKU_HD inline u64 reduce_signed(__int128 x, const Modulus& m) {
    if (x >= 0) return reduce_128(static_cast<u128>(x), m);
    u64 r = reduce_128(static_cast<u128>(-x), m);
    return r == 0 ? 0 : m.value - r;
}

}  // namespace kasoku::arith
