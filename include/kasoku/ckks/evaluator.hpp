// Homomorphic operations. The evaluator holds evaluation keys only (never the secret key), is const,
// and any two calls may run at once on different threads. Each heavy call takes a thread count
// (0 = the context's default). Operands are never modified by out-of-place calls; in-place calls leave
// the operand unchanged when they throw.
#pragma once
#include <complex>
#include <memory>
#include <vector>

#include "kasoku/ckks/context.hpp"
#include "kasoku/ckks/encoder.hpp"
#include "kasoku/ckks/objects.hpp"
#include "kasoku/ckks/trace.hpp"

namespace kasoku::ckks {

// Key switching split into its typed steps (seed 000 §3.2): decompose (digit split + ModUp: the part that
// several key switches of one ciphertext share) -> inner_product_lazy (stays in the Q_l * P basis) -> mod_down.
struct Decomposition {
    Ciphertext input;                  // the ciphertext (c0 is used by the later steps)
    std::vector<rns::RnsPoly> digits;  // digit j: ModUp(digit j of c1), NTT form, num_q = l+1, num_p = k
};

// Key-switched ciphertext before its ModDown: c0 over Q_l, (b, a) over Q_l * P. Lazy values of the same input
// add up, so a sum of key switches needs one ModDown (lazy modulus-down).
struct LazyCiphertext {
    rns::RnsPoly c0, b, a;
    double scale = 0;
    std::uint64_t context_uid = 0, key_id = 0;
    int level() const { return static_cast<int>(c0.num_q()) - 1; }
};

class Evaluator {
public:
    // keys may be null: then only operations without key switching are available.
    Evaluator(ContextPtr ctx, std::shared_ptr<const EvaluationKeys> keys);

    const Context& context() const { return *ctx_; }
    const EvaluationKeys* keys() const { return keys_.get(); }

    Ciphertext add(const Ciphertext& a, const Ciphertext& b, int threads = 0) const;
    Ciphertext sub(const Ciphertext& a, const Ciphertext& b, int threads = 0) const;
    Ciphertext negate(const Ciphertext& a, int threads = 0) const;
    // Plaintext operands: values are encoded at the ciphertext's level (zero padded to slots()).
    Ciphertext add_plain(const Ciphertext& a, const std::vector<std::complex<double>>& values, int threads = 0) const;
    Ciphertext add_scalar(const Ciphertext& a, std::complex<double> c, int threads = 0) const;
    // Multiplies by values encoded with the scale that makes the rescaled result land exactly on the canonical scale
    // of the next level (Context::scale_at), whatever the operand's scale.
    Ciphertext multiply_plain(const Ciphertext& a, const std::vector<std::complex<double>>& values, bool rescale = true,
                              int threads = 0) const;
    Ciphertext multiply_scalar(const Ciphertext& a, std::complex<double> c, bool rescale = true, int threads = 0) const;
    // Tensor, relinearise, rescale (ModDown and rescale fused). rescale=false leaves a degree-1 ciphertext at scale sa*sb.
    Ciphertext multiply(const Ciphertext& a, const Ciphertext& b, bool rescale = true, int threads = 0) const;
    Ciphertext square(const Ciphertext& a, bool rescale = true, int threads = 0) const { return multiply(a, a, rescale, threads); }
    // The tensor product alone: a size-3 ciphertext (c0, c1, c2) at scale sa*sb. Sums of tensor products need one
    // relinearize (and one rescale) in all.
    Ciphertext tensor(const Ciphertext& a, const Ciphertext& b, int threads = 0) const;
    // acc += a * pt (acc empty: acc = a * pt); pt is encoded at a's level (by Encoder::encode or encode_extended),
    // acc.scale = a.scale * pt.scale. No rescale: a sum of plaintext products is rescaled once.
    void multiply_plain_accumulate(const Ciphertext& a, const Plaintext& pt, Ciphertext& acc, int threads = 0) const;
    Ciphertext relinearize(const Ciphertext& a, int threads = 0) const;
    Ciphertext rescale(const Ciphertext& a, int threads = 0) const;
    Ciphertext drop_level(const Ciphertext& a, int level, int threads = 0) const;
    // Left rotation: slot i of the result is slot (i + step) mod slots of a.
    Ciphertext rotate(const Ciphertext& a, std::int64_t step, int threads = 0) const;
    Ciphertext conjugate(const Ciphertext& a, int threads = 0) const;
    // The automorphism X -> X^galois_elt followed by a key switch back to s.
    Ciphertext apply_galois(const Ciphertext& a, std::uint64_t galois_elt, int threads = 0) const;

    // In-place forms.
    void add_inplace(Ciphertext& a, const Ciphertext& b, int threads = 0) const { a = add(a, b, threads); }
    void sub_inplace(Ciphertext& a, const Ciphertext& b, int threads = 0) const { a = sub(a, b, threads); }
    void multiply_inplace(Ciphertext& a, const Ciphertext& b, int threads = 0) const { a = multiply(a, b, true, threads); }
    void rescale_inplace(Ciphertext& a, int threads = 0) const { a = rescale(a, threads); }
    void rotate_inplace(Ciphertext& a, std::int64_t step, int threads = 0) const { a = rotate(a, step, threads); }

