// AVX2 bodies of the element-wise kernels and the NTT (compiled with -mavx2 -mfma only in this file; the dispatcher
// picks this body only on CPUs with both).
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "kasoku/arith/kernels.hpp"
#include "kernels_internal.hpp"
#include "simd_avx2_internal.hpp"

namespace kasoku::arith::detail {

namespace {
using namespace avx2;

// Integers below 2^52 to doubles and back: the bits of 2^52 + x are those of 2^52 with x in the mantissa.
inline __m256d to_double(__m256i x) {
    const __m256i magic = _mm256_set1_epi64x(0x4330000000000000LL);
    return _mm256_sub_pd(_mm256_castsi256_pd(_mm256_or_si256(x, magic)), _mm256_set1_pd(4503599627370496.0));
}
inline __m256i to_int(__m256d x) {
    return _mm256_xor_si256(_mm256_castpd_si256(_mm256_add_pd(x, _mm256_set1_pd(4503599627370496.0))),
                            _mm256_set1_epi64x(0x4330000000000000LL));
}

// Double-precision residue arithmetic for q < 2^50. A product y w of integers held as doubles is exact as h + l
// (h = fl(y w), l = fma(y, w, -h), |l| <= 2^-53 |h| <= 2^48 for |y| <= 2^51); quot is the integer nearest the exact
// product h fl(1/q), within 2^-52 |y w / q| of y w / q (two roundings), so |quot - y w / q| < 1/2 + 1/2 for |y| <=
// kMaxFactor = 2^51 and w < q. Then r = (h - quot q) + l lies in (-q, q) and is computed exactly: the fnmadd's exact
// value r - l is an integer below 2^51, a double. The nearest integer is one fma: h / q + C for C = 1.5 2^52 lies in
// [2^52, 2^53), where the doubles are the integers, so fma(h, 1/q, C) - C is h / q rounded to an integer, one operation
// fewer than a multiplication and vroundpd (two uops on Intel cores). Values are integers of magnitude below 2^53
// throughout, so sums of them are exact. The bounds assume IEEE double arithmetic in its default rounding mode (round to
// nearest).
struct FpFma {
    static constexpr int kMaxBits = 50;
    static constexpr double kMaxFactor = 2251799813685248.0;         // 2^51
    __m256d vq, vqinv, vround = _mm256_set1_pd(6755399441055744.0);  // 1.5 2^52
    explicit FpFma(u64 q)
        : vq(_mm256_set1_pd(static_cast<double>(q))), vqinv(_mm256_set1_pd(1.0 / static_cast<double>(q))) {}
    // The integer nearest x / q, for |x / q| < 2^51.
    __m256d quotient(__m256d x) const { return _mm256_sub_pd(_mm256_fmadd_pd(x, vqinv, vround), vround); }
    static __m256d sub_if_ge(__m256d x, __m256d bound) {
        return _mm256_sub_pd(x, _mm256_and_pd(_mm256_cmp_pd(x, bound, _CMP_GE_OQ), bound));
    }
    // y w mod q in (-q, q) for integers |y| <= kMaxFactor, 0 <= w < q.
    __m256d mul_signed(__m256d y, __m256d w) const {
        const __m256d h = _mm256_mul_pd(y, w);
        const __m256d l = _mm256_fmsub_pd(y, w, h);                     // y w - h, exact
        return _mm256_add_pd(_mm256_fnmadd_pd(quotient(h), vq, h), l);  // h - quot q is exact, then + l
    }
    // x mod q in (-q, q) for an integer |x| < 2^53 with |x| < 2^40 q: |quot - x / q| < 1/2 + 2^-53 |x / q| < 1, and
    // x - quot q is exact (an integer below q).
    __m256d reduce(__m256d x) const { return _mm256_fnmadd_pd(quotient(x), vq, x); }
    // r in (-q, q) to [0, q).
    __m256d positive(__m256d r) const {
        return _mm256_add_pd(r, _mm256_and_pd(_mm256_cmp_pd(r, _mm256_setzero_pd(), _CMP_LT_OQ), vq));
    }
};

void add_avx2(const u64* a, const u64* b, std::size_t n, u64 q, u64* out) {
    const __m256i vq = set1(q);
    elementwise<Lanes>(
        n, out, out == a || out == b,
        [&](std::size_t i) { return sub_if_ge(_mm256_add_epi64(load(a + i), load(b + i)), vq); },
        [&](std::size_t i) { return add_mod(a[i], b[i], q); });
}

void sub_avx2(const u64* a, const u64* b, std::size_t n, u64 q, u64* out) {
    const __m256i vq = set1(q);
    elementwise<Lanes>(
        n, out, out == a || out == b,
        [&](std::size_t i) { return sub_if_ge(_mm256_add_epi64(load(a + i), _mm256_sub_epi64(vq, load(b + i))), vq); },
        [&](std::size_t i) { return sub_mod(a[i], b[i], q); });
}

void negate_avx2(const u64* a, std::size_t n, u64 q, u64* out) {
    const __m256i vq = set1(q), zero = _mm256_setzero_si256(), ones = _mm256_set1_epi64x(-1);
    elementwise<Lanes>(
        n, out, out == a,
        [&](std::size_t i) {
            const __m256i x = load(a + i);
            const __m256i nz = _mm256_xor_si256(_mm256_cmpeq_epi64(x, zero), ones);
            return _mm256_and_si256(_mm256_sub_epi64(vq, x), nz);
        },
        [&](std::size_t i) { return neg_mod(a[i], q); });
}

// The products below take doubles for q < 2^50 (FpFma: the same residues with a quarter of the instructions of the
// 32x32-bit products), the integer products above.
void mul_avx2(const u64* a, const u64* b, std::size_t n, const Modulus& m, u64* out) {
    std::size_t i = 0;
    if (m.bits <= FpFma::kMaxBits) {
        const FpFma ar(m.value);
        for (; i + 4 <= n; i += 4)
            store(out + i, to_int(ar.positive(ar.mul_signed(to_double(load(a + i)), to_double(load(b + i))))));
        for (; i < n; ++i) out[i] = reduce_128(static_cast<u128>(a[i]) * b[i], m);
        return;
    }
    const BarrettShift br(m.value, m.bits);
    for (; i + 4 <= n; i += 4) {
        __m256i hi, lo;
        const __m256i vb = load(b + i);
        mul_full(load(a + i), vb, _mm256_srli_epi64(vb, 32), hi, lo);
        store(out + i, br.reduce(hi, lo));
    }
    for (; i < n; ++i) out[i] = reduce_128(static_cast<u128>(a[i]) * b[i], m);
}

void mul_scalar_avx2(const u64* a, u64 w, u64 wp, std::size_t n, u64 q, u64* out) {
    std::size_t i = 0;
    if (q < (u64{1} << FpFma::kMaxBits)) {
        const FpFma ar(q);
        const __m256d vw = _mm256_set1_pd(static_cast<double>(w));
        for (; i + 4 <= n; i += 4) store(out + i, to_int(ar.positive(ar.mul_signed(to_double(load(a + i)), vw))));
        for (; i < n; ++i) out[i] = mul_shoup(a[i], w, wp, q);
        return;
    }
    const __m256i vw = set1(w), vw_h = set1(w >> 32), vwp = set1(wp), vwp_h = set1(wp >> 32);
    const __m256i vq = set1(q), vq_h = set1(q >> 32);
    for (; i + 4 <= n; i += 4)
        store(out + i, sub_if_ge(mul_shoup_lazy(load(a + i), vw, vw_h, vwp, vwp_h, vq, vq_h), vq));
    for (; i < n; ++i) out[i] = mul_shoup(a[i], w, wp, q);
}

// a*b + c with one reduction: the product reduced lazily to [0, 3q), plus c in [0, 4q) (4q < 2^63), then
// two conditional subtractions; one comparison fewer than mul followed by add, and one pass over memory.
void fma_avx2(const u64* a, const u64* b, const u64* c, std::size_t n, const Modulus& m, u64* out) {
    std::size_t i = 0;
    if (m.bits <= FpFma::kMaxBits) {  // a b in (-q, q), + c in (-q, 2q), then into [0, q)
        const FpFma ar(m.value);
        for (; i + 4 <= n; i += 4) {
            const __m256d s =
                _mm256_add_pd(ar.mul_signed(to_double(load(a + i)), to_double(load(b + i))), to_double(load(c + i)));
            store(out + i, to_int(ar.positive(FpFma::sub_if_ge(s, ar.vq))));
        }
        for (; i < n; ++i) out[i] = reduce_128(static_cast<u128>(a[i]) * b[i] + c[i], m);
        return;
    }
    const BarrettShift br(m.value, m.bits);
    const __m256i v2q = set1(2 * m.value);
    for (; i + 4 <= n; i += 4) {
        __m256i hi, lo;
        const __m256i vb = load(b + i);
        mul_full(load(a + i), vb, _mm256_srli_epi64(vb, 32), hi, lo);
        const __m256i s = _mm256_add_epi64(br.reduce_lazy(hi, lo), load(c + i));
        store(out + i, sub_if_ge(sub_if_ge(s, v2q), br.q));
    }
    for (; i < n; ++i) out[i] = reduce_128(static_cast<u128>(a[i]) * b[i] + c[i], m);
}

// Sums of products, 4 columns at a time, in the column-sum scheme of the AVX-512 body (see kernels_avx512.cpp):
// per chunk of up to 8 terms five carry-free 64-bit sums of 32x32-bit partial products, then one reduction of the
// 128-bit sum to [0, t). factor(i, c, f_l, f_h) gives term i's second operand at column c (a broadcast constant for
// base conversion, a vector for the key-switching inner product) and its high half; finish(c, r) stores column c's r.
template <class Factor, class Finish>
inline void dot_columns(const u64* const* y, std::size_t s, std::size_t n, const Modulus& m, Factor factor,
                        Finish finish) {
    const u64 t = m.value;
    const u64 r64 = static_cast<u64>((static_cast<u128>(1) << 64) % t), r64p = shoup(r64, t), bar = ~u64{0} / t;
    const __m256i vt = set1(t), vt_h = set1(t >> 32), v2t = set1(2 * t);
    const __m256i vr64 = set1(r64), vr64_h = set1(r64 >> 32), vr64p = set1(r64p), vr64p_h = set1(r64p >> 32);
    const __m256i vbar = set1(bar), vbar_h = set1(bar >> 32), m32 = set1(0xffffffffULL);
    for (std::size_t c = 0; c + 4 <= n; c += 4) {
        __m256i r = _mm256_setzero_si256();
        for (std::size_t i0 = 0; i0 < s; i0 += 8) {
            const std::size_t i1 = i0 + 8 < s ? i0 + 8 : s;
            __m256i ll_lo = _mm256_setzero_si256(), ll_hi = ll_lo, lh = ll_lo, hl = ll_lo, hh = ll_lo;
            for (std::size_t i = i0; i < i1; ++i) {
                const __m256i x = load(y[i] + c), x_h = _mm256_srli_epi64(x, 32);
                __m256i f_l, f_h;
                factor(i, c, f_l, f_h);
                const __m256i ll = _mm256_mul_epu32(x, f_l);
                ll_lo = _mm256_add_epi64(ll_lo, _mm256_and_si256(ll, m32));
                ll_hi = _mm256_add_epi64(ll_hi, _mm256_srli_epi64(ll, 32));
                lh = _mm256_add_epi64(lh, _mm256_mul_epu32(x, f_h));
                hl = _mm256_add_epi64(hl, _mm256_mul_epu32(x_h, f_l));
                hh = _mm256_add_epi64(hh, _mm256_mul_epu32(x_h, f_h));
            }
            __m256i mid = _mm256_add_epi64(_mm256_and_si256(lh, m32), _mm256_and_si256(hl, m32));
            mid = _mm256_add_epi64(mid, _mm256_add_epi64(ll_hi, _mm256_srli_epi64(ll_lo, 32)));
            const __m256i lo = _mm256_or_si256(_mm256_slli_epi64(mid, 32), _mm256_and_si256(ll_lo, m32));
            __m256i hi = _mm256_add_epi64(hh, _mm256_srli_epi64(lh, 32));
            hi = _mm256_add_epi64(hi, _mm256_add_epi64(_mm256_srli_epi64(hl, 32), _mm256_srli_epi64(mid, 32)));
            const __m256i a = mul_shoup_lazy(hi, vr64, vr64_h, vr64p, vr64p_h, vt, vt_h);
            const __m256i b = _mm256_sub_epi64(lo, mul_lo(mul_hi(lo, vbar, vbar_h), vt, vt_h));
            const __m256i part = sub_if_ge(sub_if_ge(_mm256_add_epi64(a, b), v2t), vt);
            r = sub_if_ge(_mm256_add_epi64(r, part), vt);
        }
        finish(c, r);
    }
}

// The overflow correction of an exact base conversion, four columns: r - table[index[0..3]] mod t for r < t (a borrow
// makes the difference negative as a signed word).
inline __m256i minus_table(__m256i r, const std::uint8_t* index, const u64* table, __m256i vt) {
    std::int32_t idx4;
    std::memcpy(&idx4, index, 4);
    const __m256i sub = _mm256_i64gather_epi64(reinterpret_cast<const long long*>(table),
                                               _mm256_cvtepu8_epi64(_mm_cvtsi32_si128(idx4)), 8);
    const __m256i d = _mm256_sub_epi64(r, sub);
    return _mm256_add_epi64(d, _mm256_and_si256(_mm256_cmpgt_epi64(_mm256_setzero_si256(), d), vt));
}

// Base-conversion dot product with constants.
void dot_const_avx2(const u64* const* y, const u64* f, std::size_t s, std::size_t n, const Modulus& m, u64* out,
                    const std::uint8_t* index, const u64* table) {
    const __m256i vt = set1(m.value);
    dot_columns(
        y, s, n, m,
        [&](std::size_t i, std::size_t, __m256i& f_l, __m256i& f_h) {
            f_l = set1(f[i]);
            f_h = set1(f[i] >> 32);
        },
        [&](std::size_t c, __m256i r) { store(out + c, index ? minus_table(r, index + c, table, vt) : r); });
    dot_const_tail(y, f, s, n & ~std::size_t{3}, n, m, out, index, table);
}

// Dot product of vectors (key-switching inner products): one reduction per column, where k fused multiply-adds
// reduce k times.
void dot_avx2(const u64* const* a, const u64* const* b, std::size_t k, std::size_t n, const Modulus& m, u64* out,
              bool accumulate) {
    const __m256i vq = set1(m.value);
    dot_columns(
        a, k, n, m,
        [&](std::size_t j, std::size_t c, __m256i& f_l, __m256i& f_h) {
            f_l = load(b[j] + c);
            f_h = _mm256_srli_epi64(f_l, 32);
        },
        [&](std::size_t c, __m256i r) {
            if (accumulate) r = sub_if_ge(_mm256_add_epi64(r, load(out + c)), vq);
            store(out + c, r);
        });
    dot_tail(a, b, k, n & ~std::size_t{3}, n, m, out, accumulate);
}

// ---------------------------------------------------------------- NTT
// The stages (wide, gap 2, gap 1) are written once over an arithmetic policy A:
//   IntShoup  64-bit integer lanes, Shoup products from four 32x32-bit multiplies (any q < 2^61);
//   FpFma     double-precision lanes for q < 2^50: a product y w is exact as h + l (h = fl(y w), l = fma(y, w, -h)),
//             the quotient round(h / q) is off by less than one, so r = (h - quotient q) + l is exact and in (-q, q)
//             (a product, 3 FMAs and 2 additions where the integer product takes 10 multiplies; see FpFma for the
//             bounds, which assume IEEE double arithmetic in its default rounding mode).
// Both keep the same lazy ranges as the scalar body (forward [0, 4q), inverse [0, 2q)) and end on [0, q): the
// outputs are the same bits.

// Twiddles of stage m for blocks i..i+1 (gap 2): [w_i, w_i, w_{i+1}, w_{i+1}].
inline __m256i twiddles_gap2(const u64* w) {
    return _mm256_permute4x64_epi64(_mm256_castsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(w))), 0x50);
}
// Twiddles of stage m for blocks i..i+3 (gap 1), in the lane order of unpacklo/hi: [w_i, w_{i+2}, w_{i+1}, w_{i+3}].
inline __m256i twiddles_gap1(const u64* w) { return _mm256_permute4x64_epi64(load(w), 0xD8); }

