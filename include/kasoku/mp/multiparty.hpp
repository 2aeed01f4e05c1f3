// Multiparty CKKS: N parties each hold an additive share s_i of a secret s = s_1 + ... + s_N that nobody holds. They
// make the collective public, relinearisation and Galois keys together (Mouchet, Troncoso-Pastoriza, Bossuat and
// Hubaux, "Multiparty homomorphic encryption from ring-learning-with-errors", PETS 2021: CKG, RKG in two rounds, GKG),
// anyone encrypts under the collective public key, a server evaluates with the collective evaluation keys, and the
// parties decrypt together (collective decryption), switch a result to one receiver's key (public-key switching,
// PCKS), or bring a ciphertext back to the top level in one round instead of bootstrapping it (refresh).
// Thresholding: each party deals Shamir shares of its s_i, after which any t of the N parties decrypt or switch
// (a share of a group is the party's Shamir share times its Lagrange coefficient for the group), and fewer than t
// learn nothing of s.
//
// Parties run Party locally (its secret never leaves it: a Share holds only what the party sends); the aggregation
// is plain functions of the shares that anyone may run (the service, one of the parties). Every share is bound to its
// context's parameters, the session, the sending party, the protocol and round, and what it is about (the Galois
// element, the ciphertext and group it decrypts): the aggregation refuses shares that disagree, a missing or
// repeated party, and a group below the threshold, with ParameterError saying which.
//
// Security (docs/MULTIPARTY.md): semi-honest parties, any coalition of up to N - 1 (N-of-N) or t - 1 (threshold).
// Decryption and key-switching shares carry smudging noise (noise flooding; Smudging below): CKKS decryption shares
// without it reveal the ciphertext's noise, from which the secret follows (Li and Micciancio, EUROCRYPT 2021).
// Every operation runs on the polynomial backend, so a GPU context runs the protocols too.
//
// Errors: each function lists its own in @throws lines. Besides them, whatever draws randomness or hashes (every
// share, Session::random, common and key_id) throws kasoku::Error when OpenSSL fails, and a negative thread count in
// an Exec is a ParameterError.
#pragma once
#include <complex>
#include <cstdint>
#include <optional>
#include <vector>

#include "kasoku/ckks/context.hpp"
#include "kasoku/ckks/objects.hpp"
#include "kasoku/ckks/serialization.hpp"
#include "kasoku/support/random.hpp"

