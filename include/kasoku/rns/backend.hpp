// The polynomial backend: the one seam between the CKKS scheme (ckks, algo) and the hardware (docs/ARCHITECTURE.md).
//
// A backend owns the memory of its polynomials (PolyMemory) and runs every operation on them at fused granularity:
// element-wise operations and FMA, NTT/INTT, automorphisms, rescaling and the ModDown family, ModUp and the
// key-switching inner products, plaintext sums, and the transfers from and to the host. ckks and algo are written
// once on top of it; the CPU backend runs each operation as cache-blocked limb-by-limb pipelines on a team of
// OpenMP threads, a device backend would launch kernels over all limbs on a stream. Every operation takes an Exec
// (support/exec.hpp) where a thread count used to go.
//
// The public methods check the shapes of their operands (a mismatch is a bug of the caller: InternalError) and
// shape their outputs; the protected do_* methods are what a backend implements. Besides InternalError they throw
// ParameterError for a Galois element that is even or >= 2n (automorphism and the ModDown and inner-product family),
// std::bad_alloc (or DeviceError on a device) when memory runs out, and whatever an upload or download callback
// throws. A device backend throws DeviceError from any method when the device fails. Each method lists its own in
// @throws lines, where "a foreign operand" is an empty polynomial, one of another ring degree, or one in another
// backend's memory. Key switching is composed from the primitives below by rns::KeySwitcher (keyswitch.hpp), the form
// in which ckks uses it.
#pragma once
#include <array>
#include <complex>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "kasoku/rns/rns_context.hpp"
#include "kasoku/rns/rns_poly.hpp"
#include "kasoku/rns/sampling.hpp"
#include "kasoku/support/exec.hpp"

namespace kasoku::rns {

// A key-switching key (hybrid key switching, Han-Ki): dnum pairs (b_j, a_j) over Q_L * P in NTT form with
// b_j + a_j s = e_j + P [Q/Q_j]([Q/Q_j]^-1 mod Q_j) s': it turns what decrypts under s' into what decrypts under s.
// A key may also be over Q_m * P_k (m < L, the first k special primes), with the digits of Q_m: it serves levels up to
// m (Backend::key_switch).
struct GadgetKey {
    std::vector<RnsPoly> b, a;
    // Set when the b-parts are another key's (a compact key's b-parts with its drawer of a-parts below); backends
    // read b_parts().
    const std::vector<RnsPoly>* b_of = nullptr;
    // A compact key holds no a-parts: a_limb(j, prime, out) writes digit j's a-part modulo the prime of index `prime`
    // (RnsContext::prime; n words, NTT form). Backends that draw_key_limbs() call it where their inner product reads
    // the limb, so only the limbs of the operand's level are drawn and none is held; the others are given the whole
    // a-parts, drawn before the call (Backend::key_switch, inner_product).
    std::function<void(std::size_t digit, std::size_t prime, std::uint64_t* out)> a_limb;
    const std::vector<RnsPoly>& b_parts() const { return b_of ? *b_of : b; }
    bool compact() const { return a.empty() && a_limb != nullptr; }
    // The key's limb of the prime of limb t of an operand over Q_l * P (l + 1 = nq): keys over Q_m * P_k hold their
    // special limbs after their own m + 1 q-limbs.
    std::size_t limb_of(std::size_t t, std::size_t nq) const {
        return t < nq ? t : b_parts().front().num_q() + (t - nq);
    }
};

// One inner product of a hoisted key switch: the key, and the automorphism X -> X^g applied to its product (1: none).
struct KeyTerm {
    const GadgetKey* key = nullptr;
    std::uint64_t galois_elt = 1;
};

// A term of Backend::inner_product_sums: the plaintext `plain` times the inner product of key term `term`.
struct ProductTerm {
    std::size_t term = 0;
    const RnsPoly* plain = nullptr;
};

// Host callbacks of upload and download, called on the calling thread (an exception thrown by one propagates).
// LimbWriter: limb by limb in order, with the n words of one limb to write (on an exception the polynomial is left
// partly written). LimbReader: once, with host pointers to the limbs asked for, valid during the call.
using LimbWriter = std::function<void(std::size_t limb, std::uint64_t* dst)>;
using LimbReader = std::function<void(const std::uint64_t* const* limbs)>;

class Backend {
public:
    virtual ~Backend() = default;
    // Whether do_key_switch and do_inner_product draw a compact key's a-limbs themselves (GadgetKey::a_limb).
    virtual bool draws_key_limbs() const { return false; }
    Backend(const Backend&) = delete;
    Backend& operator=(const Backend&) = delete;

