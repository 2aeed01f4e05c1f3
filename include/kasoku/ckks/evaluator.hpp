// Homomorphic operations. The evaluator holds evaluation keys only (never the secret key), is const, and any two
// calls may run at once on different threads. Each heavy call takes an execution handle (support/exec.hpp: a thread
// count on the CPU, 0 = the context's default). Operands are never modified by out-of-place calls; in-place calls
// leave the operand unchanged when they throw.
//
// Errors (all derive from kasoku::Error, support/error.hpp), checked before any data is touched:
//   ParameterError  an operand of another context, a malformed one, operands under different secret keys, a
//                   negative thread count, or a bad argument (named in each method);
//   LevelError      no level left for a rescale, or a level out of range;
//   ScaleError      scales that differ at one level, or a scale that no longer fits the modulus;
//   MissingKeyError the relinearisation or Galois key an operation needs is not in the evaluation keys.
#pragma once
#include <array>
#include <complex>
#include <memory>
#include <vector>

#include "kasoku/ckks/context.hpp"
#include "kasoku/ckks/encoder.hpp"
#include "kasoku/ckks/objects.hpp"
#include "kasoku/ckks/trace.hpp"
#include "kasoku/rns/keyswitch.hpp"

namespace kasoku::ckks {

// Key switching split into its typed steps (seed 000 §3.2): decompose (digit split + ModUp: the part that
// several key switches of one ciphertext share) -> inner_product_lazy (stays in the Q_l * P basis) -> mod_down.
struct Decomposition {
    Ciphertext input;                  // the ciphertext (c0 is used by the later steps)
    std::vector<rns::RnsPoly> digits;  // digit j: ModUp(digit j of c1), NTT form, num_q = l+1, num_p = k
};

// Key-switched ciphertext before its ModDown (rns::LazyPolys): c0 over Q_l, (b, a) over Q_l * P. Lazy values of the
// same input add up, so a sum of key switches needs one ModDown (lazy modulus-down).
struct LazyCiphertext : rns::LazyPolys {
    double scale = 0;
    std::uint64_t context_uid = 0, key_id = 0;
    int level() const { return static_cast<int>(c0.num_q()) - 1; }
};

// Operations executed (the columns of seed 003 Table 5, plus the key-switching steps), as an evaluator made by
// Evaluator::counting counts them: each public operation adds its own (below), the composite ones (trace, sum_slots,
// the batches) add those of the operations they run. add: ciphertext additions (lazy ones, and the terms of a sum,
// included); cmult: plaintext or constant products; rot: key-switched automorphisms (hoisted ones included); mult:
// tensor products; decompose: ModUps; mod_down: ModDowns (relinearisation included); rescale: rescales. Alignments of
// operands at different levels are not counted.
struct OpCounts {
    std::size_t add = 0, cmult = 0, rot = 0, mult = 0, decompose = 0, mod_down = 0, rescale = 0;
    OpCounts& operator+=(const OpCounts& o);
};
// Every count, for the code that treats them alike (OpCounts::operator+=, the evaluator's counting).
inline constexpr std::array<std::size_t OpCounts::*, 7> kOpCountFields = {
    &OpCounts::add,       &OpCounts::cmult,    &OpCounts::rot,    &OpCounts::mult,
    &OpCounts::decompose, &OpCounts::mod_down, &OpCounts::rescale};

class Evaluator {
public:
    // keys may be null: then only operations without key switching are available. Throws ParameterError when the
    // keys belong to another context.
    Evaluator(ContextPtr ctx, std::shared_ptr<const EvaluationKeys> keys);

    const Context& context() const { return *ctx_; }
    const EvaluationKeys* keys() const { return keys_.get(); }
    // This evaluator, adding the operations it runs to `counts` (atomically: a counting evaluator may be used from
    // several threads; counts must outlive it). What each operation adds: OpCounts.
    Evaluator counting(OpCounts& counts) const;