struct IntShoup {
    using V = __m256i;
    struct Tw {
        __m256i w, w_h, wp, wp_h;
    };
    __m256i vq, vq_h, v2q;
    explicit IntShoup(u64 q) : vq(set1(q)), vq_h(set1(q >> 32)), v2q(set1(2 * q)) {}
    static Tw twiddle(__m256i w, __m256i wp) { return {w, _mm256_srli_epi64(w, 32), wp, _mm256_srli_epi64(wp, 32)}; }
    static Tw broadcast(u64 w, u64 wp) { return twiddle(set1(w), set1(wp)); }
    static Tw gap2(const u64* w, const u64* wp) { return twiddle(twiddles_gap2(w), twiddles_gap2(wp)); }
    static Tw gap1(const u64* w, const u64* wp) { return twiddle(twiddles_gap1(w), twiddles_gap1(wp)); }
    static V ld(const u64* p) { return load(p); }
    static void st(u64* p, V v) { store(p, v); }
    static void st_out(u64* p, V v) { store(p, v); }
    static V pair_lo(V a, V b) { return _mm256_permute2x128_si256(a, b, 0x20); }
    static V pair_hi(V a, V b) { return _mm256_permute2x128_si256(a, b, 0x31); }
    static V unpack_lo(V a, V b) { return _mm256_unpacklo_epi64(a, b); }
    static V unpack_hi(V a, V b) { return _mm256_unpackhi_epi64(a, b); }
    V mul(V y, const Tw& t) const { return mul_shoup_lazy(y, t.w, t.w_h, t.wp, t.wp_h, vq, vq_h); }  // [0, 2q)
    V reduce4(V x) const { return sub_if_ge(sub_if_ge(x, v2q), vq); }  // [0, 4q) -> [0, q)
    template <bool Forward>
    void butterfly(V& x, V& y, const Tw& t) const {
        if constexpr (Forward) {  // CT on [0, 4q)
            const V u = sub_if_ge(x, v2q), v = mul(y, t);
            x = _mm256_add_epi64(u, v);
            y = _mm256_add_epi64(_mm256_sub_epi64(u, v), v2q);
        } else {  // GS on [0, 2q)
            const V u = x, v = y;
            x = sub_if_ge(_mm256_add_epi64(u, v), v2q);
            y = mul(_mm256_add_epi64(_mm256_sub_epi64(u, v), v2q), t);
        }
    }
};