    static constexpr std::size_t npos = static_cast<std::size_t>(-1);

    virtual const char* name() const = 0;
    // Runs fn(i, e) for the `count` independent operations of a batch (Takao et al.), each with the execution handle e
    // to compute with. The default runs them in order with exec (a device queues them on its stream); the CPU backend
    // spreads a batch of at least its team's size over the team, one thread each. fn must not throw.
    virtual void for_each(std::size_t count, Exec exec, const std::function<void(std::size_t, Exec)>& fn) const {
        for (std::size_t i = 0; i < count; ++i) fn(i, exec);
    }
    const RnsContext& ring() const { return *ring_; }
    const std::shared_ptr<const RnsContext>& ring_ptr() const { return ring_; }
    const std::shared_ptr<const PolyMemory>& memory() const { return memory_; }

    // ---- storage and transfers
    // A polynomial in this backend's memory with num_q q-limbs and num_p special limbs; words uninitialised.
    RnsPoly poly(std::size_t num_q, std::size_t num_p, bool ntt_form) const;
    // Host -> backend: `fill` writes each limb of `out` (shape set by the caller). On the CPU it writes the
    // polynomial's own memory (no copy); a device backend stages and copies.
    // @throws InternalError for a foreign out
    // @throws what `fill` throws
    void upload(RnsPoly& out, const LimbWriter& fill, Exec exec = {}) const;
    // Backend -> host: `read` sees the first `limbs` limbs of `a` (all by default). On the CPU these are the
    // polynomial's own memory (no copy); a device backend copies them to the host first.
    // @throws InternalError for a foreign a, or more limbs asked for than a has
    // @throws what `read` throws
    void download(const RnsPoly& a, const LimbReader& read, Exec exec = {}, std::size_t limbs = npos) const;
    // out (its shape and form set by the caller) = the residues of the signed coefficients (n of them, |c| < 2^127
    // for the 128-bit form, |c| < every prime for the 64-bit one), transformed when out is in NTT form.
    // @throws InternalError for a foreign out
    void from_signed(const std::int64_t* coeffs, RnsPoly& out, Exec exec) const;
    // @throws InternalError for a foreign out
    void from_signed(const __int128* coeffs, RnsPoly& out, Exec exec) const;
    // out (its shape and form set by the caller) = from_signed of the small coefficients the draw stands for
    // (sampling.hpp), expanded where out lives: on a device, from the seed alone (no copy, no wait).
    // @throws InternalError for a foreign out
    // @throws Error if the host's ChaCha20 keystream fails
    void sample(const SmallDraw& draw, RnsPoly& out, Exec exec) const;
    // out (its shape and form set by the caller) = from_signed(centered_q0(a)): a's residues mod q_0 (a in NTT form),
    // centered in (-q_0/2, q_0/2], over out's primes. ModRaise; on a device the coefficients stay there.
    // @throws InternalError for a foreign a or out, or an a without limbs
    void raise_q0(const RnsPoly& a, RnsPoly& out, Exec exec) const;

    // out = a's first num_q q-limbs (all by default) and its special limbs, in a's form: a copy the backend may spread
    // over its threads (RnsPoly's copy constructor copies on the calling thread, the whole polynomial).
    // @throws InternalError for a foreign a, num_q above a's, or an out that is a
    void copy(const RnsPoly& a, RnsPoly& out, Exec exec, std::size_t num_q = npos) const;

