// AVX-512F/DQ bodies of the element-wise kernels and the NTT, for any modulus up to 61 bits
// (compiled with -mavx512f -mavx512dq only in this file, or against SIMDe for the tests).
#include <cstdint>

#include "kernels_internal.hpp"
#include "simd_avx512_internal.hpp"

namespace kasoku::arith::detail::KASOKU_ISA_NS {

namespace {
using namespace avx512;

void add_avx512(const u64* a, const u64* b, std::size_t n, u64 q, u64* out) {
    const __m512i vq = set1(q);
    elementwise<Lanes>(
        n, out, out == a || out == b,
        [&](std::size_t i) { return sub_if_ge(_mm512_add_epi64(load(a + i), load(b + i)), vq); },
        [&](std::size_t i) { return add_mod(a[i], b[i], q); });
}

void sub_avx512(const u64* a, const u64* b, std::size_t n, u64 q, u64* out) {
    const __m512i vq = set1(q);
    elementwise<Lanes>(
        n, out, out == a || out == b,
        [&](std::size_t i) { return sub_if_ge(_mm512_add_epi64(load(a + i), _mm512_sub_epi64(vq, load(b + i))), vq); },
        [&](std::size_t i) { return sub_mod(a[i], b[i], q); });
}

void negate_avx512(const u64* a, std::size_t n, u64 q, u64* out) {
    const __m512i vq = set1(q);
    elementwise<Lanes>(
        n, out, out == a,
        [&](std::size_t i) {
            const __m512i x = load(a + i);
            return _mm512_maskz_sub_epi64(_mm512_test_epi64_mask(x, x), vq, x);  // q - x where x != 0, else 0
        },
        [&](std::size_t i) { return neg_mod(a[i], q); });
}

void mul_avx512(const u64* a, const u64* b, std::size_t n, const Modulus& m, u64* out) {
    const BarrettDq br(m.value, m.bits);
    std::size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m512i hi, lo;
        mul_full(load(a + i), load(b + i), hi, lo);
        store(out + i, br.reduce(hi, lo));
    }
    for (; i < n; ++i) out[i] = reduce_128(static_cast<u128>(a[i]) * b[i], m);
}

void mul_scalar_avx512(const u64* a, u64 w, u64 wp, std::size_t n, u64 q, u64* out) {
    const ShoupDq sh(q);
    const __m512i vw = set1(w), vwp = set1(wp), vq = set1(q);
    std::size_t i = 0;
    for (; i + 8 <= n; i += 8) store(out + i, sub_if_ge(sh.mul_lazy(load(a + i), vw, vwp), vq));
    for (; i < n; ++i) out[i] = mul_shoup(a[i], w, wp, q);
}

// a*b + c with one reduction: the product reduced lazily to [0, 3q), plus c in [0, 4q), two conditional
// subtractions (one fewer than mul then add, and one pass over memory).
void fma_avx512(const u64* a, const u64* b, const u64* c, std::size_t n, const Modulus& m, u64* out) {
    const BarrettDq br(m.value, m.bits);
    const __m512i v2q = set1(2 * m.value);
    std::size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m512i hi, lo;
        mul_full(load(a + i), load(b + i), hi, lo);
        const __m512i s = _mm512_add_epi64(br.reduce_lazy(hi, lo), load(c + i));
        store(out + i, sub_if_ge(sub_if_ge(s, v2q), br.q));
    }
    for (; i < n; ++i) out[i] = reduce_128(static_cast<u128>(a[i]) * b[i] + c[i], m);
}

// Up to 8 products of 32x32-bit halves summed as five 64-bit column sums (ll_lo, ll_hi: the low and high words of
// the low products; lh, hl; hh), reduced modulo t: for factors below 2^61 each partial product is below 2^61 (ll
// below 2^64, split), so 8 of them fit in 64 bits; the 128-bit sum is below 8 2^61 t, its high word below t, and
// it is reduced as hi (2^64 mod t) + lo with one Shoup and one Barrett step, to [0, t).
struct ColumnSums {
    __m512i vt, v2t, vr64, vr64p, vbar, m32;
    ShoupDq sh;
    explicit ColumnSums(u64 t)
        : vt(set1(t)),
          v2t(set1(2 * t)),
          vr64(set1(static_cast<u64>((static_cast<u128>(1) << 64) % t))),
          vr64p(set1(shoup(static_cast<u64>((static_cast<u128>(1) << 64) % t), t))),
          vbar(set1(~u64{0} / t)),  // floor(2^64 / t), t not a power of two
          m32(set1(0xffffffffULL)),
          sh(t) {}
    __m512i reduce(__m512i ll_lo, __m512i ll_hi, __m512i lh, __m512i hl, __m512i hh) const {
        // sum = ll_lo + (ll_hi + lh + hl) 2^32 + hh 2^64, carried into (hi, lo)
        __m512i mid = _mm512_add_epi64(_mm512_and_si512(lh, m32), _mm512_and_si512(hl, m32));
        mid = _mm512_add_epi64(mid, _mm512_add_epi64(ll_hi, _mm512_srli_epi64(ll_lo, 32)));
        const __m512i lo = _mm512_or_si512(_mm512_slli_epi64(mid, 32), _mm512_and_si512(ll_lo, m32));
        __m512i hi = _mm512_add_epi64(hh, _mm512_srli_epi64(lh, 32));
        hi = _mm512_add_epi64(hi, _mm512_add_epi64(_mm512_srli_epi64(hl, 32), _mm512_srli_epi64(mid, 32)));
        // hi (2^64 mod t) in [0, 2t) by Shoup, lo mod t in [0, 2t) by one-word Barrett
        const __m512i a = sh.mul_lazy(hi, vr64, vr64p);
        const __m512i b = _mm512_sub_epi64(lo, _mm512_mullo_epi64(mul_hi(lo, vbar), vt));
        return sub_if_ge(sub_if_ge(_mm512_add_epi64(a, b), v2t), vt);
    }
};

