// AVX-512-IFMA bodies: 52-bit multiply-adds for moduli below 2^50 (4q < 2^52 keeps the lazy NTT inside 52
// bits); larger moduli go to the AVX-512DQ body. Compiled with -mavx512f -mavx512dq -mavx512ifma only in this
// file, or against SIMDe (with a lane-wise IFMA shim) for the tests.
#include <vector>

#include "kernels_internal.hpp"
#include "simd_avx512_internal.hpp"

namespace kasoku::arith::detail::KASOKU_ISA_NS {

namespace {
using namespace avx512;

bool fits(u64 q) { return q < (1ULL << kIfmaMaxBits); }

void mul_ifma(const u64* a, const u64* b, std::size_t n, const Modulus& m, u64* out) {
    if (!fits(m.value)) return kAvx512Kernels.mul(a, b, n, m, out);
    const BarrettIfma br(m.value, m.bits);
    const __m512i zero = _mm512_setzero_si512();
    std::size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m512i x = load(a + i), y = load(b + i);
        store(out + i, br.reduce(madd52hi(zero, x, y), madd52lo(zero, x, y)));
    }
    for (; i < n; ++i) out[i] = reduce_128(static_cast<u128>(a[i]) * b[i], m);
}

void mul_scalar_ifma(const u64* a, u64 w, u64 wp, std::size_t n, u64 q, u64* out) {
    if (!fits(q)) return kAvx512Kernels.mul_scalar(a, w, wp, n, q, out);
    const ShoupIfma sh(q);
    const __m512i vw = set1(w), vwp = ShoupIfma::prep(set1(wp)), vq = set1(q);
    std::size_t i = 0;
    for (; i + 8 <= n; i += 8) store(out + i, sub_if_ge(sh.mul_lazy(load(a + i), vw, vwp), vq));
    for (; i < n; ++i) out[i] = mul_shoup(a[i], w, wp, q);
}

void fma_ifma(const u64* a, const u64* b, const u64* c, std::size_t n, const Modulus& m, u64* out) {
    if (!fits(m.value)) return kAvx512Kernels.fma(a, b, c, n, m, out);
    const BarrettIfma br(m.value, m.bits);
    const __m512i zero = _mm512_setzero_si512(), v2q = set1(2 * m.value);
    std::size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m512i x = load(a + i), y = load(b + i);
        // product reduced lazily to [0, 3q), plus c: [0, 4q) < 2^52, then two conditional subtractions
        const __m512i s = _mm512_add_epi64(br.reduce_lazy(madd52hi(zero, x, y), madd52lo(zero, x, y)), load(c + i));
        store(out + i, sub_if_ge(sub_if_ge(s, v2q), br.q));
    }
    for (; i < n; ++i) out[i] = reduce_128(static_cast<u128>(a[i]) * b[i] + c[i], m);
}

void ntt_forward_ifma(u64* a, const NttTables& t) {
    if (!fits(t.q()) || t.n() < 16) return kAvx512Kernels.ntt_forward(a, t);
    ntt_forward_body<ShoupIfma>(a, t);
}

void ntt_inverse_ifma(u64* a, const NttTables& t) {
    if (!fits(t.q()) || t.n() < 16) return kAvx512Kernels.ntt_inverse(a, t);
    ntt_inverse_body<ShoupIfma>(a, t);
    mul_scalar_ifma(a, t.n_inv(), t.n_inv_shoup(), t.n(), t.q(), a);
}

// Additions have no products: the DQ bodies serve.
void add_ifma(const u64* a, const u64* b, std::size_t n, u64 q, u64* out) { kAvx512Kernels.add(a, b, n, q, out); }
void sub_ifma(const u64* a, const u64* b, std::size_t n, u64 q, u64* out) { kAvx512Kernels.sub(a, b, n, q, out); }
void negate_ifma(const u64* a, std::size_t n, u64 q, u64* out) { kAvx512Kernels.negate(a, n, q, out); }