    // Operands at different levels are aligned (the higher one dropped, its scale adjusted exactly when needed).
    // Throw ScaleError for different scales at one level.
    Ciphertext add(const Ciphertext& a, const Ciphertext& b, Exec exec = {}) const;
    Ciphertext sub(const Ciphertext& a, const Ciphertext& b, Exec exec = {}) const;
    Ciphertext negate(const Ciphertext& a, Exec exec = {}) const;
    // Plaintext operands: values are encoded at the ciphertext's level (zero padded to slots()). Throw ParameterError
    // for more than slots() values or non-finite ones, ScaleError when the encoded values do not fit the modulus.
    Ciphertext add_plain(const Ciphertext& a, const std::vector<std::complex<double>>& values, Exec exec = {}) const;
    Ciphertext add_scalar(const Ciphertext& a, std::complex<double> c, Exec exec = {}) const;
    // Multiplies by values encoded with the scale that makes the rescaled result land exactly on the canonical scale
    // of the next level (Context::scale_at), whatever the operand's scale. Throw LevelError at level 0 with rescale,
    // ScaleError when the product's scale no longer fits, ParameterError for bad values.
    Ciphertext multiply_plain(const Ciphertext& a, const std::vector<std::complex<double>>& values, bool rescale = true,
                              Exec exec = {}) const;
    Ciphertext multiply_scalar(const Ciphertext& a, std::complex<double> c, bool rescale = true, Exec exec = {}) const;
    // Tensor, relinearise, rescale (ModDown and rescale fused). Operands at one level may have any scales; at two
    // levels they are aligned as for add. rescale=false leaves a degree-1 ciphertext at scale sa*sb. Throws
    // MissingKeyError without the relinearisation key, LevelError at level 0 with rescale, ScaleError when sa*sb no
    // longer fits, ParameterError for size-3 operands.
    Ciphertext multiply(const Ciphertext& a, const Ciphertext& b, bool rescale = true, Exec exec = {}) const;
    Ciphertext square(const Ciphertext& a, bool rescale = true, Exec exec = {}) const {
        return multiply(a, a, rescale, exec);
    }
    // The tensor product alone: a size-3 ciphertext (c0, c1, c2) at scale sa*sb. Sums of tensor products need one
    // relinearize (and one rescale) in all. Throws as multiply (no key needed).
    Ciphertext tensor(const Ciphertext& a, const Ciphertext& b, Exec exec = {}) const;
    // acc += a * pt (acc empty: acc = a * pt); pt is encoded at a's level (by Encoder::encode or encode_extended),
    // acc.scale = a.scale * pt.scale. No rescale: a sum of plaintext products is rescaled once. Throws LevelError when
    // pt is at another level, ParameterError when acc's level, size, key or scale differs from the product's.
    void multiply_plain_accumulate(const Ciphertext& a, const Plaintext& pt, Ciphertext& acc, Exec exec = {}) const;
    // sum_i xs[i] * pts[i] in one pass over the limbs (Backend::sum_of_products), no rescale: xs of one level, size,
    // key and scale, pts at their level (encode or encode_extended) with one scale. Throws ParameterError for no
    // terms or terms that differ, LevelError for a plaintext at another level, ScaleError when the scale no longer
    // fits.
    Ciphertext multiply_plain_sum(const std::vector<const Ciphertext*>& xs, const std::vector<const Plaintext*>& pts,
                                  Exec exec = {}) const;
    // sum_i coeffs[i] * xs[i] + constant with one rescale: the terms are taken to the lowest level l among xs (limbs
    // dropped), each multiplied by its coefficient as an integer constant at the scale that makes the rescaled sum
    // land on scale_at(l - 1) whatever each term's scale. Real parts are constant products; imaginary parts are
    // summed apart and multiplied once by X^(n/2) (i in every slot). Zero coefficients skip their term. Throws
    // ParameterError for no terms, lists of different lengths, a non-finite coefficient, size-3 terms or terms under
    // different keys; LevelError when l = 0; ScaleError when a coefficient times the scale does not fit.
    Ciphertext linear_combination(const std::vector<const Ciphertext*>& xs,
                                  const std::vector<std::complex<double>>& coeffs, std::complex<double> constant = 0.0,
                                  Exec exec = {}) const;
    // The same with the result at `level` (below every term's: the terms are read on that level's limbs plus one,
    // without copies) and `scale` (0: the canonical scale of `level`), e.g. a factor that a product then multiplies
    // onto the canonical scale. Throws as linear_combination, LevelError for a level not below every term's,
    // ParameterError for a scale below 1 or not finite.
    Ciphertext linear_combination_at(const std::vector<const Ciphertext*>& xs,
                                     const std::vector<std::complex<double>>& coeffs, std::complex<double> constant,
                                     int level, double scale = 0.0, Exec exec = {}) const;
    // k * a * b + sum_i coeffs[i] * xs[i] + constant with one relinearisation and one rescale: the terms are summed
    // into the tensor product at its scale (each multiplied by an integer constant, as in linear_combination), then one
    // ModDown + rescale, so they need no rescale or alignment of their own (the products and sums of polynomial
    // evaluation). a and b at one level l, any scales; terms at level l or above (read on l's limbs), any scales whose
    // ratio to the product's is large (e.g. a product of two ~2^40 scales and ~2^40 terms: each term's constant then
    // carries the coefficient to 40 bits). The result is at level l - 1 with scale a.scale * b.scale / q_l. Throws
    // MissingKeyError without the relinearisation key; ParameterError for factors at two levels, size-3 operands,
    // k = 0 or |k| > 2^20, a term below level l or under another key, non-finite coefficients; LevelError at level 0;
    // ScaleError when the product's scale does not fit.
    Ciphertext multiply_add(const Ciphertext& a, const Ciphertext& b, std::int64_t k,
                            const std::vector<const Ciphertext*>& xs, const std::vector<std::complex<double>>& coeffs,
                            std::complex<double> constant = 0.0, Exec exec = {}) const;
    // Size 3 -> size 2 (size 2 is returned as is). Throws MissingKeyError without the relinearisation key.
    Ciphertext relinearize(const Ciphertext& a, Exec exec = {}) const;
    // Divides by q_level with rounding: one level down. Throws LevelError at level 0.
    Ciphertext rescale(const Ciphertext& a, Exec exec = {}) const;
    // a at `level` (at or below a's). A ciphertext on the canonical scale of its level (fresh, rescaled products,
    // bootstrapping's output) lands on the canonical scale of `level` (the limbs above level + 1 are dropped and one
    // integer constant and rescale by q_(level+1) adjust the scale, to a relative 2^-40), so it combines
    // with the ciphertexts there without adjustment, and polynomial evaluation and bootstrapping take it. Any other
    // ciphertext (a hand-chosen scale, size 3) keeps its scale: drop_limbs. Throws LevelError for a level above a's or
    // below 0.
    Ciphertext drop_level(const Ciphertext& a, int level, Exec exec = {}) const;
    // Drops limbs down to `level`, nothing else: the scale stays a's (off the canonical scale of `level` when a was on
    // its own level's). Throws as drop_level.
    Ciphertext drop_limbs(const Ciphertext& a, int level) const;
    // Every slot times i, exactly and without a level: the product by the monomial X^(n/2).
    Ciphertext multiply_by_i(const Ciphertext& a, Exec exec = {}) const;
    // The phase of a (size 2) under the key's target secret: an ordinary key switch with any key of this context and
    // secret key (bootstrapping switches so to and from its sparse secret: EvaluationKeys::to_sparse, from_sparse,
    // algo/bootstrap.hpp). The result keeps a's scale, level and key id (the id names the key set, not the secret it
    // now decrypts under). Throws ParameterError for a size-3 operand or a key of another context or secret key,
    // LevelError above the levels the key serves (a key over fewer primes: drop_level the ciphertext first).
    Ciphertext key_switch(const Ciphertext& a, const SwitchKey& key, Exec exec = {}) const;
    // Left rotation: slot i of the result is slot (i + step) mod slots of a. Throws MissingKeyError without the
    // rotation key of that step (the message names the keygen call), ParameterError for a size-3 operand.
    Ciphertext rotate(const Ciphertext& a, std::int64_t step, Exec exec = {}) const;
    // Complex conjugation of every slot (the automorphism X -> X^(2N - 1)). Throws MissingKeyError without the
    // conjugation key (keygen(conjugation=True)), ParameterError for a size-3 operand.
    Ciphertext conjugate(const Ciphertext& a, Exec exec = {}) const;
    // The automorphism X -> X^galois_elt followed by a key switch back to s. Throws MissingKeyError without its key,
    // ParameterError for an even galois_elt or one >= 2N, or a size-3 operand.
    Ciphertext apply_galois(const Ciphertext& a, std::uint64_t galois_elt, Exec exec = {}) const;

