// Slot-offset arithmetic shared by the linear transforms and the matrix products.
#pragma once
#include <cstdint>

namespace kasoku::algo::detail {

inline std::int64_t floor_mod(std::int64_t a, std::int64_t m) { return ((a % m) + m) % m; }

// Representative of r mod m in (-m/2, m/2]: rotations by r and by this agree on vectors of period m.
inline std::int64_t signed_offset(std::int64_t r, std::int64_t m) {
    const std::int64_t x = floor_mod(r, m);
    return x > m / 2 ? x - m : x;
}

}  // namespace kasoku::algo::detail