// Base-conversion dot product for targets t < 2^50 and sources of up to 64 bits. IFMA reads the low 52 bits of
// y, so y f = lo52(y) f + (y >> 52) g with g = 2^52 f mod t, and neither half needs a mask. The low and high
// 52-bit halves of the products are summed apart, L (each < 2^52) and H (each < 2^50), in two accumulators each
// so that four independent chains hide the IFMA latency. With H' = H + (L >> 52) (< 2^61 for 255 sources):
//   sum y_i f_i = L mod 2^52 + 2^52 (H' mod 2^52) + 2^104 (H' >> 52)   (mod t),
// three Shoup products by the constants 1, 2^52 mod t and 2^104 mod t, each in [0, 2t).
// Small: every source below 2^50 (dot_const_small), so x >> 52 is 0 and the products of the high parts are left out:
// two multiply-adds a source instead of four (the sources in turn into both pairs of accumulators), the same sums.
template <bool Small>
void dot_const_ifma_body(const u64* const* y, const u64* f, std::size_t s, std::size_t n, const Modulus& m, u64* out,
                         const std::uint8_t* index, const u64* table) {
    const u64 t = m.value;
    std::vector<u64> g(Small ? 0 : s);
    const u64 c52 = static_cast<u64>((static_cast<u128>(1) << 52) % t);
    for (std::size_t i = 0; i < g.size(); ++i) g[i] = static_cast<u64>((static_cast<u128>(f[i]) * c52) % t);
    const u64 c104 = static_cast<u64>((static_cast<u128>(c52) * c52) % t);
    const ShoupIfma sh(t);
    const __m512i w1 = set1(1), w1p = set1(shoup(1, t) >> 12), w52 = set1(c52), w52p = set1(shoup(c52, t) >> 12);
    const __m512i w104 = set1(c104), w104p = set1(shoup(c104, t) >> 12);
    const __m512i vt = set1(t), v2t = set1(2 * t), m52 = mask52(), zero = _mm512_setzero_si512();
    const TableLookup lookup(table, s + 1);
    std::size_t c = 0;
    for (; c + 8 <= n; c += 8) {
        __m512i la = zero, lb = zero, ha = zero, hb = zero;
        if constexpr (Small) {  // sources in turn into the two pairs of accumulators: still four chains
            std::size_t i = 0;
            for (; i + 2 <= s; i += 2) {
                const __m512i x0 = load(y[i] + c), f0 = set1(f[i]), x1 = load(y[i + 1] + c), f1 = set1(f[i + 1]);
                la = madd52lo(la, x0, f0);
                ha = madd52hi(ha, x0, f0);
                lb = madd52lo(lb, x1, f1);
                hb = madd52hi(hb, x1, f1);
            }
            if (i < s) {
                const __m512i x0 = load(y[i] + c), f0 = set1(f[i]);
                la = madd52lo(la, x0, f0);
                ha = madd52hi(ha, x0, f0);
            }
        } else {
            for (std::size_t i = 0; i < s; ++i) {
                const __m512i x = load(y[i] + c), xh = _mm512_srli_epi64(x, 52);
                const __m512i vf = set1(f[i]), vg = set1(g[i]);
                la = madd52lo(la, x, vf);
                ha = madd52hi(ha, x, vf);
                lb = madd52lo(lb, xh, vg);
                hb = madd52hi(hb, xh, vg);
            }
        }
        const __m512i l = _mm512_add_epi64(la, lb);
        const __m512i h = _mm512_add_epi64(_mm512_add_epi64(ha, hb), _mm512_srli_epi64(l, 52));
        const __m512i r0 = sh.mul_lazy(_mm512_and_si512(l, m52), w1, w1p);
        const __m512i r1 = sh.mul_lazy(_mm512_and_si512(h, m52), w52, w52p);
        const __m512i r2 = sh.mul_lazy(_mm512_srli_epi64(h, 52), w104, w104p);
        __m512i r = sub_if_ge(_mm512_add_epi64(r0, r1), v2t);        // [0, 2t)
        r = sub_if_ge(sub_if_ge(_mm512_add_epi64(r, r2), v2t), vt);  // [0, 4t) -> [0, t)
        if (index) r = sub_table_mod(r, index + c, lookup, vt);
        store(out + c, r);
    }
    dot_const_tail(y, f, s, c, n, m, out, index, table);
}

void dot_const_ifma(const u64* const* y, const u64* f, std::size_t s, std::size_t n, const Modulus& m, u64* out,
                    const std::uint8_t* index, const u64* table) {
    if (!fits(m.value)) return kAvx512Kernels.dot_const(y, f, s, n, m, out, index, table);
    dot_const_ifma_body<false>(y, f, s, n, m, out, index, table);
}

void dot_const_small_ifma(const u64* const* y, const u64* f, std::size_t s, std::size_t n, const Modulus& m, u64* out,
                          const std::uint8_t* index, const u64* table) {
    if (!fits(m.value)) return kAvx512Kernels.dot_const_small(y, f, s, n, m, out, index, table);
    dot_const_ifma_body<true>(y, f, s, n, m, out, index, table);
}

