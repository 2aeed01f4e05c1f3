// Trace-type functions (Inoue 2022 §3.2.2): the plan of an unrolled trace and its cost model.
// Errors: ParameterError for h outside 1..M, M above log2(n), a group of 24 or more steps (too many keys), or
// doubling steps whose product is the identity.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "kasoku/ckks/parameters.hpp"

namespace kasoku::ckks {

// Sizes of the h groups that M doubling steps are split into: consecutive, as equal as possible, larger first
// (none for M = 0, whatever h).
// @throws ParameterError if M > 0 and h is outside 1..M
std::vector<std::size_t> trace_group_sizes(std::size_t M, std::size_t h);

// For each group, the Galois elements of its 2^m - 1 non-trivial products: group steps kappa_i..kappa_{i+m-1},
// element of subset S = prod_{s in S} kappa_s mod 2n, in the order of the subset bit masks 1..2^m - 1.
// @throws ParameterError if h is outside 1..M (M > 0), a group has 24 or more steps, or a product of steps is the
//     identity (dependent steps)
std::vector<std::vector<std::uint64_t>> trace_group_elements(const std::vector<std::uint64_t>& automorphisms,
                                                             std::size_t h, std::uint64_t two_n);

// Rotation elements 5^(2^i) mod 2n, i < M: the doubling steps of a sum over 2^M consecutive slots.
std::vector<std::uint64_t> rotation_doubling_steps(std::size_t M, std::uint64_t two_n);

// The doubling steps of the source's trace (Inoue 2022 §5.2): rotations by 1, 2, ..., 2^(M-1) for
// M <= log2(slots); M = log2(n) adds conjugation as the last step (the full trace: 2 Re of the slot sum).
// @throws ParameterError if M > log2(n)
std::vector<std::uint64_t> trace_doubling_steps(std::size_t M, std::uint64_t two_n);

// Exactly the Galois elements that the M doubling steps of trace_doubling_steps with h iterations need
// (sorted, without duplicates).
// @throws ParameterError if M > log2(n), h is outside 1..M (M > 0), or a group has 24 or more steps
std::vector<std::uint64_t> trace_galois_elements(const Parameters& params, std::size_t M, std::size_t h);

// Measured times (ms) of the steps of one key switch at a given level and thread count.
struct KeySwitchCosts {
    int level = 0, threads = 1;
    double decompose_ms = 0;      // digit split + ModUp of c1 (once per hoisted group)
    double inner_product_ms = 0;  // inner product with one key + automorphism + accumulation (per element)
    double mod_down_ms = 0;       // ModDown of the two key-switched polynomials (once per group)
    double add_ms = 0;            // adding the group's sum to the running ciphertext
};

// Modelled time of a trace with M steps and h iterations:
// sum over the groups of decompose + (2^m - 1) inner products + mod_down + add.
// @throws ParameterError if M > 0 and h is outside 1..M
double trace_cost(const KeySwitchCosts& c, std::size_t M, std::size_t h);

// The h in 1..M with the smallest modelled time.
std::size_t best_trace_h(const KeySwitchCosts& c, std::size_t M);

}  // namespace kasoku::ckks