    // --- Split key switching and hoisting (seed 000 Alg. 3.2.1) ---
    Decomposition decompose(const Ciphertext& a, int threads = 0) const;
    // psi_g(a) before its ModDown: inner products with the Galois key of g, then the automorphism.
    LazyCiphertext inner_product_lazy(const Decomposition& d, std::uint64_t galois_elt, int threads = 0) const;
    void add_lazy_inplace(LazyCiphertext& acc, const LazyCiphertext& x, int threads = 0) const;
    // sum_i xs[i] * pts[i] in the Q_l * P basis; pts from Encoder::encode_extended at the level of xs. The masks and
    // diagonals of a linear transform multiply the baby-step rotations here, before their one ModDown, which then also
    // divides the rounding of the products by P. Limb by limb, so that each accumulator limb stays in cache.
    LazyCiphertext multiply_plain_sum_lazy(const std::vector<const LazyCiphertext*>& xs,
                                           const std::vector<const Plaintext*>& pts, int threads = 0) const;
    Ciphertext mod_down(const LazyCiphertext& x, int threads = 0) const;
    Ciphertext mod_down(LazyCiphertext&& x, int threads = 0) const;  // reuses x's buffers
    // round((x + P * addend) / (P * q_l)): ModDown, the addition of a ciphertext over Q_l (may be null) and a rescale
    // in one base conversion, as multiply does for relinearisation.
    Ciphertext mod_down_rescale(LazyCiphertext&& x, const Ciphertext* addend = nullptr, int threads = 0) const;
    // psi_g(a) for every g, sharing one decomposition (list form).
    std::vector<Ciphertext> apply_galois_hoisted(const Ciphertext& a, const std::vector<std::uint64_t>& galois_elts,
                                                 int threads = 0) const;
    // Rotations by each step (then the conjugate when `conjugate`), sharing one decomposition.
    std::vector<Ciphertext> rotate_hoisted(const Ciphertext& a, const std::vector<std::int64_t>& steps, bool conjugate = false,
                                           int threads = 0) const;
    // sum_g psi_g(a): one decomposition, the sum taken in the Q_l * P basis, one ModDown (sum form).
    Ciphertext apply_galois_sum_hoisted(const Ciphertext& a, const std::vector<std::uint64_t>& galois_elts,
                                        int threads = 0) const;
    // Trace-type function over the doubling steps kappa_0..kappa_{M-1}: sum over all subsets S of
    // psi_{prod S}(a). h = M is repeated doubling (a <- a + psi_kappa_i(a), one key switch per step); h < M
    // unrolls it (seed 000 Alg. 3.2.2) into h hoisted sums over groups of steps. h = 0: the cheapest h whose
    // keys are all present, by the measured cost model (keyswitch_costs).
    Ciphertext trace(const Ciphertext& a, const std::vector<std::uint64_t>& automorphisms, int h = 0, int threads = 0) const;
    // Slot i of the result is sum_{j < count} a[(i + j) mod slots]; count a power of two (0: all slots).
    Ciphertext sum_slots(const Ciphertext& a, std::size_t count = 0, int h = 0, int threads = 0) const;
    // The h that trace() with h = 0 picks at this level (0 if no h has all its keys).
    int choose_trace_h(const std::vector<std::uint64_t>& automorphisms, int level, int threads = 0) const;
    // Measured costs of the key-switching steps at a level (cached per context, level and thread count).
    KeySwitchCosts keyswitch_costs(int level, int threads = 0) const;

    // Key switching of d (NTT form over Q_l) with `key`, result left in the Q_l * P basis (before ModDown).
    struct Lazy {
        rns::RnsPoly c0, c1;
    };
    Lazy key_switch_lazy(const rns::RnsPoly& d, const SwitchKey& key, int threads) const;

private:
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
    Aligned align(const Ciphertext& a, const Ciphertext& b, int threads) const;
    // tensor() with `op` naming the caller in its errors; threads already resolved.
    Ciphertext tensor_product(const Ciphertext& a, const Ciphertext& b, const char* op, int threads) const;
    const SwitchKey& galois_key(std::uint64_t galois_elt, const char* what) const;
    // b, a = sum_e psi_{g_e}(<digits, key_e>) over the limbs of Q_l * P; c0 = sum_e psi_{g_e}(input c0).
    // permute = false: one key, b and a get the inner products themselves (no automorphism), c0 is untouched.
    void hoisted_sum(const Decomposition& d, const std::vector<std::uint64_t>& elts,
                     const std::vector<const SwitchKey*>& keys, LazyCiphertext& out, int threads,
                     bool permute = true) const;
    LazyCiphertext lazy_like(const Decomposition& d) const;
    LazyCiphertext lazy_like_level(std::size_t num_q) const;  // buffers only (c0 over Q_l; b, a over Q_l * P)
    // psi_g(a) from the key switch (b, ka) of a's c1 over Q_l * P (key s -> s(X^{g^-1})): ModDown both, add c0,
    // then the automorphism on the two polynomials over Q_l.
    Ciphertext finish_galois(const Ciphertext& a, std::uint64_t g, const rns::RnsPoly& b, const rns::RnsPoly& ka, int threads) const;
    void check_scale_fits(double scale, int level, const char* op) const;
    double plain_scale(const Ciphertext& a) const;

    ContextPtr ctx_;
    std::shared_ptr<const EvaluationKeys> keys_;
    Encoder encoder_;
};

}  // namespace kasoku::ckks
