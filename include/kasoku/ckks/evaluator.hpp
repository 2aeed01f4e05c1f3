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
// Each method lists its own in @throws lines, where "a bad operand" is a ciphertext or plaintext of another context
// or a malformed one (empty, level above the top, more than 3 parts), and "a bad exec" a negative thread count. A
// device backend adds DeviceError (gpu/cuda.hpp) when the device fails.
#pragma once
#include <array>
#include <complex>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "kasoku/ckks/context.hpp"
#include "kasoku/ckks/encoder.hpp"
#include "kasoku/ckks/objects.hpp"
#include "kasoku/ckks/trace.hpp"
#include "kasoku/rns/keyswitch.hpp"

namespace kasoku::ckks {

// Key switching split into its typed steps (Inoue 2022 §3.2): decompose (digit split + ModUp: the part that
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

// Operations executed (the columns of Manabe et al. Table 5, plus the key-switching steps), as an evaluator made by
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
    // keys may be null: then only operations without key switching are available.
    // @throws ParameterError if `keys` belong to another context
    Evaluator(ContextPtr ctx, std::shared_ptr<const EvaluationKeys> keys);

    const Context& context() const { return *ctx_; }
    const EvaluationKeys* keys() const { return keys_.get(); }
    // This evaluator, adding the operations it runs to `counts` (atomically: a counting evaluator may be used from
    // several threads; counts must outlive it). What each operation adds: OpCounts.
    Evaluator counting(OpCounts& counts) const;

