#include "kasoku/rns/sampling.hpp"

#include <cmath>
#include <vector>

namespace kasoku::rns {

const std::array<std::uint64_t, kGaussianBound + 1>& gaussian_cdf() {
    // Cumulative probabilities of |x| for x in 0..bound (x = 0 counted once, the others twice: the sign is a bit of
    // its own), scaled to 2^63.
    static const std::array<std::uint64_t, kGaussianBound + 1> cdf = [] {
        constexpr double sigma = kGaussianSigma;
        std::array<double, kGaussianBound + 1> w{};
        double total = 0;
        for (int x = 0; x <= kGaussianBound; ++x) {
            w[x] = std::exp(-static_cast<double>(x * x) / (2 * sigma * sigma)) * (x == 0 ? 1.0 : 2.0);
            total += w[x];
        }
        std::array<std::uint64_t, kGaussianBound + 1> c{};
        double acc = 0;
        for (int x = 0; x <= kGaussianBound; ++x) {
            acc += w[x] / total;
            c[x] = x == kGaussianBound ? (1ull << 63) : static_cast<std::uint64_t>(std::ldexp(acc, 63));
        }
        return c;
    }();
    return cdf;
}

void draw_small(const SmallDraw& d, std::size_t n, std::int64_t* out) {
    const std::size_t per = draw::per_block(d.kind);
    std::vector<std::uint64_t> words(8 * ((n + per - 1) / per));  // whole blocks of keystream
    Prng(d.seed, d.stream).fill(words.data(), words.size() * sizeof(std::uint64_t));
    const auto* w = reinterpret_cast<const std::uint32_t*>(words.data());  // little-endian words, as the device
    std::int64_t block[8];
    for (std::size_t b = 0; b * per < n; ++b) {
        draw::coefficients(d.kind, w + 16 * b, gaussian_cdf().data(), block);
        for (std::size_t j = 0; j < per && b * per + j < n; ++j) out[b * per + j] = block[j];
    }
    secure_wipe(words.data(), words.size() * sizeof(std::uint64_t));
    secure_wipe(block, sizeof block);
}

}  // namespace kasoku::rns