// The NTT's stages for q < 2^50 in double precision with signed lazy values: a forward butterfly is x + v, x - v for
// v = y w in (-q, q), an inverse one u + v, (u - v) w; no comparisons. The values grow (by q a forward stage, doubling
// an inverse one) and are brought back into (-q, q) by `reduce` at the stages that FpSchedule picks, just before a
// multiplication's operand could pass kMaxFactor. The first stage reads the integers, the last writes them in [0, q)
// (the inverse's also times n^-1, folded into its twiddle): no passes of their own. The outputs are the residues, so
// the same bits as every other body.
//   Reduce  forward: x and y reduced before the butterfly; inverse: u + v reduced after it.
//   IntIn   the stage reads integers.
//   Last    the inverse's last stage: x = (u + v) n^-1, y = (u - v) w n^-1 (the policy's own twiddle), written as
//           integers in [0, q).
template <bool Reduce, bool IntIn, bool Last>
struct FpStage : FpFma {
    using V = __m256d;
    using Tw = __m256d;
    __m256d ninv, wlast;
    explicit FpStage(u64 q, u64 n_inv = 0, u64 w_last = 0)
        : FpFma(q),
          ninv(_mm256_set1_pd(static_cast<double>(n_inv))),
          wlast(_mm256_set1_pd(static_cast<double>(w_last))) {}
    static Tw broadcast(u64 w, u64) { return _mm256_set1_pd(static_cast<double>(w)); }
    static Tw gap2(const u64* w, const u64*) { return to_double(twiddles_gap2(w)); }
    static Tw gap1(const u64* w, const u64*) { return to_double(twiddles_gap1(w)); }
    static V ld(const u64* p) {
        if constexpr (IntIn) return to_double(load(p));
        else return _mm256_loadu_pd(reinterpret_cast<const double*>(p));
    }
    static void st(u64* p, V v) {
        if constexpr (Last) store(p, to_int(v));
        else _mm256_storeu_pd(reinterpret_cast<double*>(p), v);
    }
    static void st_out(u64* p, V v) { store(p, to_int(v)); }
    static V pair_lo(V a, V b) { return _mm256_permute2f128_pd(a, b, 0x20); }
    static V pair_hi(V a, V b) { return _mm256_permute2f128_pd(a, b, 0x31); }
    static V unpack_lo(V a, V b) { return _mm256_unpacklo_pd(a, b); }
    static V unpack_hi(V a, V b) { return _mm256_unpackhi_pd(a, b); }
    V reduce4(V x) const { return positive(reduce(x)); }  // the forward transform's outputs, to [0, q)
    template <bool Forward>
    void butterfly(V& x, V& y, Tw w) const {
        if constexpr (Forward) {
            if constexpr (Reduce) x = reduce(x), y = reduce(y);
            const V v = mul_signed(y, w);
            y = _mm256_sub_pd(x, v);
            x = _mm256_add_pd(x, v);
        } else if constexpr (Last) {
            const V s = _mm256_add_pd(x, y), d = _mm256_sub_pd(x, y);
            x = positive(mul_signed(s, ninv));
            y = positive(mul_signed(d, wlast));
        } else {
            const V s = _mm256_add_pd(x, y);
            y = mul_signed(_mm256_sub_pd(x, y), w);
            x = Reduce ? reduce(s) : s;
        }
    }
};

