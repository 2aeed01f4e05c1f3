// The M-point NTT of Kawamura et al. (docs/HARDWARE.md) written as synthesisable C++: fixed-size arrays, no recursion,
// no heap, one function per loop structure of the seed (Figs. 4-7), its loops labelled so that a high-level-synthesis
// tool's directives can name them (kMethods in cycle_model.hpp lists the directives of the seed's methods (1)-(8)).
// The transform is the seed's decimation in frequency (its eq. 12): X(k) = sum_t x(t) alpha^(tk) mod P, read from
// data[0] of a Stages array, written to data[m] in bit-reversed order (data[m][i] = X(bitrev_m(i))).
// Errors: ParameterError from seed_field for m outside 2..kMaxLogPoints and from ntt for a structure or m it does not
// know.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

namespace kasoku::hls {

using word = std::uint32_t;  // residues: P < 2^24 for every m <= 16
using wide = std::uint64_t;  // a product of two residues

inline constexpr int kMaxLogPoints = 16;

// The seed's field for M = 2^m points: the smallest prime P = s*M + 1 >= 81*M (its eq. 8-9: 9 * 9 * M bounds a
// convolution of base-10 digits), and a primitive M-th root of unity alpha (the one arith's NTT tables use for
// P and M / 2, so that the two transforms can be compared).
struct Field {
    int m = 0;
    word p = 0, s = 0, alpha = 0;
    int bits() const;  // bits of P: the width of the datapath
};
// @throws ParameterError for m outside 2..kMaxLogPoints
Field seed_field(int m);

// The seed's loop structures.
enum class Structure {
    nested,           // Fig. 4: stage, group, butterfly
    inner_flattened,  // Fig. 5: stage, then the M/2 butterflies of the stage as one loop
    fully_flattened,  // Fig. 6: all m * M/2 butterflies as one loop
    two_butterflies,  // Fig. 7: Fig. 5 with two butterflies per iteration (the last stage as in Fig. 5)
};
const char* structure_name(Structure s);

// Twiddle ROM: tw[k] = alpha^k for k < M/2; butterfly n of a group at stage s uses tw[n << s] (= (alpha^(2^s))^n).
template <int m>
struct Rom {
    word tw[(1 << m) / 2];
};
// The seed's `int data[m+1][M]`: data[0] the input, data[s + 1] the output of stage s.
template <int m>
struct Stages {
    word data[m + 1][1 << m];
};

inline word add_mod(word a, word b, word p) {
    const word t = a + b;  // < 2P < 2^25
    return t >= p ? t - p : t;
}
inline word sub_mod(word a, word b, word p) { return a >= b ? a - b : a + p - b; }
inline word mul_mod(word a, word b, word p) { return static_cast<word>(wide(a) * b % p); }
inline word pow_mod(word a, wide e, word p) {
    word r = 1;
    for (; e; e >>= 1, a = mul_mod(a, a, p))
        if (e & 1) r = mul_mod(r, a, p);
    return r;
}
// i with its low `bits` bits reversed: where the transform puts X(i).
inline std::size_t bit_reverse(std::size_t i, int bits) {
    std::size_t r = 0;
    for (int b = 0; b < bits; ++b) r |= ((i >> b) & 1) << (bits - 1 - b);
    return r;
}

template <int m>
void make_rom(const Field& f, Rom<m>& rom) {
    word w = 1;
rom_loop:
    for (int k = 0; k < (1 << m) / 2; ++k) {
        rom.tw[k] = w;
        w = mul_mod(w, f.alpha, f.p);
    }
}

// BF of the seed: (a, b) -> (a + b, (a - b) * alpha_s^n), from stage s's array to stage s + 1's.
template <int m>
inline void butterfly(Stages<m>& st, const Rom<m>& rom, word p, int s, int idx1, int idx2, int n) {
    const word a = st.data[s][idx1], b = st.data[s][idx2];
    st.data[s + 1][idx1] = add_mod(a, b, p);
    st.data[s + 1][idx2] = mul_mod(sub_mod(a, b, p), rom.tw[n << s], p);
}

// Fig. 4.
template <int m>
void ntt_nested(Stages<m>& st, const Rom<m>& rom, word p) {
    constexpr int M = 1 << m;
stage_loop:
    for (int s = 0; s < m; ++s) {
        const int group = 1 << s, op = M >> (s + 1), point = op << 1;
    group_loop:
        for (int g = 0; g < group; ++g) {
        butterfly_loop:
            for (int n = 0; n < op; ++n) {
                const int idx1 = point * g + n, idx2 = idx1 + op;
                butterfly(st, rom, p, s, idx1, idx2, n);
            }
        }
    }
}

// Butterfly k (0 <= k < M/2) of stage s in the flat numbering of Figs. 5-6: its group g = k / op, its place n in
// the group, and from them its two indices.
template <int m>
inline void stage_butterfly(Stages<m>& st, const Rom<m>& rom, word p, int s, int k) {
    const int shift = m - 1 - s, op = (1 << m) >> (s + 1), point = op << 1;
    const int g = k >> shift, n = k - (g << shift);
    const int idx1 = point * g + n, idx2 = idx1 + op;
    butterfly(st, rom, p, s, idx1, idx2, n);
}

// Fig. 5: group * op = M/2 at every stage, so the two inner loops are one.
template <int m>
void ntt_inner_flattened(Stages<m>& st, const Rom<m>& rom, word p) {
stage_loop:
    for (int s = 0; s < m; ++s) {
    butterfly_loop:
        for (int k = 0; k < (1 << m) / 2; ++k) stage_butterfly(st, rom, p, s, k);
    }
}

// Fig. 6 (the seed's listing mixes up r and k; r is the flat index here, k the butterfly within its stage).
template <int m>
void ntt_fully_flattened(Stages<m>& st, const Rom<m>& rom, word p) {
flat_loop:
    for (int r = 0; r < m * ((1 << m) / 2); ++r) {
        const int s = r >> (m - 1), k = r - (s << (m - 1));
        stage_butterfly(st, rom, p, s, k);
    }
}

// Fig. 7: butterflies n and n + 1 of one group per iteration (op >= 2 before the last stage); the last stage, one
// butterfly per group, as in Fig. 5. Method (8) partitions each data[s] in two halves of M/2 words (even and odd
// indices), so that the iteration's four reads and four writes find two ports each.
template <int m>
void ntt_two_butterflies(Stages<m>& st, const Rom<m>& rom, word p) {
    constexpr int M = 1 << m;
stage_loop:
    for (int s = 0; s < m - 1; ++s) {
        const int shift = m - 1 - s, op = M >> (s + 1), point = op << 1;
    butterfly_loop:
        for (int k = 0; k < M / 2; k += 2) {
            const int g = k >> shift, n = k - (g << shift);
            const int idx1 = point * g + n, idx2 = idx1 + op, idx3 = idx1 + 1, idx4 = idx3 + op;
            butterfly(st, rom, p, s, idx1, idx2, n);
            butterfly(st, rom, p, s, idx3, idx4, n + 1);
        }
    }
last_stage_loop:
    for (int k = 0; k < M / 2; ++k) stage_butterfly(st, rom, p, m - 1, k);
}

// The host-side entry (not synthesisable: it allocates): the M-point NTT of `in` (M residues < P) by one structure,
// bit-reversed as above.
// @throws ParameterError for a field with m outside 2..kMaxLogPoints or P = 0, other than M residues, a residue >= P,
//     or an unknown structure
std::vector<word> ntt(Structure structure, const Field& f, const std::vector<word>& in);
// The schoolbook DFT X(k) = sum_t x(t) alpha^(tk) in natural order, O(M^2): the reference.
// @throws ParameterError for a field with m outside 2..kMaxLogPoints or P = 0, other than M residues, or a residue
//     >= P
std::vector<word> dft(const Field& f, const std::vector<word>& in);

}  // namespace kasoku::hls
