// Key generation, encryption and decryption (the client side: these are the only classes that touch
// the secret key). Every method throws ParameterError for a key, plaintext or ciphertext of another context (or a
// negative thread count) before it touches any data.
#pragma once
#include <complex>
#include <cstdint>
#include <map>
#include <vector>

#include "kasoku/ckks/context.hpp"
#include "kasoku/ckks/encoder.hpp"
#include "kasoku/ckks/objects.hpp"

namespace kasoku::ckks {

class KeyGenerator {
public:
    explicit KeyGenerator(ContextPtr ctx) : ctx_(std::move(ctx)) {}
    // Ternary secret (uniform in {-1, 0, 1}, or fixed Hamming weight), OS-seeded CSPRNG. Throws kasoku::Error when
    // the OS has no randomness to give.
    SecretKey secret_key(Exec exec = {}) const;
    PublicKey public_key(const SecretKey& sk, Exec exec = {}) const;
    SwitchKey relin_key(const SecretKey& sk, Exec exec = {}) const;
    // Key for the automorphism X -> X^galois_elt (rotation: Context::galois_element(step); conjugation: 2n-1).
    // It switches from s to s(X^{g^-1}), so that the evaluator permutes after the inner product (hoisting). Throws
    // ParameterError for an even galois_elt or one >= 2n. max_level >= 0: the key serves levels up to max_level only,
    // over Q_max_level * P with the digits of Q_max_level (fewer limbs and digits: a key that a computation uses only
    // low in the chain is that much smaller); -1: every level. Throws ParameterError for a level above the top.
    SwitchKey galois_key(const SecretKey& sk, std::uint64_t galois_elt, Exec exec = {}, int max_level = -1) const;
    // Relinearisation key plus Galois keys for the given rotation steps, conjugation and Galois elements
    // (e.g. trace_galois_elements(...)). Throws as galois_key.
    // progress, when given, is called after each key with (keys made, keys to make). compact: each Galois key keeps
    // its b-parts and the seed of its a-parts only (half the memory), and each key switch draws the a-limbs of its
    // level from the seed (ChaCha20; slower key switches, measured in docs/BOOTSTRAPPING.md). The relinearisation key,
    // one key used by every product, stays whole. galois_levels: element -> the highest level its key serves
    // (galois_key's max_level), for elements of the list above; the others serve every level.
    EvaluationKeys evaluation_keys(const SecretKey& sk, bool relin, const std::vector<std::int64_t>& rotations,
                                   bool conjugation, const std::vector<std::uint64_t>& galois_elements = {},
                                   Exec exec = {}, const Progress& progress = {}, bool compact = false,
                                   const std::map<std::uint64_t, int>& galois_levels = {}) const;
    // The encapsulation keys of bootstrapping into ek (Parameters::boot_secret_weight nonzero coefficients in an
    // ephemeral secret s', drawn here and wiped): to_sparse (s -> s' over q_0 * p_0, the smallest modulus, where a
    // sparse secret keeps its security) and from_sparse (s' -> s, an ordinary key under s). Throws ParameterError
    // when the parameters have no boot_secret_weight, or for keys of another secret key.
    void encapsulation_keys(const SecretKey& sk, EvaluationKeys& ek, Exec exec = {}) const;

    // Shares of collective keys (multiparty: kasoku/mp/multiparty.hpp): the public and Galois keys of sk with their
    // uniform parts drawn from a given public seed instead of a fresh one, so that the b-parts of several parties'
    // keys under one seed add up to the key of the sum of their secrets.
    PublicKey public_key(const SecretKey& sk, const Seed& common, Exec exec = {}) const;
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
rns::RnsPoly uniform_poly(const Context& ctx, const Seed& seed, std::size_t part, std::size_t num_q, std::size_t num_p);
// Fresh samples from the OS CSPRNG over the same limbs, NTT form: the error distribution of every key and encryption
// (discrete Gaussian, sigma 3.2, cut at 6 sigma), and a uniform ternary polynomial (an encryption's ephemeral secret).
// Multiparty protocols draw their errors and ephemeral secrets with them.
rns::RnsPoly error_poly(const Context& ctx, std::size_t num_q, std::size_t num_p, Exec exec = {});
rns::RnsPoly ternary_poly(const Context& ctx, std::size_t num_q, std::size_t num_p, Exec exec = {});

class Encryptor {
public:
    explicit Encryptor(ContextPtr ctx) : ctx_(std::move(ctx)) {}
    // Public-key encryption at the plaintext's level and scale. Throws ParameterError for a malformed plaintext.
    Ciphertext encrypt(const Plaintext& pt, const PublicKey& pk, Exec exec = {}) const;
    // Secret-key encryption (smaller noise): (-a s + e + m, a).
    Ciphertext encrypt_symmetric(const Plaintext& pt, const SecretKey& sk, Exec exec = {}) const;

private:
    ContextPtr ctx_;
};

class Decryptor {
public:
    explicit Decryptor(ContextPtr ctx) : ctx_(std::move(ctx)), encoder_(ctx_) {}
    // Decrypts and decodes into slots() complex values. Throws ParameterError for a malformed ciphertext or one
    // encrypted under another secret key.
    std::vector<std::complex<double>> decrypt(const Ciphertext& ct, const SecretKey& sk, Exec exec = {}) const;

private:
    ContextPtr ctx_;
    Encoder encoder_;
};

}  // namespace kasoku::ckks
