// Fast approximate base conversion (Inoue 2022 eq. 2.2):
//   Conv_{C->B}(x)_t = sum_i [x_i (Q/q_i)^-1]_{q_i} (Q/q_i) mod t,  Q = prod of the source primes.
// The result is x + e Q for a small integer e (0 <= e < |C|).
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "kasoku/arith/modarith.hpp"

namespace kasoku::rns {

class BaseConverter {
public:
    BaseConverter() = default;
    // @throws ParameterError for no source prime or more than 255
    BaseConverter(const std::vector<arith::Modulus>& source, const std::vector<arith::Modulus>& target);

    std::size_t source_size() const { return src_.size(); }
    std::size_t target_size() const { return dst_.size(); }

    // Step 1: y_i = x_i * (Q/q_i)^-1 mod q_i for every source limb (n coefficients each).
    void scale_source(const std::uint64_t* const* x, std::size_t n, std::uint64_t* const* y) const;
    // Step 2: target limb t from the scaled source limbs y. With `overflow` (from overflow_count) the result is
    // exact and centered: x' with x' = x mod Q and |x'| <= Q/2, instead of x + e Q.
    void convert_to(std::size_t t, const std::uint64_t* const* y, std::size_t n, std::uint64_t* out,
                    const std::uint8_t* overflow = nullptr) const;
    // v[c] = round(sum_i y_i[c] / q_i): how many multiples of Q the plain sum exceeds the centered value by
    // (Halevi-Polyakov-Shoup floating-point correction).
    void overflow_count(const std::uint64_t* const* y, std::size_t n, std::uint8_t* v) const;

    // The tables, for a backend that uploads them (a GPU): (Q/q_i)^-1 mod q_i and its Shoup constant; (Q/q_i) mod t
    // at [t * |src| + i]; v Q mod t at [t * (|src| + 1) + v]; 1 / q_i.
    const std::vector<std::uint64_t>& source_inverses() const { return inv_; }
    const std::vector<std::uint64_t>& source_inverses_shoup() const { return inv_shoup_; }
    const std::vector<std::uint64_t>& factors() const { return factor_; }
    const std::vector<std::uint64_t>& q_multiples() const { return q_mod_t_; }
    const std::vector<double>& inverse_primes() const { return inv_q_; }
    const std::vector<arith::Modulus>& targets() const { return dst_; }

private:
    std::vector<arith::Modulus> src_, dst_;
    std::vector<std::uint64_t> inv_, inv_shoup_;  // (Q/q_i)^-1 mod q_i
    std::vector<std::uint64_t> factor_;           // [t * |src| + i] = (Q/q_i) mod t
    std::vector<std::uint64_t> q_mod_t_;          // [t * (|src| + 1) + v] = v Q mod t, v = 0..|src|
    std::vector<double> inv_q_;                   // 1 / q_i
    bool small_ = true;  // every source prime below 2^arith::kSmallSourceBits (dot_const_mod's faster path)
};

}  // namespace kasoku::rns
