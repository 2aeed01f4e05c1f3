// AVX2 bodies of the element-wise kernels and the NTT (compiled with -mavx2 only in this file).
#include <cstdint>
#include <cstring>

#include "kernels_internal.hpp"
#include "simd_avx2_internal.hpp"

namespace kasoku::arith::detail {

namespace {
using namespace avx2;

// out[i] = vec(i) for whole vectors (streamed when large and not in place, see kStreamBytes), scalar(i) for the
// tail.
template <class V, class S>
inline void elementwise(std::size_t n, u64* out, bool in_place, V vec, S scalar) {
    std::size_t i = 0;
    if (!in_place && n * sizeof(u64) >= kStreamBytes && reinterpret_cast<std::uintptr_t>(out) % 32 == 0) {
        for (; i + 4 <= n; i += 4) _mm256_stream_si256(reinterpret_cast<__m256i*>(out + i), vec(i));
        _mm_sfence();
    } else {
        for (; i + 4 <= n; i += 4) store(out + i, vec(i));
    }
    for (; i < n; ++i) out[i] = scalar(i);
}

void add_avx2(const u64* a, const u64* b, std::size_t n, u64 q, u64* out) {
    const __m256i vq = set1(q);
    elementwise(
        n, out, out == a || out == b,
        [&](std::size_t i) { return sub_if_ge(_mm256_add_epi64(load(a + i), load(b + i)), vq); },
        [&](std::size_t i) { return add_mod(a[i], b[i], q); });
}

void sub_avx2(const u64* a, const u64* b, std::size_t n, u64 q, u64* out) {
    const __m256i vq = set1(q);
    elementwise(
        n, out, out == a || out == b,
        [&](std::size_t i) { return sub_if_ge(_mm256_add_epi64(load(a + i), _mm256_sub_epi64(vq, load(b + i))), vq); },
        [&](std::size_t i) { return sub_mod(a[i], b[i], q); });
}

void negate_avx2(const u64* a, std::size_t n, u64 q, u64* out) {
    const __m256i vq = set1(q), zero = _mm256_setzero_si256(), ones = _mm256_set1_epi64x(-1);
    elementwise(
        n, out, out == a,
        [&](std::size_t i) {
            const __m256i x = load(a + i);
            const __m256i nz = _mm256_xor_si256(_mm256_cmpeq_epi64(x, zero), ones);
            return _mm256_and_si256(_mm256_sub_epi64(vq, x), nz);
        },
        [&](std::size_t i) { return neg_mod(a[i], q); });
}

void mul_avx2(const u64* a, const u64* b, std::size_t n, const Modulus& m, u64* out) {
    const BarrettShift br(m.value, m.bits);
    std::size_t i = 0;
    for (; i + 4 <= n; i += 4) {
        __m256i hi, lo;
        const __m256i vb = load(b + i);
        mul_full(load(a + i), vb, _mm256_srli_epi64(vb, 32), hi, lo);
        store(out + i, br.reduce(hi, lo));
    }
    for (; i < n; ++i) out[i] = reduce_128(static_cast<u128>(a[i]) * b[i], m);
}

void mul_scalar_avx2(const u64* a, u64 w, u64 wp, std::size_t n, u64 q, u64* out) {
    const __m256i vw = set1(w), vw_h = set1(w >> 32), vwp = set1(wp), vwp_h = set1(wp >> 32);
    const __m256i vq = set1(q), vq_h = set1(q >> 32);
    std::size_t i = 0;
    for (; i + 4 <= n; i += 4)
        store(out + i, sub_if_ge(mul_shoup_lazy(load(a + i), vw, vw_h, vwp, vwp_h, vq, vq_h), vq));
    for (; i < n; ++i) out[i] = mul_shoup(a[i], w, wp, q);
}

// a*b + c with one reduction: the product reduced lazily to [0, 3q), plus c in [0, 4q) (4q < 2^63), then
// two conditional subtractions; one comparison fewer than mul followed by add, and one pass over memory.
void fma_avx2(const u64* a, const u64* b, const u64* c, std::size_t n, const Modulus& m, u64* out) {
    const BarrettShift br(m.value, m.bits);
    const __m256i v2q = set1(2 * m.value);
    std::size_t i = 0;
    for (; i + 4 <= n; i += 4) {
        __m256i hi, lo;
        const __m256i vb = load(b + i);
        mul_full(load(a + i), vb, _mm256_srli_epi64(vb, 32), hi, lo);
        const __m256i s = _mm256_add_epi64(br.reduce_lazy(hi, lo), load(c + i));
        store(out + i, sub_if_ge(sub_if_ge(s, v2q), br.q));
    }
    for (; i < n; ++i) out[i] = reduce_128(static_cast<u128>(a[i]) * b[i] + c[i], m);
}

// Base-conversion dot product; the column-sum scheme of the AVX-512 body (see kernels_avx512.cpp), 4 lanes.
void dot_const_avx2(const u64* const* y, const u64* f, std::size_t s, std::size_t n, const Modulus& m, u64* out,
                    const std::uint8_t* index, const u64* table) {
    const u64 t = m.value;
    const u64 r64 = static_cast<u64>((static_cast<u128>(1) << 64) % t), r64p = shoup(r64, t), bar = ~u64{0} / t;
    const __m256i vt = set1(t), vt_h = set1(t >> 32), v2t = set1(2 * t);
    const __m256i vr64 = set1(r64), vr64_h = set1(r64 >> 32), vr64p = set1(r64p), vr64p_h = set1(r64p >> 32);
    const __m256i vbar = set1(bar), vbar_h = set1(bar >> 32), m32 = set1(0xffffffffULL);
    std::size_t c = 0;
    for (; c + 4 <= n; c += 4) {
        __m256i r = _mm256_setzero_si256();
        for (std::size_t i0 = 0; i0 < s; i0 += 8) {
            const std::size_t i1 = i0 + 8 < s ? i0 + 8 : s;
            __m256i ll_lo = _mm256_setzero_si256(), ll_hi = ll_lo, lh = ll_lo, hl = ll_lo, hh = ll_lo;
            for (std::size_t i = i0; i < i1; ++i) {
                const __m256i x = load(y[i] + c), x_h = _mm256_srli_epi64(x, 32);
                const __m256i f_l = set1(f[i]), f_h = set1(f[i] >> 32);
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
        if (index) {  // r - table[index] mod t: a borrow makes the difference negative as a signed word
            std::int32_t idx4;
            std::memcpy(&idx4, index + c, 4);
            const __m256i sub = _mm256_i64gather_epi64(reinterpret_cast<const long long*>(table),
                                                       _mm256_cvtepu8_epi64(_mm_cvtsi32_si128(idx4)), 8);
            const __m256i d = _mm256_sub_epi64(r, sub);
            r = _mm256_add_epi64(d, _mm256_and_si256(_mm256_cmpgt_epi64(_mm256_setzero_si256(), d), vt));
        }
        store(out + c, r);
    }
    dot_const_tail(y, f, s, c, n, m, out, index, table);
}

// One butterfly layer of 4 lanes with per-lane twiddles (w, wp): the forward CT butterfly on [0, 4q) inputs.
inline void ct_butterfly(__m256i& x, __m256i& y, __m256i w, __m256i wp, __m256i vq, __m256i vq_h, __m256i v2q) {
    __m256i u = sub_if_ge(x, v2q);
    __m256i v = mul_shoup_lazy(y, w, _mm256_srli_epi64(w, 32), wp, _mm256_srli_epi64(wp, 32), vq, vq_h);
    x = _mm256_add_epi64(u, v);
    y = _mm256_add_epi64(_mm256_sub_epi64(u, v), v2q);
}

// The inverse GS butterfly on [0, 2q) inputs.
inline void gs_butterfly(__m256i& x, __m256i& y, __m256i w, __m256i wp, __m256i vq, __m256i vq_h, __m256i v2q) {
    __m256i u = x, v = y;
    x = sub_if_ge(_mm256_add_epi64(u, v), v2q);
    __m256i d = _mm256_add_epi64(_mm256_sub_epi64(u, v), v2q);
    y = mul_shoup_lazy(d, w, _mm256_srli_epi64(w, 32), wp, _mm256_srli_epi64(wp, 32), vq, vq_h);
}

// Twiddles of stage m for blocks i..i+1 (gap 2): [w_i, w_i, w_{i+1}, w_{i+1}].
inline __m256i twiddles_gap2(const u64* w) {
    return _mm256_permute4x64_epi64(_mm256_castsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(w))), 0x50);
}
// Twiddles of stage m for blocks i..i+3 (gap 1), in the lane order of unpacklo/hi: [w_i, w_{i+2}, w_{i+1}, w_{i+3}].
inline __m256i twiddles_gap1(const u64* w) { return _mm256_permute4x64_epi64(load(w), 0xD8); }

// The NTT's stages, shared by the forward (CT) and inverse (GS) transforms as in the AVX-512 file.
struct NttConsts {
    __m256i vq, vq_h, v2q;
    explicit NttConsts(u64 q) : vq(set1(q)), vq_h(set1(q >> 32)), v2q(set1(2 * q)) {}
};

template <bool Forward>
inline void butterfly(__m256i& x, __m256i& y, __m256i w, __m256i wp, const NttConsts& c) {
    if constexpr (Forward) ct_butterfly(x, y, w, wp, c.vq, c.vq_h, c.v2q);
    else gs_butterfly(x, y, w, wp, c.vq, c.vq_h, c.v2q);
}

// One stage with gap >= 4: m blocks, each with one twiddle broadcast over its whole x and y halves.
template <bool Forward>
inline void wide_stage(u64* a, std::size_t m, std::size_t gap, const u64* w, const u64* wp, const NttConsts& c) {
    for (std::size_t i = 0; i < m; ++i) {
        const __m256i vw = set1(w[m + i]), vwp = set1(wp[m + i]);
        u64* x = a + 2 * i * gap;
        u64* y = x + gap;
        for (std::size_t j = 0; j < gap; j += 4) {
            __m256i u = load(x + j), v = load(y + j);
            butterfly<Forward>(u, v, vw, vwp, c);
            store(x + j, u);
            store(y + j, v);
        }
    }
}

// Gap 2: two blocks of 4 per pair of registers, halves exchanged across the 128-bit lanes.
template <bool Forward>
inline void gap2_stage(u64* a, std::size_t m, const u64* w, const u64* wp, const NttConsts& c) {
    for (std::size_t i = 0; i < m; i += 2) {
        u64* p = a + 4 * i;
        const __m256i v0 = load(p), v1 = load(p + 4);
        __m256i x = _mm256_permute2x128_si256(v0, v1, 0x20), y = _mm256_permute2x128_si256(v0, v1, 0x31);
        butterfly<Forward>(x, y, twiddles_gap2(w + m + i), twiddles_gap2(wp + m + i), c);
        store(p, _mm256_permute2x128_si256(x, y, 0x20));
        store(p + 4, _mm256_permute2x128_si256(x, y, 0x31));
    }
}

// Gap 1: pairs interleaved; the forward transform's last stage also reduces its outputs to [0, q).
template <bool Forward>
inline void gap1_stage(u64* a, std::size_t m, const u64* w, const u64* wp, const NttConsts& c) {
    for (std::size_t i = 0; i < m; i += 4) {
        u64* p = a + 2 * i;
        const __m256i v0 = load(p), v1 = load(p + 4);
        __m256i x = _mm256_unpacklo_epi64(v0, v1), y = _mm256_unpackhi_epi64(v0, v1);
        butterfly<Forward>(x, y, twiddles_gap1(w + m + i), twiddles_gap1(wp + m + i), c);
        if constexpr (Forward) {
            x = sub_if_ge(sub_if_ge(x, c.v2q), c.vq);
            y = sub_if_ge(sub_if_ge(y, c.v2q), c.vq);
        }
        store(p, _mm256_unpacklo_epi64(x, y));
        store(p + 4, _mm256_unpackhi_epi64(x, y));
    }
}

void ntt_forward_avx2(u64* a, const NttTables& t) {
    const std::size_t n = t.n();
    if (n < 16) return ntt_forward_scalar(a, t);
    const u64* w = t.root_powers();
    const u64* wp = t.root_shoup();
    const NttConsts c(t.q());
    std::size_t m = 1;
    for (std::size_t gap = n >> 1; gap >= 4; m <<= 1, gap >>= 1) wide_stage<true>(a, m, gap, w, wp, c);
    gap2_stage<true>(a, m, w, wp, c);
    gap1_stage<true>(a, 2 * m, w, wp, c);
}

void ntt_inverse_avx2(u64* a, const NttTables& t) {
    const std::size_t n = t.n();
    if (n < 16) return ntt_inverse_scalar(a, t);
    const u64* w = t.inv_root_powers();
    const u64* wp = t.inv_root_shoup();
    const NttConsts c(t.q());
    std::size_t m = n >> 1;
    gap1_stage<false>(a, m, w, wp, c);
    gap2_stage<false>(a, m >> 1, w, wp, c);
    m >>= 2;
    for (std::size_t gap = 4; m >= 1; m >>= 1, gap <<= 1) wide_stage<false>(a, m, gap, w, wp, c);
    mul_scalar_avx2(a, t.n_inv(), t.n_inv_shoup(), n, t.q(), a);
}

}  // namespace

const KernelTable kAvx2Kernels = {SimdLevel::avx2, "avx2",  add_avx2,        sub_avx2,         negate_avx2,
                                  mul_avx2,        mul_scalar_avx2, fma_avx2, dot_const_avx2, ntt_forward_avx2, ntt_inverse_avx2};

}  // namespace kasoku::arith::detail
