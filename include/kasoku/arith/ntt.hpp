// Negacyclic NTT over Z_q[X]/(X^n + 1) (Harvey lazy butterflies, Shoup constants).
// Forward: Cooley-Tukey, natural-order input, bit-reversed output. Inverse: Gentleman-Sande,
// bit-reversed input, natural output, scaled by n^-1. Outputs are fully reduced to [0, q).
#pragma once
#include <cstddef>
#include <cstdint>

#include "kasoku/arith/modarith.hpp"
#include "kasoku/support/aligned.hpp"

namespace kasoku::arith {

class NttTables {
public:
    // @throws ParameterError for n not a power of two >= 2, or q not a prime = 1 mod 2n below 2^kMaxModulusBits
    NttTables(u64 q, std::size_t n);

    std::size_t n() const { return n_; }
    int log_n() const { return log_n_; }
    const Modulus& modulus() const { return mod_; }
    u64 q() const { return mod_.value; }
    u64 psi() const { return psi_; }  // the primitive 2n-th root used
    // root_powers()[k] = psi^bitrev(k) (k >= 1 used), with Shoup constants.
    const u64* root_powers() const { return roots_.data(); }
    const u64* root_shoup() const { return roots_shoup_.data(); }
    // inv_root_powers()[k] = root_powers()[k]^-1.
    const u64* inv_root_powers() const { return inv_roots_.data(); }
    const u64* inv_root_shoup() const { return inv_roots_shoup_.data(); }
    u64 n_inv() const { return n_inv_; }
    u64 n_inv_shoup() const { return n_inv_shoup_; }
    // The three last forward stages' twiddles (the three first inverse stages'), each as products, for n >= 16: in the
    // stage of gap g (1, 2 or 4; its n / 2g blocks, twiddles from entry m = n / 2g of the table), the twiddle of block
    // (8/g) c + j is the twiddle of block (8/g) c times lane[j] mod q, c < n/16, j < 8/g, where lane[j] is the
    // quotient of the twiddle of block j by that of block 0 (bit reversal of m + i over log n bits adds the parts of
    // i's low log2(8/g) bits and of the rest). block_shoup holds the Shoup constants of the n/16 block twiddles, so
    // that a body which computes a twiddle from its Shoup constant (the IFMA NTT) reads n/16 words a stage instead of
    // n / 2g twiddles.
    struct SplitStage {
        const u64* block_shoup;  // n/16 words: shoup(table[m + (8/g) c])
        const u64* lane;         // 8 words, 8/g used
        const u64* lane_shoup;
    };
    // @throws ParameterError for a gap other than 1, 2, 4 or n < 16
    SplitStage split_stage(std::size_t gap, bool inverse) const;
    // The tables of the transform of size m whose root is psi()^(n/m): their root powers are the first m of these, so
    // that the SIMD bodies' forward transform with them gives ntt_forward_prefix's words (a subring polynomial's).
    // @throws ParameterError for m not a power of two in [2, n]
    NttTables subring(std::size_t m) const;

private:
    NttTables(u64 q, std::size_t n, u64 psi);  // psi: a primitive 2n-th root of unity mod q, or 0 (the smallest)

    std::size_t n_;
    int log_n_;
    Modulus mod_;
    u64 psi_;
    AlignedWords roots_, roots_shoup_, inv_roots_, inv_roots_shoup_;
    // Per direction (forward, inverse) and gap (1, 2, 4): split_[direction][stage] = {block_shoup, lane, lane_shoup}.
    AlignedWords split_[2][3][3];
    u64 n_inv_, n_inv_shoup_;
};

// In-place transforms with the active SIMD body (see simd.hpp); no checks (a's residues < q, n words).
// @throws ParameterError on the first transform when KASOKU_SIMD names a body this build or CPU lacks (active_simd)
void ntt_forward(u64* a, const NttTables& t);
// @throws ParameterError on the first transform when KASOKU_SIMD names a body this build or CPU lacks (active_simd)
void ntt_inverse(u64* a, const NttTables& t);
// The forward transform of size m (a power of two <= t.n()) with the root t.psi()^(n/m), whose table is the first m
// entries of t's (bit reversal of k < m over log n bits is its reversal over log m bits times n/m): the NTT words of
// a(X^(n/m)) are these m words, each repeated n/m times. Scalar radix 2: the reference of the SIMD transform with
// t.subring(m), which the CPU backend takes from 16 points; no checks.
void ntt_forward_prefix(u64* a, std::size_t m, const NttTables& t);

}  // namespace kasoku::arith
