// CKKS bootstrapping (Cheon, Han, Kim, Kim, Song, Eurocrypt 2018; Han and Ki, CT-RSA 2020; Bossuat, Mouchet,
// Troncoso-Pastoriza, Hubaux, Eurocrypt 2021): a ciphertext that has used its levels comes back at a high level with
// the same message. Full slots (n/2 complex values) or sparse ones (BootstrapConfig::slots), on any backend (only ckks
// and algo operations are used):
//
//   1. ModRaise: the ciphertext at level 0, its message first multiplied by a power of two c so that
//      K = q_0 / (c * scale) is about 2^log_message_ratio, then its coefficients read over all primes: it decrypts to
//      t = c * (the message polynomial) + q_0 I, I a small integer polynomial (a secret with h nonzero coefficients:
//      |I| <= h / 2 + 1/2, and far less but with a vanishing probability; see failure() below).
//      With sparse-secret encapsulation (Parameters::boot_secret_weight; Bossuat, Troncoso-Pastoriza, Hubaux, ePrint
//      2022/024) the main secret may be dense: the ciphertext is switched to an ephemeral sparse secret at level 0,
//      raised, and switched back, so that I is as small as the sparse secret makes it.
//   2. CoeffToSlot: the inverse of the encoding's special FFT, its log2(slots) butterfly stages merged into
//      cts_levels slot-linear transforms (BSGS, hoisted baby steps; one level each).
//      Full slots: slot j holds (t_j + i t_{j + n/2}) / (2 q_0 (k_bound + 1)) in bit-reversed order; a conjugation
//      then splits real and imaginary parts: x / (k_bound + 1) with x = (message coefficient) / K + I, real.
//      Sparse slots (s <= n/4, the message in the subring of X^g, g = n / (2 s), i.e. its slots repeat every s): first
//      the trace to that subring, sum of the rotations by s * 2^i (i < log2(g)), which keeps g times t's coefficients
//      of X^(g k); the transforms, times 1/2 on slots j < s and -i/2 on s..2s - 1 (folded into the first one, whose
//      diagonals have the longest period already), plus their conjugate, put the real parts of
//      u_j = (t_{gj} + i t_{g(j + s)}) / (q_0 (k_bound + 1)) in slots j < s and the imaginary parts in s..2s - 1
//      (repeating every 2s): one real vector, so EvalMod runs once instead of twice.
//   3. EvalMod: sin(2 pi x) = cos(2 pi (x - 1/4)): a Chebyshev interpolant of cos(2 pi ((k_bound + 1) y - 1/4) / 2^r)
//      on y in [-1, 1], then r double-angle steps cos 2a = 2 cos^2 a - 1. A coefficient whose |I| lies beyond what
//      this chain maps to the sine (its reach, measured in plain arithmetic) comes out wrong: the bootstrap fails;
//      k_bound and r are chosen so that this happens with probability at most 2^-failure_bits (failure()). sin(2 pi x) = sin(2 pi coefficient / K),
//      2 pi coefficient / K to within (2 pi / K)^3 / 6 relative to the message (the price of the sine's curvature);
//      the optional arcsine correction (arcsine_degree) evaluates arcsin's Taylor polynomial on it, which removes
//      that error down to the next Taylor term and lets K be smaller.
//   4. SlotToCoeff: the special FFT's stages (the bit reversal cancels the one CoeffToSlot left) merged into
//      stc_levels transforms, times K / (2 pi): the message again, on the canonical scale of output_level(). Sparse
//      slots: the last transform also joins the real and imaginary halves back into s complex values.
//      SlotToCoeff first (BootstrapConfig::slot_to_coeff_first): the special FFT runs on the input's lowest levels
//      before ModRaise, so that the slots become coefficients; CoeffToSlot then brings them back in order, and one
//      plaintext product (times K / (2 pi); sparse: joining the halves) ends the bootstrap instead.
//
// Levels: cts_levels + ceil(log2(cos_degree + 1)) + double_angle (+ the arcsine's depth) + stc_levels (SlotToCoeff
// first: + 1 instead, and stc_levels of the input's own). With bootstrapping levels (Parameters::boot_levels: larger
// primes above the user's) they are those, and the output is at the user level with the user's scale; without, they
// are taken from max_level.
#pragma once
#include <cmath>
#include <cstdint>
#include <map>
#include <memory>
#include <vector>