// out[c] = sum_i y[i][c] f[i] mod t, in chunks of up to 8 terms (ColumnSums; y < 2^61, f < t < 2^61).
void dot_const_avx512(const u64* const* y, const u64* f, std::size_t s, std::size_t n, const Modulus& m, u64* out,
                      const std::uint8_t* index, const u64* table) {
    const ColumnSums sums(m.value);
    const __m512i vt = sums.vt, m32 = sums.m32;
    const TableLookup lookup(table, s + 1);
    std::size_t c = 0;
    for (; c + 8 <= n; c += 8) {
        __m512i r = _mm512_setzero_si512();
        for (std::size_t i0 = 0; i0 < s; i0 += 8) {
            const std::size_t i1 = i0 + 8 < s ? i0 + 8 : s;
            __m512i ll_lo = _mm512_setzero_si512(), ll_hi = ll_lo, lh = ll_lo, hl = ll_lo, hh = ll_lo;
            for (std::size_t i = i0; i < i1; ++i) {
                const __m512i x = load(y[i] + c), x_h = _mm512_srli_epi64(x, 32);
                const __m512i f_l = set1(f[i]), f_h = set1(f[i] >> 32);
                const __m512i ll = _mm512_mul_epu32(x, f_l);
                ll_lo = _mm512_add_epi64(ll_lo, _mm512_and_si512(ll, m32));
                ll_hi = _mm512_add_epi64(ll_hi, _mm512_srli_epi64(ll, 32));
                lh = _mm512_add_epi64(lh, _mm512_mul_epu32(x, f_h));
                hl = _mm512_add_epi64(hl, _mm512_mul_epu32(x_h, f_l));
                hh = _mm512_add_epi64(hh, _mm512_mul_epu32(x_h, f_h));
            }
            r = sub_if_ge(_mm512_add_epi64(r, sums.reduce(ll_lo, ll_hi, lh, hl, hh)), vt);
        }
        if (index) r = sub_table_mod(r, index + c, lookup, vt);
        store(out + c, r);
    }
    dot_const_tail(y, f, s, c, n, m, out, index, table);
}

// out[c] = sum_j a[j][c] b[j][c] (+ out[c]) mod q: per 8 columns, each chunk of up to 8 terms summed as ColumnSums
// (four 32x32-bit products a term, no reduction) and reduced once, where a product and a fused multiply-add reduce
// every term. Every column's terms are read before its result is stored (out may be a[0]).
void dot_avx512(const u64* const* a, const u64* const* b, std::size_t k, std::size_t n, const Modulus& m, u64* out,
                bool accumulate) {
    const ColumnSums sums(m.value);
    const __m512i vq = sums.vt, m32 = sums.m32;
    std::size_t c = 0;
    for (; c + 8 <= n; c += 8) {
        __m512i r = accumulate ? load(out + c) : _mm512_setzero_si512();
        for (std::size_t j0 = 0; j0 < k; j0 += 8) {
            const std::size_t j1 = j0 + 8 < k ? j0 + 8 : k;
            __m512i ll_lo = _mm512_setzero_si512(), ll_hi = ll_lo, lh = ll_lo, hl = ll_lo, hh = ll_lo;
            for (std::size_t j = j0; j < j1; ++j) {
                const __m512i x = load(a[j] + c), y = load(b[j] + c);
                const __m512i x_h = _mm512_srli_epi64(x, 32), y_h = _mm512_srli_epi64(y, 32);
                const __m512i ll = _mm512_mul_epu32(x, y);
                ll_lo = _mm512_add_epi64(ll_lo, _mm512_and_si512(ll, m32));
                ll_hi = _mm512_add_epi64(ll_hi, _mm512_srli_epi64(ll, 32));
                lh = _mm512_add_epi64(lh, _mm512_mul_epu32(x, y_h));
                hl = _mm512_add_epi64(hl, _mm512_mul_epu32(x_h, y));
                hh = _mm512_add_epi64(hh, _mm512_mul_epu32(x_h, y_h));
            }
            r = sub_if_ge(_mm512_add_epi64(r, sums.reduce(ll_lo, ll_hi, lh, hl, hh)), vq);
        }
        store(out + c, r);
    }
    dot_tail(a, b, k, c, n, m, out, accumulate);
}

void ntt_forward_avx512(u64* a, const NttTables& t) {
    if (t.n() < 16) return ntt_forward_scalar(a, t);
    ntt_forward_body<ShoupDq>(a, t);
}

void ntt_inverse_avx512(u64* a, const NttTables& t) {
    if (t.n() < 16) return ntt_inverse_scalar(a, t);
    ntt_inverse_body<ShoupDq>(a, t);
    mul_scalar_avx512(a, t.n_inv(), t.n_inv_shoup(), t.n(), t.q(), a);
}

}  // namespace

const KernelTable kAvx512Kernels = {
    .level = SimdLevel::avx512,
    .name = KASOKU_ISA_LABEL("avx512"),
    .add = add_avx512,
    .sub = sub_avx512,
    .negate = negate_avx512,
    .mul = mul_avx512,
    .mul_scalar = mul_scalar_avx512,
    .fma = fma_avx512,
    .dot_const = dot_const_avx512,
    .dot_const_small = dot_const_avx512,
    .dot = dot_avx512,
    .ntt_forward = ntt_forward_avx512,
    .ntt_inverse = ntt_inverse_avx512,
};

}  // namespace kasoku::arith::detail::KASOKU_ISA_NS