// Which stages of a double-precision transform reduce, from bounds on |values| in units of q (the inputs: [0, q)).
// Forward: a stage adds at most q; its operand y must stay within kMaxFactor, so a stage whose inputs could exceed it
// reduces them first (back to q). Inverse: u + v doubles the bound and the operand u - v is at most twice the inputs'
// bound, so a stage reduces its sums when the next stage's operand could exceed kMaxFactor.
struct FpSchedule {
    bool reduce[64] = {};
    FpSchedule(u64 q, int log_n, bool forward) {
        const double qd = static_cast<double>(q);
        double b = 1;
        for (int s = 0; s < log_n; ++s) {
            if (forward) {
                if (b * qd > FpFma::kMaxFactor) reduce[s] = true, b = 1;
                b += 1;
            } else {
                b *= 2;
                if (2 * b * qd > FpFma::kMaxFactor) reduce[s] = true, b = 1;
            }
        }
    }
};

// Products reduced into (-q, q) that a sum in [0, q) takes before it may reach 2^53: 2^53 / q - 1 (7 for q < 2^50, 31
// for q < 2^48), at most 32.
inline std::size_t fp_terms(u64 q) { return std::min<std::size_t>(32, ((u64{1} << 53) / q) - 1); }

// Dot product of vectors for q < 2^50 in double precision: each product exactly reduced into (-q, q) by
// FpFma::mul_signed (a product, 3 FMAs and 2 additions, where the integer column scheme takes 4 32x32-bit products and
// the carries), fp_terms(q) of them summed exactly, the sum reduced to [0, q): the same residues.
void dot_fp_avx2(const u64* const* a, const u64* const* b, std::size_t k, std::size_t n, const Modulus& m, u64* out,
                 bool accumulate) {
    const std::size_t kTerms = fp_terms(m.value);
    const FpFma ar(m.value);
    const __m256d zero = _mm256_setzero_pd();
    for (std::size_t c = 0; c + 4 <= n; c += 4) {
        __m256d r = accumulate ? to_double(load(out + c)) : zero;  // [0, q)
        for (std::size_t j0 = 0; j0 < k; j0 += kTerms) {
            const std::size_t j1 = std::min(k, j0 + kTerms);
            for (std::size_t j = j0; j < j1; ++j)
                r = _mm256_add_pd(r, ar.mul_signed(to_double(load(a[j] + c)), to_double(load(b[j] + c))));
            r = ar.positive(ar.reduce(r));  // |r| < (kTerms + 1) q <= 2^53 before
        }
        store(out + c, to_int(r));
    }
    dot_tail(a, b, k, n & ~std::size_t{3}, n, m, out, accumulate);
}