#include "kasoku/algo/linear_transform.hpp"
#include "kasoku/algo/polynomial.hpp"

namespace kasoku::algo {

struct BootstrapConfig {
    // CoeffToSlot and SlotToCoeff transforms (one level each), 1..log2(slots); 0: chosen from the room the
    // bootstrapping levels leave beside EvalMod (CoeffToSlot the larger half, up to 4; SlotToCoeff the rest, up to
    // 4), or 3 each when the parameters have no bootstrapping levels. Four each (16 bootstrapping levels with EvalMod's
    // 8) take less time and a third of the plan's memory of three each (kasoku.nn's parameters; docs/NN.md).
    int cts_levels = 0;
    int stc_levels = 0;
    // r, 0..8; -1: chosen with k_bound (below).
    int double_angle = -1;
    // log2 K wanted, 4..30 (K lands in [2^this, 2^(this+1)) or below when q_0 is small); 0: with bootstrapping levels,
    // round(4 + 0.4 (boot_bits - 55) + 0.75 (16 - log_n)) + floor(log2(g) / 2) within 4..30, fitted to the best
    // measured precision at N = 2^10..2^16 and 50-60-bit bootstrapping primes (docs/BOOTSTRAPPING.md: the noise of
    // smaller primes and larger rings outweighs the sine's curvature), g = n / (2 slots) for sparse slots (their
    // coefficients are sqrt(g) times larger); 8 without.
    int log_message_ratio = 0;
    // Bound on |I| that EvalMod's interpolant spans; 0: chosen, with double_angle when that is -1, as the
    // configuration of fewest EvalMod levels, then fewest ciphertext products, then smallest k_bound, whose failure
    // probability (failure()) is at most 2^-failure_bits.
    double k_bound = 0;
    // Degree of the cosine interpolant; 0: the least degree within 2^-42 on [-1, 1] for the fewest levels.
    std::size_t cos_degree = 0;
    // Complex slots bootstrapped: 0 or n/2 for all; a power of two 2..n/4 for sparse packing, where the input's slots
    // repeat every `slots` slots (Encoder::replicate) and so does the output's.
    std::size_t slots = 0;
    // arcsin's Taylor polynomial after EvalMod: 0 (off) or an odd degree 3..15 (ceil(log2(degree + 1)) more levels).
    int arcsine_degree = 0;
    // The order SlotToCoeff, ModRaise, CoeffToSlot, EvalMod: SlotToCoeff runs on the input's levels stc_levels..1
    // (few primes: cheap; the input must be at level >= stc_levels) and a final scaling (one level) replaces it at
    // the end; stc_levels 0: up to 3 of the user's levels.
    bool slot_to_coeff_first = false;
    // Real slots: EvalMod runs once (on the real part of CoeffToSlot's output) instead of twice, and the output holds
    // the real part of each input slot (imaginary parts are dropped). Full slots: the input is first projected on its
    // real part at level 0 (z + conj(z), a key switch on q_0 alone), whose polynomial m(X) = m(X^-1) is determined by
    // its lower half of coefficients, the ones EvalMod keeps; SlotToCoeff (its first map halving the constant
    // coefficient's slot) and the conjugation sum m_low(X) + m_low(X^-1) rebuild it. SlotToCoeff first: only the
    // second EvalMod is skipped. Sparse slots take one EvalMod anyway (this changes nothing there).
    bool real = false;
    // Encode the transforms' diagonals at each bootstrap (LinearTransform's at_use, kAtUseChunk at a time) instead of
    // once: a plan of their values (one period each) instead of their encodings over Q_l * P, for the encoding time at
    // every bootstrap. The same results, bit for bit.
    bool at_use = false;
    // The failure probability the chosen k_bound and double_angle meet: at most 2^-failure_bits per bootstrap, 1..1000.
    int failure_bits = 128;
};

// P(V >= a) as log2, for V the sum of `terms` independent uniform variables on (-1/2, 1/2) (the Irwin-Hall law,
// centred; -infinity where it is 0, a >= terms / 2). Exact up to rounding (a recursion of nonnegative terms, no
// cancellation). Bootstrapping's I is round(V - d) for the Hamming weight of the secret as `terms` (Bootstrapper::failure).
// @throws ParameterError for terms outside 1..65536 or a non-finite a
double log2_irwin_hall_tail(int terms, double a);

// When a bootstrap can fail, and how likely it is (Bootstrapper::failure(), docs/BOOTSTRAPPING.md).
// ModRaise leaves x = m / K + I in each coefficient EvalMod evaluates, for the message coefficient m (|m| <= 1 for
// slots |z| <= 1) and I = round(V - d) with V the sum of h uniform terms: the h coefficients of c_1 / q_0 that the
// secret's h nonzero coefficients pick (c_0 follows from c_1 and the message, so it adds none) and |d| <= 1 / K.
// The reach is the largest integer R such that EvalMod's chain, evaluated in plain arithmetic (eval_mod_reference) at
// every x = +-I + m / K with I <= R and |m| <= 1, is within `tolerance` of sin(2 pi x) (with the arcsine correction: of
// its polynomial on sin(2 pi x)): tolerance is 2^-20 2 pi / K, an error that SlotToCoeff makes 2^-20 in every output slot. A
// bootstrap fails when some coefficient has |I| > reach: at most `coefficients` times P(|I| > R), which is
// 2 P(V >= R + 1/2 - 1 / K) (the union bound: it holds whatever the coefficients' dependence).
struct BootstrapFailure {
    int secret_weight = 0;            // h of the secret ModRaise sees; 0: a dense secret (no bound: probability 1)
    int reach = 0;                    // R
    double tolerance = 0;             // in units of the sine (EvalMod's output)
    std::size_t coefficients = 0;     // that EvalMod evaluates in one bootstrap: n, n / 2 for real slots, 2 s sparse
    double log2_per_coefficient = 0;  // log2 P(|I| > reach); -infinity when |I| never exceeds it
    double log2_per_bootstrap = 0;    // min(0, log2(coefficients) + log2_per_coefficient)
};

// The butterfly stages of the encoding's special FFT on `slots` values (0: ctx.slots(); Encoder::fft_special;
// inverse: fft_special_inv without its final bit reversal, its 1/slots included) as slot-linear maps, offset
// (0..slots-1) -> diagonal of `slots` values: out[s] = sum_r diag_r[s] in[(s + r) mod slots] as LinearTransform takes
// them (repeated over all ctx.slots() slots, they act on inputs that repeat every `slots` slots). The log2(slots)
// stages are merged, in the order they apply, into `groups` maps (sizes as equal as possible), each multiplied by
// factor^(1/groups).
// @throws ParameterError for slots not a power of two in 2..ctx.slots(), or groups outside 1..log2(slots)
std::vector<std::map<std::int64_t, cvec>> dft_factors(const ckks::Context& ctx, bool inverse, int groups,
                                                      double factor = 1.0, std::size_t slots = 0);

// ModRaise, bootstrapping's first step: a (size 2) at level 0 -> the same coefficients, centered mod q_0, over the
// primes of `level` (-1, or any negative level: max_level), same scale. It decrypts to the phase of a plus q_0 I, for
// an integer polynomial I whose coefficients are small when the secret is sparse (about sqrt((h + 1) / 12) standard
// deviations for h nonzero secret coefficients); EvalMod removes q_0 I.
// @throws ParameterError for a ciphertext of another context, a size-3 one, or a negative thread count
// @throws LevelError unless a is at level 0 and `level` in 1..max_level
ckks::Ciphertext mod_raise(const ckks::Evaluator& ev, const ckks::Ciphertext& a, int level = -1, Exec exec = {});

// Sparse-secret encapsulation around ModRaise (Parameters::boot_secret_weight; the keys: EvaluationKeys::to_sparse and
// from_sparse, made by KeyGenerator::encapsulation_keys). switch_to_sparse: a at level 0 -> the same phase under the
// ephemeral sparse secret s' (a key over q_0 * p_0 only, the modulus where s' keeps its security). switch_from_sparse:
// a ciphertext under s' (at any level) -> under the main secret. Both are Evaluator::key_switch; the result keeps a's
// key id (a ciphertext under s' only decrypts after switch_from_sparse).
// @throws MissingKeyError if ev's keys have no to_sparse key
// @throws LevelError if a is above level 0
// @throws ParameterError as Evaluator::key_switch (a bad or size-3 operand, a key of another secret key)
ckks::Ciphertext switch_to_sparse(const ckks::Evaluator& ev, const ckks::Ciphertext& a, Exec exec = {});
// @throws MissingKeyError if ev's keys have no from_sparse key
// @throws ParameterError as Evaluator::key_switch (a bad or size-3 operand, a key of another secret key)
ckks::Ciphertext switch_from_sparse(const ckks::Evaluator& ev, const ckks::Ciphertext& a, Exec exec = {});

// Wall-clock seconds of each stage of one bootstrap (the encapsulation switches count in raise, the conjugation split
// in eval_mod); on a device, each stage waits for its queued work.
struct BootstrapTimes {
    double raise = 0, coeff_to_slot = 0, eval_mod = 0, slot_to_coeff = 0;
};

class Bootstrapper {
public:
    // Plans the levels and encodes the transforms (over Q_l * P at their levels: the memory of the bootstrapping
    // "keys" besides the Galois keys). The encoded transforms are shared by every bootstrapper of the same context and
    // config while one of them lives: a second one is made without encoding anything (shares_transforms_with).
    // progress, when given, is called after each transform encoded with (transforms done, transforms in all).
    // @throws ParameterError for a null context, a config outside its ranges, a context with neither encapsulation
    //     (boot_secret_weight) nor a sparse secret (hamming_weight) unless k_bound is given, one with too few levels
    //     (the message says how many are needed), or a negative thread count
    // @throws what `progress` throws
    Bootstrapper(ckks::ContextPtr ctx, BootstrapConfig cfg = {}, Exec exec = {}, const Progress& progress = {});