    // a + b. Operands at different levels are aligned (the higher one dropped, its scale adjusted exactly when
    // needed).
    // @throws ParameterError for a bad operand or exec, or operands under different secret keys
    // @throws ScaleError if the scales differ at one level, or operands at two levels have scales too far apart to
    //     align
    Ciphertext add(const Ciphertext& a, const Ciphertext& b, Exec exec = {}) const;
    // a - b, aligned as for add.
    // @throws ParameterError for a bad operand or exec, or operands under different secret keys
    // @throws ScaleError if the scales differ at one level, or operands at two levels have scales too far apart to
    //     align
    Ciphertext sub(const Ciphertext& a, const Ciphertext& b, Exec exec = {}) const;
    // -a.
    // @throws ParameterError for a bad operand or exec
    Ciphertext negate(const Ciphertext& a, Exec exec = {}) const;
    // Plaintext operands: values are encoded at the ciphertext's level (zero padded to slots()).
    // @throws ParameterError for a bad operand or exec, more than slots() values or non-finite ones
    // @throws ScaleError if the encoded values do not fit the modulus at a's level
    Ciphertext add_plain(const Ciphertext& a, const std::vector<std::complex<double>>& values, Exec exec = {}) const;
    // c added to every slot.
    // @throws ParameterError for a bad operand or exec, or a c that is not finite
    // @throws ScaleError if c times a's scale does not fit the modulus at a's level
    Ciphertext add_scalar(const Ciphertext& a, std::complex<double> c, Exec exec = {}) const;
    // Multiplies by values encoded with the scale that makes the rescaled result land exactly on the canonical scale
    // of the next level (Context::scale_at), whatever the operand's scale.
    // @throws ParameterError for a bad operand or exec, more than slots() values or non-finite ones
    // @throws LevelError if `rescale` and a is at level 0
    // @throws ScaleError if the product's scale no longer fits the modulus, or the encoded values do not fit
    Ciphertext multiply_plain(const Ciphertext& a, const std::vector<std::complex<double>>& values, bool rescale = true,
                              Exec exec = {}) const;
    // The same with c in every slot.
    // @throws ParameterError for a bad operand or exec, or a c that is not finite
    // @throws LevelError if `rescale` and a is at level 0
    // @throws ScaleError if the product's scale no longer fits the modulus, or c times it does not fit
    Ciphertext multiply_scalar(const Ciphertext& a, std::complex<double> c, bool rescale = true, Exec exec = {}) const;
    // Tensor, relinearise, rescale (ModDown and rescale fused). Operands at one level may have any scales; at two
    // levels they are aligned as for add. rescale=false leaves a degree-1 ciphertext at scale sa*sb.
    // @throws MissingKeyError if the evaluation keys have no relinearisation key
    // @throws ParameterError for a bad operand or exec, size-3 operands, or operands (or the keys) under different
    //     secret keys
    // @throws LevelError if `rescale` and the lower operand is at level 0
    // @throws ScaleError if sa*sb no longer fits the modulus, or operands at two levels cannot be aligned
    Ciphertext multiply(const Ciphertext& a, const Ciphertext& b, bool rescale = true, Exec exec = {}) const;
    // multiply(a, a).
    // @throws MissingKeyError if the evaluation keys have no relinearisation key
    // @throws ParameterError for a bad operand or exec, a size-3 operand, or keys under another secret key
    // @throws LevelError if `rescale` and a is at level 0
    // @throws ScaleError if a's scale squared no longer fits the modulus
    Ciphertext square(const Ciphertext& a, bool rescale = true, Exec exec = {}) const {
        return multiply(a, a, rescale, exec);
    }
    // The tensor product alone: a size-3 ciphertext (c0, c1, c2) at scale sa*sb. Sums of tensor products need one
    // relinearize (and one rescale) in all. No key needed.
    // @throws ParameterError for a bad operand or exec, size-3 operands, or operands under different secret keys
    // @throws ScaleError if sa*sb no longer fits the modulus, or operands at two levels cannot be aligned
    Ciphertext tensor(const Ciphertext& a, const Ciphertext& b, Exec exec = {}) const;
    // acc += a * pt (acc empty: acc = a * pt); pt is encoded at a's level (by Encoder::encode or encode_extended),
    // acc.scale = a.scale * pt.scale. No rescale: a sum of plaintext products is rescaled once.
    // @throws ParameterError for a bad operand (a or pt) or exec, or an acc whose level, size, key or scale differs
    //     from the product's
    // @throws LevelError if pt is at another level than a
    // @throws ScaleError if a.scale * pt.scale no longer fits the modulus
    void multiply_plain_accumulate(const Ciphertext& a, const Plaintext& pt, Ciphertext& acc, Exec exec = {}) const;
    // sum_i xs[i] * pts[i] in one pass over the limbs (Backend::sum_of_products), no rescale: xs of one level, size,
    // key and scale, pts at their level (encode or encode_extended) with one scale.
    // @throws ParameterError for no terms, lists of different lengths, a null term, a bad operand or exec, or terms
    //     that differ in level, size, key or scale
    // @throws LevelError if a plaintext is at another level than the ciphertexts
    // @throws ScaleError if the product's scale no longer fits the modulus
    Ciphertext multiply_plain_sum(const std::vector<const Ciphertext*>& xs, const std::vector<const Plaintext*>& pts,
                                  Exec exec = {}) const;
    // sum_i coeffs[i] * xs[i] + constant with one rescale: the terms are taken to the lowest level l among xs (limbs
    // dropped), each multiplied by its coefficient as an integer constant at the scale that makes the rescaled sum
    // land on scale_at(l - 1) whatever each term's scale. Real parts are constant products; imaginary parts are
    // summed apart and multiplied once by X^(n/2) (i in every slot). Zero coefficients skip their term.
    // @throws ParameterError for no terms, lists of different lengths, a null term, a bad operand or exec, a
    //     non-finite coefficient or constant, size-3 terms, or terms under different keys
    // @throws LevelError if the lowest term is at level 0
    // @throws ScaleError if a coefficient (or the constant) times the scale does not fit the modulus
    Ciphertext linear_combination(const std::vector<const Ciphertext*>& xs,
                                  const std::vector<std::complex<double>>& coeffs, std::complex<double> constant = 0.0,
                                  Exec exec = {}) const;
    // The same with the result at `level` (below every term's: the terms are read on that level's limbs plus one,
    // without copies) and `scale` (0: the canonical scale of `level`), e.g. a factor that a product then multiplies
    // onto the canonical scale. A negative level means the default: one below the lowest term's.
    // @throws ParameterError for no terms, lists of different lengths, a null term, a bad operand or exec, a
    //     non-finite coefficient or constant, size-3 terms, terms under different keys, or a scale below 1 or not
    //     finite
    // @throws LevelError if the lowest term is at level 0, or `level` is not below every term's
    // @throws ScaleError if a coefficient (or the constant) times the scale does not fit the modulus
    Ciphertext linear_combination_at(const std::vector<const Ciphertext*>& xs,
                                     const std::vector<std::complex<double>>& coeffs, std::complex<double> constant,
                                     int level, double scale = 0.0, Exec exec = {}) const;
    // k * a * b + sum_i coeffs[i] * xs[i] + constant with one relinearisation and one rescale: the terms are summed
    // into the tensor product at its scale (each multiplied by an integer constant, as in linear_combination), then one
    // ModDown + rescale, so they need no rescale or alignment of their own (the products and sums of polynomial
    // evaluation). a and b at one level l, any scales; terms at level l or above (read on l's limbs), any scales whose
    // ratio to the product's is large (e.g. a product of two ~2^40 scales and ~2^40 terms: each term's constant then
    // carries the coefficient to 40 bits). The result is at level l - 1 with scale a.scale * b.scale / q_l.
    // @throws MissingKeyError if the evaluation keys have no relinearisation key
    // @throws ParameterError for a bad operand or exec, factors at two levels, size-3 operands, k = 0 or |k| > 2^20,
    //     lists of different lengths, a null term, a term below level l or under another key, non-finite
    //     coefficients, or keys under another secret key than the factors
    // @throws LevelError if the factors are at level 0
    // @throws ScaleError if the product's scale (times the largest coefficient or k) does not fit the modulus
    Ciphertext multiply_add(const Ciphertext& a, const Ciphertext& b, std::int64_t k,
                            const std::vector<const Ciphertext*>& xs, const std::vector<std::complex<double>>& coeffs,
                            std::complex<double> constant = 0.0, Exec exec = {}) const;
    // Size 3 -> size 2 (size 2 is returned as is).
    // @throws MissingKeyError if a has size 3 and the evaluation keys have no relinearisation key
    // @throws ParameterError for a bad operand or exec, or keys under another secret key than a's
    Ciphertext relinearize(const Ciphertext& a, Exec exec = {}) const;
    // Divides by q_level with rounding: one level down.
    // @throws ParameterError for a bad operand or exec
    // @throws LevelError if a is at level 0
    Ciphertext rescale(const Ciphertext& a, Exec exec = {}) const;
    // The same, in a's own memory (no copy of a).
    Ciphertext rescale(Ciphertext&& a, Exec exec = {}) const;
    // a at `level` (at or below a's). A ciphertext on the canonical scale of its level (fresh, rescaled products,
    // bootstrapping's output) lands on the canonical scale of `level` (the limbs above level + 1 are dropped and one
    // integer constant and rescale by q_(level+1) adjust the scale, to a relative 2^-40), so it combines
    // with the ciphertexts there without adjustment, and polynomial evaluation and bootstrapping take it. Any other
    // ciphertext (a hand-chosen scale, size 3) keeps its scale: drop_limbs.
    // @throws ParameterError for a bad operand or exec
    // @throws LevelError if `level` is above a's or below 0
    Ciphertext drop_level(const Ciphertext& a, int level, Exec exec = {}) const;
    // Drops limbs down to `level`, nothing else: the scale stays a's (off the canonical scale of `level` when a was on
    // its own level's).
    // @throws ParameterError for a bad operand or exec
    // @throws LevelError if `level` is above a's or below 0
    Ciphertext drop_limbs(const Ciphertext& a, int level, Exec exec = {}) const;
    // Every slot times i, exactly and without a level: the product by the monomial X^(n/2).
    // @throws ParameterError for a bad operand or exec
    Ciphertext multiply_by_i(const Ciphertext& a, Exec exec = {}) const;
    // The phase of a (size 2) under the key's target secret: an ordinary key switch with any key of this context and
    // secret key (bootstrapping switches so to and from its sparse secret: EvaluationKeys::to_sparse, from_sparse,
    // algo/bootstrap.hpp). The result keeps a's scale, level and key id (the id names the key set, not the secret it
    // now decrypts under).
    // @throws ParameterError for a bad operand or exec, a size-3 operand, or a key of another context or secret key
    // @throws LevelError if a is above the levels the key serves (a key over fewer primes: drop_level a first)
    Ciphertext key_switch(const Ciphertext& a, const SwitchKey& key, Exec exec = {}) const;
    // Left rotation: slot i of the result is slot (i + step) mod slots of a (a step of 0 mod slots returns a).
    // @throws MissingKeyError if the evaluation keys have no rotation key for the step (the message names the keygen
    //     call)
    // @throws ParameterError for a bad operand or exec, a size-3 operand, or a key under another secret key
    // @throws LevelError if a is above the levels the step's key serves (keygen's galois_levels)
    Ciphertext rotate(const Ciphertext& a, std::int64_t step, Exec exec = {}) const;
    // Complex conjugation of every slot (the automorphism X -> X^(2N - 1)).
    // @throws MissingKeyError if the evaluation keys have no conjugation key (keygen(conjugation=True))
    // @throws ParameterError for a bad operand or exec, a size-3 operand, or a key under another secret key
    // @throws LevelError if a is above the levels the conjugation key serves
    Ciphertext conjugate(const Ciphertext& a, Exec exec = {}) const;
    // The automorphism X -> X^galois_elt followed by a key switch back to s.
    // @throws ParameterError for a galois_elt that is even, >= 2N or 1, a bad operand or exec, a size-3 operand, or a
    //     key under another secret key
    // @throws MissingKeyError if the evaluation keys have no key for galois_elt
    // @throws LevelError if a is above the levels the key serves
    Ciphertext apply_galois(const Ciphertext& a, std::uint64_t galois_elt, Exec exec = {}) const;