// Base-conversion dot product for sources below 2^50 (kSmallSourceBits) and t < 2^50 in double precision: each y f
// reduced exactly into (-t, t) by FpFma::mul_signed (y < 2^50 is within its kMaxFactor), fp_terms(t) of them summed
// exactly, then the overflow correction: the residues of dot_const_avx2.
void dot_const_fp_avx2(const u64* const* y, const u64* f, std::size_t s, std::size_t n, const Modulus& m, u64* out,
                       const std::uint8_t* index, const u64* table) {
    static_assert(arith::kSmallSourceBits <= 51, "small sources must be within FpFma::kMaxFactor");
    if (m.value >= (u64{1} << FpFma::kMaxBits)) return dot_const_avx2(y, f, s, n, m, out, index, table);
    const std::size_t kTerms = fp_terms(m.value);
    const FpFma ar(m.value);
    const __m256d zero = _mm256_setzero_pd();
    const __m256i vt = set1(m.value);
    std::vector<double> fd(f, f + s);
    for (std::size_t c = 0; c + 4 <= n; c += 4) {
        __m256d r = zero;
        for (std::size_t j0 = 0; j0 < s; j0 += kTerms) {
            const std::size_t j1 = std::min(s, j0 + kTerms);
            for (std::size_t j = j0; j < j1; ++j)
                r = _mm256_add_pd(r, ar.mul_signed(to_double(load(y[j] + c)), _mm256_broadcast_sd(&fd[j])));
            r = ar.positive(ar.reduce(r));
        }
        const __m256i ri = to_int(r);
        store(out + c, index ? minus_table(ri, index + c, table, vt) : ri);
    }
    dot_const_tail(y, f, s, n & ~std::size_t{3}, n, m, out, index, table);
}