    // ---- element-wise (a and b of one shape; out takes a's shape and may be a or b)
    // @throws InternalError for a foreign a, or a b of another shape
    void add(const RnsPoly& a, const RnsPoly& b, RnsPoly& out, Exec exec) const;
    // @throws InternalError for a foreign a, or a b of another shape
    void sub(const RnsPoly& a, const RnsPoly& b, RnsPoly& out, Exec exec) const;
    // @throws InternalError for a foreign a
    void negate(const RnsPoly& a, RnsPoly& out, Exec exec) const;
    // NTT form.
    // @throws InternalError for a foreign a, a b of another shape, or operands in coefficient form
    void mul(const RnsPoly& a, const RnsPoly& b, RnsPoly& out, Exec exec) const;
    // out = a * b + c (NTT form), one reduction (Inoue 2022 Alg. 4.1.1).
    // @throws InternalError for a foreign a, a b or c of another shape, or operands in coefficient form
    void fma(const RnsPoly& a, const RnsPoly& b, const RnsPoly& c, RnsPoly& out, Exec exec) const;
    // The tensor product of two size-2 ciphertexts (NTT form, one shape): d0 = a0 b0, d1 = a0 b1 + a1 b0, d2 = a1 b1,
    // in one pass over the operands (the outputs take a0's shape and must not be operands).
    // @throws InternalError for a foreign a0, operands of different shapes or in coefficient form, an output that is
    //     an operand, or outputs that are not three polynomials
    void tensor(const RnsPoly& a0, const RnsPoly& a1, const RnsPoly& b0, const RnsPoly& b1, RnsPoly& d0, RnsPoly& d1,
                RnsPoly& d2, Exec exec) const;
    // out = a * c limb-wise, c given by its residues per prime (indexed like the prime list [q..., p...]).
    // @throws InternalError for a foreign a, or fewer residues than primes
    void mul_constant(const RnsPoly& a, const std::vector<u64>& residues, RnsPoly& out, Exec exec) const;
    // out = a + c limb-wise (a constant polynomial when a is in NTT form).
    // @throws InternalError for a foreign a, or fewer residues than primes
    void add_constant(const RnsPoly& a, const std::vector<u64>& residues, RnsPoly& out, Exec exec) const;
    // out = sum_i x[i] * c[i] over the first num_q q-limbs (num_p = 0; NTT form as the x[i]), c[i] given by its
    // residues
    // per prime (each below its prime): the leading limbs of each x[i] are read in place, so terms at several levels
    // are summed at the lowest without copies, in one pass over each limb of out (base conversion's dot product). Each
    // x[i] needs num_q q-limbs or more; out must not be one of them.
    // @throws InternalError for no terms, another number of constants, num_q = 0, a foreign term, a term with fewer
    //     limbs or in another form, out among the terms, or fewer residues than primes
    void linear_combination(const std::vector<const RnsPoly*>& x, const std::vector<std::vector<u64>>& c,
                            std::size_t num_q, RnsPoly& out, Exec exec) const;
    // Plaintext sums: out[k] = sum_i x[i][k] * y[i] (accumulate: out[k] += ...) for every component k (NTT form).
    // Each y[i] has the q-limbs of every x[i][k] and at least its special limbs; out[k] takes x[0][k]'s shape.
    // Limb by limb, so that each limb of out[k] stays in cache while the terms are summed. A y[i] may be a subring
    // polynomial (to_subring): fewer words per limb, each standing for a block of equal words.
    // @throws InternalError for no terms, another number of plaintexts or outputs per term, a foreign term or
    //     plaintext, terms of different shapes, operands in coefficient form, a plaintext that does not cover its
    //     term's limbs, or (accumulate) a foreign output or one of another shape
    void sum_of_products(const std::vector<std::vector<const RnsPoly*>>& x, const std::vector<const RnsPoly*>& y,
                         const std::vector<RnsPoly*>& out, bool accumulate, Exec exec) const;
    // out = c[0] + x (c[1] + x (c[2] + ...)) on the limbs of out (NTT form; its num_q, set by the caller, at most every
    // operand's, num_p = 0): the phase c0 + c1 s + c2 s^2 of decryption, on the limbs that decoding needs.
    // @throws InternalError for no c, a foreign operand or out, an operand in coefficient form, or an out with special
    //     limbs or more q-limbs than an operand
    void horner(const std::vector<const RnsPoly*>& c, const RnsPoly& x, RnsPoly& out, Exec exec) const;

