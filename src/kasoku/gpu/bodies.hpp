// Per-word pieces of the GPU kernels (kernels.hpp) that must round exactly as the CPU backend's code does: the NTT's
// butterflies with the scalar body's lazy ranges, the floating-point overflow count of the exact base conversion, and
// the constant dot product of linear combinations. The device computes with this very code and the host runs it in
// the emulated backend and the tests (tests/cpp/gpu). Layouts are the backend's: a polynomial is `limbs` x n words,
// limb-major. Nothing here allocates, checks or throws.
#pragma once
#include <cstddef>
#include <cstdint>

#include "kasoku/arith/modarith.hpp"

namespace kasoku::gpu::body {

using arith::Modulus;
using arith::u128;
using arith::u64;

// ---- linear combination with constants: word w of limb l = w / n is sum_t x[t][w] f[t limbs + l] mod m[l] (f[...] < m[l]);
// the x[t] are the leading `limbs` limbs of each term. Sums of 32 products are reduced at a time (as the CPU kernel).
KASOKU_HD inline u64 linear_combination(const u64* const* x, const u64* f, std::size_t terms, std::size_t limbs,
                                        const Modulus* m, std::size_t n, std::size_t w) {
    const std::size_t l = w / n;
    u64 r = 0;
    for (std::size_t t0 = 0; t0 < terms; t0 += 32) {
        u128 acc = 0;
        for (std::size_t t = t0; t < terms && t < t0 + 32; ++t) acc += static_cast<u128>(x[t][w]) * f[t * limbs + l];
        r = arith::add_mod(r, arith::reduce_128(acc, m[l]), m[l].value);
    }
    return r;
}

// ---- the negacyclic NTT of arith (roots in bit-reversed order, the scalar body's lazy ranges)
// One forward butterfly on (x, y) with the root (w, wp): inputs below 4q, outputs below 4q (the scalar body's).
KASOKU_HD inline void ntt_forward_pair(u64& x, u64& y, u64 w, u64 wp, u64 q) {
    const u64 two_q = 2 * q;
    u64 u = x;
    if (u >= two_q) u -= two_q;
    const u64 v = arith::mul_shoup_lazy(y, w, wp, q);
    x = u + v;
    y = u - v + two_q;
}
// One inverse butterfly: inputs and outputs below 2q.
KASOKU_HD inline void ntt_inverse_pair(u64& x, u64& y, u64 w, u64 wp, u64 q) {
    const u64 two_q = 2 * q, u = x, v = y;
    u64 s = u + v;
    if (s >= two_q) s -= two_q;
    x = s;
    y = arith::mul_shoup_lazy(u - v + two_q, w, wp, q);
}
// ---- base conversion (rns::BaseConverter)
// The overflow count of word c: round(sum_i y_i[c] / q_i), in double precision with the CPU's order of operations
// (kernels.cu is compiled without contraction into FMAs, so each product and sum rounds as on the host).
KASOKU_HD inline std::uint8_t overflow_count(const u64* y, std::size_t s, std::size_t n, const double* inv_q,
                                             std::size_t c) {
    double acc = 0;
    for (std::size_t i = 0; i < s; ++i) acc += static_cast<double>(y[i * n + c]) * inv_q[i];
    return static_cast<std::uint8_t>(acc + 0.5);  // NOLINT(bugprone-incorrect-roundings): acc >= 0
}

}  // namespace kasoku::gpu::body