    // The Galois elements of every rotation and the conjugation it uses (give them to KeyGenerator::evaluation_keys
    // with the relinearisation key; with boot_secret_weight, KeyGenerator::encapsulation_keys too).
    std::vector<std::uint64_t> galois_elements() const;
    // The same for a config, without encoding anything (a client makes the keys before any server plans).
    // @throws ParameterError as the constructor (the config, the secret, too few levels)
    static std::vector<std::uint64_t> galois_elements(const ckks::Context& ctx, const BootstrapConfig& cfg);
    // Each of galois_elements() with the highest level a bootstrap uses its key at: a transform's rotations at the
    // transform's level, the trace's at raise_level(), the conjugation where CoeffToSlot ends. A key made for those
    // levels only (KeyGenerator::evaluation_keys' galois_levels) serves every bootstrap: SlotToCoeff's own keys are
    // about half the size of the top's.
    std::map<std::uint64_t, int> galois_levels() const;
    // The same for a config, without encoding anything.
    // @throws ParameterError as the constructor (the config, the secret, too few levels)
    static std::map<std::uint64_t, int> galois_levels(const ckks::Context& ctx, const BootstrapConfig& cfg);
    // The levels a bootstrap with this config takes, without encoding anything.
    // @throws ParameterError as the constructor (the config, the secret, too few levels)
    static int levels_needed(const ckks::Context& ctx, const BootstrapConfig& cfg = {});
    int depth() const { return depth_; }          // levels above the output (SlotToCoeff first: without its own)
    std::size_t slots() const { return slots_; }  // complex slots bootstrapped (ctx.slots() when full)
    bool sparse() const { return slots_ < ctx_->slots(); }
    // ModRaise's level: user_level() + depth() with bootstrapping levels (Parameters::boot_levels), else max_level().
    int raise_level() const { return top_; }
    // The lowest level an input may have: 0, or stc_levels with SlotToCoeff first.
    int input_level() const { return cfg_.slot_to_coeff_first ? cfg_.stc_levels : 0; }
    // user_level() with bootstrapping levels, else max_level() - depth().
    int output_level() const { return top_ - depth_; }
    double k_bound() const { return k_bound_; }
    double message_ratio() const { return ratio_; }  // K
    // The law of I, EvalMod's measured reach and what they give: the probability that one bootstrap fails.
    const BootstrapFailure& failure() const { return failure_; }
    // The same for a config, without encoding anything.
    // @throws ParameterError as the constructor (the config, the secret, too few levels)
    static BootstrapFailure failure(const ckks::Context& ctx, const BootstrapConfig& cfg = {});
    double failure_probability() const { return std::exp2(failure_.log2_per_bootstrap); }  // 0 when it never fails
    // EvalMod's chain (the cosine, the double-angle steps, the arcsine correction) in plain arithmetic at
    // x = m / K + I, the input that eval_mod() sees as x / (k_bound + 1): about sin(2 pi x) when |I| <= reach.
    double eval_mod_reference(double x) const;
    const Polynomial& cosine() const { return cos_; }    // EvalMod's interpolant (on [-1, 1])
    const Polynomial& arcsine() const { return asin_; }  // the arcsine correction (no coefficients when off)
    const BootstrapConfig& config() const { return cfg_; }
    // Whether two bootstrappers use the same encoded transforms (the same context and config, one made while the
    // other lived).
    bool shares_transforms_with(const Bootstrapper& o) const { return transforms_ == o.transforms_; }
    // Memory of the encoded transforms (shared by the bootstrappers of one context and config).
    std::size_t plan_nbytes() const;