namespace kasoku::mp {

// The protocols and rounds; shares of different ones never combine.
enum class Protocol : std::uint8_t {
    public_key = 1,    // CKG
    relin_round1 = 2,  // RKG
    relin_round2 = 3,
    galois_key = 4,  // GKG
    decryption = 5,  // collective decryption
    key_switch = 6,  // PCKS
    shamir = 7,      // thresholdizing: a Shamir share of one party's s_i, for one other party
    refresh = 8,     // interactive refresh (a one-round replacement of bootstrapping)
};
const char* protocol_name(Protocol p);

// A session: the common reference string (a public random seed every party knows; anyone draws it), the number of
// parties and, once the parties have thresholdized their shares, the threshold t (0: N-of-N). The uniform parts of
// every collective key are drawn from the CRS; the collective keys' key id (and so that of every ciphertext under
// them) is derived from it.
struct Session {
    Seed crs{};
    std::uint32_t parties = 0;
    std::uint32_t threshold = 0;
    // A fresh CRS from the OS CSPRNG.
    // @throws ParameterError for fewer than 2 parties or a threshold outside 2..parties (0 allowed: N-of-N)
    // @throws Error if the OS has no randomness to give
    static Session random(std::uint32_t parties, std::uint32_t threshold = 0);
    // The same checks.
    // @throws ParameterError for fewer than 2 parties or a threshold outside 2..parties (0 allowed: N-of-N)
    void check() const;
    // The seed of one protocol's common parts (tag: the Galois element of a Galois key).
    Seed common(Protocol p, std::uint64_t tag = 0) const;
    std::uint64_t key_id() const;
};

// One party's message in one protocol round. It holds no secret (the Shamir shares excepted: each is meant for one
// other party only, over a private channel).
struct Share {
    std::uint64_t fingerprint = 0;  // the context's parameters
    std::uint64_t session = 0;      // Session::key_id
    std::uint32_t party = 0;
    Protocol protocol{};
    std::uint64_t tag = 0;  // what it is about: Galois element; digest of the ciphertext, group and target; recipient
    std::vector<rns::RnsPoly> polys;
};

// A share on the wire: the project's integrity-checked format (a ckks::Record of type kShareRecord: session, party,
// protocol, tag and the polynomials; the parameters' fingerprint in the envelope).
inline constexpr std::uint8_t kShareRecord = 1;
// @throws ParameterError for a share made with other parameters than ctx's
// @throws Error if zstd compression fails
ckks::Bytes to_bytes(const ckks::Context& ctx, const Share& share,
                     ckks::Compression compression = ckks::Compression::none);
// @throws SerializationError for damaged bytes, another kind of object, other parameters, metadata other than a
//     share's (word count, party id, an unknown protocol), more polynomials than a share holds, or polynomials that
//     do not fit ctx or are not in NTT form
Share share_from_bytes(const ckks::Context& ctx, const std::uint8_t* data, std::size_t size);

// Shares given to an aggregation: pointers, since a share holds megabytes (pointers_to makes them from a vector).
using Shares = std::vector<const Share*>;
inline Shares pointers_to(const std::vector<Share>& shares) {
    Shares out;
    for (const Share& s : shares) out.push_back(&s);
    return out;
}

// Noise flooding of decryption and key-switching shares: each party adds a discrete Gaussian of the standard deviation
// ckks::flooding_sigma gives (ckks/crypto.hpp: B sqrt(n) sqrt(queries / 2) 2^(s / 2), the one sizing of single-key and
// multiparty decryption), where B bounds the coefficients of the ciphertext's noise and s is the statistical
// security. One honest party's noise suffices: a coalition knows and removes its own. The price is precision: each
// decrypted slot carries an error of standard deviation sigma sqrt(parties n) / scale, so decrypt on a large scale
// (decryption_precision_bits says what is left).
struct Smudging {
    int statistical_security = 40;
    std::uint64_t queries = 1;
    // B; 0: default_noise_bound. Pass a larger bound for noisier ciphertexts (after bootstrapping, long circuits).
    double noise_bound = 0;
    // The standard deviation per party.
    // @throws ParameterError for a noise_bound that is not a finite number >= 0, and as ckks::flooding_sigma
    //     (statistical_security outside 0..128, queries < 1)
    double sigma(const ckks::Context& ctx, const Session& session) const;
};
// 16 times the standard deviation of a rescale's rounding noise under the collective secret (sqrt((1 + n v) / 12),
// v = 2/3 N the variance of a coefficient of s for N dense ternary shares): the noise of fresh encryptions and of
// products, rotations and rescales of values within [-1, 1] stays within a few such deviations; pass a measured bound
// for noisier ciphertexts (bootstrapped ones carry EvalMod's noise, 2^8 and more times larger).
double default_noise_bound(const ckks::Context& ctx, const Session& session);
// log2(scale / (sigma sqrt(group n))): the bits the smudged sum leaves to the slots of a ciphertext at `scale` (the
// standard deviation of a slot's error; the largest over many slots is 2-3 bits worse).
// @throws ParameterError as Smudging::sigma
double decryption_precision_bits(const ckks::Context& ctx, const Session& session, const Smudging& smudging,
                                 double scale, std::size_t group);

class Party {
public:
    // Draws the party's secret share (ternary, as KeyGenerator::secret_key). id: 1..session.parties, distinct in the
    // session (Shamir's evaluation points).
    // @throws ParameterError for an id outside 1..session.parties, a bad session (Session::check), or a negative
    //     thread count
    // @throws Error if the OS has no randomness to give
    Party(ckks::ContextPtr ctx, const Session& session, std::uint32_t id, Exec exec = {});
    ~Party();
    Party(const Party&) = delete;
    Party& operator=(const Party&) = delete;
    std::uint32_t id() const { return id_; }
    const Session& session() const { return session_; }

