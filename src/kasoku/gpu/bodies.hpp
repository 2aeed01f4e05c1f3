// The bodies of the CUDA kernels (src/kasoku/gpu/kernels.cu), as functions of explicit indices: a kernel maps its
// grid onto the indices and calls one body per index; a CPU loop over the same indices runs the very same code, so the
// device's arithmetic is tested on machines without a GPU (tests/cpp/gpu/test_gpu_bodies.cpp) against the CPU
// backend's kernels, bit for bit. Layouts are the backend's: a polynomial is `limbs` x n words, limb-major; per-limb
// constants are arrays indexed by limb. Nothing here allocates, checks or throws.
#pragma once
#include <cstddef>
#include <cstdint>

#include "kasoku/arith/modarith.hpp"

namespace kasoku::gpu::body {

using arith::Modulus;
using arith::u128;
using arith::u64;

// ---- element-wise, word w = limb * n + c; q[limb] (m[limb]) are the limbs' primes
KASOKU_HD inline void add(const u64* a, const u64* b, u64* out, const u64* q, std::size_t n, std::size_t w) {
    out[w] = arith::add_mod(a[w], b[w], q[w / n]);
}
KASOKU_HD inline void sub(const u64* a, const u64* b, u64* out, const u64* q, std::size_t n, std::size_t w) {
    out[w] = arith::sub_mod(a[w], b[w], q[w / n]);
}
KASOKU_HD inline void negate(const u64* a, u64* out, const u64* q, std::size_t n, std::size_t w) {
    out[w] = arith::neg_mod(a[w], q[w / n]);
}
KASOKU_HD inline void mul(const u64* a, const u64* b, u64* out, const Modulus* m, std::size_t n, std::size_t w) {
    out[w] = arith::mul_mod(a[w], b[w], m[w / n]);
}
// out = a * b + c with one reduction of the 128-bit value (the canonical result the CPU's fused kernel gives).
KASOKU_HD inline void fma(const u64* a, const u64* b, const u64* c, u64* out, const Modulus* m, std::size_t n, std::size_t w) {
    out[w] = arith::reduce_128(static_cast<u128>(a[w]) * b[w] + c[w], m[w / n]);
}
// out = a * r[limb] with Shoup constants rp[limb].
KASOKU_HD inline void mul_constant(const u64* a, const u64* r, const u64* rp, u64* out, const u64* q, std::size_t n, std::size_t w) {
    const std::size_t l = w / n;
    out[w] = arith::mul_shoup(a[w], r[l], rp[l], q[l]);
}

// out = a + r[limb].
KASOKU_HD inline void add_constant(const u64* a, const u64* r, u64* out, const u64* q, std::size_t n, std::size_t w) {
    const std::size_t l = w / n;
    out[w] = arith::add_mod(a[w], r[l], q[l]);
}

// ---- linear combination with constants: word w of limb l = w / n is sum_t x[t][w] f[t limbs + l] mod m[l] (f[...] < m[l]);
// the x[t] are the leading `limbs` limbs of each term. Sums of 32 products are reduced at a time, as in convert().
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

// ---- the negacyclic NTT of arith (roots in bit-reversed order, lazy ranges of the scalar body), one butterfly per
// index. A stage with m blocks (gap = n / (2m)) has n / 2 butterflies k per limb; tables are per limb (limb * n).
struct Butterfly {
    u64* x;
    u64* y;
    std::size_t twiddle;  // index into the limb's root table
};
KASOKU_HD inline Butterfly butterfly_at(u64* a, std::size_t n, std::size_t m, std::size_t limb, std::size_t k) {
    const std::size_t gap = n / (2 * m), i = k / gap, j = k % gap;
    u64* x = a + limb * n + 2 * i * gap + j;
    return {x, x + gap, limb * n + m + i};
}
KASOKU_HD inline void ntt_forward_butterfly(u64* a, const u64* w, const u64* wp, const u64* q, std::size_t n, std::size_t m,
                                            std::size_t limb, std::size_t k) {
    const Butterfly b = butterfly_at(a, n, m, limb, k);
    const u64 qq = q[limb], two_q = 2 * qq;
    u64 u = *b.x;
    if (u >= two_q) u -= two_q;
    const u64 v = arith::mul_shoup_lazy(*b.y, w[b.twiddle], wp[b.twiddle], qq);
    *b.x = u + v;
    *b.y = u - v + two_q;
}
// After the last forward stage: [0, 4q) -> [0, q).
KASOKU_HD inline void ntt_forward_finish(u64* a, const u64* q, std::size_t n, std::size_t w) {
    const u64 qq = q[w / n];
    u64 u = a[w];
    if (u >= 2 * qq) u -= 2 * qq;
    if (u >= qq) u -= qq;
    a[w] = u;
}
KASOKU_HD inline void ntt_inverse_butterfly(u64* a, const u64* w, const u64* wp, const u64* q, std::size_t n, std::size_t m,
                                            std::size_t limb, std::size_t k) {
    const Butterfly b = butterfly_at(a, n, m, limb, k);
    const u64 qq = q[limb], two_q = 2 * qq;
    const u64 u = *b.x, v = *b.y;
    u64 s = u + v;
    if (s >= two_q) s -= two_q;
    *b.x = s;
    *b.y = arith::mul_shoup_lazy(u - v + two_q, w[b.twiddle], wp[b.twiddle], qq);
}
// After the last inverse stage: times n^-1 (ninv, ninvp per limb), to [0, q).
KASOKU_HD inline void ntt_inverse_finish(u64* a, const u64* ninv, const u64* ninvp, const u64* q, std::size_t n, std::size_t w) {
    const std::size_t l = w / n;
    a[w] = arith::mul_shoup(a[w], ninv[l], ninvp[l], q[l]);
}

// ---- automorphism in NTT form: out[limb][k] = a[limb][perm[k]]
KASOKU_HD inline void permute(const u64* a, const std::uint32_t* perm, u64* out, std::size_t n, std::size_t w) {
    const std::size_t l = w / n, k = w % n;
    out[w] = a[l * n + perm[k]];
}

// ---- base conversion (rns::BaseConverter): y holds the s scaled source limbs (y_i = x_i (Q/q_i)^-1 mod q_i);
// target t's word c = sum_i y_i[c] f[i] mod t, minus v Q mod t (qv[v]) when the overflow count v is given.
// Sums of up to 32 products below 2^122 fit in 128 bits; longer sums are reduced in chunks (as the CPU's scalar body).
KASOKU_HD inline u64 convert(const u64* y, std::size_t s, std::size_t n, const u64* f, const Modulus& t, std::size_t c,
                             const std::uint8_t* overflow, const u64* qv) {
    u64 r = 0;
    for (std::size_t i0 = 0; i0 < s; i0 += 32) {
        u128 acc = 0;
        for (std::size_t i = i0; i < s && i < i0 + 32; ++i) acc += static_cast<u128>(y[i * n + c]) * f[i];
        r = arith::add_mod(r, arith::reduce_128(acc, t), t.value);
    }
    if (overflow) r = arith::sub_mod(r, qv[overflow[c]], t.value);
    return r;
}
// The overflow count of word c: round(sum_i y_i[c] / q_i), in double precision with the CPU's order of operations
// (kernels.cu is compiled without contraction into FMAs, so each product and sum rounds as on the host).
KASOKU_HD inline std::uint8_t overflow_count(const u64* y, std::size_t s, std::size_t n, const double* inv_q, std::size_t c) {
    double acc = 0;
    for (std::size_t i = 0; i < s; ++i) acc += static_cast<double>(y[i * n + c]) * inv_q[i];
    return static_cast<std::uint8_t>(acc + 0.5);
}

// ---- key-switching inner product: sum_j d[j][dw] * k[j][kw] + acc mod m (d[j]: digit j after ModUp, k[j]: key
// digit j; dw, kw: the word's index in each, as the key spans Q_L * P and the digits Q_l * P). One reduction per word,
// as arith::dot_mod.
KASOKU_HD inline u64 dot(const u64* const* d, std::size_t dw, const u64* const* k, std::size_t kw, std::size_t digits,
                         const Modulus& m, u64 acc) {
    u64 r = acc;
    for (std::size_t j0 = 0; j0 < digits; j0 += 32) {
        u128 sum = 0;
        for (std::size_t j = j0; j < digits && j < j0 + 32; ++j) sum += static_cast<u128>(d[j][dw]) * k[j][kw];
        r = arith::add_mod(r, arith::reduce_128(sum, m), m.value);
    }
    return r;
}

// ---- rounding division by the prime r of a polynomial's last limb (rescale, division by p_0), word w of limb l < keep:
// `last` is that limb in coefficient form plus the addend's residues and r >> 1 (round instead of floor:
// round_prepare); t = (last mod q_l) - ((r >> 1) mod q_l) - addend mod q_l, then its NTT, then divide_exact_word.
KASOKU_HD inline void round_prepare(u64* last, const std::int64_t* addend, u64 r, std::size_t c) {
    u64 x = last[c];
    if (addend) x = arith::add_mod(x, arith::signed_residue(addend[c], r), r);
    last[c] = arith::add_mod(x, r >> 1, r);
}
KASOKU_HD inline u64 round_correction(const u64* last, const u64* half_mod, const std::int64_t* addend, const Modulus* m,
                                      std::size_t n, std::size_t w) {
    const std::size_t l = w / n, c = w % n;
    u64 t = arith::sub_mod(arith::reduce_64(last[c], m[l]), half_mod[l], m[l].value);
    if (addend) t = arith::sub_mod(t, arith::signed_residue(addend[c], m[l].value), m[l].value);
    return t;
}

// ---- the end of ModDown / rescale on one q-limb word: (a - t) * inv mod q (+ addend), t the converted value.
KASOKU_HD inline u64 divide_exact_word(u64 a, u64 t, u64 inv, u64 invp, u64 q, const u64* addend, std::size_t w) {
    u64 r = arith::mul_shoup(arith::sub_mod(a, t, q), inv, invp, q);
    return addend ? arith::add_mod(r, addend[w], q) : r;
}

}  // namespace kasoku::gpu::body
