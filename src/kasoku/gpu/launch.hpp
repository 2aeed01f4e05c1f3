// Launchers of the kernels: each runs one body of bodies.hpp over its grid. Two implementations of the same
// definitions (launchers.inl): kernels.cu launches CUDA kernels on the stream of the CUDA memory `mem` that holds the
// operands and checks each launch (DeviceError with CUDA's message); launch_host.cpp runs the grid as a CPU loop, for
// the emulated GPU backend that tests the backend's logic on machines without a GPU. Every pointer is in `mem`
// (device pointers for CUDA), per-limb tables included. Host code includes this header without CUDA's.
#pragma once
#include <cstddef>
#include <cstdint>

#include "kasoku/arith/modarith.hpp"
#include "kasoku/rns/rns_poly.hpp"

// The GPU backend's code is built twice (CMakeLists.txt): for CUDA and emulated on the host. Its symbols live in an
// inline namespace named after the build, so that both can be linked into one program.
#ifndef KASOKU_GPU_VARIANT
#define KASOKU_GPU_VARIANT cuda
#endif

namespace kasoku::gpu {
inline namespace KASOKU_GPU_VARIANT {
namespace launch {

using arith::Modulus;
using arith::u64;
using rns::PolyMemory;

// Element-wise over `words` words (limbs x n); q / m: the limbs' primes.
void add(const PolyMemory& mem, const u64* a, const u64* b, u64* out, const u64* q, std::size_t n, std::size_t words);
void sub(const PolyMemory& mem, const u64* a, const u64* b, u64* out, const u64* q, std::size_t n, std::size_t words);
void negate(const PolyMemory& mem, const u64* a, u64* out, const u64* q, std::size_t n, std::size_t words);
void mul(const PolyMemory& mem, const u64* a, const u64* b, u64* out, const Modulus* m, std::size_t n, std::size_t words);
void fma(const PolyMemory& mem, const u64* a, const u64* b, const u64* c, u64* out, const Modulus* m, std::size_t n,
         std::size_t words);
void mul_constant(const PolyMemory& mem, const u64* a, const u64* r, const u64* rp, u64* out, const u64* q, std::size_t n,
                  std::size_t words);
void add_constant(const PolyMemory& mem, const u64* a, const u64* r, u64* out, const u64* q, std::size_t n, std::size_t words);
// out (limbs x n) = sum_t x[t] * f[t limbs + l] on limb l: x a device array of `terms` device pointers (the first
// `limbs` limbs of each are read), f (terms x limbs, each below its limb's prime), m the limbs' moduli.
void linear_combination(const PolyMemory& mem, const u64* const* x, const u64* f, std::size_t terms, const Modulus* m,
                        std::size_t n, std::size_t limbs, u64* out);
// NTT / INTT of `limbs` limbs in place, all limbs in each launch (one per stage). w, wp: the limbs' root tables
// (limbs x n, forward or inverse); ninv, ninvp: n^-1 per limb.
void ntt_forward(const PolyMemory& mem, u64* a, const u64* w, const u64* wp, const u64* q, std::size_t n, std::size_t limbs);
void ntt_inverse(const PolyMemory& mem, u64* a, const u64* w, const u64* wp, const u64* ninv, const u64* ninvp, const u64* q,
                 std::size_t n, std::size_t limbs);
// out[l][k] = a[l][perm[k]] for `limbs` limbs.
void permute(const PolyMemory& mem, const u64* a, const std::uint32_t* perm, u64* out, std::size_t n, std::size_t limbs);
// Base conversion of the s scaled source limbs y (s x n): overflow counts v (n), then `targets` limbs of out, target t
// with factors f + t s, modulus m[t] and multiples qv + t (s + 1) (v may be null: approximate conversion).
void overflow_count(const PolyMemory& mem, const u64* y, std::size_t s, std::size_t n, const double* inv_q, std::uint8_t* v);
void convert(const PolyMemory& mem, const u64* y, std::size_t s, std::size_t n, const u64* f, const Modulus* m,
             std::size_t targets, const std::uint8_t* v, const u64* qv, u64* out);
// out[t][c] = sum_j d[j][t n + c] * k[j][key_limb[t] n + c] (+ out[t][c] when accumulate) mod m[key_limb[t]], for
// `limbs` limbs: d and k are device arrays of `digits` device pointers; key_limb[t] is limb t's prime index (a key
// spans every prime), m the moduli of every prime.
void dot(const PolyMemory& mem, const u64* const* d, const u64* const* k, const std::uint32_t* key_limb, std::size_t digits,
         const Modulus* m, std::size_t n, std::size_t limbs, bool accumulate, u64* out);

// Rounding division by the last limb's prime r (bodies.hpp): last (n words, coefficient form) prepared in place, then
// t = the correction for `words` words of q-limbs (half_mod, m per limb), addend (n signed words) may be null.
void round_prepare(const PolyMemory& mem, u64* last, const std::int64_t* addend, u64 r, std::size_t n);
void round_correction(const PolyMemory& mem, const u64* last, const u64* half_mod, const std::int64_t* addend, const Modulus* m,
                      std::size_t n, std::size_t words, u64* t);
// out = (a - t) * inv mod q (+ addend) over `words` words (inv, invp, q per limb; addend may be null).
void divide_exact(const PolyMemory& mem, const u64* a, const u64* t, const u64* inv, const u64* invp, const u64* q,
                  const u64* addend, std::size_t n, std::size_t words, u64* out);

}  // namespace launch
}  // namespace KASOKU_GPU_VARIANT
}  // namespace kasoku::gpu
