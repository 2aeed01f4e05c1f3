// Small research parameter sets for the C++ tests (no security check: fast, not secure).
#pragma once
#include <optional>

#include "kasoku/ckks/parameters.hpp"

namespace kasoku::test_support {

inline ckks::Parameters research_params(int log_n, int first_bits, int scale_bits, int levels, int special_bits,
                                        int special_primes) {
    ckks::Parameters p;
    p.log_n = log_n;
    p.first_bits = first_bits;
    p.scale_bits = scale_bits;
    p.levels = levels;
    p.special_bits = special_bits;
    p.special_primes = special_primes;
    p.security = std::nullopt;
    return p;
}

}  // namespace kasoku::test_support
