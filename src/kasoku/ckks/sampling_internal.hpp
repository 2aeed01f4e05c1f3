// Samplers for key generation and encryption, the exact lift of small residues and the expansion of compact keys
// (never installed). Randomness:
// support/random.hpp.
#pragma once
#include <array>
#include <cstdint>
#include <memory>
#include <vector>

#include "kasoku/ckks/context.hpp"
#include "kasoku/ckks/objects.hpp"
#include "kasoku/rns/backend.hpp"
#include "kasoku/rns/sampling.hpp"
#include "kasoku/support/random.hpp"

namespace kasoku::ckks {
class Evaluator;
}

namespace kasoku::ckks::detail {

// The samplers of secrets and errors run in constant time: no branch and no memory index depends on a value drawn
// (the loops, table scans and sorting network below do the same work whatever the random words; rejection decides
// only on a word that is then dropped). docs/SECURITY.md says how this is checked (bench/dudect_sampling.cpp).

// Uniform ternary {-1, 0, 1}^n (rns/sampling.hpp's, two words a coefficient), or exactly `hamming_weight` nonzero
// (+-1) coefficients when > 0 (n a power of two).
std::vector<std::int64_t> sample_ternary(std::size_t n, int hamming_weight, Prng& prng);
// Discrete Gaussian, sigma = 3.2, bounded at 6 sigma (|e| <= 19): rns/sampling.hpp's, one word a coefficient.
std::vector<std::int64_t> sample_gaussian(std::size_t n, Prng& prng);
// A rounded Gaussian of any width (the flooding noise: Box-Muller on 53-bit uniforms, cut at 6 sigma; libm's log,
// cos and sin are not constant-time: docs/SECURITY.md).
std::vector<__int128> sample_wide_gaussian(std::size_t n, double sigma, Prng& prng);
// The samplers' cores, from given random words (tested, and timed by the constant-time measurement):
inline constexpr double kGaussianSigma = rns::kGaussianSigma;
inline constexpr int kGaussianBound = rns::kGaussianBound;
using rns::gaussian_cdf;
// one word per coefficient: |x| from its top 63 bits against the whole table, the sign from bit 0
void gaussian_from_words(const std::uint64_t* r, std::size_t n, std::int64_t* out);
// two words per coefficient (low, high): floor(3 x / 2^128) - 1
void ternary_from_words(const std::uint64_t* r, std::size_t n, std::int64_t* out);
// one word per position, n a power of two, scratch of n words: hamming_weight +-1 at uniformly random positions,
// chosen by sorting random keys with a bitonic network (the same compare-exchanges whatever the words)
void fixed_weight_from_words(const std::uint64_t* r, std::size_t n, int hamming_weight, std::int64_t* out,
                             std::uint64_t* scratch);
// The uniform parts a seed stands for (keys' and fresh ciphertexts' a-parts; any form: uniform in NTT form is
// uniform). Part `part`'s residues mod the prime of index `prime` (RnsContext::prime) are stream (part, prime) of the
// seed, so that any limb is drawn alone: a compact key's a-parts limb by limb where a key switch reads them.
void uniform_limb(const Seed& seed, std::size_t part, std::size_t prime, std::uint64_t q, std::size_t n,
                  std::uint64_t* out);
// Every limb of `out` as uniform_limb draws it, on the host, uploaded limb by limb.
void sample_uniform(const rns::Backend& be, const Seed& seed, std::size_t part, rns::RnsPoly& out);
// The key as the backend reads it: the key itself, or for a compact key (a-parts dropped: evaluation_keys(...,
// compact)) its b-parts with a drawer of its a-parts' limbs from its seed (GadgetKey::a_limb; crypto.cpp).
std::shared_ptr<const rns::GadgetKey> gadget_key(const Context& ctx, std::shared_ptr<const SwitchKey> key);
// The Galois keys of elts for an operand under key_id at `level`, every one checked (MissingKeyError naming the
// element, ParameterError for another secret key's, LevelError for a key made for lower levels: keygen's
// galois_levels) before any is expanded; expand = false: checked only (evaluator_hoisting.cpp).
std::vector<std::shared_ptr<const rns::GadgetKey>> galois_keys(const Evaluator& ev,
                                                               const std::vector<std::uint64_t>& elts,
                                                               std::uint64_t key_id, int level, bool expand);

}  // namespace kasoku::ckks::detail
