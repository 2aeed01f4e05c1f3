// CKKS bootstrapping (Cheon, Han, Kim, Kim, Song, Eurocrypt 2018; Han and Ki, CT-RSA 2020; Bossuat, Mouchet,
// Troncoso-Pastoriza, Hubaux, Eurocrypt 2021): a ciphertext that has used its levels comes back at a high level with
// the same message. Full slots (n/2 complex values), on any backend (only ckks and algo operations are used):
//
//   1. ModRaise: the ciphertext at level 0, its message first multiplied by a power of two c so that
//      K = q_0 / (c * scale) is about 2^log_message_ratio, then its coefficients read over all primes: it decrypts to
//      t = c * (the message polynomial) + q_0 I, I a small integer polynomial (sparse secret: |I| <= k_bound).
//      With sparse-secret encapsulation (Parameters::boot_secret_weight; Bossuat, Troncoso-Pastoriza, Hubaux, ePrint
//      2022/024) the main secret may be dense: the ciphertext is switched to an ephemeral sparse secret at level 0,
//      raised, and switched back, so that I is as small as the sparse secret makes it.
//   2. CoeffToSlot: the inverse of the encoding's special FFT, its log2(n/2) butterfly stages merged into
//      cts_levels slot-linear transforms (BSGS, hoisted baby steps; one level each), scaled so that slot j holds
//      (t_j + i t_{j + n/2}) / (2 q_0 (k_bound + 1)) in bit-reversed order. A conjugation splits real and imaginary
//      parts: x / (k_bound + 1) with x = (message coefficient) / K + I, real.
//   3. EvalMod: sin(2 pi x) = cos(2 pi (x - 1/4)): a Chebyshev interpolant of cos(2 pi ((k_bound + 1) y - 1/4) / 2^r)
//      on y in [-1, 1], then r double-angle steps cos 2a = 2 cos^2 a - 1. sin(2 pi x) = sin(2 pi coefficient / K),
//      2 pi coefficient / K to within (2 pi / K)^3 / 6 relative to the message (the price of the sine's curvature).
//   4. SlotToCoeff: the special FFT's stages (the bit reversal cancels the one CoeffToSlot left) merged into
//      stc_levels transforms, times K / (2 pi): the message again, on the canonical scale of output_level().
//
// Levels: cts_levels + ceil(log2(cos_degree + 1)) + double_angle + stc_levels. With bootstrapping levels
// (Parameters::boot_levels: larger primes above the user's) they are those, and the output is at the user level with
// the user's scale; without, they are taken from max_level.
#pragma once
#include <cstdint>
#include <map>
#include <vector>

#include "kasoku/algo/linear_transform.hpp"
#include "kasoku/algo/polynomial.hpp"

namespace kasoku::algo {

struct BootstrapConfig {
    // CoeffToSlot and SlotToCoeff transforms (one level each), 1..log2(slots); 0: chosen from the room the
    // bootstrapping levels leave beside EvalMod (CoeffToSlot the larger half, up to 4; SlotToCoeff up to 3), or 3
    // each when the parameters have no bootstrapping levels.
    int cts_levels = 0;
    int stc_levels = 0;
    int double_angle = 3;        // r, 0..8
    int log_message_ratio = 8;   // log2 K wanted, 4..30 (K lands in [2^this, 2^(this+1)) or below when q_0 is small)
    double k_bound = 0;          // bound on |I|; 0: 6 standard deviations of I for the weight of the secret ModRaise sees
    std::size_t cos_degree = 0;  // degree of the cosine interpolant; 0: the least 2^d - 1 within 2^-42 on [-1, 1]
};

// The butterfly stages of the encoding's special FFT (Encoder::fft_special; inverse: fft_special_inv without its
// final bit reversal, its 1/slots included) as slot-linear maps, offset (0..slots-1) -> diagonal: out[s] =
// sum_r diag_r[s] in[(s + r) mod slots] as LinearTransform takes them. The log2(slots) stages are merged, in the order
// they apply, into `groups` maps (sizes as equal as possible), each multiplied by factor^(1/groups). Throws
// ParameterError for groups outside 1..log2(slots).
std::vector<std::map<std::int64_t, cvec>> dft_factors(const ckks::Context& ctx, bool inverse, int groups, double factor = 1.0);

// Wall-clock seconds of each stage of one bootstrap (the encapsulation switches count in raise, the conjugation split
// in eval_mod).
struct BootstrapTimes {
    double raise = 0, coeff_to_slot = 0, eval_mod = 0, slot_to_coeff = 0;
};

class Bootstrapper {
public:
    // Plans the levels and encodes the transforms (over Q_l * P at their levels: the memory of the bootstrapping
    // "keys" besides the Galois keys). Throws ParameterError for a config outside its ranges, a context with neither
    // encapsulation (boot_secret_weight) nor a sparse secret (hamming_weight) unless k_bound is given, or one with
    // too few levels (the message says how many are needed).
    Bootstrapper(ckks::ContextPtr ctx, BootstrapConfig cfg = {}, Exec exec = {});

