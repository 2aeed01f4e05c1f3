// Plaintext-matrix x ciphertext-vector products by the diagonal method with baby-step giant-step (BSGS) and
// hoisted baby steps (Manabe et al. §3, after Halevi-Shoup and Bossuat et al.):
//
//   out[s] = sum_r diag_r[s] * in[(s + r) mod slots],  r = unit * (n1 * j + i)
//          = sum_j Rot_{unit*n1*j}( sum_i Rot_{-unit*n1*j}(diag_r) (.) Rot_{unit*i}(in) ).
//
// The baby rotations Rot_{unit*i}(in) share one decomposition (ModUp) and stay in the Q_l * P basis; the
// diagonals, encoded over Q_l * P, multiply them there, so each giant step costs one ModDown. The giant
// rotations are summed lazily too, with one final ModDown, then one rescale. Low in the chain, where P has more
// limbs than Q_l and the diagonals far outnumber the baby steps, each baby rotation is brought down to Q_l (one
// ModDown each) and the diagonals, encoded over Q_l alone, multiply it there: fewer limbs to encode, keep and
// multiply (ProductBasis).
//
// Errors: the constructor throws LevelError for a level outside 1..max_level and ParameterError for a diagonal with
// more values than slots or no nonzero diagonal (from_matrix / matrix_diagonals: for dim outside 1..slots); apply
// throws LevelError for a ciphertext at another level than the transform's, MissingKeyError for a missing Galois
// key, and what the evaluator throws for a bad operand.
#pragma once
#include <complex>
#include <cstdint>
#include <map>
#include <vector>

#include "kasoku/ckks/evaluator.hpp"

namespace kasoku::algo {

using cvec = std::vector<std::complex<double>>;

// Operations a call executed, counted by the evaluator (ckks::Evaluator::counting).
using ckks::OpCounts;

// How the offsets of a transform split into baby and giant steps (slot steps; 0 means no rotation).
struct BsgsPlan {
    std::int64_t unit = 1;                     // gcd of the offsets
    std::size_t n1 = 0;                        // baby steps per giant step; 0: every offset is a baby step
    std::vector<std::int64_t> babies, giants;  // distinct steps, in slots
    std::vector<std::pair<std::size_t, std::size_t>> split;  // per offset (in the order given): baby, giant index
};
// The split with the least cost (baby rotation 1, giant rotation 3: a giant step adds a ModDown and a ModUp to
// its inner product). Deterministic, so that a client can make exactly the keys a server will use.
// baby > 0 forces n1.
BsgsPlan plan_bsgs(const std::vector<std::int64_t>& offsets, std::size_t baby = 0);

// Where the diagonals multiply the baby rotations: over Q_l * P (hoisted, lazy: no ModDown per baby step), over Q_l
// (one ModDown per baby step, diagonals of l + 1 limbs instead of l + 1 + k), or the cheaper of the two by
// LinearTransform::cheaper_basis. The results agree to the rounding of the products (not bit for bit).
enum class ProductBasis { automatic, extended, level };

class LinearTransform {
public:
    // diagonals: offset r (any integer; taken mod slots) -> values (up to slots, zero padded). Encoded once, over
    // Q_level * P, for inputs at `level` with the canonical scale of that level: the result then has the
    // canonical scale of level - 1 (other input scales give an exact but non-canonical result scale).
    // at_use: keep the diagonals' values (one period of each; real ones as doubles) and encode them in apply,
    // kAtUseChunk
    // at a time, each chunk freed once its products are summed: 16 encodings at a time instead of all (a diagonal over
    // Q_level * P is up to 9 MB at N = 2^16, a convolution's giant step over a hundred), for the encoding time at every
    // apply; the rotated babies' diagonals over Q_level * P in batches of giant steps of at most kAtUseFusedBytes
    // (or one giant step), whose products are made in one pass (Evaluator::inner_product_sums_lazy). The same results,
    // bit for bit.
    // products: ProductBasis (automatic: cheaper_basis). diagonals is taken by value: pass it moved, and each diagonal
    // is released once encoded (or, at_use, kept as doubles), so that a transform of thousands of diagonals does not
    // hold two copies of them.
    // @throws LevelError if `level` is outside 1..max_level
    // @throws ParameterError for a diagonal with more values than slots, no nonzero diagonal, non-finite values
    //     (at_use: apply throws it, when it encodes them), or a negative thread count
    // @throws ScaleError if a diagonal's values, encoded at the scale above, do not fit the modulus at `level` (at_use:
    //     apply throws it)
    LinearTransform(ckks::ContextPtr ctx, std::map<std::int64_t, cvec> diagonals, int level, std::size_t baby = 0,
                    Exec exec = {}, bool at_use = false, ProductBasis products = ProductBasis::automatic);
    // A dense dim x dim matrix (row major, dim <= slots) acting on slots 0..dim-1: out[s] = sum_t m[s][t] in[t].
    // With dim = slots the product is cyclic over all slots.
    // @throws ParameterError for dim outside 1..slots, and as the constructor (non-finite entries, no nonzero entry)
    // @throws LevelError if `level` is outside 1..max_level
    // @throws ScaleError if the entries, encoded, do not fit the modulus at `level`
    static LinearTransform from_matrix(ckks::ContextPtr ctx, const std::complex<double>* m, std::size_t dim, int level,
                                       std::size_t baby = 0, Exec exec = {});
    // Slot offsets of the nonzero diagonals of a dim x dim matrix (as from_matrix uses them).
    // @throws ParameterError for dim outside 1..slots
    static std::map<std::int64_t, cvec> matrix_diagonals(const std::complex<double>* m, std::size_t dim,
                                                         std::size_t slots);

