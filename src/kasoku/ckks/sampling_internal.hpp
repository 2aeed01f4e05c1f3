// Samplers for key generation and encryption (never installed). Randomness: support/random.hpp.
#pragma once
#include <cstdint>
#include <vector>

#include "kasoku/rns/backend.hpp"
#include "kasoku/support/random.hpp"

namespace kasoku::ckks::detail {

// Uniform ternary {-1, 0, 1}^n, or exactly `hamming_weight` nonzero (+-1) coefficients when > 0.
std::vector<std::int64_t> sample_ternary(std::size_t n, int hamming_weight, Prng& prng);
// Discrete Gaussian, sigma = 3.2, bounded at 6 sigma (|e| <= 19).
std::vector<std::int64_t> sample_gaussian(std::size_t n, Prng& prng);
// Uniform residues in every limb of `out` (any form: uniform in NTT form is uniform), drawn on the host and
// uploaded limb by limb.
void sample_uniform(const rns::Backend& be, rns::RnsPoly& out, Prng& prng);

}  // namespace kasoku::ckks::detail