    // In-place forms: each throws what its out-of-place form throws (its @throws lines above) and then leaves a
    // unchanged.
    void add_inplace(Ciphertext& a, const Ciphertext& b, Exec exec = {}) const { a = add(a, b, exec); }
    void sub_inplace(Ciphertext& a, const Ciphertext& b, Exec exec = {}) const { a = sub(a, b, exec); }
    void multiply_inplace(Ciphertext& a, const Ciphertext& b, Exec exec = {}) const { a = multiply(a, b, true, exec); }
    void rescale_inplace(Ciphertext& a, Exec exec = {}) const { a = rescale(a, exec); }
    void rotate_inplace(Ciphertext& a, std::int64_t step, Exec exec = {}) const { a = rotate(a, step, exec); }

    // --- Batches (Takao et al.): one operation on many independent ciphertexts (element i of each list). The backend
    // runs
    // them as it likes (the CPU: spread over the thread team, one ciphertext per thread, when there are at least as
    // many as threads); element i of the result equals the single operation's, bit for bit. Each batch:
    // @throws ParameterError if its lists differ in length, an element is null, or for a bad exec
    // @throws what the single operation throws (its @throws lines above) for the first failing element
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
    // The batch of a list of ciphertexts (throws nothing of its own).
    static Batch batch(const std::vector<Ciphertext>& v) {
        Batch b;
        for (const Ciphertext& c : v) b.push_back(&c);
        return b;
    }