void dot_any_avx2(const u64* const* a, const u64* const* b, std::size_t k, std::size_t n, const Modulus& m, u64* out,
                  bool accumulate) {
    if (m.value < (u64{1} << FpFma::kMaxBits)) dot_fp_avx2(a, b, k, n, m, out, accumulate);
    else dot_avx2(a, b, k, n, m, out, accumulate);
}

// The stages work on a range of the transform's words, [lo, hi) (aligned to the stage's blocks), so that the last
// forward stages (first inverse ones) run block by block while the block is in L1.
// One stage with gap >= 4: blocks of 2 gap words, each with one twiddle broadcast over its whole x and y halves.
template <bool Forward, class A>
inline void wide_stage(const A& ar, u64* a, std::size_t m, std::size_t gap, const u64* w, const u64* wp, std::size_t lo,
                       std::size_t hi) {
    for (std::size_t i = lo / (2 * gap); i < hi / (2 * gap); ++i) {
        const auto tw = A::broadcast(w[m + i], wp[m + i]);
        u64* x = a + 2 * i * gap;
        u64* y = x + gap;
        for (std::size_t j = 0; j < gap; j += 4) {
            auto u = A::ld(x + j), v = A::ld(y + j);
            ar.template butterfly<Forward>(u, v, tw);
            A::st(x + j, u);
            A::st(y + j, v);
        }
    }
}

