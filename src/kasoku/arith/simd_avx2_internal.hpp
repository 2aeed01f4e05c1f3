// AVX2 helpers for 64-bit modular arithmetic (included only by *_avx2.cpp files).
// AVX2 has no 64x64-bit multiply: products are assembled from four 32x32 -> 64 partial products.
// All values are below 2^63, so signed 64-bit compares act as unsigned ones.
#pragma once
#include <immintrin.h>

#include <cstdint>

namespace kasoku::arith::avx2 {

inline __m256i load(const std::uint64_t* p) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)); }
inline void store(std::uint64_t* p, __m256i v) { _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), v); }
inline __m256i set1(std::uint64_t x) { return _mm256_set1_epi64x(static_cast<long long>(x)); }

// The vector traits of detail::elementwise.
struct Lanes {
    static constexpr std::size_t lanes = 4;
    static void store(std::uint64_t* p, __m256i v) { avx2::store(p, v); }
    static void stream(std::uint64_t* p, __m256i v) { _mm256_stream_si256(reinterpret_cast<__m256i*>(p), v); }
    static void fence() { _mm_sfence(); }
};

// x >= bound ? x - bound : x, for x, bound < 2^63.
inline __m256i sub_if_ge(__m256i x, __m256i bound) {
    __m256i lt = _mm256_cmpgt_epi64(bound, x);
    return _mm256_sub_epi64(x, _mm256_andnot_si256(lt, bound));
}

// Full 128-bit products a * b as (hi, lo), b_h = b >> 32 given pre-split (constants split once).
inline void mul_full(__m256i a, __m256i b, __m256i b_h, __m256i& hi, __m256i& lo) {
    const __m256i mask = _mm256_set1_epi64x(0xffffffffLL);
    __m256i a_h = _mm256_srli_epi64(a, 32);
    __m256i ll = _mm256_mul_epu32(a, b);
    __m256i lh = _mm256_mul_epu32(a, b_h);
    __m256i hl = _mm256_mul_epu32(a_h, b);
    __m256i hh = _mm256_mul_epu32(a_h, b_h);
    __m256i mid = _mm256_add_epi64(_mm256_srli_epi64(ll, 32), _mm256_and_si256(lh, mask));
    mid = _mm256_add_epi64(mid, _mm256_and_si256(hl, mask));
    hi = _mm256_add_epi64(hh, _mm256_srli_epi64(lh, 32));
    hi = _mm256_add_epi64(hi, _mm256_srli_epi64(hl, 32));
    hi = _mm256_add_epi64(hi, _mm256_srli_epi64(mid, 32));
    lo = _mm256_or_si256(_mm256_slli_epi64(mid, 32), _mm256_and_si256(ll, mask));
}

// High 64 bits of a * b (the compiler drops the unused low half).
inline __m256i mul_hi(__m256i a, __m256i b, __m256i b_h) {
    __m256i hi, lo;
    mul_full(a, b, b_h, hi, lo);
    return hi;
}

// Low 64 bits of a * b (b_h = b >> 32).
inline __m256i mul_lo(__m256i a, __m256i b, __m256i b_h) {
    __m256i ll = _mm256_mul_epu32(a, b);
    __m256i cross = _mm256_add_epi64(_mm256_mul_epu32(a, b_h), _mm256_mul_epu32(_mm256_srli_epi64(a, 32), b));
    return _mm256_add_epi64(ll, _mm256_slli_epi64(cross, 32));
}

// Shoup: w * x mod q in [0, 2q) for constant w (w_h = w >> 32) with wp = floor(w 2^64 / q).
inline __m256i mul_shoup_lazy(__m256i x, __m256i w, __m256i w_h, __m256i wp, __m256i wp_h, __m256i q, __m256i q_h) {
    __m256i hi = mul_hi(x, wp, wp_h);
    return _mm256_sub_epi64(mul_lo(x, w, w_h), mul_lo(hi, q, q_h));
}

// Barrett reduction of a 128-bit (hi, lo) < q^2 for a q of `bits` bits: mu = floor(2^(2 bits) / q).
// Shift counts are passed as xmm registers (uniform across lanes).
struct BarrettShift {
    __m256i q, q_h, mu, mu_h;
    __m128i s_lo_x, s_hi_x, s_lo_p, s_hi_p;  // x >> (b-1) = hi << (65-b) | lo >> (b-1); p >> (b+1) likewise
    explicit BarrettShift(std::uint64_t qv, int bits) {
        unsigned __int128 m = (static_cast<unsigned __int128>(1) << (2 * bits)) / qv;
        q = set1(qv);
        q_h = set1(qv >> 32);
        mu = set1(static_cast<std::uint64_t>(m));
        mu_h = set1(static_cast<std::uint64_t>(m) >> 32);
        s_lo_x = _mm_cvtsi32_si128(bits - 1);
        s_hi_x = _mm_cvtsi32_si128(65 - bits);
        s_lo_p = _mm_cvtsi32_si128(bits + 1);
        s_hi_p = _mm_cvtsi32_si128(63 - bits);
    }
    // (hi, lo) mod q up to two multiples of q: [0, 3q).
    __m256i reduce_lazy(__m256i hi, __m256i lo) const {
        __m256i x1 = _mm256_or_si256(_mm256_sll_epi64(hi, s_hi_x), _mm256_srl_epi64(lo, s_lo_x));
        __m256i ph, pl;
        mul_full(x1, mu, mu_h, ph, pl);
        __m256i qhat = _mm256_or_si256(_mm256_sll_epi64(ph, s_hi_p), _mm256_srl_epi64(pl, s_lo_p));
        return _mm256_sub_epi64(lo, mul_lo(qhat, q, q_h));
    }
    __m256i reduce(__m256i hi, __m256i lo) const { return sub_if_ge(sub_if_ge(reduce_lazy(hi, lo), q), q); }
};

}  // namespace kasoku::arith::avx2
