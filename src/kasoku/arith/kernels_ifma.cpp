// AVX-512-IFMA bodies: 52-bit multiply-adds for moduli below 2^50 (4q < 2^52 keeps the lazy NTT inside 52
// bits); larger moduli go to the AVX-512DQ body. Compiled with -mavx512f -mavx512dq -mavx512ifma only in this
// file, or against SIMDe (with a lane-wise IFMA shim) for the tests.
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

// Additions have no products, and the dot product takes residues of up to 61 bits: the DQ bodies serve.
void add_ifma(const u64* a, const u64* b, std::size_t n, u64 q, u64* out) { kAvx512Kernels.add(a, b, n, q, out); }
void sub_ifma(const u64* a, const u64* b, std::size_t n, u64 q, u64* out) { kAvx512Kernels.sub(a, b, n, q, out); }
void negate_ifma(const u64* a, std::size_t n, u64 q, u64* out) { kAvx512Kernels.negate(a, n, q, out); }
void dot_const_ifma(const u64* const* y, const u64* f, std::size_t s, std::size_t n, const Modulus& m, u64* out) {
    kAvx512Kernels.dot_const(y, f, s, n, m, out);
}

}  // namespace

const KernelTable kIfmaKernels = {SimdLevel::ifma, KASOKU_ISA_LABEL("ifma"), add_ifma,       sub_ifma,
                                  negate_ifma,     mul_ifma,               mul_scalar_ifma, fma_ifma, dot_const_ifma,
                                  ntt_forward_ifma, ntt_inverse_ifma};

}  // namespace kasoku::arith::detail::KASOKU_ISA_NS