    // A polynomial of the subring Z[X^f] (f = n / n_sub, a power of two) kept in n_sub words per limb: a (NTT form)
    // must be m(X^f) for some m, whose NTT words then repeat in blocks of f (bit-reversed order: word w evaluates at
    // psi^(2 rev(w) + 1), and (psi^f)^(2 rev(w) + 1) depends on w / f only); out gets a's limbs with word j of each
    // limb = word j f of a's, and serves as a plaintext of sum_of_products. A message whose slots repeat with period
    // n_sub / 2 encodes into this subring (the sparse packing of bootstrapping, and the diagonals of its transforms):
    // it then takes n_sub / n of the memory. n_sub must be a power of two in 1..n.
    // @throws InternalError for a foreign a, one in coefficient form, an n_sub that is not such a power of two, or an
    //     out that is a
    void to_subring(const RnsPoly& a, std::size_t n_sub, RnsPoly& out, Exec exec) const;
    // The subring polynomial (out: n_sub = out.n() words per limb, NTT form, shape set by the caller) of the signed
    // coefficients coeffs[0..n_sub) placed at X^(j n / n_sub) (|c| < 2^127): to_subring(from_signed(...)) without a
    // transform of n points (a periodic message's encoding).
    // @throws InternalError for an empty out, one in another backend's memory or coefficient form, or one whose words
    //     per limb are not a power of two up to n
    void from_signed_subring(const __int128* coeffs, RnsPoly& out, Exec exec) const;

    // ---- slots (the canonical embedding: RnsContext::slot_fft)
    // out (its shape and form set by the caller: n words per limb, or 2p for from_signed_subring's subring polynomial)
    // = the encoding of the p values (p a power of two up to n/2) at `scale`: v = SlotFft::inverse of them, then
    // coefficient stride i = round(scale Re v_i) and stride (i + p) = round(scale Im v_i) (stride = out.n() / 2p, the
    // others 0; rounded half to even), transformed when out is in NTT form. The caller has checked that every
    // coefficient is below 2^126 in magnitude and below half the modulus of out's q-limbs (ckks::Encoder does). On a
    // device the values go up once and the rest runs there.
    // @throws InternalError for a foreign out, a p that is not such a power of two, or an out of another size
    void encode_slots(const std::complex<double>* values, std::size_t p, double scale, RnsPoly& out, Exec exec) const;
    // The n/2 slots of the centered integers m (|m| < q_0...q_{t-1} / 2) that the first t q-limbs of a (coefficient
    // form) determine, over scale: SlotFft::forward of (m_j + i m_{j + n/2}) / scale. On a device it runs there and
    // the slots come down once.
    // @throws InternalError for a foreign a, one in NTT form, or t outside 1..a.num_q()
    std::vector<std::complex<double>> decode_slots(const RnsPoly& a, std::size_t t, double scale, Exec exec) const;

    // ---- transforms (in place; no-ops when already in the asked form)
    // @throws InternalError for a foreign a
    void to_ntt(RnsPoly& a, Exec exec) const;
    // @throws InternalError for a foreign a
    void from_ntt(RnsPoly& a, Exec exec) const;
    // out = psi_g(a): X -> X^g (g odd, below 2n) as a permutation in NTT form; out must not be a.
    // @throws InternalError for a foreign a, one in coefficient form, or an out that is a
    // @throws ParameterError for an even galois_elt or one >= 2n
    void automorphism(const RnsPoly& a, u64 galois_elt, RnsPoly& out, Exec exec) const;

