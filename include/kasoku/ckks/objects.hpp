// Plaintexts, ciphertexts and keys. Each remembers the uid of the context that made it and the id
// of the secret key it belongs to, so that objects of another context or key are refused.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <vector>

#include "kasoku/rns/backend.hpp"
#include "kasoku/rns/rns_poly.hpp"
#include "kasoku/support/random.hpp"

namespace kasoku::ckks {

struct Plaintext {
    rns::RnsPoly poly;  // NTT form over q_0..q_level
    double scale = 1.0;
    std::uint64_t context_uid = 0;
    int level() const { return static_cast<int>(poly.num_q()) - 1; }
};

struct Ciphertext {
    std::vector<rns::RnsPoly> polys;  // (c0, c1) or (c0, c1, c2) before relinearisation; NTT form
    double scale = 1.0;
    std::uint64_t context_uid = 0;
    std::uint64_t key_id = 0;
    // Secret-key encryption draws polys[1] (uniform) from this seed: serialization then writes the seed instead of the
    // part (it checks that the part is still the seed's expansion, so a ciphertext changed since keeps its full form).
    std::optional<Seed> seed;
    int level() const { return polys.empty() ? -1 : static_cast<int>(polys[0].num_q()) - 1; }
    std::size_t size() const { return polys.size(); }
};

// Secret key s (NTT form over every prime, q and p). Wiped on destruction.
class SecretKey {
public:
    SecretKey() = default;
    SecretKey(rns::RnsPoly s, std::uint64_t uid, std::uint64_t key_id)
        : s_(std::move(s)), context_uid_(uid), key_id_(key_id) {}
    SecretKey(const SecretKey&) = default;
    SecretKey& operator=(const SecretKey&) = default;
    ~SecretKey() { s_.wipe(); }
    const rns::RnsPoly& poly() const { return s_; }
    std::uint64_t context_uid() const { return context_uid_; }
    std::uint64_t key_id() const { return key_id_; }

private:
    rns::RnsPoly s_;
    std::uint64_t context_uid_ = 0, key_id_ = 0;
};

struct PublicKey {
    rns::RnsPoly b, a;  // b = -a s + e over Q_L * p_0 (the first special prime), NTT form
    std::uint64_t context_uid = 0, key_id = 0;
    std::optional<Seed> seed;  // a is this seed's expansion (serialization writes the seed)
};

// Hybrid key-switching key from s' to s: dnum pairs (b_j, a_j) over Q_L * P, NTT form,
// b_j = -a_j s + e_j + P [Q/Q_j]([Q/Q_j]^-1 mod Q_j) s' (rns::GadgetKey), and whose key it is.
struct SwitchKey : rns::GadgetKey {
    std::uint64_t context_uid = 0, key_id = 0;
    std::optional<Seed> seed;  // a_0, a_1, ... are this seed's expansion, in order (serialization writes the seed)
};

// Everything an evaluator needs, and nothing secret.
struct EvaluationKeys {
    std::shared_ptr<const SwitchKey> relin;  // s^2 -> s (may be null)
    // Galois element g -> key switching s -> s(X^{g^-1}) (applied before X -> X^g, see KeyGenerator::galois_key)
    std::map<std::uint64_t, std::shared_ptr<const SwitchKey>> galois;
    // Sparse-secret encapsulation for bootstrapping (Parameters::boot_secret_weight; both null without it): s -> s'
    // over q_0 * p_0 only (one digit), and s' -> s over Q_L * P, for an ephemeral sparse secret s'.
    std::shared_ptr<const SwitchKey> to_sparse, from_sparse;
    std::uint64_t context_uid = 0, key_id = 0;
};

}  // namespace kasoku::ckks