    // The BSGS split the constructor uses for these offsets (taken mod slots), without encoding anything.
    static BsgsPlan plan_for(const std::vector<std::int64_t>& offsets, std::size_t slots, std::size_t baby = 0);
    // The basis with fewer limb passes for `diagonals` diagonals of `plan` at `level`, in units of one limb of a
    // product (an NTT of a limb is taken as 12 of them, as measured on the CPU backend at N = 2^16): over Q_l * P each
    // diagonal multiplies k = special primes more limbs of both polynomials and is encoded over k more (an NTT each:
    // at every apply when encoded at use, else held as k more limbs of memory); over Q_l each baby rotation adds a
    // ModDown of the pair (an inverse NTT of its k special limbs and a forward NTT of its l + 1 q-limbs, each
    // polynomial). It does not depend on at_use, so that a transform kept encoded and one encoded at use give the
    // same bits.
    static ProductBasis cheaper_basis(const ckks::Context& ctx, const BsgsPlan& plan, std::size_t diagonals, int level);
    ProductBasis products() const { return products_; }
    // Exactly the Galois elements apply() needs.
    std::vector<std::uint64_t> galois_elements() const;
    static std::vector<std::uint64_t> galois_elements(const ckks::Context& ctx, const BsgsPlan& plan);
    int level() const { return level_; }
    std::size_t diagonal_count() const { return count_; }
    // Memory of the encoded diagonals (periodic ones in their subring: rns::Backend::to_subring).
    std::size_t nbytes() const { return bytes_; }
    const BsgsPlan& plan() const { return plan_; }

    // The transform of a (at level()), rescaled once: level - 1.
    // @throws LevelError if a is not at level()
    // @throws MissingKeyError if ev's keys lack a Galois key of galois_elements()
    // @throws ParameterError for a bad operand (of another context, malformed), a size-3 one (when the transform
    //     rotates), a key under another secret key, a negative thread count, or (at_use) non-finite diagonal values
    // @throws ScaleError if a's scale times the diagonals' no longer fits the modulus, or (at_use) a diagonal does not
    //     fit it
    ckks::Ciphertext apply(const ckks::Evaluator& ev, const ckks::Ciphertext& a, Exec exec = {},
                           OpCounts* counts = nullptr) const;
    // The same, its decomposition keeping a instead of a copy (for a caller done with a).
    ckks::Ciphertext apply(const ckks::Evaluator& ev, ckks::Ciphertext&& a, Exec exec = {},
                           OpCounts* counts = nullptr) const;
    // The same from a decomposition of the input that other hoisted rotations share.
    // @throws LevelError if d's ciphertext is not at level()
    // @throws MissingKeyError if ev's keys lack a Galois key of galois_elements()
    // @throws ParameterError for a decomposition not made by Evaluator::decompose, a key under another secret key, a
    //     negative thread count, or (at_use) non-finite diagonal values
    // @throws ScaleError if the input's scale times the diagonals' no longer fits the modulus, or (at_use) a diagonal
    //     does not fit it
    ckks::Ciphertext apply(const ckks::Evaluator& ev, const ckks::Decomposition& d, Exec exec = {},
                           OpCounts* counts = nullptr) const;

    static constexpr std::size_t kAtUseChunk = 16;  // at_use: diagonals encoded at a time (two groups of dot_mod's 8)
    // at_use, over Q_l * P: the rotated babies' diagonals encoded together for one pass over their products (then
    // more giant steps a batch mean fewer passes, each making every baby again).
    static constexpr std::size_t kAtUseFusedBytes = std::size_t{512} << 20;
    // at_use: the memory the rotated babies' diagonals of one pass may take when encoded (default kAtUseFusedBytes;
    // at least one giant step's): less memory, more passes. The same results, bit for bit.
    void set_at_use_batch_bytes(std::size_t bytes) { batch_bytes_ = bytes; }

private:
    void check_level(const ckks::Ciphertext& a) const;
    bool rotates() const;  // some baby step is a rotation (else no decomposition)
    ckks::Ciphertext run(const ckks::Evaluator& ev, const ckks::Ciphertext& a, const ckks::Decomposition* d,
                         Exec exec) const;

    struct Term {
        std::size_t baby;
        ckks::Plaintext pt;  // Rot_{-giant}(diag), over Q_level * P or Q_level (in its subring when periodic)
        // at_use: Rot_{-giant}(diag)'s values instead, one period of them (im empty when it is real)
        std::vector<double> re, im;
    };
    ckks::Plaintext encoded(const Term& t, Exec exec) const;

    ckks::ContextPtr ctx_;
    int level_ = 0;
    bool at_use_ = false;
    std::size_t batch_bytes_ = kAtUseFusedBytes;
    ProductBasis products_ = ProductBasis::extended;  // extended or level, once chosen
    double scale_ = 0;                                // the diagonals' encoding scale
    std::size_t count_ = 0, bytes_ = 0;
    BsgsPlan plan_;
    std::vector<std::vector<Term>> terms_;  // per giant step
};

}  // namespace kasoku::algo