    // --- Split key switching and hoisting (Inoue 2022 Alg. 3.2.1; rns::KeySwitcher does the work) ---
    // The digits of a's c1 (ModUp), shared by the key switches of a.
    // @throws ParameterError for a bad operand or exec, or a size-3 operand
    Decomposition decompose(const Ciphertext& a, Exec exec = {}) const;
    // The same, keeping a itself instead of a copy (a caller done with it saves copying both polynomials, a serial
    // memory pass that one thread of a team made alone while the others waited).
    Decomposition decompose(Ciphertext&& a, Exec exec = {}) const;
    // psi_g(a) before its ModDown: inner products with the Galois key of g, then the automorphism.
    // @throws MissingKeyError if the evaluation keys have no key for galois_elt
    // @throws ParameterError for a galois_elt that is even, >= 2N or 1, a decomposition not made by decompose() (of
    //     another context, malformed, or with the wrong number of digits), a bad exec, or a key under another secret
    //     key
    // @throws LevelError if d's ciphertext is above the levels the key serves
    LazyCiphertext inner_product_lazy(const Decomposition& d, std::uint64_t galois_elt, Exec exec = {}) const;
    // acc += x (scales equal to 2^-30 relative, as add's).
    // @throws ParameterError for lazy values of another context or key, at other levels or scales, one with a c0
    //     part and one without, or a bad exec
    void add_lazy_inplace(LazyCiphertext& acc, const LazyCiphertext& x, Exec exec = {}) const;
    // sum_i xs[i] * pts[i] in the Q_l * P basis; pts from Encoder::encode_extended at the level of xs. The masks and
    // diagonals of a linear transform multiply the baby-step rotations here, before their one ModDown, which then also
    // divides the rounding of the products by P.
    // @throws ParameterError for no terms, lists of different lengths, a null term, lazy values of another context or
    //     that differ in level, key, scale or c0 part, a bad plaintext, plaintexts not encoded with encode_extended at
    //     the lazy values' level or of different scales, or a bad exec
    // @throws ScaleError if the product's scale no longer fits the modulus
    LazyCiphertext multiply_plain_sum_lazy(const std::vector<const LazyCiphertext*>& xs,
                                           const std::vector<const Plaintext*>& pts, Exec exec = {}) const;
    // The baby steps of a linear transform and their products in one call: for each group j, the lazy sums of
    // pt * psi_{g_i}(d's input) over its terms (i, pt), i indexing galois_elts; one sum per set of special primes
    // among the group's keys (keys made for different levels: KeyGenerator::galois_key), usually one. The same bits
    // as inner_product_lazy of each g_i and multiply_plain_sum_lazy of each group (Backend::inner_product_sums:
    // on the CPU the products never go to memory).
    // @throws ParameterError for no group, an empty group, a term index out of range or a null plaintext, a bad
    //     decomposition or galois_elt (as inner_product_lazy), plaintexts not encoded with encode_extended at the
    //     input's level or of different scales, a key under another secret key, or a bad exec
    // @throws MissingKeyError if the evaluation keys have no key for a galois_elt a group uses
    // @throws LevelError if d's ciphertext is above the levels a key serves
    // @throws ScaleError if the products' scale no longer fits the modulus
    std::vector<std::vector<LazyCiphertext>> inner_product_sums_lazy(
        const Decomposition& d, const std::vector<std::uint64_t>& galois_elts,
        const std::vector<std::vector<std::pair<std::size_t, const Plaintext*>>>& groups, Exec exec = {}) const;
    // c0 + round(b / P), round(a / P) over Q_l.
    // @throws ParameterError for a lazy value of another context or a bad exec
    Ciphertext mod_down(const LazyCiphertext& x, Exec exec = {}) const;
    // The same, consuming x.
    // @throws ParameterError for a lazy value of another context or a bad exec
    Ciphertext mod_down(LazyCiphertext&& x, Exec exec = {}) const;
    // round((x + P * addend) / (P * q_l)): ModDown, the addition of a ciphertext over Q_l (may be null) and a rescale
    // in one base conversion, as multiply does for relinearisation.
    // @throws ParameterError for a lazy value of another context, a bad addend (or one that is not a size-2
    //     ciphertext at x's level, key and scale), or a bad exec
    // @throws LevelError if x is at level 0
    Ciphertext mod_down_rescale(LazyCiphertext&& x, const Ciphertext* addend = nullptr, Exec exec = {}) const;
    // psi_g(a) for every g, sharing one decomposition (list form); g = 1 gives a copy of a. Every key is checked
    // before any work.
    // @throws ParameterError for a bad operand or exec, an even g or g >= 2n, a size-3 operand (when some g is not
    //     1), or a key under another secret key
    // @throws MissingKeyError if the evaluation keys have no key for some g other than 1
    // @throws LevelError if a is above the levels some g's key serves
    std::vector<Ciphertext> apply_galois_hoisted(const Ciphertext& a, const std::vector<std::uint64_t>& galois_elts,
                                                 Exec exec = {}) const;
    // Rotations by each step (then the conjugate when `conjugate`), sharing one decomposition.
    // @throws ParameterError for a bad operand or exec, a size-3 operand (when something rotates), or a key under
    //     another secret key
    // @throws MissingKeyError if the evaluation keys have no key for a step (or for conjugation)
    // @throws LevelError if a is above the levels one of those keys serves
    std::vector<Ciphertext> rotate_hoisted(const Ciphertext& a, const std::vector<std::int64_t>& steps,
                                           bool conjugate = false, Exec exec = {}) const;
    // sum_g psi_g(a): one decomposition, the sum taken in the Q_l * P basis, one ModDown (sum form).
    // @throws ParameterError for a bad operand or exec, no element, an even g, g >= 2n or g = 1, a size-3 operand, or
    //     a key under another secret key
    // @throws MissingKeyError if the evaluation keys have no key for some g (checked before any work)
    // @throws LevelError if a is above the levels some g's key serves
    Ciphertext apply_galois_sum_hoisted(const Ciphertext& a, const std::vector<std::uint64_t>& galois_elts,
                                        Exec exec = {}) const;
    // The sum of the rotations by `steps`, psi_g(a) for `galois_elts` and the conjugate when `conjugate` (the same sum
    // form; Python's ev.rotate_sum_hoisted).
    // @throws ParameterError as apply_galois_sum_hoisted, so also for nothing to sum or a step of 0 mod slots
    //     (element 1)
    // @throws MissingKeyError if the evaluation keys have no key for a step, element or the conjugation
    // @throws LevelError if a is above the levels one of those keys serves
    Ciphertext rotate_sum_hoisted(const Ciphertext& a, const std::vector<std::int64_t>& steps,
                                  std::vector<std::uint64_t> galois_elts = {}, bool conjugate = false,
                                  Exec exec = {}) const;
    // Trace-type function over the doubling steps kappa_0..kappa_{M-1}: sum over all subsets S of
    // psi_{prod S}(a). h = M is repeated doubling (a <- a + psi_kappa_i(a), one key switch per step); h < M
    // unrolls it (Inoue 2022 Alg. 3.2.2) into h hoisted sums over groups of steps. h = 0: the cheapest h whose
    // keys are all present, by the measured cost model (keyswitch_costs). No automorphism: a itself.
    // @throws ParameterError for a bad operand or exec, an automorphism that is even, >= 2n or 1, h outside 0..M, a
    //     size-3 operand, a key under another secret key, or (h given) dependent steps or a group of 24 or more
    // @throws MissingKeyError if no h (or the h given) has all its keys; with h = 0 also for dependent steps, whose
    //     every h is refused
    // @throws LevelError if a is above the levels a key it uses serves
    Ciphertext trace(const Ciphertext& a, const std::vector<std::uint64_t>& automorphisms, int h = 0,
                     Exec exec = {}) const;
    // Slot i of the result is sum_{j < count} a[(i + j) mod slots]; count a power of two (0: all slots).
    // @throws ParameterError for a count that is not a power of two up to slots(), and as trace (a bad operand or
    //     exec, h outside 0..log2(count), a size-3 operand, a key under another secret key)
    // @throws MissingKeyError if no h (or the h given) has all its keys
    // @throws LevelError if a is above the levels a key it uses serves
    Ciphertext sum_slots(const Ciphertext& a, std::size_t count = 0, int h = 0, Exec exec = {}) const;
    // The h that trace() with h = 0 picks at this level (0 if no h has all its keys, or no automorphism).
    // @throws LevelError if there are automorphisms and `level` is outside 0..max_level (keyswitch_costs)
    // @throws ParameterError for a bad exec
    int choose_trace_h(const std::vector<std::uint64_t>& automorphisms, int level, Exec exec = {}) const;
    // Measured costs of the key-switching steps at a level (cached per context, level and thread count).
    // @throws LevelError if `level` is outside 0..max_level
    // @throws ParameterError for a bad exec
    KeySwitchCosts keyswitch_costs(int level, Exec exec = {}) const;
    // The costs keyswitch_costs measured for this context at (level, threads), if it has (every evaluator of the
    // context shares them; they are dropped with the context).
    std::optional<KeySwitchCosts> kept_keyswitch_costs(int level, int threads) const;

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
    // A ciphertext stamped like a (scale, keys, seed) with a's parts from `first` on copied by the backend (across
    // its threads; their first num_q q-limbs, all by default) and the ones before left empty, for the caller to write.
    Ciphertext copied(const Ciphertext& a, std::size_t first, Exec exec, std::size_t num_q = rns::Backend::npos) const;
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
    // decompose()'s digits of a, counted as one decomposition (its checks and errors), with a left where it is.
    std::vector<rns::RnsPoly> mod_up_digits(const Ciphertext& a, Exec exec) const;
    // tensor() with `op` naming the caller in its errors; exec already resolved.
    Ciphertext tensor_product(const Ciphertext& a, const Ciphertext& b, const char* op, Exec exec) const;
    // The Galois key of galois_elt for an operand under key_id at `level` (detail::galois_keys' errors), and the
    // relinearisation key, as the backend reads them (a compact key's a-parts expanded).
    std::shared_ptr<const rns::GadgetKey> galois_key(std::uint64_t galois_elt, std::uint64_t key_id, int level) const;
    std::shared_ptr<const rns::GadgetKey> relin_key() const;
    // psi_g(x.c0 + ModDown(x.b) + add_b), psi_g(ModDown(x.a) + add_a) with like's metadata, g = galois_elt.
    Ciphertext finish(const Ciphertext& like, const rns::LazyPolys& x, const rns::RnsPoly* add_b,
                      const rns::RnsPoly* add_a, std::uint64_t galois_elt, Exec exec) const;
    // finish(like, key_switch(d, key), add_b, add_a, galois_elt) in one call (KeySwitcher::key_switch_mod_down).
    Ciphertext switch_finish(const Ciphertext& like, const rns::RnsPoly& d, const rns::GadgetKey& key,
                             const rns::RnsPoly* add_b, const rns::RnsPoly* add_a, std::uint64_t galois_elt,
                             Exec exec) const;
    void check_scale_fits(double scale, int level, const char* op) const;
    // X^(n/2) at `level`, scale 1: made once per level and kept (shared by the copies of this evaluator), so that a
    // product by i costs no encoding and, on a device, no transfer from the host.
    const Plaintext& i_monomial(int level, Exec exec) const;
    double plain_scale(const Ciphertext& a) const;

    ContextPtr ctx_;
    std::shared_ptr<const EvaluationKeys> keys_;
    Encoder encoder_;
    struct Monomials {
        std::mutex mu;
        std::map<int, std::unique_ptr<const Plaintext>> at;  // by level; an entry, once made, never changes
    };
    std::shared_ptr<Monomials> i_monomials_ = std::make_shared<Monomials>();
};

}  // namespace kasoku::ckks
