// Launchers of the CUDA kernels (kernels.cu): each runs one body of bodies.hpp over its grid on the stream of the
// CUDA memory `mem` that holds the operands, and checks the launch (DeviceError with CUDA's message). Every pointer
// is a device pointer, per-limb tables included. Host code includes this header without CUDA's.
#pragma once
#include <cstddef>
#include <cstdint>

#include "kasoku/arith/modarith.hpp"
#include "kasoku/rns/rns_poly.hpp"

namespace kasoku::gpu::launch {

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
// out[t][c] = sum_j d[j][t n + c] * k[j][key_limb[t] n + c] (+ out[t][c] when accumulate) mod m[t], for `limbs` limbs:
// d and k are device arrays of `digits` device pointers.
void dot(const PolyMemory& mem, const u64* const* d, const u64* const* k, const std::uint32_t* key_limb, std::size_t digits,
         const Modulus* m, std::size_t n, std::size_t limbs, bool accumulate, u64* out);

}  // namespace kasoku::gpu::launch
