// Key generation, encryption and decryption (the client side: these are the only classes that touch
// the secret key). Every method throws ParameterError for a key, plaintext or ciphertext of another context (or a
// negative thread count) before it touches any data, and kasoku::Error when OpenSSL fails to give randomness
// (support/random.hpp); each lists its own in @throws lines.
#pragma once
#include <complex>
#include <cstdint>
#include <map>
#include <vector>

#include "kasoku/ckks/context.hpp"
#include "kasoku/ckks/encoder.hpp"
#include "kasoku/ckks/objects.hpp"
#include "kasoku/support/random.hpp"

namespace kasoku::ckks {

class KeyGenerator {
public:
    explicit KeyGenerator(ContextPtr ctx) : ctx_(std::move(ctx)) {}
    // Ternary secret (uniform in {-1, 0, 1}, or fixed Hamming weight), OS-seeded CSPRNG.
    // @throws ParameterError for a negative thread count
    // @throws Error if the OS has no randomness to give
    SecretKey secret_key(Exec exec = {}) const;
    // b = -a s + e over Q_L * p_0, a from a fresh seed.
    // @throws ParameterError for a secret key of another context or a negative thread count
    // @throws Error if the OS has no randomness to give
    PublicKey public_key(const SecretKey& sk, Exec exec = {}) const;
    // The relinearisation key s^2 -> s.
    // @throws ParameterError for a secret key of another context or a negative thread count
    // @throws Error if the OS has no randomness to give
    SwitchKey relin_key(const SecretKey& sk, Exec exec = {}) const;
    // Key for the automorphism X -> X^galois_elt (rotation: Context::galois_element(step); conjugation: 2n-1).
    // It switches from s to s(X^{g^-1}), so that the evaluator permutes after the inner product (hoisting).
    // max_level >= 0: the key serves levels up to max_level only, over Q_max_level * P_k with the digits of
    // Q_max_level and the special primes they need (RnsContext::special_for: fewer limbs, digits and special primes,
    // so that a key a computation uses only low in the chain is that much smaller, and its key switches cheaper);
    // -1 (any negative value): every level, over all of P.
    // @throws ParameterError for a secret key of another context, an even galois_elt or one >= 2n, a max_level above
    //     the top level, or a negative thread count
    // @throws Error if the OS has no randomness to give
    SwitchKey galois_key(const SecretKey& sk, std::uint64_t galois_elt, Exec exec = {}, int max_level = -1) const;
    // Relinearisation key plus Galois keys for the given rotation steps, conjugation and Galois elements
    // (e.g. trace_galois_elements(...)).
    // progress, when given, is called after each key with (keys made, keys to make). compact: each Galois key keeps
    // its b-parts and the seed of its a-parts only (half the memory), and each key switch draws the a-limbs of its
    // level from the seed (ChaCha20; slower key switches, measured in docs/BOOTSTRAPPING.md). The relinearisation key,
    // one key used by every product, stays whole. galois_levels: element -> the highest level its key serves
    // (galois_key's max_level), for elements of the list above; the others serve every level.
    // @throws ParameterError as galois_key for a Galois element or level (the element 1 is dropped, not refused), for a
    //     secret key of another context, or a negative thread count (when some key is asked for)
    // @throws Error if the OS has no randomness to give
    // @throws what `progress` throws
    EvaluationKeys evaluation_keys(const SecretKey& sk, bool relin, const std::vector<std::int64_t>& rotations,
                                   bool conjugation, const std::vector<std::uint64_t>& galois_elements = {},
                                   Exec exec = {}, const Progress& progress = {}, bool compact = false,
                                   const std::map<std::uint64_t, int>& galois_levels = {}) const;
    // The encapsulation keys of bootstrapping into ek (Parameters::boot_secret_weight nonzero coefficients in an
    // ephemeral secret s', drawn here and wiped): to_sparse (s -> s' over q_0 * p_0, the smallest modulus, where a
    // sparse secret keeps its security) and from_sparse (s' -> s, an ordinary key under s).
    // @throws ParameterError if the parameters have no boot_secret_weight, for a secret key or ek of another context,
    //     an ek of another secret key, or a negative thread count
    // @throws Error if the OS has no randomness to give
    void encapsulation_keys(const SecretKey& sk, EvaluationKeys& ek, Exec exec = {}) const;

