// AVX-512F/DQ bodies of the element-wise kernels and the NTT, for any modulus up to 61 bits
// (compiled with -mavx512f -mavx512dq only in this file, or against SIMDe for the tests).
#include "kernels_internal.hpp"
#include "simd_avx512_internal.hpp"

namespace kasoku::arith::detail::KASOKU_ISA_NS {

namespace {
using namespace avx512;

void add_avx512(const u64* a, const u64* b, std::size_t n, u64 q, u64* out) {
    const __m512i vq = set1(q);
    std::size_t i = 0;
    for (; i + 8 <= n; i += 8) store(out + i, sub_if_ge(_mm512_add_epi64(load(a + i), load(b + i)), vq));
    for (; i < n; ++i) out[i] = add_mod(a[i], b[i], q);
}

void sub_avx512(const u64* a, const u64* b, std::size_t n, u64 q, u64* out) {
    const __m512i vq = set1(q);
    std::size_t i = 0;
    for (; i + 8 <= n; i += 8)
        store(out + i, sub_if_ge(_mm512_add_epi64(load(a + i), _mm512_sub_epi64(vq, load(b + i))), vq));
    for (; i < n; ++i) out[i] = sub_mod(a[i], b[i], q);
}

void negate_avx512(const u64* a, std::size_t n, u64 q, u64* out) {
    const __m512i vq = set1(q);
    std::size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m512i x = load(a + i);
        // q - x where x != 0, else 0
        store(out + i, _mm512_maskz_sub_epi64(_mm512_test_epi64_mask(x, x), vq, x));
    }
    for (; i < n; ++i) out[i] = neg_mod(a[i], q);
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

void fma_avx512(const u64* a, const u64* b, const u64* c, std::size_t n, const Modulus& m, u64* out) {
    const BarrettDq br(m.value, m.bits);
    std::size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m512i hi, lo;
        mul_full(load(a + i), load(b + i), hi, lo);
        const __m512i s = _mm512_add_epi64(lo, load(c + i));
        // carry out of the low word unless s >= lo (unsigned)
        hi = _mm512_mask_mov_epi64(_mm512_add_epi64(hi, set1(1)), _mm512_cmpge_epu64_mask(s, lo), hi);
        store(out + i, br.reduce(hi, s));
    }
    for (; i < n; ++i) out[i] = reduce_128(static_cast<u128>(a[i]) * b[i] + c[i], m);
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

const KernelTable kAvx512Kernels = {SimdLevel::avx512, KASOKU_ISA_LABEL("avx512"), add_avx512, sub_avx512,
                                    negate_avx512,     mul_avx512,  mul_scalar_avx512,  fma_avx512,
                                    ntt_forward_avx512, ntt_inverse_avx512};

}  // namespace kasoku::arith::detail::KASOKU_ISA_NS