// Gap 2: two blocks of 4 per pair of registers, halves exchanged across the 128-bit lanes.
template <bool Forward, class A>
inline void gap2_stage(const A& ar, u64* a, std::size_t m, const u64* w, const u64* wp, std::size_t lo,
                       std::size_t hi) {
    for (std::size_t i = lo / 4; i < hi / 4; i += 2) {
        u64* p = a + 4 * i;
        const auto v0 = A::ld(p), v1 = A::ld(p + 4);
        auto x = A::pair_lo(v0, v1), y = A::pair_hi(v0, v1);
        ar.template butterfly<Forward>(x, y, A::gap2(w + m + i, wp + m + i));
        A::st(p, A::pair_lo(x, y));
        A::st(p + 4, A::pair_hi(x, y));
    }
}

// Gap 1: pairs interleaved; the forward transform's last stage also reduces its outputs to [0, q) and stores them
// as integers.
template <bool Forward, class A>
inline void gap1_stage(const A& ar, u64* a, std::size_t m, const u64* w, const u64* wp, std::size_t lo,
                       std::size_t hi) {
    for (std::size_t i = lo / 2; i < hi / 2; i += 4) {
        u64* p = a + 2 * i;
        const auto v0 = A::ld(p), v1 = A::ld(p + 4);
        auto x = A::unpack_lo(v0, v1), y = A::unpack_hi(v0, v1);
        ar.template butterfly<Forward>(x, y, A::gap1(w + m + i, wp + m + i));
        if constexpr (Forward) {
            x = ar.reduce4(x);
            y = ar.reduce4(y);
            A::st_out(p, A::unpack_lo(x, y));
            A::st_out(p + 4, A::unpack_hi(x, y));
        } else {
            A::st(p, A::unpack_lo(x, y));
            A::st(p + 4, A::unpack_hi(x, y));
        }
    }
}

// Stages whose blocks are at most kNttBlock words run block by block (the forward transform's last stages, the
// inverse's first ones): the block stays in L1 through all of them, instead of one pass over the whole transform per
// stage. The same butterflies in the same order per word: the result is the same bits.
constexpr std::size_t kNttBlock = 2048;

// The stage loops, over a `run(s, f)` that calls f with the arithmetic policy of stage s (0 = the first): the
// integer policy is the same at every stage, the double-precision one depends on the stage (FpStage). The forward
// transform's first stage is one pass over the whole transform (it converts the inputs), as are the inverse's last.
// (Two stages per pass over the whole transform, radix 4, measured no faster here: these transforms are bound by their
// arithmetic, not by memory.)
template <class Run>
void ntt_forward_stages(Run run, u64* a, const NttTables& t) {
    const std::size_t n = t.n();
    const u64* w = t.root_powers();
    const u64* wp = t.root_shoup();
    int s = 0;
    std::size_t m = 1, gap = n >> 1;
    for (; gap >= 4 && (m == 1 || 2 * gap > kNttBlock); m <<= 1, gap >>= 1, ++s)
        run(s, [&](const auto& ar) { wide_stage<true>(ar, a, m, gap, w, wp, 0, n); });
    const std::size_t block = std::min(n, kNttBlock);
    for (std::size_t lo = 0; lo < n; lo += block) {
        std::size_t mb = m, g = gap;
        int sb = s;
        for (; g >= 4; mb <<= 1, g >>= 1, ++sb)
            run(sb, [&](const auto& ar) { wide_stage<true>(ar, a, mb, g, w, wp, lo, lo + block); });
        run(sb, [&](const auto& ar) { gap2_stage<true>(ar, a, mb, w, wp, lo, lo + block); });
        run(sb + 1, [&](const auto& ar) { gap1_stage<true>(ar, a, 2 * mb, w, wp, lo, lo + block); });
    }
}