    // Shares of collective keys (multiparty: kasoku/mp/multiparty.hpp): the public and Galois keys of sk with their
    // uniform parts drawn from a given public seed instead of a fresh one, so that the b-parts of several parties'
    // keys under one seed add up to the key of the sum of their secrets.
    // @throws ParameterError for a secret key of another context or a negative thread count
    // @throws Error if the OS has no randomness to give (for the error)
    PublicKey public_key(const SecretKey& sk, const Seed& common, Exec exec = {}) const;
    // The same for the Galois key of galois_elt (every level).
    // @throws ParameterError for a secret key of another context, an even galois_elt or one >= 2n, or a negative
    //     thread count
    // @throws Error if the OS has no randomness to give (for the errors)
    SwitchKey galois_key(const SecretKey& sk, std::uint64_t galois_elt, const Seed& common, Exec exec = {}) const;

private:
    // dnum pairs (b_j, a_j) with b_j = -a_j s_to + e_j + P g_j s_from: decrypts under s_to what was under s_from; a_j
    // is part j of `seed`.
    SwitchKey switch_key(const SecretKey& sk, const rns::RnsPoly& s_from, const rns::RnsPoly& s_to, const Seed& seed,
                         Exec exec) const;
    ContextPtr ctx_;
};

// The uniform polynomial that part `part` of a seed stands for, over q_0..q_{num_q-1} and p_0..p_{num_p-1}, NTT form
// (the a-parts of seeded keys and ciphertexts; multiparty protocols draw their common parts with it).
// @throws Error if OpenSSL's ChaCha20 fails
rns::RnsPoly uniform_poly(const Context& ctx, const Seed& seed, std::size_t part, std::size_t num_q, std::size_t num_p);
// Fresh samples from the OS CSPRNG over the same limbs, NTT form: the error distribution of every key and encryption
// (discrete Gaussian, sigma 3.2, cut at 6 sigma), and a uniform ternary polynomial (an encryption's ephemeral secret).
// Multiparty protocols draw their errors and ephemeral secrets with them.
// @throws ParameterError for a negative thread count
// @throws Error if the OS has no randomness to give
rns::RnsPoly error_poly(const Context& ctx, std::size_t num_q, std::size_t num_p, Exec exec = {});
// @throws ParameterError for a negative thread count
// @throws Error if the OS has no randomness to give
rns::RnsPoly ternary_poly(const Context& ctx, std::size_t num_q, std::size_t num_p, Exec exec = {});

// ---- Noise flooding: decryptions safe to share (IND-CPA-D)
// A CKKS decryption is m + e, and e is a function of the secret key: with one decrypted result and its ciphertext,
// anyone solves c_0 + c_1 s = Encode(values) for s (Li and Micciancio, EUROCRYPT 2021; tests/cpp/ckks/
// test_security.cpp does it). Flooding adds a discrete Gaussian of standard deviation
//     sigma = B sqrt(n) sqrt(queries / 2) 2^(s / 2)
// to m + e before decoding, where B bounds the root mean square of e's coefficients (B sqrt(n) bounds ||e||_2), and s
// is the statistical security: over `queries` decryptions of ciphertexts with such noise, the Kullback-Leibler
// divergence between what is revealed and a view independent of e (and so of the key) is at most
// queries ||e||^2 / (2 sigma^2) <= 2^-s (Micciancio and Walter's criterion of s-bit security for decision games, the
// sizing of Li, Micciancio, Schultz and Sorrell, CRYPTO 2022). Multiparty decryption shares use the same sizing
// (mp::Smudging). The price is precision: each slot's error has standard deviation sigma sqrt(n) / scale.
struct Flooding {
    int statistical_security = 40;  // s, 0..128
    std::uint64_t queries = 1;      // decryptions of ciphertexts under this key that will be shared, at least 1
    // B; 0: estimated from the ciphertext (Decryptor::estimate_noise_bound). A bound from the caller should be the
    // noise of the computation that made the ciphertext, measured on known values (Decryptor::noise) with a margin.
    double noise_bound = 0;
    // refuse a flood that leaves fewer bits than this in the slots (flooding_precision_bits)
    double min_precision_bits = 1;
};
// The flooding standard deviation above.
// @throws ParameterError for statistical_security outside 0..128, queries < 1, or a noise_bound that is not a finite
//     number > 0
double flooding_sigma(std::size_t n, double noise_bound, int statistical_security, std::uint64_t queries);
// log2(scale / (sigma sqrt(shares n))): the bits left to the slots of a ciphertext at `scale` after `shares` floods of
// standard deviation sigma (the standard deviation of a slot's error; the largest over many slots is 2-3 bits worse).
double flooding_precision_bits(std::size_t n, double sigma, double scale, std::size_t shares = 1);
// 16 times the standard deviation of a rescale's rounding noise, sqrt((1 + n v) / 12), for a secret whose
// coefficients have variance v (2/3 for a uniform ternary secret, h / n for Hamming weight h): a floor for the noise
// of any ciphertext that has been rescaled (fresh encryptions carry about as much).
double rounding_noise_bound(std::size_t n, double secret_variance);
// A discrete Gaussian of standard deviation sigma (rounded Box-Muller, cut at 6 sigma) over q_0..q_{num_q-1}, NTT
// form: the flooding noise (here and in multiparty shares).
// @throws ParameterError for a negative thread count
// @throws Error if OpenSSL's ChaCha20 fails (prng)
rns::RnsPoly flooding_noise(const Context& ctx, double sigma, std::size_t num_q, Prng& prng, Exec exec = {});

// A flooded decryption: the values, and what the flood cost.
struct FloodedDecryption {
    std::vector<std::complex<double>> values;
    double noise_bound = 0;     // the B used (given, or estimated)
    double sigma = 0;           // the flood's standard deviation per coefficient
    double precision_bits = 0;  // flooding_precision_bits at the ciphertext's scale
};

class Encryptor {
public:
    explicit Encryptor(ContextPtr ctx) : ctx_(std::move(ctx)) {}
    // Public-key encryption at the plaintext's level and scale.
    // @throws ParameterError for a plaintext or public key of another context, a malformed plaintext (empty, or above
    //     the top level), or a negative thread count
    // @throws Error if the OS has no randomness to give
    Ciphertext encrypt(const Plaintext& pt, const PublicKey& pk, Exec exec = {}) const;
    // The same with its randomness (the ternary v and the errors, rns/sampling.hpp) drawn from `seed`, on the device
    // where the context's backend is one: the same ciphertext on every backend. A seed must encrypt once only (two
    // plaintexts under one seed give away their difference); the overload above draws a fresh one.
    // @throws ParameterError as encrypt
    Ciphertext encrypt(const Plaintext& pt, const PublicKey& pk, const Seed& seed, Exec exec = {}) const;
    // Secret-key encryption (smaller noise): (-a s + e + m, a).
    // @throws ParameterError for a plaintext or secret key of another context, a malformed plaintext, or a negative
    //     thread count
    // @throws Error if the OS has no randomness to give
    Ciphertext encrypt_symmetric(const Plaintext& pt, const SecretKey& sk, Exec exec = {}) const;

private:
    ContextPtr ctx_;
};

class Decryptor {
public:
    explicit Decryptor(ContextPtr ctx) : ctx_(std::move(ctx)), encoder_(ctx_) {}
    // Decrypts and decodes into slots() complex values.
    // Exact: for the secret key's holder only. Anyone who sees these values beside the ciphertext can recover the
    // secret key; decrypt with a Flooding for values that will be shared.
    // @throws ParameterError for a ciphertext or secret key of another context, a malformed ciphertext, one encrypted
    //     under another secret key, or a negative thread count
    std::vector<std::complex<double>> decrypt(const Ciphertext& ct, const SecretKey& sk, Exec exec = {}) const;
    // Flooded (safe to share, within flood's queries): the exact decryption plus flooding noise sized by
    // flooding_sigma for flood.noise_bound, or for the estimate below when it is 0.
    // @throws ParameterError as decrypt, for a flood.noise_bound that is not a finite number >= 0, as flooding_sigma
    //     (statistical_security, queries), or when the flood would leave fewer than flood.min_precision_bits bits at
    //     the ciphertext's scale (the message says the scale that would keep them)
    // @throws Error if the OS has no randomness to give
    FloodedDecryption decrypt(const Ciphertext& ct, const SecretKey& sk, const Flooding& flood, Exec exec = {}) const;
    // The root mean square of the ciphertext's noise coefficients, given the values it should hold (none: zero, the
    // OpenFHE way of running a computation once on an encryption of zero): || c_0 + c_1 s - Encode(expected) || /
    // sqrt(n). A bound for Flooding::noise_bound, measured on the computation that will be flooded.
    // @throws ParameterError as decrypt, and for `expected` with more than slots() values or non-finite ones
    // @throws ScaleError if `expected` encoded at the ciphertext's scale does not fit the modulus
    double noise(const Ciphertext& ct, const SecretKey& sk, const std::vector<std::complex<double>>& expected = {},
                 Exec exec = {}) const;
    // An estimate of that noise from the ciphertext alone: the imaginary parts of its decoded slots are pure noise
    // when its values are real (their mean square times scale^2 2 / n is the noise's), and an overestimate otherwise
    // (complex values: more flooding, never less); 8 times that, and at least rounding_noise_bound for this key.
    // @throws ParameterError as decrypt
    double estimate_noise_bound(const Ciphertext& ct, const SecretKey& sk, Exec exec = {}) const;

private:
    // c_0 + c_1 s (+ c_2 s^2) over the first `limbs` q-limbs, NTT form, after the checks decrypt states.
    rns::RnsPoly phase(const Ciphertext& ct, const SecretKey& sk, std::size_t limbs, Exec exec) const;
    ContextPtr ctx_;
    Encoder encoder_;
};

}  // namespace kasoku::ckks
