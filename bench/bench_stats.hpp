// Small statistics shared by the C++ benchmarks.
#pragma once
#include <algorithm>
#include <vector>

namespace kasoku::bench {

// The median of v (the mean of the two middle values for an even count); v must not be empty.
inline double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    const std::size_t k = v.size();
    return k % 2 ? v[k / 2] : 0.5 * (v[k / 2 - 1] + v[k / 2]);
}

}  // namespace kasoku::bench
