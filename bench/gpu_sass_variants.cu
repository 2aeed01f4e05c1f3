// Three ways to do the GPU's modular arithmetic, compiled for sm_90 and read back as SASS by bench/gpu_sass.py
// (docs/GPU.md, "Modular arithmetic in SASS"). Each kernel does one operation per thread on words it loads and
// stores; `copy_*` load and store the same words without the arithmetic, so that the difference is the operation's
// instructions. Not part of the library: a measuring program for the GPU arithmetic issue.
//
//   u64   the kernels' arithmetic today: 64-bit words, primes < 2^61, Shoup products (arith/modarith.hpp, the very
//         functions kernels.cu calls), 128-bit accumulation in base conversions;
//   f64   double-precision words for primes < 2^50 (the AVX2 body's idea): a product as p_hi + p_lo with an FMA, the
//         quotient from the root's precomputed w / q, one more FMA for the remainder;
//   u32   32-bit words for primes < 2^30 (as Cheddar): Shoup products with 32-bit multiplies, 64-bit accumulation of
//         32 x 32-bit products in base conversions. Twice the limbs for the same modulus.
#include <cstdint>

#include "../src/kasoku/gpu/bodies.hpp"
#include "kasoku/arith/modarith.hpp"

using u32 = std::uint32_t;
using u64 = std::uint64_t;

// ---- forward NTT butterflies: (x, y) -> (x + w y, x - w y), lazy ranges as the library's (inputs and outputs < 4q)
extern "C" __global__ void bfly_u64(u64* x, u64* y, const u64* w, const u64* wp, u64 q) {
    const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    u64 a = x[i], b = y[i];
    kasoku::gpu::body::ntt_forward_pair(a, b, w[i], wp[i], q);
    x[i] = a;
    y[i] = b;
}

extern "C" __global__ void bfly_f64(double* x, double* y, const double* w, const double* wq, double q) {
    const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    const double two_q = 2 * q;
    double u = x[i];
    if (u >= two_q) u -= two_q;
    const double b = y[i], hi = b * w[i];
    const double lo = __fma_rn(b, w[i], -hi);   // b w = hi + lo exactly
    const double k = rint(b * wq[i]);           // quotient estimate: |b w / q - k| < 1
    const double v = __fma_rn(-k, q, hi) + lo;  // b w - k q in (-q, 2q), exact below 2^52
    x[i] = u + v + q;                           // < 4q: the lazy range
    y[i] = u - v + two_q;
}

extern "C" __global__ void bfly_u32(u32* x, u32* y, const u32* w, const u32* wp, u32 q) {
    const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    const u32 two_q = 2 * q;
    u32 u = x[i];
    if (u >= two_q) u -= two_q;
    const u32 b = y[i];
    const u32 v = w[i] * b - __umulhi(b, wp[i]) * q;  // Shoup, in [0, 2q)
    x[i] = u + v;
    y[i] = u - v + two_q;
}

extern "C" __global__ void copy_bfly_u64(u64* x, u64* y, const u64* w, const u64* wp, u64) {
    const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    const u64 a = x[i], b = y[i], c = w[i], d = wp[i];
    x[i] = a ^ c;
    y[i] = b ^ d;
}
extern "C" __global__ void copy_bfly_f64(double* x, double* y, const double* w, const double* wq, double) {
    const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    const double a = x[i], b = y[i], c = w[i], d = wq[i];
    x[i] = a + c;
    y[i] = b + d;
}
extern "C" __global__ void copy_bfly_u32(u32* x, u32* y, const u32* w, const u32* wp, u32) {
    const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    const u32 a = x[i], b = y[i], c = w[i], d = wp[i];
    x[i] = a ^ c;
    y[i] = b ^ d;
}

// ---- base conversion: out = sum_t y_t * f_t over 8 source limbs, reduced once (the conversion term is 1/8 of it)
constexpr int kTerms = 8;

extern "C" __global__ void conv_u64(const u64* y, const u64* f, u64* out, u64 q, u64 ratio_lo, u64 ratio_hi,
                                    unsigned n) {
    const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    kasoku::arith::u128 acc = 0;
#pragma unroll
    for (int t = 0; t < kTerms; ++t) acc += static_cast<kasoku::arith::u128>(y[t * n + i]) * f[t];
    kasoku::arith::Modulus m;
    m.value = q;
    m.ratio_lo = ratio_lo;
    m.ratio_hi = ratio_hi;
    out[i] = kasoku::arith::reduce_128(acc, m);
}

extern "C" __global__ void conv_f64(const double* y, const double* f, const double* fq, double* out, double q,
                                    unsigned n) {
    const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    double acc = 0;  // each term reduced (a product needs 100 bits): y f - k q, then summed lazily
#pragma unroll
    for (int t = 0; t < kTerms; ++t) {
        const double b = y[t * n + i], hi = b * f[t], lo = __fma_rn(b, f[t], -hi), k = rint(b * fq[t]);
        acc += __fma_rn(-k, q, hi) + lo;
    }
    const double k = rint(acc / q);
    double r = __fma_rn(-k, q, acc);
    out[i] = r < 0 ? r + q : r;
}

extern "C" __global__ void conv_u32(const u32* y, const u32* f, u32* out, u32 q, u64 ratio, unsigned n) {
    const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    u64 acc = 0;  // 8 products of 30 x 30 bits fit in 63 bits
#pragma unroll
    for (int t = 0; t < kTerms; ++t) acc += static_cast<u64>(y[t * n + i]) * f[t];
    const u64 k = __umul64hi(acc, ratio);  // Barrett: ratio = floor(2^64 / q)
    u64 r = acc - k * q;
    out[i] = static_cast<u32>(r >= q ? r - q : r);
}

extern "C" __global__ void copy_conv_u64(const u64* y, const u64* f, u64* out, u64, u64, u64, unsigned n) {
    const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    u64 acc = 0;
#pragma unroll
    for (int t = 0; t < kTerms; ++t) acc ^= y[t * n + i] ^ f[t];
    out[i] = acc;
}
extern "C" __global__ void copy_conv_f64(const double* y, const double* f, const double* fq, double* out, double,
                                         unsigned n) {
    const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    double acc = 0;
#pragma unroll
    for (int t = 0; t < kTerms; ++t) acc += y[t * n + i] + f[t] + fq[t];
    out[i] = acc;
}
extern "C" __global__ void copy_conv_u32(const u32* y, const u32* f, u32* out, u32, u64, unsigned n) {
    const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    u32 acc = 0;
#pragma unroll
    for (int t = 0; t < kTerms; ++t) acc ^= y[t * n + i] ^ f[t];
    out[i] = acc;
}