    // The Galois elements of every rotation and the conjugation it uses (give them to KeyGenerator::evaluation_keys
    // with the relinearisation key; with boot_secret_weight, KeyGenerator::encapsulation_keys too).
    std::vector<std::uint64_t> galois_elements() const;
    // The same for a config, without encoding anything (a client makes the keys before any server plans). Throws
    // as the constructor.
    static std::vector<std::uint64_t> galois_elements(const ckks::Context& ctx, const BootstrapConfig& cfg);
    // The levels a bootstrap with this config takes, without encoding anything. Throws as the constructor.
    static int levels_needed(const ckks::Context& ctx, const BootstrapConfig& cfg = {});
    int depth() const { return depth_; }                   // levels used
    // ModRaise's level: user_level() + depth() with bootstrapping levels (Parameters::boot_levels), else max_level().
    int raise_level() const { return top_; }
    // user_level() with bootstrapping levels, else max_level() - depth().
    int output_level() const { return top_ - depth_; }
    double k_bound() const { return k_bound_; }
    double message_ratio() const { return ratio_; }         // K
    const Polynomial& cosine() const { return cos_; }      // EvalMod's interpolant (on [-1, 1])
    const BootstrapConfig& config() const { return cfg_; }

    // The message of ct (any level >= 0, size 2; at level 0 its scale must be the canonical one) at output_level()
    // with that level's canonical scale. Messages with |m| <= 1 keep the measured precision (docs/BOOTSTRAPPING.md); the
    // sine adds a relative error (2 pi c / K)^2 / 6 for a message coefficient c, so larger ones lose bits. Throws ScaleError for a non-canonical scale at level 0,
    // ParameterError for a size-3 ciphertext or one of another context, MissingKeyError for a missing key.
    ckks::Ciphertext bootstrap(const ckks::Evaluator& ev, const ckks::Ciphertext& ct, Exec exec = {},
                               OpCounts* counts = nullptr, BootstrapTimes* times = nullptr) const;

    // The stages, for tests and per-stage timing. raise: ct -> level 0 canonical, times c, (to the sparse secret,)
    // ModRaise to raise_level() with its canonical scale declared (slots: decode(t) / that scale), (back to the main
    // secret).
    ckks::Ciphertext raise(const ckks::Evaluator& ev, const ckks::Ciphertext& ct, Exec exec = {}) const;
    // Slots (t_j + i t_{j+n/2}) / (2 q_0 (k_bound + 1)), bit-reversed j, from raise()'s output.
    ckks::Ciphertext coeff_to_slot(const ckks::Evaluator& ev, const ckks::Ciphertext& raised, Exec exec = {},
                                   OpCounts* counts = nullptr) const;
    // sin(2 pi (k_bound + 1) y) for real slots y in [-1, 1] at the level coeff_to_slot leaves.
    ckks::Ciphertext eval_mod(const ckks::Evaluator& ev, const ckks::Ciphertext& y, Exec exec = {},
                              OpCounts* counts = nullptr) const;
    // special FFT (without its bit reversal) of the slots, times K / (2 pi), from the level eval_mod leaves.
    ckks::Ciphertext slot_to_coeff(const ckks::Evaluator& ev, const ckks::Ciphertext& w, Exec exec = {},
                                   OpCounts* counts = nullptr) const;

private:
    ckks::ContextPtr ctx_;
    BootstrapConfig cfg_;
    double k_bound_ = 0, ratio_ = 0;
    int doublings_ = 0;  // c = 2^doublings
    int depth_ = 0, top_ = 0;
    Polynomial cos_;
    std::vector<LinearTransform> cts_, stc_;
};

}  // namespace kasoku::algo