    // The message of ct (any level >= input_level() and any scale above it, size 2 or 3; at input_level() its scale
    // must be the canonical one, which drop_level keeps) at output_level() with that level's canonical scale.
    // Messages with |m| <= 1 keep the measured precision (docs/BOOTSTRAPPING.md); the sine adds a relative error
    // (2 pi c / K)^2 / 6 for a message coefficient c (without the arcsine correction), so larger ones lose bits.
    // @throws ParameterError for a bad ciphertext (of another context, malformed, more than 3 parts), one under
    //     another secret key than ev's keys, or a negative thread count
    // @throws LevelError if ct is below input_level()
    // @throws ScaleError if ct is at input_level() off its canonical scale
    // @throws MissingKeyError if ev's keys lack one that bootstrapping uses (galois_elements(), the relinearisation
    //     key, the encapsulation keys with boot_secret_weight)
    ckks::Ciphertext bootstrap(const ckks::Evaluator& ev, const ckks::Ciphertext& ct, Exec exec = {},
                               OpCounts* counts = nullptr, BootstrapTimes* times = nullptr) const;

    // The stages, for tests and per-stage timing (SlotToCoeff first: slot_to_coeff, raise, coeff_to_slot, eval_mod and
    // the final scaling). raise: ct -> level 0 canonical, times c, (to the sparse secret,)
    // ModRaise to raise_level() with its canonical scale declared (slots: decode(t) / that scale), (back to the main
    // secret).
    // @throws ParameterError for a bad ciphertext, one under another secret key than ev's keys, or a negative thread
    //     count
    // @throws ScaleError if ct is at level 0 off its canonical scale
    // @throws MissingKeyError if ev's keys lack one it uses (relinearisation for size 3, conjugation for real slots,
    //     the encapsulation keys)
    ckks::Ciphertext raise(const ckks::Evaluator& ev, const ckks::Ciphertext& ct, Exec exec = {}) const;
    // Slots (t_j + i t_{j+n/2}) / (2 q_0 (k_bound + 1)), bit-reversed j, from raise()'s output. Sparse: the trace
    // first, then the real parts of (t_{gj} + i t_{g(j+s)}) / (q_0 (k_bound + 1)) in slots j < s (bit-reversed j) and
    // their imaginary parts in s..2s - 1, repeating every 2s.
    // @throws LevelError if `raised` is not at raise_level()
    // @throws MissingKeyError if ev's keys lack a Galois key of the transforms, the trace or the conjugation
    // @throws ParameterError for a bad or size-3 ciphertext, or a negative thread count
    ckks::Ciphertext coeff_to_slot(const ckks::Evaluator& ev, const ckks::Ciphertext& raised, Exec exec = {},
                                   OpCounts* counts = nullptr) const;
    // sin(2 pi (k_bound + 1) y) for real slots y in [-1, 1] at the level coeff_to_slot leaves; with the arcsine
    // correction, arcsin of that (2 pi ((k_bound + 1) y - round((k_bound + 1) y)) when it is small).
    // @throws LevelError if y has fewer levels than EvalMod takes
    // @throws ScaleError if y is off the canonical scale of its level
    // @throws MissingKeyError if ev's keys have no relinearisation key
    // @throws ParameterError for a bad or size-3 ciphertext, or a negative thread count
    ckks::Ciphertext eval_mod(const ckks::Evaluator& ev, const ckks::Ciphertext& y, Exec exec = {},
                              OpCounts* counts = nullptr) const;
    // special FFT (without its bit reversal) of the slots, times K / (2 pi), from the level eval_mod leaves. Sparse:
    // of w_j + i w_{j+s} (j < s) for slots w that repeat every 2s. SlotToCoeff first: the special FFT alone, from
    // level stc_levels to 0.
    // @throws LevelError if w is not at the level of the first SlotToCoeff transform
    // @throws MissingKeyError if ev's keys lack a Galois key of the transforms
    // @throws ParameterError for a bad or size-3 ciphertext, or a negative thread count
    ckks::Ciphertext slot_to_coeff(const ckks::Evaluator& ev, const ckks::Ciphertext& w, Exec exec = {},
                                   OpCounts* counts = nullptr) const;

private:
    ckks::ContextPtr ctx_;
    BootstrapConfig cfg_;
    double k_bound_ = 0, ratio_ = 0;
    int doublings_ = 0;  // c = 2^doublings
    BootstrapFailure failure_;
    // Real slots in full packing: the input projected on its real part at level 0, one EvalMod, the conjugation sum.
    bool real_projection() const { return cfg_.real && !sparse() && !cfg_.slot_to_coeff_first; }
    int depth_ = 0, top_ = 0;
    std::size_t slots_ = 0;
    std::vector<std::uint64_t> trace_galois_elts_;  // sparse: Galois elements of the rotations by s * 2^i
    Polynomial cos_, asin_;
    struct Transforms final : ckks::Context::Shared {
        std::vector<LinearTransform> cts, stc, finish;  // finish: SlotToCoeff first's final scaling
    };
    // Shared by every bootstrapper of the same context and config while one of them lives (Context::shared).
    std::shared_ptr<const Transforms> transforms_;
};

}  // namespace kasoku::algo