    // ---- scaling (NTT form)
    // a over Q_l (l >= 1, num_p = 0) -> round(a / q_l) over Q_{l-1}.
    // @throws InternalError for a foreign a, or one that is not in NTT form over Q_l with l >= 1
    void rescale(RnsPoly& a, Exec exec) const;
    // rescale of each of `polys` (the parts of a ciphertext), in one call so that a backend can spread them over its
    // threads together: the same results as one rescale each.
    // @throws InternalError as rescale, for any of them
    void rescale(std::vector<RnsPoly>& polys, Exec exec) const;
    // a over Q_l * p_0 (num_p = 1) -> round((a + e) / p_0) over Q_l, e the small polynomial `addend` draws
    // (sampling.hpp; none for null). Encryption ends with it, so that fresh noise is divided by p_0.
    // @throws InternalError for a foreign a, or one that is not in NTT form over Q_l * p_0
    // @throws Error if the host's ChaCha20 keystream fails
    void divide_round_by_p0(RnsPoly& a, const SmallDraw* addend, Exec exec) const;
    // ModDown of a key-switched pair: out_b = psi_g(round(b / P) + add_b), out_a = psi_g(round(a / P) + add_a) over
    // Q_l, for b and a over Q_l * P (all special primes, or the first k of them: P is then their product, as after a
    // key_switch with a key over such a prefix); the addends over Q_l or null, g = 1: no automorphism. An exact,
    // centered conversion; the outputs may be the inputs. Both polynomials in one call, so that a device runs the pair
    // in one sequence of launches.
    // @throws InternalError for foreign operands, b and a not both in NTT form over one Q_l * P_k, addends that are
    //     foreign or not in NTT form over Q_l, or outputs that are one polynomial
    // @throws ParameterError for a galois_elt other than 1 that is even or >= 2n
    void mod_down(const RnsPoly& b, const RnsPoly& a, const RnsPoly* add_b, const RnsPoly* add_a, u64 galois_elt,
                  RnsPoly& out_b, RnsPoly& out_a, Exec exec) const;
    // ModDown, the additions and a rescale in one base conversion per polynomial, for the pair: b = round((b + P add_b)
    // / (P q_l)), a likewise, over Q_{l-1}, for b and a over Q_l * P (l >= 1), the addends over Q_l or null. Over a
    // prefix P_k of the special primes (a key made for low levels): mod_down, then the rescale (the same values).
    // @throws InternalError for foreign operands, b and a not both in NTT form over one Q_l * P_k (l >= 1), addends
    //     that are foreign or not in NTT form over Q_l, or b and a one polynomial
    void mod_down_rescale(RnsPoly& b, RnsPoly& a, const RnsPoly* add_b, const RnsPoly* add_a, Exec exec) const;
    // x_i += d_i * P mod q_i on the q-limbs i in [first, first + count) (count = npos: to the last one); d and x
    // have the same number of q-limbs and form. Lifts d into the Q_l * P basis as d * P.
    // @throws InternalError for a foreign d or x, d and x of other q-limbs or forms, limbs past d's, or a ring without
    //     special primes
    void add_times_p(const RnsPoly& d, RnsPoly& x, Exec exec, std::size_t first = 0, std::size_t count = npos) const;