    // In-place forms (throw as the out-of-place ones and then leave a unchanged).
    void add_inplace(Ciphertext& a, const Ciphertext& b, Exec exec = {}) const { a = add(a, b, exec); }
    void sub_inplace(Ciphertext& a, const Ciphertext& b, Exec exec = {}) const { a = sub(a, b, exec); }
    void multiply_inplace(Ciphertext& a, const Ciphertext& b, Exec exec = {}) const { a = multiply(a, b, true, exec); }
    void rescale_inplace(Ciphertext& a, Exec exec = {}) const { a = rescale(a, exec); }
    void rotate_inplace(Ciphertext& a, std::int64_t step, Exec exec = {}) const { a = rotate(a, step, exec); }

    // --- Batches (seed 002): one operation on many independent ciphertexts (element i of each list). The backend runs
    // them as it likes (the CPU: spread over the thread team, one ciphertext per thread, when there are at least as
    // many as threads); element i of the result equals the single operation's, bit for bit. Throw ParameterError for
    // lists of different lengths, and otherwise what the single operation throws for the first failing element.
    using Batch = std::vector<const Ciphertext*>;
    std::vector<Ciphertext> add_many(const Batch& a, const Batch& b, Exec exec = {}) const;
    std::vector<Ciphertext> sub_many(const Batch& a, const Batch& b, Exec exec = {}) const;
    // relinearize=false: the tensor products (size 3), rescaled when rescale=true.
    std::vector<Ciphertext> multiply_many(const Batch& a, const Batch& b, bool relinearize = true, bool rescale = true,
                                          Exec exec = {}) const;
    std::vector<Ciphertext> tensor_many(const Batch& a, const Batch& b, Exec exec = {}) const;
    std::vector<Ciphertext> relinearize_many(const Batch& a, Exec exec = {}) const;
    std::vector<Ciphertext> rescale_many(const Batch& a, Exec exec = {}) const;
    std::vector<Ciphertext> rotate_many(const Batch& a, std::int64_t step, Exec exec = {}) const;
    std::vector<Ciphertext> multiply_plain_many(const Batch& a,
                                                const std::vector<std::vector<std::complex<double>>>& values,
                                                bool rescale = true, Exec exec = {}) const;
    // The batch of a list of ciphertexts.
    static Batch batch(const std::vector<Ciphertext>& v) {
        Batch b;
        for (const Ciphertext& c : v) b.push_back(&c);
        return b;
    }