template <class Run>
void ntt_inverse_stages(Run run, u64* a, const NttTables& t) {
    const std::size_t n = t.n();
    const u64* w = t.inv_root_powers();
    const u64* wp = t.inv_root_shoup();
    const std::size_t block = std::min(n, kNttBlock);
    int s = 2;
    std::size_t m = n >> 3, gap = 4;
    for (std::size_t lo = 0; lo < n; lo += block) {
        run(0, [&](const auto& ar) { gap1_stage<false>(ar, a, n >> 1, w, wp, lo, lo + block); });
        run(1, [&](const auto& ar) { gap2_stage<false>(ar, a, n >> 2, w, wp, lo, lo + block); });
        std::size_t mb = m, g = gap;
        for (int sb = s; mb > 1 && 2 * g <= block; mb >>= 1, g <<= 1, ++sb)
            run(sb, [&](const auto& ar) { wide_stage<false>(ar, a, mb, g, w, wp, lo, lo + block); });
    }
    while (m > 1 && 2 * gap <= block) m >>= 1, gap <<= 1, ++s;
    for (; m >= 1; m >>= 1, gap <<= 1, ++s)
        run(s, [&](const auto& ar) { wide_stage<false>(ar, a, m, gap, w, wp, 0, n); });
}

void ntt_forward_avx2(u64* a, const NttTables& t) {
    const std::size_t n = t.n();
    if (n < 16) return ntt_forward_scalar(a, t);
    if (t.modulus().bits > FpFma::kMaxBits) {
        const IntShoup ar(t.q());
        return ntt_forward_stages([&](int, auto f) { f(ar); }, a, t);
    }
    const FpSchedule sched(t.q(), t.log_n(), true);
    const u64 q = t.q();
    ntt_forward_stages(
        [&](int s, auto f) {
            if (s == 0) f(FpStage<false, true, false>(q));
            else if (sched.reduce[s]) f(FpStage<true, false, false>(q));
            else f(FpStage<false, false, false>(q));
        },
        a, t);
}

void ntt_inverse_avx2(u64* a, const NttTables& t) {
    const std::size_t n = t.n();
    if (n < 16) return ntt_inverse_scalar(a, t);
    if (t.modulus().bits > FpFma::kMaxBits) {
        const IntShoup ar(t.q());
        ntt_inverse_stages([&](int, auto f) { f(ar); }, a, t);
        return mul_scalar_avx2(a, t.n_inv(), t.n_inv_shoup(), n, t.q(), a);
    }
    const FpSchedule sched(t.q(), t.log_n(), false);
    const int last = t.log_n() - 1;
    const u64 q = t.q(), w_last = mul_mod(t.inv_root_powers()[1], t.n_inv(), t.modulus());
    ntt_inverse_stages(
        [&](int s, auto f) {
            if (s == last) f(FpStage<false, false, true>(q, t.n_inv(), w_last));
            else if (s == 0 && sched.reduce[s]) f(FpStage<true, true, false>(q));
            else if (s == 0) f(FpStage<false, true, false>(q));
            else if (sched.reduce[s]) f(FpStage<true, false, false>(q));
            else f(FpStage<false, false, false>(q));
        },
        a, t);
}

}  // namespace

const KernelTable kAvx2Kernels = {
    .level = SimdLevel::avx2,
    .name = "avx2",
    .add = add_avx2,
    .sub = sub_avx2,
    .negate = negate_avx2,
    .mul = mul_avx2,
    .mul_scalar = mul_scalar_avx2,
    .fma = fma_avx2,
    .dot_const = dot_const_avx2,
    .dot_const_small = dot_const_fp_avx2,
    .dot = dot_any_avx2,
    .ntt_forward = ntt_forward_avx2,
    .ntt_inverse = ntt_inverse_avx2,
};

}  // namespace kasoku::arith::detail
