// The constants of rescaling, ModUp and ModDown, computed once per ring for every backend: the CPU backend uses them
// in place, a device backend uploads them. One computation, so that every backend divides by the same numbers.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "kasoku/rns/base_conv.hpp"
#include "kasoku/rns/rns_context.hpp"

namespace kasoku::rns {

struct ScalingTables {
    explicit ScalingTables(const RnsContext& ring);

    // rescale at level l (1..L), for i < l: q_l^-1 mod q_i and its Shoup constant, (q_l >> 1) mod q_i
    std::vector<std::vector<u64>> rescale_inv, rescale_inv_shoup, rescale_half;
    // ModUp: the converter from the first m primes of digit j to every prime, at [j * alpha + (m - 1)]
    std::vector<BaseConverter> digit_conv;
    // ModDown (with special primes), at [k] for the first k special primes P_k (k = 1..p_count; [p_count]: all of P,
    // [0] empty): P_k -> every q, and P_k^-1 mod q_i with its Shoup constant. Keys over a prefix P_k serve key switches
    // whose noise budget is small (bootstrapping's encapsulation key, over q_0 * p_0).
    std::vector<BaseConverter> p_to_q;
    std::vector<std::vector<u64>> p_inv, p_inv_shoup;
    // per q_i: P with its Shoup constant, (p_0 >> 1) mod q_i
    std::vector<u64> p_mod_q, p_mod_q_shoup, p0_half;
    // ModDown fused with the rescale at level l (1..L): (P, q_l) -> q_0..q_{l-1}; (P q_l)^-1 mod q_i
    std::vector<BaseConverter> pq_to_q;
    std::vector<std::vector<u64>> pq_inv;

    // The ModUp converter of digit j of a polynomial with num_q q-limbs.
    const BaseConverter& digit_converter(const RnsContext& ring, std::size_t digit, std::size_t num_q) const {
        return digit_conv[digit * ring.alpha() + (ring.digit_size(digit, num_q) - 1)];
    }
};

}  // namespace kasoku::rns