    // ---- key-switching primitives (composed by KeySwitcher; Inoue 2022 Alg. 2.4.1-2.4.4 and 3.2.1)
    // ModUp of every digit of d (NTT form over Q_l, num_p = 0): digit j extended to Q_l * P, NTT form.
    // @throws InternalError for a foreign d, one that is not in NTT form over Q_l, or a ring without special primes
    std::vector<RnsPoly> mod_up(const RnsPoly& d, Exec exec) const;
    // (b, a) = <ModUp(d), key> over Q_l * P: ModUp and the inner product fused limb by limb (one key switch). The key
    // may be over Q_m * P_k, m >= l, P_k the first k special primes (a key made for low levels, and with a smaller
    // modulus where security asks for one: bootstrapping's switch to a sparse secret, over q_0 * p_0); b and a are
    // then over Q_l * P_k.
    // @throws InternalError for a d as mod_up refuses it, or a key that is not dnum(m) NTT-form digits of one shape
    //     over Q_m * P_k with m >= l (its b- and a-parts, or a compact key's b-parts)
    void key_switch(const RnsPoly& d, const GadgetKey& key, RnsPoly& b, RnsPoly& a, Exec exec) const;
    // key_switch(d, key) followed by mod_down(.., add_b, add_a, galois_elt, out_b, out_a) or, with `rescale` (g = 1,
    // l >= 1), by mod_down_rescale(.., add_b, add_a): the same results, in one call, so that a backend can run the
    // inner
    // product and ModDown without the pair over Q_l * P in memory (the GPU backend does; the CPU backend runs the two
    // steps: its limb-by-limb form, which streamed every digit's sources and the key for each limb, measured 16-20 %
    // slower on a Zen 5, docs/PERFORMANCE.md).
    // @throws InternalError for a d or key as key_switch refuses them, a rescale with g != 1 or l = 0, outputs that
    //     are one polynomial, or addends that are foreign or not in NTT form over Q_l
    // @throws ParameterError for a galois_elt other than 1 that is even or >= 2n
    void key_switch_mod_down(const RnsPoly& d, const GadgetKey& key, const RnsPoly* add_b, const RnsPoly* add_a,
                             u64 galois_elt, bool rescale, RnsPoly& out_b, RnsPoly& out_a, Exec exec) const;
    // The sum form of hoisting in one call: inner_product(mod_up(d), terms, c0) followed by mod_down with the sum of
    // c0's images as addend, i.e. out_b = round(sum_e psi_{g_e}(<ModUp(d), key_e.b>) / P) + sum_e psi_{g_e}(c0), out_a
    // likewise without c0; the same results, and a backend may run it limb by limb without the digits or the pair over
    // Q_l * P in memory (the CPU backend does). The keys may be over a prefix P_k of the special primes, one k for all.
    // @throws InternalError for a d as mod_up refuses it, a foreign c0 or one not in NTT form over d's Q_l, no term,
    //     a null key or one as key_switch refuses it, keys over different P_k, or outputs that are one polynomial
    // @throws ParameterError for a galois_elt of a term, other than 1, that is even or >= 2n
    void key_switch_sum_mod_down(const RnsPoly& d, const std::vector<KeyTerm>& terms, const RnsPoly& c0, RnsPoly& out_b,
                                 RnsPoly& out_a, Exec exec) const;
    // b = sum_e psi_{g_e}(<digits, key_e.b>), a likewise, over Q_l * P_k (digits over Q_l * P, keys over Q_m * P_k,
    // m >= l, one k for all: the digits' first k special limbs are read); with c0 (over Q_l) also
    // c0_out = sum_e psi_{g_e}(c0). Each product limb is permuted and accumulated while it is in cache.
    // @throws InternalError for no digits or terms, another number of digits than their level has, foreign digits or
    //     ones not in NTT form over Q_l * P, a null key or one as key_switch refuses it, keys over different P_k, or a
    //     c0 that is foreign, not in NTT form over Q_l, or without its own c0_out
    // @throws ParameterError for a galois_elt of a term, other than 1, that is even or >= 2n
    void inner_product(const std::vector<RnsPoly>& digits, const std::vector<KeyTerm>& terms, RnsPoly& b, RnsPoly& a,
                       const RnsPoly* c0, RnsPoly* c0_out, Exec exec) const;
    // The hoisted baby steps of a linear transform and their plaintext sums in one call: for each group j,
    // out[j] = (c0, b, a) = sum over its terms (i, y) of y * (psi_{g_i}(c0), psi_{g_i}(<digits, key_i.b>),
    // psi_{g_i}(<digits, key_i.a>)), c0 over Q_l, b and a over Q_l * P_k (one k for all keys). The same bits as
    // inner_product of each term alone and sum_of_products of each group, but a backend may make each limb of the
    // products where the sums read it, so that they are never in memory (the CPU backend does: the products of a
    // BSGS transform's baby steps are most of its memory traffic). Plaintexts as sum_of_products takes them (a
    // subring polynomial stands for its repeated words).
    // @throws InternalError for digits, terms or c0 as inner_product refuses them (c0 is required), no group, an
    //     empty group, another number of outputs than groups, a term index out of range, a foreign plaintext or
    //     one not in NTT form over the digits' Q_l and at least P_k, or an output that is an input or another
    //     output
    // @throws ParameterError for a galois_elt of a term, other than 1, that is even or >= 2n
    void inner_product_sums(const std::vector<RnsPoly>& digits, const std::vector<KeyTerm>& terms, const RnsPoly& c0,
                            const std::vector<std::vector<ProductTerm>>& groups,
                            const std::vector<std::array<RnsPoly*, 3>>& out, Exec exec) const;

protected:
    Backend(std::shared_ptr<const RnsContext> ring, std::shared_ptr<const PolyMemory> memory);
    // A compact key with its whole a-parts drawn (its b-parts referenced), for backends that do not draw limbs.
    GadgetKey drawn(const GadgetKey& key) const;