// out[c] = sum_j a[j][c] b[j][c] (+ out[c]) mod q for q < 2^50: the low and high 52-bit halves of the products
// (each below 2^100) summed apart in two pairs of accumulators (L: each half < 2^52, H: < 2^48), reduced once per
// 2048 terms as L mod 2^52 + 2^52 (H' mod 2^52) + 2^104 (H' >> 52) with H' = H + (L >> 52), three Shoup products
// by 1, 2^52 mod q and 2^104 mod q (as dot_const_ifma), where a product and a fused multiply-add reduce every term.
// Every column's terms are read before its result is stored (out may be a[0]).
void dot_ifma(const u64* const* a, const u64* const* b, std::size_t k, std::size_t n, const Modulus& m, u64* out,
              bool accumulate) {
    if (!fits(m.value)) return kAvx512Kernels.dot(a, b, k, n, m, out, accumulate);
    const u64 t = m.value;
    const u64 c52 = static_cast<u64>((static_cast<u128>(1) << 52) % t);
    const u64 c104 = static_cast<u64>((static_cast<u128>(c52) * c52) % t);
    const ShoupIfma sh(t);
    const __m512i w1 = set1(1), w1p = set1(shoup(1, t) >> 12), w52 = set1(c52), w52p = set1(shoup(c52, t) >> 12);
    const __m512i w104 = set1(c104), w104p = set1(shoup(c104, t) >> 12);
    const __m512i vt = set1(t), v2t = set1(2 * t), m52 = mask52(), zero = _mm512_setzero_si512();
    constexpr std::size_t kBlock = 2048;  // terms per reduction: L < 2^11 2^52 in each of two accumulators
    std::size_t c = 0;
    for (; c + 8 <= n; c += 8) {
        __m512i r = accumulate ? load(out + c) : zero;
        for (std::size_t j0 = 0; j0 < k; j0 += kBlock) {
            const std::size_t j1 = j0 + kBlock < k ? j0 + kBlock : k;
            __m512i la = zero, lb = zero, ha = zero, hb = zero;
            std::size_t j = j0;
            for (; j + 2 <= j1; j += 2) {
                const __m512i x0 = load(a[j] + c), y0 = load(b[j] + c);
                const __m512i x1 = load(a[j + 1] + c), y1 = load(b[j + 1] + c);
                la = madd52lo(la, x0, y0);
                ha = madd52hi(ha, x0, y0);
                lb = madd52lo(lb, x1, y1);
                hb = madd52hi(hb, x1, y1);
            }
            if (j < j1) {
                const __m512i x0 = load(a[j] + c), y0 = load(b[j] + c);
                la = madd52lo(la, x0, y0);
                ha = madd52hi(ha, x0, y0);
            }
            const __m512i l = _mm512_add_epi64(_mm512_and_si512(la, m52), _mm512_and_si512(lb, m52));
            const __m512i h = _mm512_add_epi64(
                _mm512_add_epi64(ha, hb),
                _mm512_add_epi64(_mm512_add_epi64(_mm512_srli_epi64(la, 52), _mm512_srli_epi64(lb, 52)),
                                 _mm512_srli_epi64(l, 52)));
            const __m512i r0 = sh.mul_lazy(_mm512_and_si512(l, m52), w1, w1p);
            const __m512i r1 = sh.mul_lazy(_mm512_and_si512(h, m52), w52, w52p);
            const __m512i r2 = sh.mul_lazy(_mm512_srli_epi64(h, 52), w104, w104p);
            __m512i part = sub_if_ge(_mm512_add_epi64(r0, r1), v2t);           // [0, 2t)
            part = sub_if_ge(sub_if_ge(_mm512_add_epi64(part, r2), v2t), vt);  // [0, 4t) -> [0, t)
            r = sub_if_ge(_mm512_add_epi64(r, part), vt);
        }
        store(out + c, r);
    }
    dot_tail(a, b, k, c, n, m, out, accumulate);
}

}  // namespace

const KernelTable kIfmaKernels = {
    .level = SimdLevel::ifma,
    .name = KASOKU_ISA_LABEL("ifma"),
    .add = add_ifma,
    .sub = sub_ifma,
    .negate = negate_ifma,
    .mul = mul_ifma,
    .mul_scalar = mul_scalar_ifma,
    .fma = fma_ifma,
    .dot_const = dot_const_ifma,
    .dot_const_small = dot_const_small_ifma,
    .dot = dot_ifma,
    .ntt_forward = ntt_forward_ifma,
    .ntt_inverse = ntt_inverse_ifma,
};

}  // namespace kasoku::arith::detail::KASOKU_ISA_NS