    // --- Split key switching and hoisting (seed 000 Alg. 3.2.1; rns::KeySwitcher does the work) ---
    // Throws ParameterError for a size-3 operand.
    Decomposition decompose(const Ciphertext& a, Exec exec = {}) const;
    // psi_g(a) before its ModDown: inner products with the Galois key of g, then the automorphism. Throws
    // MissingKeyError without that key, ParameterError for a decomposition not made by decompose().
    LazyCiphertext inner_product_lazy(const Decomposition& d, std::uint64_t galois_elt, Exec exec = {}) const;
    // Throws ParameterError for lazy values of another context or key, or at other levels or scales.
    void add_lazy_inplace(LazyCiphertext& acc, const LazyCiphertext& x, Exec exec = {}) const;
    // sum_i xs[i] * pts[i] in the Q_l * P basis; pts from Encoder::encode_extended at the level of xs. The masks and
    // diagonals of a linear transform multiply the baby-step rotations here, before their one ModDown, which then also
    // divides the rounding of the products by P. Throws ParameterError for no terms, lazy values that differ in level,
    // key or scale, or plaintexts not encoded with encode_extended at their level; ScaleError when the scale no longer
    // fits.
    LazyCiphertext multiply_plain_sum_lazy(const std::vector<const LazyCiphertext*>& xs,
                                           const std::vector<const Plaintext*>& pts, Exec exec = {}) const;
    // Throws ParameterError for a lazy value of another context.
    Ciphertext mod_down(const LazyCiphertext& x, Exec exec = {}) const;
    Ciphertext mod_down(LazyCiphertext&& x, Exec exec = {}) const;
    // round((x + P * addend) / (P * q_l)): ModDown, the addition of a ciphertext over Q_l (may be null) and a rescale
    // in one base conversion, as multiply does for relinearisation. Throws LevelError at level 0, ParameterError for an
    // addend that is not a size-2 ciphertext at x's level and scale.
    Ciphertext mod_down_rescale(LazyCiphertext&& x, const Ciphertext* addend = nullptr, Exec exec = {}) const;
    // psi_g(a) for every g, sharing one decomposition (list form). Throws ParameterError for an even g or g >= 2n,
    // MissingKeyError (before any work) when a key is missing.
    std::vector<Ciphertext> apply_galois_hoisted(const Ciphertext& a, const std::vector<std::uint64_t>& galois_elts,
                                                 Exec exec = {}) const;
    // Rotations by each step (then the conjugate when `conjugate`), sharing one decomposition.
    std::vector<Ciphertext> rotate_hoisted(const Ciphertext& a, const std::vector<std::int64_t>& steps,
                                           bool conjugate = false, Exec exec = {}) const;
    // sum_g psi_g(a): one decomposition, the sum taken in the Q_l * P basis, one ModDown (sum form). Throws
    // ParameterError for no element or g = 1, MissingKeyError when a key is missing.
    Ciphertext apply_galois_sum_hoisted(const Ciphertext& a, const std::vector<std::uint64_t>& galois_elts,
                                        Exec exec = {}) const;
    // The sum of the rotations by `steps`, psi_g(a) for `galois_elts` and the conjugate when `conjugate` (the same sum
    // form; Python's ev.rotate_sum_hoisted). Throws as apply_galois_sum_hoisted.
    Ciphertext rotate_sum_hoisted(const Ciphertext& a, const std::vector<std::int64_t>& steps,
                                  std::vector<std::uint64_t> galois_elts = {}, bool conjugate = false,
                                  Exec exec = {}) const;
    // Trace-type function over the doubling steps kappa_0..kappa_{M-1}: sum over all subsets S of
    // psi_{prod S}(a). h = M is repeated doubling (a <- a + psi_kappa_i(a), one key switch per step); h < M
    // unrolls it (seed 000 Alg. 3.2.2) into h hoisted sums over groups of steps. h = 0: the cheapest h whose
    // keys are all present, by the measured cost model (keyswitch_costs). Throws ParameterError for h outside 0..M
    // or dependent steps, MissingKeyError when no h (or the h given) has all its keys.
    Ciphertext trace(const Ciphertext& a, const std::vector<std::uint64_t>& automorphisms, int h = 0,
                     Exec exec = {}) const;
    // Slot i of the result is sum_{j < count} a[(i + j) mod slots]; count a power of two (0: all slots; else
    // ParameterError).
    Ciphertext sum_slots(const Ciphertext& a, std::size_t count = 0, int h = 0, Exec exec = {}) const;
    // The h that trace() with h = 0 picks at this level (0 if no h has all its keys).
    int choose_trace_h(const std::vector<std::uint64_t>& automorphisms, int level, Exec exec = {}) const;
    // Measured costs of the key-switching steps at a level (cached per context, level and thread count). Throws
    // LevelError for a level outside 0..max_level.
    KeySwitchCosts keyswitch_costs(int level, Exec exec = {}) const;

private:
    // Adds an operation's counts to counts_ when it returns (not when it throws), unless it runs inside another
    // counted operation on this thread (which counts what it runs itself).
    class Count;
    OpCounts* counts_ = nullptr;
    void check(const Ciphertext& a, const char* what) const;
    // a and b at a common level and scale: the operands themselves when they already agree, otherwise the
    // higher one dropped (and its scale adjusted exactly by a constant multiply and a rescale) in `storage`.
    struct Aligned {
        const Ciphertext* a_in;
        const Ciphertext* b_in;
        Ciphertext storage;
        int stored = 0;  // 1: storage replaces a, 2: storage replaces b
        const Ciphertext& a() const { return stored == 1 ? storage : *a_in; }
        const Ciphertext& b() const { return stored == 2 ? storage : *b_in; }
    };
    // sum: operands of a sum need one scale at one level (a product takes any two).
    Aligned align(const Ciphertext& a, const Ciphertext& b, bool sum, Exec exec) const;
    // The checks of linear_combination's terms: their lowest level and largest |coefficient| (constant included).
    struct Terms {
        int lowest;
        double largest;
    };
    Terms check_terms(const std::vector<const Ciphertext*>& xs, const std::vector<std::complex<double>>& coeffs,
                      std::complex<double> constant, const char* op) const;
    // out[0..1] = sum_i coeffs[i] xs[i] + constant (+ k times base's first two parts) on the first `limbs` q-limbs at
    // scale `target` (term i multiplied by round(coeffs[i] target / its scale)), not rescaled. Terms checked by
    // check_terms.
    void combine(const std::vector<const Ciphertext*>& xs, const std::vector<std::complex<double>>& coeffs,
                 std::complex<double> constant, std::size_t limbs, double target, const Ciphertext* base,
                 std::int64_t k, rns::RnsPoly* out, Exec exec) const;
    // tensor() with `op` naming the caller in its errors; exec already resolved.
    Ciphertext tensor_product(const Ciphertext& a, const Ciphertext& b, const char* op, Exec exec) const;
    // The Galois key of galois_elt for an operand under key_id at `level` (detail::galois_keys' errors), and the
    // relinearisation key, as the backend reads them (a compact key's a-parts expanded).
    std::shared_ptr<const rns::GadgetKey> galois_key(std::uint64_t galois_elt, std::uint64_t key_id, int level) const;
    std::shared_ptr<const rns::GadgetKey> relin_key() const;
    // psi_g(x.c0 + ModDown(x.b) + add_b), psi_g(ModDown(x.a) + add_a) with like's metadata, g = galois_elt.
    Ciphertext finish(const Ciphertext& like, const rns::LazyPolys& x, const rns::RnsPoly* add_b,
                      const rns::RnsPoly* add_a, std::uint64_t galois_elt, Exec exec) const;
    // finish(like, switch_lazy(d, key), add_b, add_a, galois_elt) in one backend call (Backend::key_switch_mod_down).
    Ciphertext switch_finish(const Ciphertext& like, const rns::RnsPoly& d, const rns::GadgetKey& key,
                             const rns::RnsPoly* add_b, const rns::RnsPoly* add_a, std::uint64_t galois_elt,
                             Exec exec) const;
    void check_scale_fits(double scale, int level, const char* op) const;
    Plaintext i_monomial(int level, Exec exec) const;  // X^(n/2) at `level`, scale 1
    double plain_scale(const Ciphertext& a) const;

    ContextPtr ctx_;
    std::shared_ptr<const EvaluationKeys> keys_;
    Encoder encoder_;
};

}  // namespace kasoku::ckks