    // What a backend implements. Operands are checked and outputs shaped (out.same_shape(a) for element-wise
    // operations, b and a over Q_l * P for key switching) before these are called; the numbers of digits and key
    // digits match the ring.
    virtual void do_upload(RnsPoly& out, const LimbWriter& fill, Exec exec) const = 0;
    virtual void do_download(const RnsPoly& a, const LimbReader& read, std::size_t limbs, Exec exec) const = 0;
    virtual void do_from_signed(const std::int64_t* coeffs, RnsPoly& out, Exec exec) const = 0;
    virtual void do_from_signed(const __int128* coeffs, RnsPoly& out, Exec exec) const = 0;
    // Default: draw_small on the host, then do_from_signed.
    virtual void do_sample(const SmallDraw& draw, RnsPoly& out, Exec exec) const;
    // Default: centered_q0 on the host, then from_signed.
    virtual void do_raise_q0(const RnsPoly& a, RnsPoly& out, Exec exec) const;
    // out shaped by copy(): its q-limbs from a's first ones, its special limbs from a's. The default copies through
    // the memory on the calling thread.
    virtual void do_copy(const RnsPoly& a, RnsPoly& out, Exec exec) const;
    virtual void do_add(const RnsPoly& a, const RnsPoly& b, RnsPoly& out, Exec exec) const = 0;
    virtual void do_sub(const RnsPoly& a, const RnsPoly& b, RnsPoly& out, Exec exec) const = 0;
    virtual void do_negate(const RnsPoly& a, RnsPoly& out, Exec exec) const = 0;
    virtual void do_mul(const RnsPoly& a, const RnsPoly& b, RnsPoly& out, Exec exec) const = 0;
    virtual void do_fma(const RnsPoly& a, const RnsPoly& b, const RnsPoly& c, RnsPoly& out, Exec exec) const = 0;
    virtual void do_tensor(const RnsPoly& a0, const RnsPoly& a1, const RnsPoly& b0, const RnsPoly& b1, RnsPoly& d0,
                           RnsPoly& d1, RnsPoly& d2, Exec exec) const = 0;
    virtual void do_mul_constant(const RnsPoly& a, const std::vector<u64>& residues, RnsPoly& out, Exec exec) const = 0;
    virtual void do_add_constant(const RnsPoly& a, const std::vector<u64>& residues, RnsPoly& out, Exec exec) const = 0;
    virtual void do_linear_combination(const std::vector<const RnsPoly*>& x, const std::vector<std::vector<u64>>& c,
                                       RnsPoly& out, Exec exec) const = 0;
    virtual void do_sum_of_products(const std::vector<std::vector<const RnsPoly*>>& x,
                                    const std::vector<const RnsPoly*>& y, const std::vector<RnsPoly*>& out,
                                    bool accumulate, Exec exec) const = 0;
    virtual void do_horner(const std::vector<const RnsPoly*>& c, const RnsPoly& x, RnsPoly& out, Exec exec) const = 0;
    virtual void do_to_subring(const RnsPoly& a, RnsPoly& out, Exec exec) const = 0;
    // Default: the coefficients spread over n, from_signed, to_subring.
    virtual void do_from_signed_subring(const __int128* coeffs, RnsPoly& out, Exec exec) const;
    // Defaults: on the host (SlotFft, then from_signed or from_signed_subring; download, then compose_centered).
    virtual void do_encode_slots(const std::complex<double>* values, std::size_t p, double scale, RnsPoly& out,
                                 Exec exec) const;
    virtual std::vector<std::complex<double>> do_decode_slots(const RnsPoly& a, std::size_t t, double scale,
                                                              Exec exec) const;
    virtual void do_to_ntt(RnsPoly& a, Exec exec) const = 0;
    virtual void do_from_ntt(RnsPoly& a, Exec exec) const = 0;
    virtual void do_automorphism(const RnsPoly& a, u64 galois_elt, RnsPoly& out, Exec exec) const = 0;
    virtual void do_rescale(RnsPoly& a, Exec exec) const = 0;
    // Default: do_rescale of each.
    virtual void do_rescale_all(std::vector<RnsPoly>& polys, Exec exec) const;
    virtual void do_divide_round_by_p0(RnsPoly& a, const SmallDraw* addend, Exec exec) const = 0;
    virtual void do_mod_down(const RnsPoly& b, const RnsPoly& a, const RnsPoly* add_b, const RnsPoly* add_a,
                             u64 galois_elt, RnsPoly& out_b, RnsPoly& out_a, Exec exec) const = 0;
    virtual void do_mod_down_rescale(RnsPoly& b, RnsPoly& a, const RnsPoly* add_b, const RnsPoly* add_a,
                                     Exec exec) const = 0;
    virtual void do_add_times_p(const RnsPoly& d, RnsPoly& x, std::size_t first, std::size_t count,
                                Exec exec) const = 0;
    virtual std::vector<RnsPoly> do_mod_up(const RnsPoly& d, Exec exec) const = 0;
    virtual void do_key_switch(const RnsPoly& d, const GadgetKey& key, RnsPoly& b, RnsPoly& a, Exec exec) const = 0;
    // Default: do_mod_up, do_inner_product, do_mod_down.
    virtual void do_key_switch_sum_mod_down(const RnsPoly& d, const std::vector<KeyTerm>& terms, const RnsPoly& c0,
                                            RnsPoly& out_b, RnsPoly& out_a, Exec exec) const;
    // Default: do_key_switch, then do_mod_down or (rescale) do_mod_down_rescale.
    virtual void do_key_switch_mod_down(const RnsPoly& d, const GadgetKey& key, const RnsPoly* add_b,
                                        const RnsPoly* add_a, u64 galois_elt, bool rescale, RnsPoly& out_b,
                                        RnsPoly& out_a, Exec exec) const;
    virtual void do_inner_product(const std::vector<RnsPoly>& digits, const std::vector<KeyTerm>& terms, RnsPoly& b,
                                  RnsPoly& a, const RnsPoly* c0, RnsPoly* c0_out, Exec exec) const = 0;
    // Default: do_inner_product of each term used, then do_sum_of_products of each group.
    virtual void do_inner_product_sums(const std::vector<RnsPoly>& digits, const std::vector<KeyTerm>& terms,
                                       const RnsPoly& c0, const std::vector<std::vector<ProductTerm>>& groups,
                                       const std::vector<std::array<RnsPoly*, 3>>& out, Exec exec) const;

private:
    // out gets this shape (reallocated only when it has another one); n: words per limb (0: the ring's).
    void shape(std::size_t num_q, std::size_t num_p, bool ntt_form, RnsPoly& out, std::size_t n = 0) const;
    void shape(const RnsPoly& like, RnsPoly& out) const;
    void check_mine(const RnsPoly& a, const char* op) const;
    bool subring_size(std::size_t n_sub) const;
    void check_plaintext(const RnsPoly& a, const char* op) const;
    // ModDown's operands: b and a over Q_l * P (at least min_q q-limbs; p_prefix: or over Q_l * P_k, the first k
    // special primes) and addends over Q_l, all NTT form.
    void check_mod_down_operands(const RnsPoly& b, const RnsPoly& a, const RnsPoly* add_b, const RnsPoly* add_a,
                                 std::size_t min_q, bool p_prefix, const char* op, const char* pair_message) const;
    // Digits of one level (their number) over Q_l * P in NTT form, and at least one key term: returns l + 1.
    std::size_t check_digits(const std::vector<RnsPoly>& digits, const std::vector<KeyTerm>& terms,
                             const char* op) const;
    // Addends over Q_l (num_q q-limbs), NTT form, or null.
    void check_addends(const RnsPoly* add_b, const RnsPoly* add_a, std::size_t num_q, const char* op) const;
    // The operand of a key switch: an NTT-form polynomial over Q_l of this backend (and a ring with special primes).
    void check_switched(const RnsPoly& d, const char* op) const;
    // The key as the do_* calls take it: key itself, or (a compact key, and a backend that does not draw a-limbs
    // itself) one with its a-parts drawn into `storage`.
    const GadgetKey& with_a_parts(const GadgetKey& key, GadgetKey& storage) const;
    // The terms as the do_* calls take them: unless this backend draws compact keys' a-limbs itself, every compact key
    // replaced by one with its a-parts drawn into `keys` (for the call).
    std::vector<KeyTerm> terms_with_a_parts(const std::vector<KeyTerm>& terms, std::vector<GadgetKey>& keys) const;

    std::shared_ptr<const RnsContext> ring_;
    std::shared_ptr<const PolyMemory> memory_;
};

// p's residues mod its first prime q_0 (p in NTT form), centered in (-q_0/2, q_0/2], on the host: what ModRaise lifts
// exactly (bootstrapping), and how a secret's coefficients are read back.
// @throws InternalError for a p of another backend, or an empty one
std::vector<__int128> centered_q0(const Backend& be, const RnsPoly& p, Exec exec);

// Makes the backend of a context from its ring (Context::create takes one; docs/ARCHITECTURE.md "Adding a backend").
using BackendFactory = std::function<std::unique_ptr<const Backend>(std::shared_ptr<const RnsContext>)>;

// The CPU backend: host memory, the run-time dispatched SIMD kernels of arith (scalar, AVX2, AVX-512DQ, IFMA),
// OpenMP teams of Exec::threads threads.
// @throws InternalError for a null ring
// @throws ParameterError if a prime of the ring is not an NTT prime for its degree (arith::NttTables)
std::unique_ptr<const Backend> make_cpu_backend(std::shared_ptr<const RnsContext> ring);

}  // namespace kasoku::rns