    // CKG: b_i = -a s_i + e_i, a from the CRS.
    // @throws ParameterError for a negative thread count
    Share public_key_share(Exec exec = {}) const;
    // RKG round 1: (-u_i a_j + P g_j s_i + e, s_i a_j + e') per digit j, for an ephemeral ternary u_i the party keeps
    // for round 2. Round 2, from the sum of every party's round 1 (aggregate_relin_round1): (s_i h0_j + e,
    // (u_i - s_i) h1_j + e'); u_i is wiped.
    // @throws ParameterError for a negative thread count
    Share relin_round1(Exec exec = {});
    // @throws ParameterError if round 1 has not run (or round 2 already ran for it), for a round1_sum that is not this
    //     session's aggregate_relin_round1 (another protocol, a single party's share, other parameters), with the
    //     wrong number or shapes of polynomials, or a negative thread count
    Share relin_round2(const Share& round1_sum, Exec exec = {});
    // GKG: the party's Galois key of element g with a_j from the CRS (KeyGenerator::galois_key with a common seed).
    // @throws ParameterError for an even galois_elt, one >= 2n or 1, or a negative thread count
    Share galois_key_share(std::uint64_t galois_elt, Exec exec = {}) const;

    // Collective decryption: s c_1 + flood (s: the party's additive share, or within `group` its Shamir share times
    // its Lagrange coefficient). The ciphertext must be relinearised (two parts).
    // @throws ParameterError for a ciphertext of another context, malformed, of size 3 or not under this session's
    //     key; an invalid group (no threshold session, ids not increasing and distinct or outside 1..parties, fewer
    //     than t, or one without this party); a party without its threshold share (a group given); smudging as
    //     Smudging::sigma, or smudged values that would keep less than one bit (decryption_precision_bits); or a
    //     negative thread count
    Share decryption_share(const ckks::Ciphertext& ct, const Smudging& smudging = {},
                           const std::vector<std::uint32_t>& group = {}, Exec exec = {}) const;
    // PCKS to `to` (a receiver's public key of this context): (s c_1 + u to.b + flood, u to.a + e) for a fresh ternary
    // u; the aggregated ciphertext decrypts under the receiver's secret key alone.
    // @throws ParameterError as decryption_share, and for a receiver's key of another context
    Share key_switch_share(const ckks::Ciphertext& ct, const ckks::PublicKey& to, const Smudging& smudging = {},
                           const std::vector<std::uint32_t>& group = {}, Exec exec = {}) const;

    // Refresh (Mouchet et al.'s masked re-encryption, one round instead of a bootstrap): the party's share of bringing
    // ct (relinearised, at a level l) back to the top level: (s c_1 + M + flood) over Q_l and (-s a - M + e) over
    // Q_L, for a mask M uniform in [-2^(k-1), 2^(k-1)), 2^k <= Q_l / (4 N), and a common a from the CRS. The sum of the
    // masks hides the values (|values| <= value_bound) statistically: it needs k - 1 >= log2(the coefficients' bound)
    // + log2(n) + statistical_security bits of Q_l, and throws ParameterError saying how many are missing otherwise
    // (refresh at a higher level, or with fewer levels used). The output carries the smudging as a decryption does.
    // @throws ParameterError as decryption_share, for a value_bound that is not a positive finite number, and when
    //     the modulus at ct's level leaves the mask too few bits (the message says how many are missing)
    Share refresh_share(const ckks::Ciphertext& ct, const Smudging& smudging = {}, double value_bound = 1.0,
                        const std::vector<std::uint32_t>& group = {}, Exec exec = {}) const;

    // Thresholdizing (session.threshold = t): Shamir shares of s_i, s_i + r_1 x + ... + r_{t-1} x^{t-1} at x = each
    // party's id, one for each party (its own included), each to be sent privately to that party. Then each party
    // keeps the sum of the shares it received (receive_shamir_shares): its Shamir share of s.
    // @throws ParameterError if the session has no threshold, or for a negative thread count
    std::vector<Share> shamir_shares(Exec exec = {}) const;
    // @throws ParameterError for shares that are not every party's Shamir share for this party in this session (no
    //     shares, a null one, other parameters, session, protocol or recipient, a party outside the session or
    //     repeated, a missing party), or of the wrong number or shape of polynomials
    void receive_shamir_shares(const Shares& received, Exec exec = {});
    bool has_threshold_share() const { return shamir_.has_value(); }

private:
    // The secret this party contributes in `group` (its additive share, or lambda times its Shamir share).
    rns::RnsPoly secret_for(const std::vector<std::uint32_t>& group, std::size_t num_q, Exec exec) const;
    Share make_share(Protocol p, std::uint64_t tag) const;

