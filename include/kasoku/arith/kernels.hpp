// Element-wise kernels on residue vectors mod q (inputs in [0, q), outputs in [0, q)),
// run with the active SIMD body (simd.hpp). `out` may alias an input. No checks and nothing thrown: the callers (the
// CPU backend) pass valid sizes and residues; the first call may throw what active_simd() throws.
#pragma once
#include <cstddef>
#include <cstdint>

#include "kasoku/arith/modarith.hpp"

namespace kasoku::arith {

void add_mod(const u64* a, const u64* b, std::size_t n, u64 q, u64* out);
void sub_mod(const u64* a, const u64* b, std::size_t n, u64 q, u64* out);
void negate_mod(const u64* a, std::size_t n, u64 q, u64* out);
void mul_mod(const u64* a, const u64* b, std::size_t n, const Modulus& m, u64* out);
// out = a * w mod q with w < q and its Shoup constant wp = shoup(w, q), for any a < 2^50 (not only residues mod q:
// with w = 1 it reduces another prime's residues, as the rescale does).
void mul_scalar_mod(const u64* a, u64 w, u64 wp, std::size_t n, u64 q, u64* out);
// Fused multiply-add: out = a * b + c mod q with one final reduction (Inoue 2022 Alg. 4.1.1).
void fma_mod(const u64* a, const u64* b, const u64* c, std::size_t n, const Modulus& m, u64* out);
// Dot product with constants, the core of RNS base conversion: out[c] = sum_{i<s} y[i][c] * f[i] mod t,
// for any y[i][c] < 2^61 (residues of other moduli) and constants f[i] < t. `out` may be one of the y[i] (each column
// is read before it is written).
// With `index` and `table` (entries < t), table[index[c]] is subtracted mod t: the overflow correction of an exact
// base conversion, folded into the same pass. `small_sources`: every y[i][c] < 2^kSmallSourceBits (the sources'
// primes are), which lets a body take a faster path (the same residues).
inline constexpr int kSmallSourceBits = 50;
// Whether a prime's residues are small sources (below 2^kSmallSourceBits).
inline constexpr bool small_source(u64 prime) { return prime < (u64{1} << kSmallSourceBits); }
void dot_const_mod(const u64* const* y, const u64* f, std::size_t s, std::size_t n, const Modulus& t, u64* out,
                   const std::uint8_t* index = nullptr, const u64* table = nullptr, bool small_sources = false);
// Sum of products of vectors, the key-switching inner product: out[c] = sum_{j<k} a[j][c] * b[j][c] (+ out[c] when
// `accumulate`) mod q, for inputs below q < 2^61: one reduction per column instead of one per product. `out` may be
// one of the inputs (each column is read before it is written).
void dot_mod(const u64* const* a, const u64* const* b, std::size_t k, std::size_t n, const Modulus& m, u64* out,
             bool accumulate = false);
// out[k] = src[perm[k]] (an automorphism in evaluation form). Large outputs are written with non-temporal stores:
// the source block that each output block reads stays in cache, the output does not. `out` must not alias src.
void permute(const u64* src, const std::uint32_t* perm, std::size_t n, u64* out);

}  // namespace kasoku::arith
