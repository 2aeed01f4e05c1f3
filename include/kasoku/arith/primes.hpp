// NTT-friendly primes q = 1 (mod 2N) and primitive roots.
#pragma once
#include <cstdint>
#include <vector>

namespace kasoku::arith {

// Deterministic Miller-Rabin for 64-bit integers.
bool is_prime(std::uint64_t n);

// `count` distinct primes of exactly `bits` bits with q = 1 (mod 2n), largest first, skipping
// those in `exclude`.
// @throws ParameterError for bits outside 10..kMaxModulusBits, or when there are not enough such primes
std::vector<std::uint64_t> generate_ntt_primes(int bits, int count, std::uint64_t n,
                                               const std::vector<std::uint64_t>& exclude = {});

// A primitive 2n-th root of unity mod q (deterministic: from the smallest generator).
// @throws ParameterError if q is not 1 mod 2n, or has no primitive 2n-th root (q not prime)
std::uint64_t primitive_root_2n(std::uint64_t q, std::uint64_t n);

}  // namespace kasoku::arith