    ckks::ContextPtr ctx_;
    Session session_;
    std::uint32_t id_;
    ckks::SecretKey s_;
    std::optional<rns::RnsPoly> u_;       // RKG's ephemeral secret between the rounds
    std::optional<rns::RnsPoly> shamir_;  // the Shamir share of s, once thresholdized
};

// ---- Aggregation: plain functions of public shares (the service or any party runs them). Each checks the shares of
// its round first: "bad shares" below are no shares, a null one, one made with other parameters, for another session,
// protocol or tag, a party outside the session or one that sent two, polynomials of different numbers or shapes
// across the shares, a sum that is not the shape of the key it stands for (the number of polynomials and limbs of this
// context's), and (N-of-N) a missing party; each of them is a ParameterError.

// The collective public key: (sum b_i, a), key id session.key_id().
// @throws ParameterError for a bad session or bad shares (one polynomial over Q_L * p_0 expected)
ckks::PublicKey aggregate_public_key(const ckks::ContextPtr& ctx, const Session& session, const Shares& shares);
// RKG: the sum of the round-1 shares (every party needs it for round 2), then the relinearisation key.
// @throws ParameterError for a bad session or bad shares
Share aggregate_relin_round1(const ckks::ContextPtr& ctx, const Session& session, const Shares& shares);
// @throws ParameterError for a bad session or bad round-2 shares, or a round1_sum that is not this session's round-1
//     sum (or not of the relinearisation key's shape)
ckks::SwitchKey aggregate_relin_key(const ckks::ContextPtr& ctx, const Session& session, const Share& round1_sum,
                                    const Shares& round2);
// GKG: the Galois key of g (seeded: its a-parts are the CRS's).
// @throws ParameterError for a bad session or bad shares (shares for another Galois element among them)
ckks::SwitchKey aggregate_galois_key(const ckks::ContextPtr& ctx, const Session& session, std::uint64_t galois_elt,
                                     const Shares& shares);
// The evaluation keys a server needs, from the collective relinearisation and Galois keys.
// @throws ParameterError for a key that is not this session's collective key (another context or key id), or a
//     Galois element that is even, >= 2n or 1
ckks::EvaluationKeys evaluation_keys(const ckks::ContextPtr& ctx, const Session& session,
                                     std::optional<ckks::SwitchKey> relin,
                                     std::vector<std::pair<std::uint64_t, ckks::SwitchKey>> galois);
// Collective decryption: the slots of ct from every party's share (N-of-N) or a group's (at least t parties, the
// group being the shares' parties).
// @throws ParameterError for a ciphertext of another context, malformed, of size 3 or not under this session's key;
//     bad shares (made for another ciphertext or group among them); a group below the threshold or without a
//     threshold session; or shares that do not have the ciphertext's shape; or a negative thread count
std::vector<std::complex<double>> decrypt(const ckks::ContextPtr& ctx, const Session& session,
                                          const ckks::Ciphertext& ct, const Shares& shares, Exec exec = {});
// Refresh: ct's message again at the top level (ctx.max_level()), on the same scale, from every party's refresh_share
// (or a group's): the masked values c_0 + sum h0 lifted exactly from Q_l to Q_L, plus sum h1, with the CRS's a.
// @throws ParameterError as decrypt, for the refresh shares of ct
ckks::Ciphertext refresh(const ckks::ContextPtr& ctx, const Session& session, const ckks::Ciphertext& ct,
                         const Shares& shares, Exec exec = {});
// PCKS: ct under the receiver's key `to`.
// @throws ParameterError as decrypt, for the key-switching shares of ct to `to`, and for a receiver's key of another
//     context
ckks::Ciphertext key_switch(const ckks::ContextPtr& ctx, const Session& session, const ckks::Ciphertext& ct,
                            const ckks::PublicKey& to, const Shares& shares, Exec exec = {});

}  // namespace kasoku::mp
